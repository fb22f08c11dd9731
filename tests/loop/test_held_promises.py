"""Promises that hold: a start people were told (`by` promises, `replan.with_held_promises`)
earns its bonus in every later plan that starts the job by then, on any pool; each case's
arithmetic is in its docstring."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import build
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.loop.replan import with_held_promises
from horizon_opt.model.instance import Instance, Promise
from horizon_opt.plans.check import check
from horizon_opt.relaxation import solve_lp
from horizon_opt.relaxation.pool_model import PoolLimits, pool_bound
from horizon_opt.simulate import World, policy, replay
from horizon_opt.simulate.policy import learning_settings
from horizon_opt.simulate.window import Window
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)

# One 8-GPU node, 3 slots of 60 minutes: `told` (8 GPUs, 2 slots, value 1 * 8 * 2 = 16) and
# `urgent` (priority 2: 32); only one of them can end by slot 3.
EITHER: dict[str, Any] = {
    "name": "either",
    "horizon": {"slots": 3, "slot_minutes": 60},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "told", "priority": 1, "gpus": 8, "duration": 2},
        {"id": "urgent", "priority": 2, "gpus": 8, "duration": 2},
    ],
}


def promised(weight: float, by: int = 1) -> Instance:
    return with_held_promises(build(EITHER), {"told": by}, weight)


def test_kept_by_any_start_no_later() -> None:
    by = Promise(-1, 3, 1.0, by=True)
    exact = Promise(0, 3, 1.0)
    assert [by.kept(p, s) for p, s in [(0, 2), (1, 3), (0, 4)]] == [True, True, False]
    assert [exact.kept(p, s) for p, s in [(0, 2), (0, 3), (1, 3)]] == [False, True, False]


@pytest.mark.parametrize(("weight", "runs"), [(0.5, "urgent"), (3.0, "told")])
def test_cpsat_keeps_a_promise_worth_more_than_what_it_displaces(weight: float, runs: str) -> None:
    """Keeping told's promise (start by 1) earns 16 + 16 * weight; urgent earns 32. Weight 0.5:
    24 < 32, urgent runs; weight 3: 64 > 32, told runs. pwo counts no bonus."""
    inst = promised(weight)
    plan = ho.solve(inst, "cpsat", FAST)
    assert check(inst, plan) == []
    on_time = [a.job for a in plan.assignments if a.end <= 3]
    assert on_time == [runs]
    assert plan.metrics.pwo == pytest.approx(16.0 if runs == "told" else 32.0)


@pytest.mark.parametrize(("by", "bound"), [(0, 16.0 + 48.0), (1, 16.0 + 48.0)])
def test_the_pool_bound_counts_a_keepable_promise(by: int, bound: float) -> None:
    """told kept by 0 or 1 earns 16 + 48 (weight 3), more than urgent's 32, and only one of the
    two fits: the bound is 64."""
    found = pool_bound(promised(3.0, by), PoolLimits(seconds=2.0, deterministic=1.0))
    assert found.optimal and found.value == pytest.approx(bound)


def test_the_lp_bound_counts_a_keepable_promise() -> None:
    """The LP may run told (64 with its bonus) and urgent in fractions: at least 64."""
    assert solve_lp(promised(3.0), time.perf_counter() + 1.0).lp.bound >= 64.0 - 1e-6


def test_a_passed_or_started_promise_is_dropped() -> None:
    inst = build(EITHER)
    later = replace(inst, now=2)
    assert with_held_promises(later, {"told": 1}, 1.0).jobs[0].promise is None
    assert with_held_promises(inst, {"told": 1}, 1.0).jobs[0].promise == Promise(
        -1, 1, 16.0, by=True
    )


# One 8-GPU node, 8 slots of 60 minutes: `prep` (limit 3), then `train` (2 slots, value 16),
# promised at slot 3 by the first plan (3 hours ahead); at slot 1 `rush` arrives (priority 2,
# value 32, due by slot 5): it fits on time only at 3-5, where train was promised.
RUSH: dict[str, Any] = {
    "name": "rush",
    "horizon": {"slots": 8, "slot_minutes": 60},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "prep", "priority": 1, "gpus": 8, "duration": 3},
        {"id": "train", "priority": 1, "gpus": 8, "duration": 2, "after": ["prep"]},
        {"id": "rush", "priority": 2, "gpus": 8, "duration": 2, "release": 1, "deadline": 5},
    ],
}


@pytest.mark.parametrize(
    ("keep", "train", "promised", "error"), [(0.0, 5, 2, 1.0), (3.0, 3, 1, 0.0)]
)
def test_a_replay_holds_what_it_promised(
    keep: float, train: int, promised: int, error: float
) -> None:
    """cpsat@event at rush's arrival: without a held promise rush takes 3-5 (32) and train
    moves to 5 (its promise 2 h off; rush's, made at 1 for 3, kept: median 1 h); with train's
    promise worth 3 * 16, keeping it (16 + 48) beats rush (32): train starts at 3 as promised
    and rush, late, is never planned (so never promised)."""
    inst = build(RUSH)
    world = World({j.id: 1.0 for j in inst.jobs}, frozenset(), ())
    p = replace(policy("cpsat@event", 2, 2, slot_minutes=60), keep_promises=keep)
    r = replay(inst, world, p, FAST, window=Window(0, inst.slots))  # every promise counts
    assert r.audit is not None
    assert {run.job: run.start for run in r.audit.runs}["train"] == train
    assert (r.promised, r.promise_error_hours) == (promised, error)


def test_online_policies_hold_no_promise() -> None:
    assert policy("backfill", 2, 2, keep_promises=1.0).keep_promises == 0.0
    assert policy("cpsat@event", 2, 2, slot_minutes=60, keep_promises=1.0).keep_promises == 1.0


@pytest.mark.parametrize(
    ("name", "keep", "odds"),
    [
        ("cpsat-expect@event", 0.5, True),
        ("cpsat-risk", 0.5, True),
        ("cpsat@event", 0.0, False),
        ("cpsat-pack@event", 0.0, False),
        ("backfill-expect", 0.0, False),
    ],
)
def test_learned_re_plans_hold_promises_and_read_odds_by_default(
    name: str, keep: float, odds: bool
) -> None:
    """Unless told otherwise, -expect and -risk re-plans hold promises at 0.5 and value
    deadlines by their odds; the others are unchanged; a weight given applies as given."""
    chosen = policy(name, 2, 2)
    assert (chosen.keep_promises, chosen.deadline_odds) == (keep, odds)
    told = policy(name, 2, 2, keep_promises=0.0, deadline_odds=False)
    assert (told.keep_promises, told.deadline_odds) == (0.0, False)


def test_cli_simulate_keeps_promises(tmp_path: Path) -> None:
    """RUSH from the command line, in a world without noise: train starts at 3 as promised."""
    path = tmp_path / "rush.yaml"
    path.write_text(yaml.safe_dump(RUSH, sort_keys=False))
    out = tmp_path / "out"
    args = [
        "simulate",
        str(path),
        "-o",
        str(out),
        "-t",
        "1",
        "--world",
        "synthetic",
        "--noise",
        "none",
    ]
    args += ["--policy", "cpsat@event", "--keep-promises", "3", "--no-charts"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ran = json.loads((out / "cpsat@event.ran.json").read_text())
    assert {a["job"]: a["start"] for a in ran["assignments"]}["train"] == 3
    assert "promises held at 3" in (out / "summary.md").read_text()


def test_learning_settings_name_what_the_re_plans_do() -> None:
    on_limits = [policy("backfill", 2, 2), policy("cpsat@event", 2, 2)]
    assert learning_settings(on_limits, None) == ""
    learned = [*on_limits, policy("cpsat-expect@event", 2, 2)]
    expected = ", promises held at 0.5 in -expect and -risk re-plans, deadline odds"
    assert learning_settings(learned, None) == expected
    held = [policy("cpsat@event", 2, 2, keep_promises=0.1)]
    assert learning_settings(held, 0.1) == ", promises held at 0.1"


def test_cli_simulate_says_what_learned_re_plans_do(tmp_path: Path) -> None:
    """The heading says what the -expect re-plans hold by default, and nothing once both are
    turned off."""
    path = tmp_path / "rush.yaml"
    path.write_text(yaml.safe_dump(RUSH, sort_keys=False))
    base = ["simulate", str(path), "-t", "1", "--policy", "backfill,cpsat-expect@event"]
    base += ["--no-charts", "--world", "synthetic", "--noise", "none"]
    default = CliRunner().invoke(app, [*base, "-o", str(tmp_path / "a")])
    assert default.exit_code == 0, default.output
    heading = (tmp_path / "a" / "summary.md").read_text()
    assert "promises held at 0.5 in -expect and -risk re-plans, deadline odds" in heading
    off = ["--keep-promises", "0", "--no-deadline-odds", "-o", str(tmp_path / "b")]
    result = CliRunner().invoke(app, [*base, *off])
    assert result.exit_code == 0, result.output
    heading = (tmp_path / "b" / "summary.md").read_text()
    assert "promises held" not in heading and "deadline odds" not in heading


def test_cli_simulate_refuses_a_weight_out_of_range(tmp_path: Path) -> None:
    path = tmp_path / "rush.yaml"
    path.write_text(yaml.safe_dump(RUSH, sort_keys=False))
    out = tmp_path / "out"
    args = ["simulate", str(path), "-o", str(out), "--keep-promises", "-1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--keep-promises" in result.output and "Traceback" not in result.output
    assert not out.exists()
