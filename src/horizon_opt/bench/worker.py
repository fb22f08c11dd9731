"""One run in its own process: the memory guard, then solve, write, check and evaluate; or, for
a closed-loop task, replay every policy in one drawn world."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import time
from multiprocessing.connection import Connection

from horizon_opt.bench.rows import Report
from horizon_opt.bench.tasks import AnyTask, LoopTask, Task
from horizon_opt.io import write_atomic
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import load_instance
from horizon_opt.params import LOOP
from horizon_opt.plans.check import check
from horizon_opt.plans.metrics import evaluate
from horizon_opt.simulate import simulate
from horizon_opt.simulate.report import rows as replay_rows
from horizon_opt.simulate.worlds import world_for
from horizon_opt.solvers import Progress, SolveOptions, solve


def _peak_mib() -> float:
    """This process's peak resident memory: VmHWM, where Linux has it. Not ru_maxrss, which
    keeps across exec the peak of the process this one was forked from (the bench process, or a
    Ray worker), so that a run would report at least that."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def solve_task(task: Task, instance: Instance | None = None) -> Report:
    """Solve one (instance, solver) pair, write the plan, check and evaluate it: one raw report.

    Given the compiled `instance` (the Ray engine: the run may be on a node without the suite's
    files), the run reads no file and writes none: the plan and progress events come back as
    JSON text in the report (`plan_json`, `progress_json`) for the driver to write."""
    inst = load_instance(task.path) if instance is None else instance
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
    plan_json = plan.to_json()
    if instance is None:
        write_atomic(task.plan_path, plan_json)
    violations = check(inst, plan)
    m = evaluate(inst, plan)
    progress_json = None
    if task.progress_path is not None:
        progress = {
            "instance": task.instance,
            "solver": task.solver,
            "time_limit": task.time_limit,
            "events": [[e.elapsed, e.objective, e.bound] for e in events],
            "final": [wall, m.pwo, plan.bound],
        }
        progress_json = json.dumps(progress) + "\n"
        if instance is None:
            write_atomic(task.progress_path, progress_json)
    report: Report = {
        "status": plan.status,
        "valid": "no" if violations else "yes",
        "violations": violations.total,
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
    if instance is not None:
        report.update(plan_json=plan_json, progress_json=progress_json)
    return report


def replay_task(task: LoopTask, instance: Instance | None = None) -> Report:
    """Replay every policy of the task in its drawn world: one report whose `replays` holds the
    figures of each policy (`simulate.report.rows`). The replay checks every plan it executes and
    raises on an invalid one, so a report that comes back is valid. Reads the instance file only
    when not given `instance` (the Ray engine), and writes nothing."""
    inst = load_instance(task.path) if instance is None else instance
    world = world_for(inst, task.world, task.seed, task.noise)
    options = SolveOptions(
        time_limit=task.time_limit, workers=task.workers, seed=task.solver_seed, params=LOOP
    )
    started = time.perf_counter()
    replays = simulate(inst, task.policies, world, options)
    return {
        "status": "replayed",
        "valid": "yes",
        "replays": replay_rows(replays),
        "wall_seconds": time.perf_counter() - started,
        "peak_mib": _peak_mib(),
        "error": "",
    }


def _out_of_memory(exc: BaseException) -> bool:
    """MemoryError, or an allocation that failed inside a library (ENOMEM)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    return os.strerror(errno.ENOMEM) in str(exc)  # e.g. an InputError around a failed read


def worker_main(task: AnyTask, conn: Connection, instance: Instance | None = None) -> None:
    """Process entry point: set the memory guard, run `solve_task` (`replay_task`), send the report
    back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the workers
    setrlimit, what = resource.setrlimit, resource.RLIMIT_AS
    restore = resource.getrlimit(what)  # built now: lifting the guard must not need memory
    if task.memory_mib is not None:
        limit = task.memory_mib * 2**20
        if restore[1] != resource.RLIM_INFINITY:
            limit = min(limit, restore[1])
        setrlimit(what, (limit, restore[1]))
    try:
        report = (
            replay_task(task, instance)
            if isinstance(task, LoopTask)
            else solve_task(task, instance)
        )
    except BaseException as exc:  # a failed run is a report, not the end of the batch
        setrlimit(what, restore)
        if task.memory_mib is not None and _out_of_memory(exc):
            report = {"status": "memory", "error": f"out of memory (limit {task.memory_mib} MiB)"}
        else:
            report = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    report.setdefault("peak_mib", _peak_mib())
    conn.send(report)
    conn.close()
