"""Benchmark suites: every (instance, solver) pair of a suite file in its own guarded process,
raw rows in results.csv, a markdown summary and charts; or, for a closed-loop suite, every
(instance, world kind, world seed) with all its policies replayed in one guarded process. The
suite format: docs/bench.md. Runs happen in a local process pool (pool.py) or on Ray
(ray_engine.py, imported on use). Rows are typed (SolverRow, LoopRow); which solver plays which
part in a summary comes from the registry's flags (roles.py)."""

from horizon_opt.bench.charts import write_charts, write_loop_chart
from horizon_opt.bench.loop_summary import summarize_loop
from horizon_opt.bench.pool import run_tasks
from horizon_opt.bench.rows import (
    FIELDS,
    LOOP_FIELDS,
    LoopRow,
    Report,
    Row,
    SolverRow,
    ok,
    read_csv,
    write_csv,
)
from horizon_opt.bench.runner import (
    ENGINES,
    BenchResult,
    Interrupted,
    check_engine,
    run_suite,
    write_reports,
)
from horizon_opt.bench.suite import LoopSpec, Suite, load_suite
from horizon_opt.bench.summary import summarize
from horizon_opt.bench.tasks import (
    AnyTask,
    BenchInstance,
    LoopTask,
    Task,
    guard_seconds,
    make_loop_tasks,
    make_tasks,
    prepare,
)
from horizon_opt.bench.worker import replay_task, solve_task

__all__ = [
    "ENGINES",
    "FIELDS",
    "LOOP_FIELDS",
    "AnyTask",
    "BenchInstance",
    "BenchResult",
    "Interrupted",
    "LoopRow",
    "LoopSpec",
    "LoopTask",
    "Report",
    "Row",
    "SolverRow",
    "Suite",
    "Task",
    "check_engine",
    "guard_seconds",
    "load_suite",
    "make_loop_tasks",
    "make_tasks",
    "ok",
    "prepare",
    "read_csv",
    "replay_task",
    "run_suite",
    "run_tasks",
    "solve_task",
    "summarize",
    "summarize_loop",
    "write_charts",
    "write_csv",
    "write_loop_chart",
    "write_reports",
]
