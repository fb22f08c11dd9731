"""Options every solver accepts, so that scripts can switch solvers by name alone."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from horizon_opt.params import SearchParams
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.progress import Progress
from horizon_opt.solvers.stop import StopCriterion

MAX_DEFAULT_WORKERS = 8
MAX_SEED = 2**30  # CP-SAT seeds are 32-bit and the search adds its iteration count


def default_workers() -> int:
    """CP-SAT workers for this machine: the CPUs this process may run on, at most 8.

    The search is mostly many small LNS subproblems, solved two at a time with half the workers
    each; a subproblem that takes a fraction of a second gains little from more than a few
    workers, and CP-SAT's portfolio beyond 8 mostly adds memory. Set `workers` to go higher.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_WORKERS, cpus))


# Default seconds for cpsat, one per use (docs/design.md, "Time limits"): a plan made once
# (`solve`, `compare`, the library) gets a minute; a plan among many (`replan`, `whatif`'s two,
# each of `simulate`'s) a third of it, so a replay of a hundred plans takes half an hour, not an
# hour and a half; a service's plan (`run`) sits between, since it has a whole cycle (15 minutes
# by default) to spend on one plan.
ONE_PLAN_SECONDS = 60.0
PER_PLAN_SECONDS = 20.0
SERVICE_PLAN_SECONDS = 30.0


@dataclass(frozen=True)
class SolveOptions:
    """Options every solver accepts; a solver ignores those it has no use for."""

    time_limit: float = ONE_PLAN_SECONDS  # seconds of wall time for anytime solvers
    workers: int = field(default_factory=default_workers)  # CP-SAT search workers
    seed: int = 0  # the search's random seed (cpsat); with one worker, a seed is one plan
    log: Path | None = None  # where CP-SAT writes its search log
    hint: Plan | None = None  # a plan to start from (cpsat)
    on_progress: Callable[[Progress], None] | None = None  # called with each Progress (cpsat)
    params: SearchParams = field(default_factory=SearchParams)  # tuning of the cpsat search
    # With one worker: only deterministic work stops cpsat (CP-SAT's deterministic time, the
    # LP's count of column-generation steps), never the wall clock, so a rerun gives the same
    # plan under any load; a loaded or slow machine then takes longer than `time_limit`. None
    # (the default): repeatable exactly when `workers` is 1; False keeps the wall clock as a
    # stop with one worker too (the plan may then depend on the machine's load).
    repeatable: bool | None = None
    # Ends cpsat before `time_limit` once the plan is good enough (`stop.py`: GapBelow,
    # NoImprovement, AnyOf); the other solvers are not anytime and ignore it.
    stop: StopCriterion | None = None

    def __post_init__(self) -> None:
        """Refuse options no solver can honour, with a message instead of a solver's crash."""
        if not (self.time_limit > 0 and self.time_limit < float("inf")):
            raise ValueError(
                f"time_limit must be a positive number of seconds, got {self.time_limit}"
            )
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be from 0 to {MAX_SEED}, got {self.seed}")
        if self.repeatable and self.workers != 1:
            raise ValueError(f"repeatable needs one worker, got {self.workers}")
