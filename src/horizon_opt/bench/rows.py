"""The raw results: one row per run (per policy of a closed-loop run), and results.csv."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from horizon_opt.bench.tasks import AnyTask, BenchInstance, LoopTask, Task
from horizon_opt.io import write_atomic

Row = dict[str, Any]

OK_STATUSES = ("optimal", "feasible", "heuristic", "replayed")  # "replayed": a closed-loop run

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
LOOP_FIELDS = [  # the columns of a closed-loop suite's results.csv: a row per policy of a run
    "instance",
    "family",
    "size",
    "jobs",
    "slots",
    "nodes",
    "gpus",
    "world",
    "seed",  # the drawn world's
    "policy",
    "time_limit",  # seconds per plan
    "workers",
    "status",
    "valid",
    # the Replay's figures (simulate.report.rows)
    "planned_pwo",
    "realized_pwo",
    "vs_fifo",
    "vs_backfill",
    "realized_utilization",
    "completed",
    "failed",
    "cancelled",
    "cancelled_by_user",
    "preemptions",
    "lost_gpu_hours",
    "slo_short_replica_hours",
    "slo_short_share",
    "decisions",
    "replans",
    "mean_moved",
    "solver_seconds",
    "max_solver_seconds",
    "promised",
    "promise_error_hours",
    # the run's, shared by its policies
    "wall_seconds",
    "peak_mib",
    "error",
]
_INT_FIELDS = {"seed", "jobs", "slots", "nodes", "gpus", "workers", "violations"}
_INT_FIELDS |= {"completed", "scheduled", "failed", "cancelled", "cancelled_by_user"}
_INT_FIELDS |= {"preemptions"}
_INT_FIELDS |= {"decisions", "replans", "promised"}
_FLOAT_FIELDS = {"time_limit", "pwo", "utilization", "reserved_idle_gpu_hours", "bound", "gap"}
_FLOAT_FIELDS |= {"wall_seconds", "build_seconds", "peak_mib"}
_FLOAT_FIELDS |= {"planned_pwo", "realized_pwo", "vs_fifo", "vs_backfill", "realized_utilization"}
_FLOAT_FIELDS |= {"lost_gpu_hours", "slo_short_replica_hours", "slo_short_share", "mean_moved"}
_FLOAT_FIELDS |= {"solver_seconds", "max_solver_seconds", "promise_error_hours"}


def is_loop(rows: Sequence[Row]) -> bool:
    """Whether these are a closed-loop suite's rows: they have a policy."""
    return any("policy" in r for r in rows)


def row_key(row: Row) -> tuple[Any, ...]:
    """What identifies a row: a rerun's row replaces the row with the same key."""
    if "policy" in row:
        return (row["instance"], row["world"], row["seed"], row["policy"])
    return (row["instance"], row["solver"])


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


def _instance_fields(inst: BenchInstance) -> Row:
    """What the suite knows of an instance, as the columns both kinds of row start with."""
    return {
        "instance": inst.name,
        "family": inst.family,
        "size": inst.size,
        "jobs": inst.jobs,
        "slots": inst.slots,
        "nodes": inst.nodes,
        "gpus": inst.gpus,
    }


def task_rows(inst: BenchInstance, task: AnyTask, result: Row) -> list[Row]:
    """The results.csv rows of a run: one, or one per policy of a closed-loop run."""
    if isinstance(task, LoopTask):
        return loop_rows(inst, task, result)
    return [result_row(inst, task, result)]


def loop_rows(inst: BenchInstance, task: LoopTask, result: Row) -> list[Row]:
    """A row per policy of a closed-loop run: what the suite knows, the policy's figures, and
    the run's status, wall time and peak memory; a failed run's status on each of its rows."""
    figures = {str(r["policy"]): r for r in result.get("replays", [])}
    out: list[Row] = []
    for p in task.policies:
        row: Row = dict.fromkeys(LOOP_FIELDS)
        row.update(_instance_fields(inst))
        row.update(
            world=task.world,
            seed=task.seed,
            policy=p.name,
            time_limit=task.time_limit,
            workers=task.workers,
            valid="",
            error="",
        )
        row.update({k: v for k, v in figures.get(p.name, {}).items() if k in LOOP_FIELDS})
        row.update({k: v for k, v in result.items() if k in LOOP_FIELDS})
        out.append(row)
    return out


def result_row(inst: BenchInstance, task: Task, result: Row) -> Row:
    """The full results.csv row of a run: what the suite knows, then what the run reported."""
    row: Row = dict.fromkeys(FIELDS)
    row.update(_instance_fields(inst))
    row.update(
        seed=inst.seed,
        solver=task.solver,
        time_limit=task.time_limit,
        workers=task.workers,
        valid="",
        error="",
    )
    row.update({k: v for k, v in result.items() if k in FIELDS})
    return row


def write_csv(rows: Iterable[Row], path: Path, fields: Sequence[str] = FIELDS) -> None:
    """results.csv with the `fields` columns (LOOP_FIELDS for a closed-loop suite)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in fields})
    write_atomic(path, buffer.getvalue())


def read_csv(path: str | os.PathLike[str]) -> list[Row]:
    """Rows of a results.csv (of either kind of suite), with numbers as int / float and empty
    cells as None."""
    with Path(path).open(newline="") as fh:
        reader = csv.DictReader(fh)
        raw = list(reader)
        fields = LOOP_FIELDS if "policy" in (reader.fieldnames or ()) else FIELDS
    rows: list[Row] = []
    for r in raw:
        row: Row = {}
        for k in fields:
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
