"""The benchmark scripts and `bench --summary-only` write into the ignored bench-results/ unless
told otherwise (`--out`): a run never rewrites the committed benchmarks/results/ by default, and
no script reads anything outside the repository."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from typer.testing import CliRunner

from horizon_opt.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [
    "causes",
    "forecast",
    "left_shift",
    "optimizer",
    "prices",
    "replan",
    "state",
    "steps",
    "teams",
]


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_bench_results_is_ignored_by_git() -> None:
    assert "bench-results/" in (ROOT / ".gitignore").read_text().splitlines()


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_script_writes_into_bench_results_by_default(name: str) -> None:
    out = load(name).DEFAULT_OUT
    assert out.parent == ROOT / "bench-results", out
    text = (ROOT / "benchmarks" / f"{name}.py").read_text()
    assert '"--out"' in text  # every script takes --out


def test_forecast_reads_the_packaged_traces_and_runs(tmp_path: Path) -> None:
    module = load("forecast")
    assert (
        module.TRACES.is_relative_to(ROOT) and (module.TRACES / "inference_servegen.csv").is_file()
    )
    assert os.access(ROOT / "benchmarks" / "forecast.py", os.X_OK)
    out = tmp_path / "forecast.md"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "forecast.py"),
            "--no-library",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert out.read_text().startswith("# Demand forecasts")


def test_bench_summary_only_reads_and_writes_bench_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inst = {
        "name": "one",
        "horizon": {"slots": 4},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [{"id": "a", "priority": 1, "gpus": 8, "duration": 2}],
    }
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "one.yaml").write_text(yaml.safe_dump(inst))
    suite = tmp_path / "benchmarks" / "mine.yaml"
    suite.write_text(yaml.safe_dump({"solvers": ["fifo"], "instances": ["one.yaml"]}))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["bench", str(suite), "--summary-only", "--no-charts"])
    assert result.exit_code == 2 and "bench-results/mine/results.csv" in result.output
    result = CliRunner().invoke(app, ["bench", str(suite), "--no-charts"])
    assert result.exit_code == 0, result.output
    summary = tmp_path / "bench-results" / "mine" / "summary.md"
    summary.unlink()
    result = CliRunner().invoke(app, ["bench", str(suite), "--summary-only", "--no-charts"])
    assert result.exit_code == 0, result.output
    assert summary.is_file() and not (tmp_path / "benchmarks" / "results").exists()


def test_the_median_interval_is_the_binomial_order_statistics() -> None:
    """n = 10: P(Binomial(10, 1/2) <= 1) = 11/1024 <= 2.5% < P(... <= 2) = 56/1024, so the
    95% interval runs from the 2nd smallest to the 2nd largest value; n = 5 has none (1/32 >
    2.5%); n = 6 spans them all (1/64)."""
    interval = load("loop_seeds").median_interval
    assert interval([float(x) for x in range(10)]) == (1.0, 8.0)
    assert interval([float(x) for x in range(5)]) is None
    assert interval([5.0, 1.0, 3.0, 0.0, 4.0, 2.0]) == (0.0, 5.0)


def test_loop_seeds_compares_each_variant_with_the_first_pair_by_pair() -> None:
    # Three pairs: b is 10% above a, 10% below, then even; c is 50% above in every pair.
    rows = [
        {"a w": 100.0, "b w": 110.0, "c w": 150.0},
        {"a w": 200.0, "b w": 180.0, "c w": 300.0},
        {"a w": 50.0, "b w": 50.0, "c w": 75.0},
    ]
    lines = load("loop_seeds").paired(rows, ("a", "b", "c"), " w")
    assert lines[-2:] == ["| b | +0.0% |  | 1 / 1 / 1 |", "| c | +50.0% |  | 3 / 0 / 0 |"]
    assert load("loop_seeds").paired(rows, ("a",), " w") == []
