"""Backtesting a forecaster on its own history: rolling origins scored by coverage and
over-reservation (`backtest`, `BacktestRow`, `summarize`, `headroom_for`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from horizon_opt.forecast.history import History, TimeLike, epoch_seconds, to_datetime
from horizon_opt.forecast.models import Forecaster, replicas
from horizon_opt.model.instance import FloatArray


@dataclass(frozen=True)
class BacktestRow:
    """One forecast origin of a backtest: the forecast and what happened, slot by slot.

    `reserved` is what the forecast would reserve: `forecast * (1 + headroom)`, and with a replica
    throughput, `ceil(forecast / rps * (1 + headroom))` replicas against `actual / rps`. Slots with
    no actual value (a gap in the history) are not scored.
    """

    origin: datetime
    slot_minutes: int
    forecast: FloatArray
    reserved: FloatArray
    actual: FloatArray  # NaN: a gap

    @property
    def scored(self) -> npt.NDArray[np.bool_]:
        return ~np.isnan(self.actual) & ~np.isnan(self.reserved)

    @property
    def slots(self) -> int:
        return int(self.scored.sum())

    @property
    def covered(self) -> int:
        """Scored slots whose actual demand stayed at or under the reservation."""
        s = self.scored
        return int((self.actual[s] <= self.reserved[s] + 1e-9).sum())

    @property
    def actual_total(self) -> float:
        return float(self.actual[self.scored].sum())

    @property
    def idle_total(self) -> float:
        """Sum over scored slots of max(reserved - actual, 0): reserved but unused."""
        s = self.scored
        return float(np.maximum(self.reserved[s] - self.actual[s], 0).sum())

    @property
    def short_total(self) -> float:
        """Sum over scored slots of max(actual - reserved, 0): demand above the reservation."""
        s = self.scored
        return float(np.maximum(self.actual[s] - self.reserved[s], 0).sum())

    @property
    def coverage(self) -> float:
        return self.covered / self.slots if self.slots else math.nan

    @property
    def over(self) -> float:
        """Over-reservation: idle / actual demand (in slot-hours of the value, so replica-hours
        reserved but unused per replica-hour used)."""
        return self.idle_total / self.actual_total if self.actual_total else math.nan

    @property
    def under(self) -> float:
        """Demand above the reservation, as a share of the demand."""
        return self.short_total / self.actual_total if self.actual_total else math.nan

    @property
    def idle_hours(self) -> float:
        """Reserved but unused, in value-hours (replica-hours when scored in replicas)."""
        return self.idle_total * self.slot_minutes / 60


@dataclass(frozen=True)
class BacktestSummary:
    """All origins of a backtest together (slot-weighted)."""

    origins: int
    slots: int
    coverage: float  # share of scored slots with actual <= reserved
    over: float  # sum of max(reserved - actual, 0) / sum of actual
    under: float  # sum of max(actual - reserved, 0) / sum of actual
    idle_hours: float


def summarize(rows: Sequence[BacktestRow]) -> BacktestSummary:
    """Coverage and over-reservation over all the rows' scored slots together."""
    slots = sum(r.slots for r in rows)
    actual = sum(r.actual_total for r in rows)
    return BacktestSummary(
        origins=len(rows),
        slots=slots,
        coverage=sum(r.covered for r in rows) / slots if slots else math.nan,
        over=sum(r.idle_total for r in rows) / actual if actual else math.nan,
        under=sum(r.short_total for r in rows) / actual if actual else math.nan,
        idle_hours=sum(r.idle_hours for r in rows),
    )


def headroom_for(rows: Sequence[BacktestRow], coverage: float) -> float:
    """The smallest headroom h >= 0 with which `forecast * (1 + h)` would have covered at least
    `coverage` of the scored slots (before any rounding to whole replicas). In-sample: it is
    fitted on these very slots, so expect somewhat less coverage on new ones. `inf` when a
    forecast of 0 met demand above 0 too often."""
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage must be in (0, 1], got {coverage!r}")
    need: list[float] = []
    for r in rows:
        s = r.scored & ~np.isnan(r.forecast)
        f, a = r.forecast[s], r.actual[s]
        with np.errstate(divide="ignore", invalid="ignore"):
            need.extend(np.where(a <= 0, 0.0, np.where(f > 0, a / f - 1, math.inf)).tolist())
    if not need:
        return math.nan
    return max(0.0, float(np.quantile(need, coverage, method="inverted_cdf")))


def backtest(
    history: History,
    forecaster: Forecaster,
    slots_ahead: int | None = None,
    step: int | None = None,
    *,
    first: TimeLike | None = None,
    headroom: float = 0.0,
    rps_per_replica: float | None = None,
) -> list[BacktestRow]:
    """Forecast from rolling origins over the history and score each against what happened.

    Origins are on the slot grid, `step` slots apart (default: `slots_ahead`), from `first`
    (default: one week after the history's first slot) while the whole forecast falls within the
    history. Each forecast is fit on the history before its origin and covers `slots_ahead`
    slots (default: one day). The actual demand of a slot is the history's mean over it
    (`History.slotted`); see `BacktestRow` for the scoring, `summarize` to total the rows.
    """
    minutes = forecaster.slot_minutes
    slot = minutes * 60
    per_day = 1440 // minutes
    ahead = per_day if slots_ahead is None else slots_ahead
    stride = ahead if step is None else step
    if not (isinstance(ahead, int) and ahead >= 1 and isinstance(stride, int) and stride >= 1):
        raise ValueError("slots_ahead and step must be integers >= 1")
    if not (math.isfinite(headroom) and headroom >= 0):
        raise ValueError(f"headroom must be a number >= 0, got {headroom!r}")
    if rps_per_replica is not None:
        replicas([], rps_per_replica)  # validates it
    first_slot, actual_all = history.slotted(minutes)
    default = first_slot + 7 * per_day
    origin = default if first is None else math.ceil(epoch_seconds(first) / slot)
    end_slot = first_slot + len(actual_all)
    rows: list[BacktestRow] = []
    while origin + ahead <= end_slot:
        start = origin * slot
        try:
            past = history.before(start)
        except ValueError:
            origin += stride
            continue
        forecast = forecaster.fit(past).predict(start, ahead)
        actual = actual_all[origin - first_slot : origin - first_slot + ahead]
        reserved = forecast * (1 + headroom)
        if rps_per_replica is not None:
            actual = actual / rps_per_replica
            reserved = np.ceil(forecast / rps_per_replica * (1 + headroom) - 1e-9)
            forecast = forecast / rps_per_replica
        rows.append(BacktestRow(to_datetime(start), minutes, forecast, reserved, actual))
        origin += stride
    return rows
