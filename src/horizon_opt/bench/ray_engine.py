"""`bench --engine ray`: the same runs as the local pool, as Ray tasks on a local Ray instance or
an existing cluster (docs/bench.md, "Running on a Ray cluster").

What travels how. Each instance is compiled once on the driver and put into the object store once
(`ray.put`); every task of it takes that reference, so a node needs neither a shared folder nor
the suite's files (a demand CSV that an instance names is already read into it). The Task itself
is the task's small argument. On its node a task runs exactly what the local pool runs
(`pool.run_one`): a fresh process with the address-space limit, killed past its time guard, a
process that dies without a report recorded as crashed. The plan and progress events come back as
JSON text in the report, and the driver writes them where the local workers write them. Past its
guard plus `GRACE_SECONDS` (time to start a worker, or a wait for a CPU) the driver cancels a task
itself (`ray.cancel(force=True)`): that kills the Ray worker and its run.

Ray is imported here only, and only when the engine runs: `import horizon_opt` never imports it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from horizon_opt.bench import pool
from horizon_opt.bench.rows import Report, failure_report
from horizon_opt.bench.tasks import AnyTask, Task
from horizon_opt.errors import InputError
from horizon_opt.io import write_atomic
from horizon_opt.model.load import load_instance

INSTALL_HINT = "pip install 'horizon-opt[ray]'"
GRACE_SECONDS = 60.0  # the driver's deadline past a task's own guard


def import_ray() -> ModuleType:
    """The ray module; InputError telling how to install it when it is missing."""
    try:
        import ray
    except ImportError as exc:
        raise InputError(
            [
                f"--engine ray needs Ray, which cannot be imported ({exc}); install it: {INSTALL_HINT}"
            ]
        ) from None
    return ray


def connect(ray: ModuleType, address: str | None, jobs: int) -> None:
    """Start a local Ray instance (no address), or join the cluster at `address` (`auto`: the
    cluster this machine belongs to; `ray://HOST:10001`: from outside, through Ray Client)."""
    quiet: dict[str, Any] = {"logging_level": logging.WARNING}
    try:
        if address is None:
            ray.init(
                address="local",  # a new instance, whatever RAY_ADDRESS says
                num_cpus=max(jobs, os.cpu_count() or 1),  # `--jobs` runs at once, as locally
                include_dashboard=False,
                **quiet,
            )
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "start a local Ray instance" if address is None else f"connect to {address}"
        raise InputError([f"--engine ray: cannot {where}: {exc}"]) from None


def lost_report(ray: ModuleType, exc: Exception, wall: float) -> Report:
    """The report of a task that returned no report: its code raised (an error, as a run's own error
    would be), or its worker or node died (crashed, as a local worker that dies)."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = exc.cause if exc.cause is not None else exc
        return failure_report("error", f"{type(cause).__name__}: {cause}", wall)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return failure_report("crashed", f"ray worker lost ({type(exc).__name__}: {first})", wall)


def _write_outputs(task: Task, report: Report) -> None:
    """Write the plan and progress events that came back as text, where a local worker would."""
    plan, progress = report.pop("plan_json", None), report.pop("progress_json", None)
    if plan is not None:
        write_atomic(task.plan_path, plan)
    if progress is not None and task.progress_path is not None:
        write_atomic(task.progress_path, progress)


@dataclass
class _Running:
    task: AnyTask
    started: float


def run_tasks_ray(
    tasks: Sequence[AnyTask],
    jobs: int = 2,
    on_start: Callable[[AnyTask], None] | None = None,
    on_done: Callable[[AnyTask, Report], None] | None = None,
    on_tick: Callable[[Sequence[tuple[AnyTask, float]]], None] | None = None,
    *,
    address: str | None = None,
    stream: IO[str] | None = None,
) -> dict[AnyTask, Report]:
    """`pool.run_tasks` on Ray: every task a Ray task, at most `jobs` at once (longest expected
    first), rows streamed back as runs finish. Uses the Ray instance this process is already
    connected to, else starts or joins one (`connect`) and shuts it down at the end."""
    ray = import_ray()
    owned = not ray.is_initialized()
    if owned:
        connect(ray, address, jobs)
    running: dict[Any, _Running] = {}
    results: dict[AnyTask, Report] = {}
    try:
        cpus = ray.cluster_resources().get("CPU", 0)
        if jobs > cpus:
            print(
                f"note: --jobs {jobs} but the Ray cluster has {cpus:g} CPUs: runs wait for a "
                "CPU, and the wait counts towards the driver's deadline",
                file=stream if stream is not None else sys.stderr,
            )
        remote = ray.remote(max_retries=0, num_cpus=1)(pool.run_one)
        target = pool.worker_main  # the worker's entry point travels with each task
        pending = pool.longest_first(tasks)
        pending.reverse()  # pop() from the end takes the longest first
        instances: dict[str, Any] = {}  # instance path -> object reference of the compiled one

        def finish(ref: Any, report: Report) -> None:
            run = running.pop(ref)
            if isinstance(run.task, Task):  # a closed-loop run writes no file
                _write_outputs(run.task, report)
            results[run.task] = report
            if on_done is not None:
                on_done(run.task, report)

        while pending or running:
            while pending and len(running) < max(1, jobs):
                task = pending.pop()
                pool.remove_stale(task)
                if task.path not in instances:
                    instances[task.path] = ray.put(load_instance(Path(task.path)))
                ref = remote.remote(task, instances[task.path], target)
                running[ref] = _Running(task, time.monotonic())
                if on_start is not None:
                    on_start(task)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            if ready:  # and any other that is done by now
                ready, _ = ray.wait(list(running), num_returns=len(running), timeout=0)
            for ref in ready:
                try:
                    report: Report = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    report = lost_report(ray, exc, time.monotonic() - running[ref].started)
                finish(ref, report)
            now = time.monotonic()
            for ref, run in list(running.items()):
                deadline = run.task.guard_seconds + GRACE_SECONDS
                if now - run.started > deadline:
                    ray.cancel(ref, force=True)
                    finish(ref, pool.timeout_report(deadline, now - run.started))
            if on_tick is not None:
                on_tick([(r.task, now - r.started) for r in running.values()])
    finally:
        for ref in running:
            with contextlib.suppress(Exception):  # the batch is ending anyway
                ray.cancel(ref, force=True)
        if owned:
            ray.shutdown()
    return results
