"""`horizon-opt bench` on closed-loop suites (a `loop` section): parse errors that name the
field, rows that agree with the replays they describe, guarded runs, the summary's arithmetic,
and the Ray engine giving the local rows.

The suites replay conftest's TINY and MIXED with fifo, backfill, greedy and greedy-open: no
anytime solver, so each run takes a fraction of a second.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt import bench
from horizon_opt.bench import pool
from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance
from horizon_opt.simulate import policy, simulate
from horizon_opt.simulate.world import Noise
from horizon_opt.simulate.worlds import world_for

POLICIES = ["fifo", "backfill", "greedy", "greedy-open"]
TIMINGS = {"wall_seconds", "peak_mib", "solver_seconds", "max_solver_seconds"}  # vary by run


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def loop_suite(tmp_path: Path, spec_of: Callable[[str], dict[str, Any]], **loop: Any) -> Path:
    """TINY and MIXED (family toy), the policies above, synthetic worlds 0 and 1."""
    write_yaml(tmp_path / "inst" / "tiny.yaml", spec_of("tiny"))
    write_yaml(tmp_path / "inst" / "mixed.yaml", spec_of("mixed"))
    section: dict[str, Any] = {
        "policies": POLICIES,
        "worlds": ["synthetic"],
        "seeds": [0, 1],
        "replan_every": 120,  # minutes: 4 slots of TINY, 2 of MIXED
        "freeze": "1h",
        "noise": "early=0.5,fail=0.2,demand=0.2",
    }
    section.update(loop)
    data = {
        "name": "loop",
        "time_limit": 1,
        "cpsat": {"workers": 1, "seed": 0},
        "guard": {"memory_mib": 4096, "margin_seconds": 60},
        "instances": [
            {"file": "inst/tiny.yaml", "family": "toy", "size": "small"},
            {"file": "inst/mixed.yaml", "family": "toy", "size": "small"},
        ],
        "loop": section,
    }
    return write_yaml(tmp_path / "suite.yaml", data)


def run_bench(suite: Path, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["bench", str(suite), "--out", str(out), *args])
    return result.exit_code, result.output


# -- the suite file ----------------------------------------------------------------------------


def test_loop_suite_errors_name_the_field(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]
) -> None:
    suite = loop_suite(
        tmp_path,
        spec_of,
        policies=["backfill", "magic", "backfill"],
        worlds=["synthetic", "moon"],
        replan_every="soon",
        freeze=-5,
        noise="early=2",
        top="cpsat",
        base="greedy",
    )
    data = yaml.safe_load(suite.read_text())
    data["solvers"] = ["fifo"]
    write_yaml(suite, data)
    with pytest.raises(InputError) as info:
        bench.load_suite(suite)
    text = "\n".join(info.value.problems)
    assert "solvers: a suite with `loop` replays loop.policies; leave solvers out" in text
    assert "loop.policies: unknown policy 'magic'" in text
    assert "loop.policies: named more than once: ['backfill']" in text
    assert "loop.worlds: unknown world(s) ['moon']; choose from cluster, trace, synthetic" in text
    assert "loop.replan_every: expected minutes (more than 0) or a duration" in text
    assert "loop.freeze: expected minutes (0 or more) or a duration" in text
    assert "loop.noise: early must be from 0 to 1, got 2.0" in text
    assert "loop.top: 'cpsat' is not one of loop.policies" in text
    assert "loop.base: 'greedy' is not one of loop.policies" in text

    del data["solvers"]
    write_yaml(suite, data | {"loop": {"policies": ["fifo"], "seeds": "someday", "oops": 1}})
    result = CliRunner().invoke(app, ["bench", str(suite), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "loop.oops: unknown field" in result.output
    assert (
        "loop.seeds: expected a list of world seeds or `instance`, got 'someday'" in result.output
    )


def test_loop_guard_counts_the_anytime_plans(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]
) -> None:
    """MIXED, 8 one-hour slots, a re-plan every 2 h: cpsat plans 4 times, cpsat-open once,
    greedy and backfill use no time limit; one worker budgets up to 3x the limit."""
    suite = bench.load_suite(
        loop_suite(tmp_path, spec_of, policies=["backfill", "greedy", "cpsat", "cpsat-open"])
    )
    instances = bench.prepare(suite, tmp_path / "out", only="mixed")
    tasks = bench.make_loop_tasks(suite, instances)
    assert [(t.instance, t.world, t.seed) for t in tasks] == [
        ("mixed", "synthetic", 0),
        ("mixed", "synthetic", 1),
    ]
    assert tasks[0].plans == 5 and tasks[0].expected_seconds == 5.0
    assert tasks[0].guard_seconds == 5 * 1.0 * 3 + 60
    assert [p.every for p in tasks[0].policies] == [None, 2, 2, None]

    paired = bench.load_suite(loop_suite(tmp_path, spec_of, seeds="instance"))
    with pytest.raises(InputError, match=r"loop\.seeds: instance: no seed in the name of tiny"):
        bench.make_loop_tasks(paired, bench.prepare(paired, tmp_path / "out"))


# -- running a suite ---------------------------------------------------------------------------


def test_tiny_loop_suite_runs_and_its_rows_agree_with_the_replays(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]
) -> None:
    suite = loop_suite(tmp_path, spec_of)
    out = tmp_path / "out"
    code, output = run_bench(suite, out, "--jobs", "2")
    assert code == 0, output
    assert "## The ladder: share of greedy-open's realized pwo" in output

    rows = [r for r in bench.read_csv(out / "results.csv") if isinstance(r, bench.LoopRow)]
    assert [r.key for r in rows] == [
        (name, "synthetic", seed, p)
        for name in ("tiny", "mixed")
        for seed in (0, 1)
        for p in POLICIES
    ]
    for name in ("tiny", "mixed"):
        inst = ho.load_instance(tmp_path / "inst" / f"{name}.yaml")
        every = 4 if name == "tiny" else 2
        hold = 2 if name == "tiny" else 1
        for seed in (0, 1):
            world = world_for(inst, "synthetic", seed, Noise(early=0.5, fail=0.2, demand=0.2))
            policies = [policy(p, every, hold) for p in POLICIES]
            options = ho.SolveOptions(time_limit=1.0, workers=1, seed=0)
            replays = {r.policy: r for r in simulate(inst, policies, world, options)}
            mine = [r for r in rows if r.instance == name and r.seed == seed]
            for row in mine:
                replay = replays[row.policy]
                assert (row.family, row.size, row.status, row.valid) == (
                    "toy",
                    "small",
                    "replayed",
                    "yes",
                )
                assert row.realized_pwo == replay.realized_pwo
                assert row.preemptions == replay.preemptions
                assert row.slo_short_share == replay.slo_short_share
                assert row.wall_seconds is not None and row.wall_seconds > 0
                assert row.peak_mib is not None and row.peak_mib > 0
            assert len({r.wall_seconds for r in mine}) == 1  # one run, all its policies

    summary = (out / "summary.md").read_text()
    assert "| policy | toy / synthetic |" in summary
    assert "| toy | synthetic | greedy-open | 4 |" in summary
    assert "None: every run replayed every policy" in summary
    assert (out / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "plans").exists() and "plans" not in output.splitlines()[-1]

    # A rerun of one instance replaces its rows and keeps the others; the summary can be
    # rewritten from the CSV alone.
    code, output = run_bench(suite, out, "--only", "mixed", "--no-charts")
    assert code == 0, output
    again = [r for r in bench.read_csv(out / "results.csv") if isinstance(r, bench.LoopRow)]
    assert [r.realized_pwo for r in again] == [r.realized_pwo for r in rows]
    (out / "summary.md").unlink()
    code, output = run_bench(suite, out, "--summary-only", "--no-charts")
    assert code == 0, output
    tables = without_timings(summary.split("## The ladder")[1])
    assert without_timings((out / "summary.md").read_text().split("## The ladder")[1]) == tables


def without_timings(markdown: str) -> str:
    """The text with every table column about seconds blanked: a rerun measures its own."""
    out, timed = [], set()
    for line in markdown.splitlines():
        cells = line.split(" | ")
        if line.startswith("| ") and not line.startswith("| ---"):
            if any(c.strip("| ").startswith("plan s") for c in cells):
                timed = {k for k, c in enumerate(cells) if c.strip("| ").startswith("plan s")}
            cells = ["" if k in timed else c for k, c in enumerate(cells)]
        elif not line.startswith("| "):
            timed = set()
        out.append(" | ".join(cells))
    return "\n".join(out)


def misbehave(task: bench.AnyTask, conn: Connection, instance: Instance | None = None) -> None:
    """A run's entry point (module level: the runs import it by name): world seed 0's run never
    ends, until its guard kills it; seed 1's kills its own process."""
    if isinstance(task, bench.LoopTask) and task.seed == 0:
        time.sleep(600)
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_failed_loop_run_marks_every_policy_row(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "worker_main", misbehave)
    suite = loop_suite(tmp_path, spec_of)
    data = yaml.safe_load(suite.read_text())
    # no anytime plan: the guard is the margin alone, long enough for seed 1's worker to start
    # and kill itself on a loaded machine
    data["guard"]["margin_seconds"] = 20
    write_yaml(suite, data)
    out = tmp_path / "out"
    code, output = run_bench(suite, out, "--only", "tiny", "--no-charts")
    assert code == 1, output
    rows = [r for r in bench.read_csv(out / "results.csv") if isinstance(r, bench.LoopRow)]
    assert [(r.seed, r.policy) for r in rows] == [(s, p) for s in (0, 1) for p in POLICIES]
    failures = {
        0: ("timeout", "killed after 20 s (time guard)"),
        1: ("crashed", "worker exited with code -9 (killed: memory?)"),
    }
    for row in rows:
        assert (row.status, row.error) == failures[row.seed]
        assert row.valid == "" and row.realized_pwo is None
    summary = (out / "summary.md").read_text()
    for seed, (status, error) in failures.items():
        line = f"| tiny | synthetic | {seed} | {status} | - | {error} |"
        assert summary.count(line) == 1, summary  # the run, once


# -- the summary's arithmetic --------------------------------------------------------------------


def test_loop_summary_by_hand() -> None:
    """Three runs of family fam in world synthetic; the top rung is cpsat-oracle. Ratios are per
    run, then the median; the failed run (seed 2's cpsat) leaves out that run's cpsat only."""

    def row(seed: int, name: str, pwo: float, status: str = "replayed") -> bench.LoopRow:
        return bench.LoopRow(
            instance=f"fam-medium-s{seed}",
            family="fam",
            size="medium",
            world="synthetic",
            seed=seed,
            policy=name,
            time_limit=5.0,
            workers=1,
            status=status,
            valid="yes" if status == "replayed" else "",
            realized_pwo=pwo,
            window_pwo=pwo / 2,
            slo_short_share=0.01 * seed,
            preemptions=seed,
            lost_gpu_hours=10.0 * seed,
            solver_seconds=2.0 * seed,
            max_solver_seconds=1.0 + seed,
            error="" if status == "replayed" else "boom",
            jobs=1,
            slots=1,
            nodes=1,
            gpus=1,
        )

    rows = [
        row(0, "backfill", 75),
        row(0, "cpsat", 90),
        row(0, "cpsat-oracle", 100),
        row(1, "backfill", 50),
        row(1, "cpsat", 60),
        row(1, "cpsat-oracle", 200),
        row(2, "backfill", 90),
        row(2, "cpsat", 0, status="error"),
        row(2, "cpsat-oracle", 100),
    ]
    text = bench.summarize_loop(rows)
    # shares of the top: backfill 0.75, 0.25, 0.9 -> 0.75; cpsat 0.9, 0.3 -> 0.6
    assert "| policy | fam / synthetic |" in text
    assert "| backfill | 75.0% |" in text and "| cpsat | 60.0% |" in text
    assert "| cpsat-oracle | 100.0% |" in text
    # cpsat: realized 90, 60 -> 75; vs backfill 90/75, 60/50 -> 1.2, 1.2 -> +20%, in the window
    # (half of each) too: worst +20%, above in 2 of 2; SLO short 0, 1% -> 0.50%; preemptions
    # 0, 1 -> 0.5; GPU-h 0, 10 -> 5; plan s 0, 2 -> 1, max 2
    assert (
        "| fam | synthetic | cpsat | 2 | 75 | +20.0% | +20.0% / +20.0%, 2 of 2 | 60.0% | 0.50% | "
        "0.5 | 5 | - | - | - | - | 1.0 / 2.0 |" in text
    )
    # cpsat-oracle: 100, 200, 100 -> 100; vs backfill 1.33, 4, 1.11 -> +33.3%, worst +11.1%
    assert (
        "| fam | synthetic | cpsat-oracle | 3 | 100 | +33.3% | +33.3% / +11.1%, 3 of 3 | 100.0% | "
        "1.00% | 1 |" in text
    )
    assert "| fam | synthetic | backfill | 3 | 75 | +0.0% | +0.0% / +0.0%, 0 of 3 |" in text
    assert "| fam-medium-s2 | synthetic | 2 | error | - | boom |" in text
    shares = bench.loop_summary.top_shares(rows, "backfill")  # another top: the median ratio
    assert shares[("fam", "synthetic")]["cpsat-oracle"] == pytest.approx(100 / 75)


def test_loop_base_is_the_suites_choice_else_the_registrys_flag(
    tmp_path: Path, spec_of: Callable[[str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loop.base` names the policy of the `vs` column; without it, the solver the registry
    flags `loop_baseline` (backfill), whatever its name."""
    pwo = dict(zip(POLICIES, (100.0, 200.0, 300.0, 400.0), strict=True))
    rows = [
        bench.LoopRow(
            **dict.fromkeys(("instance", "family", "size", "world"), "x"),
            **dict.fromkeys(("jobs", "slots", "nodes", "gpus", "seed", "workers"), 1),
            policy=p,
            time_limit=1.0,
            status="replayed",
            valid="yes",
            realized_pwo=value,
            max_solver_seconds=0.0,
        )
        for p, value in pwo.items()
    ]
    chosen = bench.load_suite(loop_suite(tmp_path, spec_of, base="greedy"))
    text = bench.summarize_loop(rows, suite=chosen)
    assert "| realized pwo | vs greedy |" in text
    assert "| x | x | backfill | 1 | 200 | -33.3% |" in text
    assert "| realized pwo | vs backfill |" in bench.summarize_loop(rows)
    monkeypatch.setitem(
        ho.SOLVERS, "backfill", replace(ho.SOLVERS["backfill"], loop_baseline=False)
    )
    monkeypatch.setitem(ho.SOLVERS, "fifo", replace(ho.SOLVERS["fifo"], loop_baseline=True))
    assert "| x | x | backfill | 1 | 200 | +100.0% |" in bench.summarize_loop(rows)


# -- the Ray engine --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray() -> Iterator[ModuleType]:
    """One local Ray instance (2 CPUs) for the module."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


def test_ray_engine_gives_the_local_loop_rows(
    ray: ModuleType, tmp_path: Path, spec_of: Callable[[str], dict[str, Any]]
) -> None:
    suite = loop_suite(tmp_path, spec_of, seeds=[3])
    runs = {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        code, output = run_bench(suite, out, "--engine", engine, "--no-charts")
        assert code == 0, output
        rows = bench.read_csv(out / "results.csv")
        assert all(r.ok for r in rows)
        runs[engine] = [{k: v for k, v in vars(r).items() if k not in TIMINGS} for r in rows]
    assert runs["ray"] == runs["local"]
    assert len(runs["ray"]) == 2 * len(POLICIES)
