"""`horizon-opt bench --engine ray`: the same rows as the local engine, crashes and wall-clock
overruns recorded as locally, clear errors for a bad engine or a missing Ray.

Everything runs for real on one local Ray instance (2 CPUs) started once for the module. A run's
entry point is `pool.worker_main`, which both engines read when they start a run; the tests
replace it with the functions below, which misbehave for one solver. They must be importable by
the Ray workers and the runs they spawn: the fixture puts this folder on their PYTHONPATH.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from conftest import bench_task
from typer.testing import CliRunner

from horizon_opt import bench
from horizon_opt.bench import pool, ray_engine
from horizon_opt.bench.worker import worker_main
from horizon_opt.cli import app
from horizon_opt.model.instance import Instance

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent  # conftest.py, which this file imports
DEMO = TESTS.parent / "instances" / "demo.yaml"  # its demand comes from a CSV beside it
TIMINGS = {"wall_seconds", "build_seconds", "peak_mib"}  # differ from run to run
TIMED = dict.fromkeys(TIMINGS)  # a row's timings, left out


# -- run entry points that misbehave (module level: the runs import them by name) -------------


def misbehave(task: bench.Task, conn: Connection, instance: Instance | None = None) -> None:
    """greedy's run kills its own process (as the kernel's OOM killer would); fifo-elastic's
    never ends, until a guard kills it; the others run as usual."""
    if task.solver == "greedy":
        os.kill(os.getpid(), signal.SIGKILL)
    if task.solver == "fifo-elastic":
        time.sleep(600)
    worker_main(task, conn, instance)


def kill_the_ray_worker(
    task: bench.Task, conn: Connection, instance: Instance | None = None
) -> None:
    """As `misbehave`, but greedy's run kills the Ray worker that started it, then ends."""
    if task.solver == "greedy":
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(0)
    misbehave(task, conn, instance)


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray() -> Iterator[ModuleType]:
    """One local Ray instance for the module; its workers can import this file."""
    ray = pytest.importorskip("ray")
    with pytest.MonkeyPatch.context() as mp:
        path = os.environ.get("PYTHONPATH")
        here = os.pathsep.join([str(HERE), str(TESTS)])
        mp.setenv("PYTHONPATH", here + (os.pathsep + path if path else ""))
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def suite_file(tmp_path: Path, spec_of: Callable[[str], dict[str, Any]], **fields: Any) -> Path:
    write_yaml(tmp_path / "inst" / "tiny.yaml", spec_of("tiny"))
    write_yaml(tmp_path / "inst" / "mixed.yaml", spec_of("mixed"))
    data: dict[str, Any] = {
        "name": "ray",
        "solvers": ["fifo", "greedy", "cpsat"],
        "time_limits": {"small": 2},
        "cpsat": {"workers": 1, "seed": 0},
        "guard": {"memory_mib": 4096, "margin_seconds": 60},
        "instances": [
            {"file": "inst/tiny.yaml", "family": "toy", "size": "small"},
            {"file": "inst/mixed.yaml", "family": "toy", "size": "small"},
        ],
    }
    data.update(fields)
    return write_yaml(tmp_path / "suite.yaml", data)


def plan_data(path: Path) -> dict[str, Any]:
    """A plan file's content, its timings left out."""
    data: dict[str, Any] = json.loads(path.read_text())
    return {k: v for k, v in data.items() if k not in TIMINGS}


def bench_both(suite: Path, out: Path, *args: str) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """Run the suite under each engine: exit code and rows, timings left out, plan paths made
    relative to the output folder."""
    runs: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    for engine in ("local", "ray"):
        folder = out / engine
        argv = ["bench", str(suite), "--engine", engine, "--out", str(folder), "--no-charts"]
        result = CliRunner().invoke(app, [*argv, *args])
        assert result.exit_code in (0, 1), result.output
        rows = []
        for typed in bench.read_csv(folder / "results.csv"):
            row = {k: v for k, v in vars(typed).items() if k not in TIMINGS}
            if row["plan"]:
                row["plan"] = str(Path(row["plan"]).relative_to(folder))
            rows.append(row)
        runs[engine] = (result.exit_code, rows)
    return runs


# -- the same runs, the same rows ------------------------------------------------------------------


def test_ray_engine_gives_the_local_rows(
    ray: ModuleType, tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]
) -> None:
    instances: list[Any] = [
        {"file": "inst/tiny.yaml", "family": "toy", "size": "small"},
        {"file": str(DEMO), "family": "demo", "size": "small", "solvers": ["fifo", "greedy"]},
    ]
    suite = suite_file(tmp_path, spec_of, instances=instances)
    runs = bench_both(suite, tmp_path / "out", "--jobs", "2")
    assert runs["ray"] == runs["local"]
    code, rows = runs["ray"]
    assert code == 0
    assert len(rows) == 5 and all(bench.SolverRow(**r, **TIMED).ok for r in rows)
    for row in rows:  # the plans and progress events, written by the driver, are the same files
        plan = Path(row["plan"])
        local, remote = tmp_path / "out" / "local", tmp_path / "out" / "ray"
        assert plan_data(remote / plan) == plan_data(local / plan)
        if row["solver"] == "cpsat":
            progress = Path("progress") / f"{row['instance']}-cpsat.json"
            assert (remote / progress).is_file() and (local / progress).is_file()
    summary = (tmp_path / "out" / "ray" / "summary.md").read_text()
    assert "None: every run ended with a plan that passes `check`." in summary


def test_crash_and_overrun_are_recorded_as_locally(
    ray: ModuleType,
    tmp_path: Path,
    spec_of: Callable[[str], dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """greedy's worker dies, fifo-elastic's outlives its 15 s guard (long enough for a worker to
    start on a loaded machine); fifo is fine; the batch finishes and exits 1 under both
    engines."""
    monkeypatch.setattr(pool, "worker_main", misbehave)
    suite = suite_file(
        tmp_path,
        spec_of,
        solvers=["fifo", "fifo-elastic", "greedy"],
        guard={"memory_mib": 4096, "margin_seconds": 15},
        instances=[{"file": "inst/tiny.yaml", "family": "toy", "size": "small"}],
    )
    started = time.monotonic()
    runs = bench_both(suite, tmp_path / "out")
    assert time.monotonic() - started < 90
    assert runs["ray"] == runs["local"]
    code, rows = runs["ray"]
    assert code == 1
    by_solver = {r["solver"]: r for r in rows}
    assert bench.SolverRow(**by_solver["fifo"], **TIMED).ok
    assert by_solver["greedy"]["status"] == "crashed"
    assert by_solver["greedy"]["error"] == "worker exited with code -9 (killed: memory?)"
    assert by_solver["fifo-elastic"]["status"] == "timeout"
    assert by_solver["fifo-elastic"]["error"] == "killed after 15 s (time guard)"
    summary = (tmp_path / "out" / "ray" / "summary.md").read_text()
    assert "crashed" in summary and "timeout" in summary


def test_a_lost_ray_worker_is_a_crash_and_the_driver_deadline_cancels(
    ray: ModuleType,
    tmp_path: Path,
    spec_of: Callable[[str], dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What only Ray has: the Ray worker itself dies (greedy), and the driver's own deadline
    (the task's guard plus GRACE_SECONDS, here made shorter than the guard) cancels a task
    (fifo-elastic) with ray.cancel(force=True). The batch goes on: fifo ends fine."""
    monkeypatch.setattr(pool, "worker_main", kill_the_ray_worker)
    monkeypatch.setattr(ray_engine, "GRACE_SECONDS", -29.0)
    path = write_yaml(tmp_path / "tiny.yaml", spec_of("tiny"))
    lost = bench_task(path, "greedy", tmp_path, memory_mib=2048)
    slow = bench_task(
        path, "fifo-elastic", tmp_path, memory_mib=2048, guard_seconds=30.0
    )  # driver: after 1 s
    fine = bench_task(path, "fifo", tmp_path, memory_mib=2048)
    done: list[str] = []
    results = ray_engine.run_tasks_ray(
        [lost, slow, fine], jobs=2, on_done=lambda t, r: done.append(t.solver)
    )
    assert results[lost]["status"] == "crashed"
    assert results[lost]["error"].startswith("ray worker lost (WorkerCrashedError")
    assert results[slow]["status"] == "timeout"
    assert results[slow]["error"] == "killed after 1 s (time guard)"
    assert (results[fine]["status"], results[fine]["valid"]) == ("heuristic", "yes")
    assert Path(fine.plan_path).is_file()
    assert sorted(done) == ["fifo", "fifo-elastic", "greedy"]
    assert ray.is_initialized()  # the instance was the module's: still up


# -- options and a missing Ray ----------------------------------------------------------------------


def test_bad_engine_options_exit_2(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]
) -> None:
    suite = suite_file(tmp_path, spec_of)
    out = ["--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, ["bench", str(suite), "--engine", "nope", *out])
    assert result.exit_code == 2
    assert "--engine: unknown engine 'nope'; choose one of local, ray" in result.output
    result = CliRunner().invoke(app, ["bench", str(suite), "--address", "auto", *out])
    assert result.exit_code == 2
    assert "--address: only with --engine ray" in result.output
    assert not (tmp_path / "o").exists()


def test_missing_ray_is_a_clean_error(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    suite = suite_file(tmp_path, spec_of)
    result = CliRunner().invoke(
        app, ["bench", str(suite), "--engine", "ray", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "--engine ray needs Ray" in result.output
    assert "pip install 'horizon-opt[ray]'" in result.output
    assert "Traceback" not in result.output


def test_importing_horizon_opt_does_not_import_ray() -> None:
    code = (
        "import sys, horizon_opt, horizon_opt.bench, horizon_opt.cli; print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
