"""Reclaim in the replay: running borrowers give a team's quota back when its work arrives."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.model.load import parse_spec
from horizon_opt.simulate import Policy, Replay, World, policy, replay
from horizon_opt.simulate.quota_reclaim import Holding, reclaim_victims

# One 8-GPU node, 10 slots; red and blue are each entitled to 4 GPUs. Blue's b1 (8 GPUs, 6 slots)
# is alone at slot 0 and starts, borrowing red's 4. Red's r1 (4 GPUs, 2 slots) arrives at slot 2:
# red holds 0 + 4 <= 4, no GPU is free and blue holds 4 above its quota, so b1 is preempted at 2
# (8 GPUs x 2 slots lost), r1 runs 2..4 and b1 again 4..10. Without quotas b1 runs 0..6, r1 6..8.
RECLAIM: dict[str, Any] = {
    "name": "reclaim",
    "horizon": {"slots": 10},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8}],
    "teams": [{"name": "red", "quota": {"p": 4}}, {"name": "blue", "quota": {"p": 4}}],
    "jobs": [
        {"id": "b1", "priority": 1, "gpus": 8, "duration": 6, "team": "blue"},
        {"id": "r1", "priority": 1, "gpus": 4, "duration": 2, "release": 2, "team": "red"},
    ],
}
EXACT = World({"b1": 1.0, "r1": 1.0}, frozenset(), ())
OPTIONS = ho.SolveOptions(time_limit=5.0, workers=1, seed=0)


def named(name: str) -> Policy:
    return policy(name, 2, 0, slot_minutes=60)


def build(data: dict[str, Any]) -> ho.Instance:
    return ho.compile_instance(parse_spec(data))


def ran(r: Replay) -> list[tuple[str, int, int, str]]:
    """What really ran in a replay: (job, start, end, outcome) per run."""
    assert r.audit is not None
    return [(run.job, run.start, run.end, run.outcome) for run in r.audit.runs]


@pytest.mark.parametrize("name", ["backfill", "cpsat@event"])
def test_a_running_borrower_is_preempted_when_the_owner_arrives(name: str) -> None:
    inst = build(RECLAIM)
    r = replay(inst, EXACT, named(name), OPTIONS)
    assert (r.preemptions, r.reclaims, r.reclaimed_by_team) == (1, 1, {"blue": 1})
    assert r.lost_gpu_hours == 8 * 2 * inst.hours_per_slot
    assert r.completed == 2
    assert sorted(ran(r)) == [
        ("b1", 0, 2, "preempted"),
        ("b1", 4, 10, "completed"),
        ("r1", 2, 4, "completed"),
    ]


def test_without_quotas_nobody_is_preempted() -> None:
    data = copy.deepcopy(RECLAIM)
    for team in data["teams"]:
        team.pop("quota")
    inst = build(data)
    r = replay(inst, EXACT, named("backfill"), OPTIONS)
    assert (r.preemptions, r.reclaims) == (0, 0)
    assert sorted(ran(r)) == [("b1", 0, 6, "completed"), ("r1", 6, 8, "completed")]


def victims(data: dict[str, Any], free: int) -> list[str]:
    """reclaim_victims at slot 2 with every blue job running from 0 and red's r1 waiting."""
    inst = build(data)
    running = {j.index: Holding(0, 0) for j in inst.jobs if j.id.startswith("b")}
    waiting = [inst.job_index["r1"]]
    out = reclaim_victims(inst, running, waiting, np.array([free], dtype=np.int64), 2)
    return [inst.jobs[j].id for j in out]


def test_reclaim_takes_the_least_valuable_borrower_and_no_more() -> None:
    # Blue's b1 (8 GPUs) and b2 (2 GPUs, worth less) on a 12-GPU pool with 2 free: red's r1 needs
    # 4, blue holds 10 - 4 = 6 above its quota. Preempting b2 frees 2 more: 4, enough.
    data = copy.deepcopy(RECLAIM)
    data["pools"][0]["gpus_per_node"] = 12
    data["jobs"].append({"id": "b2", "priority": 1, "gpus": 2, "duration": 6, "team": "blue"})
    assert victims(data, free=2) == ["b2"]
    assert victims(data, free=4) == []  # r1 fits as it is: nobody is preempted


def test_no_reclaim_beyond_the_quota_or_when_borrowing_cannot_cover_it() -> None:
    over = copy.deepcopy(RECLAIM)
    over["jobs"][1]["gpus"] = 6  # red would hold 6 > its quota of 4: it must wait
    assert victims(over, free=0) == []
    short = copy.deepcopy(RECLAIM)
    short["teams"][1]["quota"]["p"] = 7  # blue borrows 1: 0 free + 1 < the 4 r1 needs
    short["teams"][0]["quota"]["p"] = 8
    assert victims(short, free=0) == []


def test_simulate_reports_reclaims_by_team(tmp_path: Path) -> None:
    path = tmp_path / "reclaim.yaml"
    path.write_text(yaml.safe_dump(RECLAIM))
    out = tmp_path / "out"
    args = ["simulate", str(path), "-o", str(out), "-t", "1", "--policy", "backfill"]
    args += ["--no-charts", "--world", "synthetic", "--noise", "early=0,fail=0,demand=0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    actual = ho.load_instance(out / "backfill.actual.yaml")
    assert ho.check(actual, ho.Plan.read(out / "backfill.ran.json")) == []
    summary = (out / "summary.md").read_text()
    assert "| 1, 1 for quota (" in summary
    assert "| backfill | blue | " in summary and "| 1 |" in summary


def test_the_team_furthest_above_its_quota_per_weight_gives_back_first() -> None:
    # One 16-GPU node; red is entitled to 8, blue and green to 4 each, green with weight 4. Blue's
    # b1 and green's g1 (6 GPUs each, g1 worth less) run: each team holds 2 above its quota, 2 per
    # unit of weight for blue, 0.5 for green. Red's r1 (8 GPUs) finds 4 free: one of them must go,
    # and it is blue's b1, though g1 is worth less. With equal weights g1 goes.
    data: dict[str, Any] = {
        "name": "weights",
        "horizon": {"slots": 10},
        "pools": [{"name": "p", "gpu_type": "x", "nodes": 1, "gpus_per_node": 16}],
        "teams": [
            {"name": "red", "quota": {"p": 8}},
            {"name": "blue", "quota": {"p": 4}},
            {"name": "green", "quota": {"p": 4}, "weight": 4},
        ],
        "jobs": [
            {"id": "b1", "priority": 2, "gpus": 6, "duration": 6, "team": "blue"},
            {"id": "g1", "priority": 1, "gpus": 6, "duration": 6, "team": "green"},
            {"id": "r1", "priority": 1, "gpus": 8, "duration": 2, "release": 2, "team": "red"},
        ],
    }
    inst = build(data)
    running = {inst.job_index[k]: Holding(0, 0) for k in ("b1", "g1")}
    waiting = [inst.job_index["r1"]]
    (gone,) = reclaim_victims(inst, running, waiting, np.array([4], dtype=np.int64), 2)
    assert inst.jobs[gone].id == "b1"
    data["teams"][2]["weight"] = 1
    inst = build(data)
    (gone,) = reclaim_victims(inst, running, waiting, np.array([4], dtype=np.int64), 2)
    assert inst.jobs[gone].id == "g1"
