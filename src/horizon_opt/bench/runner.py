"""A whole suite: prepare it, run every task, write results.csv, summary.md and the charts."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from horizon_opt.bench.charts import write_charts
from horizon_opt.bench.pool import run_tasks
from horizon_opt.bench.progress import ProgressDisplay
from horizon_opt.bench.rows import Row, read_csv, result_row, write_csv
from horizon_opt.bench.suite import Suite
from horizon_opt.bench.summary import summarize
from horizon_opt.bench.tasks import Task, make_tasks, prepare
from horizon_opt.errors import InputError
from horizon_opt.io import write_atomic

ENGINES = ("local", "ray")  # where runs happen: a local process pool, or Ray (ray_engine.py)


def check_engine(engine: str, address: str | None = None) -> None:
    """InputError for an unknown engine, or an address without the Ray engine."""
    if engine not in ENGINES:
        raise InputError(
            [f"--engine: unknown engine {engine!r}; choose one of {', '.join(ENGINES)}"]
        )
    if address is not None and engine != "ray":
        raise InputError([f"--address: only with --engine ray (the engine is {engine})"])


def _engine(
    engine: str, address: str | None, stream: IO[str] | None
) -> Callable[..., dict[Task, Row]]:
    """The `run_tasks` of an engine; with Ray, imported now: a missing Ray is an error at once."""
    check_engine(engine, address)
    if engine == "local":
        return run_tasks
    from horizon_opt.bench import ray_engine

    ray_engine.import_ray()
    return partial(ray_engine.run_tasks_ray, address=address, stream=stream)


@dataclass
class BenchResult:
    """The rows of a suite run and the files written from them."""

    rows: list[Row]
    out: Path
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def run_suite(
    suite: Suite,
    out: str | os.PathLike[str],
    *,
    jobs: int = 2,
    traces: str | os.PathLike[str] | None = None,
    only: str | None = None,
    charts: bool = True,
    stream: IO[str] | None = None,
    engine: str = "local",
    address: str | None = None,
) -> BenchResult:
    """Run a suite and write results.csv, summary.md, plans, progress events and charts.

    With `only`, the new rows replace the same (instance, solver) rows of an existing
    results.csv in `out` and the others are kept, so a partial rerun updates a full run. On
    Ctrl-C the finished runs are written and `Interrupted` is raised.

    `engine` "ray" runs the same tasks on Ray (`address`: see `ray_engine.connect`), with the
    same guards and the same rows; InputError when Ray is missing or unreachable."""
    run = _engine(engine, address, stream)
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
        run(tasks, jobs, on_done=done, on_tick=display.tick)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        display.close()
    by_name = {i.name: i for i in instances}
    rows = [result_row(by_name[t.instance], t, results[t]) for t in tasks if t in results]
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
