"""The compaction passes (solvers/compact.py) on hand-built placements: one node of 8 GPUs, no
inference, 8 slots; each case says where each job must end up and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance, Promise
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.inference import elastic_layout, plan_layout
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.compact import fill_gaps, left_shift


def _instance(jobs: list[dict[str, Any]], now: int = 0) -> Instance:
    return compile_instance(
        parse_spec(
            {
                "name": "shift",
                "horizon": {"slots": 8},
                "now": now,
                "pools": [{"name": "p", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8}],
                "jobs": jobs,
            }
        )
    )


def _starts(inst: Instance, placements: list[Placement]) -> dict[str, int]:
    shifted = left_shift(inst, placements, elastic_layout(inst))
    return {inst.jobs[p.job].id: p.start for p in shifted}


def test_a_job_moves_to_the_first_window_that_holds_it() -> None:
    # a (8 GPUs, 2 slots) at 3 could run from 0: it moves to 0; b (4 GPUs) at 5 then starts at
    # 2, right after a (a holds every GPU before).
    inst = _instance(
        [
            {"id": "a", "priority": 1, "gpus": 8, "duration": 2},
            {"id": "b", "priority": 1, "gpus": 4, "duration": 2},
        ]
    )
    assert _starts(inst, [Placement(0, 0, 3, (0,)), Placement(1, 0, 5, (0,))]) == {"a": 0, "b": 2}


def test_a_successor_follows_its_predecessor_forward_and_no_further() -> None:
    # b runs after a: a moves from 4 to 1 (its release), b from 7 to 3 (a's new end), not before.
    inst = _instance(
        [
            {"id": "a", "priority": 1, "gpus": 8, "duration": 2, "release": 1},
            {"id": "b", "priority": 1, "gpus": 2, "duration": 1, "after": ["a"]},
        ]
    )
    assert _starts(inst, [Placement(0, 0, 4, (0,)), Placement(1, 0, 7, (0,))]) == {"a": 1, "b": 3}


def test_nothing_moves_before_a_job_that_holds_the_gpus_or_before_now() -> None:
    # c holds all 8 GPUs over [0, 3); d (8 GPUs) at 6 moves to 3, not into c; with now = 4 (c
    # running, placed) d moves to 4 only.
    jobs = [
        {"id": "c", "priority": 1, "gpus": 8, "duration": 3},
        {"id": "d", "priority": 1, "gpus": 8, "duration": 2},
    ]
    inst = _instance(jobs)
    assert _starts(inst, [Placement(0, 0, 0, (0,)), Placement(1, 0, 6, (0,))]) == {"c": 0, "d": 3}
    running = {
        **jobs[0],
        "duration": 6,
        "placed": {"pool": "p", "start": 0, "gpus": {"p-0": list(range(8))}},
    }
    inst = _instance([running, jobs[1]], now=4)
    assert _starts(inst, [Placement(0, 0, 0, (0,)), Placement(1, 0, 6, (0,))]) == {"c": 0, "d": 6}


def test_a_promised_start_stays_where_it_was_promised() -> None:
    inst = _instance([{"id": "e", "priority": 1, "gpus": 8, "duration": 2}])
    promised = replace(inst, jobs=(replace(inst.jobs[0], promise=Promise(0, 5, 0.5)),))
    assert _starts(promised, [Placement(0, 0, 5, (0,))]) == {"e": 5}
    assert _starts(inst, [Placement(0, 0, 5, (0,))]) == {"e": 0}


def test_a_start_promised_by_a_slot_moves_earlier_and_keeps_its_promise() -> None:
    # e holds a `by` promise (a start by 5 keeps it): from 5 it moves to 0, still kept.
    inst = _instance([{"id": "e", "priority": 1, "gpus": 8, "duration": 2}])
    promise = Promise(-1, 5, 0.5, by=True, by_pool=((0, 5),))
    promised = replace(inst, jobs=(replace(inst.jobs[0], promise=promise),))
    assert _starts(promised, [Placement(0, 0, 5, (0,))]) == {"e": 0}
    assert promise.kept(0, 0)


def test_cpsat_plans_leave_no_job_later_than_it_needs_to_be(
    instance_of: Callable[[str], Instance],
) -> None:
    """Every cpsat plan of the test instances: no job could start earlier on its pool."""
    for name in ("tiny", "mixed"):
        inst = instance_of(name)
        plan = solve(inst, "cpsat", SolveOptions(time_limit=2, workers=1))
        placements = [
            Placement(
                inst.job_index[a.job],
                inst.pool_index[a.pool],
                a.start,
                tuple(inst.node_index[n] for n in a.gpus),
            )
            for a in plan.assignments
        ]
        layout = plan_layout(inst, plan)
        assert layout is not None
        assert {p.job: p.start for p in left_shift(inst, placements, layout)} == {
            p.job: p.start for p in placements
        }


def test_a_left_out_job_goes_where_it_fits_and_ends_on_time() -> None:
    # a (8 GPUs) holds slots 0-1. Left out: b (4 GPUs, 2 slots, due at 4) fits at 2 and ends
    # on time; c (8 GPUs, 7 slots) would end at 9, past the horizon (8); d after c waits for it.
    inst = _instance(
        [
            {"id": "a", "priority": 1, "gpus": 8, "duration": 2},
            {"id": "b", "priority": 1, "gpus": 4, "duration": 2, "deadline": 4},
            {"id": "c", "priority": 5, "gpus": 8, "duration": 7},
            {"id": "d", "priority": 5, "gpus": 1, "duration": 1, "after": ["c"]},
        ]
    )
    filled = fill_gaps(inst, [Placement(0, 0, 0, (0,))], elastic_layout(inst))
    assert {inst.jobs[p.job].id: p.start for p in filled} == {"a": 0, "b": 2}


def _two_pools(jobs: list[dict[str, Any]]) -> Instance:
    pools = [
        {"name": "fast", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
        {"name": "slow", "gpu_type": "L40S", "nodes": 1, "gpus_per_node": 8},
    ]
    spec = {"name": "pools", "horizon": {"slots": 8}, "pools": pools, "jobs": jobs}
    return compile_instance(parse_spec(spec))


def test_with_any_pool_a_job_takes_an_idle_slower_pool_where_it_ends_no_later() -> None:
    # Three 8-GPU jobs on `fast`, one after another: a [0, 2), b [2, 4), c [4, 6). b runs 4
    # slots on `slow`: from 0 it ends at 4, no later than now, so it moves there; c then moves
    # up on `fast` to 2 (its own pool, its earliest start). Behind a, d would take 5 slots on
    # `slow` and end at 5 > its 4 on `fast`: it stays.
    jobs = [
        {"id": k, "priority": 1, "gpus": 8, "duration": {"fast": 2, "slow": slow}}
        for k, slow in (("a", 4), ("b", 4), ("c", 5))
    ]
    inst = _two_pools(jobs)
    placements = [Placement(j, 0, 2 * j, (0,)) for j in range(3)]
    layout = elastic_layout(inst)
    moved = left_shift(inst, placements, layout, any_pool=True)
    assert {inst.jobs[p.job].id: (p.pool, p.start) for p in moved} == {
        "a": (0, 0),
        "b": (1, 0),
        "c": (0, 2),
    }
    assert left_shift(inst, placements, layout) == placements  # on its own pool: nothing moves
    d = _two_pools(
        [jobs[0], {"id": "d", "priority": 1, "gpus": 8, "duration": {"fast": 2, "slow": 5}}]
    )
    stays = [Placement(0, 0, 0, (0,)), Placement(1, 0, 2, (0,))]
    assert left_shift(d, stays, elastic_layout(d), any_pool=True) == stays
