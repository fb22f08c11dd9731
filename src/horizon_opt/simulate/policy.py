"""Policies a replay compares: a solver, and when it plans.

- online (`fifo`, `fifo-elastic`, `backfill`, `backfill-static`): plans at every event (a job
  ends, arrives, is preempted or cannot start), as a Slurm scheduler reacts;
- periodic (`greedy`, `cpsat`): a full re-plan every `every` slots, holding the previous plan's
  starts within `freeze` slots; at events in between, a fill that holds every promised start
  and places the jobs left over (new arrivals, early ends) into the gaps, with `fill`
  (backfill);
- open loop (`<solver>-open`): one plan at slot 0 that knows every job of the horizon (the
  planner's perfect-knowledge number), executed without re-planning.

The oracle ladder: the same solver, planning when it would (online or periodic), told more of
the future than it could know: `<solver>-runtimes` each job's actual run time instead of its
estimate, `<solver>-arrivals` every job of the horizon before its release, `<solver>-oracle`
both, the top rung. The rungs measure what foresight is worth; none is told the actual demand.

`<solver>-predict` is told nothing more: it bets on the jobs whose limits cannot end in time, on
run times learned from the runs that have ended so far (`simulate.runtimes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from horizon_opt.errors import InputError
from horizon_opt.simulate.runtimes import DEFAULT_QUANTILE
from horizon_opt.solvers import SOLVERS

ONLINE = ("fifo", "fifo-elastic", "backfill", "backfill-static", "backfill-value")
SUFFIXES = ("-open", "-runtimes", "-arrivals", "-oracle", "-predict")


@dataclass(frozen=True)
class Policy:
    name: str
    solver: str
    every: int | None  # slots between full re-plans (periodic); None: online or open loop
    freeze: int = 0  # slots of the previous plan's starts that a re-plan holds
    open_loop: bool = False
    fill: str = "backfill"  # the solver that fills gaps between re-plans, holding every start
    stability: float = 0.0  # the re-plans' stability weight (see `replan`)
    knows_runtimes: bool = False  # planners see each job's actual run time, not its estimate
    knows_arrivals: bool = False  # planners see every job of the horizon before its release
    predict: float | None = None  # plan on this quantile of the run times seen so far

    @property
    def online(self) -> bool:
        return self.every is None and not self.open_loop

    def due(self, t: int) -> bool:
        """Whether a full plan is due at slot `t` (online policies plan at events instead)."""
        if self.open_loop:
            return t == 0
        return self.every is not None and t % self.every == 0


def policy(
    name: str,
    every: int,
    freeze: int,
    stability: float = 0.0,
    quantile: float = DEFAULT_QUANTILE,
) -> Policy:
    """The policy called `name` (a solver, optionally with a suffix of `SUFFIXES`);
    `stability` applies to the re-plans of periodic policies, `quantile` to `-predict`."""
    suffix = next((s for s in SUFFIXES if name.endswith(s)), "")
    solver = name.removesuffix(suffix) if suffix else name
    if solver not in SOLVERS:
        raise InputError(
            [
                f"--policy: unknown policy {name!r}; use a solver ({', '.join(SOLVERS)}), "
                "optionally with -open (one plan knowing every arrival, executed as planned), "
                "-runtimes (told the actual run times), -arrivals (told every arrival), "
                "-oracle (both) or -predict (bets on the jobs limits leave out, on run times "
                "learned from the runs ended so far)"
            ]
        )
    if suffix == "-open":
        return Policy(name, solver, None, open_loop=True, knows_arrivals=True)
    online = solver in ONLINE
    return Policy(
        name,
        solver,
        None if online else every,
        0 if online else freeze,
        stability=0.0 if online else stability,
        knows_runtimes=suffix in ("-runtimes", "-oracle"),
        knows_arrivals=suffix in ("-arrivals", "-oracle"),
        predict=quantile if suffix == "-predict" else None,
    )
