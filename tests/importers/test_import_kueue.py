"""`import kueue`: Kueue Workloads (`kubectl get workloads -A -o json`) and a cluster file become
an instance that compiles, solves and checks; every field lands where FORMAT.md puts it, every
workload is a job or a note, and a malformed payload is refused naming its JSON path."""

from __future__ import annotations

import copy
import itertools
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

import horizon_opt as ho
from horizon_opt.errors import InputError
from horizon_opt.importers import ClusterFile, Imported, read_cluster
from horizon_opt.importers.kueue import (
    gpu_quantity,
    import_kueue,
    kueue_priority,
    read_workloads,
)

DATA = Path(__file__).parents[1] / "data" / "kueue"
SNAPSHOT = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)  # slot 0 = 09:00, now = slot 2 (11:00)
Json = dict[str, Any]


def fixture() -> Json:
    data: Json = read_workloads(DATA / "workloads.json")
    return data


def cluster() -> ClusterFile:
    return read_cluster(DATA / "cluster.yaml")


def run(workloads: Any, **kwargs: Any) -> Imported:
    kwargs.setdefault("snapshot", SNAPSHOT)
    return import_kueue(workloads, kwargs.pop("cluster", None) or cluster(), **kwargs)


def job_of(result: Imported, job_id: str) -> Json:
    found: Json = next(j for j in result.document["jobs"] if j["id"] == job_id)
    return found


def notes_of(result: Imported, job_id: str) -> list[str]:
    return [f"{n.field}: {n.problem}" for n in result.notes if n.job == job_id]


# -- small Workloads, as the API writes them -----------------------------------------------------


def pod(gpus: Any = "8", *, resource: str = "nvidia.com/gpu", **extra: Any) -> Json:
    resources = {"requests": {"cpu": "4", resource: gpus}} if gpus is not None else {}
    return {"containers": [{"name": "main", "image": "x", "resources": resources}], **extra}


def workload(
    name: str = "w",
    *,
    gpus: Any = "8",
    count: int = 1,
    namespace: str = "ns",
    created: str = "2026-12-01T10:00:00Z",
    queue: str = "q",
    annotations: dict[str, str] | None = None,
    admitted: str | None = None,
    flavor: str = "h100",
    conditions: list[Json] | None = None,
    **spec: Any,
) -> Json:
    """A Workload with one pod set `main` of `count` pods of `gpus` GPUs, 2 hours at most;
    `admitted`: the time of its Admitted condition (then admitted on `flavor`)."""
    meta: Json = {"name": name, "namespace": namespace, "creationTimestamp": created}
    if annotations:
        meta["annotations"] = annotations
    out: Json = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": queue,
            "podSets": [{"name": "main", "count": count, "template": {"spec": pod(gpus)}}],
            "maximumExecutionTimeSeconds": 7200,
            **spec,
        },
    }
    status: Json = {"conditions": list(conditions or [])}
    if admitted is not None:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": flavor}}],
        }
        status["conditions"] += [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "lastTransitionTime": admitted,
            },
        ]
    out["status"] = status
    return out


def items(*workloads: Json) -> Json:
    return {"apiVersion": "v1", "kind": "List", "items": list(workloads)}


# -- the fixture -----------------------------------------------------------------------------


def test_every_workload_is_a_job_or_a_note() -> None:
    result = run(fixture())
    ids = [f"{w['metadata']['namespace']}/{w['metadata']['name']}" for w in fixture()["items"]]
    jobs = {j["id"] for j in result.document["jobs"]}
    noted_out = {n.job for n in result.notes if n.problem.endswith("left out")}
    assert jobs == set(ids) - noted_out
    assert noted_out == {"team-c/job-eval-done-2d2d2", "team-c/job-tokenize-8b8b8"}


def test_fixture_fields_in_the_document() -> None:
    result = run(fixture())
    assert result.document["horizon"]["start"] == "2026-12-01T09:00:00Z"
    assert result.document["now"] == "2026-12-01T10:30:00Z"
    # Admitted (running), two pod sets master + worker of one 8-GPU pod each: 16 GPUs on two
    # whole nodes; priority 10000 -> 10001; 12 h from maximumExecutionTimeSeconds 43200;
    # admitted 08:15, before the horizon (09:00): placed from 09:00 until 08:15 + 12 h = 20:15,
    # rounded up to 21:00; nodes assumed: the lowest two with room.
    assert job_of(result, "team-a/pytorchjob-pretrain-7b-3c1f2") == {
        "id": "team-a/pytorchjob-pretrain-7b-3c1f2",
        "kind": "other",
        "priority": 10001,
        "gpus": 16,
        "duration": "12h",
        "pools": ["h100"],
        "release": "2026-12-01T08:10:00Z",
        "placed": {
            "pool": "h100",
            "start": "2026-12-01T09:00:00Z",
            "end": "2026-12-01T21:00:00Z",
            "gpus": {"gpu-h100-01": list(range(8)), "gpu-h100-02": list(range(8))},
        },
    }
    # Admitted with a topology assignment on host gpu-h100-04 (h100's node 3); GPUs from `limits`
    # only ("4"); 3h and kind from the pod template's annotations; no priority: 0 -> 1.
    assert job_of(result, "team-a/job-finetune-llama-8b-9d2e4") == {
        "id": "team-a/job-finetune-llama-8b-9d2e4",
        "kind": "training",
        "priority": 1,
        "gpus": 4,
        "duration": "3h",
        "pools": ["h100"],
        "release": "2026-12-01T09:50:00Z",
        "placed": {
            "pool": "h100",
            "start": "2026-12-01T10:00:00Z",
            "end": "2026-12-01T13:00:00Z",
            "gpus": {"gpu-h100-04": [0, 1, 2, 3]},
        },
    }
    # Pending in team-a-queue, whose admitted workloads hold h100; activeDeadlineSeconds 7200.
    sft = job_of(result, "team-a/job-sft-mistral-1a2b3")
    assert (sft["pools"], sft["duration"], sft["priority"], sft["gpus"]) == (
        ["h100"],
        "2h",
        1001,
        8,
    )
    # Never attempted: every pool; the default 4h; priority -5 -> 1/6; deadline annotation.
    ev = job_of(result, "team-b/job-eval-harness-77aa1")
    assert ev["pools"] == ["h100", "a100"] and ev["duration"] == "4h"
    assert ev["priority"] == pytest.approx(1 / 6, rel=1e-11)
    assert (ev["kind"], ev["deadline"]) == ("evaluation", "2026-12-02T06:00:00Z")
    # Evicted: pending; 6h maximum minus 2h already run = 4h; pools from the annotation; four
    # pods of "1" GPU.
    emb = job_of(result, "team-b/job-batch-embed-5e6f7")
    assert (emb["pools"], emb["duration"], emb["gpus"], emb["kind"]) == (
        ["a100"],
        "4h",
        4,
        "batch_inference",
    )
    assert "placed" not in emb
    # Quota reserved on flavor a100-spot (pool a100), admission check pending: pending there,
    # 3 pods x 4 GPUs = 3 whole a100 nodes.
    qt = job_of(result, "team-c/job-quantize-70b-0f0e1")
    assert (qt["pools"], qt["gpus"], qt["duration"], "placed" in qt) == (
        ["a100"],
        12,
        "90m",
        False,
    )
    # 3 pods x 6 GPUs = 18: no pool holds it under the rule; rounded up to 3 whole h100 nodes.
    moe = job_of(result, "team-c/job-moe-sweep-4c4c4")
    assert (moe["pools"], moe["gpus"]) == (["h100"], 24)
    # Inadmissible (its queue does not exist): pending; an 8-GPU pod fits no a100 node.
    assert job_of(result, "team-b/job-rerank-6a6a6")["pools"] == ["h100"]


def test_fixture_compiles_to_the_slots() -> None:
    inst = run(fixture()).compile()
    assert inst.now == 2
    jobs = {j.id: j for j in inst.jobs}
    pre = jobs["team-a/pytorchjob-pretrain-7b-3c1f2"].placed
    assert pre is not None and (pre.start, pre.end) == (0, 12)
    assert pre.gpus == {0: tuple(range(8)), 1: tuple(range(8))}
    ft = jobs["team-a/job-finetune-llama-8b-9d2e4"].placed
    assert ft is not None and (ft.start, ft.end, ft.gpus) == (1, 4, {3: (0, 1, 2, 3)})
    ev = jobs["team-b/job-eval-harness-77aa1"]
    # released 10:20 -> slot 2 (rounded up); due 2026-12-02T06:00 = slot 21; 4 slots anywhere
    assert (ev.release, ev.deadline, ev.durations) == (2, 21, {0: 4, 1: 4})
    assert jobs["team-c/job-quantize-70b-0f0e1"].durations == {1: 2}  # 90m -> 2 slots


def test_fixture_notes() -> None:
    assert [str(n) for n in run(fixture()).notes] == [
        "team-a/pytorchjob-pretrain-7b-3c1f2: status.conditions.Admitted: start: "
        "2026-12-01T08:15:00Z is before the horizon: placed from 2026-12-01T09:00:00Z",
        "team-a/pytorchjob-pretrain-7b-3c1f2: status.admission: node placement assumed (Kueue "
        "does not record nodes): on gpu-h100-01, gpu-h100-02, the lowest nodes of h100 with room",
        "team-a/job-sft-mistral-1a2b3: spec.queueName: pending: on h100, the pools that "
        "admitted workloads of queue team-a/team-a-queue hold",
        "team-b/job-eval-harness-77aa1: spec.queueName: pending, no flavor known for its queue: "
        "allowed on every pool (set the horizon-opt/pools annotation to choose)",
        'team-b/job-eval-harness-77aa1: metadata.annotations["horizon-opt/duration"]: no run '
        "time (no such annotation, maximumExecutionTimeSeconds or activeDeadlineSeconds): 4h "
        "assumed",
        "team-b/job-batch-embed-5e6f7: status.conditions.Evicted: evicted (Preempted: Preempted "
        "to accommodate a higher priority Workload; preempted: InClusterQueue): pending",
        "team-c/job-quantize-70b-0f0e1: status.conditions.QuotaReserved: quota reserved on a100, "
        "not admitted yet (admission checks pending): pending there",
        "team-c/job-moe-sweep-4c4c4: spec.queueName: pending, no flavor known for its queue: "
        "allowed on every pool (set the horizon-opt/pools annotation to choose)",
        "team-c/job-moe-sweep-4c4c4: spec.podSets: a gang of 18 GPUs (pods of 6 GPUs) fits no "
        "pool under the placement rule (at most one node's GPUs, or whole nodes): planned as 24 "
        "GPUs, 3 whole nodes of h100",
        "team-c/job-eval-done-2d2d2: status.conditions.Finished: finished (Succeeded: Job "
        "finished successfully): left out",
        "team-c/job-tokenize-8b8b8: spec.podSets: requests no GPUs (nvidia.com/gpu, "
        "amd.com/gpu): left out",
        "team-b/job-rerank-6a6a6: status.conditions.QuotaReserved: inadmissible (LocalQueue "
        "team-b-queu doesn't exist): pending, though Kueue will not admit it until that is fixed",
        "team-b/job-rerank-6a6a6: spec.queueName: pending, no flavor known for its queue: "
        "allowed on every pool (set the horizon-opt/pools annotation to choose)",
        "team-b/job-rerank-6a6a6: spec.podSets: not allowed on a100: a pod of 8 GPUs fits no node",
        'team-b/job-rerank-6a6a6: metadata.annotations["horizon-opt/duration"]: no run time (no '
        "such annotation, maximumExecutionTimeSeconds or activeDeadlineSeconds): 4h assumed",
    ]


def test_round_trip_solves_and_checks() -> None:
    inst = run(fixture()).compile()
    greedy = ho.solve(inst, "greedy")
    cpsat = ho.solve(inst, "cpsat", time_limit=1.0, workers=1)
    for plan in (greedy, cpsat):
        assert ho.check(inst, plan) == []
        planned = {a.job for a in plan.assignments}
        assert {"team-a/pytorchjob-pretrain-7b-3c1f2", "team-a/job-finetune-llama-8b-9d2e4"} <= (
            planned
        )


def test_yaml_reads_back_as_the_same_instance(tmp_path: Path) -> None:
    result = run(fixture())
    path = tmp_path / "kueue.yaml"
    path.write_text(result.to_yaml())
    loaded = ho.load_instance(path)
    assert [j.id for j in loaded.jobs] == [j["id"] for j in result.document["jobs"]]


# -- input shapes ------------------------------------------------------------------------------


def test_a_single_workload_and_a_bare_array_are_read_too() -> None:
    one = workload("solo")
    assert [j["id"] for j in run(one).document["jobs"]] == ["ns/solo"]
    assert [j["id"] for j in run([one, workload("duo")]).document["jobs"]] == [
        "ns/solo",
        "ns/duo",
    ]
    assert run(items()).document["jobs"] == []
    assert run({"kind": "WorkloadList", "items": None}).document["jobs"] == []


def test_read_workloads_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "w.json"
    bad.write_text("{")
    with pytest.raises(InputError, match=r"w\.json: not valid JSON"):
        read_workloads(bad)
    with pytest.raises(InputError, match=r"missing\.json: cannot read"):
        read_workloads(tmp_path / "missing.json")


def test_kubectl_yaml_reads_as_its_json() -> None:
    """workloads-v1beta2.yaml is workloads-v1beta2.json as `kubectl get workloads -A -o yaml`
    writes it: a List, strings that look like numbers or times double-quoted."""
    from_yaml = read_workloads(DATA / "workloads-v1beta2.yaml")
    assert from_yaml == read_workloads(DATA / "workloads-v1beta2.json")
    result = run(from_yaml)
    instance = result.compile()
    assert not ho.check(instance, ho.solve(instance, "greedy"))


def test_yaml_single_object_documents_and_unquoted_times(tmp_path: Path) -> None:
    w = workload("one", admitted="2026-12-01T10:00:00Z")
    single = tmp_path / "one.yaml"
    single.write_text(yaml.safe_dump(w).replace("'2026-12-01T10:00:00Z'", "2026-12-01T10:00:00Z"))
    assert "creationTimestamp: 2026-12-01T10:00:00Z" in single.read_text()
    assert read_workloads(single) == w  # an unquoted time stays the text it is
    several = tmp_path / "several.yaml"
    several.write_text(
        "---\n" + yaml.safe_dump(w) + "---\n" + yaml.safe_dump(workload("two")) + "---\n"
    )
    result = run(read_workloads(several))
    assert [j["id"] for j in result.document["jobs"]] == ["ns/one", "ns/two"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "items: [",
            r"w\.yaml: neither JSON nor valid YAML \(kubectl get workloads -A -o json or ",
        ),
        ("", r"w\.yaml: empty: expected kubectl get workloads"),
        ('{"items": [}', r"w\.yaml: not valid JSON"),
    ],
)
def test_a_file_neither_json_nor_yaml_is_refused(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text(text)
    with pytest.raises(InputError, match=message):
        read_workloads(bad)


def test_duplicate_and_namespaceless_workloads_are_noted() -> None:
    bare = workload("x")
    del bare["metadata"]["namespace"]
    result = run(items(workload("a"), workload("a"), bare))
    assert [j["id"] for j in result.document["jobs"]] == ["ns/a", "default/x"]
    assert "metadata.name: appears twice in the input: the first is kept" in notes_of(
        result, "ns/a"
    )
    assert "metadata.namespace: not given: namespace default assumed" in notes_of(
        result, "default/x"
    )


# -- GPUs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quantity", "gpus"),
    [("8", 8), (8, 8), ("2", 2), (" 4 ", 4), ("1k", 1000), ("2e0", 2), ("16000m", 16), ("0", 0)],
)
def test_gpu_quantities(quantity: Any, gpus: int) -> None:
    assert gpu_quantity(quantity) == gpus


@pytest.mark.parametrize(
    ("quantity", "message"),
    [
        ("0.5", "expected a whole number of GPUs, got '0.5'"),
        ("-1", "must not be negative"),
        ("eight", "not a Kubernetes quantity: 'eight'"),
        ("8Gb", "not a Kubernetes quantity"),
        (True, 'expected a quantity such as "8", got true'),
        (8.0, 'expected a quantity such as "8", got 8.0'),
        ("1E", "more than 1,000,000,000 GPUs"),
    ],
)
def test_bad_gpu_quantities(quantity: Any, message: str) -> None:
    with pytest.raises(InputError, match="^q: " + message.replace("(", r"\(").replace(")", r"\)")):
        gpu_quantity(quantity, "q")


def test_gpus_requests_limits_init_containers_and_pod_sets() -> None:
    w = workload("w", gpus=None)
    spec = w["spec"]["podSets"][0]["template"]["spec"]
    spec["containers"] = [
        {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}},  # limits only: 2
        {
            "name": "b",
            "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
        },
        {"name": "c", "resources": {"requests": {"cpu": "1"}}},
    ]
    spec["initContainers"] = [{"name": "i", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]
    w["spec"]["podSets"][0]["count"] = 2  # 2 pods of max(2 + 1, 2) = 3 GPUs
    w["spec"]["podSets"].append(
        {"name": "extra", "count": 1, "template": {"spec": pod("2", resource="amd.com/gpu")}}
    )
    assert job_of(run(w), "ns/w")["gpus"] == 2 * 3 + 2
    spec["initContainers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "4"  # max(3, 4)
    w["spec"]["podSets"][0]["count"] = 1
    assert job_of(run(w), "ns/w")["gpus"] == 4 + 2


def test_other_gpu_resources_are_noted_not_counted() -> None:
    w = workload("mig", gpus="1")
    w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "nvidia.com/mig-1g.10gb"
    ] = "1"
    result = run(w)
    assert job_of(result, "ns/mig")["gpus"] == 1
    assert notes_of(result, "ns/mig")[0] == (
        "spec.podSets: asks for nvidia.com/mig-1g.10gb, not counted as GPUs (counted: "
        "nvidia.com/gpu, amd.com/gpu)"
    )
    assert (
        import_kueue(
            w, cluster(), snapshot=SNAPSHOT, gpu_resources=("nvidia.com/mig-1g.10gb",)
        ).document["jobs"][0]["gpus"]
        == 1
    )


def test_partial_admission_counts_the_admitted_pods() -> None:
    w = workload(
        "p", gpus="8", count=3, admitted="2026-12-01T10:00:00Z", maximumExecutionTimeSeconds=7200
    )
    w["status"]["admission"]["podSetAssignments"][0]["count"] = 2
    result = run(w)
    assert job_of(result, "ns/p")["gpus"] == 16
    assert (
        "status.admission.podSetAssignments[main].count: partially admitted: 2 of 3 pods of "
        "pod set main" in notes_of(result, "ns/p")
    )


def test_gpus_charged_to_the_quota_that_disagree_with_the_requests_are_noted() -> None:
    """Kueue charged 0 GPUs (resourceUsage) to a pod set whose pods request 2 each: the pods
    hold what they request, so the requests stand, with a note; an agreeing usage says nothing."""
    w = workload("p", gpus="2", count=2, admitted="2026-12-01T10:00:00Z")
    w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {"nvidia.com/gpu": "0"}
    result = run(w)
    assert job_of(result, "ns/p")["gpus"] == 4
    usage = "status.admission.podSetAssignments[main].resourceUsage"
    assert [n for n in notes_of(result, "ns/p") if n.startswith(usage)] == [
        f"{usage}: Kueue charged 0 GPUs to pod set main, its pods request 4: took the requests "
        "(the kubelet allocates what pods request; quota accounting can differ)"
    ]
    w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {"nvidia.com/gpu": "4"}
    assert not [n for n in notes_of(run(w), "ns/p") if n.startswith(usage)]


def test_a_workload_being_deleted_is_left_out() -> None:
    w = workload("gone", admitted="2026-12-01T10:00:00Z")
    w["metadata"]["deletionTimestamp"] = "2026-12-01T10:25:00Z"
    result = run(items(w, workload("kept")))
    assert [j["id"] for j in result.document["jobs"]] == ["ns/kept"]
    assert notes_of(result, "ns/gone") == [
        "metadata.deletionTimestamp: being deleted since 2026-12-01T10:25:00Z: its pods are "
        "stopping: left out"
    ]


@pytest.mark.parametrize(
    "pin",
    [
        {"nodeSelector": {"kubernetes.io/hostname": "gpu-h100-03"}},
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": ["gpu-h100-03"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            }
        },
    ],
)
def test_a_workload_pinned_to_a_host_runs_there(pin: Json) -> None:
    """Kueue records no nodes without a topology assignment, but a pod pinned to one host by a
    nodeSelector or a required node affinity runs there: placed on gpu-h100-03 (h100's node 2),
    not on the lowest node with room. Pending, the pin is noted: an instance has no per-node
    pin."""
    running = workload("on3", gpus="4", admitted="2026-12-01T10:00:00Z")
    running["spec"]["podSets"][0]["template"]["spec"].update(pin)
    pending = workload("wants3", gpus="4")
    pending["spec"]["podSets"][0]["template"]["spec"].update(pin)
    result = run(items(running, pending))
    assert job_of(result, "ns/on3")["placed"]["gpus"] == {"gpu-h100-03": [0, 1, 2, 3]}
    assert not any("node placement assumed" in n for n in notes_of(result, "ns/on3"))
    assert (
        "spec.podSets: pinned to gpu-h100-03 by node affinity: planned on its pool, where the "
        "plan may choose other nodes (an instance does not pin a job to a node)"
    ) in notes_of(result, "ns/wants3")
    result.compile()


def test_a_pending_workload_longer_than_the_horizon_is_noted_at_import() -> None:
    """48 one-hour slots from 09:00, now 11:00: 46 hours are left; a 3-day workload cannot end."""
    w = workload("long", maximumExecutionTimeSeconds=3 * 86400)
    assert [n for n in notes_of(run(w), "ns/long") if n.startswith("duration")] == [
        "duration: 3d is longer than what is left of the horizon after now (46h): it cannot end "
        "within it, so no plan starts it (lengthen horizon.slots)"
    ]


def test_a_workload_expected_to_end_between_the_snapshot_and_now_is_left_out() -> None:
    """Snapshot 10:30, now 11:00. Admitted 10:00 for at most an hour, it ends at 11:00: not
    past its end at the snapshot, and its GPUs are free by the time the plan starts."""
    w = workload("p", gpus="8", admitted="2026-12-01T10:00:00Z", maximumExecutionTimeSeconds=3600)
    result = run(w)
    assert result.document["jobs"] == []
    assert notes_of(result, "ns/p") == [
        "duration: expected to end at 2026-12-01T11:00:00Z (1h after its admission), after the "
        "snapshot but by now (2026-12-01T11:00:00Z), where the plan starts: Kubernetes or Kueue "
        "stops it by then, its GPUs are free; left out"
    ]


def test_a_workload_whose_estimate_ends_by_now_holds_its_gpus() -> None:
    """As above, with the hour an estimate (the duration annotation), not a limit: nothing stops
    it at 11:00, so it holds its GPUs until one slot after now (it was left out, its GPUs
    planned for others)."""
    w = workload("p", gpus="8", admitted="2026-12-01T10:00:00Z")
    w["metadata"]["annotations"] = {"horizon-opt/duration": "1h"}
    result = run(w)
    (placed,) = result.document["jobs"]
    assert placed["placed"]["end"] == "2026-12-01T12:00:00Z"
    assert (
        "duration: expected to end at 2026-12-01T11:00:00Z (1h after its admission), after the "
        "snapshot but by now (2026-12-01T11:00:00Z); only an estimate, and it is admitted: held "
        "until 2026-12-01T12:00:00Z"
    ) in notes_of(result, "ns/p")
    result.compile()


def test_a_gang_that_fits_no_pool_is_left_out() -> None:
    result = run(workload("huge", gpus="16"))  # a 16-GPU pod fits no node (8 or 4 GPUs)
    assert result.document["jobs"] == []
    assert notes_of(result, "ns/huge")[-1] == (
        "spec.podSets: a gang of 16 GPUs (pods of 16 GPUs) fits no pool (h100 has 4 nodes of 8, "
        "a100 has 4 nodes of 4): left out"
    )


def test_pods_that_may_not_fill_whole_nodes_are_noted() -> None:
    # 8 pods of 3 GPUs = 24 = 3 whole h100 nodes by the rule; 3 does not divide 8
    result = run(workload("odd", gpus="3", count=8, annotations={"horizon-opt/pools": "h100"}))
    assert job_of(result, "ns/odd")["gpus"] == 24
    assert notes_of(result, "ns/odd") == [
        "spec.podSets: pods of 3 GPUs may not fill whole nodes of 8 GPUs: the plan holds whole "
        "nodes"
    ]


# -- priority --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority", "weight"),
    [(0, 1), (1, 2), (100, 101), (10_000, 10_001), (-1, 0.5), (-5, 0.166666666667), (-99, 0.01)],
)
def test_priority_scale(priority: int, weight: float) -> None:
    assert kueue_priority(priority) == weight
    assert job_of(run(workload("w", priority=priority)), "ns/w")["priority"] == weight


def test_priority_is_positive_and_keeps_kueues_order() -> None:
    ps = [-(2**31), -(2**31) + 1, -1_000_001, -1_000_000, -2, -1, 0, 1, 999_998, 999_999]
    weights = [kueue_priority(p) for p in ps]
    assert all(0 < a < b for a, b in itertools.pairwise(weights))
    assert kueue_priority(2**31 - 1) == kueue_priority(999_999) == 1_000_000


def test_priority_missing_is_zero_and_huge_is_capped_with_a_note() -> None:
    assert job_of(run(workload("w")), "ns/w")["priority"] == 1
    result = run(workload("w", priority=2_000_000_000))
    assert job_of(result, "ns/w")["priority"] == 1_000_000
    assert (
        "spec.priority: 2,000,000,000 is above 999,999: priority capped at 1,000,000 (higher "
        "Kueue priorities tie)" in notes_of(result, "ns/w")
    )


# -- duration --------------------------------------------------------------------------------


def test_duration_sources_in_order() -> None:
    # the annotation wins over the limits; the Workload's over the pod template's
    w = workload("w", annotations={"horizon-opt/duration": "90m"}, maximumExecutionTimeSeconds=60)
    w["spec"]["podSets"][0]["template"]["metadata"] = {
        "annotations": {"horizon-opt/duration": "5h"}
    }
    assert job_of(run(w), "ns/w")["duration"] == "90m"
    del w["metadata"]["annotations"]
    assert job_of(run(w), "ns/w")["duration"] == "5h"
    # then maximumExecutionTimeSeconds minus what earlier admissions used (both spellings)
    del w["spec"]["podSets"][0]["template"]["metadata"]
    w["spec"]["maximumExecutionTimeSeconds"] = 36_000
    assert job_of(run(w), "ns/w")["duration"] == "10h"
    w["status"]["accumulatedPastExexcutionTimeSeconds"] = 3_570  # 32,430 s left -> 541 minutes
    assert job_of(run(w), "ns/w")["duration"] == "541m"
    # then the largest activeDeadlineSeconds of the pod sets
    del w["spec"]["maximumExecutionTimeSeconds"]
    w["spec"]["podSets"][0]["template"]["spec"]["activeDeadlineSeconds"] = 5_400
    w["spec"]["podSets"].append(
        {"name": "b", "count": 0, "template": {"spec": pod(activeDeadlineSeconds=172_800)}}
    )
    assert job_of(run(w), "ns/w")["duration"] == "2d"
    # then the default, with a note
    for ps in w["spec"]["podSets"]:
        del ps["template"]["spec"]["activeDeadlineSeconds"]
    result = run(w, default_duration="6h")
    assert job_of(result, "ns/w")["duration"] == "6h"
    assert notes_of(result, "ns/w")[-1].endswith("6h assumed")


def test_v1beta2_accumulated_time_is_read() -> None:
    w = workload("w", maximumExecutionTimeSeconds=7_200)
    w["status"]["accumulatedPastExecutionTimeSeconds"] = 1_800
    assert job_of(run(w), "ns/w")["duration"] == "90m"


def test_used_up_execution_time_is_noted() -> None:
    w = workload("w", maximumExecutionTimeSeconds=600)
    w["status"]["accumulatedPastExexcutionTimeSeconds"] = 600
    result = run(w)
    assert job_of(result, "ns/w")["duration"] == "1m"
    assert any("all used in earlier admissions" in n for n in notes_of(result, "ns/w"))


def test_bad_default_duration_is_refused() -> None:
    with pytest.raises(InputError, match="default_duration: not a duration: 'soon'"):
        run(items(), default_duration="soon")


# -- state -----------------------------------------------------------------------------------


def test_running_job_end_clipped_to_the_horizon() -> None:
    # admitted 10:00 for 3 days: past the 48-slot horizon (ends 2026-12-03T09:00)
    w = workload("long", admitted="2026-12-01T10:00:00Z", maximumExecutionTimeSeconds=3 * 86_400)
    result = run(w)
    placed = job_of(result, "ns/long")["placed"]
    assert (placed["start"], placed["end"]) == ("2026-12-01T10:00:00Z", "2026-12-03T09:00:00Z")
    assert (
        "duration: end: 2026-12-04T10:00:00Z is after the horizon: placed until "
        "2026-12-03T09:00:00Z" in notes_of(result, "ns/long")
    )
    result.compile()


def test_with_an_open_end_running_and_pending_jobs_keep_their_length() -> None:
    """With the cluster file's `horizon.open_end` the same running job is placed until its end
    (72 slots from 10:00 is slot 73 of the horizon from 09:00), and a pending 3-day job is
    planned without a note that it cannot end."""
    open_cluster = cluster().model_copy(
        update={"horizon": cluster().horizon.model_copy(update={"open_end": True})}
    )
    w = workload("long", admitted="2026-12-01T10:00:00Z", maximumExecutionTimeSeconds=3 * 86_400)
    pending = workload("wait", maximumExecutionTimeSeconds=3 * 86_400)
    result = run(items(w, pending), cluster=open_cluster)
    assert job_of(result, "ns/long")["placed"]["end"] == "2026-12-04T10:00:00Z"
    assert not any(
        "horizon" in n for n in notes_of(result, "ns/long") + notes_of(result, "ns/wait")
    )
    inst = result.compile()
    assert inst.jobs[0].placed is not None and inst.jobs[0].placed.end == 73
    assert inst.written_slots == 48


def test_running_job_past_its_expected_end_ends_after_now() -> None:
    # admitted 09:05 for 1 h: expected at 10:05, before the snapshot (10:30), yet still admitted
    w = workload("late", admitted="2026-12-01T09:05:00Z", maximumExecutionTimeSeconds=3_600)
    result = run(w)
    assert job_of(result, "ns/late")["placed"]["end"] == "2026-12-01T12:00:00Z"
    assert any("before the snapshot, yet still admitted" in n for n in notes_of(result, "ns/late"))
    job = result.compile().jobs[0]
    assert job.placed is not None and (job.placed.start, job.placed.end) == (0, 3)


def test_admitted_after_the_snapshot_starts_at_the_snapshot() -> None:
    w = workload("future", admitted="2026-12-01T12:00:00Z", created="2026-12-01T12:00:00Z")
    result = run(w)
    job = job_of(result, "ns/future")
    assert (job["placed"]["start"], job["release"]) == (
        "2026-12-01T10:30:00Z",
        "2026-12-01T10:30:00Z",
    )
    assert notes_of(result, "ns/future")[:2] == [
        "status.conditions.Admitted: admitted at 2026-12-01T12:00:00Z, after the snapshot: "
        "started at the snapshot",
        "metadata.creationTimestamp: 2026-12-01T12:00:00Z is after its admission: released at "
        "its admission",
    ]


def test_evicted_while_still_admitted_is_pending() -> None:
    w = workload("ev", admitted="2026-12-01T10:00:00Z")
    w["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "PodsReadyTimeout",
            "message": "Exceeded the PodsReady timeout",
        }
    )
    result = run(w)
    job = job_of(result, "ns/ev")
    assert "placed" not in job and job["pools"] == ["h100"]
    assert notes_of(result, "ns/ev")[0] == (
        "status.conditions.Evicted: evicted (PodsReadyTimeout: Exceeded the PodsReady timeout): "
        "pending"
    )


def test_readmitted_workload_with_old_eviction_runs() -> None:
    w = workload("again", admitted="2026-12-01T10:00:00Z")
    w["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "False",
            "reason": "QuotaReserved",
            "message": "Previously: x",
        }
    )
    assert "placed" in job_of(run(w), "ns/again")


def test_deactivated_and_finished_are_left_out() -> None:
    done = workload("done", admitted="2026-12-01T08:00:00Z")
    done["status"]["conditions"].append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "Failed",
            "message": "BackoffLimitExceeded",
        }
    )
    result = run(items(workload("off", active=False), done))
    assert result.document["jobs"] == []
    assert [str(n) for n in result.notes] == [
        "ns/off: spec.active: false (deactivated): Kueue admits it only once reactivated: left out",
        "ns/done: status.conditions.Finished: finished (Failed: BackoffLimitExceeded): left out",
    ]


def test_a_workload_horizon_opt_held_is_still_pending_work() -> None:
    """`run --apply` with Kueue holds deactivates workloads planned for later and marks them; the
    next cycle must plan them again, or they would never be released."""
    held = workload("later", active=False, annotations={"horizon-opt/held": "true"})
    result = run(items(held))
    assert [j["id"] for j in result.document["jobs"]] == ["ns/later"]
    assert "placed" not in job_of(result, "ns/later")
    assert notes_of(result, "ns/later")[0] == (
        "spec.active: false: held by horizon-opt until its planned start"
    )


def test_admitted_on_an_unknown_flavor_is_left_out() -> None:
    result = run(workload("x", admitted="2026-12-01T10:00:00Z", flavor="tpu-v5"))
    assert result.document["jobs"] == []
    assert notes_of(result, "ns/x") == [
        "status.admission.podSetAssignments: admitted on flavor(s) tpu-v5, which no pool of the "
        "cluster file lists (pools[].flavors): left out (its GPUs look free to the planner)"
    ]


def test_pod_sets_on_two_pools_run_on_the_bigger_share() -> None:
    w = workload("two", gpus="8", count=2, admitted="2026-12-01T10:00:00Z")
    w["spec"]["podSets"].append({"name": "side", "count": 1, "template": {"spec": pod("4")}})
    w["status"]["admission"]["podSetAssignments"].append(
        {"name": "side", "flavors": {"nvidia.com/gpu": "a100"}}
    )
    result = run(w)
    assert job_of(result, "ns/two")["placed"]["pool"] == "h100"
    assert job_of(result, "ns/two")["gpus"] == 24
    assert notes_of(result, "ns/two")[0].startswith(
        "status.admission.podSetAssignments: its pod sets run on pools h100, a100"
    )


def test_assumed_nodes_skip_full_and_down_nodes() -> None:
    # a100: 4 nodes of 4 GPUs; a100-3 is down 18:00 - 02:00 (the cluster file's outage).
    def a100(name: str, hours: int) -> Json:
        return workload(
            name,
            gpus="4",
            flavor="a100",
            admitted="2026-12-01T10:00:00Z",
            maximumExecutionTimeSeconds=hours * 3600,
        )

    result = run(items(a100("r0", 2), a100("r1", 2), a100("r2", 2), a100("short", 2)))
    assert job_of(result, "ns/short")["placed"]["gpus"] == {"a100-3": [0, 1, 2, 3]}
    result = run(items(a100("r0", 2), a100("r1", 2), a100("r2", 2), a100("long", 12)))
    assert [j["id"] for j in result.document["jobs"]] == ["ns/r0", "ns/r1", "ns/r2"]
    assert notes_of(result, "ns/long")[-1] == (
        "status.admission: admitted on pool a100, where the running jobs leave no room for a "
        "gang of 4 GPUs: left out (its GPUs look free to the planner)"
    )


def test_small_running_jobs_share_a_node_with_distinct_gpus() -> None:
    result = run(
        items(
            workload("a", gpus="2", admitted="2026-12-01T10:00:00Z"),
            workload("b", gpus="4", admitted="2026-12-01T10:00:00Z"),
        )
    )
    assert job_of(result, "ns/a")["placed"]["gpus"] == {"gpu-h100-01": [0, 1]}
    assert job_of(result, "ns/b")["placed"]["gpus"] == {"gpu-h100-01": [2, 3, 4, 5]}
    result.compile()


def test_topology_assignment_on_unknown_hosts_falls_back() -> None:
    w = workload("tas", gpus="8", count=2, admitted="2026-12-01T10:00:00Z")
    w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": ["cloud.example.com/rack", "kubernetes.io/hostname"],
        "domains": [
            {"values": ["r1", "gpu-h100-02"], "count": 1},
            {"values": ["r1", "node-x"], "count": 1},
        ],
    }
    result = run(w)
    assert job_of(result, "ns/tas")["placed"]["gpus"] == {
        "gpu-h100-01": list(range(8)),
        "gpu-h100-02": list(range(8)),
    }
    assert notes_of(result, "ns/tas") == [
        "status.admission: its topology assignment is not used: host(s) node-x are not in the "
        "cluster file's node_names; node placement assumed (Kueue does not record nodes): on "
        "gpu-h100-01, gpu-h100-02, the lowest nodes of h100 with room"
    ]
    # both hosts known: its nodes, no note
    w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["domains"][1][
        "values"
    ] = ["r1", "gpu-h100-03"]
    result = run(w)
    assert job_of(result, "ns/tas")["placed"]["gpus"] == {
        "gpu-h100-02": list(range(8)),
        "gpu-h100-03": list(range(8)),
    }
    assert notes_of(result, "ns/tas") == []


def tas(w: Json, topology: Json, version: str = "v1beta2") -> Json:
    """`w` with this topology assignment on its pod set `main`."""
    w["apiVersion"] = f"kueue.x-k8s.io/{version}"
    w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = topology
    return w


def test_v1beta2_fixture_places_on_the_hosts_its_slices_name() -> None:
    """tests/data/kueue/workloads-v1beta2.json, built from the shapes documented in Kueue's
    apis/kueue/v1beta2/workload_types.go: slices with prefix + roots and a universal pod count
    (2 pods of 8 GPUs on gpu-h100-02, -03); a rack level above the hostname, universal rack,
    individual pod counts (2 + 1 pods of 2 GPUs on gpu-h100-01, -04)."""
    result = run(read_workloads(DATA / "workloads-v1beta2.json"))
    gpus = {j["id"]: j.get("placed", {}).get("gpus") for j in result.document["jobs"]}
    assert gpus == {
        "research/jobset-pretrain-13b-a1b2c": {
            "gpu-h100-02": list(range(8)),
            "gpu-h100-03": list(range(8)),
        },
        "evals/job-ddp-eval-d4e5f@gpu-h100-01": {"gpu-h100-01": [0, 1, 2, 3]},
        "evals/job-ddp-eval-d4e5f@gpu-h100-04": {"gpu-h100-04": [0, 1]},
        "research/job-finetune-70b-0a9b8": None,
    }
    assert not any("node placement assumed" in str(n) for n in result.notes)
    instance = result.compile()
    plan = ho.solve(instance, "greedy")
    assert not ho.check(instance, plan)


@pytest.mark.parametrize(
    ("topology", "gpus"),
    [
        (  # v1beta1: levels and domains
            {
                "levels": ["kubernetes.io/hostname"],
                "domains": [{"values": ["gpu-h100-03"], "count": 2}],
            },
            {"gpu-h100-03": list(range(8))},
        ),
        (  # v1beta2: universal value, universal count
            {
                "levels": ["kubernetes.io/hostname"],
                "slices": [
                    {
                        "domainCount": 1,
                        "valuesPerLevel": [{"universal": "gpu-h100-03"}],
                        "podCounts": {"universal": 2},
                    }
                ],
            },
            {"gpu-h100-03": list(range(8))},
        ),
        (  # v1beta2: prefix, roots and suffix; two slices; individual counts
            {
                "levels": ["example.com/block", "kubernetes.io/hostname"],
                "slices": [
                    {
                        "domainCount": 1,
                        "valuesPerLevel": [
                            {"universal": "b1"},
                            {"individual": {"prefix": "gpu-", "suffix": "-02", "roots": ["h100"]}},
                        ],
                        "podCounts": {"individual": [1]},
                    },
                    {
                        "domainCount": 1,
                        "valuesPerLevel": [
                            {"universal": "b1"},
                            {"individual": {"roots": ["gpu-h100-02"]}},
                        ],
                        "podCounts": {"universal": 1},
                    },
                ],
            },
            {"gpu-h100-02": list(range(8))},
        ),
    ],
)
def test_topology_assignment_forms(topology: Json, gpus: Json) -> None:
    w = tas(workload("t", gpus="4", count=2, admitted="2026-12-01T10:00:00Z"), topology)
    result = run(w)
    assert job_of(result, "ns/t")["placed"]["gpus"] == gpus
    assert notes_of(result, "ns/t") == []


def test_a_topology_the_rule_cannot_hold_is_held_one_part_per_host() -> None:
    topology = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "gpu-h100-0", "roots": ["2", "4"]}}],
                "podCounts": {"universal": 1},
            }
        ],
    }
    w = tas(workload("thin", gpus="1", count=2, admitted="2026-12-01T10:00:00Z"), topology)
    result = run(w)
    parts = {j["id"]: j["placed"]["gpus"] for j in result.document["jobs"]}
    assert parts == {
        "ns/thin@gpu-h100-02": {"gpu-h100-02": [0]},
        "ns/thin@gpu-h100-04": {"gpu-h100-04": [0]},
    }
    (note,) = notes_of(result, "ns/thin")
    assert note.startswith("status.admission: holds GPUs gpu-h100-02: 1, gpu-h100-04: 1")
    instance = result.compile()
    assert not ho.check(instance, ho.solve(instance, "greedy"))


def test_a_topology_above_the_hostname_names_no_nodes() -> None:
    topology = {
        "levels": ["example.com/rack"],
        "slices": [
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "r1"}],
                "podCounts": {"universal": 1},
            }
        ],
    }
    result = run(tas(workload("rack", admitted="2026-12-01T10:00:00Z"), topology))
    assert job_of(result, "ns/rack")["placed"]["gpus"] == {"gpu-h100-01": list(range(8))}
    assert "node placement assumed" in notes_of(result, "ns/rack")[0]


@pytest.mark.parametrize(
    ("piece", "message"),
    [
        (
            {"domainCount": 2, "valuesPerLevel": [{"universal": "h"}], "podCounts": {}},
            "slices[0].podCounts: expected exactly one of universal and individual",
        ),
        (
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"roots": ["a"]}}],
                "podCounts": {"universal": 1},
            },
            "slices[0].valuesPerLevel[0].individual.roots: expected 2 strings (domainCount)",
        ),
        (
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "h"}],
                "podCounts": {"individual": [1, 2]},
            },
            "slices[0].podCounts.individual: expected 1 pod counts (domainCount) from 1",
        ),
        (
            {"domainCount": 1, "valuesPerLevel": [], "podCounts": {"universal": 1}},
            "slices[0].valuesPerLevel: expected 1 entries, one per level of levels",
        ),
    ],
)
def test_malformed_v1beta2_slices_name_the_json_path(piece: Json, message: str) -> None:
    topology = {"levels": ["kubernetes.io/hostname"], "slices": [piece]}
    with pytest.raises(InputError) as err:
        run(tas(workload("bad", admitted="2026-12-01T10:00:00Z"), topology))
    assert str(err.value) == (
        "workloads.json: status.admission.podSetAssignments[0].topologyAssignment." + message
    )


def test_pending_pools_annotation_queue_and_all() -> None:
    admitted = workload(
        "a", namespace="t", queue="gpu", admitted="2026-12-01T10:00:00Z", flavor="a100", gpus="4"
    )
    same_queue = workload("b", namespace="t", queue="gpu", gpus="4")
    other_ns = workload("c", namespace="u", queue="gpu", gpus="4")
    chosen = workload(
        "d", namespace="u", queue="gpu", gpus="4", annotations={"horizon-opt/pools": "h100, a100"}
    )
    result = run(items(admitted, same_queue, other_ns, chosen))
    assert job_of(result, "t/b")["pools"] == ["a100"]
    assert job_of(result, "u/c")["pools"] == ["h100", "a100"]
    assert job_of(result, "u/d")["pools"] == ["h100", "a100"]
    assert notes_of(result, "u/d") == []


def test_release_and_deadline() -> None:
    result = run(
        items(
            workload(
                "a",
                created="2026-12-01T10:20:00+01:00",
                annotations={"horizon-opt/deadline": "2026-12-02T00:00:00Z"},
            ),
            workload(
                "late",
                created="2026-12-01T10:00:00Z",
                annotations={"horizon-opt/deadline": "2026-12-01T08:00:00Z"},
            ),
            workload("new", created="2026-12-05T10:00:00Z"),
        )
    )
    a = job_of(result, "ns/a")
    assert (a["release"], a["deadline"]) == ("2026-12-01T09:20:00Z", "2026-12-02T00:00:00Z")
    # a deadline before the release cannot be met: it is set to the release's slot
    assert job_of(result, "ns/late")["deadline"] == "2026-12-01T10:00:00Z"
    assert notes_of(result, "ns/late")[-1] == (
        'metadata.annotations["horizon-opt/deadline"]: 2026-12-01T08:00:00Z is before its '
        "release: set to 2026-12-01T10:00:00Z (it cannot be on time)"
    )
    # created after the horizon's end
    assert notes_of(result, "ns/new")[-1] == (
        "metadata.creationTimestamp: 2026-12-05T10:00:00Z is after the horizon: left out"
    )
    result.compile()


# -- snapshot --------------------------------------------------------------------------------


def test_snapshot_defaults_to_now_with_a_note() -> None:
    result = import_kueue(items(), cluster())
    assert result.notes[0].field == "snapshot"
    assert result.notes[0].problem.startswith("not given: the time of the import, ")


def test_snapshot_outside_a_fixed_horizon_is_refused() -> None:
    fixed = cluster().model_copy(
        update={
            "horizon": cluster().horizon.model_copy(
                update={"start": datetime(2026, 1, 1, tzinfo=UTC)}
            )
        }
    )
    with pytest.raises(InputError, match="snapshot 2026-12-01T10:30:00Z is outside"):
        run(items(), cluster=fixed)


def test_inference_that_no_longer_fits_is_an_input_error() -> None:
    # chat needs 2 GPUs of h100 at every slot; four 8-GPU jobs run on all four nodes
    ws = [
        workload(f"r{i}", admitted="2026-12-01T10:00:00Z", maximumExecutionTimeSeconds=7200)
        for i in range(4)
    ]
    with pytest.raises(InputError) as err:
        run(items(*ws))
    assert all(p.startswith("workloads.json: ") for p in err.value.problems)


# -- malformed payloads ------------------------------------------------------------------------


def _set(doc: Json, path: str, value: Any) -> None:
    """Set the field at a JSON path (`a.b[2]["nvidia.com/gpu"]`); `value` DELETE removes it."""
    parts: list[Any] = [
        int(index) if index else key or quoted
        for key, index, quoted in re.findall(r'\.?([A-Za-z_]\w*)|\[(\d+)\]|\["([^"]+)"\]', path)
    ]
    target: Any = doc
    for p in parts[:-1]:
        target = target[p]
    if value is DELETE:
        del target[parts[-1]]
    else:
        target[parts[-1]] = value


DELETE = object()
GPU0 = "items[0].spec.podSets[0].template.spec.containers[0].resources.requests"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "items[2].spec.podSets[0].count",
            "3",
            "items[2].spec.podSets[0].count: expected an integer, got '3'",
        ),
        (
            "items[2].spec.podSets[0].count",
            -1,
            "items[2].spec.podSets[0].count: must be from 0 to 2,147,483,647, got -1",
        ),
        (
            GPU0 + '["nvidia.com/gpu"]',
            "0.5",
            GPU0 + "[\"nvidia.com/gpu\"]: expected a whole number of GPUs, got '0.5'",
        ),
        (
            GPU0 + '["nvidia.com/gpu"]',
            "eight",
            GPU0 + "[\"nvidia.com/gpu\"]: not a Kubernetes quantity: 'eight'",
        ),
        (GPU0, ["8"], GPU0 + ": expected an object, got a list"),
        ("items[3].metadata", DELETE, "items[3].metadata: required field is missing"),
        ("items[3].metadata.name", 5, "items[3].metadata.name: expected a string, got 5"),
        ("items[3].metadata.name", "", "items[3].metadata.name: must not be empty"),
        (
            "items[3].metadata.creationTimestamp",
            "yesterday",
            "items[3].metadata.creationTimestamp: not an ISO-8601 timestamp: 'yesterday'",
        ),
        ("items[3].spec", DELETE, "items[3].spec: required field is missing"),
        ("items[3].spec.podSets", [], "items[3].spec.podSets: expected at least one pod set"),
        (
            "items[3].spec.podSets[0].template",
            DELETE,
            "items[3].spec.podSets[0].template: required field is missing",
        ),
        (
            "items[3].spec.podSets[0].template.spec.containers",
            {},
            "items[3].spec.podSets[0].template.spec.containers: expected a list, got an object",
        ),
        (
            "items[3].spec.priority",
            2**31,
            "items[3].spec.priority: must be from -2,147,483,648 to 2,147,483,647, got 2147483648",
        ),
        ("items[3].spec.priority", True, "items[3].spec.priority: expected an integer, got true"),
        ("items[3].spec.active", "yes", "items[3].spec.active: expected true or false, got 'yes'"),
        (
            "items[3].spec.maximumExecutionTimeSeconds",
            1.5,
            "items[3].spec.maximumExecutionTimeSeconds: expected an integer, got 1.5",
        ),
        (
            "items[2].status.conditions",
            {},
            "items[2].status.conditions: expected a list, got an object",
        ),
        (
            "items[0].status.conditions[1].lastTransitionTime",
            DELETE,
            "items[0].status.conditions[1].lastTransitionTime: required field is missing",
        ),
        (
            "items[0].status.conditions[1].lastTransitionTime",
            "08:15",
            "items[0].status.conditions[1].lastTransitionTime: not an ISO-8601 timestamp: '08:15'",
        ),
        (
            "items[0].status.conditions[0].type",
            DELETE,
            "items[0].status.conditions[0].type: required field is missing",
        ),
        (
            "items[0].status.admission.podSetAssignments[0].name",
            "launcher",
            "items[0].status.admission.podSetAssignments[0].name: no pod set 'launcher' in spec.podSets",
        ),
        (
            "items[0].status.admission.podSetAssignments[0].flavors",
            {"nvidia.com/gpu": 1},
            'items[0].status.admission.podSetAssignments[0].flavors["nvidia.com/gpu"]: expected a string, got 1',
        ),
        (
            "items[1].status.admission.podSetAssignments[0].topologyAssignment.domains[0].values",
            ["a", "b"],
            "items[1].status.admission.podSetAssignments[0].topologyAssignment.domains[0].values: expected 1 strings, one per level",
        ),
        (
            "items[1].spec.podSets[0].template.metadata.annotations",
            {"horizon-opt/duration": "6 hours"},
            "items[1].spec.podSets[0].template.metadata.annotations[\"horizon-opt/duration\"]: not a duration: '6 hours' (use e.g. 90m, 6h, 1.5h, 2d)",
        ),
        (
            "items[1].spec.podSets[0].template.metadata.annotations",
            {"horizon-opt/kind": "train"},
            "items[1].spec.podSets[0].template.metadata.annotations[\"horizon-opt/kind\"]: expected one of training, batch_inference, quantization, evaluation, other, got 'train'",
        ),
        (
            "items[3].spec.podSets[0].template.metadata.annotations",
            {"horizon-opt/deadline": "soon"},
            "items[3].spec.podSets[0].template.metadata.annotations[\"horizon-opt/deadline\"]: not an ISO-8601 timestamp: 'soon'",
        ),
        (
            "items[4].spec.podSets[0].template.metadata.annotations",
            {"horizon-opt/pools": "h200"},
            "items[4].spec.podSets[0].template.metadata.annotations[\"horizon-opt/pools\"]: unknown pool(s) 'h200' (pools: h100, a100)",
        ),
        ("items[0].kind", "Job", "items[0].kind: expected a Workload, got 'Job'"),
        ("items[5]", "job-x", "items[5]: expected an object, got 'job-x'"),
        ("items", 3, "items: expected a list, got 3"),
    ],
)
def test_malformed_payloads_name_the_json_path(path: str, value: Any, message: str) -> None:
    doc = fixture()
    _set(doc, path, value)
    with pytest.raises(InputError) as err:
        run(doc)
    assert err.value.problems == [f"workloads.json: {message}"]


def test_every_malformed_workload_is_listed_and_the_source_named() -> None:
    doc = fixture()
    doc["items"][1]["spec"]["podSets"][0]["count"] = None
    doc["items"][6]["metadata"]["name"] = ["x"]
    with pytest.raises(InputError) as err:
        run(doc, source="prod/workloads.json")
    assert err.value.problems == [
        "prod/workloads.json: items[1].spec.podSets[0].count: required field is missing",
        "prod/workloads.json: items[6].metadata.name: expected a string, got a list",
    ]


def test_every_malformed_field_of_a_workload_is_listed() -> None:
    doc = fixture()
    doc["items"][2]["spec"]["podSets"][0]["count"] = "3"
    doc["items"][2]["spec"]["active"] = "yes"
    doc["items"][2]["status"]["conditions"] = {}
    with pytest.raises(InputError) as err:
        run(doc)
    assert err.value.problems == [
        "workloads.json: items[2].spec.podSets[0].count: expected an integer, got '3'",
        "workloads.json: items[2].spec.active: expected true or false, got 'yes'",
        "workloads.json: items[2].status.conditions: expected a list, got an object",
    ]


def test_a_topology_above_the_hostname_is_not_read() -> None:
    """Only an assignment down to the hostname names hosts; another's domains are not read, so
    a malformed one there refuses nothing."""
    topology = {"levels": ["example.com/rack"], "slices": [{"domainCount": "x"}]}
    result = run(tas(workload("rack", admitted="2026-12-01T10:00:00Z"), topology))
    assert "node placement assumed" in notes_of(result, "ns/rack")[0]


TOP = (
    "(top level): expected a Workload, a List of Workloads (`kubectl get workloads -A -o json`) "
    "or a JSON array of them, got "
)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("workloads", TOP + "'workloads'"),
        ({"kind": "Job", "spec": {}}, TOP + "an object of kind 'Job'"),
        (None, TOP + "null"),
        ([1], "[0]: expected an object, got 1"),
        ({"metadata": {"name": "x"}}, "spec: required field is missing"),  # a Workload, no kind
    ],
)
def test_malformed_top_level(payload: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        run(payload)
    assert err.value.problems == [f"workloads.json: {message}"]


def test_unknown_reserved_flavor_is_noted() -> None:
    w = workload("r", flavor="tpu", admitted="2026-12-01T10:00:00Z")
    w["status"]["conditions"] = w["status"]["conditions"][:1]  # QuotaReserved only
    result = run(w)
    assert job_of(result, "ns/r")["pools"] == ["h100"]
    assert notes_of(result, "ns/r")[0] == (
        "status.admission.podSetAssignments: quota reserved on flavor(s) tpu, which no pool of "
        "the cluster file lists (pools[].flavors): not used"
    )


def test_input_is_not_modified() -> None:
    doc = fixture()
    before = json.dumps(doc, sort_keys=True)
    run(copy.deepcopy(doc))
    run(doc)
    assert json.dumps(doc, sort_keys=True) == before


def test_a_now_too_late_for_its_horizon_is_refused_by_name() -> None:
    late = datetime(9999, 12, 31, 23, tzinfo=UTC)
    with pytest.raises(InputError, match=r"--now: 9999-12-31T23:00:00Z is too late"):
        run(workload("p", gpus="8"), snapshot=late)
