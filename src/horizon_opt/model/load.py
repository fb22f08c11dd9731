"""Reading instance files (YAML plus demand CSVs) into a compiled `Instance`."""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from horizon_opt.errors import InstanceError
from horizon_opt.io import read_text, read_yaml, validation_located
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance, horizon_start
from horizon_opt.model.spec import MAX_DEMAND, DemandCsv, InstanceSpec, show
from horizon_opt.times import iso, parse_time


def parse_spec(data: Any) -> InstanceSpec:
    """Validate parsed YAML/JSON data against the instance schema."""
    if not isinstance(data, dict):
        raise InstanceError(
            [f"(top level): expected a mapping of fields, got {type(data).__name__}"]
        )
    try:
        return InstanceSpec.model_validate(data)
    except ValidationError as exc:
        raise InstanceError(validation_located(exc)) from None


def _time_mismatch(
    cell: str | None, slot: int, start: datetime | None, slot_minutes: int
) -> str | None:
    """Why a demand CSV's `time` cell does not name slot `slot` (its index, or its start time)."""
    text = (cell or "").strip()
    if re.fullmatch(r"-?[0-9]+", text):
        if len(text) < 20 and int(text) == slot:
            return None
        return f"time {show(text)} is not slot {slot}: one row per slot, in order"
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return f"time {show(text)} is neither a slot index nor an ISO-8601 timestamp"
    if start is None:
        return f"timestamp {show(text)} needs horizon.start to be set (or give slot indices)"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when - start != timedelta(minutes=slot * slot_minutes):
        return f"time {show(text)} is not the start of slot {slot}: one row per slot, in order"
    return None


def resample_steps(
    times: Sequence[int], values: Sequence[float], step: int, slot: int, slots: int
) -> tuple[list[float], list[int]]:
    """Per slot `[k * slot, (k + 1) * slot)`, k < `slots`: the time-weighted mean of a step series,
    and how much of the slot the series covers.

    Value `values[i]` holds on `[times[i], times[i] + step)`; times are integers in one unit (any:
    microseconds, seconds), strictly increasing at least `step` apart, so the steps do not
    overlap. A slot that no step touches gets NaN and 0; a slot that only one value touches gets
    that value exactly (no rounding from weighting it).
    """
    sums = [0.0] * slots
    covered = [0] * slots
    only: list[float | None] = [None] * slots  # the one value that touches the slot, if only one
    mixed = [False] * slots
    end = slots * slot
    for t, v in zip(times, values, strict=True):
        lo, hi = max(t, 0), min(t + step, end)
        k = lo // slot
        while lo < hi:
            part = min(hi, (k + 1) * slot) - lo
            sums[k] += v * part
            covered[k] += part
            if only[k] is None and not mixed[k]:
                only[k] = v
            elif only[k] != v:
                only[k], mixed[k] = None, True
            lo += part
            k += 1
    means = [
        math.nan if not covered[k] else (o if (o := only[k]) is not None else sums[k] / covered[k])
        for k in range(slots)
    ]
    return means, covered


def _demand_value(row: dict[str, str], column: str) -> tuple[float, str | None]:
    """A demand CSV row's value, or why it is refused."""
    try:
        value = float(row[column])
    except (TypeError, ValueError):
        return math.nan, f"not a number: {show(row[column])}"
    if value < 0:
        return value, f"negative demand {value}"
    if not math.isfinite(value) or value > MAX_DEMAND:
        return value, (
            f"demand must be a finite number of at most {MAX_DEMAND:,.0f} "
            f"replicas, got {show(row[column])}"
        )
    return value, None


def _span(us: int) -> str:
    """A length of time in microseconds, for messages: `60 min`, `90 s`, `2.5 ms`."""
    if us % 60_000_000 == 0:
        return f"{us // 60_000_000} min"
    return f"{us / 1e6:g} s"


def _iso(start: datetime, us: int) -> str:
    """The time `us` microseconds after `start`, for messages (beyond the calendar: an offset)."""
    try:
        return iso(start + timedelta(microseconds=us))
    except OverflowError:
        return f"horizon.start + {_span(us)}"


def _timed_demand(
    rows: list[dict[str, str]], column: str, name: str, start: datetime | None, spec: InstanceSpec
) -> tuple[list[float], str | None]:
    """Demand per slot from a CSV whose `time` column gives ISO-8601 times (FORMAT.md).

    Each row's value holds from its time for one step of the series (the shortest interval
    between two consecutive rows; with one row, a slot); a slot's demand is the time-weighted
    mean over the slot. Rows must be in time order, and together they must cover the whole
    horizon: a gap or a series that starts late or ends early is refused, not filled in.
    """
    if start is None:
        first = show((rows[0]["time"] or "").strip())
        return (
            [],
            f"{name} row 2: timestamp {first} needs horizon.start to be set (or give slot indices)",
        )
    us = timedelta(microseconds=1)
    slot = spec.horizon.slot_minutes * 60_000_000
    times: list[int] = []
    values: list[float] = []
    for r, row in enumerate(rows):
        where = f"{name} row {r + 2}"
        value, why = _demand_value(row, column)
        if why:
            return [], f"{where}: {why}"
        text = (row["time"] or "").strip()
        if re.fullmatch(r"-?[0-9]+", text):
            return [], (
                f"{where}: time {show(text)} is a slot index, but row 2 gives an ISO-8601 time: "
                "give every row the one kind"
            )
        when = parse_time(text)
        if when is None:
            return (
                [],
                f"{where}: time {show(text)} is neither a slot index nor an ISO-8601 timestamp",
            )
        t = (when - start) // us
        if times and t <= times[-1]:
            return [], (
                f"{where}: time {show(text)} is not after row {r + 1}'s: rows must be in time order"
            )
        times.append(t)
        values.append(value)
    step = min((times[j + 1] - times[j] for j in range(len(times) - 1)), default=slot)
    held = f" (each row holds for {_span(step)}, the shortest interval between two rows)"
    end = spec.horizon.slots * slot
    cursor = 0  # the horizon is covered up to here
    for r, t in enumerate(times):
        if cursor >= end:
            break
        if t + step <= cursor:
            continue
        if t > cursor:
            text = show(rows[r]["time"].strip())
            k = cursor // slot
            since = _iso(start, cursor)
            gap = f"no row gives the demand from {since} to {text}{held}"
            if cursor % slot == 0:
                return [], f"{name} row {r + 2}: time {text} is not the start of slot {k}: {gap}"
            return [], f"{name} row {r + 2}: time {text} leaves a gap in slot {k}: {gap}"
        cursor = t + step
    if cursor < end:
        return [], (
            f"{name}: the rows end at {_iso(start, cursor)}{held}, before the horizon's "
            f"end {_iso(start, end)}: no row gives the demand of slot {cursor // slot} on"
        )
    means, _ = resample_steps(times, values, step, slot, spec.horizon.slots)
    return means, None


def move_demand_csvs(
    document: dict[str, Any], base: Path, beside: Path | None = None
) -> dict[str, Any]:
    """An instance document whose demand CSV paths are relative to the folder `base`, with
    each path made relative to the folder `beside` instead (absolute when None), so that the
    document reads the same series wherever it is written."""
    services = []
    for s in document.get("services", []):
        demand = s.get("demand")
        if isinstance(demand, dict) and isinstance(demand.get("csv"), str):
            where = (base / demand["csv"]).resolve()
            csv_path = str(where) if beside is None else os.path.relpath(where, beside.resolve())
            s = {**s, "demand": {**demand, "csv": csv_path}}
        services.append(s)
    return {**document, "services": services}


def read_demand_csv(spec: InstanceSpec, base: Path) -> dict[int, list[float]]:
    """Read every `demand: {csv, column}` series, relative to the instance file's folder.

    A `time` column of slot indices must name each row's slot (FORMAT.md), so that rows in the
    wrong order or with a gap are refused instead of read as the wrong slots. A `time` column of
    ISO-8601 times (the first row's says which) is resampled onto the horizon's slots: each row
    holds for one step of the series, a slot gets the time-weighted mean, and the rows must cover
    the whole horizon (`_timed_demand`). A file with one row per slot, each at its slot's start,
    reads as one value per slot either way.
    """
    out: dict[int, list[float]] = {}
    problems: list[str] = []
    start = horizon_start(spec)
    for i, service in enumerate(spec.services):
        if not isinstance(service.demand, DemandCsv):
            continue
        path = f"services[{i}].demand"
        name, column = service.demand.csv, service.demand.column
        file = base / name
        try:
            rows = list(csv.DictReader(io.StringIO(read_text(file), newline="")))
        except OSError as exc:
            problems.append(f"{path}.csv: cannot read {str(file)!r}: {exc.strerror}")
            continue
        except ValueError as exc:
            problems.append(f"{path}.csv: {str(file)!r}: {exc}")
            continue
        except csv.Error as exc:
            problems.append(f"{path}.csv: {str(file)!r}: not a readable CSV file: {exc}")
            continue
        if not rows or column not in rows[0]:
            columns = ", ".join(map(str, rows[0])) if rows else "none"
            problems.append(f"{path}.column: no column {column!r} in {name} (columns: {columns})")
            continue
        timed = "time" in rows[0] and column != "time"
        first = (rows[0]["time"] or "").strip() if timed else ""
        if timed and not re.fullmatch(r"-?[0-9]+", first) and parse_time(first) is not None:
            means, why = _timed_demand(rows, column, name, start, spec)
            if why:
                problems.append(f"{path}: {why}")
            else:
                out[i] = means
            continue
        values: list[float] = []
        for r, row in enumerate(rows):
            where = f"{path}: {name} row {r + 2}"
            value, why = _demand_value(row, column)
            if why is None and timed:
                why = _time_mismatch(row["time"], r, start, spec.horizon.slot_minutes)
            if why:
                problems.append(f"{where}: {why}")
                break
            values.append(value)
        else:
            out[i] = values
    if problems:
        raise InstanceError(problems)
    return out


def load_instance(path: str | os.PathLike[str]) -> Instance:
    """Read, validate and compile an instance file. Raises InstanceError on any bad input."""
    file = Path(path)
    spec = parse_spec(read_yaml(file, InstanceError))
    return compile_instance(spec, read_demand_csv(spec, file.parent))
