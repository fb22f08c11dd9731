"""Solvers behind one call: `solve(instance, solver=NAME)` returns a `Plan`."""

from __future__ import annotations

from horizon_opt.solvers.options import Progress, SolveOptions
from horizon_opt.solvers.registry import SOLVERS, Solver, SolverFn, solve

__all__ = ["SOLVERS", "Progress", "SolveOptions", "Solver", "SolverFn", "solve"]
