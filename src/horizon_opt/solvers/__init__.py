"""Solvers behind one call: `solve(instance, solver=NAME)` returns a `Plan`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from horizon_opt.instance import Instance
from horizon_opt.plan import Plan
from horizon_opt.solvers import fifo, greedy
from horizon_opt.solvers.options import Progress, SolveOptions

SolverFn = Callable[[Instance, SolveOptions], Plan]


def _cpsat(instance: Instance, options: SolveOptions) -> Plan:
    from horizon_opt.solvers.cpsat import solve as cpsat_solve  # imports ortools only when used

    return cpsat_solve(instance, options)


SOLVERS: dict[str, SolverFn] = {
    "fifo": fifo.solve,
    "fifo-elastic": partial(fifo.solve, elastic=True),
    "greedy": greedy.solve,
    "cpsat": _cpsat,
}


def solve(
    instance: Instance, solver: str = "cpsat", options: SolveOptions | None = None, **kwargs: object
) -> Plan:
    """Solve with the named solver. Options may be given as a SolveOptions or as keywords
    (`time_limit`, `workers`, `seed`, `log`, `hint`, `on_progress`); solvers ignore what does
    not apply to them."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if options is None:
        options = SolveOptions(**kwargs)  # type: ignore[arg-type]
    elif kwargs:
        raise TypeError("give options either as SolveOptions or as keywords, not both")
    return SOLVERS[solver](instance, options)


__all__ = ["SOLVERS", "Progress", "SolveOptions", "solve"]
