"""When a job may start and end: the one owner of the time rules.

Release, `now`, a placed start, deadline and horizon combine here, once per instance, into each
job's `StartWindow` (`Instance.windows`). Every search, the relaxation's columns, the diagnosis
and `validate` read the window instead of combining those numbers again, so a new time rule is
written here and nowhere else among them. Outages and the GPUs that placed jobs hold are per
node, not per job: they stay in the capacity (`Instance.capacity`, `Instance.whole`). The checker
(`check.py`) derives the rules again on its own, on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


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


def first_start(release: int, now: int, placed: Started | None) -> int:
    """The first slot a job may start, as its compiled `Job.release` holds it: a placed job at its
    placed start, any other at its release but not before `now` (earlier slots are history)."""
    return placed.start if placed is not None else max(release, now)


def due(deadline: int | None, slots: int) -> int:
    """The last end slot at which a job still earns its value: its deadline, within the horizon."""
    return slots if deadline is None else min(slots, deadline)


@dataclass(frozen=True)
class StartWindow:
    """When one job may run. A run on pool p from s is allowed when `earliest <= s` and
    `s + durations[p] <= horizon`; it earns the job's value when it ends by `latest_end`."""

    earliest: int  # the first start (`first_start`; in a residual instance, after placed jobs)
    ready: int  # `earliest` pushed past its predecessors' shortest runs: no run starts before
    latest_end: int  # the last end that earns its value (`due`)
    horizon: int  # the last end at all: a late job may still run when a successor needs it
    useful_end: int  # the last end that can matter: `latest_end`, or `horizon` with successors
    durations: Mapping[int, int] = field(repr=False)

    def latest_start(self, pool: int) -> int:
        """The last start on `pool` that ends by `latest_end` (below `earliest`: none)."""
        return self.latest_end - self.durations[pool]

    def last_start(self, pool: int) -> int:
        """The last start on `pool` that ends within the horizon."""
        return self.horizon - self.durations[pool]

    def on_time(self, end: int) -> bool:
        """Whether a run that ends at `end` earns the job's value."""
        return end <= self.latest_end

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
            )
        )
    return tuple(out)
