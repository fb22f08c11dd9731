"""Solvers behind one call: `solve(instance, solver=NAME)` returns a `Plan`."""

from __future__ import annotations

from horizon_opt.solvers.options import SolveOptions
from horizon_opt.solvers.progress import Progress
from horizon_opt.solvers.registry import SOLVERS, Solver, SolverFn, solve
from horizon_opt.solvers.stop import AnyOf, GapBelow, NoImprovement, StopCriterion

__all__ = [
    "SOLVERS",
    "AnyOf",
    "GapBelow",
    "NoImprovement",
    "Progress",
    "SolveOptions",
    "Solver",
    "SolverFn",
    "StopCriterion",
    "solve",
]
