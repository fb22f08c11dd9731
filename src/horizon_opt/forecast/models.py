"""The forecasters: `SeasonalQuantile` (the method; see the package doc) and the `LastPeriod` and
`StaticPeak` baselines, and replica demand from a forecast rate (`replicas`, `demand_for`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

import numpy as np

from horizon_opt.errors import InputError
from horizon_opt.forecast.history import History, TimeLike, epoch_seconds, to_datetime
from horizon_opt.model.instance import FloatArray

# The quantile of n samples at position q * (n + 1) (Hyndman & Fan type 6): for exchangeable
# samples its expected coverage of a new one is exactly q, where the default "linear" (type 7)
# covers less (0.92 for p95 of 28 samples). Past q = n / (n + 1) it is the largest sample: with
# n past days, quantiles above n / (n + 1) cannot be told apart (p95 needs 19 days, p99 99).
QMETHOD: Final = "weibull"


# -- forecasters ---------------------------------------------------------------------------------


class Fitted(Protocol):
    def predict(self, start: TimeLike, slots: int) -> FloatArray:
        """One value per slot from `start` (on the slot grid), using the history before it."""
        ...


class Forecaster(Protocol):
    @property
    def slot_minutes(self) -> int: ...

    def fit(self, history: History) -> Fitted: ...


def _check_slot(slot_minutes: int) -> None:
    if not (isinstance(slot_minutes, int) and 1 <= slot_minutes <= 1440):
        raise ValueError(f"slot_minutes must be an integer from 1 to 1440, got {slot_minutes!r}")
    if 1440 % slot_minutes:
        raise ValueError(f"slot_minutes must divide a day (1440 minutes), got {slot_minutes}")


@dataclass(frozen=True)
class _Slotted:
    """A history on the slot grid: y[i] is the mean over absolute slot first + i (NaN: a gap)."""

    slot_minutes: int
    first: int
    y: FloatArray
    sums: FloatArray = field(repr=False)  # prefix sums of y (gaps as 0), and of non-gaps
    counts: FloatArray = field(repr=False)

    @classmethod
    def of(cls, history: History, slot_minutes: int) -> _Slotted:
        first, y = history.slotted(slot_minutes)
        ok = ~np.isnan(y)
        sums = np.concatenate([[0.0], np.cumsum(np.where(ok, y, 0.0))])
        counts = np.concatenate([[0.0], np.cumsum(ok)])
        return cls(slot_minutes, first, y, sums, counts)

    @property
    def per_day(self) -> int:
        return 1440 // self.slot_minutes

    def origin(self, start: TimeLike, slots: int) -> tuple[int, int]:
        """The absolute slot of `start`, and the local index up to which the history is used."""
        if not (isinstance(slots, int) and slots >= 0):
            raise ValueError(f"slots must be an integer >= 0, got {slots!r}")
        seconds = epoch_seconds(start)
        slot = self.slot_minutes * 60
        if seconds % slot:
            raise ValueError(
                f"start {to_datetime(seconds)} is not on the slot grid: slots of {self.slot_minutes}"
                " min start at midnight UTC"
            )
        j0 = int(seconds // slot)
        return j0, min(j0 - self.first, len(self.y))

    def level(self, end: int) -> float:
        """The mean over the day before local slot `end`; NaN when under half of it is known."""
        lo, hi = max(end - self.per_day, 0), max(min(end, len(self.y)), 0)
        if hi <= lo:
            return math.nan
        n = self.counts[hi] - self.counts[lo]
        if n < self.per_day / 2:
            return math.nan
        return float((self.sums[hi] - self.sums[lo]) / n)


SEASONALITIES: tuple[Literal["day", "week"], ...] = ("day", "week")


def seasonality_of(text: str) -> Literal["day", "week"]:
    """`text` as `SeasonalQuantile.seasonality`; InputError naming --seasonality otherwise."""
    for season in SEASONALITIES:
        if text == season:
            return season
    raise InputError([f"--seasonality: day or week, got {text!r}"])


@dataclass(frozen=True)
class SeasonalQuantile:
    """The empirical quantile of the same slot on past days (or weeks): see the package doc.

    - `quantile`: which quantile of the past samples (0.95: p95).
    - `seasonality`: `day` (time of day) or `week` (time of day and day of week; a slot with
      fewer than `min_periods` samples on past weeks uses the day's samples instead).
    - `window_days`: how much history before the forecast's start to use.
    - `slot_minutes`: the slot length; it must divide a day.
    - `level`: divide each sample by the mean of the day before it and multiply the quantile by
      the mean of the last day (follows growth); False: the plain quantile of past values.
    - `neighbours`: also take the samples of this many slots on either side (more samples for a
      short history, at the cost of smoothing the cycle's edges).
    """

    quantile: float = 0.95
    seasonality: Literal["day", "week"] = "day"
    window_days: float = 28.0
    slot_minutes: int = 60
    level: bool = True
    min_periods: int = 3
    neighbours: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.quantile < 1:
            raise ValueError(f"quantile must be in (0, 1), got {self.quantile!r}")
        if self.seasonality not in ("day", "week"):
            raise ValueError(f"seasonality must be 'day' or 'week', got {self.seasonality!r}")
        if not self.window_days > 0:
            raise ValueError(f"window_days must be > 0, got {self.window_days!r}")
        if not (isinstance(self.neighbours, int) and self.neighbours >= 0):
            raise ValueError(f"neighbours must be an integer >= 0, got {self.neighbours!r}")
        if not (isinstance(self.min_periods, int) and self.min_periods >= 1):
            raise ValueError(f"min_periods must be an integer >= 1, got {self.min_periods!r}")
        _check_slot(self.slot_minutes)

    def fit(self, history: History) -> SeasonalFit:
        return SeasonalFit(self, _Slotted.of(history, self.slot_minutes))


@dataclass(frozen=True)
class SeasonalFit:
    params: SeasonalQuantile
    data: _Slotted

    def predict(self, start: TimeLike, slots: int) -> FloatArray:
        """The forecast for `slots` slots from `start`, using only the history before `start`.

        A slot whose season has no sample in the window uses all the window's samples. Raises
        ValueError when the window holds no history at all.
        """
        p, d = self.params, self.data
        j0, end = d.origin(start, slots)
        lo = max(end - math.ceil(p.window_days * d.per_day), 0)
        y = d.y
        known = np.flatnonzero(~np.isnan(y[lo:end])) + lo if end > lo else np.array([], int)
        if not len(known):
            raise ValueError(
                f"no history in the {p.window_days:g} days before {to_datetime(j0 * 60 * d.slot_minutes)}"
            )
        base = d.level(end) if p.level else math.nan
        scaled = p.level and base > 0  # False too when the last day is mostly a gap (NaN)
        out = np.empty(slots)
        for k in range(slots):
            j = j0 - d.first + k  # local index of the slot to forecast
            lag = j - end  # how far past the history's end: the samples' levels lag as much

            def value(i: int, shift: int = 0, lag: int = lag) -> float:
                # A neighbour `shift` slots off stands in for slot j: its level is the day
                # before its own analog origin.
                if not scaled:
                    return float(y[i])
                level = d.level(i - shift - lag)
                return float(y[i]) / level if level > 0 else math.nan

            def samples(period: int, j: int = j) -> list[float]:
                got: list[float] = []
                for shift in range(-p.neighbours, p.neighbours + 1):
                    at = j + shift
                    latest = at - period * max(1, math.ceil((at - end + 1) / period))  # < end
                    for i in range(latest, lo - 1, -period):
                        if not math.isnan(y[i]) and math.isfinite(v := value(i, shift)):
                            got.append(v)
                return got

            found = samples(7 * d.per_day) if p.seasonality == "week" else []
            if len(found) < p.min_periods:
                found = samples(d.per_day)
            if not found:  # this time of day is a gap all through the window
                found = [v for v in map(value, known) if math.isfinite(v)]
            if not found:  # no day before a known slot has a level: the plain quantile
                out[k] = float(np.quantile(y[known], p.quantile, method=QMETHOD))
                continue
            out[k] = float(np.quantile(found, p.quantile, method=QMETHOD)) * (
                base if scaled else 1.0
            )
        return out


@dataclass(frozen=True)
class LastPeriod:
    """Baseline: the value of the same slot one period earlier (yesterday's same hour), or the
    latest earlier period that has it."""

    slot_minutes: int = 60
    period: Literal["day", "week"] = "day"

    def __post_init__(self) -> None:
        _check_slot(self.slot_minutes)

    def fit(self, history: History) -> LastPeriodFit:
        return LastPeriodFit(self, _Slotted.of(history, self.slot_minutes))


@dataclass(frozen=True)
class LastPeriodFit:
    params: LastPeriod
    data: _Slotted

    def predict(self, start: TimeLike, slots: int) -> FloatArray:
        d = self.data
        j0, end = d.origin(start, slots)
        period = d.per_day * (7 if self.params.period == "week" else 1)
        known = np.flatnonzero(~np.isnan(d.y[:end])) if end > 0 else np.array([], int)
        if not len(known):
            raise ValueError("no history before the forecast's start")
        out = np.empty(slots)
        for k in range(slots):
            j = j0 - d.first + k
            i = j - period * max(1, math.ceil((j - end + 1) / period))
            while i >= 0 and math.isnan(d.y[i]):
                i -= period
            out[k] = d.y[i] if i >= 0 else d.y[known[-1]]
        return out


@dataclass(frozen=True)
class StaticPeak:
    """Baseline: the peak slot of the window before the start, at every slot (what a static
    reservation holds)."""

    slot_minutes: int = 60
    window_days: float = 28.0

    def __post_init__(self) -> None:
        _check_slot(self.slot_minutes)

    def fit(self, history: History) -> StaticPeakFit:
        return StaticPeakFit(self, _Slotted.of(history, self.slot_minutes))


@dataclass(frozen=True)
class StaticPeakFit:
    params: StaticPeak
    data: _Slotted

    def predict(self, start: TimeLike, slots: int) -> FloatArray:
        d = self.data
        _, end = d.origin(start, slots)
        lo = max(end - math.ceil(self.params.window_days * d.per_day), 0)
        window = d.y[lo:end] if end > lo else np.array([])
        if np.isnan(window).all():
            raise ValueError("no history in the window before the forecast's start")
        return np.full(slots, float(np.nanmax(window)))


# -- replicas ------------------------------------------------------------------------------------


def replicas(rate: Sequence[float] | FloatArray, rps_per_replica: float) -> FloatArray:
    """Replica demand of a request rate: `rate / rps_per_replica`, kept fractional.

    The instance's `demand` is fractional replicas; the compiler adds `headroom` and rounds up
    (`req = ceil(demand * (1 + headroom))`), so rounding here would round twice.
    """
    if not (math.isfinite(rps_per_replica) and rps_per_replica > 0):
        raise ValueError(f"rps_per_replica must be a number > 0, got {rps_per_replica!r}")
    out: FloatArray = np.asarray(rate, dtype=np.float64) / rps_per_replica
    return out


def demand_for(
    history: History,
    start: TimeLike,
    slots: int,
    rps_per_replica: float,
    forecaster: Forecaster | None = None,
) -> FloatArray:
    """Replica demand per slot for a horizon: the forecast (default: p95, daily seasons, hourly
    slots; give a forecaster with the instance's slot_minutes) divided by the replica throughput."""
    model = forecaster if forecaster is not None else SeasonalQuantile()
    return replicas(model.fit(history).predict(start, slots), rps_per_replica)
