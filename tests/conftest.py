"""Shared tiny instances (as the dicts a user would write) and fixtures built from them.

Every instance here is small enough to reason about by hand; the tests that use them write the
reasoning down next to the expected numbers.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from horizon_opt import bench
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.plan import Plan

Spec = dict[str, Any]

# TINY: 4 slots of 30 minutes (h = 0.5). Pool a: 2 nodes x 4 GPUs (a-0, a-1), pool b: 1 node x 2
# GPUs (b-0). a-1 is down in slot 3. Service chat on a, 2 GPUs per replica, headroom 0.5:
#   demand [1, 0.5, 2, 1] -> req = ceil(demand * 1.5) = [2, 1, 3, 2] replicas = [4, 2, 6, 4] GPUs.
# Jobs:
#   train  training,     priority 2, 4 GPUs, 2 slots on a only, release 0
#   ev     evaluation,   priority 1, 2 GPUs, 1 slot on any pool, release 1, after train
#   quant  quantization, priority 3, 2 GPUs, a: 1 slot, b: 2 slots, release 0, deadline 2
TINY: Spec = {
    "name": "tiny",
    "horizon": {"slots": 4, "slot_minutes": 30},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2},
    ],
    "outages": [{"node": "a-1", "start": 3, "end": 4}],
    "services": [
        {
            "name": "chat",
            "pool": "a",
            "gpus_per_replica": 2,
            "headroom": 0.5,
            "demand": [1, 0.5, 2, 1],
        }
    ],
    "jobs": [
        {
            "id": "train",
            "kind": "training",
            "priority": 2,
            "gpus": 4,
            "duration": {"a": 2},
        },
        {
            "id": "ev",
            "kind": "evaluation",
            "priority": 1,
            "gpus": 2,
            "duration": 1,
            "release": 1,
            "after": ["train"],
        },
        {
            "id": "quant",
            "kind": "quantization",
            "priority": 3,
            "gpus": 2,
            "duration": {"a": 1, "b": 2},
            "deadline": 2,
        },
    ],
}


def tiny_plan_data() -> dict[str, Any]:
    """A valid plan for TINY, by hand (slot by slot, GPUs used / 4 on a-0 and a-1):

    slot 0: chat 2 replicas on a-0 (4/4); train on a-1 GPUs 0-3 (4/4); quant on b-0 (2/2)
    slot 1: chat 1 replica on a-0 (2/4); train on a-1 (4/4);           quant on b-0 (2/2)
    slot 2: chat 2 on a-0 (4/4) + 1 on a-1 (2/4); ev on a-1 GPUs 0-1 (4/4)
    slot 3: a-1 down; chat 2 on a-0 (4/4)
    chat replicas per slot: [2, 1, 3, 2] = req. ev starts at 2 = end of train, after release 1.
    """
    return {
        "format": "horizon-opt.plan/1",
        "instance": "tiny",
        "solver": "hand",
        "status": "heuristic",
        "objective": 12.0,
        "assignments": [
            {"job": "train", "pool": "a", "start": 0, "end": 2, "gpus": {"a-1": [0, 1, 2, 3]}},
            {"job": "quant", "pool": "b", "start": 0, "end": 2, "gpus": {"b-0": [0, 1]}},
            {"job": "ev", "pool": "a", "start": 2, "end": 3, "gpus": {"a-1": [0, 1]}},
        ],
        "inference": [
            {"service": "chat", "node": "a-0", "start": 0, "end": 1, "replicas": 2},
            {"service": "chat", "node": "a-0", "start": 1, "end": 2, "replicas": 1},
            {"service": "chat", "node": "a-0", "start": 2, "end": 4, "replicas": 2},
            {"service": "chat", "node": "a-1", "start": 2, "end": 3, "replicas": 1},
        ],
        "unscheduled": [],
    }


# The instances FIFO is tested on (test_fifo.py has the hand-computed plans).

# Static peak reservation: chat's peak is 3 replicas x 2 GPUs all day, first-fit: 2 replicas
# fill a-0, 1 replica takes half of a-1. The trough (slots 2-3, no demand) stays reserved.
FIFO_TROUGH: Spec = {
    "name": "fifo-trough",
    "horizon": {"slots": 6},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "services": [
        {"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [3, 1, 0, 0, 1, 3]}
    ],
    "jobs": [
        {"id": "big", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "small", "priority": 1, "gpus": 2, "duration": 3},
    ],
}

# Release order, pool order, node and GPU order, unscheduled jobs; no inference.
# Pool a: one 4-GPU node; pool b: two 2-GPU nodes (b-0, b-1).
FIFO_ORDER: Spec = {
    "name": "fifo-order",
    "horizon": {"slots": 6},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 2, "gpus_per_node": 2},
    ],
    "jobs": [
        {"id": "first", "priority": 1, "gpus": 4, "duration": 3, "pools": ["a"]},
        {"id": "second", "priority": 1, "gpus": 4, "duration": {"a": 2}, "release": 1},
        {"id": "third", "priority": 1, "gpus": 2, "duration": 1, "release": 2},
        {"id": "fourth", "priority": 1, "gpus": 2, "duration": 1, "release": 2},
        {"id": "fifth", "priority": 1, "gpus": 1, "duration": 1, "release": 0},
        {"id": "sixth", "priority": 1, "gpus": 2, "duration": 1, "release": 5},
        {"id": "seventh", "priority": 1, "gpus": 2, "duration": 2, "release": 5},
        {"id": "eighth", "priority": 1, "gpus": 1, "duration": 1, "after": ["seventh"]},
        {"id": "ninth", "priority": 1, "gpus": 2, "duration": 1, "release": 5},
    ],
}

# An outage leaves room for fewer replicas than the peak; two services packed in file order.
# Pool a: 2 nodes x 4 GPUs, a-1 down in slots 2-3.
FIFO_OUTAGE: Spec = {
    "name": "fifo-outage",
    "horizon": {"slots": 6},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "outages": [{"node": "a-1", "start": 2, "end": 4}],
    "services": [
        {"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [3, 3, 2, 2, 3, 3]},
    ],
    "jobs": [
        {"id": "j1", "priority": 1, "gpus": 2, "duration": 2},
        {"id": "j2", "priority": 1, "gpus": 2, "duration": 2, "release": 1},
    ],
}

# File order would let `small` take all of a-0 at slot 0 (a-1 is down there) and leave `big`
# with no room: the reservation must never give a service fewer than req.
FIFO_TWO_SERVICES: Spec = {
    "name": "fifo-two-services",
    "horizon": {"slots": 2},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "outages": [{"node": "a-1", "start": 0, "end": 1}],
    "services": [
        {"name": "small", "pool": "a", "gpus_per_replica": 2, "demand": [0, 2]},
        {"name": "big", "pool": "a", "gpus_per_replica": 4, "demand": [1, 1]},
    ],
    "jobs": [],
}

# Equal releases and a dependency: file order holds wherever the dependency allows it.
FIFO_DEPS: Spec = {
    "name": "fifo-deps",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "j0", "priority": 1, "gpus": 4, "duration": 1},
        {"id": "j1", "priority": 1, "gpus": 2, "duration": 1, "after": ["j0"]},
        {"id": "j2", "priority": 1, "gpus": 4, "duration": 1},
    ],
}

# Two jobs start at the same slot on the same node; the one FIFO takes first (earlier release,
# later in the file) gets the lowest GPU indices.
FIFO_TIES: Spec = {
    "name": "fifo-ties",
    "horizon": {"slots": 4},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "x", "priority": 1, "gpus": 4, "duration": 2},
        {"id": "late", "priority": 1, "gpus": 2, "duration": 1, "release": 1},
        {"id": "early", "priority": 1, "gpus": 2, "duration": 1, "release": 0},
    ],
}

# QUEUE: 8 slots of 60 minutes, one node of 4 GPUs, no inference. `first` (4 slots, value 16)
# and `second` (2 slots, value 8) both need the whole node, so `second` waits for `first`.
QUEUE: Spec = {
    "name": "queue",
    "horizon": {"slots": 8, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 4}],
    "jobs": [
        {"id": "first", "priority": 1, "gpus": 4, "duration": 4},
        {"id": "second", "priority": 1, "gpus": 4, "duration": 2},
    ],
}

# A multi-node gang, a timestamped horizon and fractional demand, for the all-solvers check.
MIXED: Spec = {
    "name": "mixed",
    "horizon": {"slots": 8, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"},
    "pools": [
        {"name": "h", "gpu_type": "H", "nodes": 3, "gpus_per_node": 4},
        {"name": "l", "gpu_type": "L", "nodes": 2, "gpus_per_node": 2},
    ],
    "outages": [{"node": "h-2", "start": "2026-12-01T03:00:00Z", "end": "2026-12-01T05:00:00Z"}],
    "services": [
        {
            "name": "chat",
            "pool": "h",
            "gpus_per_replica": 2,
            "headroom": 0.1,
            "demand": [2.5, 3, 1, 0.2, 0, 1.5, 4, 2],
        },
        {"name": "embed", "pool": "l", "gpus_per_replica": 1, "demand": [1, 1, 0, 0, 2, 2, 1, 0]},
    ],
    "jobs": [
        {"id": "gang", "kind": "training", "priority": 5, "gpus": 8, "duration": "3h"},
        {"id": "ft", "kind": "training", "priority": 2, "gpus": 4, "duration": {"h": 2, "l": 4}},
        {
            "id": "bi",
            "kind": "batch_inference",
            "priority": 1,
            "gpus": 2,
            "duration": "90m",
            "release": "2026-12-01T01:30:00Z",
        },
        {
            "id": "q",
            "kind": "quantization",
            "priority": 3,
            "gpus": 1,
            "duration": 1,
            "after": ["ft"],
            "deadline": 6,
        },
        {"id": "e", "kind": "evaluation", "priority": 2, "gpus": 2, "duration": 2, "after": ["q"]},
        {"id": "huge", "kind": "other", "priority": 1, "gpus": 4, "duration": 7, "release": 2},
    ],
}

INSTANCES: dict[str, Spec] = {
    "tiny": TINY,
    "fifo-trough": FIFO_TROUGH,
    "fifo-order": FIFO_ORDER,
    "fifo-outage": FIFO_OUTAGE,
    "fifo-two-services": FIFO_TWO_SERVICES,
    "fifo-deps": FIFO_DEPS,
    "fifo-ties": FIFO_TIES,
    "mixed": MIXED,
}


def bench_task(path: Path, solver: str, out: Path, **kw: Any) -> bench.Task:
    """A one-second benchmark run of the instance file `path`, its plan written under `out`."""
    fields: dict[str, Any] = {
        "instance": path.stem,
        "path": str(path),
        "solver": solver,
        "time_limit": 1.0,
        "workers": 1,
        "seed": 0,
        "plan_path": str(out / f"{path.stem}-{solver}.json"),
        "progress_path": None,
        "memory_mib": None,
        "guard_seconds": 60.0,
    }
    fields.update(kw)
    return bench.Task(**fields)


def build(data: Spec) -> Instance:
    return compile_instance(parse_spec(copy.deepcopy(data)))


@pytest.fixture
def compile_spec() -> Callable[[Spec], Instance]:
    """Compile an instance dict (parse + compile, as load_instance does after YAML)."""
    return build


@pytest.fixture
def spec_of() -> Callable[[str], Spec]:
    """A fresh copy of one of the instance dicts above, by name (safe to modify)."""
    return lambda name: copy.deepcopy(INSTANCES[name])


@pytest.fixture
def instance_of() -> Callable[[str], Instance]:
    """One of the instances above, compiled, by name."""
    return lambda name: build(INSTANCES[name])


@pytest.fixture
def tiny_spec() -> Spec:
    return copy.deepcopy(TINY)


@pytest.fixture
def tiny() -> Instance:
    return build(TINY)


@pytest.fixture
def tiny_plan() -> Plan:
    return Plan.parse(tiny_plan_data())


@pytest.fixture
def tiny_plan_dict() -> dict[str, Any]:
    return tiny_plan_data()


@pytest.fixture
def tiny_files(tmp_path: Path) -> tuple[Path, Path]:
    """TINY as a YAML instance file and its hand plan as a JSON plan file."""
    inst = tmp_path / "tiny.yaml"
    inst.write_text(yaml.safe_dump(TINY, sort_keys=False))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tiny_plan_data()))
    return inst, plan


@pytest.fixture(params=sorted(INSTANCES))
def any_instance(request: pytest.FixtureRequest) -> Instance:
    """Every instance of this file, one test per instance."""
    return build(INSTANCES[request.param])


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Any]:
    """A real Slurm (tests/fake/real_slurm.py): munged, slurmctld and four slurmd with 4 GPUs
    each, started once for the whole test run and ended after it. Skipped only where the host cannot
    run it (not root, the packages missing: `make test` installs them as root)."""
    from fake.real_slurm import SlurmCluster, unavailable

    why = unavailable()
    if why is not None:
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="hopt-slurm-"))
    cluster = SlurmCluster(root)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


# Two 8-GPU nodes, 4 slots, no limits; red and blue are each entitled to 8 GPUs. Blue's two
# jobs (8 GPUs, 4 slots, priority 2: 64 each) could hold both nodes all day, blue borrowing
# red's 8 (worth 128, the optimum without rule 9). Red's job (8 GPUs, 2 slots, released at 1,
# priority 1: 16) then waits within its quota at slots 1 and 2 (from 3 it could no longer end by
# the horizon), kept out by blue's borrowing: rule 9 is broken there. With quotas kept, one of
# blue's jobs gives red's GPUs back at slot 1 and can no longer end in time: 64 + 16 = 80.
BORROWED: Spec = {
    "name": "borrowed",
    "horizon": {"slots": 4},
    "pools": [{"name": "p", "gpu_type": "x", "nodes": 2, "gpus_per_node": 8}],
    "teams": [{"name": "red", "quota": {"p": 8}}, {"name": "blue", "quota": {"p": 8}}],
    "jobs": [
        {"id": "b1", "priority": 2, "gpus": 8, "duration": 4, "team": "blue"},
        {"id": "b2", "priority": 2, "gpus": 8, "duration": 4, "team": "blue"},
        {"id": "r1", "priority": 1, "gpus": 8, "duration": 2, "release": 1, "team": "red"},
    ],
}
