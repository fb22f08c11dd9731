"""`horizon-opt bench`: suite files, guarded worker processes, raw rows that agree with the
plans they describe, the summary, the charts.

The smoke run uses two hand-sized instances (conftest's TINY and MIXED) with a 2 s cpsat limit
and one CP-SAT worker, so the whole file stays well under half a minute.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import bench_task
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt import bench
from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.generate import generate_file
from horizon_opt.solvers import SOLVERS

FIELDS_WANTED = {
    "instance",
    "family",
    "size",
    "solver",
    "time_limit",
    "pwo",
    "utilization",
    "completed",
    "gap",
    "bound",
    "wall_seconds",
    "build_seconds",
    "peak_mib",
    "valid",
    "status",
}


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def smoke_suite(tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]) -> Path:
    write_yaml(tmp_path / "inst" / "tiny.yaml", spec_of("tiny"))
    write_yaml(tmp_path / "inst" / "mixed.yaml", spec_of("mixed"))
    return write_yaml(
        tmp_path / "suite.yaml",
        {
            "name": "smoke",
            "solvers": ["fifo", "fifo-elastic", "greedy", "cpsat"],
            "time_limits": {"small": 2},
            "cpsat": {"workers": 1, "seed": 0},
            "guard": {"memory_mib": 4096, "margin_seconds": 60},
            "instances": [
                {"file": "inst/tiny.yaml", "family": "toy", "size": "small"},
                {"file": "inst/mixed.yaml", "family": "toy", "size": "small"},
            ],
        },
    )


def test_smoke_bench_rows_agree_with_the_plans(smoke_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["bench", str(smoke_suite), "--jobs", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "## Gains over fifo" in result.output

    with (out / "results.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    assert set(header) >= FIELDS_WANTED
    rows = bench.read_csv(out / "results.csv")
    assert all(isinstance(r, bench.SolverRow) for r in rows)
    assert [(r.instance, r.solver) for r in rows] == [
        (name, solver)
        for name in ("tiny", "mixed")
        for solver in ("fifo", "fifo-elastic", "greedy", "cpsat")
    ]
    instances = {"tiny": ho.load_instance(tmp_path / "inst" / "tiny.yaml")}
    instances["mixed"] = ho.load_instance(tmp_path / "inst" / "mixed.yaml")
    for row in rows:
        assert isinstance(row, bench.SolverRow)
        inst = instances[row.instance]
        plan_path = out / "plans" / f"{row.instance}-{row.solver}.json"
        assert row.plan == str(plan_path)
        plan = ho.Plan.read(plan_path)
        m = ho.evaluate(inst, plan)
        assert (row.family, row.size, row.time_limit) == ("toy", "small", 2.0)
        assert row.status == plan.status
        assert row.valid == ("yes" if not ho.check(inst, plan) else "no") == "yes"
        assert row.pwo == m.pwo
        assert row.utilization == m.utilization
        assert row.completed == m.completed
        assert row.bound == plan.bound and row.gap == plan.gap
        assert row.wall_seconds is not None and row.wall_seconds >= 0
        assert row.peak_mib is not None and row.peak_mib > 0
        if row.solver == "cpsat":
            assert row.bound is not None and row.build_seconds is not None
            progress = json.loads((out / "progress" / f"{row.instance}-cpsat.json").read_text())
            assert progress["final"][1] == m.pwo
        else:
            assert row.bound is None and row.status == "heuristic"

    summary = (out / "summary.md").read_text()
    assert "| toy | small | 2 |" in summary
    assert "fifo-elastic (per-slot reservation)" in summary
    assert "## cpsat cost by size" in summary
    assert "None: every run ended with a plan that passes `check`." in summary
    for chart in ("by_family.png", "scaling.png", "anytime.png"):
        assert (out / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", chart

    # A rerun of one instance replaces its rows and keeps the others.
    before = {r.key: r.pwo for r in rows}
    rerun = CliRunner().invoke(
        app, ["bench", str(smoke_suite), "--out", str(out), "--only", "mixed", "--no-charts"]
    )
    assert rerun.exit_code == 0, rerun.output
    after = bench.read_csv(out / "results.csv")
    assert {r.key: r.pwo for r in after} == before
    assert [r.instance for r in after] == [r.instance for r in rows]
    summary = (out / "summary.md").read_text()

    # The summary can be rewritten from the CSV alone.
    (out / "summary.md").unlink()
    again = CliRunner().invoke(
        app, ["bench", str(smoke_suite), "--out", str(out), "--summary-only", "--no-charts"]
    )
    assert again.exit_code == 0, again.output
    tables = summary.split("## Gains over fifo")[1]
    assert (out / "summary.md").read_text().split("## Gains over fifo")[1] == tables


def test_same_seed_same_plans(tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]) -> None:
    path = write_yaml(tmp_path / "mixed.yaml", spec_of("mixed"))
    for solver in ("fifo", "greedy", "cpsat"):
        plans = []
        for k in range(2):
            task = bench_task(path, solver, tmp_path / str(k))
            bench.solve_task(task)
            data = json.loads(Path(task.plan_path).read_text())
            plans.append({key: data[key] for key in ("assignments", "inference", "unscheduled")})
        assert plans[0] == plans[1], solver


def test_guards_kill_slow_runs_and_catch_memory(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    generate_file("enterprise", "medium", 0, path)  # cpsat cannot prove it optimal: runs 30 s
    slow = bench_task(path, "cpsat", tmp_path, time_limit=30.0, guard_seconds=0.3)
    hungry = bench_task(path, "greedy", tmp_path, memory_mib=1)
    fine = bench_task(path, "fifo", tmp_path, memory_mib=2048)
    done: list[str] = []
    results = bench.run_tasks(
        [slow, hungry, fine], jobs=2, on_done=lambda t, r: done.append(t.solver)
    )
    assert results[slow]["status"] == "timeout"
    assert "time guard" in results[slow]["error"]
    assert results[hungry]["status"] == "memory"
    assert results[fine]["status"] == "heuristic" and results[fine]["valid"] == "yes"
    assert sorted(done) == ["cpsat", "fifo", "greedy"]


def test_guard_seconds() -> None:
    assert bench.guard_seconds("cpsat", 60, workers=1, margin=30) == 210  # 3x: deterministic time
    assert bench.guard_seconds("cpsat", 60, workers=2, margin=30) == 90
    assert bench.guard_seconds("greedy", 60, workers=1, margin=30) == 30


def test_bad_suites_are_rejected_clearly(tmp_path: Path) -> None:
    suite = write_yaml(
        tmp_path / "bad.yaml",
        {
            "solvers": ["fifo", "magic"],
            "instances": [
                "missing-*.yaml",
                {"generate": "enterprise", "size": "huge"},
                {"nonsense": 1},
            ],
        },
    )
    with pytest.raises(InputError) as info:
        bench.load_suite(suite)
    text = "\n".join(info.value.problems)
    assert "unknown solver(s) ['magic']" in text
    assert "instances[1].size: unknown size 'huge'" in text
    assert "instances[2]: expected a file path" in text

    result = CliRunner().invoke(app, ["bench", str(suite), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "error: " in result.output and "magic" in result.output

    empty = write_yaml(tmp_path / "empty.yaml", {"instances": ["none-*.yaml"]})
    result = CliRunner().invoke(app, ["bench", str(empty), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no file matches 'none-*.yaml'" in result.output


def hand_row(instance: str, solver: str, util: float, pwo: float, **fields: Any) -> bench.SolverRow:
    """A good row of a made-up run: a bounded solver (cpsat) with a 10% gap."""
    bounded = SOLVERS[solver].reports_bound if solver in SOLVERS else False
    values: dict[str, Any] = {
        "instance": instance,
        "family": "fam",
        "size": "small",
        "solver": solver,
        "utilization": util,
        "pwo": pwo,
        "status": "feasible" if bounded else "heuristic",
        "valid": "yes",
        "gap": 0.1 if bounded else None,
        "jobs": 1,
        "slots": 1,
        "nodes": 1,
        "gpus": 1,
        "time_limit": 1.0,
        "wall_seconds": 1.0,
        "workers": 1,
    }
    values.update(fields)
    return bench.SolverRow(**values)


HAND = [  # (instance, solver, utilization, pwo)
    ("a", "fifo", 0.50, 100),
    ("a", "fifo-elastic", 0.55, 110),
    ("a", "greedy", 0.70, 200),
    ("a", "cpsat", 0.80, 250),
    ("b", "fifo", 0.40, 100),
    ("b", "fifo-elastic", 0.40, 100),
    ("b", "greedy", 0.60, 150),
    ("b", "cpsat", 0.60, 180),
]


def test_summary_gains_and_ablation_by_hand() -> None:
    """Two instances; gains are per instance, then median / max."""
    text = bench.summarize([hand_row(*r) for r in HAND])
    # utilization pp: cpsat-fifo 30 and 20 -> median 25, max 30; greedy-fifo 20, 20; cpsat-greedy 10, 0
    assert "| fam | small | 2 | +25.0 / +30.0 | +20.0 / +20.0 | +5.0 / +10.0 |" in text
    # pwo %: cpsat/fifo 150, 80 -> 115 / 150; greedy/fifo 100, 50; cpsat/greedy 25, 20; gap 10%
    assert "| fam | small | 2 | +115 / +150 | +75 / +100 | +22 / +25 | 10.0 / 10.0 |" in text
    assert "| fam | fifo-elastic (per-slot reservation) | 2 | 47.5% | +2.5 | 1.05x | +5% |" in text
    assert "| fam | cpsat (optimization) | 2 | 70.0% | +5.0 | 2.15x | +22% |" in text


def test_a_new_solver_is_treated_by_its_flags_not_its_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A solver registered with cpsat's flags under another name gets cpsat's columns, gap,
    cost table and charts; one with fifo's flags (and fifo's own baseline flag cleared) becomes
    the reference of every `vs` column."""
    monkeypatch.setitem(SOLVERS, "oracle9", replace(SOLVERS["cpsat"], name="oracle9"))
    renamed = {"cpsat": "oracle9"}
    rows = [hand_row(i, renamed.get(s, s), u, p) for i, s, u, p in HAND]
    text = bench.summarize(rows)
    expected = bench.summarize([hand_row(*r) for r in HAND]).replace("cpsat", "oracle9")
    assert text.split("## Gains")[1] == expected.split("## Gains")[1]
    assert "| fam | small | 2 | +115 / +150 | +75 / +100 | +22 / +25 | 10.0 / 10.0 |" in text
    assert "oracle9 vs fifo" in text and "oracle9 gap" in text and "## oracle9 cost by size" in text
    charts = bench.write_charts(rows, tmp_path)
    assert [c.name for c in charts] == ["by_family.png", "scaling.png"]

    monkeypatch.setitem(SOLVERS, "fifo", replace(SOLVERS["fifo"], baseline=False))
    monkeypatch.setitem(SOLVERS, "fcfs", replace(SOLVERS["fifo"], name="fcfs", baseline=True))
    rows = [hand_row(i, {"fifo": "fcfs"}.get(s, s), u, p) for i, s, u, p in HAND]
    text = bench.summarize(rows)
    assert "## Gains over fcfs" in text and "| cpsat vs fcfs | greedy vs fcfs |" in text
    assert "| fam | fcfs (static peak reservation, arrival order) | 2 | 45.0% |  | 1.00x |" in text


def test_a_suite_names_its_own_baseline(tmp_path: Path) -> None:
    """`baseline` in a suite file: the reference of the `vs` columns and the ablation's first
    step; it must be a known solver."""
    suite = write_yaml(
        tmp_path / "suite.yaml",
        {"baseline": "fifo-elastic", "instances": ["x.yaml"], "solvers": ["fifo", "greedy"]},
    )
    text = bench.summarize([hand_row(*r) for r in HAND], suite=bench.load_suite(suite))
    assert "## Gains over fifo-elastic" in text
    assert "| cpsat vs fifo-elastic | greedy vs fifo-elastic | cpsat vs greedy |" in text
    assert "| fam | fifo-elastic (per-slot reservation) | 2 | 47.5% |  | 1.00x |  |" in text
    write_yaml(suite, {"baseline": "magic", "instances": ["x.yaml"]})
    with pytest.raises(InputError, match=r"baseline: unknown solver\(s\) \['magic'\]"):
        bench.load_suite(suite)


def test_rows_are_typed_and_the_csv_columns_unchanged(tmp_path: Path) -> None:
    """results.csv keeps its columns, in order; a row reads back as the same typed row."""
    assert [
        *("instance", "family", "size", "seed", "jobs", "slots", "nodes", "gpus", "solver"),
        *("time_limit", "workers", "status", "valid", "violations", "pwo", "utilization"),
        *("completed", "scheduled", "reserved_idle_gpu_hours", "bound", "gap", "wall_seconds"),
        *("build_seconds", "peak_mib", "plan", "error"),
    ] == bench.FIELDS
    rows = [hand_row(*r, seed=3, violations=0, plan="p.json") for r in HAND]
    rows.append(bench.SolverRow(**{**vars(rows[0]), "status": "timeout", "valid": "", "pwo": None}))
    bench.write_csv(rows, tmp_path / "results.csv")
    with (tmp_path / "results.csv").open() as fh:
        assert fh.readline().strip() == ",".join(bench.FIELDS)
        assert fh.readline().strip().startswith("a,fam,small,3,1,1,1,1,fifo,1.0,1,heuristic,yes,0,")
    again = bench.read_csv(tmp_path / "results.csv")
    assert again == rows
    assert not again[-1].ok and again[0].ok
    with pytest.raises(FrozenInstanceError):
        again[0].pwo = 1.0  # type: ignore[misc]


def test_bench_writes_outside_the_committed_results_by_default(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_yaml(tmp_path / "benchmarks" / "inst" / "tiny.yaml", spec_of("tiny"))
    suite = write_yaml(
        tmp_path / "benchmarks" / "mine.yaml",
        {"solvers": ["fifo"], "instances": ["inst/tiny.yaml"]},
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["bench", str(suite), "--no-charts"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "bench-results" / "mine" / "results.csv").is_file()
    assert not (tmp_path / "benchmarks" / "results").exists()


@pytest.mark.parametrize(
    "header", ["a,b\n1,2\n", "instance,policy,world,seed\nx,fifo,synthetic,0\n"]
)
def test_only_refuses_a_results_file_of_another_kind(
    smoke_suite: Path, tmp_path: Path, header: str
) -> None:
    """`--only` merges into results.csv: one that is not a solver suite's (here columns a,b,
    then a closed-loop suite's) is refused with exit 2 before any run, and left as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text(header)
    result = CliRunner().invoke(
        app, ["bench", str(smoke_suite), "--out", str(out), "--only", "mixed", "--no-charts"]
    )
    assert result.exit_code == 2
    assert "is not a solver suite's results.csv (no column" in result.output
    assert "Traceback" not in result.output
    assert (out / "results.csv").read_text() == header
    assert sorted(p.name for p in out.iterdir()) == ["results.csv"]
