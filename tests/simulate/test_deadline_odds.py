"""Deadline odds (`simulate.deadline_odds`): a job with a deadline, planned on a learned run time,
is worth the quantile's share of its value for a start whose learned run ends in time and its
whole value for a start whose limit does, per pool (`Promise.by_pool`); each case's arithmetic
is in its docstring."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import build
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.model.instance import Instance, Promise
from horizon_opt.plans.check import check
from horizon_opt.relaxation.pool_model import PoolLimits, pool_bound
from horizon_opt.simulate.deadline_odds import with_deadline_odds
from horizon_opt.simulate.runtimes import RunTimes
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)

# Two one-node pools of 8 GPUs, 4 slots of 60 minutes. `a` (8 GPUs; 2 slots on fast, 3 on slow;
# value 1 * 8 * 2 = 16, due by 4) and `b` (fast only, 2 slots, value 16, due by 2): both end on
# time only with b on fast at 0, and a on slow at 0 or on fast at 2.
TWO_POOLS: dict[str, Any] = {
    "name": "two-pools",
    "horizon": {"slots": 4, "slot_minutes": 60},
    "pools": [
        {"name": "fast", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8},
        {"name": "slow", "gpu_type": "y", "nodes": 1, "gpus_per_node": 8},
    ],
    "jobs": [
        {"id": "a", "priority": 1, "gpus": 8, "duration": {"fast": 2, "slow": 3}, "deadline": 4},
        {"id": "b", "priority": 1, "gpus": 8, "duration": {"fast": 2}, "deadline": 2},
    ],
}


def with_fast_only_promise(bonus: float) -> Instance:
    """a holds a `by` promise that only a start on fast at 0 keeps."""
    inst = build(TWO_POOLS)
    fast = inst.pool_index["fast"]
    promise = Promise(-1, 0, bonus, by=True, by_pool=((fast, 0),))
    jobs = (replace(inst.jobs[0], promise=promise), inst.jobs[1])
    return replace(inst, jobs=jobs)


def test_a_per_pool_promise_is_kept_only_on_its_pools() -> None:
    promise = Promise(-1, 3, 1.0, by=True, by_pool=((0, 1), (1, 3)))
    assert [promise.kept(0, s) for s in (0, 1, 2)] == [True, True, False]
    assert [promise.kept(1, 3), promise.kept(2, 0)] == [True, False]


@pytest.mark.parametrize(
    ("bonus", "pwo", "bound", "a_on"), [(5.0, 32.0, 32.0, None), (20.0, 16.0, 36.0, "fast")]
)
def test_cpsat_and_the_pool_bound_read_the_per_pool_latest_start(
    bonus: float, pwo: float, bound: float, a_on: str | None
) -> None:
    """Keeping a's promise needs a on fast at 0, which leaves b late: 16 + bonus against 32 for
    both on time. Bonus 5: both on time, pwo 32 (a start on slow at 0 would keep a promise on
    any pool: 37); bonus 20: a on fast at 0, pwo 16, with its bonus 36."""
    inst = with_fast_only_promise(bonus)
    plan = ho.solve(inst, "cpsat", FAST)
    assert check(inst, plan) == []
    assert plan.metrics.pwo == pytest.approx(pwo)
    kept = [a.pool for a in plan.assignments if a.job == "a" and a.start == 0 and a.pool == "fast"]
    assert (kept[0] if kept else None) == a_on
    found = pool_bound(inst, PoolLimits(seconds=2.0, deterministic=1.0))
    assert found.optimal and found.value == pytest.approx(bound)


def learned(ratios: list[float]) -> RunTimes:
    runtimes = RunTimes()
    for r in ratios:
        runtimes.observe(round(r * 100), 100)
    return runtimes


# Ten ended runs: 7 of them ran at most half their limit, all of them at most their limit.
RATIOS = [0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.5, 0.8, 0.9, 1.0]


def test_odds_halve_a_deadline_job_and_promise_the_rest_where_its_limit_ends_in_time() -> None:
    """Planned on halves of the limits (a: 1 slot on fast, 2 on slow; a and b each worth 8 so
    planned), a is worth 4 on time, and 4 more started by 4 - 2 = 2 on fast or 4 - 3 = 1 on
    slow, where its limit ends in time; so is b, by 2 - 2 = 0 on fast. At now = 1 b's limit
    can no longer end in time: from 1 it has 1 slot of its 2-slot limit, and 7 of the 10 runs
    ran at most half their limit: 8 * 0.7 = 5.6 for a start at 1, a promise of 1.6 more."""
    written = build(TWO_POOLS)
    halved = {
        **TWO_POOLS,
        "jobs": [
            {**TWO_POOLS["jobs"][0], "duration": {"fast": 1, "slow": 2}},
            {**TWO_POOLS["jobs"][1], "duration": {"fast": 1}},
        ],
    }
    told = build(halved)
    fast, slow = written.pool_index["fast"], written.pool_index["slow"]
    runtimes = learned(RATIOS)
    a, b = with_deadline_odds(told, written, runtimes).jobs
    assert (a.value, b.value) == (4.0, 4.0)
    assert a.promise == Promise(-1, 2, 4.0, by=True, by_pool=((fast, 2), (slow, 1)))
    assert b.promise == Promise(-1, 0, 4.0, by=True, by_pool=((fast, 0),))
    _, late_b = with_deadline_odds(replace(told, now=1), written, runtimes).jobs
    assert late_b.value == 4.0
    assert late_b.promise == Promise(-1, 1, pytest.approx(1.6), by=True, by_pool=((fast, 1),))


def test_no_odds_before_runs_have_ended() -> None:
    """With fewer than 10 ended runs the plans are on limits: nothing changes."""
    told = build(TWO_POOLS)
    assert with_deadline_odds(told, told, learned(RATIOS[:9])) is told


def test_cli_simulate_plans_with_deadline_odds(tmp_path: Path) -> None:
    """Deadline odds (the default, named here) reach the -expect re-plans (each plan the replay
    runs is checked) and the summary says so; two one-node pools, so b's limit ends by its
    deadline only from 0."""
    path = tmp_path / "two-pools.yaml"
    path.write_text(yaml.safe_dump(TWO_POOLS, sort_keys=False))
    out = tmp_path / "out"
    args = ["simulate", str(path), "-o", str(out), "--policy", "cpsat-expect@event"]
    args += ["--deadline-odds", "--no-charts", "-t", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "deadline odds" in (out / "summary.md").read_text()
