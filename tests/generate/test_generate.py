"""The instance generator and the hand-written demo instance.

Generated instances must be deterministic per (family, size, seed), always valid (they compile
without an InstanceError), and match the family's description: sizes from the table, batch load
about twice what inference leaves free, dependencies of the right kinds. The demo must load and
the baselines' plans on it must pass the checker.
"""

from __future__ import annotations

import collections
import copy
from pathlib import Path
from typing import Any

import pytest

import horizon_opt as ho
from horizon_opt.generate import FAMILIES, SIZES, generate, write_instance
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec

DEMO = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"


def load_ratio(inst: Instance) -> float:
    """Batch GPU-hours (each job at its fastest pool) / GPU-hours left by the inference reservation."""
    h = inst.hours_per_slot
    available = float(inst.capacity.sum()) * h
    reserved = sum(float(s.req.sum()) * s.gpus_per_replica * h for s in inst.services)
    return sum(j.work_hours for j in inst.jobs) / (available - reserved)


def assert_valid_plans(inst: Instance) -> None:
    for solver in ("fifo", "greedy"):
        plan = ho.solve(inst, solver)
        assert ho.check(inst, plan) == [], solver
        assert len(plan.assignments) + len(plan.unscheduled) == len(inst.jobs)
        assert plan.metrics.pwo > 0, solver


# -- determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["small", "medium"])
def test_same_seed_gives_identical_dict(size: str) -> None:
    first = generate("enterprise", size, 7)
    keep = copy.deepcopy(first)
    assert generate("enterprise", size, 7) == keep
    assert first == keep  # generating again does not share or mutate earlier results


def test_different_seeds_give_different_instances() -> None:
    a, b = generate("enterprise", "small", 0), generate("enterprise", "small", 1)
    assert a["name"] == "enterprise-small-s0" and b["name"] == "enterprise-small-s1"
    assert a["jobs"] != b["jobs"]
    assert a["services"] != b["services"]


def test_unknown_family_or_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown family"):
        generate("nope", "small", 0)
    with pytest.raises(ValueError, match="unknown size"):
        generate("enterprise", "huge", 0)
    assert "enterprise" in FAMILIES


# -- validity and shape ------------------------------------------------------------------------


def check_shape(data: dict[str, Any], inst: Instance, size: str) -> None:
    table = SIZES[size]
    assert inst.slots == table.slots and inst.slot_minutes == table.slot_minutes
    assert int(inst.node_gpus.sum()) == table.gpus
    assert len(inst.jobs) == table.jobs
    assert len(inst.services) == table.services
    assert all(s.headroom == pytest.approx(0.1) for s in inst.services)
    assert all(isinstance(s["demand"], list) for s in data["services"])
    assert load_ratio(inst) == pytest.approx(2.0, rel=0.1)
    kinds = collections.Counter(j.kind for j in inst.jobs)
    assert set(kinds) == {"training", "batch_inference", "quantization", "evaluation"}
    assert {1, 8, 16} <= {j.gpus for j in inst.jobs if j.kind == "training"}
    for job in inst.jobs:
        assert 1 <= job.priority <= 10
        assert len(job.after) <= 1
        for p in job.after:
            parent = inst.jobs[p].kind
            if job.kind == "quantization":
                assert parent == "training"
            else:
                assert job.kind == "evaluation" and parent in ("training", "quantization")
    with_deadline = sum(j.deadline is not None for j in inst.jobs)
    assert with_deadline == pytest.approx(len(inst.jobs) / 3, rel=0.1)
    roots = [j for j in inst.jobs if not j.after]
    assert max(j.release for j in roots) < 0.6 * inst.slots
    # Inference peaks at about half the GPUs (forecast), its trough is well below the peak.
    peak = sum(float(s.demand.max()) * s.gpus_per_replica for s in inst.services)
    assert 0.4 * table.gpus <= peak <= 0.55 * table.gpus
    for s in inst.services:
        assert float(s.demand.min()) <= 0.4 * float(s.demand.max())


@pytest.mark.parametrize("size", ["small", "medium"])
def test_small_sizes_write_load_and_validate(size: str, tmp_path: Path) -> None:
    data = generate("enterprise", size, 0)
    path = tmp_path / f"{size}.yaml"
    write_instance(data, path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind
    inst = ho.load_instance(path)
    assert inst.name == f"enterprise-{size}-s0"
    check_shape(data, inst, size)


@pytest.mark.parametrize("size", ["large", "xl"])
def test_large_sizes_compile(size: str) -> None:
    data = generate("enterprise", size, 0)
    inst = compile_instance(parse_spec(data))
    check_shape(data, inst, size)
    multi_pool = [j for j in inst.jobs if len(j.durations) > 1]
    assert multi_pool and len(multi_pool) < len(inst.jobs)  # some jobs restricted to fewer pools
    for job in multi_pool:
        by_name = {inst.pools[p].name: d for p, d in job.durations.items()}
        if "h100" in by_name and "a100" in by_name:
            assert by_name["a100"] > by_name["h100"]


def test_xxl_is_the_16k_gpu_point() -> None:
    # Generated and planned by benchmarks/suite-scale.yaml (too slow for a unit test).
    from horizon_opt.generate.sizes import SIZES

    xxl = SIZES["xxl"]
    assert (xxl.gpus, xxl.jobs, xxl.slots, xxl.hours, xxl.services) == (16384, 20000, 336, 336, 12)
    assert len(xxl.pools) == 3


def test_enterprise_small_plans_pass_check() -> None:
    for seed in (0, 1):
        assert_valid_plans(compile_instance(parse_spec(generate("enterprise", "small", seed))))


# -- the demo instance -------------------------------------------------------------------------


def test_demo_loads_and_is_what_it_says() -> None:
    inst = ho.load_instance(DEMO)
    assert inst.slots == 48 and inst.slot_minutes == 60 and inst.start is not None
    assert [p.name for p in inst.pools] == ["h100", "a100"]
    assert 10 <= inst.num_nodes <= 14
    assert not inst.up.all()  # the outage
    assert [s.name for s in inst.services] == ["chat", "search-embed"]
    for s in inst.services:
        trough, peak = float(s.demand.min()), float(s.demand.max())
        assert 0.25 * peak <= trough <= 0.4 * peak
    assert 30 <= len(inst.jobs) <= 60
    assert {j.kind for j in inst.jobs} == {
        "training",
        "batch_inference",
        "quantization",
        "evaluation",
    }
    assert any(j.gpus == 16 for j in inst.jobs)
    assert 1.5 <= load_ratio(inst) <= 2.0


def test_demo_plans_pass_check() -> None:
    assert_valid_plans(ho.load_instance(DEMO))
