"""When a job may start and end: the one owner of the time rules.

Release, `now`, a placed start, deadline, horizon and blackouts combine here, once per instance,
into each job's `StartWindow` (`Instance.windows`), whose `StartDomain` per pool lists the starts
allowed (sorted intervals, with holes where a run would cross a blackout). Every search, the
CP-SAT model, the relaxation's columns, the replay, the diagnosis and `validate` read the window
instead of combining those numbers again, so a new time rule is written here and nowhere else
among them (the CP-SAT model turns a domain into a variable's domain in one place). "On time"
is stated once, in `on_time`. Outages and the GPUs that placed jobs hold are per node, not per
job: they stay in the capacity (`Instance.capacity`, `Instance.whole`). The checker
(`check.py`) derives the rules again on its own, on purpose.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt


class Started(Protocol):
    """A placed job's placement (`instance.Placed` is one)."""

    @property
    def start(self) -> int: ...


class Timed(Protocol):
    """What the rules read of a job (`instance.Job` has it)."""

    @property
    def release(self) -> int: ...
    @property
    def deadline(self) -> int | None: ...
    @property
    def durations(self) -> Mapping[int, int]: ...
    @property
    def after(self) -> tuple[int, ...]: ...
    @property
    def placed(self) -> Started | None: ...
    @property
    def blackouts(self) -> tuple[tuple[int, int], ...]: ...


def first_start(release: int, now: int, placed: Started | None) -> int:
    """The first slot a job may start, as its compiled `Job.release` holds it: a placed job at its
    placed start, any other at its release but not before `now` (earlier slots are history)."""
    return placed.start if placed is not None else max(release, now)


def due(deadline: int | None, slots: int) -> int:
    """The last end slot at which a job still earns its value: its deadline, within the horizon."""
    return slots if deadline is None else min(slots, deadline)


def on_time(end: int, latest_end: int | None) -> bool:
    """FORMAT.md's on-time rule, its one statement: a run earns its job's value when it ends by
    `latest_end` (its deadline, or `due`; None: no deadline)."""
    return latest_end is None or end <= latest_end


@dataclass(frozen=True)
class StartDomain:
    """The starts a job may take on one pool: sorted, disjoint closed intervals [lo, hi]."""

    intervals: tuple[tuple[int, int], ...] = ()

    @staticmethod
    def span(lo: int, hi: int) -> StartDomain:
        """Every start from `lo` to `hi` (none when hi < lo)."""
        return StartDomain(((lo, hi),) if lo <= hi else ())

    def __bool__(self) -> bool:
        return bool(self.intervals)

    def __contains__(self, start: int) -> bool:
        k = bisect_right(self.intervals, start, key=lambda interval: interval[0]) - 1
        return k >= 0 and start <= self.intervals[k][1]

    def first_from(self, t: int) -> int | None:
        """The first allowed start at or after `t`, or None."""
        for lo, hi in self.intervals:
            if t <= hi:
                return max(lo, t)
        return None

    def last(self) -> int | None:
        """The last allowed start, or None."""
        return self.intervals[-1][1] if self.intervals else None

    def array(self) -> npt.NDArray[np.int64]:
        """Every allowed start, in order (for the relaxation's columns)."""
        if len(self.intervals) == 1:
            lo, hi = self.intervals[0]
            return np.arange(lo, hi + 1, dtype=np.int64)
        parts = [np.arange(lo, hi + 1, dtype=np.int64) for lo, hi in self.intervals]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def without(self, lo: int, hi: int) -> StartDomain:
        """The starts outside [lo, hi]."""
        out: list[tuple[int, int]] = []
        for a, b in self.intervals:
            if b < lo or hi < a:
                out.append((a, b))
                continue
            if a < lo:
                out.append((a, lo - 1))
            if hi < b:
                out.append((hi + 1, b))
        return StartDomain(tuple(out))


def allowed_starts(
    duration: int, lo: int, end: int, blackouts: Iterable[tuple[int, int]]
) -> StartDomain:
    """Starts s from `lo` with s + duration <= `end` whose run misses every blackout [a, b):
    the starts a - duration < s < b are holes."""
    out = StartDomain.span(lo, end - duration)
    for a, b in blackouts:
        out = out.without(a - duration + 1, b - 1)
    return out


@dataclass(frozen=True)
class StartWindow:
    """When one job may run. A run on pool p from s is allowed when `s in starts(p)`: from
    `earliest`, `s + durations[p] <= horizon`, and clear of the blackouts; it earns the job's
    value when it ends by `latest_end`."""

    earliest: int  # the first start (`first_start`; in a residual instance, after placed jobs)
    ready: int  # `earliest` pushed past its predecessors' shortest runs: no run starts before
    latest_end: int  # the last end that earns its value (`due`)
    horizon: int  # the last end at all: a late job may still run when a successor needs it
    useful_end: int  # the last end that can matter: `latest_end`, or `horizon` with successors
    durations: Mapping[int, int] = field(repr=False)
    blackouts: tuple[tuple[int, int], ...] = ()  # [a, b) slots in which the job may not run
    # pool -> every start the job may take there (`starts`), computed once
    domains: Mapping[int, StartDomain] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        domains = {
            p: self.allowed(d, self.earliest, self.horizon) for p, d in self.durations.items()
        }
        object.__setattr__(self, "domains", domains)

    def allowed(self, duration: int, lo: int, end: int) -> StartDomain:
        """The starts from `lo` of a run of `duration` slots that ends by `end` and misses the
        blackouts: what a search from `lo` that must end by `end` may return."""
        if not self.blackouts:
            return StartDomain.span(lo, end - duration)
        return allowed_starts(duration, lo, end, self.blackouts)

    def closed(self) -> bool:
        """Whether its holes alone leave it no start: the interval allows one on some pool, the
        domains none (the cause codes then blame the time rules, not the pools)."""
        return not any(self.starts(p) for p in self.durations) and any(
            self.earliest + d <= self.horizon for d in self.durations.values()
        )

    def starts(self, pool: int) -> StartDomain:
        """Every start the job may take on `pool`."""
        return self.domains[pool]

    def on_time(self, end: int) -> bool:
        """Whether a run that ends at `end` earns the job's value."""
        return on_time(end, self.latest_end)

    def in_time_from(self, t: int) -> bool:
        """Whether some pool's first start at or after `t` still ends by `latest_end`."""
        return any(
            (s := self.domains[p].first_from(t)) is not None and self.on_time(s + d)
            for p, d in self.durations.items()
        )

    def after(self, ends: Iterable[int]) -> int:
        """The first start once its predecessors end at `ends`."""
        return max([self.earliest, *ends])


def start_windows(
    jobs: Sequence[Timed],
    order: Sequence[int],
    successors: Sequence[Sequence[int]],
    slots: int,
    now: int,
) -> tuple[StartWindow, ...]:
    """Every job's window; `order` lists predecessors first (`instance.topological_order`)."""
    earliest = [first_start(job.release, now, job.placed) for job in jobs]
    ready = list(earliest)
    for j in order:
        for p in jobs[j].after:
            ready[j] = max(ready[j], ready[p] + min(jobs[p].durations.values()))
    out = []
    for j, job in enumerate(jobs):
        latest = due(job.deadline, slots)
        out.append(
            StartWindow(
                earliest=earliest[j],
                ready=ready[j],
                latest_end=latest,
                horizon=slots,
                useful_end=slots if successors[j] else latest,
                durations=job.durations,
                blackouts=job.blackouts,
            )
        )
    return tuple(out)
