"""The raw results: one row per run, and results.csv."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from horizon_opt.bench.tasks import BenchInstance, Task
from horizon_opt.io import write_atomic

Row = dict[str, Any]

OK_STATUSES = ("optimal", "feasible", "heuristic")

FIELDS = [  # the columns of results.csv, in order
    "instance",
    "family",
    "size",
    "seed",
    "jobs",
    "slots",
    "nodes",
    "gpus",
    "solver",
    "time_limit",
    "workers",
    "status",
    "valid",
    "violations",
    "pwo",
    "utilization",
    "completed",
    "scheduled",
    "reserved_idle_gpu_hours",
    "bound",
    "gap",
    "wall_seconds",
    "build_seconds",
    "peak_mib",
    "plan",
    "error",
]
_INT_FIELDS = {"seed", "jobs", "slots", "nodes", "gpus", "workers", "violations"}
_INT_FIELDS |= {"completed", "scheduled"}
_FLOAT_FIELDS = {"time_limit", "pwo", "utilization", "reserved_idle_gpu_hours", "bound", "gap"}
_FLOAT_FIELDS |= {"wall_seconds", "build_seconds", "peak_mib"}


def ok(row: Row) -> bool:
    """The run ended with a plan that passes `check`."""
    return row.get("status") in OK_STATUSES and row.get("valid") == "yes"


def by_instance(rows: Iterable[Row]) -> dict[str, dict[str, Row]]:
    """The good rows by instance, then by solver."""
    out: dict[str, dict[str, Row]] = {}
    for r in rows:
        if ok(r):
            out.setdefault(str(r["instance"]), {})[str(r["solver"])] = r
    return out


def failure_row(status: str, error: str, wall: float) -> Row:
    """What is known of a run that sent no row back: killed, or crashed."""
    return {"status": status, "error": error, "wall_seconds": wall}


def result_row(inst: BenchInstance, task: Task, result: Row) -> Row:
    """The full results.csv row of a run: what the suite knows, then what the run reported."""
    row: Row = dict.fromkeys(FIELDS)
    row.update(
        instance=inst.name,
        family=inst.family,
        size=inst.size,
        seed=inst.seed,
        jobs=inst.jobs,
        slots=inst.slots,
        nodes=inst.nodes,
        gpus=inst.gpus,
        solver=task.solver,
        time_limit=task.time_limit,
        workers=task.workers,
        valid="",
        error="",
    )
    row.update({k: v for k, v in result.items() if k in FIELDS})
    return row


def write_csv(rows: Iterable[Row], path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in FIELDS})
    write_atomic(path, buffer.getvalue())


def read_csv(path: str | os.PathLike[str]) -> list[Row]:
    """Rows of a results.csv, with numbers as int / float and empty cells as None."""
    with Path(path).open(newline="") as fh:
        raw = list(csv.DictReader(fh))
    rows: list[Row] = []
    for r in raw:
        row: Row = {}
        for k in FIELDS:
            value = r.get(k, "")
            if value == "" and k not in ("valid", "error"):
                row[k] = None
            elif k in _INT_FIELDS:
                row[k] = int(value)
            elif k in _FLOAT_FIELDS:
                row[k] = float(value)
            else:
                row[k] = value
        rows.append(row)
    return rows
