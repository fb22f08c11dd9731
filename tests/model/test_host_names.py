"""Pools that name their nodes (`pools[].node_names`): the host names are the nodes' only names,
from the instance file through every solver's plan, the CSV export, what-if and the importers.

HOSTS: 6 slots of one hour, now = 1. Pool a: 2 nodes x 4 GPUs named gpu-a-01, gpu-a-02 (a-0 and
a-1 are not names of this instance); pool b: 1 node x 2 GPUs without names (b-0). gpu-a-02 is
down in slots 4-5. Service chat on a, 2 GPUs per replica, 1 replica at every slot. Jobs:
  run    2 GPUs, 3 slots, placed on gpu-a-01 GPUs 0-1 from slot 0: running at now
  whole  4 GPUs, 2 slots, pool a: a whole a node (gpu-a-02 in slots 1-3, since chat fits beside
         run on gpu-a-01)
  small  2 GPUs, 2 slots, any pool
"""

from __future__ import annotations

import copy
import csv
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_validation import assert_problem, problems_of

import horizon_opt as ho
from horizon_opt.analysis.whatif import apply_changes, parse_change, what_if
from horizon_opt.errors import InputError
from horizon_opt.importers import read_cluster
from horizon_opt.importers.table import import_table
from horizon_opt.loop.state import state_at
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.load import parse_spec
from horizon_opt.model.node_names import name_problems
from horizon_opt.model.spec import HOST_NAME_PATTERN, MAX_HOST_NAME, InstanceSpec
from horizon_opt.solvers import SolveOptions

Spec = dict[str, Any]
HOST_A = ["gpu-a-01", "gpu-a-02"]
NAMES = ("gpu-a-01", "gpu-a-02", "b-0")
HOSTS: Spec = {
    "name": "hosts",
    "horizon": {"slots": 6, "slot_minutes": 60},
    "now": 1,
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4, "node_names": HOST_A},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 2},
    ],
    "outages": [{"node": "gpu-a-02", "start": 4, "end": 6}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1] * 6}],
    "jobs": [
        {
            "id": "run",
            "priority": 1,
            "gpus": 2,
            "duration": 3,
            "placed": {"pool": "a", "start": 0, "gpus": {"gpu-a-01": [0, 1]}},
        },
        {"id": "whole", "priority": 2, "gpus": 4, "duration": 2, "pools": ["a"]},
        {"id": "small", "priority": 1, "gpus": 2, "duration": 2},
    ],
}
FAST = {"time_limit": 5.0, "workers": 2, "seed": 0}


def hosts(**changes: Any) -> Spec:
    data = copy.deepcopy(HOSTS)
    data.update(changes)
    return data


def compiled(data: Spec | None = None) -> ho.Instance:
    return compile_instance(parse_spec(hosts() if data is None else data))


# -- the instance --------------------------------------------------------------------------------


def test_nodes_are_named_by_their_host_names() -> None:
    inst = compiled()
    assert inst.node_names == NAMES
    assert [inst.pools[int(p)].name for p in inst.node_pool] == ["a", "a", "b"]
    assert inst.up[1].tolist() == [True] * 4 + [False] * 2  # the outage names gpu-a-02
    assert inst.up[0].all() and inst.up[2].all()
    run = inst.jobs[inst.job_index["run"]]
    assert run.placed is not None and dict(run.placed.gpus) == {0: (0, 1)}


def test_without_node_names_nothing_changes() -> None:
    data = hosts(outages=[{"node": "a-1", "start": 4, "end": 6}])
    del data["pools"][0]["node_names"]
    data["jobs"][0]["placed"]["gpus"] = {"a-0": [0, 1]}
    assert compiled(data).node_names == ("a-0", "a-1", "b-0")
    # the field stays out of a spec written back (as `simulate` writes its audit instance)
    dumped = parse_spec(data).model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    assert all("node_names" not in pool for pool in dumped["pools"])


def test_the_schema_has_node_names() -> None:
    schema = InstanceSpec.model_json_schema()
    field = schema["$defs"]["PoolSpec"]["properties"]["node_names"]
    item = field["anyOf"][0]["items"]
    assert item["pattern"] == HOST_NAME_PATTERN == "^[A-Za-z0-9][A-Za-z0-9._-]*$"
    assert item["maxLength"] == MAX_HOST_NAME == 253


@pytest.mark.parametrize("solver", list(ho.SOLVERS))
def test_every_solver_plans_on_host_names(solver: str) -> None:
    inst = compiled()
    options = ho.SolveOptions(**FAST) if solver.startswith("cpsat") else None
    plan = ho.solve(inst, solver, options)
    assert ho.check(inst, plan) == []
    assert {a.job for a in plan.assignments} == {"run", "whole", "small"}
    for a in plan.assignments:
        assert set(a.gpus) <= set(NAMES)
        if a.pool == "a":
            assert set(a.gpus) <= set(HOST_A)
    run = next(a for a in plan.assignments if a.job == "run")
    assert run.gpus == {"gpu-a-01": [0, 1]}
    assert plan.inference and {b.node for b in plan.inference} <= set(HOST_A)


def test_csv_export_and_state_name_the_hosts(tmp_path: Path) -> None:
    inst = compiled()
    plan = ho.solve(inst, "greedy")
    table, inference = ho.write_csv(inst, plan, tmp_path / "plan.csv")
    rows = list(csv.DictReader(table.read_text().splitlines()))
    run = next(r for r in rows if r["job"] == "run")
    assert (run["nodes"], run["gpu_indices"]) == ("gpu-a-01", "gpu-a-01:0-1")
    assert {n for r in rows for n in r["nodes"].split()} <= set(NAMES)
    assert [a.gpus for a in ho.read_csv(table)] == [a.gpus for a in plan.assignments]
    blocks = ho.read_inference_csv(inference)
    assert blocks and {b.node for b in blocks} <= set(HOST_A)
    # the state at slot 2 places the running jobs on the same host names
    state = compile_instance(state_at(inst.spec, plan, 2))
    assert state.node_names == NAMES
    assert all(set(a.gpus) <= set(NAMES) for a in ho.solve(state, "fifo").assignments)


# -- refused names -------------------------------------------------------------------------------


def with_names(names: list[str], pool: int = 0) -> Spec:
    """HOSTS with other names, and no outage or placed job that names a node."""
    data = hosts(outages=[], now=None)
    data["jobs"] = data["jobs"][1:]
    data["pools"][pool]["node_names"] = names
    return data


@pytest.mark.parametrize(
    ("names", "path", "words"),
    [
        (["gpu-a-01"], "pools[0].node_names", ("1 names for 2 nodes",)),
        ([*HOST_A, "gpu-a-03"], "pools[0].node_names", ("3 names for 2 nodes",)),
        (["gpu-a-01", "gpu a 02"], "pools[0].node_names[1]", ("pattern",)),
        (["gpu-a-01", "-gpu"], "pools[0].node_names[1]", ("pattern",)),
        (["gpu-a-01", "gpu:2"], "pools[0].node_names[1]", ("pattern",)),
        (["gpu-a-01", ""], "pools[0].node_names[1]", ("pattern",)),
        (["gpu-a-01", "x" * (MAX_HOST_NAME + 1)], "pools[0].node_names[1]", ("253",)),
        (["gpu-a-01", "gpu-a-01"], "pools[0].node_names[1]", ("pools[0].node_names[0]",)),
        (["gpu-a-01", "b-0"], "pools[0].node_names[1]", ("node 0 of pool 'b'", "node_names")),
    ],
)
def test_bad_node_names_are_refused_naming_the_field(
    names: list[str], path: str, words: tuple[str, ...]
) -> None:
    assert_problem(problems_of(with_names(names)), path, *words)


def test_a_wrong_count_is_the_only_problem() -> None:
    # the outage and the placed job name hosts the pool does give: not refused as well
    data = hosts()
    data["pools"][0]["node_names"] = [*HOST_A, "gpu-a-03"]
    assert problems_of(data) == ["pools[0].node_names: 3 names for 2 nodes (one per node)"]


def test_a_name_taken_by_another_pools_node_names_is_refused() -> None:
    data = with_names(["b1"], pool=1)
    data["pools"][1]["node_names"] = ["gpu-a-02"]
    assert_problem(problems_of(data), "pools[1].node_names[0]", "pools[0].node_names[1]")
    # a 253-character name is fine
    assert compiled(with_names(["gpu-a-01", "x" * MAX_HOST_NAME])).node_names[1] == "x" * 253


def test_generated_names_of_a_named_pool_are_not_names() -> None:
    data = hosts(outages=[{"node": "a-1", "start": 4, "end": 6}])
    data["jobs"][0]["placed"]["gpus"] = {"a-0": [0, 1]}
    problems = problems_of(data)
    assert_problem(problems, "outages[0].node", "unknown node 'a-1'", "node_names")
    assert_problem(problems, "jobs[0].placed.gpus", "'a-0' is not a node of pool 'a'")
    # a pool may take names that look like <pool>-<i>, in any order: a name is just a name
    assert compiled(with_names(["a-1", "a-0"])).node_names == ("a-1", "a-0", "b-0")


def test_name_problems_without_names_is_empty() -> None:
    assert name_problems([("a", 3, None), ("a-1", 2, None)]) == []


# -- what-if -------------------------------------------------------------------------------------


def test_whatif_adds_and_removes_nodes_of_a_named_pool() -> None:
    w = what_if(
        parse_spec(hosts()), [parse_change("a=1", "add")], "greedy", SolveOptions(workers=1)
    )
    assert w.changed_instance.node_names == ("gpu-a-01", "gpu-a-02", "a-2", "b-0")
    assert ho.check(w.changed_instance, w.changed) == []
    spec = parse_spec(hosts(outages=[]))
    removed = apply_changes(spec, [parse_change("a=1", "remove")])
    assert removed.pools[0].node_names == ["gpu-a-01"]
    with pytest.raises(InputError, match=r"would remove gpu-a-02, which outages\[0\] names"):
        apply_changes(parse_spec(hosts()), [parse_change("a=1", "remove")])
    outage = apply_changes(spec, [parse_change("gpu-a-01:4-5", "outage")])
    assert outage.outages[-1].node == "gpu-a-01"
    with pytest.raises(InputError, match=r"unknown node 'a-0' \(nodes: gpu-a-01..gpu-a-02"):
        apply_changes(spec, [parse_change("a-0:4-5", "outage")])


def test_whatif_refuses_an_added_name_that_is_taken() -> None:
    spec = parse_spec(with_names(["gpu-a-01", "a-2"]))
    with pytest.raises(InputError, match=r"--add a=1: a node added to pool 'a' is named a-2"):
        apply_changes(spec, [parse_change("a=1", "add")])


# -- importers -----------------------------------------------------------------------------------

CLUSTER = """\
horizon: {slots: 24, slot_minutes: 60, start: "2026-12-01T00:00:00Z"}
pools:
  - {name: h100, gpu_type: H100, nodes: 3, gpus_per_node: 8, node_names: [gpu01, gpu02]}
  - {name: a100, gpu_type: A100, nodes: 1, gpus_per_node: 4}
outages:
  - {node: h100-1, start: 10, end: 12}
  - {node: gpu01, start: 14, end: 16}
  - {node: h100-2, start: 18, end: 20}
"""


def test_an_import_names_the_hosts(tmp_path: Path) -> None:
    # The cluster file names 2 of h100's 3 nodes: the third is h100-2. Outages by <pool>-<i>
    # of a named node say its host name in the instance.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    table = tmp_path / "jobs.csv"
    table.write_text(
        "id,gpus,duration,start,nodes\n"
        "r1,8,4,2026-12-01T01:00:00Z,gpu02\n"
        "r2,8,4,2026-12-01T01:00:00Z,h100-0\n"  # <pool>-<i> of a named node: its host
        "r3,4,4,2026-12-01T01:00:00Z,a100-0\n"
        "p,8,2,,\n"
    )
    result = import_table(
        table, read_cluster(cluster), snapshot=datetime(2026, 12, 1, 2, tzinfo=UTC)
    )
    doc = result.document
    assert doc["pools"][0]["node_names"] == ["gpu01", "gpu02", "h100-2"]
    assert "node_names" not in doc["pools"][1]
    assert [o["node"] for o in doc["outages"]] == ["gpu02", "gpu01", "h100-2"]
    placed = {j["id"]: j["placed"]["gpus"] for j in doc["jobs"] if "placed" in j}
    assert placed == {
        "r1": {"gpu02": list(range(8))},
        "r2": {"gpu01": list(range(8))},
        "r3": {"a100-0": [0, 1, 2, 3]},
    }
    inst = result.compile()
    assert inst.node_names == ("gpu01", "gpu02", "h100-2", "a100-0")
    plan = ho.solve(inst, "greedy")
    assert ho.check(inst, plan) == []


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (  # the unnamed third node would be h100-2, a host name already
            "[gpu01, h100-2]",
            r"pools\[0\]\.node_names\[1\]: 'h100-2' is also the name of pool h100's node 2",
        ),
        ("[gpu01, a100-0]", r"pools\[0\]\.node_names\[1\]: 'a100-0' is the name of node 0"),
        ("[gpu01, gpu01]", r"pools\[0\]\.node_names\[1\]: 'gpu01' names another node too"),
        ("[gpu01, 'gpu 02']", r"pools\[0\]\.node_names\[1\]: String should match pattern"),
    ],
)
def test_the_cluster_file_refuses_names_that_cannot_name_a_node(
    tmp_path: Path, names: str, message: str
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.replace("[gpu01, gpu02]", names))
    with pytest.raises(InputError, match=message) as info:
        read_cluster(cluster)
    assert all(p.startswith(f"{cluster}: ") for p in info.value.problems)
