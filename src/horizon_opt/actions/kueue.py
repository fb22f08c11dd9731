"""The plan as Kueue commands: the batch ClusterQueue's GPU quota per flavor, and which pending
Workloads may be admitted now; admitted workloads are never touched.

Sources: the Kueue API types of kueue.x-k8s.io v1beta1 and v1beta2 (apis/kueue/*/
clusterqueue_types.go and workload_types.go, which the API reference at kueue.sigs.k8s.io is
generated from) and the Workload concept page (kueue.sigs.k8s.io/docs/concepts/workload/#active),
as of Kueue 0.19. Both versions have the same paths for what is written here.

Quota. A ClusterQueue's quota does not vary in time, so each cycle sets the batch queue's
`spec.resourceGroups[g].flavors[f].resources[r].nominalQuota` for each pool's flavor to the GPUs
of the pool's nodes that are up at `now`, less the GPUs the plan's inference holds at `now`: a
JSON patch (RFC 6902) whose `test` operations check that indices g, f, r (read from
`kubectl get clusterqueue NAME -o json`) still name that flavor and resource, so a queue edited
since it was read makes the patch fail instead of changing another quota. `borrowingLimit` is
left alone: a batch queue in a cohort may still borrow above its nominal quota.

Workloads. `spec.active` (Kueue 0.6 on; default true): false keeps a workload from being
admitted, and evicts it if it is admitted, so it is only ever written on pending workloads. A
pending workload that the plan starts before `now + hold_after_minutes` (the re-planning
cadence) stays or becomes active; one the plan starts later, or not at all, is held
(`active: false`) until a cycle lets it go, so it does not take quota that the plan gives to
earlier work. Held workloads carry the annotation `horizon-opt/held: "true"` (removed on
release), which tells them apart from workloads someone else deactivated: `import kueue` leaves
out every workload with `spec.active: false` today, so for a held workload to be planned (and
released) again the importer must keep the ones with that annotation as pending.
Workload ids are the importer's `namespace/name`; running parts (`<id>@<host>`) get nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from horizon_opt.actions.core import (
    Action,
    Actions,
    Desired,
    changes,
    check_plan,
    checked_applied,
    is_running,
    wall_clock,
)
from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Assignment, Plan
from horizon_opt.schedulers.kueue import HELD_ANNOTATION
from horizon_opt.times import iso

__all__ = ["HELD_ANNOTATION", "KueueOptions", "kueue_actions", "quota_path"]


@dataclass(frozen=True)
class KueueOptions:
    """How the plan is written for one Kueue installation."""

    cluster_queue: str  # the batch ClusterQueue
    flavors: Mapping[str, str] = field(default_factory=dict)  # pool -> ResourceFlavor name
    cluster_queue_object: Mapping[str, Any] | None = None  # kubectl get clusterqueue -o json
    resource: str = "nvidia.com/gpu"
    hold_after_minutes: int = 60  # the re-planning cadence
    holds: bool = True  # pending workloads wait for their planned start (False: quotas only)
    quota_window_minutes: int = 0  # the quota leaves room for inference's peak over this long


def kueue_actions(
    instance: Instance,
    plan: Plan,
    options: KueueOptions,
    applied: Mapping[str, Mapping[str, str]] | None = None,
) -> Actions:
    """The kubectl commands that make Kueue follow `plan` at `instance.now`, for what changed
    since `applied` (the `desired` of the last applied cycle; None: nothing applied)."""
    wall_clock(instance)
    _check_options(instance, options)
    assigned = check_plan(instance, plan)
    before = checked_applied(applied)
    desired = _quotas(instance, plan, options)
    if options.holds:
        desired.update(_holds(instance, plan, assigned, options))
    render = _Renderer(instance, options)
    actions = changes(before, desired, render)
    return Actions(desired, tuple(actions), "kueue", tuple(render.notes))


def _check_options(instance: Instance, options: KueueOptions) -> None:
    problems = []
    if not options.cluster_queue:
        problems.append("kueue options: cluster_queue is empty")
    if options.hold_after_minutes <= 0:
        problems.append("kueue options: hold_after_minutes must be > 0")
    problems += [
        f"kueue options: flavors: {pool!r} is not a pool of the instance"
        for pool in options.flavors
        if pool not in instance.pool_index
    ]
    if problems:
        raise InputError(problems)
    if options.cluster_queue_object is not None:
        for flavor in options.flavors.values():
            quota_path(
                options.cluster_queue_object, options.cluster_queue, flavor, options.resource
            )


def quota_path(cq: Mapping[str, Any], name: str, flavor: str, resource: str) -> str:
    """The JSON pointer of `flavor`'s `resource` quota in a ClusterQueue object; InputError
    naming what is missing."""
    where = f"clusterqueue {name}"
    meta = cq.get("metadata")
    if cq.get("kind", "ClusterQueue") != "ClusterQueue" or not isinstance(meta, Mapping):
        raise InputError([f"{where}: not a ClusterQueue object (kubectl get clusterqueue -o json)"])
    if meta.get("name") != name:
        raise InputError([f"{where}: the object given is ClusterQueue {meta.get('name')!r}"])
    spec = cq.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, Mapping) else None
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        flavors = group.get("flavors") if isinstance(group, Mapping) else None
        for f, fl in enumerate(flavors if isinstance(flavors, list) else []):
            if not isinstance(fl, Mapping) or fl.get("name") != flavor:
                continue
            resources = fl.get("resources")
            for r, res in enumerate(resources if isinstance(resources, list) else []):
                if isinstance(res, Mapping) and res.get("name") == resource:
                    return f"/spec/resourceGroups/{g}/flavors/{f}/resources/{r}"
            raise InputError(
                [f"{where}: flavor {flavor!r} has no resource {resource!r} in spec.resourceGroups"]
            )
    raise InputError([f"{where}: no flavor {flavor!r} in spec.resourceGroups[].flavors"])


# ---- desired state


def _quotas(instance: Instance, plan: Plan, options: KueueOptions) -> Desired:
    """GPUs of each mapped pool left to batch from `now` over the quota window: the fewest,
    over its slots, of up nodes' GPUs less inference's (a workload Kueue admits now runs on
    beside inference's later peak too)."""
    gpr = {s.name: s.gpus_per_replica for s in instance.services}
    now = instance.now
    end = min(
        instance.slots, now + max(1, -(-options.quota_window_minutes // instance.slot_minutes))
    )
    inference = np.zeros((instance.num_nodes, end - now), dtype=np.int64)
    for block in plan.inference:
        lo, hi = max(block.start, now), min(block.end, end)
        if lo < hi:
            inference[instance.node_index[block.node], lo - now : hi - now] += (
                block.replicas * gpr[block.service]
            )
    out: Desired = {}
    for pool_name, flavor in sorted(options.flavors.items()):
        pool = instance.pools[instance.pool_index[pool_name]]
        rows = list(pool.node_range)
        up = instance.up[rows, now:end]
        room = (pool.gpus_per_node * up - inference[rows] * up).sum(axis=0)
        t = int(np.argmin(room))
        out[f"clusterqueue/{options.cluster_queue}/{flavor}"] = {
            "pool": pool_name,
            "resource": options.resource,
            "nominalQuota": str(max(0, int(room[t]))),
            "up_gpus": str(int(pool.gpus_per_node * up[:, t].sum())),
            "inference_gpus": str(int((inference[rows, t] * up[:, t]).sum())),
        }
    return out


def _holds(
    instance: Instance, plan: Plan, assigned: Mapping[str, Assignment], options: KueueOptions
) -> Desired:
    """The pending workloads to hold: planned after this cycle, or not planned."""
    release_before = instance.now + options.hold_after_minutes / instance.slot_minutes
    reasons = {u.job: u.reason for u in plan.unscheduled}
    out: Desired = {}
    bad = []
    for job in instance.jobs:
        if is_running(instance, job) or "@" in job.id:
            continue
        a = assigned.get(job.id)
        if a is not None and a.start < release_before:
            continue
        if job.id.count("/") != 1 or "" in job.id.split("/"):
            bad.append(job.id)
            continue
        if a is None:
            out[f"workload/{job.id}"] = {"active": "false", "why": reasons.get(job.id, "")}
        else:
            when = instance.slot_time(a.start)
            assert when is not None
            out[f"workload/{job.id}"] = {"active": "false", "start": iso(when)}
    if bad:
        raise InputError([f"kueue: job {j!r} is not a Workload id (namespace/name)" for j in bad])
    return out


# ---- commands


class _Renderer:
    """The commands for one changed target; `notes` collects what it decided not to do."""

    def __init__(self, instance: Instance, options: KueueOptions) -> None:
        self.options = options
        self.pending = {j.id for j in instance.jobs if not is_running(instance, j)}
        self.notes: list[str] = []

    def __call__(
        self, op: str, target: str, old: Mapping[str, str] | None, new: Mapping[str, str] | None
    ) -> list[Action]:
        kind, _, rest = target.partition("/")
        if kind == "clusterqueue":
            return self._quota(target, rest, old, new)
        if kind == "workload":
            return self._workload(target, rest, old, new)
        return []

    def _quota(
        self, target: str, rest: str, old: Mapping[str, str] | None, new: Mapping[str, str] | None
    ) -> list[Action]:
        name, _, flavor = rest.partition("/")
        if new is None:
            self.notes.append(f"{target}: no longer mapped to a pool: its quota is left as it is")
            return []
        same = ("nominalQuota", "resource")
        if old is not None and all(old.get(k) == new[k] for k in same):
            return []  # only the figures behind it changed
        o = self.options
        if o.cluster_queue_object is None:
            raise InputError(
                [
                    f"kueue: setting clusterqueue {name}'s quota needs cluster_queue_object "
                    "(kubectl get clusterqueue NAME -o json) for the indices of its flavors"
                ]
            )
        path = quota_path(o.cluster_queue_object, name, flavor, new["resource"])
        group_path = path.rsplit("/resources/", 1)[0]
        ops = [
            {"op": "test", "path": f"{group_path}/name", "value": flavor},
            {"op": "test", "path": f"{path}/name", "value": new["resource"]},
            {"op": "replace", "path": f"{path}/nominalQuota", "value": new["nominalQuota"]},
        ]
        argv = ("kubectl", "patch", "clusterqueue", name, "--type=json", "-p", _compact(ops))
        why = (
            f"pool {new['pool']}: {new['up_gpus']} GPUs on nodes up now, less "
            f"{new['inference_gpus']} that the plan's inference holds now: "
            f"{new['nominalQuota']} for batch on flavor {flavor}"
        )
        return [Action("quota", target, argv, why)]

    def _workload(
        self, target: str, wid: str, old: Mapping[str, str] | None, new: Mapping[str, str] | None
    ) -> list[Action]:
        namespace, _, name = wid.partition("/")
        if new is None:
            if wid not in self.pending:
                self.notes.append(
                    f"{target}: held before and not pending in this instance (finished, deleted, "
                    "or left out by the importer as inactive): not released"
                )
                return []
            why = f"the plan starts {wid} before the next cycle: it may be admitted"
            patch = {"metadata": {"annotations": {HELD_ANNOTATION: None}}, "spec": {"active": True}}
            return [Action("activate", target, _patch(namespace, name, patch), why)]
        if old is not None and old.get("active") == new["active"]:
            return []  # only the reason changed: the workload is held either way
        if new.get("start"):
            why = f"the plan starts {wid} at {new['start']}, after the next cycle: held until then"
        else:
            reason = new.get("why") or "no reason given"
            why = f"the plan does not start {wid} in the horizon ({reason}): held"
        patch = {"metadata": {"annotations": {HELD_ANNOTATION: "true"}}, "spec": {"active": False}}
        return [Action("hold", target, _patch(namespace, name, patch), why)]


def _patch(namespace: str, name: str, patch: dict[str, Any]) -> tuple[str, ...]:
    return (
        "kubectl",
        "patch",
        "workload",
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        _compact(patch),
    )


def _compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)
