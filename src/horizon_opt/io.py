"""Reading instance files (YAML plus demand CSVs) and writing any output atomically."""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from horizon_opt.errors import InputError, InstanceError
from horizon_opt.instance import Instance, compile_instance, horizon_start
from horizon_opt.spec import MAX_DEMAND, MAX_FILE_BYTES, DemandCsv, InstanceSpec, show


def format_location(loc: Sequence[int | str]) -> str:
    """('jobs', 3, 'duration', 'h100') -> 'jobs[3].duration.h100'.

    Union tags (spec.py writes them `<...>`) name a form of a field, not a field: left out.
    """
    out = ""
    for part in loc:
        if isinstance(part, str) and part.startswith("<") and part.endswith(">"):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def validation_problems(exc: ValidationError) -> list[str]:
    """One line per pydantic error, with the field path in FORMAT.md's notation."""
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        problems.append(f"{format_location(err['loc'])}: {msg}")
    return problems


def parse_spec(data: Any) -> InstanceSpec:
    """Validate parsed YAML/JSON data against the instance schema."""
    if not isinstance(data, dict):
        raise InstanceError(
            [f"(top level): expected a mapping of fields, got {type(data).__name__}"]
        )
    try:
        return InstanceSpec.model_validate(data)
    except ValidationError as exc:
        raise InstanceError(validation_problems(exc)) from None


def read_text(file: Path) -> str:
    """A text file's content: UTF-8, with or without the byte-order mark Excel writes.

    Raises OSError when it cannot be read, and ValueError (a message to show after the file's
    name) when it is not UTF-8 text or is larger than MAX_FILE_BYTES (no more is read).
    """
    with file.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // 2**20} MiB, the most horizon-opt reads")
    not_text = "not UTF-8 text (save it as UTF-8)"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(not_text) from None
    if "\0" in text:  # UTF-16 of ASCII text decodes as UTF-8, with a NUL every other byte
        raise ValueError(not_text)
    return text


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


def read_demand_csv(spec: InstanceSpec, base: Path) -> dict[int, list[float]]:
    """Read every `demand: {csv, column}` series, relative to the instance file's folder.

    A `time` column, when there is one, must name each row's slot (FORMAT.md), so that rows in
    the wrong order or with a gap are refused instead of read as the wrong slots.
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
        values: list[float] = []
        for r, row in enumerate(rows):
            where = f"{path}: {name} row {r + 2}"
            try:
                value = float(row[column])
            except (TypeError, ValueError):
                problems.append(f"{where}: not a number: {show(row[column])}")
                break
            if value < 0:
                problems.append(f"{where}: negative demand {value}")
                break
            if not math.isfinite(value) or value > MAX_DEMAND:
                problems.append(
                    f"{where}: demand must be a finite number of at most {MAX_DEMAND:,.0f} "
                    f"replicas, got {show(row[column])}"
                )
                break
            why = (
                _time_mismatch(row["time"], r, start, spec.horizon.slot_minutes) if timed else None
            )
            if why:
                problems.append(f"{where}: {why}")
                break
            values.append(value)
        else:
            out[i] = values
    if problems:
        raise InstanceError(problems)
    return out


# libyaml's parser when PyYAML has it: the same data, but it refuses nesting over 1,000 levels
# at once, where the pure-Python one spends seconds per thousand levels before it overflows the
# stack (RecursionError, caught below for it).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: str | os.PathLike[str], error: type[InputError] = InputError) -> Any:
    """Parsed YAML of a file; an unreadable file or bad YAML raises `error` naming the file."""
    file = Path(path)
    try:
        text = read_text(file)
    except OSError as exc:
        raise error([f"{file}: cannot read: {exc.strerror}"]) from None
    except ValueError as exc:
        raise error([f"{file}: {exc}"]) from None
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except RecursionError:
        raise error([f"{file}: not valid YAML: nested too deeply"]) from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:  # ValueError: e.g. month 13
        raise error([f"{file}: not valid YAML: {exc}"]) from None


def load_instance(path: str | os.PathLike[str]) -> Instance:
    """Read, validate and compile an instance file. Raises InstanceError on any bad input."""
    file = Path(path)
    spec = parse_spec(read_yaml(file, InstanceError))
    return compile_instance(spec, read_demand_csv(spec, file.parent))


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write a file so that readers see the old content or the new, never half of it.

    A symbolic link is followed: the file it points to is replaced, the link stays. `/dev/null`
    takes the data and keeps nothing; any other existing file that is not a regular file (a
    folder, a device, a FIFO) raises OSError instead of being replaced by a regular file. On any
    error the temporary file is removed.
    """
    import errno  # only for the refusals below

    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if os.path.samefile(target, os.devnull):
            return
        raise FileExistsError(errno.EEXIST, "not a regular file; refusing to replace it", str(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fh.fileno(), 0o666 & ~umask)  # mkstemp creates 0600: the usual mode
            fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
