"""Between its plans, a re-planning policy that starts early (by default, those that plan on
learned run times) starts a job its plan starts later as soon as it fits on GPUs no other
planned start needs over its planned run (`_Replayer.start_early`).

One 4-GPU node, 6 hourly slots, no inference. `a` (priority 2, 4 GPUs, limit 4 slots, really 1)
and `b` (priority 1, 4 GPUs, 2 slots) are released at 0. The plan at 0 runs `a` 0-4, then `b`
4-6; the next full plan is due at 6, and the fill at `a`'s early end (slot 1) holds `b`'s
promised start. With early starts `b` starts at 1, on the node `a` left idle (1-4, before any
other planned start); without, it waits for slot 4, 3 slots beside the idle node: starved.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import build
from test_loop_mechanisms import FAST, audit_holds
from typer.testing import CliRunner

from horizon_opt.cli import app
from horizon_opt.simulate import World, policy, replay
from horizon_opt.simulate.world_file import write_world

SPEC = {
    "name": "early",
    "horizon": {"slots": 6, "slot_minutes": 60},
    "pools": [{"name": "p", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "a", "priority": 2, "gpus": 4, "duration": 4},
        {"id": "b", "priority": 1, "gpus": 4, "duration": 2},
    ],
}
WORLD = World({"a": 1 / 4, "b": 1.0}, frozenset(), ())


@pytest.mark.parametrize("name", ["greedy", "cpsat"])
@pytest.mark.parametrize(("early", "b_starts"), [(True, 1), (False, 4)])
def test_a_later_start_that_fits_now_starts_now(name: str, early: bool, b_starts: int) -> None:
    inst = build(SPEC)
    r = replay(inst, WORLD, replace(policy(name, 6, 6), start_early=early), FAST)
    assert r.audit is not None
    runs = {run.job: run.start for run in r.audit.runs}
    assert runs == {"a": 0, "b": b_starts}
    assert r.starved == 0 if early else r.starved == 1
    audit_holds(inst, r)


@pytest.mark.parametrize(
    ("name", "early"),
    [
        ("cpsat-expect@event", True),
        ("greedy-risk", True),
        ("cpsat-pack", True),
        ("cpsat@event", False),  # plans on limits: measured, early starts cost them pwo
        ("cpsat", False),
        ("backfill-expect", False),  # online: it plans at every event itself
        ("cpsat-open", False),
    ],
)
def test_who_starts_early_by_default(name: str, early: bool) -> None:
    assert policy(name, 6, 6, slot_minutes=60).start_early is early


@pytest.mark.parametrize(("flag", "b_starts"), [("--early-starts", 1), ("--no-early-starts", 4)])
def test_simulate_turns_early_starts_on_or_off(tmp_path: Path, flag: str, b_starts: int) -> None:
    """The same replay through `simulate --actual`: greedy every 6 h (off by default) with
    `--early-starts` starts `b` at 1; `--no-early-starts` keeps it at 4."""
    src = tmp_path / "early.yaml"
    src.write_text(yaml.safe_dump(SPEC))
    write_world(tmp_path / "world.yaml", build(SPEC), WORLD)
    out = tmp_path / "out"
    args = ["simulate", str(src), "-o", str(out), "--actual", str(tmp_path / "world.yaml")]
    args += ["--policy", "greedy", "--replan-every", "6h", "--freeze", "6h", flag]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    on = "on" if flag == "--early-starts" else "off"
    assert f"early starts {on}" in (out / "summary.md").read_text()
    ran = json.loads((out / "greedy.ran.json").read_text())
    assert {a["job"]: a["start"] for a in ran["assignments"]} == {"a": 0, "b": b_starts}
