"""What every section of a spec's compilation shares: the spec, its horizon in slots, the nodes
once known, the problems and warnings collected, and the time units (slots, timestamps,
durations).

`CompilerCore` is the base of the jobs part (`JobsCompiler`, compiler_jobs.py, over the checks of
one placed job, `PlacedCompiler`, compiler_placed.py) and the services part (`ServicesCompiler`,
compiler_services.py) of `_Compiler` (compiler.py).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from horizon_opt.errors import Problem
from horizon_opt.model.instance import BoolArray, FloatArray, duration_minutes, horizon_start
from horizon_opt.model.spec import MAX_SLOTS, MAX_TIME_SLOTS, InstanceSpec, show
from horizon_opt.model.teams import Team

__all__ = ["CompilerCore"]


class CompilerCore:
    """The spec's horizon, nodes and time units, collecting every problem instead of stopping at
    the first."""

    def __init__(
        self,
        spec: InstanceSpec,
        demands: Mapping[int, Sequence[float]],
        passed: Collection[int] = (),
        planned_slots: int | None = None,
    ) -> None:
        self.spec = spec
        self.demands = demands
        self.passed = passed  # the services whose demand was passed in, not written inline
        self.tails: dict[int, FloatArray] = {}  # service -> its passed demand past slot S
        self.planned_slots = planned_slots  # with an open end: plan over exactly these
        self.problems: list[str | Problem] = []  # located where the compiler says where
        self.warnings: list[str] = []
        self.S = spec.horizon.slots
        self.slot_minutes = spec.horizon.slot_minutes
        self.start = horizon_start(spec)
        self.now = 0
        self.up_rows: BoolArray = np.ones((0, 0), dtype=np.bool_)
        self.node_pools: list[int] = []
        self.node_names: tuple[str, ...] = ()
        self.node_index: dict[str, int] = {}
        self.teams: tuple[Team, ...] = ()  # compiled before the jobs that name them

    def error(self, path: str, message: str) -> None:
        self.problems.append(Problem.at(path, message))

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}")

    def in_calendar(self, slot: int) -> bool:
        """Whether a slot boundary is a time Python can hold (years 1 to 9999), in the start's
        offset and in UTC: plans and reports print it."""
        if self.start is None:
            return True
        try:
            (self.start + timedelta(minutes=slot * self.slot_minutes)).astimezone(UTC)
        except OverflowError:
            return False
        return True

    # -- units ---------------------------------------------------------------------------------

    def time(self, value: int | str, path: str, round_up: bool) -> int | None:
        """A slot index from an int or an ISO timestamp (rounded up or down to a slot boundary)."""
        if isinstance(value, int):
            slot = value
        elif self.start is None:
            self.error(path, f"timestamp {show(value)} needs horizon.start to be set")
            return None
        else:
            try:
                when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                self.error(path, f"not a slot index or an ISO-8601 timestamp: {show(value)}")
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            slots = (when - self.start).total_seconds() / 60 / self.slot_minutes
            slot = math.ceil(slots - 1e-9) if round_up else math.floor(slots + 1e-9)
        if abs(slot) > MAX_TIME_SLOTS:
            self.error(
                path, f"out of range: a time is at most {MAX_TIME_SLOTS:,} slots from slot 0"
            )
            return None
        return slot

    def duration(self, value: int | str, path: str) -> int | None:
        if isinstance(value, int):
            slots = value
        else:
            minutes = duration_minutes(value)
            if minutes is None:
                self.error(path, f"not a duration: {show(value)} (use slots or e.g. 90m, 6h, 2d)")
                return None
            # Capped just past the limit before rounding: a number too long for a float is inf.
            minutes = min(minutes, (MAX_SLOTS + 1) * self.slot_minutes)
            slots = math.ceil(minutes / self.slot_minutes - 1e-9)
        if slots < 1:
            self.error(path, f"must be at least one slot, got {show(value)}")
            return None
        if slots > MAX_SLOTS:
            self.error(path, f"longer than {MAX_SLOTS:,} slots, the most horizon-opt plans")
            return None
        return slots
