"""A whole suite: prepare it, run every task, write results.csv, summary.md and the charts. A
closed-loop suite (a `loop` section) runs its tasks the same way and writes its own summary."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from horizon_opt.bench.charts import write_charts, write_loop_chart
from horizon_opt.bench.loop_summary import policy_order, summarize_loop, top_of
from horizon_opt.bench.pool import run_tasks
from horizon_opt.bench.progress import ProgressDisplay
from horizon_opt.bench.rows import (
    LoopRow,
    Report,
    Row,
    SolverRow,
    check_results_file,
    is_loop,
    read_csv,
    task_rows,
    write_csv,
)
from horizon_opt.bench.suite import Suite
from horizon_opt.bench.summary import baseline_of, summarize
from horizon_opt.bench.tasks import AnyTask, make_loop_tasks, make_tasks, prepare
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
) -> Callable[..., dict[AnyTask, Report]]:
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

    With `only`, the new rows replace the same (instance, solver) rows (instance, world, seed,
    policy for a closed-loop suite) of an existing results.csv in `out` and the others are kept,
    so a partial rerun updates a full run. On Ctrl-C the finished runs are written and
    `Interrupted` is raised.

    `engine` "ray" runs the same tasks on Ray (`address`: see `ray_engine.connect`), with the
    same guards and the same rows; InputError when Ray is missing or unreachable."""
    run = _engine(engine, address, stream)
    folder = Path(out)
    if only is not None and (folder / "results.csv").is_file():
        check_results_file(folder / "results.csv", LoopRow if suite.spec.loop else SolverRow)
    started = time.monotonic()
    instances = prepare(suite, folder, traces=traces, only=only)
    tasks: list[AnyTask] = []
    if suite.spec.loop is not None:
        tasks += make_loop_tasks(suite, instances)
    else:
        tasks += make_tasks(suite, instances, folder)
    display = ProgressDisplay(len(tasks), stream)
    results: dict[AnyTask, Report] = {}

    def done(task: AnyTask, report: Report) -> None:
        results[task] = report
        display.finished(task, report)

    interrupted = False
    try:
        run(tasks, jobs, on_done=done, on_tick=display.tick)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        display.close()
    by_name = {i.name: i for i in instances}
    rows = [r for t in tasks if t in results for r in task_rows(by_name[t.instance], t, results[t])]
    previous = folder / "results.csv"
    if only is not None and previous.is_file():
        fresh = {r.key: r for r in rows}
        merged = [fresh.pop(r.key, r) for r in read_csv(previous)]
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
    """results.csv, summary.md and (with `charts`) the PNG charts, into `out`; those of a
    closed-loop suite when the suite has a `loop` section (without the suite: when the rows are
    of one)."""
    loop = is_loop(rows) if suite is None else suite.spec.loop is not None
    files = [out / "results.csv", out / "summary.md"]
    write_csv(rows, files[0], LoopRow if loop else SolverRow)
    if loop:
        loops = [r for r in rows if isinstance(r, LoopRow)]
        write_atomic(files[1], summarize_loop(loops, suite=suite, jobs=jobs, seconds=seconds))
        if charts:
            files += write_loop_chart(loops, out, top_of(loops, suite), policy_order(loops, suite))
        return files
    runs = [r for r in rows if isinstance(r, SolverRow)]
    write_atomic(files[1], summarize(runs, suite=suite, jobs=jobs, seconds=seconds))
    if charts:
        anytime = list(suite.spec.anytime) if suite is not None else []
        files += write_charts(runs, out, anytime=anytime, base=baseline_of(suite))
    return files
