"""`kueue_actions`: kubectl patches for the plan, checked against the Kueue API of
kueue.x-k8s.io v1beta1 and v1beta2 (Kueue 0.19; the paths written here are the same in both):
ClusterQueue `spec.resourceGroups[].flavors[].resources[].{name,nominalQuota}` and Workload
`spec.active` (Kueue 0.6 on) with `metadata.annotations`.

Every command is parsed back and applied to a ClusterQueue or Workload object by the small
JSON Patch (RFC 6902: test, replace) and JSON Merge Patch (RFC 7386) appliers below, which
refuse any path or field outside those schema fields.

STATE: 8 slots of one hour from 2026-12-01T00:00Z, now = 2. Pool a: a-0, a-1 (4 GPUs each);
pool b: b-0, b-1 (2 GPUs each), b-1 down in slots 2-3. Services: chat on a (2 GPUs a replica),
embed on b (1 GPU a replica). Workloads: team/run admitted (running on a-1 GPUs 0-1 since
slot 0), team/soon (1 GPU), team/later and team/never (2 GPUs) pending, 1 slot each.
The hand plan (valid, `check` says so): chat 2 replicas on a-0 and 1 on a-1 all day; embed 1
replica on b-0 in [0, 5), then on b-1; team/soon at slot 2 on b-0, team/later at slot 5 on b-0,
team/never unscheduled.
Quota by hand at now: a: 8 GPUs up - (2 x 2 + 1 x 2) inference = 2; b: 2 GPUs up (b-1 is down)
- 1 x 1 inference (b-1's replica starts later and does not count) = 1.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from horizon_opt.actions import (
    HELD_ANNOTATION,
    Actions,
    KueueOptions,
    kueue_actions,
    quota_path,
)
from horizon_opt.errors import InputError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.check import check
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import solve

# ---- the Kueue schema fields these patches may touch

CQ_PATH = re.compile(
    r"^/spec/resourceGroups/\d+/flavors/\d+(/name|/resources/\d+/(name|nominalQuota))$"
)
QUANTITY = re.compile(r"^[0-9]+$")  # a whole-number resource.Quantity, as GPUs are counted
WORKLOAD_MERGE_FIELDS = {"metadata": {"annotations"}, "spec": {"active"}}


def _pointer(doc: Any, path: str) -> tuple[Any, str | int]:
    *parents, last = path.lstrip("/").split("/")
    for part in parents:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc, int(last) if isinstance(doc, list) else last


def _json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 `test` and `replace` on a copy; a failed test raises, as the API server does."""
    out = copy.deepcopy(doc)
    for op in ops:
        assert set(op) == {"op", "path", "value"} and op["op"] in ("test", "replace")
        assert CQ_PATH.match(op["path"]), op["path"]
        parent, key = _pointer(out, op["path"])
        if op["op"] == "test":
            assert parent[key] == op["value"], f"test failed at {op['path']}"
        else:
            assert key in parent if isinstance(parent, dict) else key < len(parent)
            parent[key] = op["value"]
    return out


def _merge_patch(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386: objects merge, null deletes, anything else replaces."""
    out = copy.deepcopy(doc)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = _merge_patch(out.get(key) or {}, value)
        else:
            out[key] = value
    return out


def _kubectl(argv: tuple[str, ...], cq: dict[str, Any], workloads: dict[str, Any]) -> str:
    """Check one command (kubectl patch with --type and -p) and apply it to the objects."""
    assert argv[:2] == ("kubectl", "patch")
    kind, name = argv[2], argv[3]
    rest = list(argv[4:])
    namespace = None
    if "-n" in rest:
        namespace = rest.pop(rest.index("-n") + 1)
        rest.remove("-n")
    assert len(rest) == 3 and rest[1] == "-p"
    patch = json.loads(rest[2])
    if kind == "clusterqueue":
        assert rest[0] == "--type=json" and name == cq["metadata"]["name"] and namespace is None
        replaced = [op for op in patch if op["op"] == "replace"]
        assert all(op["path"].endswith("/nominalQuota") for op in replaced)
        assert all(QUANTITY.match(op["value"]) for op in replaced)
        cq.update(_json_patch(cq, patch))
        return "quota"
    assert kind == "workload" and rest[0] == "--type=merge" and namespace
    assert set(patch) <= set(WORKLOAD_MERGE_FIELDS)
    for key, fields in WORKLOAD_MERGE_FIELDS.items():
        assert set(patch.get(key, {})) <= fields
    assert isinstance(patch["spec"]["active"], bool)
    assert set(patch["metadata"]["annotations"]) == {HELD_ANNOTATION}
    wid = f"{namespace}/{name}"
    workloads[wid] = _merge_patch(workloads[wid], patch)
    return "workload"


def _cq() -> dict[str, Any]:
    """What `kubectl get clusterqueue batch -o json` gives (the fields that matter here)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "batch"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "64"},
                                {"name": "memory", "nominalQuota": "512Gi"},
                            ],
                        }
                    ],
                },
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "flavor-a",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}],
                        },
                        {
                            "name": "flavor-b",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}],
                        },
                    ],
                },
            ]
        },
    }


def _workloads() -> dict[str, Any]:
    return {
        f"team/{n}": {"metadata": {"name": n, "namespace": "team"}, "spec": {"queueName": "q"}}
        for n in ("run", "soon", "later", "never")
    }


STATE: dict[str, Any] = {
    "name": "kueue-state",
    "horizon": {"slots": 8, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"},
    "now": 2,
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4},
        {"name": "b", "gpu_type": "B", "nodes": 2, "gpus_per_node": 2},
    ],
    "outages": [{"node": "b-1", "start": 2, "end": 4}],
    "services": [
        {"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [2] * 8},
        {"name": "embed", "pool": "b", "gpus_per_replica": 1, "demand": [1] * 8},
    ],
    "jobs": [
        {
            "id": "team/run",
            "priority": 1,
            "gpus": 2,
            "duration": 4,
            "pools": ["a"],
            "placed": {"pool": "a", "start": 0, "gpus": {"a-1": [0, 1]}},
        },
        {"id": "team/soon", "priority": 1, "gpus": 1, "duration": 1},
        {"id": "team/later", "priority": 1, "gpus": 2, "duration": 1},
        {"id": "team/never", "priority": 1, "gpus": 2, "duration": 1},
    ],
}


def _plan_data() -> dict[str, Any]:
    return {
        "instance": "kueue-state",
        "solver": "hand",
        "status": "heuristic",
        "objective": 0.0,
        "assignments": [
            {"job": "team/run", "pool": "a", "start": 0, "end": 4, "gpus": {"a-1": [0, 1]}},
            {"job": "team/soon", "pool": "b", "start": 2, "end": 3, "gpus": {"b-0": [1]}},
            {"job": "team/later", "pool": "b", "start": 5, "end": 6, "gpus": {"b-0": [0, 1]}},
        ],
        "inference": [
            {"service": "chat", "node": "a-0", "start": 0, "end": 8, "replicas": 2},
            {"service": "chat", "node": "a-1", "start": 0, "end": 8, "replicas": 1},
            {"service": "embed", "node": "b-0", "start": 0, "end": 5, "replicas": 1},
            {"service": "embed", "node": "b-1", "start": 5, "end": 8, "replicas": 1},
        ],
        "unscheduled": [{"job": "team/never", "reason": "no room by hand"}],
    }


def _instance(spec: dict[str, Any] = STATE) -> Instance:
    return compile_instance(parse_spec(spec))


def _plan(data: dict[str, Any] | None = None, instance: Instance | None = None) -> Plan:
    plan = Plan.parse(data or _plan_data())
    assert not check(instance or _instance(), plan)
    return plan


def _options(**kw: Any) -> KueueOptions:
    args: dict[str, Any] = {
        "cluster_queue": "batch",
        "flavors": {"a": "flavor-a", "b": "flavor-b"},
        "cluster_queue_object": _cq(),
        "hold_after_minutes": 60,
    }
    return KueueOptions(**{**args, **kw})


def _apply(actions: Actions) -> tuple[dict[str, Any], dict[str, Any]]:
    cq, workloads = _cq(), _workloads()
    for action in actions.actions:
        _kubectl(action.argv, cq, workloads)
    return cq, workloads


def _gpu_quota(cq: dict[str, Any], flavor: str) -> str:
    for fl in cq["spec"]["resourceGroups"][1]["flavors"]:
        if fl["name"] == flavor:
            return str(fl["resources"][0]["nominalQuota"])
    raise AssertionError(flavor)


def test_first_cycle_sets_quotas_and_holds_what_starts_later() -> None:
    actions = kueue_actions(_instance(), _plan(), _options())
    cq, workloads = _apply(actions)
    assert _gpu_quota(cq, "flavor-a") == "2"  # 8 up - 6 inference at now
    assert _gpu_quota(cq, "flavor-b") == "1"  # 2 up (b-1 down) - 1 inference at now
    assert cq["spec"]["resourceGroups"][0] == _cq()["spec"]["resourceGroups"][0]  # cpu untouched
    held = {wid for wid, w in workloads.items() if w["spec"].get("active") is False}
    assert held == {"team/later", "team/never"}
    assert workloads["team/later"]["metadata"]["annotations"] == {HELD_ANNOTATION: "true"}
    assert workloads["team/soon"] == _workloads()["team/soon"]  # starts now: left active
    kinds = [(a.kind, a.target) for a in actions.actions]
    assert kinds == [
        ("quota", "clusterqueue/batch/flavor-a"),
        ("quota", "clusterqueue/batch/flavor-b"),
        ("hold", "workload/team/later"),
        ("hold", "workload/team/never"),
    ]
    assert "2026-12-01T05:00:00Z" in actions.actions[2].why
    assert "no room by hand" in actions.actions[3].why


def test_admitted_workloads_never_get_an_action() -> None:
    """Even when the applied state held it (it has been admitted since)."""
    applied = {"workload/team/run": {"active": "false", "start": "2026-12-01T00:00:00Z"}}
    actions = kueue_actions(_instance(), _plan(), _options(), applied)
    assert not any("run" in a.argv for a in actions.actions)
    assert "workload/team/run" not in actions.desired
    assert any("workload/team/run" in n for n in actions.notes)


def test_second_cycle_with_the_applied_state_gives_nothing() -> None:
    first = kueue_actions(_instance(), _plan(), _options())
    stored = Actions.from_json(first.to_json())
    again = kueue_actions(_instance(), _plan(), _options(), stored.desired)
    assert again.actions == ()


def test_a_changed_plan_changes_only_its_targets() -> None:
    first = kueue_actions(_instance(), _plan(), _options())
    data = _plan_data()
    # team/later moves to now on a-1 GPUs 2-3, where chat's replica now starts an hour later.
    data["assignments"][2] = {
        "job": "team/later",
        "pool": "a",
        "start": 2,
        "end": 3,
        "gpus": {"a-1": [2, 3]},
    }
    data["inference"][1] = {"service": "chat", "node": "a-1", "start": 3, "end": 8, "replicas": 1}
    data["unscheduled"][0]["reason"] = "another reason"
    actions = kueue_actions(_instance(), _plan(data), _options(), first.desired)
    cq, workloads = _apply(actions)
    assert [(a.kind, a.target) for a in actions.actions] == [
        ("activate", "workload/team/later"),
        ("quota", "clusterqueue/batch/flavor-a"),
    ]
    assert _gpu_quota(cq, "flavor-a") == "4"  # 8 up - 4 inference at now
    assert workloads["team/later"]["spec"]["active"] is True
    assert (
        "annotations" not in workloads["team/later"]["metadata"]
        or not (workloads["team/later"]["metadata"]["annotations"])
    )


def test_a_fifo_plan_gives_commands_that_apply() -> None:
    inst = _instance()
    plan = solve(inst, "fifo")
    actions = kueue_actions(inst, plan, _options())
    _apply(actions)
    assert not any(a.target == "workload/team/run" for a in actions.actions)
    assert kueue_actions(inst, plan, _options(), actions.desired).actions == ()


def test_a_held_workload_missing_from_the_instance_is_noted_not_patched() -> None:
    applied = {"workload/team/gone": {"active": "false", "why": "x"}}
    actions = kueue_actions(_instance(), _plan(), _options(), applied)
    assert not any("gone" in a.argv for a in actions.actions)
    assert any("workload/team/gone" in n and "not released" in n for n in actions.notes)


def test_the_cluster_queue_object_must_hold_the_flavor_and_resource() -> None:
    cq = _cq()
    assert quota_path(cq, "batch", "flavor-b", "nvidia.com/gpu") == (
        "/spec/resourceGroups/1/flavors/1/resources/0"
    )
    with pytest.raises(InputError, match="no flavor 'flavor-c'"):
        kueue_actions(_instance(), _plan(), _options(flavors={"a": "flavor-c"}))
    with pytest.raises(InputError, match=r"flavor 'flavor-a' has no resource 'amd\.com/gpu'"):
        kueue_actions(_instance(), _plan(), _options(resource="amd.com/gpu"))
    with pytest.raises(
        InputError, match="clusterqueue other: the object given is ClusterQueue 'batch'"
    ):
        kueue_actions(_instance(), _plan(), _options(cluster_queue="other"))
    with pytest.raises(InputError, match="needs cluster_queue_object"):
        kueue_actions(_instance(), _plan(), _options(cluster_queue_object=None))
    with pytest.raises(InputError, match="'c' is not a pool"):
        kueue_actions(_instance(), _plan(), _options(flavors={"c": "flavor-a"}))


def test_a_quota_patch_fails_when_the_queue_changed_since_it_was_read() -> None:
    """The `test` operations guard the indices: a flavor moved since the object was read."""
    actions = kueue_actions(_instance(), _plan(), _options())
    moved = _cq()
    flavors = moved["spec"]["resourceGroups"][1]["flavors"]
    flavors.reverse()
    with pytest.raises(AssertionError, match="test failed"):
        _kubectl(actions.actions[0].argv, moved, _workloads())


def test_workload_ids_must_be_namespace_slash_name() -> None:
    spec = copy.deepcopy(STATE)
    spec["jobs"][3]["id"] = "never"
    data = _plan_data()
    data["unscheduled"][0]["job"] = "never"
    with pytest.raises(InputError, match="'never' is not a Workload id"):
        kueue_actions(_instance(spec), Plan.parse(data), _options())


# -- what the tool writes, against Kueue's published schemas ----------------------------------

CRDS = Path(__file__).parents[1] / "data" / "kueue" / "crds"  # Kueue v0.19.2 (README.md there)


def _cluster_queue_schemas() -> dict[str, dict[str, Any]]:
    crd = yaml.safe_load((CRDS / "kueue.x-k8s.io_clusterqueues.yaml").read_text())
    return {
        v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["served"]
    }


def _workload_schemas() -> dict[str, dict[str, Any]]:
    excerpt: dict[str, dict[str, Any]] = json.loads((CRDS / "workloads-excerpt.json").read_text())
    return excerpt["versions"]


def test_the_objects_the_tool_writes_pass_kueues_crd_schemas() -> None:
    """The first cycle's quota patch and holds, applied to the queue and workloads: the results
    validate against every served version's schema of Kueue v0.19.2 (the patches touch paths both
    versions share); a quota that is no quantity would not."""
    cq, workloads = _apply(kueue_actions(_instance(), _plan(), _options()))
    assert any(w["spec"].get("active") is False for w in workloads.values())  # holds written
    for version, schema in _cluster_queue_schemas().items():
        jsonschema.validate({**cq, "apiVersion": f"kueue.x-k8s.io/{version}"}, schema)
        bad = copy.deepcopy(cq)
        bad["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] = "eight"
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**bad, "apiVersion": f"kueue.x-k8s.io/{version}"}, schema)
    for version, schema in _workload_schemas().items():
        for w in workloads.values():
            obj = {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "Workload", **w}
            jsonschema.validate(obj, schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"kind": "Workload", "spec": {"active": "no"}}, schema)
