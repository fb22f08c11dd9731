"""Writing a forecast demand: a demand CSV (`demand_csv_text`, `write_demand_csv`) and an instance
file with one service's `demand` replaced (`patch_instance`)."""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from horizon_opt.errors import InputError
from horizon_opt.forecast.history import History, TimeLike, epoch_seconds, to_datetime
from horizon_opt.io import read_input, write_atomic
from horizon_opt.model.instance import FloatArray, Instance


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


def forecast_horizon(
    history: History,
    instance: Instance | None = None,
    start: datetime | None = None,
    slots: int = 24,
    slot_minutes: int = 60,
) -> tuple[datetime, int, int]:
    """Where a forecast goes: (first slot's time, slots, slot length in minutes). An instance's
    own horizon when given (it needs `horizon.start`), else `slots` from `start`, else from the
    first slot boundary after the history."""
    if instance is not None:
        if instance.start is None:
            raise InputError([f"instance {instance.name!r} has no horizon.start to forecast from"])
        return instance.start, instance.slots, instance.slot_minutes
    if start is not None:
        return start, slots, slot_minutes
    step = slot_minutes * 60
    return to_datetime(-(-history.end // step) * step), slots, slot_minutes


def history_gap(history: History, first: datetime) -> timedelta:
    """How long before the forecast's first slot the history ends: past a week, only its
    seasonal pattern and its latest level carry over."""
    return first - to_datetime(history.end)


GAP_WARNED = timedelta(days=7)  # a longer gap carries over only the pattern and the level


def history_gap_warning(history: History, first: datetime, seasonality: str) -> str | None:
    """The warning when the history ends more than a week before the forecast's first slot
    (only its `seasonality`'s pattern and its latest level carry over), else None."""
    gap = history_gap(history, first)
    if not gap > GAP_WARNED:
        return None
    return (
        f"the history ends {to_datetime(history.end):%Y-%m-%d %H:%M} UTC, "
        f"{gap.days:,} days before the forecast starts: only its {seasonality}ly pattern "
        "and its latest level carry over that gap"
    )
