"""When two pwo figures count as equal: one relative tolerance for the solvers' optimality
tests, the guard on bounds and `check`'s comparison of a plan's objective with its pwo, so that
they never disagree about the same two numbers. Values are floats summed in different orders;
the tolerance is far below any value's rounding in an instance file."""

from __future__ import annotations

REL_TOL = 1e-6


def slack(x: float) -> float:
    """How far a figure near `x` may stray and still count as `x`."""
    return REL_TOL * max(1.0, abs(x))


def reaches(value: float, bound: float) -> bool:
    """Whether `value` reaches `bound` (a plan's pwo its proven bound: optimal)."""
    return value >= bound - slack(bound)


def same(a: float, b: float) -> bool:
    """Whether `a` and `b` are the same figure."""
    return abs(a - b) <= slack(a)
