"""Forecast the per-slot replica demand of an inference service from its history.

A history is a series of request rates (or replicas) with timestamps, read from a CSV file
(`read_history`). A forecaster turns it into one value per slot of a horizon; `replicas` turns a
rate into the instance's `demand` (fractional replicas); `write_demand_csv` and `patch_instance`
put it into an instance; `backtest` says, on the history itself, how often a forecast would have
covered the actual demand and how much it would have reserved in vain.

The method (`SeasonalQuantile`). The history is first put onto the slot grid (the mean rate over
each slot, slots aligned to midnight UTC). For each slot to forecast, the samples are the same
time of day on past days (or the same time of week on past weeks) within the window, optionally
with the slots on either side (`neighbours`), and the forecast is their empirical quantile (p95
by default; the Weibull order statistic, whose expected coverage of a new sample is the quantile
itself). With `level=True` (the default) each sample is first divided by the mean of the day
before it (the 24 hours ending as far before the sample as the forecast's origin is before the
slot), and the quantile is multiplied by the mean of the last 24 hours of history: the quantile
is then one of the day-over-day ratio, so a series that grows or shrinks is followed instead of
lagging behind by half the window.

Why this method and not a forecasting library: it needs nothing beyond numpy, its quantile is
exact (no distribution assumed for bursty, skewed LLM traffic), every number can be traced to
the past slots it came from, and on the public serving traces it reserves less for the same
coverage than the library intervals tried and than the naive baselines; without the level it
lags growing traffic. The numbers, and the command that measures them, are in
benchmarks/README.md ("Demand forecasts").

Units. Values are whatever the history holds (requests per second, or replicas); `replicas`
divides a rate by the throughput of one replica and keeps the fraction, because the instance's
`demand` is fractional and the compiler applies `headroom` and rounds up itself
(`req = ceil(demand * (1 + headroom))`, docs/FORMAT.md).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal, Protocol

import numpy as np
import numpy.typing as npt
import yaml

from horizon_opt.errors import InputError
from horizon_opt.instance import FloatArray
from horizon_opt.io import read_input, write_atomic
from horizon_opt.spec import show
from horizon_opt.times import parse_time

TimeLike = datetime | float | int  # a datetime (naive = UTC) or seconds since the Unix epoch

# The quantile of n samples at position q * (n + 1) (Hyndman & Fan type 6): for exchangeable
# samples its expected coverage of a new one is exactly q, where the default "linear" (type 7)
# covers less (0.92 for p95 of 28 samples). Past q = n / (n + 1) it is the largest sample: with
# n past days, quantiles above n / (n + 1) cannot be told apart (p95 needs 19 days, p99 99).
QMETHOD: Final = "weibull"
TIME_COLUMNS = ("timestamp", "time")  # tried in this order when no time column is named
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def epoch_seconds(when: TimeLike) -> float:
    """Seconds since the Unix epoch of a datetime (naive = UTC) or of a number (as is)."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    return float(when)


def to_datetime(seconds: float) -> datetime:
    """The UTC datetime of seconds since the Unix epoch."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)


# -- the history ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class History:
    """A rate (or replica) series: `values[i]` holds from `times[i]` for `step` seconds.

    `times` are seconds since the Unix epoch, strictly increasing; `step` defaults to the
    shortest interval between two samples (the series' resolution), so a missing sample is a gap,
    not a longer sample. Gaps are allowed; they are left out of the fit and of the scoring.
    """

    times: FloatArray
    values: FloatArray
    step: float = 0.0  # seconds; 0: the shortest interval between two samples
    source: str = "history"

    def __post_init__(self) -> None:
        times = np.asarray(self.times, dtype=np.float64)
        values = np.asarray(self.values, dtype=np.float64)
        if times.ndim != 1 or times.shape != values.shape:
            raise ValueError("times and values must be 1-D arrays of the same length")
        if not len(times):
            raise ValueError(f"{self.source}: the history is empty")
        if not (np.isfinite(times).all() and np.isfinite(values).all()):
            raise ValueError(f"{self.source}: times and values must be finite")
        if (values < 0).any():
            raise ValueError(f"{self.source}: values must be >= 0")
        gaps = np.diff(times)
        if (gaps <= 0).any():
            raise ValueError(f"{self.source}: times must be strictly increasing")
        step = float(self.step) if self.step else float(gaps.min()) if len(gaps) else 0.0
        if not step > 0:
            raise ValueError(f"{self.source}: a history of one sample needs its step")
        if len(gaps) and step > gaps.min() + 1e-9:
            raise ValueError(f"{self.source}: step {step} s is longer than the shortest interval")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "step", step)

    @property
    def start(self) -> float:
        return float(self.times[0])

    @property
    def end(self) -> float:
        """When the last sample stops holding."""
        return float(self.times[-1]) + self.step

    def before(self, when: TimeLike) -> History:
        """The samples that start before `when` (same step)."""
        n = int(np.searchsorted(self.times, epoch_seconds(when), side="left"))
        if n == 0:
            raise ValueError(f"{self.source}: no history before {to_datetime(epoch_seconds(when))}")
        return History(self.times[:n], self.values[:n], self.step, self.source)

    def slotted(self, slot_minutes: int, min_cover: float = 0.5) -> tuple[int, FloatArray]:
        """The mean value over each slot of the grid (slot k starts at k * slot_minutes minutes
        after the Unix epoch, so at midnight UTC when slot_minutes divides a day).

        Returns the index of the first slot and one value per slot up to the last one the
        history touches; a slot less than `min_cover` covered by samples is NaN (a gap). The mean
        is over the covered part, each sample weighted by how long it holds inside the slot.
        """
        slot = slot_minutes * 60
        first = math.floor(self.start / slot)
        count = math.ceil(self.end / slot) - first
        origin = first * slot
        starts = self.times - origin
        # The integral of the step function is piecewise linear with corners at each sample's
        # start and end (samples never overlap): np.interp evaluates it at the slot boundaries.
        corners = np.empty(2 * len(starts))
        corners[0::2], corners[1::2] = starts, starts + self.step
        mass = np.zeros(2 * len(starts))
        mass[1::2] = self.values * self.step
        level = np.cumsum(mass)
        cover = np.cumsum(np.tile([0.0, self.step], len(starts)))
        bounds = np.arange(count + 1, dtype=np.float64) * slot
        integral = np.diff(np.interp(bounds, corners, level))
        covered = np.diff(np.interp(bounds, corners, cover))
        out = np.full(count, np.nan)
        ok = covered >= min_cover * slot - 1e-9
        out[ok] = integral[ok] / covered[ok]
        return first, out


def _parse_time(cell: str) -> float | None:
    """Seconds since the epoch of an epoch-seconds number or an ISO-8601 time (naive = UTC)."""
    text = cell.strip()
    if _NUMBER.fullmatch(text):
        value = float(text)
        return value if math.isfinite(value) else None
    when = parse_time(text)
    return None if when is None else epoch_seconds(when)


def read_history(
    path: str | os.PathLike[str],
    time_column: str | None = None,
    value_column: str | None = None,
    *,
    where: Mapping[str, str] | None = None,
    step: float = 0.0,
) -> History:
    """Read a history CSV: a header row, then one row per sample (any order; gaps allowed).

    `time_column` (default: `timestamp`, else `time`) holds ISO-8601 times (without an offset:
    UTC) or seconds since the Unix epoch; `value_column` (default: `value`, else the one column
    besides the time column) holds the rate from that time on, a number >= 0; an empty value is
    a gap. `where` keeps only the rows whose named columns hold the given text (one file of many
    series: `where={"model": "m-mid"}`). `step`: how long each sample holds, in seconds (default:
    the shortest interval between two samples). Bad input raises InputError naming the file, the
    row and the column.
    """
    file = Path(path)
    name = str(file)
    text = read_input(file)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError([f"{name}: not a readable CSV file: {exc}"]) from None
    if not rows:
        raise InputError([f"{name}: empty file: expected a header row and one row per sample"])
    header = [h.strip() for h in rows[0]]
    columns = ", ".join(header) or "none"

    def column(wanted: str | None, defaults: Sequence[str], what: str) -> int:
        for candidate in [wanted] if wanted else defaults:
            if candidate in header:
                return header.index(candidate)
        tried = repr(wanted) if wanted else " or ".join(map(repr, defaults))
        raise InputError([f"{name}: no {what} column {tried} (columns: {columns})"])

    t_col = column(time_column, TIME_COLUMNS, "time")
    others = [h for h in header if h != header[t_col]]
    v_col = column(value_column, ["value", *(others if len(others) == 1 else [])], "value")
    filters = [(column(k, (), "filter"), v) for k, v in (where or {}).items()]
    t_name, v_name = header[t_col], header[v_col]
    times: list[float] = []
    values: list[float] = []
    lines: list[int] = []
    problems: list[str] = []
    for r, row in enumerate(rows[1:], start=2):
        if not row or any(c >= len(row) or row[c].strip() != v for c, v in filters):
            continue
        if max(t_col, v_col) >= len(row):
            problems.append(f"{name} row {r}: {len(row)} cells, fewer than the header's")
        elif (t := _parse_time(row[t_col])) is None:
            problems.append(
                f"{name} row {r}: column {t_name!r}: {show(row[t_col])} is neither an ISO-8601 "
                "time nor seconds since the Unix epoch"
            )
        elif row[v_col].strip():
            try:
                v = float(row[v_col])
            except ValueError:
                v = math.nan
            if not (math.isfinite(v) and v >= 0):
                problems.append(
                    f"{name} row {r}: column {v_name!r}: {show(row[v_col])} is not a number >= 0"
                )
            else:
                times.append(t)
                values.append(v)
                lines.append(r)
        if len(problems) >= 10:
            problems.append(f"{name}: stopped after 10 problems")
            break
    if problems:
        raise InputError(problems)
    if not times:
        kept = " that match `where`" if where else ""
        raise InputError([f"{name}: no rows with a value{kept}"])
    order = np.argsort(np.asarray(times), kind="stable")
    t_arr, v_arr = np.asarray(times)[order], np.asarray(values)[order]
    same = np.flatnonzero(np.diff(t_arr) == 0)
    if len(same):
        a, b = sorted((lines[order[same[0]]], lines[order[same[0] + 1]]))
        raise InputError([f"{name} rows {a} and {b}: the same time {show(rows[b - 1][t_col])}"])
    if len(t_arr) == 1 and not step:
        raise InputError([f"{name}: one sample: a history needs at least two (or give its step)"])
    if step and len(t_arr) > 1 and step > np.diff(t_arr).min() + 1e-9:
        raise InputError([f"{name}: step {step:g} s is longer than the shortest interval"])
    return History(t_arr, v_arr, step, name)


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


@dataclass(frozen=True)
class SeasonalQuantile:
    """The empirical quantile of the same slot on past days (or weeks): see the module doc.

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


# -- backtest ------------------------------------------------------------------------------------


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


# -- writing demand ------------------------------------------------------------------------------


def _number(value: float) -> str:
    return repr(round(float(value), 6))


def demand_csv_text(
    start: TimeLike | None,
    slot_minutes: int,
    values: Sequence[float] | FloatArray,
    column: str = "replicas",
) -> str:
    """A demand CSV (docs/FORMAT.md): `time` and `column`, one row per slot. `time` is each
    slot's start as an ISO-8601 UTC time, or the slot index when `start` is None."""
    if not (isinstance(slot_minutes, int) and slot_minutes >= 1):
        raise ValueError(f"slot_minutes must be an integer >= 1, got {slot_minutes!r}")
    if column == "time" or not column:
        raise ValueError(f"the value column cannot be named {column!r}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["time", column])
    base = None if start is None else to_datetime(epoch_seconds(start))
    for k, v in enumerate(values):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"demand at slot {k} must be a finite number >= 0, got {v!r}")
        when = k if base is None else (base + timedelta(minutes=slot_minutes * k)).isoformat()
        writer.writerow([str(when).replace("+00:00", "Z"), _number(v)])
    return out.getvalue()


def write_demand_csv(
    path: str | os.PathLike[str],
    start: TimeLike | None,
    slot_minutes: int,
    values: Sequence[float] | FloatArray,
    column: str = "replicas",
) -> Path:
    """Write `demand_csv_text` to `path` atomically; returns the path."""
    write_atomic(path, demand_csv_text(start, slot_minutes, values, column))
    return Path(path)


def _end_index(node: yaml.Node) -> int:
    """Where a node's own text ends: a block collection's mark runs on to the next key."""
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end_index(node.value[-1])
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end_index(node.value[-1][1])
    return int(node.end_mark.index)


def patch_instance(
    instance_path: str | os.PathLike[str],
    service: str,
    values: Sequence[float] | FloatArray | None = None,
    *,
    csv_path: str | None = None,
    column: str = "replicas",
) -> str:
    """The instance file's text with one service's `demand` replaced, everything else (comments,
    layout) left as it is: by `values` inline, or by `{csv: csv_path, column: column}` (a path
    relative to the instance file). Raises InputError when the file or service is not there."""
    if (values is None) == (csv_path is None):
        raise ValueError("give either values or csv_path")
    file = Path(instance_path)
    text = read_input(file)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise InputError([f"{file}: not valid YAML: {exc}"]) from None
    target: tuple[yaml.Node, yaml.Node] | None = None
    if isinstance(root, yaml.MappingNode):
        services = next((v for k, v in root.value if k.value == "services"), None)
        for node in services.value if isinstance(services, yaml.SequenceNode) else []:
            if not isinstance(node, yaml.MappingNode):
                continue
            fields = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            if "name" in fields and fields["name"][1].value == service and "demand" in fields:
                target = fields["demand"]
    if target is None:
        raise InputError([f"{file}: no service {service!r} with a demand field"])
    if values is not None:
        new = "[" + ", ".join(_number(v) for v in values) + "]"
        if any(not (math.isfinite(v) and v >= 0) for v in values):
            raise ValueError("demand values must be finite numbers >= 0")
    else:
        dumped = yaml.safe_dump(
            {"csv": csv_path, "column": column}, default_flow_style=True, sort_keys=False
        )
        new = dumped.strip()
    key, value = target
    start, end = int(key.end_mark.index), _end_index(value)
    patched = text[:start] + ": " + new + text[end:]
    check = yaml.safe_load(patched)
    got = next(s for s in check["services"] if s.get("name") == service)["demand"]
    want = [float(_number(v)) for v in values] if values is not None else None
    if (want is not None and [float(v) for v in got] != want) or (
        want is None and got != {"csv": csv_path, "column": column}
    ):
        raise RuntimeError("patching the instance went wrong; the file was not changed")
    return patched
