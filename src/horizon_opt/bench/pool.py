"""Many runs at once, each in its own process, any that outlives its time guard killed."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path

from horizon_opt.bench.rows import Row, failure_row
from horizon_opt.bench.tasks import Task
from horizon_opt.bench.worker import worker_main
from horizon_opt.solvers import SOLVERS


def _expected_seconds(task: Task) -> float:
    return task.time_limit if SOLVERS[task.solver].anytime else 0.0


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
                process = ctx.Process(target=worker_main, args=(task, send), daemon=True)
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
                    row = failure_row(
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
                        failure_row(
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
