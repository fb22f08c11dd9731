"""The CP-SAT optimizer: node-level model, energy LP bound, large-neighbourhood search."""

from horizon_opt.solvers.cpsat.solver import solve

__all__ = ["solve"]
