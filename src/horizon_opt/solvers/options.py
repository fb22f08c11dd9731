"""Options every solver accepts, so that scripts can switch solvers by name alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from horizon_opt.plan import Plan


@dataclass(frozen=True)
class Progress:
    """One progress report of an anytime solver."""

    elapsed: float
    objective: float
    bound: float | None

    @property
    def gap(self) -> float | None:
        if self.bound is None:
            return None
        return (self.bound - self.objective) / max(self.bound, 1e-9)


@dataclass(frozen=True)
class SolveOptions:
    time_limit: float = 60.0  # seconds of wall time for anytime solvers
    workers: int = 2  # CP-SAT search workers; 2 suits a 2-core machine
    seed: int = 0
    log: Path | None = None  # where CP-SAT writes its search log
    hint: Plan | None = None  # a plan to start from (cpsat)
    on_progress: Callable[[Progress], None] | None = None
