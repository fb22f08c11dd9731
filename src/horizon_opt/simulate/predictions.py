"""How far the run times a policy planned on were from the runs: each started run's planned
length (its plan's end minus its start: the limit for a policy on limits, the learned run time
for `-expect`) against what it ran, as production run-time predictors are judged."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class PredictionLog:
    """Planned against actual run lengths (slots) of the runs that ended, not preempted."""

    planned: dict[int, int] = field(default_factory=dict)  # running job -> its planned run
    pairs: list[tuple[int, int]] = field(default_factory=list)  # (planned, ran) of ended runs

    def started(self, job: int, planned_run: int) -> None:
        self.planned[job] = planned_run

    def ended(self, job: int, ran: int) -> None:
        planned = self.planned.pop(job, None)
        if planned is not None:
            self.pairs.append((planned, ran))

    def stopped(self, job: int) -> None:
        """A run stopped before its end (preempted): it says nothing of its run time."""
        self.planned.pop(job, None)

    def figures(self, hours_per_slot: float) -> tuple[float, float]:
        """(median |planned - ran| in hours, share of runs that ran longer than planned)."""
        if not self.pairs:
            return 0.0, 0.0
        planned, ran = np.array(self.pairs, dtype=float).T
        error = float(np.median(np.abs(planned - ran))) * hours_per_slot
        return error, float(np.mean(ran > planned))
