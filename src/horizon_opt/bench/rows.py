"""The raw results: one typed row per run (per policy of a closed-loop run), and results.csv,
whose columns are the rows' fields in order."""

from __future__ import annotations

import csv
import io
import os
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from horizon_opt.bench.tasks import AnyTask, BenchInstance, LoopTask, Task
from horizon_opt.errors import InputError
from horizon_opt.io import write_atomic

Report = dict[str, Any]  # what a run sends back (a message between processes): status, figures

OK_STATUSES = ("optimal", "feasible", "heuristic", "replayed")  # "replayed": a closed-loop run


@dataclass(frozen=True, kw_only=True)
class SolverRow:
    """A row of a suite's results.csv: one (instance, solver) run, what the suite knows of the
    instance, then what the run reported (None: not reported, as by a run that failed)."""

    instance: str
    family: str
    size: str
    seed: int | None = None
    jobs: int
    slots: int
    nodes: int
    gpus: int
    solver: str
    time_limit: float
    workers: int
    status: str
    valid: str = ""  # yes, no, or empty: no plan to check
    violations: int | None = None
    pwo: float | None = None
    utilization: float | None = None
    completed: int | None = None
    scheduled: int | None = None
    reserved_idle_gpu_hours: float | None = None
    bound: float | None = None
    gap: float | None = None
    wall_seconds: float | None = None
    build_seconds: float | None = None
    peak_mib: float | None = None
    plan: str | None = None
    error: str = ""

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the row: a rerun's row replaces the row with the same key."""
        return (self.instance, self.solver)

    @property
    def ok(self) -> bool:
        """The run ended with a plan that passes `check`."""
        return self.status in OK_STATUSES and self.valid == "yes"


@dataclass(frozen=True, kw_only=True)
class LoopRow:
    """A row of a closed-loop suite's results.csv: one policy of a run (instance, world kind,
    world seed), the policy's figures (`simulate.report.rows`), then the run's status, wall
    time and peak memory, which its policies share."""

    instance: str
    family: str
    size: str
    jobs: int
    slots: int
    nodes: int
    gpus: int
    world: str
    seed: int  # the drawn world's
    policy: str
    time_limit: float  # seconds per plan
    workers: int
    status: str
    valid: str = ""
    planned_pwo: float | None = None
    realized_pwo: float | None = None
    vs_fifo: float | None = None
    vs_backfill: float | None = None
    realized_utilization: float | None = None
    completed: int | None = None
    failed: int | None = None
    cancelled: int | None = None
    cancelled_by_user: int | None = None
    preemptions: int | None = None
    lost_gpu_hours: float | None = None
    slo_short_replica_hours: float | None = None
    slo_short_share: float | None = None
    decisions: int | None = None
    replans: int | None = None
    mean_moved: float | None = None
    solver_seconds: float | None = None
    max_solver_seconds: float | None = None
    promised: int | None = None
    promise_error_hours: float | None = None
    promise_p50_error_hours: float | None = None
    promise_p90_coverage: float | None = None
    window_start: int | None = None  # the measured window, slots (`simulate.window`)
    window_end: int | None = None
    window_pwo: float | None = None
    window_vs_backfill: float | None = None
    window_utilization: float | None = None
    starved: int | None = None  # jobs that waited with room for longer than their limit
    runtime_error_hours: float | None = None  # run times planned on against the runs
    runtime_under_share: float | None = None
    wall_seconds: float | None = None
    peak_mib: float | None = None
    error: str = ""

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the row: a rerun's row replaces the row with the same key."""
        return (self.instance, self.world, self.seed, self.policy)

    @property
    def ok(self) -> bool:
        """The run replayed every policy (each plan it executed passes `check`)."""
        return self.status in OK_STATUSES and self.valid == "yes"


Row = SolverRow | LoopRow

FIELDS = [f.name for f in fields(SolverRow)]  # the columns of results.csv, in order
LOOP_FIELDS = [f.name for f in fields(LoopRow)]  # those of a closed-loop suite's results.csv


def _cell_types(kind: type[Row]) -> dict[str, type]:
    """Each field's type, None left out: how a results.csv cell reads back."""
    out: dict[str, type] = {}
    for name, hint in typing.get_type_hints(kind).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        out[name] = next(a for a in args if a is not type(None))
    return out


_CELLS = {SolverRow: _cell_types(SolverRow), LoopRow: _cell_types(LoopRow)}


def is_loop(rows: Sequence[Row]) -> bool:
    """Whether these are a closed-loop suite's rows."""
    return any(isinstance(r, LoopRow) for r in rows)


def ok(row: Row) -> bool:
    """The run ended with a plan that passes `check` (every plan, for a closed-loop run)."""
    return row.ok


def by_instance(rows: Iterable[SolverRow]) -> dict[str, dict[str, SolverRow]]:
    """The good rows by instance, then by solver."""
    out: dict[str, dict[str, SolverRow]] = {}
    for r in rows:
        if r.ok:
            out.setdefault(r.instance, {})[r.solver] = r
    return out


def failure_report(status: str, error: str, wall: float) -> Report:
    """What is known of a run that sent no report back: killed, or crashed."""
    return {"status": status, "error": error, "wall_seconds": wall}


def _instance_fields(inst: BenchInstance) -> dict[str, Any]:
    """What the suite knows of an instance, as the fields both kinds of row start with."""
    return {
        "instance": inst.name,
        "family": inst.family,
        "size": inst.size,
        "jobs": inst.jobs,
        "slots": inst.slots,
        "nodes": inst.nodes,
        "gpus": inst.gpus,
    }


def task_rows(inst: BenchInstance, task: AnyTask, report: Report) -> list[Row]:
    """The results.csv rows of a run: one, or one per policy of a closed-loop run."""
    if isinstance(task, LoopTask):
        return list(loop_rows(inst, task, report))
    return [result_row(inst, task, report)]


def loop_rows(inst: BenchInstance, task: LoopTask, report: Report) -> list[LoopRow]:
    """A row per policy of a closed-loop run: what the suite knows, the policy's figures, and
    the run's status, wall time and peak memory; a failed run's status on each of its rows."""
    figures = {str(r["policy"]): r for r in report.get("replays", [])}
    out: list[LoopRow] = []
    for p in task.policies:
        row: dict[str, Any] = _instance_fields(inst)
        row.update(
            world=task.world,
            seed=task.seed,
            policy=p.name,
            time_limit=task.time_limit,
            workers=task.workers,
        )
        row.update({k: v for k, v in figures.get(p.name, {}).items() if k in LOOP_FIELDS})
        row.update({k: v for k, v in report.items() if k in LOOP_FIELDS})
        out.append(LoopRow(**row))
    return out


def result_row(inst: BenchInstance, task: Task, report: Report) -> SolverRow:
    """The full results.csv row of a run: what the suite knows, then what the run reported."""
    row: dict[str, Any] = _instance_fields(inst)
    row.update(
        seed=inst.seed,
        solver=task.solver,
        time_limit=task.time_limit,
        workers=task.workers,
    )
    row.update({k: v for k, v in report.items() if k in FIELDS})
    return SolverRow(**row)


def write_csv(rows: Iterable[Row], path: Path, kind: type[Row] = SolverRow) -> None:
    """results.csv: a column per field of `kind` (LoopRow for a closed-loop suite), empty for
    None."""
    names = [f.name for f in fields(kind)]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow(["" if (v := getattr(row, k)) is None else v for k in names])
    write_atomic(path, buffer.getvalue())


KEY_COLUMNS = {SolverRow: ("instance", "solver"), LoopRow: ("instance", "world", "seed", "policy")}


def check_results_file(path: Path, kind: type[Row]) -> None:
    """An existing results.csv that a partial rerun (`--only`) would merge into must be one of
    this kind of suite: InputError naming the file and the columns it lacks, before any run."""
    try:
        with path.open(newline="") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([f"--only: {path}: cannot read it as a results file: {exc}"]) from None
    missing = [c for c in KEY_COLUMNS[kind] if c not in header]
    if missing:
        what = "closed-loop" if kind is LoopRow else "solver"
        raise InputError(
            [
                f"--only: {path} is not a {what} suite's results.csv (no column "
                f"{', '.join(missing)}): nothing was run or overwritten"
            ]
        )


def read_csv(path: str | os.PathLike[str]) -> list[Row]:
    """The rows of a results.csv (of either kind of suite); a column the file lacks reads as
    empty, and an empty cell as None (as "" for `valid` and `error`)."""
    with Path(path).open(newline="") as fh:
        reader = csv.DictReader(fh)
        raw = list(reader)
        kind: type[Row] = LoopRow if "policy" in (reader.fieldnames or ()) else SolverRow
    cells = _CELLS[kind]
    rows: list[Row] = []
    for r in raw:
        values: dict[str, Any] = {}
        for k, cell in cells.items():
            value = r.get(k, "")
            if value == "" and k not in ("valid", "error"):
                values[k] = None
            else:
                values[k] = cell(value)
        rows.append(kind(**values))
    return rows
