"""Benchmark suites: every (instance, solver) pair of a suite file in its own guarded process,
raw rows in results.csv, a markdown summary and charts. The suite format: docs/bench.md.
Runs happen in a local process pool (pool.py) or on Ray (ray_engine.py, imported on use)."""

from horizon_opt.bench.charts import write_charts
from horizon_opt.bench.pool import run_tasks
from horizon_opt.bench.rows import FIELDS, Row, ok, read_csv, write_csv
from horizon_opt.bench.runner import (
    ENGINES,
    BenchResult,
    Interrupted,
    check_engine,
    run_suite,
    write_reports,
)
from horizon_opt.bench.suite import Suite, load_suite
from horizon_opt.bench.summary import summarize
from horizon_opt.bench.tasks import BenchInstance, Task, guard_seconds, make_tasks, prepare
from horizon_opt.bench.worker import solve_task

__all__ = [
    "ENGINES",
    "FIELDS",
    "BenchInstance",
    "BenchResult",
    "Interrupted",
    "Row",
    "Suite",
    "Task",
    "check_engine",
    "guard_seconds",
    "load_suite",
    "make_tasks",
    "ok",
    "prepare",
    "read_csv",
    "run_suite",
    "run_tasks",
    "solve_task",
    "summarize",
    "write_charts",
    "write_csv",
    "write_reports",
]
