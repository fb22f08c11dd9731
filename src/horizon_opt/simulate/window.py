"""What a replay realized inside a measured window, away from both ends of its horizon.

A replay starts from an empty cluster and stops at its horizon's end: a policy that leaves the
cluster idle at the start loses nothing there that others gain, and one that starts long jobs
late loses them at the end however well it plans. Counting a window in the middle (by default
the middle half: the first quarter warms up, the last drains while jobs keep arriving) measures
the steady state instead. A run counts for the part of it inside the window, at the share of its
job's value that part is of the whole run, when the job completes on time (by its deadline; a
run still going when the replay ends counts when the world says it would complete).
"""

from __future__ import annotations

from dataclasses import dataclass

from horizon_opt.errors import InputError


@dataclass(frozen=True)
class Window:
    """Slots `[start, end)` of a replay."""

    start: int
    end: int

    @classmethod
    def middle(cls, slots: int) -> Window:
        """The middle half of `slots`: a quarter to warm up before it, a quarter to drain after."""
        return cls(slots // 4, slots - slots // 4)

    @classmethod
    def parse(cls, text: str, slots: int, slot_minutes: int) -> Window:
        """`A-B` in hours from the horizon's start (`--window 12-36`), or `middle`."""
        if text.strip() == "middle":
            return cls.middle(slots)
        try:
            a, b = (float(x) for x in text.split("-"))
        except ValueError:
            raise InputError([f"--window: {text!r} is not A-B (hours) or middle"]) from None
        start, end = round(a * 60 / slot_minutes), round(b * 60 / slot_minutes)
        if not 0 <= start < end <= slots:
            hours = slots * slot_minutes / 60
            raise InputError([f"--window: {text} is not within the {hours:g} h replayed, A < B"])
        return cls(start, end)

    def overlap(self, start: int, end: int) -> int:
        return max(0, min(end, self.end) - max(start, self.start))


@dataclass
class WindowTally:
    """The replay's figures inside `window`, added up as it goes."""

    window: Window
    pwo: float = 0.0
    used: float = 0.0  # batch GPU-slots and served inference GPU-slots
    available: float = 0.0

    def slot(self, t: int, used: float, available: float) -> None:
        if self.window.start <= t < self.window.end:
            self.used += used
            self.available += available

    def completed(self, value: float, start: int, end: int) -> None:
        """A run of a job worth `value` that completes on time over `[start, end)`."""
        self.pwo += value * self.window.overlap(start, end) / max(1, end - start)

    @property
    def utilization(self) -> float:
        return self.used / self.available if self.available else 0.0
