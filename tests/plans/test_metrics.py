"""Metrics of hand-written plans for TINY, computed by hand from FORMAT.md's definitions.

TINY (conftest.py): 4 slots of 30 minutes, so h = 0.5 hours per slot.
  nodes: a-0 (4 GPUs), a-1 (4 GPUs, down in slot 3), b-0 (2 GPUs)
  chat: 2 GPUs per replica, demand [1, 0.5, 2, 1] (sum 4.5), req [2, 1, 3, 2] (sum 8)
  train: training,   priority 2, 4 GPUs, a: 2 slots        -> work 4 * 2 * 0.5 = 4, value 8
  ev:    evaluation, priority 1, 2 GPUs, 1 slot, release 1 -> work 2 * 1 * 0.5 = 1, value 1
  quant: quantization, priority 3, 2 GPUs, a: 1 / b: 2 slots, deadline 2
         -> work at its fastest pool (a) = 2 * 1 * 0.5 = 1, value 3
"""

from __future__ import annotations

from typing import Any

import pytest

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.check import check
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Assignment, Plan
from horizon_opt.solvers import solve

Data = dict[str, Any]

# available = (a-0: 4 GPUs x 4 slots + a-1: 4 x 3 slots + b-0: 2 x 4 slots) * h = 36 * 0.5 = 18
AVAILABLE = 18.0
# inference = sum(demand) * gpus_per_replica * h = 4.5 * 2 * 0.5
INFERENCE = 4.5


def late_plan(data: Data) -> Plan:
    """The hand plan with quant moved to slots 1-3 on b: valid, but it ends after its deadline."""
    quant = next(a for a in data["assignments"] if a["job"] == "quant")
    quant.update(start=1, end=3)
    return Plan.parse(data)


def test_metrics_with_a_late_job(tiny: Instance, tiny_plan_dict: Data) -> None:
    plan = late_plan(tiny_plan_dict)
    assert check(tiny, plan) == []  # a deadline is not a validity rule
    m = evaluate(tiny, plan)
    assert m.available_gpu_hours == pytest.approx(AVAILABLE)
    # batch: every assigned job, late or not, at its actual pool:
    #   train 4 * 2 * 0.5 = 4, quant on b 2 * 2 * 0.5 = 2, ev 2 * 1 * 0.5 = 1 -> 7
    assert m.batch_gpu_hours == pytest.approx(7.0)
    assert m.inference_gpu_hours == pytest.approx(INFERENCE)
    # reserved idle: (planned 2+1+3+2 = 8 replicas - 4.5 forecast) * 2 GPUs * 0.5 h = 3.5
    assert m.reserved_idle_gpu_hours == pytest.approx(3.5)
    # utilization: (7 + 4.5) / 18
    assert m.utilization == pytest.approx(11.5 / 18)
    # pwo: train 8 + ev 1; quant ends at 3 > deadline 2 and earns nothing
    assert m.pwo == pytest.approx(9.0)
    assert m.completed == 2
    assert m.completed_by_kind == {
        "training": 1,
        "batch_inference": 0,
        "quantization": 0,
        "evaluation": 1,
        "other": 0,
    }
    # mean wait over on-time jobs: train (0 - 0) * 0.5 = 0, ev (2 - 1) * 0.5 = 0.5 -> 0.25
    assert m.mean_wait_hours == pytest.approx(0.25)
    assert (m.scheduled, m.late) == (3, 1)


def test_metrics_all_on_time(tiny: Instance, tiny_plan: Plan) -> None:
    m = evaluate(tiny, tiny_plan)
    # quant on b at 0-2 ends exactly at its deadline: on time. Its value is measured at its
    # fastest pool (a, 1 slot) although it ran on b: 3 * (2 * 1 * 0.5) = 3.
    assert m.pwo == pytest.approx(8 + 1 + 3)
    assert m.batch_gpu_hours == pytest.approx(7.0)
    assert m.completed == 3
    assert m.completed_by_kind["quantization"] == 1
    # waits 0 (train), 0.5 (ev), 0 (quant)
    assert m.mean_wait_hours == pytest.approx(0.5 / 3)
    assert (m.scheduled, m.late) == (3, 0)


def test_metrics_of_an_empty_batch_plan(tiny: Instance, tiny_plan_dict: Data) -> None:
    # No job runs; inference holds exactly req.
    tiny_plan_dict["unscheduled"] = [
        {"job": a["job"], "reason": "test"} for a in tiny_plan_dict["assignments"]
    ]
    tiny_plan_dict["assignments"] = []
    plan = Plan.parse(tiny_plan_dict)
    assert check(tiny, plan) == []
    m = evaluate(tiny, plan)
    assert m.batch_gpu_hours == 0
    assert m.pwo == 0
    assert m.completed == 0
    assert m.mean_wait_hours == 0
    assert m.utilization == pytest.approx(INFERENCE / AVAILABLE)  # 0.25
    assert m.reserved_idle_gpu_hours == pytest.approx(3.5)


def test_reserved_idle_counts_the_planned_replicas(tiny: Instance, tiny_plan_dict: Data) -> None:
    # One more replica than req on a-0 in slot 1, where a-0 has room: planned 9 replicas, idle (9 - 4.5) * 2 * 0.5 = 4.5. Utilization is unchanged:
    # inference is measured by the forecast, not by the reservation.
    tiny_plan_dict["inference"][1]["replicas"] = 2
    plan = Plan.parse(tiny_plan_dict)
    assert check(tiny, plan) == []
    m = evaluate(tiny, plan)
    assert m.reserved_idle_gpu_hours == pytest.approx(4.5)
    assert m.inference_gpu_hours == pytest.approx(INFERENCE)
    assert m.utilization == pytest.approx(11.5 / 18)


def test_hour_slots(compile_spec: Any, tiny_spec: Data, tiny_plan: Plan) -> None:
    # The same plan with 60-minute slots doubles every GPU-hour figure; ratios stay.
    tiny_spec["horizon"]["slot_minutes"] = 60
    m = evaluate(compile_spec(tiny_spec), tiny_plan)
    assert m.available_gpu_hours == pytest.approx(36)
    assert m.batch_gpu_hours == pytest.approx(14)
    assert m.inference_gpu_hours == pytest.approx(9)
    assert m.reserved_idle_gpu_hours == pytest.approx(7)
    assert m.utilization == pytest.approx(11.5 / 18)
    assert m.pwo == pytest.approx(2 * 8 + 2 + 3 * 2)
    assert m.mean_wait_hours == pytest.approx(1 / 3)


def test_dump_has_every_metric(tiny: Instance, tiny_plan: Plan) -> None:
    d = evaluate(tiny, tiny_plan).model_dump()
    for key in (
        "available_gpu_hours",
        "batch_gpu_hours",
        "inference_gpu_hours",
        "reserved_idle_gpu_hours",
        "utilization",
        "pwo",
        "completed",
        "completed_by_kind",
        "mean_wait_hours",
    ):
        assert key in d


@pytest.mark.parametrize("solver", ["fifo", "fifo-elastic", "greedy"])
def test_solver_plans_carry_their_metrics(any_instance: Instance, solver: str) -> None:
    plan = solve(any_instance, solver)
    m = evaluate(any_instance, plan)
    assert plan.metrics == m
    assert plan.objective == pytest.approx(m.pwo)
    assert (plan.status, plan.bound, plan.gap) == ("heuristic", None, None)


def test_a_placed_job_waits_from_its_release_as_written() -> None:
    """FORMAT.md: mean_wait_hours is start - release over on-time assigned jobs, placed ones
    included; a free job's wait counts from max(release, now). Running r: released at 0, started
    at 2 (waited 2 h); free f: released at 1, now is 3, planned at 4 (waited 1 h from now)."""
    inst = compile_instance(
        parse_spec(
            {
                "name": "waits",
                "horizon": {"slots": 8},
                "now": 3,
                "pools": [{"name": "p", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8}],
                "jobs": [
                    {
                        "id": "r",
                        "priority": 1,
                        "gpus": 4,
                        "duration": 3,
                        "placed": {"pool": "p", "start": 2, "gpus": {"p-0": [0, 1, 2, 3]}},
                    },
                    {"id": "f", "priority": 1, "gpus": 4, "duration": 2, "release": 1},
                ],
            }
        )
    )
    plan = Plan(
        instance="waits",
        solver="hand",
        status="heuristic",
        objective=0.0,
        assignments=[
            Assignment(job="r", pool="p", start=2, end=5, gpus={"p-0": [0, 1, 2, 3]}),
            Assignment(job="f", pool="p", start=4, end=6, gpus={"p-0": [4, 5, 6, 7]}),
        ],
    )
    assert evaluate(inst, plan).mean_wait_hours == pytest.approx((2 + 1) / 2)
