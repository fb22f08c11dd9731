"""Benchmark suites: every (instance, solver) pair in its own guarded process, raw rows in a CSV,
a markdown summary and charts.

A suite file (YAML) names the instances, solvers and time limits (`benchmarks/suite.yaml`):

```yaml
name: main
solvers: [fifo, fifo-elastic, greedy, cpsat]        # every instance runs every solver
time_limits: {small: 10, medium: 60, large: 120}     # seconds by size; `time_limit` otherwise
cpsat: {workers: 1, seed: 0}                        # workers 1: repeatable cpsat plans
guard: {memory_mib: 6144, margin_seconds: 120}      # per run: address-space limit, kill margin
anytime: [enterprise-medium-s0, enterprise-large-s0] # instances of the anytime chart
instances:
  - ../instances/bench/enterprise-small-s0.yaml     # relative to the suite file; globs allowed
  - {file: ../instances/demo.yaml, family: demo, size: small, time_limit: 20}
  - {generate: enterprise, size: xl, seed: 0}        # generated into OUT/instances/
```

`run_suite` maps `_solve(task) -> row` over every (instance, solver) pair, each run in a fresh
process (multiprocessing, spawn) with an address-space limit (`RLIMIT_AS`) and a wall-clock
guard: the parent kills a run after its guard time, `time_limit + margin` (cpsat with one worker
budgets deterministic time and may use up to 3x its limit in wall time, so its guard is
`3 x time_limit + margin`). At most `jobs` runs at once, longest first. It writes into OUT:

- `results.csv`: one raw row per run (`FIELDS`);
- `summary.md`: gains over fifo per family and size, the ablation, cpsat's cost by size, failures;
- `plans/<instance>-<solver>.json`: every plan; `progress/<instance>-cpsat.json`: cpsat's
  progress events (elapsed, pwo, bound), the data of the anytime chart;
- `by_family.png`, `scaling.png`, `anytime.png` (matplotlib).

fifo, fifo-elastic and greedy are deterministic, and so is cpsat with `workers: 1` (same seed,
same plan) unless its wall-clock guard stops it first; a rerun writes the same plans.
"""

from __future__ import annotations

import csv
import errno
import glob
import io
import json
import math
import multiprocessing
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from horizon_opt.check import check
from horizon_opt.errors import InputError
from horizon_opt.generate import SIZES, GeneratorError, generate_file
from horizon_opt.io import load_instance, read_yaml, validation_problems, write_atomic
from horizon_opt.metrics import evaluate
from horizon_opt.solvers import SOLVERS, Progress, solve

Row = dict[str, Any]

DEFAULT_SOLVERS = ("fifo", "fifo-elastic", "greedy", "cpsat")
ABLATION = (
    ("fifo", "fifo (static peak reservation, arrival order)"),
    ("fifo-elastic", "fifo-elastic (per-slot reservation)"),
    ("greedy", "greedy (value order)"),
    ("cpsat", "cpsat (optimization)"),
)
OK_STATUSES = ("optimal", "feasible", "heuristic")
NAME_PATTERN = re.compile(r"^(?P<family>[a-z0-9_]+)-(?P<size>[a-z]+)-s(?P<seed>\d+)$")

FIELDS = [
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


# -- the suite file ----------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileEntry(_Model):
    file: str
    family: str | None = None
    size: str | None = None
    time_limit: float | None = Field(default=None, gt=0)
    solvers: list[str] | None = None


class GenerateEntry(_Model):
    generate: str
    size: str
    seed: int = 0
    time_limit: float | None = Field(default=None, gt=0)
    solvers: list[str] | None = None


class CpsatSpec(_Model):
    workers: int = Field(default=1, ge=1)
    seed: int = 0


class GuardSpec(_Model):
    memory_mib: int | None = Field(default=6144, ge=256)
    margin_seconds: float = Field(default=120.0, gt=0)


class SuiteSpec(_Model):
    name: str = "suite"
    solvers: list[str] = Field(default_factory=lambda: list(DEFAULT_SOLVERS), min_length=1)
    time_limits: dict[str, float] = Field(default_factory=dict)
    time_limit: float = Field(default=60.0, gt=0)
    cpsat: CpsatSpec = CpsatSpec()
    guard: GuardSpec = GuardSpec()
    anytime: list[str] = Field(default_factory=list)
    instances: list[Any] = Field(min_length=1)


@dataclass(frozen=True)
class Suite:
    spec: SuiteSpec
    path: Path
    entries: tuple[str | FileEntry | GenerateEntry, ...]


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Read and validate a suite file; raises InputError with one line per problem."""
    file = Path(path)
    data = read_yaml(file)
    if not isinstance(data, dict):
        raise InputError([f"{file}: expected a mapping of fields"])
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError([f"{file}: {p}" for p in validation_problems(exc)]) from None
    problems: list[str] = []
    entries: list[str | FileEntry | GenerateEntry] = []
    for i, raw in enumerate(spec.instances):
        where = f"{file}: instances[{i}]"
        try:
            if isinstance(raw, str):
                entries.append(raw)
            elif isinstance(raw, dict) and "generate" in raw:
                entries.append(GenerateEntry.model_validate(raw))
            elif isinstance(raw, dict) and "file" in raw:
                entries.append(FileEntry.model_validate(raw))
            else:
                problems.append(
                    f"{where}: expected a file path, {{file: PATH}} or "
                    f"{{generate: FAMILY, size: SIZE, seed: N}}, got {raw!r}"
                )
        except ValidationError as exc:
            problems += [f"{where}.{p}" for p in validation_problems(exc)]
    named = [("solvers", spec.solvers)] + [
        (f"instances[{i}].solvers", e.solvers)
        for i, e in enumerate(entries)
        if not isinstance(e, str) and e.solvers is not None
    ]
    for where, solvers in named:
        unknown = [s for s in solvers or [] if s not in SOLVERS]
        if unknown:
            problems.append(
                f"{file}: {where}: unknown solver(s) {unknown}; choose from {', '.join(SOLVERS)}"
            )
    for i, e in enumerate(entries):
        if isinstance(e, GenerateEntry) and e.size not in SIZES:
            problems.append(
                f"{file}: instances[{i}].size: unknown size {e.size!r}; "
                f"choose one of {', '.join(SIZES)}"
            )
    if problems:
        raise InputError(problems)
    return Suite(spec, file, tuple(entries))


# -- instances and tasks -----------------------------------------------------------------------


@dataclass(frozen=True)
class BenchInstance:
    name: str
    path: Path
    family: str
    size: str
    seed: int | None
    jobs: int
    slots: int
    nodes: int
    gpus: int
    time_limit: float
    solvers: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """One run: everything the worker process needs (picklable)."""

    instance: str
    path: str
    solver: str
    time_limit: float
    workers: int
    seed: int
    plan_path: str
    progress_path: str | None
    memory_mib: int | None
    guard_seconds: float


def guard_seconds(solver: str, time_limit: float, workers: int, margin: float) -> float:
    """Wall seconds after which a run is killed."""
    if solver != "cpsat":
        return margin
    return time_limit * (3 if workers == 1 else 1) + margin


def _time_limit(spec: SuiteSpec, size: str, override: float | None) -> float:
    if override is not None:
        return override
    return float(spec.time_limits.get(size, spec.time_limit))


def prepare(
    suite: Suite,
    out: Path,
    *,
    traces: str | os.PathLike[str] | None = None,
    only: str | None = None,
) -> list[BenchInstance]:
    """Resolve the suite's instances (globs, generated files in OUT/instances/), load each once
    to validate it and read its dimensions. Raises InputError on any problem."""
    base = suite.path.parent
    spec = suite.spec
    found: list[tuple[Path, str | None, str | None, float | None, list[str] | None]] = []
    problems: list[str] = []
    for i, entry in enumerate(suite.entries):
        if isinstance(entry, GenerateEntry):
            name = f"{entry.generate}-{entry.size}-s{entry.seed}"
            if only is not None and only not in name:
                continue
            target = out / "instances" / f"{name}.yaml"
            try:
                generate_file(entry.generate, entry.size, entry.seed, target, traces=traces)
            except GeneratorError as exc:
                problems.append(f"{suite.path}: instances[{i}]: {exc}")
                continue
            found.append((target, entry.generate, entry.size, entry.time_limit, entry.solvers))
            continue
        pattern = entry if isinstance(entry, str) else entry.file
        full = str(base / pattern)
        paths = sorted(Path(p) for p in glob.glob(full)) if glob.has_magic(full) else [Path(full)]
        if not paths:
            problems.append(f"{suite.path}: instances[{i}]: no file matches {pattern!r}")
        for p in paths:
            if isinstance(entry, str):
                found.append((p, None, None, None, None))
            else:
                found.append((p, entry.family, entry.size, entry.time_limit, entry.solvers))
    if problems:
        raise InputError(problems)
    instances: list[BenchInstance] = []
    seen: dict[str, Path] = {}
    for path, family, size, limit, solvers in found:
        try:
            inst = load_instance(path)
        except InputError as exc:
            problems += [f"{path}: {p}" for p in exc.problems]
            continue
        if only is not None and only not in inst.name:
            continue
        if inst.name in seen:
            problems.append(f"{path}: instance name {inst.name!r} also used by {seen[inst.name]}")
            continue
        seen[inst.name] = path
        match = NAME_PATTERN.match(inst.name)
        family = family or (match["family"] if match else inst.name)
        size = size or (match["size"] if match else "-")
        instances.append(
            BenchInstance(
                name=inst.name,
                path=path,
                family=family,
                size=size,
                seed=int(match["seed"]) if match else None,
                jobs=len(inst.jobs),
                slots=inst.slots,
                nodes=inst.num_nodes,
                gpus=int(inst.node_gpus.sum()),
                time_limit=_time_limit(spec, size, limit),
                solvers=tuple(solvers or spec.solvers),
            )
        )
    if problems:
        raise InputError(problems)
    if not instances:
        raise InputError(
            [f"{suite.path}: no instance to run" + (f" matches {only!r}" if only else "")]
        )
    return instances


def make_tasks(suite: Suite, instances: Sequence[BenchInstance], out: Path) -> list[Task]:
    spec = suite.spec
    tasks: list[Task] = []
    for inst in instances:
        for solver in inst.solvers:
            tasks.append(
                Task(
                    instance=inst.name,
                    path=str(inst.path),
                    solver=solver,
                    time_limit=inst.time_limit,
                    workers=spec.cpsat.workers,
                    seed=spec.cpsat.seed,
                    plan_path=str(out / "plans" / f"{inst.name}-{solver}.json"),
                    progress_path=(
                        str(out / "progress" / f"{inst.name}-cpsat.json")
                        if solver == "cpsat"
                        else None
                    ),
                    memory_mib=spec.guard.memory_mib,
                    guard_seconds=guard_seconds(
                        solver, inst.time_limit, spec.cpsat.workers, spec.guard.margin_seconds
                    ),
                )
            )
    return tasks


# -- one run (in its own process) --------------------------------------------------------------


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _solve(task: Task) -> Row:
    """Solve one (instance, solver) pair, write the plan, check and evaluate it: one raw row."""
    inst = load_instance(task.path)
    events: list[Progress] = []
    started = time.perf_counter()
    plan = solve(
        inst,
        task.solver,
        time_limit=task.time_limit,
        workers=task.workers,
        seed=task.seed,
        on_progress=events.append if task.progress_path is not None else None,
    )
    wall = time.perf_counter() - started
    plan.write(task.plan_path)
    violations = check(inst, plan)
    m = evaluate(inst, plan)
    if task.progress_path is not None:
        progress = {
            "instance": task.instance,
            "solver": task.solver,
            "time_limit": task.time_limit,
            "events": [[e.elapsed, e.objective, e.bound] for e in events],
            "final": [wall, m.pwo, plan.bound],
        }
        write_atomic(task.progress_path, json.dumps(progress) + "\n")
    return {
        "status": plan.status,
        "valid": "no" if violations else "yes",
        "violations": len(violations),
        "pwo": m.pwo,
        "utilization": m.utilization,
        "completed": m.completed,
        "scheduled": m.scheduled,
        "reserved_idle_gpu_hours": m.reserved_idle_gpu_hours,
        "bound": plan.bound,
        "gap": plan.gap,
        "wall_seconds": wall,
        "build_seconds": plan.build_seconds,
        "peak_mib": _peak_mib(),
        "plan": task.plan_path,
        "error": "",
    }


def _out_of_memory(exc: BaseException) -> bool:
    """MemoryError, or an allocation that failed inside a library (ENOMEM)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    return os.strerror(errno.ENOMEM) in str(exc)  # e.g. an InputError around a failed read


def _worker(task: Task, conn: Connection) -> None:
    """Process entry point: set the memory guard, run `_solve`, send the row back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the workers
    setrlimit, what = resource.setrlimit, resource.RLIMIT_AS
    restore = resource.getrlimit(what)  # built now: lifting the guard must not need memory
    if task.memory_mib is not None:
        limit = task.memory_mib * 2**20
        if restore[1] != resource.RLIM_INFINITY:
            limit = min(limit, restore[1])
        setrlimit(what, (limit, restore[1]))
    try:
        row = _solve(task)
    except BaseException as exc:  # a failed run is a row, not the end of the batch
        setrlimit(what, restore)
        if task.memory_mib is not None and _out_of_memory(exc):
            row = {"status": "memory", "error": f"out of memory (limit {task.memory_mib} MiB)"}
        else:
            row = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    row.setdefault("peak_mib", _peak_mib())
    conn.send(row)
    conn.close()


def _failure(status: str, error: str, wall: float) -> Row:
    return {"status": status, "error": error, "wall_seconds": wall}


# -- running many ------------------------------------------------------------------------------


def _expected_seconds(task: Task) -> float:
    return task.time_limit if task.solver == "cpsat" else 0.0


@dataclass
class _Running:
    task: Task
    process: multiprocessing.process.BaseProcess
    conn: Connection
    started: float


def run_tasks(
    tasks: Sequence[Task],
    jobs: int = 2,
    on_start: Callable[[Task], None] | None = None,
    on_done: Callable[[Task, Row], None] | None = None,
    on_tick: Callable[[Sequence[tuple[Task, float]]], None] | None = None,
) -> dict[Task, Row]:
    """Run every task in its own process, at most `jobs` at once (longest expected first),
    killing any that outlives its guard. Returns the row of each task (failures included)."""
    ctx = multiprocessing.get_context("spawn")
    order = sorted(range(len(tasks)), key=lambda i: (-_expected_seconds(tasks[i]), i))
    pending = [tasks[i] for i in order]
    pending.reverse()  # pop() from the end takes the longest first
    running: dict[Connection, _Running] = {}
    results: dict[Task, Row] = {}

    def finish(run: _Running, row: Row) -> None:
        del running[run.conn]
        run.conn.close()
        results[run.task] = row
        if on_done is not None:
            on_done(run.task, row)

    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                task = pending.pop()
                for stale in (task.plan_path, task.progress_path):
                    if stale is not None:
                        Path(stale).unlink(missing_ok=True)
                receive, send = ctx.Pipe(duplex=False)
                process = ctx.Process(target=_worker, args=(task, send), daemon=True)
                process.start()
                send.close()
                running[receive] = _Running(task, process, receive, time.monotonic())
                if on_start is not None:
                    on_start(task)
            ready = wait(list(running), timeout=0.5)
            for conn in ready:
                assert isinstance(conn, Connection)
                run = running[conn]
                try:
                    row: Row = conn.recv()
                except EOFError:
                    run.process.join(5)
                    code = run.process.exitcode
                    hint = " (killed: memory?)" if code in (-6, -9, -11) else ""
                    row = _failure(
                        "crashed",
                        f"worker exited with code {code}{hint}",
                        time.monotonic() - run.started,
                    )
                run.process.join(5)
                finish(run, row)
            now = time.monotonic()
            for run in list(running.values()):
                if now - run.started > run.task.guard_seconds:
                    run.process.kill()
                    run.process.join(5)
                    finish(
                        run,
                        _failure(
                            "timeout",
                            f"killed after {run.task.guard_seconds:.0f} s (time guard)",
                            now - run.started,
                        ),
                    )
            if on_tick is not None:
                on_tick([(r.task, now - r.started) for r in running.values()])
    finally:
        for run in running.values():
            run.process.kill()
            run.process.join(5)
            run.conn.close()
    return results


class ProgressDisplay:
    """A progress bar on a terminal; one plain line per finished run otherwise."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.running: Sequence[tuple[Task, float]] = ()

    def _bar(self) -> str:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        frac = self.done / max(1, self.total)
        bar = "#" * round(20 * frac) + "-" * (20 - round(20 * frac))
        elapsed = time.monotonic() - self.started
        now = ", ".join(f"{t.instance} {t.solver} {s:.0f}s" for t, s in self.running)
        line = f"[{bar}] {self.done}/{self.total} {elapsed:6.0f}s" + (f"  {now}" if now else "")
        return line[:width].ljust(width)

    def tick(self, running: Sequence[tuple[Task, float]]) -> None:
        self.running = running
        if self.tty:
            self.stream.write("\r" + self._bar())
            self.stream.flush()

    def finished(self, task: Task, row: Row) -> None:
        self.done += 1
        line = f"[{self.done:>{len(str(self.total))}}/{self.total}] {describe(task, row)}"
        if self.tty:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((100, 20)).columns - 1))
            self.stream.write("\r" + line + "\n" + self._bar())
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def describe(task: Task, row: Row) -> str:
    status = str(row.get("status"))
    text = f"{task.instance} {task.solver}: {status}"
    if status in OK_STATUSES:
        gap = row.get("gap")
        text += f", pwo {row['pwo']:,.1f}, utilization {100 * row['utilization']:.1f}%"
        text += "" if gap is None else f", gap {100 * gap:.2f}%"
        text += f", {row['wall_seconds']:.1f} s, {row['peak_mib']:.0f} MiB"
        text += "" if row.get("valid") == "yes" else f", INVALID ({row.get('violations')})"
    else:
        text += f" ({row.get('error')})"
    return text


# -- the whole suite ---------------------------------------------------------------------------


@dataclass
class BenchResult:
    rows: list[Row]
    out: Path
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def _row(inst: BenchInstance, task: Task, result: Row) -> Row:
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


def run_suite(
    suite: Suite,
    out: str | os.PathLike[str],
    *,
    jobs: int = 2,
    traces: str | os.PathLike[str] | None = None,
    only: str | None = None,
    charts: bool = True,
    stream: IO[str] | None = None,
) -> BenchResult:
    """Run a suite and write results.csv, summary.md, plans, progress events and charts.

    With `only`, the new rows replace the same (instance, solver) rows of an existing
    results.csv in `out` and the others are kept, so a partial rerun updates a full run. On
    Ctrl-C the finished runs are written and `Interrupted` is raised."""
    folder = Path(out)
    started = time.monotonic()
    instances = prepare(suite, folder, traces=traces, only=only)
    tasks = make_tasks(suite, instances, folder)
    display = ProgressDisplay(len(tasks), stream)
    results: dict[Task, Row] = {}

    def done(task: Task, row: Row) -> None:
        results[task] = row
        display.finished(task, row)

    interrupted = False
    try:
        run_tasks(tasks, jobs, on_done=done, on_tick=display.tick)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        display.close()
    by_name = {i.name: i for i in instances}
    rows = [_row(by_name[t.instance], t, results[t]) for t in tasks if t in results]
    previous = folder / "results.csv"
    if only is not None and previous.is_file():
        fresh = {(r["instance"], r["solver"]): r for r in rows}
        merged = [fresh.pop((r["instance"], r["solver"]), r) for r in read_csv(previous)]
        rows = merged + list(fresh.values())
    seconds = time.monotonic() - started
    files = write_reports(rows, folder, suite=suite, jobs=jobs, seconds=seconds, charts=charts)
    if interrupted:
        raise Interrupted(BenchResult(rows, folder, files, seconds))
    return BenchResult(rows, folder, files, seconds)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during `run_suite`; `result` holds the runs that finished (already written)."""

    def __init__(self, result: BenchResult) -> None:
        super().__init__()
        self.result = result


def write_reports(
    rows: Sequence[Row],
    out: Path,
    *,
    suite: Suite | None = None,
    jobs: int | None = None,
    seconds: float | None = None,
    charts: bool = True,
) -> list[Path]:
    """results.csv, summary.md and (with `charts`) the PNG charts, into `out`."""
    files = [out / "results.csv", out / "summary.md"]
    write_csv(rows, files[0])
    write_atomic(files[1], summarize(rows, suite=suite, jobs=jobs, seconds=seconds))
    if charts:
        anytime = list(suite.spec.anytime) if suite is not None else []
        files += write_charts(rows, out, anytime=anytime)
    return files


# -- CSV ---------------------------------------------------------------------------------------


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


# -- summary -----------------------------------------------------------------------------------


def ok(row: Row) -> bool:
    return row.get("status") in OK_STATUSES and row.get("valid") == "yes"


def _by_instance(rows: Iterable[Row]) -> dict[str, dict[str, Row]]:
    out: dict[str, dict[str, Row]] = {}
    for r in rows:
        if ok(r):
            out.setdefault(str(r["instance"]), {})[str(r["solver"])] = r
    return out


def util_gain(a: Row, b: Row) -> float:
    """Utilization of a minus b, in percentage points."""
    return 100 * (float(a["utilization"]) - float(b["utilization"]))


def pwo_gain(a: Row, b: Row) -> float | None:
    """pwo of a over b, in % (None when b's pwo is 0)."""
    if float(b["pwo"]) <= 0:
        return None
    return 100 * (float(a["pwo"]) / float(b["pwo"]) - 1)


def _med_max(values: Sequence[float | None], fmt: str) -> str:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return "-"
    return f"{format(statistics.median(vals), fmt)} / {format(max(vals), fmt)}"


def _groups(rows: Sequence[Row]) -> list[tuple[str, str | None, list[str]]]:
    """(family, size or None for all sizes, instance names) in order of first appearance."""
    families: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        sizes = families.setdefault(str(r["family"]), {})
        names = sizes.setdefault(str(r["size"]), [])
        if r["instance"] not in names:
            names.append(str(r["instance"]))
    order = {s: k for k, s in enumerate(SIZES)}
    out: list[tuple[str, str | None, list[str]]] = []
    for family, sizes in families.items():
        ordered = sorted(sizes, key=lambda s: order.get(s, len(order)))
        for size in ordered:
            out.append((family, size, sizes[size]))
        if len(sizes) > 1:
            out.append((family, None, [n for s in ordered for n in sizes[s]]))
    return out


PAIRS = (("cpsat", "fifo"), ("greedy", "fifo"), ("cpsat", "greedy"))


def gains_tables(rows: Sequence[Row]) -> str:
    index = _by_instance(rows)
    util_lines = [
        "| family | size | instances | cpsat - fifo | greedy - fifo | cpsat - greedy |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    pwo_lines = [
        "| family | size | instances | cpsat vs fifo | greedy vs fifo | cpsat vs greedy | cpsat gap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family, size, names in _groups(rows):
        label = size if size is not None else "**all**"
        cells_u: list[str] = []
        cells_p: list[str] = []
        for a, b in PAIRS:
            both = [index[n] for n in names if n in index and a in index[n] and b in index[n]]
            cells_u.append(_med_max([util_gain(r[a], r[b]) for r in both], "+.1f"))
            cells_p.append(_med_max([pwo_gain(r[a], r[b]) for r in both], "+.0f"))
        gaps = [
            100 * float(index[n]["cpsat"]["gap"])
            for n in names
            if n in index and "cpsat" in index[n] and index[n]["cpsat"]["gap"] is not None
        ]
        util_lines.append(f"| {family} | {label} | {len(names)} | " + " | ".join(cells_u) + " |")
        pwo_lines.append(
            f"| {family} | {label} | {len(names)} | "
            + " | ".join(cells_p)
            + f" | {_med_max(gaps, '.1f')} |"
        )
    return (
        "### Utilization gain, percentage points (median / max over instances)\n\n"
        + "\n".join(util_lines)
        + "\n\n### pwo gain, % (median / max over instances); cpsat gap to its proven bound, %\n\n"
        + "\n".join(pwo_lines)
        + "\n"
    )


def ablation_table(rows: Sequence[Row]) -> str:
    """Per family: each step's median utilization and pwo, and what the step adds."""
    index = _by_instance(rows)
    lines = [
        "| family | step | instances | utilization | step gain (pp) | pwo vs fifo | step gain (pwo %) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    steps = [s for s, _ in ABLATION]
    families = list(dict.fromkeys(str(r["family"]) for r in rows))
    for family in families:
        names = list(dict.fromkeys(str(r["instance"]) for r in rows if r["family"] == family))
        full = [index[n] for n in names if n in index and all(s in index[n] for s in steps)]
        if not full:
            continue
        for k, (solver, label) in enumerate(ABLATION):
            util = statistics.median(100 * float(r[solver]["utilization"]) for r in full)
            ratios = [
                float(r[solver]["pwo"]) / float(r["fifo"]["pwo"])
                for r in full
                if float(r["fifo"]["pwo"]) > 0
            ]
            ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
            if k == 0:
                step_u = step_p = ""
            else:
                prev = steps[k - 1]
                step_u = f"{statistics.median(util_gain(r[solver], r[prev]) for r in full):+.1f}"
                pg = [g for r in full if (g := pwo_gain(r[solver], r[prev])) is not None]
                step_p = f"{statistics.median(pg):+.0f}%" if pg else "-"
            lines.append(
                f"| {family} | {label} | {len(full)} | {util:.1f}% | {step_u} | {ratio} | {step_p} |"
            )
    return "\n".join(lines) + "\n"


def cost_table(rows: Sequence[Row]) -> str:
    """cpsat's cost by size: wall time, build time, peak memory, gap, proven optima."""
    lines = [
        "| size | runs | jobs x slots x nodes (median) | time limit (s) | wall s (median / max) | build s (median) | peak MiB (max) | gap % (median / max) | optimal | failed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    cp = [r for r in rows if r["solver"] == "cpsat"]
    order = {s: k for k, s in enumerate(SIZES)}
    for size in sorted({str(r["size"]) for r in cp}, key=lambda s: order.get(s, len(order))):
        mine = [r for r in cp if r["size"] == size]
        good = [r for r in mine if ok(r)]
        dims = statistics.median(int(r["jobs"]) * int(r["slots"]) * int(r["nodes"]) for r in mine)
        limits = sorted({float(r["time_limit"]) for r in mine})
        builds = [float(r["build_seconds"]) for r in good if r["build_seconds"] is not None]
        peaks = [float(r["peak_mib"]) for r in mine if r["peak_mib"] is not None]
        lines.append(
            f"| {size} | {len(mine)} | {dims:,.0f} | {', '.join(f'{x:g}' for x in limits)} | "
            f"{_med_max([float(r['wall_seconds']) for r in good], '.1f')} | "
            f"{statistics.median(builds) if builds else 0:.2f} | "
            f"{max(peaks) if peaks else 0:.0f} | "
            f"{_med_max([100 * float(r['gap']) for r in good if r['gap'] is not None], '.1f')} | "
            f"{sum(r['status'] == 'optimal' for r in good)} | {len(mine) - len(good)} |"
        )
    return "\n".join(lines) + "\n"


def machine() -> str:
    return (
        f"{os.cpu_count()} CPUs (nproc), {platform.machine()}, {platform.system()} "
        f"{platform.release()}, {platform.python_implementation()} {platform.python_version()}"
    )


def summarize(
    rows: Sequence[Row],
    *,
    suite: Suite | None = None,
    jobs: int | None = None,
    seconds: float | None = None,
) -> str:
    """The markdown summary of a results table."""
    solvers = list(dict.fromkeys(str(r["solver"]) for r in rows))
    instances = list(dict.fromkeys(str(r["instance"]) for r in rows))
    workers = sorted({int(r["workers"]) for r in rows if r.get("workers") is not None})
    head = [f"# Benchmark summary{f': {suite.spec.name}' if suite else ''}", ""]
    if suite is not None:
        head.append(f"- suite: `{suite.path}`")
    head += [
        f"- {len(instances)} instances x {len(solvers)} solvers ({', '.join(solvers)}) = "
        f"{len(rows)} runs; cpsat workers {', '.join(map(str, workers))}"
        + (f"; runs at once (--jobs): {jobs}" if jobs else ""),
        f"- machine: {machine()}",
        f"- written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f", whole run {seconds / 60:.1f} min" if seconds is not None else ""),
        "- gains compare plans of the same instance; pp = percentage points of utilization; "
        "pwo % = pwo of the first / pwo of the second - 1; runs that failed or gave an invalid "
        "plan are left out (see Failures)",
        "",
        "## Gains over fifo",
        "",
        gains_tables(rows),
        "## Ablation: where the gain comes from (medians over the family's instances)",
        "",
        ablation_table(rows),
        "## cpsat cost by size",
        "",
        cost_table(rows),
    ]
    failed = [r for r in rows if not ok(r)]
    head += ["## Failures", ""]
    if failed:
        head += [
            "| instance | solver | status | valid | error |",
            "| --- | --- | --- | --- | --- |",
        ]
        head += [
            f"| {r['instance']} | {r['solver']} | {r['status']} | {r['valid'] or '-'} | "
            f"{r['error'] or ''} |"
            for r in failed
        ]
    else:
        head.append("None: every run ended with a plan that passes `check`.")
    return "\n".join(head) + "\n"


# -- charts ------------------------------------------------------------------------------------


def _median_by(
    rows: Sequence[Row], family: str, solver: str, key: Callable[[Row], float | None]
) -> float | None:
    vals = [
        v
        for r in rows
        if r["family"] == family and r["solver"] == solver and (v := key(r)) is not None
    ]
    return statistics.median(vals) if vals else None


def write_charts(rows: Sequence[Row], out: Path, anytime: Sequence[str] = ()) -> list[Path]:
    """by_family.png, scaling.png and anytime.png (when there is data for them)."""
    from matplotlib.figure import Figure  # only the chart step needs matplotlib
    from matplotlib.lines import Line2D

    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    index = _by_instance(rows)
    good = [r for r in rows if ok(r)]
    families = list(dict.fromkeys(str(r["family"]) for r in good))
    solvers = [s for s in DEFAULT_SOLVERS if any(r["solver"] == s for r in good)]
    solvers += [s for s in dict.fromkeys(str(r["solver"]) for r in good) if s not in solvers]

    # 1. utilization and pwo (relative to fifo) by solver, per family
    if families and solvers:
        fifo_pwo = {n: float(r["fifo"]["pwo"]) for n, r in index.items() if "fifo" in r}

        def rel(r: Row) -> float | None:
            base = fifo_pwo.get(str(r["instance"]))
            return float(r["pwo"]) / base if base else None

        fig = Figure(figsize=(max(8.0, 2.6 * len(families) + 3), 4.2), layout="constrained")
        ax_u, ax_p = fig.subplots(1, 2)
        width = 0.8 / len(solvers)
        for k, solver in enumerate(solvers):
            xs = [i + (k - (len(solvers) - 1) / 2) * width for i in range(len(families))]
            utils = [
                _median_by(good, f, solver, lambda r: 100 * float(r["utilization"]))
                for f in families
            ]
            pwos = [_median_by(good, f, solver, rel) for f in families]
            bars = ax_u.bar(xs, [u or 0 for u in utils], width, label=solver)
            ax_u.bar_label(bars, labels=[f"{u:.0f}" if u else "" for u in utils], fontsize=6)
            bars = ax_p.bar(xs, [p or 0 for p in pwos], width, label=solver)
            ax_p.bar_label(bars, labels=[f"{p:.1f}" if p else "" for p in pwos], fontsize=6)
        for ax, title in (
            (ax_u, "utilization, % (median over instances)"),
            (ax_p, "pwo relative to fifo (median over instances)"),
        ):
            ax.set_xticks(range(len(families)), families)
            ax.set_title(title, fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        ax_p.axhline(1.0, color="black", linewidth=0.8)
        ax_u.legend(fontsize=8, loc="lower right")
        files.append(out / "by_family.png")
        fig.savefig(files[-1], dpi=130)

    # 2. scaling of cpsat: gap and wall time against jobs x slots x nodes
    cp = [r for r in rows if r["solver"] == "cpsat" and ok(r)]
    if cp:
        fig = Figure(figsize=(10, 4.2), layout="constrained")
        ax_g, ax_t = fig.subplots(1, 2)
        markers = dict(zip(SIZES, "osD^", strict=True))
        families_cp = list(dict.fromkeys(str(r["family"]) for r in cp))
        colors = {f: f"C{k % 10}" for k, f in enumerate(families_cp)}
        for r in cp:
            x = int(r["jobs"]) * int(r["slots"]) * int(r["nodes"])
            style = {
                "color": colors[str(r["family"])],
                "marker": markers.get(str(r["size"]), "o"),
                "alpha": 0.8,
            }
            ax_g.scatter([x], [100 * float(r["gap"]) if r["gap"] is not None else 0.0], **style)
            ax_t.scatter([x], [float(r["wall_seconds"])], **style)
        handles = [
            Line2D([], [], color=c, marker="o", linestyle="", label=f) for f, c in colors.items()
        ]
        handles += [
            Line2D([], [], color="grey", marker=m, linestyle="", label=s)
            for s, m in markers.items()
            if any(r["size"] == s for r in cp)
        ]
        ax_g.legend(handles=handles, fontsize=8)
        limits = sorted({float(r["time_limit"]) for r in cp})
        for ax, title in (
            (ax_g, "cpsat gap to proven bound, %"),
            (ax_t, "cpsat wall time, s (time limits: " + ", ".join(f"{x:g}" for x in limits) + ")"),
        ):
            ax.set_xscale("log")
            ax.set_xlabel("jobs x slots x nodes")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3)
        ax_t.set_yscale("log")
        files.append(out / "scaling.png")
        fig.savefig(files[-1], dpi=130)

    # 3. anytime: gap over solve time, from the progress events of the chosen cpsat runs
    ran = {str(r["instance"]) for r in cp}
    chosen = [name for name in anytime if name in ran] or _default_anytime(cp)
    curves: list[tuple[str, list[float], list[float]]] = []
    for name in chosen:
        path = out / "progress" / f"{name}-cpsat.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        points = [(float(t), float(o), float(b)) for t, o, b in data["events"] if b is not None]
        wall, pwo, bound = data["final"]
        if bound is not None:
            points.append((float(wall), float(pwo), float(bound)))
        if points:
            ts = [p[0] for p in points]
            gs = [100 * (p[2] - p[1]) / max(p[2], 1e-9) for p in points]
            curves.append((f"{name} (limit {data['time_limit']:g} s)", ts, gs))
    if curves:
        fig = Figure(figsize=(7, 4.2), layout="constrained")
        ax = fig.subplots()
        for label, ts, gs in curves:
            ax.step(ts, gs, where="post", label=label, marker=".", markersize=3)
        ax.set_xlabel("solve time, s")
        ax.set_ylabel("gap to proven bound, %")
        ax.set_title("cpsat anytime curve: gap over solve time", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        files.append(out / "anytime.png")
        fig.savefig(files[-1], dpi=130)
    return files


def _default_anytime(cp: Sequence[Row]) -> list[str]:
    """The first medium and the first large cpsat instance (else the two largest)."""
    chosen: list[str] = []
    for size in ("medium", "large"):
        names = [str(r["instance"]) for r in cp if r["size"] == size]
        if names:
            chosen.append(names[0])
    if not chosen:
        by_dims = sorted(cp, key=lambda r: int(r["jobs"]) * int(r["slots"]) * int(r["nodes"]))
        chosen = [str(r["instance"]) for r in by_dims[-2:]]
    return chosen
