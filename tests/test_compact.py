"""The compaction passes (solvers/compact.py) on hand-built placements: one node of 8 GPUs (two
pools of one node for the serial schedule), no inference, 8 slots; each case says where each
job must end up and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from horizon_opt.compiler import compile_instance
from horizon_opt.inference import elastic_layout, plan_layout
from horizon_opt.instance import Instance, Promise
from horizon_opt.io import parse_spec
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.compact import left_shift, relist


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


def _two_pools(jobs: list[dict[str, Any]]) -> Instance:
    pools = [
        {"name": "p", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
        {"name": "q", "gpu_type": "A100", "nodes": 1, "gpus_per_node": 8},
    ]
    return compile_instance(
        parse_spec({"name": "relist", "horizon": {"slots": 8}, "pools": pools, "jobs": jobs})
    )


def _relisted(inst: Instance, placements: list[Placement]) -> dict[str, tuple[str, int]]:
    out = relist(inst, placements, elastic_layout(inst))
    return {inst.jobs[p.job].id: (inst.pools[p.pool].name, p.start) for p in out}


def test_the_serial_schedule_moves_a_job_to_the_pool_where_it_ends_first() -> None:
    # a (8 GPUs, 2 slots on p) at 0, x (8 GPUs, 2 slots on p, 3 on q) after it at 2 on p: ends
    # 2 + 4. Placed again in start order, x ends first on q, from 0 (3 < 4): ends 2 + 3. The
    # left-shift keeps x's pool, where a holds every GPU before 2.
    inst = _two_pools(
        [
            {"id": "a", "priority": 1, "gpus": 8, "duration": 2, "pools": ["p"]},
            {"id": "x", "priority": 1, "gpus": 8, "duration": {"p": 2, "q": 3}},
        ]
    )
    placements = [Placement(0, 0, 0, (0,)), Placement(1, 0, 2, (0,))]
    assert _relisted(inst, placements) == {"a": ("p", 0), "x": ("q", 0)}
    assert _starts(inst, placements) == {"a": 0, "x": 2}


def test_the_serial_schedule_is_kept_only_when_every_job_still_earns() -> None:
    # y (deadline 3) at 0 on q for 3 slots, x at 3 on p: both on time (ends 3 + 5). In start
    # order y is placed first: on p it ends at 2, earlier; x (8 GPUs, 2 on p, 3 on q) then ends
    # on q at 3 or on p at 4: q, 3. Ends 2 + 3 < 3 + 5, every job on time: kept. With x due
    # at 2 (planned 0-2 on p, y 0-3 on q), y first on p leaves x no end by 2: the plan stays.
    jobs = [
        {"id": "y", "priority": 1, "gpus": 8, "duration": {"p": 2, "q": 3}, "deadline": 3},
        {"id": "x", "priority": 1, "gpus": 8, "duration": {"p": 2, "q": 3}},
    ]
    inst = _two_pools(jobs)
    assert _relisted(inst, [Placement(0, 1, 0, (1,)), Placement(1, 0, 3, (0,))]) == {
        "y": ("p", 0),
        "x": ("q", 0),
    }
    late = _two_pools([jobs[0], {**jobs[1], "deadline": 2}])
    unchanged = [Placement(0, 1, 0, (1,)), Placement(1, 0, 0, (0,))]
    assert _relisted(late, unchanged) == {"y": ("q", 0), "x": ("p", 0)}
