"""A plan as two CSV tables for spreadsheets: one row per assignment (then one per unplanned job,
with its cause code and reason), one per inference block.

`write_csv(instance, plan, "plan.csv")` writes `plan.csv` (assignments) and `plan-inference.csv`
(inference replica blocks). `read_csv("plan.csv")` turns the first back into the plan's
assignments, `read_inference_csv("plan-inference.csv")` the second into its inference blocks.

Cells that a spreadsheet would run as a formula (a job or service name starting with `=`, `+`,
`-`, `@`) are written with a leading `'`, which spreadsheets show as text; the readers strip it.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from horizon_opt.errors import PlanError
from horizon_opt.export._common import ensure_plan_fits, index_runs, slot_iso
from horizon_opt.io import write_atomic
from horizon_opt.model.instance import Instance
from horizon_opt.plans.metrics import on_time
from horizon_opt.plans.plan import Assignment, InferenceBlock, Plan

T = TypeVar("T")

READ_COLUMNS = (  # what `read_csv` needs: tables written before the cause columns still load
    "job",
    "kind",
    "priority",
    "gpus",
    "pool",
    "nodes",
    "gpu_indices",
    "start_slot",
    "end_slot",
    "start_time",
    "end_time",
    "duration_h",
    "release_slot",
    "deadline_slot",
    "wait_h",
    "on_time",
)
# After the assignments, one row per unplanned job (no pool, no slots) with the plan's cause.
ASSIGNMENT_COLUMNS = (*READ_COLUMNS, "status", "cause_code", "reason")
INFERENCE_COLUMNS = (
    "service",
    "pool",
    "node",
    "start_slot",
    "end_slot",
    "start_time",
    "end_time",
    "replicas",
    "gpus",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def inference_path(path: str | os.PathLike[str]) -> Path:
    """Where the inference table goes: `plan.csv` -> `plan-inference.csv`, same folder."""
    p = Path(path)
    return p.with_name(f"{p.stem}-inference{p.suffix or '.csv'}")


def _text(value: str) -> str:
    return "'" + value if value.startswith(_FORMULA_START) else value


def _untext(value: str) -> str:
    return value[1:] if value.startswith("'") else value


def _num(value: float) -> str:
    """2 decimals at most, no trailing zeros: 12, 1.5, 0.33."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def format_indices(gpus: dict[str, list[int]]) -> str:
    """{'h100-0': [0, 1, 2, 3, 6]} -> 'h100-0:0-3,6'; nodes separated by spaces."""
    parts = []
    for node, idx in gpus.items():
        runs = [str(a) if a == b else f"{a}-{b}" for a, b in index_runs(idx)]
        parts.append(f"{node}:{','.join(runs)}")
    return " ".join(parts)


def parse_indices(text: str) -> dict[str, list[int]]:
    """The inverse of `format_indices`. Raises ValueError on malformed text."""
    out: dict[str, list[int]] = {}
    for token in text.split():
        node, sep, runs = token.rpartition(":")
        if not sep or not node or not runs:
            raise ValueError(f"expected node:indices, got {token!r}")
        idx: list[int] = []
        for run in runs.split(","):
            lo, dash, hi = run.partition("-")
            first, last = int(lo), int(hi) if dash else int(lo)
            if last < first:
                raise ValueError(f"empty range {run!r}")
            idx.extend(range(first, last + 1))
        out[node] = idx
    if not out:
        raise ValueError("no GPU indices")
    return out


def _table(columns: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)  # RFC 4180: comma separated, CRLF line ends, quotes where needed
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


def assignments_csv(instance: Instance, plan: Plan) -> str:
    """The assignment table, as `write_csv` writes its first file (and `export -o -` prints)."""
    return _table(ASSIGNMENT_COLUMNS, assignment_rows(instance, plan))


def assignment_rows(instance: Instance, plan: Plan) -> list[list[str]]:
    h = instance.hours_per_slot
    rows = []
    for a in plan.assignments:
        job = instance.jobs[instance.job_index[a.job]]
        start_time = a.start_time if a.start_time is not None else slot_iso(instance, a.start)
        end_time = a.end_time if a.end_time is not None else slot_iso(instance, a.end)
        rows.append(
            [
                _text(a.job),
                job.kind,
                _num(job.priority),
                str(job.gpus),
                a.pool,
                " ".join(a.gpus),
                format_indices(a.gpus),
                str(a.start),
                str(a.end),
                start_time or "",
                end_time or "",
                _num((a.end - a.start) * h),
                str(job.wait_release),
                "" if job.deadline is None else str(job.deadline),
                _num((a.start - job.wait_release) * h),
                "yes" if on_time(instance, a.job, a.end) else "no",
                "on-time" if on_time(instance, a.job, a.end) else "late",
                "",
                "",
            ]
        )
    for u in plan.unscheduled:
        job = instance.jobs[instance.job_index[u.job]]
        rows.append(
            [
                _text(u.job),
                job.kind,
                _num(job.priority),
                str(job.gpus),
                *[""] * 8,
                str(job.release),
                "" if job.deadline is None else str(job.deadline),
                "",
                "no",
                "not-planned",
                u.code or "",
                _text(u.reason),
            ]
        )
    return rows


def inference_rows(instance: Instance, plan: Plan) -> list[list[str]]:
    gpr = {s.name: s.gpus_per_replica for s in instance.services}
    rows = []
    for b in plan.inference:
        pool = instance.pools[int(instance.node_pool[instance.node_index[b.node]])].name
        rows.append(
            [
                _text(b.service),
                pool,
                b.node,
                str(b.start),
                str(b.end),
                slot_iso(instance, b.start) or "",
                slot_iso(instance, b.end) or "",
                str(b.replicas),
                str(b.replicas * gpr[b.service]),
            ]
        )
    return rows


def write_csv(instance: Instance, plan: Plan, path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write the assignment table to `path` and the inference table next to it (atomically).

    Returns both paths. Raises PlanError if the plan names jobs, nodes or services that the
    instance does not have.
    """
    ensure_plan_fits(instance, plan)
    first, second = Path(path), inference_path(path)
    write_atomic(first, assignments_csv(instance, plan))
    write_atomic(second, _table(INFERENCE_COLUMNS, inference_rows(instance, plan)))
    return first, second


def _read_rows(path: str | os.PathLike[str], columns: tuple[str, ...]) -> list[dict[str, str]]:
    file = Path(path)
    try:
        with file.open(newline="", encoding="utf-8-sig") as fh:  # -sig: a spreadsheet may add a BOM
            reader = csv.DictReader(fh)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise PlanError([f"{file}: missing column(s) {', '.join(missing)}"])
            return list(reader)
    except OSError as exc:
        raise PlanError([f"{file}: cannot read: {exc.strerror}"]) from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise PlanError([f"{file}: not a CSV file: {exc}"]) from None


def _read_table(
    path: str | os.PathLike[str],
    columns: tuple[str, ...],
    parse: Callable[[dict[str, str]], T],
    skip: Callable[[dict[str, str]], bool] = lambda row: False,
) -> list[T]:
    """`parse` applied to every row but those to `skip`; every bad row is reported (up to 20),
    with its line."""
    out: list[T] = []
    problems: list[str] = []
    for r, row in enumerate(_read_rows(path, columns)):
        if skip(row):
            continue
        try:
            out.append(parse(row))
        except ValueError as exc:  # also pydantic's ValidationError
            problems.append(f"{path}: row {r + 2}: {exc}")
    if problems:
        raise PlanError(problems[:20])
    return out


def read_csv(path: str | os.PathLike[str]) -> list[Assignment]:
    """The assignments of a table written by `write_csv` (GPU indices in ascending order);
    rows of unplanned jobs (no start slot) are skipped."""
    return _read_table(
        path,
        READ_COLUMNS,
        lambda row: Assignment(
            job=_untext(row["job"]),
            pool=row["pool"],
            start=int(row["start_slot"]),
            end=int(row["end_slot"]),
            gpus=parse_indices(row["gpu_indices"]),
            start_time=row["start_time"] or None,
            end_time=row["end_time"] or None,
        ),
        skip=lambda row: row.get("status") == "not-planned",
    )


def read_inference_csv(path: str | os.PathLike[str]) -> list[InferenceBlock]:
    """The inference blocks of a table written by `write_csv` (`*-inference.csv`)."""
    return _read_table(
        path,
        INFERENCE_COLUMNS,
        lambda row: InferenceBlock(
            service=_untext(row["service"]),
            node=row["node"],
            start=int(row["start_slot"]),
            end=int(row["end_slot"]),
            replicas=int(row["replicas"]),
        ),
    )
