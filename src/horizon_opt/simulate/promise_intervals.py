"""Promises as intervals: each start a plan first predicts far enough ahead, with a P50 and a
P90 learned from how late the promises before it came true (`horizon_opt.loop.lateness`).

A plan's predicted start trusts every run time it planned on; in the world, jobs end early or
late, arrive, fail and are preempted, so starts move. How much they moved is history the
replay has, as a production scheduler has: each promise's lateness over the promises made
before it that have resolved (the job started) or are already overdue. A promised job that
never starts counts as starting at the horizon's end; one cancelled before it starts (a job it
waited for failed) leaves the book, as it leaves a real queue: its promise is void, not broken.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from horizon_opt.loop.lateness import lateness_shares


@dataclass(frozen=True)
class Promise:
    made: int  # the slot the plan was made at
    predicted: int  # the start it predicted
    p50: int
    p90: int

    @property
    def lead(self) -> int:
        return max(self.predicted - self.made, 1)


@dataclass
class PromiseBook:
    """Every job's first promise (`first`, its interval) and when promised jobs started."""

    first: dict[int, Promise] = field(default_factory=dict)
    started: dict[int, int] = field(default_factory=dict)
    void: set[int] = field(default_factory=set)  # cancelled before they started

    def promise(self, job: int, made: int, predicted: int) -> None:
        """The plan made at `made` predicts `job` starts at `predicted` (kept if the first)."""
        if job in self.first or job in self.started or job in self.void:
            return
        lead = max(predicted - made, 1)
        p50, p90 = lateness_shares(*self._lateness(made))
        early = predicted + math.floor(p50 * lead)
        self.first[job] = Promise(
            made, predicted, early, max(early, predicted + math.ceil(p90 * lead))
        )

    def start(self, job: int, t: int) -> None:
        self.started.setdefault(job, t)

    def cancel(self, job: int) -> None:
        """`job` left the queue before it started: its promise, if any, leaves the book."""
        if job not in self.started:
            self.first.pop(job, None)
            self.void.add(job)

    def waiting(self) -> dict[int, int]:
        """Promised jobs not started yet -> their predicted start."""
        return {j: p.predicted for j, p in self.first.items() if j not in self.started}

    def _lateness(self, now: int) -> tuple[list[float], list[float]]:
        """Lateness of the promises that came true by `now`, and so far of
        those still waiting (negative before their predicted start)."""
        came_true, waiting = [], []
        for j, p in self.first.items():
            start = self.started.get(j)
            if start is not None and start <= now:
                came_true.append((start - p.predicted) / p.lead)
            else:
                waiting.append((now - p.predicted) / p.lead)
        return came_true, waiting

    def figures(self, horizon: int, hours_per_slot: float) -> tuple[int, float, float, float]:
        """(promised jobs, median |start - prediction| in hours, median |start - P50| in hours,
        share started by their P90)."""
        if not self.first:
            return 0, 0.0, 0.0, 0.0
        starts = {j: self.started.get(j, horizon) for j in self.first}
        raw = [abs(starts[j] - p.predicted) for j, p in self.first.items()]
        p50 = [abs(starts[j] - p.p50) for j, p in self.first.items()]
        covered = [starts[j] <= p.p90 for j, p in self.first.items()]
        return (
            len(raw),
            float(np.median(raw)) * hours_per_slot,
            float(np.median(p50)) * hours_per_slot,
            float(np.mean(covered)),
        )
