"""`check` reads a job's blackouts on its own (rule 2): a run that overlaps one is refused, a run
that only touches its edge is not, and a placed job stays where it is placed."""

from __future__ import annotations

from typing import Any

import horizon_opt as ho
from horizon_opt.model.load import parse_spec

SPEC: dict[str, Any] = {
    "name": "blackout",
    "horizon": {"slots": 8},
    "pools": [{"name": "a", "gpu_type": "h100", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "j", "priority": 1, "gpus": 8, "duration": 2, "blackout": [{"start": 1, "end": 3}]}
    ],
}


def moved(plan: ho.Plan, start: int) -> ho.Plan:
    run = plan.assignments[0].model_copy(update={"start": start, "end": start + 2})
    return plan.model_copy(update={"assignments": [run]})


def test_a_run_through_a_blackout_breaks_rule_2() -> None:
    """Blackout [1, 3): a run over [0, 2) or [2, 4) crosses it; one over [3, 5) starts as it ends."""
    inst = ho.compile_instance(parse_spec(SPEC))
    plan = ho.solve(inst, "fifo")
    assert plan.assignments[0].start == 3 and ho.check(inst, plan) == []
    for start in (0, 2):
        assert [str(v) for v in ho.check(inst, moved(plan, start))] == [
            f"rule 2: job 'j': runs [{start}, {start + 2}) through its blackout [1, 3)"
        ]
    # Touching a blackout's edge is allowed: [3, 5) starts as [1, 3) ends (above), and [0, 2)
    # ends as a blackout [2, 3) starts.
    edge = {**SPEC, "jobs": [{**SPEC["jobs"][0], "blackout": [{"start": 2, "end": 3}]}]}
    inst = ho.compile_instance(parse_spec(edge))
    assert ho.check(inst, moved(plan, 0)) == []


def test_a_placed_job_is_not_checked_against_its_blackouts() -> None:
    """A placed run is kept as it is (FORMAT.md, `blackout`): a job placed over [0, 2) with a
    blackout [1, 3) is valid where it stands."""
    placed = {"pool": "a", "start": 0, "gpus": {"a-0": list(range(8))}}
    spec = {**SPEC, "jobs": [{**SPEC["jobs"][0], "placed": placed}]}
    inst = ho.compile_instance(parse_spec(spec))
    plan = ho.solve(inst, "greedy")
    assert [(a.start, a.end) for a in plan.assignments] == [(0, 2)]
    assert ho.check(inst, plan) == []
