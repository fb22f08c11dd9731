"""Promises as intervals: each start a plan first predicts far enough ahead, with a P50 and a
P90 learned from how late the promises before it came true (`horizon_opt.loop.lateness`).

A plan's predicted start trusts every run time it planned on; in the world, jobs end early or
late, arrive, fail and are preempted, so starts move. How much they moved is history the
replay has, as a production scheduler has: each promise's lateness over the promises made
before it that have resolved (the job started) or are already overdue. A promised job that
never starts counts as starting at the horizon's end; one cancelled before it starts (a job it
waited for failed) leaves the book, as it leaves a real queue: its promise is void, not broken.
The figures count the promises made in the replay's measured window: those of the warm-up are
made before there is history to learn from, as a production scheduler is never without it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from horizon_opt.loop.lateness import Lateness, calibrated_level, lateness_shares
from horizon_opt.simulate.window import Window


@dataclass(frozen=True)
class Promise:
    made: int  # the slot the plan was made at
    predicted: int  # the start it predicted
    p50: int
    p90: int
    klass: str = ""  # its job's size class (`loop.lateness.size_class`)

    @property
    def lead(self) -> int:
        return max(self.predicted - self.made, 1)


@dataclass
class PromiseBook:
    """Every job's first promise (`first`, its interval) and when promised jobs started."""

    first: dict[int, Promise] = field(default_factory=dict)
    started: dict[int, int] = field(default_factory=dict)
    void: set[int] = field(default_factory=set)  # cancelled before they started

    def promise(self, job: int, made: int, predicted: int, klass: str = "") -> None:
        """The plan made at `made` predicts `job`, of size class `klass`, starts at `predicted`
        (kept if the first)."""
        if job in self.first or job in self.started or job in self.void:
            return
        lead = max(predicted - made, 1)
        p50, p90 = lateness_shares(*self._lateness(made), klass, self._level(made))
        early = predicted + math.floor(p50 * lead)
        late = max(early, predicted + math.ceil(p90 * lead))
        self.first[job] = Promise(made, predicted, early, late, klass)

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

    def _lateness(self, now: int) -> tuple[list[Lateness], list[Lateness]]:
        """Lateness of the promises that came true by `now`, and so far of
        those still waiting (negative before their predicted start), each with its class."""
        came_true, waiting = [], []
        for j, p in self.first.items():
            start = self.started.get(j)
            if start is not None and start <= now:
                came_true.append((p.klass, (start - p.predicted) / p.lead))
            else:
                waiting.append((p.klass, (now - p.predicted) / p.lead))
        return came_true, waiting

    def _level(self, now: int) -> float:
        """The quantile the next P90 is read at, from the promises resolved by `now`: covered
        (started by their P90) or missed (not started by then, and now past it)."""
        missed = []
        for j, p in self.first.items():
            start = self.started.get(j)
            if start is not None and start <= min(now, p.p90):
                missed.append(False)
            elif now > p.p90:
                missed.append(True)
        return calibrated_level(missed)

    def figures(
        self, horizon: int, hours_per_slot: float, window: Window | None = None
    ) -> tuple[int, float, float, float]:
        """Of the promises made in `window` (all without one): (how many, median |start -
        prediction| in hours, median |start - P50| in hours, share started by their P90)."""
        made = {
            j: p
            for j, p in self.first.items()
            if window is None or window.start <= p.made < window.end
        }
        if not made:
            return 0, 0.0, 0.0, 0.0
        starts = {j: self.started.get(j, horizon) for j in made}
        raw = [abs(starts[j] - p.predicted) for j, p in made.items()]
        p50 = [abs(starts[j] - p.p50) for j, p in made.items()]
        covered = [starts[j] <= p.p90 for j, p in made.items()]
        return (
            len(raw),
            float(np.median(raw)) * hours_per_slot,
            float(np.median(p50)) * hours_per_slot,
            float(np.mean(covered)),
        )
