"""Request history for the demand forecast: times, the `History` series and its slot grid, and
reading it from a CSV file (`read_history`)."""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from horizon_opt.errors import InputError
from horizon_opt.io import read_input
from horizon_opt.model.instance import FloatArray
from horizon_opt.model.spec import show
from horizon_opt.times import parse_time

TimeLike = datetime | float | int  # a datetime (naive = UTC) or seconds since the Unix epoch

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
    name = str(Path(path))
    rows = _csv_rows(Path(path))
    header = [h.strip() for h in rows[0]]
    t_col = _column(name, header, time_column, TIME_COLUMNS, "time")
    others = [h for h in header if h != header[t_col]]
    v_col = _column(
        name, header, value_column, ["value", *(others if len(others) == 1 else [])], "value"
    )
    filters = [(_column(name, header, k, (), "filter"), v) for k, v in (where or {}).items()]
    times, values, lines = _samples(name, rows, header, t_col, v_col, filters)
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


def _csv_rows(file: Path) -> list[list[str]]:
    """The rows of a CSV file, a header row at least."""
    name = str(file)
    text = read_input(file)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError([f"{name}: not a readable CSV file: {exc}"]) from None
    if not rows:
        raise InputError([f"{name}: empty file: expected a header row and one row per sample"])
    return rows


def _column(
    name: str, header: list[str], wanted: str | None, defaults: Sequence[str], what: str
) -> int:
    """The index of column `wanted`, else of the first of `defaults` the header has."""
    for candidate in [wanted] if wanted else defaults:
        if candidate in header:
            return header.index(candidate)
    tried = repr(wanted) if wanted else " or ".join(map(repr, defaults))
    columns = ", ".join(header) or "none"
    raise InputError([f"{name}: no {what} column {tried} (columns: {columns})"])


def _samples(
    name: str,
    rows: list[list[str]],
    header: list[str],
    t_col: int,
    v_col: int,
    filters: list[tuple[int, str]],
) -> tuple[list[float], list[float], list[int]]:
    """The times, values and line numbers of the rows that pass `filters` and hold a value;
    InputError with up to ten bad rows."""
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
    return times, values, lines
