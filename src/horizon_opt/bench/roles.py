"""The part each solver plays in a summary, read from the registry's flags, never from its name:
a newly registered solver is compared, charted and costed like the ones it resembles."""

from __future__ import annotations

from collections.abc import Iterable

from horizon_opt.solvers import SOLVERS


def _flagged(flag: str) -> str:
    """The one registered solver with `flag` set."""
    return next(s.name for s in SOLVERS.values() if getattr(s, flag))


def baseline() -> str:
    """The reference of plan benchmarks, unless a suite names its own (`baseline`)."""
    return _flagged("baseline")


def loop_baseline() -> str:
    """The closed loop's reference policy, unless a suite names its own (`loop.base`)."""
    return _flagged("loop_baseline")


def known(solvers: Iterable[str]) -> list[str]:
    """The registered ones of `solvers`, in their order: a row of a solver since removed has no
    flags to go by."""
    return [s for s in dict.fromkeys(solvers) if s in SOLVERS]


def optimizers(solvers: Iterable[str]) -> list[str]:
    """The ones that search for the best plan: what the other planners are measured against."""
    return [s for s in known(solvers) if SOLVERS[s].optimizing]


def bounded(solvers: Iterable[str]) -> list[str]:
    """The ones that report a proven bound, hence a gap."""
    return [s for s in known(solvers) if SOLVERS[s].reports_bound]


def anytime() -> str:
    """The registered solvers a time limit applies to, for the text of a summary."""
    return " and ".join(s.name for s in SOLVERS.values() if s.anytime)


def gain_pairs(solvers: Iterable[str], base: str) -> list[tuple[str, str]]:
    """The (solver, reference) pairs of the gains tables: every periodic planner over the
    baseline (optimizers first), then every optimizer over every other periodic planner."""
    names = known(solvers)
    planners = [s for s in names if SOLVERS[s].periodic and s != base]
    best = [s for s in planners if SOLVERS[s].optimizing]
    rest = [s for s in planners if s not in best]
    return [(s, base) for s in best + rest] + [(a, b) for a in best for b in rest]


def ablation(solvers: Iterable[str], base: str) -> list[str]:
    """The ablation's steps: the baseline, then the other solvers in suite order (the order of
    the suite's `solvers` is the ladder)."""
    names = known(solvers)
    return [base, *(s for s in names if s != base)] if base in names else []


def label(solver: str) -> str:
    """A step of the ablation: the solver and how it plans."""
    method = SOLVERS[solver].method
    return f"{solver} ({method})" if method else solver
