"""`horizon-opt run` end to end on Kueue, as a real process against a fake `kubectl`
(tests/fake/kueue.py): `kubectl get workloads -A -o json` and `kubectl get clusterqueue batch -o
json` answer from a small world, `kubectl patch` records and applies what it receives (a JSON
patch of the ClusterQueue's quota, all or nothing; a merge patch of a Workload's `spec.active`
and annotations) and the world's `tick` admits pending, active workloads within the quota.

The cluster: one H100 pool (flavor h100, three hosts of 8 GPUs), a chat service whose forecast
(a demand CSV in wall-clock time) needs 2 to 4 replicas of 2 GPUs; two workloads admitted, three
pending, one created later. Kueue payloads carry no snapshot time, so every cycle is run with
`--now` at the world's clock.

Checked: the batch quota is the pool's GPUs less the most the plan's inference holds over the
quota window (4 h), patched at
the indices read from the ClusterQueue (a stale patch fails its `test`); a second cycle at the
same time sends nothing; after a tick only a changed quota is sent; no command ever touches an
admitted workload; with `holds: true` pending workloads planned after one cadence are held and
released when their start comes; cycles keep succeeding when Kueue admits work that outlasts
the forecast's growth.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake import HORIZON_OPT, assert_current_plan_valid, install_commands, write_demand_csv
from fake import kueue as fake

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 12, 1, 10, tzinfo=UTC)
HOSTS = ["gpu-h100-01", "gpu-h100-02", "gpu-h100-03"]
POOL_GPUS = 3 * 8
DEMAND = [2, 2, 3, 4, 4, 3, 2, 2]  # chat replicas of 2 GPUs, hour by hour from T0, repeating
HELD = "horizon-opt/held"


def _epoch(when: datetime) -> int:
    return int(when.timestamp())


def _workload(
    name: str, pods: int, gpus: int, priority: int, limit: int, created: datetime
) -> dict[str, Any]:
    """A v1beta1 Workload as Kueue creates it for a batch/v1 Job: one pod set of `pods` pods of
    `gpus` GPUs, a time limit of `limit` minutes (maximumExecutionTimeSeconds)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "creationTimestamp": fake.iso(_epoch(created)),
            "generation": 1,
            "name": f"job-{name}",
            "namespace": "team-a",
            "resourceVersion": "1",
            "labels": {"kueue.x-k8s.io/job-uid": f"00000000-0000-4000-8000-{name:0>12}"},
        },
        "spec": {
            "active": True,
            "podSets": [
                {
                    "name": "main",
                    "count": pods,
                    "template": {
                        "metadata": {},
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "registry.example.com/ml/trainer:2026.11",
                                    "resources": {
                                        "requests": {
                                            "cpu": "8",
                                            "memory": "64Gi",
                                            "nvidia.com/gpu": str(gpus),
                                        },
                                        "limits": {"nvidia.com/gpu": str(gpus)},
                                    },
                                }
                            ],
                            "restartPolicy": "Never",
                        },
                    },
                }
            ],
            "queueName": "team-a-queue",
            "priority": priority,
            "priorityClassName": f"p{priority}",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "maximumExecutionTimeSeconds": 60 * limit,
        },
        "status": {},
    }


def _clusterqueue() -> dict[str, Any]:
    """The batch ClusterQueue: CPU and memory in one resource group, GPUs in another, where an
    a100 flavor without quota comes before h100 (so the quota's path has indices to get right)."""

    def flavor(name: str, quotas: dict[str, str]) -> dict[str, Any]:
        return {
            "name": name,
            "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()],
        }

    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "batch", "generation": 1, "resourceVersion": "1"},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [flavor("default-flavor", {"cpu": "512", "memory": "4Ti"})],
                },
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        flavor("a100", {"nvidia.com/gpu": "0"}),
                        flavor("h100", {"nvidia.com/gpu": str(POOL_GPUS)}),
                    ],
                },
            ],
        },
    }


def _world() -> dict[str, Any]:
    # name: pods, GPUs a pod, priority, time limit, run time (minutes), created, admitted at
    table: dict[str, tuple[int, int, int, int, int, datetime, datetime | None]] = {
        "train": (1, 8, 3000, 240, 180, T0 - timedelta(hours=2), T0 - timedelta(hours=1)),
        "eval": (1, 4, 3000, 120, 60, T0 - timedelta(hours=1), T0 - timedelta(minutes=30)),
        "sft": (1, 8, 5000, 180, 120, T0 - timedelta(hours=2), None),
        "pretrain": (2, 8, 9000, 240, 200, T0 - timedelta(hours=2), None),
        "embed": (1, 2, 1000, 60, 30, T0 - timedelta(hours=2), None),
        "tune": (1, 4, 2000, 120, 90, T0 + timedelta(hours=2), None),
    }
    state: dict[str, Any] = {
        "clock": _epoch(T0),
        "nodes": {"h100": {h: {"gpus": 8} for h in HOSTS}},
        "clusterqueue": _clusterqueue(),
        "workloads": [],
        "run_minutes": {},
        "log": [],
        "evicted": [],
        "patched_admitted": [],
    }
    for name, (pods, gpus, prio, limit, run, created, admitted) in table.items():
        w = _workload(name, pods, gpus, prio, limit, created)
        if admitted is not None:
            fake.admit(state, w, "h100", _epoch(admitted))
        state["workloads"].append(w)
        state["run_minutes"][fake.wid(w)] = run
    return state


@pytest.fixture
def cluster(tmp_path: Path) -> dict[str, Any]:
    bin_dir = tmp_path / "bin"
    install_commands(bin_dir, "kueue.py", {"kubectl": "kubectl"})
    world = tmp_path / "world.json"
    world.write_text(json.dumps(_world()))
    write_demand_csv(tmp_path / "chat.csv", T0, DEMAND)
    (tmp_path / "cluster.yaml").write_text(
        "horizon: {slots: 24, slot_minutes: 60}\n"
        "pools:\n"
        "  - {name: h100, gpu_type: H100-80GB, nodes: 3, gpus_per_node: 8, flavors: [h100],\n"
        f"     node_names: [{', '.join(HOSTS)}]}}\n"
        "services:\n"
        "  - {name: chat, pool: h100, gpus_per_replica: 2,\n"
        "     demand: {csv: chat.csv, column: replicas}}\n"
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_KUEUE_STATE": str(world)}
    c = {"dir": tmp_path, "env": env, "world": world}
    _configure(c, holds=False)
    return c


def _configure(c: dict[str, Any], *, holds: bool, window: str = "4h") -> None:
    (c["dir"] / "run.yaml").write_text(
        "scheduler: kueue\ncluster: cluster.yaml\n"
        "queue: {command: [kubectl, get, workloads, -A, -o, json]}\n"
        "state: state\nevery: 1h\nfreeze: 1h\nsolver: cpsat\ntime_limit: 1\nworkers: 1\n"
        "kueue: {cluster_queue: batch, cluster_queue_object: "
        f"{{command: [kubectl, get, clusterqueue, batch, -o, json]}}, holds: {str(holds).lower()}, "
        f"quota_window: {window}}}\n"
    )


def _world_now(c: dict[str, Any]) -> dict[str, Any]:
    world: dict[str, Any] = json.loads(c["world"].read_text())
    return world


def _run(c: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    """One cycle at the world's clock."""
    now = fake.iso(_world_now(c)["clock"])
    return subprocess.run(
        [str(HORIZON_OPT), "run", str(c["dir"] / "run.yaml"), "--now", now, *args],
        env=c["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _cycle(c: dict[str, Any]) -> list[list[str]]:
    """One applied cycle that must succeed; the patches it sent."""
    before = len(_world_now(c)["log"])
    done = _run(c, "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    return [a for a in _world_now(c)["log"][before:] if a[1] == "patch"]


def _tick(c: dict[str, Any], minutes: int) -> None:
    state = _world_now(c)
    fake.tick(state, minutes)
    c["world"].write_text(json.dumps(state))


def _h100_quota(state: dict[str, Any]) -> int:
    return dict(fake.gpu_flavors(state["clusterqueue"]))["h100"]


class _Current:
    """The plan in force (state/current): its instance and plan files, read as files."""

    def __init__(self, c: dict[str, Any]) -> None:
        folder = c["dir"] / "state" / "current"
        self.instance = yaml.safe_load((folder / "instance.yaml").read_text())
        self.plan = json.loads((folder / "plan.json").read_text())
        h = self.instance["horizon"]
        self.minutes = h["slot_minutes"]
        self.start = datetime.fromisoformat(h["start"].replace("Z", "+00:00"))
        when = datetime.fromisoformat(self.instance["now"].replace("Z", "+00:00"))
        self.now = math.ceil((when - self.start) / timedelta(minutes=self.minutes) - 1e-9)

    def inference_gpus_at(self, slot: int) -> int:
        per = {s["name"]: s["gpus_per_replica"] for s in self.instance["services"]}
        return sum(
            b["replicas"] * per[b["service"]]
            for b in self.plan["inference"]
            if b["start"] <= slot < b["end"]
        )

    def running(self) -> set[str]:
        return {j["id"] for j in self.instance["jobs"] if "placed" in j}

    def pending(self) -> set[str]:
        return {j["id"] for j in self.instance["jobs"]} - self.running()

    def starts(self) -> dict[str, int]:
        return {a["job"]: a["start"] for a in self.plan["assignments"]}


def _expected_quota(c: dict[str, Any], window: int = 4) -> int:
    """The pool's GPUs (all hosts up) less the most GPUs the plan's inference holds in one slot
    of the next `window` hours (the quota window); the plan meets the forecast now (2 GPUs a
    replica, no headroom)."""
    current = _Current(c)
    held = max(current.inference_gpus_at(current.now + k) for k in range(window))
    hour = (current.start + current.now * timedelta(minutes=current.minutes) - T0) // timedelta(
        hours=1
    )
    assert current.inference_gpus_at(current.now) >= 2 * DEMAND[hour % len(DEMAND)], hour
    return fake.flavor_gpus(_world_now(c), "h100") - held


def _quota_patch(sent: list[list[str]]) -> list[dict[str, Any]]:
    """The operations of the one quota patch among `sent`."""
    patches = [a for a in sent if a[2] == "clusterqueue"]
    assert len(patches) == 1, sent
    argv = patches[0]
    assert argv[:4] == ["kubectl", "patch", "clusterqueue", "batch"] and "--type=json" in argv
    ops: list[dict[str, Any]] = json.loads(argv[argv.index("-p") + 1])
    return ops


def _never_touched_admitted(c: dict[str, Any]) -> None:
    world = _world_now(c)
    assert world["patched_admitted"] == [] and world["evicted"] == []


def test_the_batch_quota_leaves_what_inference_holds_now_and_changes_only_when_it_must(
    cluster: dict[str, Any],
) -> None:
    """With a one-hour quota window, so that the quota follows the forecast hour by hour."""
    _configure(cluster, holds=False, window="1h")
    sent = _cycle(cluster)  # 10:00: two workloads admitted, three pending
    current = _Current(cluster)
    assert current.running() == {"team-a/job-train", "team-a/job-eval"}
    assert current.pending() == {"team-a/job-sft", "team-a/job-pretrain", "team-a/job-embed"}
    quota = _expected_quota(cluster, window=1)
    ops = _quota_patch(sent)
    gpu_path = "/spec/resourceGroups/1/flavors/1/resources/0"
    assert ops == [
        {"op": "test", "path": "/spec/resourceGroups/1/flavors/1/name", "value": "h100"},
        {"op": "test", "path": f"{gpu_path}/name", "value": "nvidia.com/gpu"},
        {"op": "replace", "path": f"{gpu_path}/nominalQuota", "value": str(quota)},
    ]
    world = _world_now(cluster)
    assert _h100_quota(world) == quota
    assert dict(fake.gpu_flavors(world["clusterqueue"]))["a100"] == 0  # left alone
    assert not [a for a in sent if a[2] != "clusterqueue"]  # holds are off: no workload patch
    assert_current_plan_valid(cluster["dir"] / "state")

    again = _run(cluster, "--apply")  # the same world at the same time: nothing to send
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert [a for a in _world_now(cluster)["log"] if a[1] == "patch"] == sent

    # An hour on: eval ended, Kueue admitted by the quota of 10:00. Someone also moved h100
    # first in the ClusterQueue: 10:00's patch no longer applies (its `test` fails, nothing
    # changes), the next one must find h100 at its new index.
    _tick(cluster, 60)
    world = _world_now(cluster)
    world["clusterqueue"]["spec"]["resourceGroups"][1]["flavors"].reverse()
    cluster["world"].write_text(json.dumps(world))
    stale = subprocess.run(sent[0], env=cluster["env"], capture_output=True, text=True)
    assert stale.returncode == 1 and "testing value" in stale.stderr, stale.stderr
    assert _world_now(cluster)["clusterqueue"] == world["clusterqueue"]
    admitted = {fake.wid(w) for w in world["workloads"] if fake.is_admitted(w)}
    assert sum(fake.used(world).values()) <= quota
    later = _cycle(cluster)
    assert _Current(cluster).running() == admitted
    new_quota = _expected_quota(cluster, window=1)
    assert len(later) == (new_quota != quota)  # a quota patch only if the quota changed
    assert _h100_quota(_world_now(cluster)) == new_quota

    # An hour more (12:00): the forecast grows to 3 replicas, the quota follows.
    _tick(cluster, 60)
    last = _cycle(cluster)
    final = _expected_quota(cluster, window=1)
    assert final != new_quota
    gpu_path = "/spec/resourceGroups/1/flavors/0/resources/0"
    assert _quota_patch(last) == [
        {"op": "test", "path": "/spec/resourceGroups/1/flavors/0/name", "value": "h100"},
        {"op": "test", "path": f"{gpu_path}/name", "value": "nvidia.com/gpu"},
        {"op": "replace", "path": f"{gpu_path}/nominalQuota", "value": str(final)},
    ]
    assert len(last) == 1 and _h100_quota(_world_now(cluster)) == final
    _never_touched_admitted(cluster)
    assert len(list((cluster["dir"] / "state" / "cycles").iterdir())) == 4


def _holds(c: dict[str, Any]) -> dict[str, bool]:
    """Workload id -> whether horizon-opt holds it (spec.active false and the annotation)."""
    out = {}
    for w in fake.visible(_world_now(c)):
        held = w["metadata"].get("annotations", {}).get(HELD) == "true"
        assert held == (not fake.is_active(w)), fake.wid(w)  # nobody else deactivates here
        out[fake.wid(w)] = held
    return out


def _planned_later(c: dict[str, Any]) -> set[str]:
    """Pending workloads of the plan in force that it does not start within one cadence (1 h,
    one slot): those horizon-opt must hold."""
    current = _Current(c)
    starts = current.starts()
    return {j for j in current.pending() if starts.get(j, math.inf) >= current.now + 1}


def test_holds_keep_pending_workloads_planned_later_from_being_admitted(
    cluster: dict[str, Any],
) -> None:
    _configure(cluster, holds=True)
    sent = _cycle(cluster)
    later = _planned_later(cluster)
    assert later, "the plan starts every pending workload now: nothing to hold"
    holds = _holds(cluster)
    assert {w for w, held in holds.items() if held} == later
    for argv in (a for a in sent if a[2] == "workload"):
        assert argv[4:6] == ["-n", "team-a"] and "--type=merge" in argv, argv
        assert json.loads(argv[-1]) == {
            "metadata": {"annotations": {HELD: "true"}},
            "spec": {"active": False},
        }
    assert len([a for a in sent if a[2] == "workload"]) == len(later)
    _tick(cluster, 30)  # Kueue admits only active workloads
    world = _world_now(cluster)
    assert not {fake.wid(w) for w in world["workloads"] if fake.is_admitted(w)} & later
    _never_touched_admitted(cluster)


def test_held_workloads_are_released_when_their_start_comes(cluster: dict[str, Any]) -> None:
    _configure(cluster, holds=True)
    released: set[str] = set()
    ever_held: set[str] = set()
    for _ in range(4):
        sent = _cycle(cluster)
        current = _Current(cluster)
        holds = _holds(cluster)
        held = {w for w, h in holds.items() if h}
        ever_held |= held
        # every held workload is a pending job of the plan, which starts it after this cadence
        assert held <= current.pending(), held - current.pending()
        assert held == _planned_later(cluster)
        for argv in (a for a in sent if a[2] == "workload"):
            patch = json.loads(argv[-1])
            if patch["spec"]["active"]:
                assert patch == {
                    "metadata": {"annotations": {HELD: None}},
                    "spec": {"active": True},
                }
                released.add(f"{argv[5]}/{argv[3]}")
        _tick(cluster, 60)
    assert released and released <= ever_held
    world = _world_now(cluster)
    started = {fake.wid(w) for w in world["workloads"] if fake.condition(w, "Admitted")}
    assert released & started  # a released workload was admitted by Kueue afterwards
    _never_touched_admitted(cluster)


def test_cycles_keep_succeeding_when_admitted_work_outlasts_the_forecast(
    cluster: dict[str, Any],
) -> None:
    """A quota set for now only (24 less the 4 GPUs chat needs at 10:00) would let Kueue admit
    pretrain (16) and tune (4) by 12:00, running past 13:00 when chat needs 8: 20 + 8 > 24, and
    the next cycles could not place inference. The quota leaves room for the forecast's peak
    over its window (`quota_window`, 4 h), so every cycle succeeds."""
    for minutes in (0, 60, 120):
        if minutes:
            _tick(cluster, minutes)
        need = 2 * DEMAND[(_world_now(cluster)["clock"] - _epoch(T0)) // 3600 % len(DEMAND)]
        _cycle(cluster)
        assert _h100_quota(_world_now(cluster)) <= POOL_GPUS - need
    _never_touched_admitted(cluster)
