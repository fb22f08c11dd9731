"""Stop criteria: when an anytime solver (cpsat) may stop before its time limit.

A production planner wants a plan that is good enough, soon: one proven within 1% of the best
possible, or one the search has stopped improving. Each criterion is a small frozen object that
judges the solver's `Progress`, as PyVRP's `pyvrp.stop` does; `AnyOf` combines them. The time
limit (`SolveOptions.time_limit`) still holds, and a plan proven optimal still ends the search.

cpsat asks its criterion at every check of its budget (`cpsat.budget.Budget.out_of_time`), from
the end of its relaxation on: between LNS subproblems, ejection tries, squeaky-wheel passes and
stages. A CP-SAT solve already running ends within its own limit. Once it stops, the plan gets
the bound proven so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from horizon_opt.solvers.progress import Progress


class StopCriterion(Protocol):
    def __call__(self, progress: Progress) -> StopCriterion | None:
        """The criterion that says stop at `progress` (itself, or one of those it combines, so
        that the search log can name it), or None to go on."""
        ...


@dataclass(frozen=True)
class GapBelow:
    """Stop once the proven gap, (bound - pwo) / bound, is at most `share` (0.01: 1%); never
    before a bound is proven. With an open end every job fits, so pwo is often proven at once:
    the search then stops before it orders the work (`SearchParams.end_order`)."""

    share: float

    def __post_init__(self) -> None:
        if not 0 <= self.share <= 1:
            raise ValueError(f"GapBelow: share must be from 0 to 1, got {self.share}")

    def __call__(self, progress: Progress) -> StopCriterion | None:
        gap = progress.gap
        return self if gap is not None and gap <= self.share else None


@dataclass(frozen=True)
class NoImprovement:
    """Stop when pwo has not improved for `seconds` of the budget (`Progress.stalled`).

    With a repeatable budget (one worker, see `SolveOptions.repeatable`) these are the budget's
    deterministic seconds, not the wall clock's: a rerun stops at the same step with the same
    plan, whatever the machine's load, and on a loaded machine they take longer to pass.
    """

    seconds: float

    def __post_init__(self) -> None:
        if not 0 < self.seconds < math.inf:
            raise ValueError(f"NoImprovement: seconds must be positive, got {self.seconds}")

    def __call__(self, progress: Progress) -> StopCriterion | None:
        return self if progress.stalled >= self.seconds else None


@dataclass(frozen=True)
class ElapsedAtLeast:
    """Stop once `seconds` of the budget have passed (`Progress.elapsed`): for a caller that
    gives the rest of the time limit to a stage of its own, while the relaxation keeps its
    shares of the whole limit (cpsat with teams' quotas, `cpsat/quotas.py`)."""

    seconds: float

    def __post_init__(self) -> None:
        if not 0 < self.seconds < math.inf:
            raise ValueError(f"ElapsedAtLeast: seconds must be positive, got {self.seconds}")

    def __call__(self, progress: Progress) -> StopCriterion | None:
        return self if progress.elapsed >= self.seconds else None


@dataclass(frozen=True, init=False)
class AnyOf:
    """Stop when any of `criteria` says so; the first of them that does is the one named."""

    criteria: tuple[StopCriterion, ...]

    def __init__(self, *criteria: StopCriterion) -> None:
        if not criteria:
            raise ValueError("AnyOf needs at least one criterion")
        object.__setattr__(self, "criteria", criteria)

    def __call__(self, progress: Progress) -> StopCriterion | None:
        for criterion in self.criteria:
            met = criterion(progress)
            if met is not None:
                return met
        return None
