"""Reading instance files (YAML plus demand CSVs) and writing any output atomically."""

from __future__ import annotations

import contextlib
import csv
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from horizon_opt.errors import InputError, InstanceError
from horizon_opt.instance import Instance, compile_instance
from horizon_opt.spec import DemandCsv, InstanceSpec


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


def read_demand_csv(spec: InstanceSpec, base: Path) -> dict[int, list[float]]:
    """Read every `demand: {csv, column}` series, relative to the instance file's folder."""
    out: dict[int, list[float]] = {}
    problems: list[str] = []
    for i, service in enumerate(spec.services):
        if not isinstance(service.demand, DemandCsv):
            continue
        path = f"services[{i}].demand"
        file = base / service.demand.csv
        try:
            with file.open(newline="") as fh:
                rows = list(csv.DictReader(fh))
        except OSError as exc:
            problems.append(f"{path}.csv: cannot read {str(file)!r}: {exc.strerror}")
            continue
        if not rows or service.demand.column not in rows[0]:
            columns = ", ".join(rows[0]) if rows else "none"
            problems.append(
                f"{path}.column: no column {service.demand.column!r} in {service.demand.csv} "
                f"(columns: {columns})"
            )
            continue
        values: list[float] = []
        for r, row in enumerate(rows):
            try:
                value = float(row[service.demand.column])
            except (TypeError, ValueError):
                problems.append(
                    f"{path}: {service.demand.csv} row {r + 2}: not a number: "
                    f"{row[service.demand.column]!r}"
                )
                break
            if value < 0:
                problems.append(
                    f"{path}: {service.demand.csv} row {r + 2}: negative demand {value}"
                )
                break
            values.append(value)
        else:
            out[i] = values
    if problems:
        raise InstanceError(problems)
    return out


def read_yaml(path: str | os.PathLike[str], error: type[InputError] = InputError) -> Any:
    """Parsed YAML of a file; an unreadable file or bad YAML raises `error` naming the file."""
    file = Path(path)
    try:
        return yaml.safe_load(file.read_text())
    except OSError as exc:
        raise error([f"{file}: cannot read: {exc.strerror}"]) from None
    except yaml.YAMLError as exc:
        raise error([f"{file}: not valid YAML: {exc}"]) from None


def load_instance(path: str | os.PathLike[str]) -> Instance:
    """Read, validate and compile an instance file. Raises InstanceError on any bad input."""
    file = Path(path)
    spec = parse_spec(read_yaml(file, InstanceError))
    return compile_instance(spec, read_demand_csv(spec, file.parent))


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write a file so that readers see the old content or the new, never half of it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
