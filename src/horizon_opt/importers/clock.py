"""The horizon's slots around a snapshot, as every importer reads them.

Slot 0 is the cluster file's `horizon.start`, or one slot before the snapshot's slot when it
gives none (`horizon_start`); `now` is the snapshot rounded up to a slot, as FORMAT.md rounds
`now`. A time is rounded to a slot with a tolerance of 1e-9 slot, so a time written to the
second on a boundary stays on it. Slurm's, Kueue's and the table's importers all place their
jobs with this one clock.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from horizon_opt.importers.cluster import ClusterFile, horizon_start
from horizon_opt.times import iso, parse_time

__all__ = ["Clock"]


class Clock:
    """Slots of the cluster file's horizon around the snapshot."""

    def __init__(self, cluster: ClusterFile, snapshot: datetime) -> None:
        self.snapshot = snapshot
        self.minutes = cluster.horizon.slot_minutes  # a slot's length
        self.step = timedelta(minutes=self.minutes)
        self.start = horizon_start(cluster, snapshot)  # slot 0
        self.slots = cluster.horizon.slots
        self.end = self.start + self.slots * self.step  # the horizon's written end
        self.open_end = cluster.horizon.open_end  # then a running job is placed until its end
        self.now = self.up(snapshot)

    def down(self, when: datetime) -> int:
        """The slot `when` falls in (rounded down to a boundary)."""
        return math.floor((when - self.start) / self.step + 1e-9)

    def up(self, when: datetime) -> int:
        """The first slot boundary at or after `when`."""
        return math.ceil((when - self.start) / self.step - 1e-9)

    def at(self, slot: int) -> datetime:
        return self.start + slot * self.step

    def time(self, slot: int) -> str:
        """A slot's time as the instance file writes it."""
        return iso(self.at(slot))

    def of(self, value: int | str, round_up: bool) -> int | None:
        """The slot of a cluster file's time field (a slot, or a time); None when unreadable."""
        if isinstance(value, int):
            return value
        when = parse_time(value)
        if when is None:
            return None
        return self.up(when) if round_up else self.down(when)
