"""Every solver by name, with what it can do, so that callers ask a flag instead of a name.

Adding a solver is one entry in `SOLVERS`: the CLI lists it, the suite files accept it, the
solver tests run it, and `compare` and `bench` treat it by its flags.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import backfill, fifo, greedy
from horizon_opt.solvers.options import SolveOptions
from horizon_opt.solvers.reclaim import quotas_bind, quotas_kept
from horizon_opt.solvers.residual import solve_around_placed

SolverFn = Callable[[Instance, SolveOptions], Plan]


@dataclass(frozen=True)
class Solver:
    name: str
    run: SolverFn
    description: str  # one line, shown by `--help`
    anytime: bool = False  # searches until its time limit (or a proof): `time_limit` matters
    takes_hint: bool = False  # can start from a given plan (`SolveOptions.hint`)
    reports_bound: bool = False  # reports a proven upper bound on pwo, hence a gap
    online: bool = False  # a scheduler's pass: in the loop it decides at every event, no cadence
    optimizing: bool = False  # searches for the best plan (not a rule): the one heuristics are
    # measured against, whose cost by size bench reports
    baseline: bool = False  # the reference of plan benchmarks: bench's `vs` columns, the first
    # step of its ablation (one solver)
    loop_baseline: bool = False  # the scheduler clusters run today: the closed loop's reference
    method: str = ""  # how it plans, in a few words: the step's label in bench's ablation table

    @property
    def periodic(self) -> bool:
        """In the loop it re-plans on a cadence (every solver that is not online)."""
        return not self.online


def _cpsat(instance: Instance, options: SolveOptions) -> Plan:
    from horizon_opt.solvers.cpsat import solve as cpsat_solve  # imports ortools only when used

    return cpsat_solve(instance, options)


SOLVERS: dict[str, Solver] = {
    s.name: s
    for s in (
        Solver(
            name="fifo",
            run=fifo.solve,
            description="the baseline: inference reserved at its peak, jobs in arrival order",
            online=True,
            baseline=True,
            method="static peak reservation, arrival order",
        ),
        Solver(
            name="fifo-elastic",
            run=partial(fifo.solve, elastic=True),
            description="fifo with inference reserved slot by slot (the ablation step)",
            online=True,
            method="per-slot reservation",
        ),
        Solver(
            name="backfill",
            run=backfill.solve,
            description="Slurm-style online backfill by priority; inference reserved slot by slot",
            online=True,
            loop_baseline=True,
            method="backfill by priority, per-slot reservation",
        ),
        Solver(
            name="backfill-static",
            run=partial(backfill.solve, static=True),
            description="backfill with inference reserved at its peak",
            online=True,
            method="backfill by priority, static peak reservation",
        ),
        Solver(
            name="backfill-value",
            run=partial(backfill.solve, by_value=True),
            description="backfill ordered by value density, then deadline, then least work",
            online=True,
            method="backfill by value density",
        ),
        Solver(
            name="greedy",
            run=greedy.solve,
            description="heuristic: inference reserved slot by slot, jobs in order of value",
            method="value order",
        ),
        Solver(
            name="cpsat",
            run=_cpsat,
            description="optimizer: CP-SAT over the whole horizon, with a proven bound and gap",
            anytime=True,
            takes_hint=True,
            reports_bound=True,
            optimizing=True,
            method="optimization",
        ),
    )
}
"""Every solver by name, each a `Solver` record: what it is for (`description`) and what it
can do (`anytime`, `takes_hint`, `reports_bound`, ...). `horizon-opt solve --help` lists them."""


def solve(
    instance: Instance, solver: str = "cpsat", options: SolveOptions | None = None, **kwargs: object
) -> Plan:
    """Solve with the named solver. Options may be given as a SolveOptions or as keywords
    (`time_limit`, `workers`, `seed`, `log`, `hint`, `on_progress`, `params`, `stop`); solvers
    ignore what does not apply to them. Placed jobs (running, or holding a start) stay where
    they are: the solver plans around them (`residual.py`). Teams' quotas are kept by one
    post-pass for every solver (`reclaim.py`)."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if options is None:
        options = SolveOptions(**kwargs)  # type: ignore[arg-type]
    elif kwargs:
        raise TypeError("give options either as SolveOptions or as keywords, not both")
    plan = solve_around_placed(SOLVERS[solver].run, instance, options)
    return quotas_kept(instance, plan) if quotas_bind(instance) else plan
