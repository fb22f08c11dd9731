"""The cpsat optimizer: LP-guided starts, a node-level CP-SAT model solved whole or by
large-neighbourhood search, and a proven bound from the time-indexed relaxation."""

from horizon_opt.solvers.cpsat.solver import solve

__all__ = ["solve"]
