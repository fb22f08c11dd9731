"""`import kueue`: Kueue's Workloads become an instance, around the cluster file.

The input is the parsed JSON or YAML (`read_workloads`) of `kubectl get workloads -A -o json`
(or `-o yaml`): a `List` of
`kueue.x-k8s.io/v1beta1` (or `v1beta2`) `Workload` objects. A single Workload object, or a JSON
array of them (the `items` of such a List), is read the same way.

| Kueue field | instance field |
| --- | --- |
| `metadata.namespace` + `/` + `metadata.name` | `id` (`team-a/job-train-5f2c1`; FORMAT.md allows any non-empty id, and Kubernetes names hold no `/`, so it is kept as is; no namespace: `default`, noted) |
| sum over `spec.podSets[]` of `count` x the pod's GPUs | `gpus` (a pod's GPUs: the sum over its containers of `resources.requests` of `nvidia.com/gpu` and `amd.com/gpu`, or `limits` when there is no request, or the largest init container's when that is more, as Kubernetes counts a pod's request; quantities `"8"`, `8`, `"1k"` are whole numbers; an admitted pod set counts the pods Kueue admitted; a `resourceUsage` of the GPU resources that differs from the requests is noted, and the requests stand, since the kubelet allocates what pods request) |
| `status.admission.podSetAssignments[].flavors` (the GPU resource's ResourceFlavor) | `pools` of an admitted workload: the pool whose `flavors` lists it in the cluster file |
| annotation `horizon-opt/pools: "h100,a100"` | `pools` of a pending workload; else the pools of the flavors that admitted workloads of the same LocalQueue (`metadata.namespace`, `spec.queueName`) hold; else every pool (both noted) |
| annotation `horizon-opt/duration: "6h"` | `duration`, the same on every pool (`90m`, `6h`, `1.5h`, `2d`) |
| `spec.maximumExecutionTimeSeconds` - `status.accumulatedPastExexcutionTimeSeconds` (v1beta2: `accumulatedPastExecutionTimeSeconds`) | `duration` without the annotation (seconds, rounded up to whole minutes): Kueue deactivates the workload after that much admitted time |
| `spec.podSets[].template.spec.activeDeadlineSeconds` (the largest) | `duration` without either: a pod's time limit |
| the `default_duration` argument (`"4h"`) | `duration` without any of these (noted) |
| `spec.priority` (int32, from the WorkloadPriorityClass or the pod PriorityClass; absent: 0) | `priority`: `p + 1` for `p >= 0` (at most 1,000,000, noted when capped), `1 / (1 - p)` to 12 significant digits for `p < 0` (-1 -> 0.5, -5 -> 0.166666666667): positive and strictly increasing up to the cap, so Kueue's order is kept, the same on every snapshot |
| `metadata.creationTimestamp` | `release` (ISO-8601) |
| annotation `horizon-opt/deadline: "2026-12-02T06:00:00Z"` | `deadline`; none without it |
| annotation `horizon-opt/kind: training` | `kind`; `other` without it |
| condition `Admitted` True (and not `Evicted` True) | `placed`: running on its flavor's pool from the condition's `lastTransitionTime`, until that plus `duration`; on the hosts of a topology assignment (`kubernetes.io/hostname`; v1beta1 `domains` or v1beta2 `slices`, importers/kueue/topology.py) named in `pools[].node_names` (`gpus` names them as they are: the instance's `node_names`), one placed part per host when the placement rule cannot hold its GPUs per node (importers/parts.py), else on the lowest nodes of the pool that have room (noted: Kueue does not record nodes) |
| condition `Finished` True, `spec.active: false` (unless horizon-opt held it: annotation `horizon-opt/held: "true"`, pending as any other), or `metadata.deletionTimestamp` set | left out (noted) |
| conditions `Evicted`, `Preempted` True, `QuotaReserved` False with reason `Inadmissible`, `QuotaReserved` True without `Admitted` (admission checks pending: then on the reserved flavor's pool) | a pending job (not placed), noted with the condition's reason and message |
| `status.admission.clusterQueue`; without an admission, the LocalQueue's `spec.clusterQueue` (`localqueues`: `metadata.namespace` + `metadata.name` = the workload's namespace + `spec.queueName`), else the ClusterQueue that admitted workloads of the same LocalQueue in the payload (noted), else none (noted) | `team`: the cluster file's team whose `queues` lists the ClusterQueue, else the team named like it (characters outside `[a-z0-9_-]`, such as dots, become `-`, noted), else the ClusterQueue's own team (`clusterqueues`); none otherwise (one note per ClusterQueue); no teams at all without `teams` in the cluster file and without `clusterqueues` |
| a ClusterQueue (`clusterqueues`) the cluster file does not define: `spec.resourceGroups[].flavors[].resources[]` of the GPU resources, `spec.cohort` (v1beta2 `spec.cohortName`) | a team: per pool, `quota` = the sum of `nominalQuota` over its flavors on that pool (`pools[].flavors`), `limit` = the sum of `nominalQuota` + `borrowingLimit`, or of `nominalQuota` without a cohort (it cannot borrow), none in a cohort with a flavor there without `borrowingLimit`; both capped at the pool's GPUs; `lendingLimit` is not modelled (noted); two ClusterQueues that become one team name are refused, naming both |

The annotations are read on the Workload's `metadata.annotations`, then on its pod sets'
`template.metadata.annotations` (Kueue copies a Job's pod template there, so annotating the Job's
pod template is enough).

A running job's times are clipped to the horizon (noted): a start before it is placed from slot 0,
an end after it is placed at the horizon's end, and an expected end that has already passed (the
workload is still admitted) becomes one slot after `now`.

FORMAT.md's placement rule (a gang of at most G GPUs on one node, a larger one on whole nodes of G
GPUs) decides the pools: a pool whose nodes cannot hold one of the pods, or on which the gang
breaks the rule, is not allowed (noted); when no pool is left, the gang is rounded up to whole
nodes of the pool that wastes the fewest GPUs (noted). Pods whose GPUs do not divide G may not fill
whole nodes in Kubernetes (noted).

Malformed input raises InputError, one line per malformed field, naming the JSON path
(`workloads.json: items[2].spec.podSets[0].count: expected an integer, got '3'`).

A Workload is read as the model of importers/kueue/workload.py and mapped to one job by
importers/kueue/jobs.py; LocalQueues and ClusterQueues are read by importers/kueue/queues.py and
become teams in importers/kueue/teams.py; this module goes over the payload: the pools each
LocalQueue's admitted workloads hold, the nodes and GPU indices of the running jobs, parts,
teams, and the compiler's word.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from horizon_opt.errors import InputError, InstanceError, Problem, in_item
from horizon_opt.importers.clock import Clock as _Clock
from horizon_opt.importers.cluster import (
    ClusterFile,
    ClusterPool,
    check_snapshot,
    instance_document,
)
from horizon_opt.importers.draft import JobDraft, PlacedDraft
from horizon_opt.importers.kueue.jobs import WorkloadMapper
from horizon_opt.importers.kueue.jobs_admitted import Running as _Running
from horizon_opt.importers.kueue.kube import items_of, parse_items, read_objects
from horizon_opt.importers.kueue.queues import Queues, read_queues
from horizon_opt.importers.kueue.teams import QueueTeams
from horizon_opt.importers.kueue.workload import GPU_RESOURCES
from horizon_opt.importers.kueue.workload import Workload as _Workload
from horizon_opt.importers.kueue.workload import job_hosts as _job_hosts
from horizon_opt.importers.parts import holds_as_one_gang, part_id, split_note
from horizon_opt.importers.result import Imported, gpu_indices
from horizon_opt.model.instance import duration_minutes
from horizon_opt.model.spec import show
from horizon_opt.schedulers.kueue import kueue_version_notes
from horizon_opt.times import iso

__all__ = ["GPU_RESOURCES", "import_kueue", "read_workloads"]


class _Nodes:
    """Which nodes of each pool running jobs hold, to place the ones Kueue gives no nodes for."""

    def __init__(self, cluster: ClusterFile, clock: _Clock) -> None:
        self.cluster = cluster
        self.pool_of = {n: p.name for n, p in cluster.node_pools().items()}
        self.used: dict[str, int] = {}
        self.down: dict[str, list[tuple[int, int]]] = {}
        for o in cluster.instance_outages():
            a, b = clock.of(o.start, False), clock.of(o.end, True)
            if a is not None and b is not None:
                self.down.setdefault(o.node, []).append((a, b))

    def free(self, node: str, pool: ClusterPool, start: int, end: int) -> int:
        if any(a < end and start < b for a, b in self.down.get(node, [])):
            return 0
        return pool.gpus_per_node - self.used.get(node, 0)

    def take(self, nodes: Mapping[str, int]) -> None:
        for node, gpus in nodes.items():
            self.used[node] = self.used.get(node, 0) + gpus

    def lowest(self, pool: ClusterPool, gpus: int, start: int, end: int) -> dict[str, int] | None:
        """The lowest node with room for `gpus`, or the lowest whole free nodes for more."""
        g = pool.gpus_per_node
        names = pool.instance_names()
        if gpus <= g:
            node = next((n for n in names if self.free(n, pool, start, end) >= gpus), None)
            return None if node is None else {node: gpus}
        whole = [n for n in names if self.free(n, pool, start, end) == g][: gpus // g]
        return {n: g for n in whole} if len(whole) == gpus // g else None

    def given(
        self, hosts: Mapping[str, int], pool: ClusterPool, gpus: int, start: int, end: int
    ) -> tuple[dict[str, int] | None, str]:
        """The nodes of a topology assignment (host -> GPUs), or None and why not."""
        names = self.cluster.host_nodes()
        unknown = sorted(h for h in hosts if h not in names)
        if unknown:
            return None, f"host(s) {', '.join(unknown)} are not in the cluster file's node_names"
        nodes = {names[h]: n for h, n in hosts.items() if n}
        other = sorted(n for n in nodes if self.pool_of[n] != pool.name)
        if other:
            return None, f"node(s) {', '.join(other)} are not of pool {pool.name}"
        g = pool.gpus_per_node
        if sum(nodes.values()) != gpus and holds_as_one_gang(
            nodes, {n: pool.name for n in nodes}, pool.nodes, g
        ):
            spread = ", ".join(f"{n}: {k}" for n, k in sorted(nodes.items()))
            return None, f"it holds {spread} GPUs, not the {gpus} of its gang"
        full = [n for n, k in nodes.items() if self.free(n, pool, start, end) < k]
        if full:
            return None, f"node(s) {', '.join(sorted(full))} are down or have no room left for it"
        return nodes, ""


def read_workloads(path: str | os.PathLike[str]) -> Any:
    """The parsed content of `kubectl get workloads -A -o json` or `-o yaml` (a List, a bare
    array, one Workload, or several YAML documents); InputError names the file."""
    return read_objects(path, "kubectl get workloads -A -o json or -o yaml output")


def import_kueue(
    workloads: Any,
    cluster: ClusterFile,
    *,
    name: str = "kueue",
    snapshot: datetime | None = None,
    default_duration: str = "4h",
    gpu_resources: Sequence[str] = GPU_RESOURCES,
    source: str = "workloads.json",
    localqueues: Any | None = None,
    clusterqueues: Any | None = None,
    localqueues_source: str = "localqueues",
    clusterqueues_source: str = "clusterqueues",
) -> Imported:
    """The instance of Kueue's Workloads around `cluster`, as of `snapshot` (default: now).

    `workloads`: parsed `kubectl get workloads -A -o json` (a List), its `items` array, or one
    Workload. `default_duration`: the run time of a workload that states none (`90m`, `4h`,
    `2d`). `gpu_resources`: the extended resources counted as GPUs. `source`: the file name that
    error messages start with. `localqueues`, `clusterqueues`: parsed `kubectl get localqueues
    -A -o yaml` and `kubectl get clusterqueues -o yaml` (optional; `*_source` name them): each
    job's team and the teams' quotas and limits (importers/kueue/teams.py). Malformed input
    raises InputError naming the JSON path; what the mapping could not carry over as is becomes
    a Note (the module's text gives the mapping).
    """
    default_minutes = duration_minutes(default_duration)
    if default_minutes is None or default_minutes <= 0:
        raise InputError([f"default_duration: not a duration: {show(default_duration)} (e.g. 4h)"])
    given_snapshot = snapshot is not None
    if snapshot is None:
        snapshot = datetime.now(UTC).replace(microsecond=0)
    elif snapshot.tzinfo is None:
        snapshot = snapshot.replace(tzinfo=UTC)
    check_snapshot(cluster, snapshot, "--now" if given_snapshot else "the clock")
    clock = _Clock(cluster, snapshot)
    if not 0 <= clock.now < clock.slots:
        raise InputError(
            [
                f"snapshot {iso(snapshot)} is outside the cluster file's horizon "
                f"({clock.time(0)} to {clock.time(clock.slots)})"
            ]
        )
    try:
        items = items_of(workloads, "Workload", "kubectl get workloads -A -o json")
    except InputError as exc:
        raise InputError([f"{source}: {p}" for p in exc.problems]) from None
    context = {"resources": tuple(gpu_resources)}
    parsed, problems = parse_items(_Workload, items, source, context)
    try:
        queues = read_queues(
            localqueues, clusterqueues, gpu_resources, localqueues_source, clusterqueues_source
        )
    except InputError as exc:
        problems += exc.problems
    if problems:
        raise InputError(problems)
    importer = _Importer(cluster, clock, math.ceil(default_minutes - 1e-9), tuple(gpu_resources))
    if not given_snapshot:
        importer.note(None, "snapshot", f"not given: the time of the import, {iso(snapshot)}")
    for note in kueue_version_notes(item for _, item in items):
        importer.note(None, "apiVersion", note)
    for field, note in queues.notes:
        importer.note(None, field, note)
    return importer.run(parsed, name, source, queues)


class _Importer(WorkloadMapper):
    """The payload's Workloads, each as its job, then the running jobs' nodes and GPUs."""

    # -- the whole payload ---------------------------------------------------------------------

    def run(self, parsed: list[_Workload], name: str, source: str, queues: Queues) -> Imported:
        for w in parsed:
            if w.assignments is not None and w.queue is not None:
                for pool in self.assigned(w)[0]:
                    seen = self.queue_pools.setdefault((w.namespace or "default", w.queue), [])
                    if pool.name not in seen:
                        seen.append(pool.name)
        ids: set[str] = set()
        jobs: list[tuple[_Workload, JobDraft]] = []
        running: list[_Running] = []
        problems = []
        for w in parsed:
            if w.id in ids:
                self.note(w, "metadata.name", "appears twice in the input: the first is kept")
                continue
            ids.add(w.id)
            try:
                mapped = self.job(w)
            except InputError as exc:  # a field only the mapping reads, named by its path
                problems += [f"{source}: {p}" for p in exc.problems]
                continue
            if mapped is None:
                continue
            job, placed = mapped
            jobs.append((w, job))
            if placed is not None:
                running.append(placed)
        if problems:
            raise InputError(problems)
        teams = QueueTeams(self.cluster, queues, source, self.note).apply(parsed, jobs)
        counts = self.place(running)
        per_node = {n: p.gpus_per_node for n, p in self.cluster.node_pools().items()}
        order = [(r.w.id, counts[r.w.id]) for r in running if r.w.id in counts]
        indices, index_notes = gpu_indices(order, {}, per_node)
        self.notes.extend((-1, n) for n in index_notes)
        kept = []
        for w, job in jobs:
            if "placed" in job:
                if w.id not in counts:
                    continue
                job["placed"]["gpus"] = indices[w.id]
            kept += [(w, j) for j in self.parts(w.id, job)]
        document = instance_document(
            self.cluster, name, self.clock.snapshot, [j for _, j in kept], teams
        )
        notes = tuple(n for _, n in sorted(self.notes, key=lambda x: x[0]))
        result = Imported(document, notes, self.cluster.folder)
        try:
            result.compile()
        except InstanceError as exc:
            raise InputError([_workload_problem(source, p, kept) for p in exc.details]) from None
        return result

    def parts(self, job_id: str, job: JobDraft) -> list[JobDraft]:
        """The job, or its parts when its topology assignment holds GPUs per node that the
        placement rule cannot hold as one gang (importers/parts.py)."""
        hosts = self.split.get(job_id)
        if hosts is None:
            return [job]
        out: list[JobDraft] = []
        pool_of = {n: p.name for n, p in self.cluster.node_pools().items()}
        for node, idx in job["placed"]["gpus"].items():
            pool = pool_of[node]
            placed: PlacedDraft = {**job["placed"], "pool": pool, "gpus": {node: idx}}
            part_of = part_id(job_id, hosts[node])
            part: JobDraft = {**job, "id": part_of, "gpus": len(idx), "pools": [pool]}
            out.append(part | {"placed": placed})
        return out

    def place(self, running: list[_Running]) -> dict[str, dict[str, int]]:
        """Nodes of running jobs (id -> node -> GPUs): a topology assignment's hosts first, then
        the others, earliest start first, on the lowest nodes of their pool with room."""
        nodes = _Nodes(self.cluster, self.clock)
        counts: dict[str, dict[str, int]] = {}
        later: list[tuple[_Running, str]] = []
        for r in running:
            hosts = _job_hosts(r.w)
            if hosts is None:
                later.append((r, ""))
                continue
            given, why = nodes.given(hosts, r.pool, r.gpus, r.start, r.end)
            if given is None:
                later.append((r, f"its topology assignment is not used: {why}; "))
                continue
            nodes.take(given)
            counts[r.w.id] = given
            if not holds_as_one_gang(
                given, {n: r.pool.name for n in given}, r.pool.nodes, r.pool.gpus_per_node
            ):
                names = {v: k for k, v in self.cluster.host_nodes().items()}
                held = {names[n]: k for n, k in given.items()}
                per_node = {names[n]: r.pool.gpus_per_node for n in given}
                self.note(r.w, "status.admission", split_note(held, per_node))
                self.split[r.w.id] = {n: names[n] for n in given}
        for r, why in sorted(later, key=lambda x: (x[0].start, x[0].w.index)):
            lowest = nodes.lowest(r.pool, r.gpus, r.start, r.end)
            if lowest is None:
                self.note(
                    r.w,
                    "status.admission",
                    f"{why}admitted on pool {r.pool.name}, where the running jobs leave no room "
                    f"for a gang of {r.gpus} GPUs: left out (its GPUs look free to the "
                    "planner)",
                )
                continue
            nodes.take(lowest)
            counts[r.w.id] = lowest
            self.note(
                r.w,
                "status.admission",
                f"{why}node placement assumed (Kueue does not record nodes): on "
                f"{', '.join(lowest)}, the lowest nodes of {r.pool.name} with room",
            )
        return counts


def _workload_problem(
    source: str, problem: str | Problem, kept: Sequence[tuple[_Workload, JobDraft]]
) -> str:
    """A compile problem said against the workload it comes from."""
    found = in_item(problem, "jobs")
    if found is None or found[0] >= len(kept):
        return f"{source}: {problem}"
    k, field, message = found
    w = kept[k][0]
    return f"{source}: {w.path} ({w.id}): instance field {field or 'job'}: {message}"
