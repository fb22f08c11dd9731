"""Many runs at once, each in its own process, any that outlives its time guard killed.

`run_one` is a single guarded run, the same way: what the Ray engine (ray_engine.py) runs on a
node for each task."""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path

from horizon_opt.bench.rows import Report, failure_report
from horizon_opt.bench.tasks import AnyTask
from horizon_opt.bench.worker import worker_main as worker_main  # the entry point of a run
from horizon_opt.model.instance import Instance


def longest_first(tasks: Sequence[AnyTask]) -> list[AnyTask]:
    """The order runs start in: the longest expected first, then suite order."""
    order = sorted(range(len(tasks)), key=lambda i: (-tasks[i].expected_seconds, i))
    return [tasks[i] for i in order]


def crashed_report(code: int | None, wall: float) -> Report:
    """The report of a run whose process died without sending its report."""
    hint = " (killed: memory?)" if code in (-6, -9, -11) else ""
    return failure_report("crashed", f"worker exited with code {code}{hint}", wall)


def timeout_report(guard: float, wall: float) -> Report:
    """The report of a run killed by its wall-clock guard."""
    return failure_report("timeout", f"killed after {guard:.0f} s (time guard)", wall)


@contextlib.contextmanager
def _without_main() -> Iterator[None]:
    """Around the start of a run's process. A spawned process first imports its parent's main
    module again (as __mp_main__); a run needs nothing of it (the bench command, pytest, in a Ray
    worker Ray itself), and what it loads would count towards the run's peak memory and its
    address-space limit."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def remove_stale(task: AnyTask) -> None:
    """Remove the files (plan, progress) of an earlier run of the task."""
    for stale in task.outputs:
        Path(stale).unlink(missing_ok=True)


@dataclass
class _Running:
    task: AnyTask
    process: multiprocessing.process.BaseProcess
    conn: Connection
    started: float


def run_tasks(
    tasks: Sequence[AnyTask],
    jobs: int = 2,
    on_start: Callable[[AnyTask], None] | None = None,
    on_done: Callable[[AnyTask, Report], None] | None = None,
    on_tick: Callable[[Sequence[tuple[AnyTask, float]]], None] | None = None,
) -> dict[AnyTask, Report]:
    """Run every task in its own process, at most `jobs` at once (longest expected first),
    killing any that outlives its guard. Returns the report of each task (failures included)."""
    ctx = multiprocessing.get_context("spawn")
    pending = longest_first(tasks)
    pending.reverse()  # pop() from the end takes the longest first
    running: dict[Connection, _Running] = {}
    results: dict[AnyTask, Report] = {}

    def finish(run: _Running, report: Report) -> None:
        del running[run.conn]
        run.conn.close()
        results[run.task] = report
        if on_done is not None:
            on_done(run.task, report)

    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                task = pending.pop()
                remove_stale(task)
                receive, send = ctx.Pipe(duplex=False)
                process = ctx.Process(target=worker_main, args=(task, send), daemon=True)
                with _without_main():
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
                    report: Report = conn.recv()
                except EOFError:
                    run.process.join(5)
                    report = crashed_report(run.process.exitcode, time.monotonic() - run.started)
                run.process.join(5)
                finish(run, report)
            now = time.monotonic()
            for run in list(running.values()):
                if now - run.started > run.task.guard_seconds:
                    run.process.kill()
                    run.process.join(5)
                    finish(run, timeout_report(run.task.guard_seconds, now - run.started))
            if on_tick is not None:
                on_tick([(r.task, now - r.started) for r in running.values()])
    finally:
        for run in running.values():
            run.process.kill()
            run.process.join(5)
            run.conn.close()
    return results


def run_one(
    task: AnyTask,
    instance: Instance | None = None,
    target: Callable[[AnyTask, Connection, Instance | None], None] = worker_main,
) -> Report:
    """One run in a fresh process, guarded as `run_tasks` guards each: `target` (the worker's
    entry point) sets the memory limit; the run is killed once it outlives its time guard, and a
    process that dies without a report is a crashed run. Blocks until the run ends."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=target, args=(task, send, instance), daemon=True)
    started = time.monotonic()
    with _without_main():
        process.start()
    send.close()
    try:
        if receive.poll(task.guard_seconds):
            try:
                report: Report = receive.recv()
            except EOFError:
                process.join(5)
                report = crashed_report(process.exitcode, time.monotonic() - started)
        else:
            process.kill()
            report = timeout_report(task.guard_seconds, time.monotonic() - started)
    finally:
        if process.is_alive():
            process.kill()
        process.join(5)
        receive.close()
    return report
