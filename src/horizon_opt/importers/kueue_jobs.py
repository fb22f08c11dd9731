"""One Kueue Workload as one instance job: its GPUs as a gang on the pools that can place it,
its run time, priority, kind, release and deadline, and, when admitted, its pool and the slots
it runs in (the nodes come later, from all running jobs together, in importers/kueue.py).

`WorkloadMapper` holds what the mapping needs (the cluster file, the horizon's `Clock`, the
pools of each flavor and LocalQueue) and the notes it makes; the mapping is the table in
importers/kueue.py, whose importer goes over the payload with it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from horizon_opt.actions.kueue import HELD_ANNOTATION
from horizon_opt.importers.cluster import ClusterFile, ClusterPool, horizon_start
from horizon_opt.importers.kube import Bad as _Bad
from horizon_opt.importers.kube import at as _at
from horizon_opt.importers.kube import timestamp as _timestamp
from horizon_opt.importers.kueue_gang import choose_gang
from horizon_opt.importers.kueue_workload import Workload as _Workload
from horizon_opt.importers.result import Note
from horizon_opt.instance import duration_minutes
from horizon_opt.spec import JOB_KINDS, MAX_PRIORITY, MAX_SLOTS, show
from horizon_opt.times import iso

__all__ = [
    "DEADLINE_ANNOTATION",
    "DURATION_ANNOTATION",
    "KIND_ANNOTATION",
    "POOLS_ANNOTATION",
    "Clock",
    "Running",
    "WorkloadMapper",
    "kueue_priority",
]

DURATION_ANNOTATION = "horizon-opt/duration"
DEADLINE_ANNOTATION = "horizon-opt/deadline"
POOLS_ANNOTATION = "horizon-opt/pools"
KIND_ANNOTATION = "horizon-opt/kind"


def kueue_priority(priority: int) -> float:
    """The instance priority of a Kueue priority (int32, may be zero or negative): `p + 1` for
    `p >= 0`, capped at 1,000,000, and `1 / (1 - p)` below, to 12 significant digits: positive,
    1 at 0, and strictly increasing up to 999,999 (the whole int32 range below), so Kueue's
    order is kept."""
    if priority >= 0:
        return float(min(priority + 1, MAX_PRIORITY))
    return float(f"{1 / (1 - priority):.12g}")


def _duration_text(minutes: int) -> str:
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


class Clock:
    """Slots of the horizon around the snapshot."""

    def __init__(self, cluster: ClusterFile, snapshot: datetime) -> None:
        self.snapshot = snapshot
        self.start = horizon_start(cluster, snapshot)
        self.step = timedelta(minutes=cluster.horizon.slot_minutes)
        self.slots = cluster.horizon.slots
        self.now = self.up(snapshot)

    def down(self, when: datetime) -> int:
        return math.floor((when - self.start) / self.step + 1e-9)

    def up(self, when: datetime) -> int:
        return math.ceil((when - self.start) / self.step - 1e-9)

    def time(self, slot: int) -> str:
        return iso(self.start + slot * self.step)

    def of(self, value: int | str, round_up: bool) -> int | None:
        """A slot of an outage's time field (slot or timestamp), None when unreadable."""
        if isinstance(value, int):
            return value
        try:
            when = _timestamp(value, "")
        except _Bad:
            return None
        return self.up(when) if round_up else self.down(when)


@dataclass
class Running:
    """An admitted workload's job on its pool from slot `start` to `end`, waiting for nodes."""

    w: _Workload
    job: dict[str, Any]
    pool: ClusterPool
    start: int
    end: int


class WorkloadMapper:
    """Workloads, one at a time, mapped onto the cluster file's pools and horizon."""

    def __init__(
        self,
        cluster: ClusterFile,
        clock: Clock,
        default_minutes: int,
        gpu_resources: tuple[str, ...],
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.default_minutes = default_minutes
        self.gpu_resources = gpu_resources
        self.by_name = {p.name: p for p in cluster.pools}
        self.flavor_pool: dict[str, ClusterPool] = {}
        for pool in cluster.pools:
            for flavor in pool.flavors:
                self.flavor_pool.setdefault(flavor, pool)
        self.queue_pools: dict[tuple[str, str], list[str]] = {}
        self.split: dict[str, dict[str, str]] = {}  # held per node: id -> node -> host
        self.notes: list[tuple[int, Note]] = []

    def note(self, w: _Workload | None, where: str, problem: str) -> None:
        self.notes.append((w.index if w else -1, Note(w.id if w else "", where, problem)))

    # -- one workload --------------------------------------------------------------------------

    def assigned(self, w: _Workload) -> tuple[list[ClusterPool], list[str]]:
        """The pools of the flavors Kueue assigned to the pod sets that hold GPUs (most GPUs
        first), and the flavors no pool lists."""
        share: dict[str, int] = {}
        unknown: set[str] = set()
        counts = w.counts()
        for ps in w.podsets:
            asg = (w.assignments or {}).get(ps.name)
            if asg is None or not ps.gpus or not counts[ps.name]:
                continue
            flavor = next((asg.flavors[r] for r in self.gpu_resources if r in asg.flavors), None)
            if flavor is None:  # no flavor for the GPU resource itself: any that names a pool
                flavor = next((f for f in asg.flavors.values() if f in self.flavor_pool), None)
            if flavor is None or flavor not in self.flavor_pool:
                unknown.update(asg.flavors.values() if flavor is None else [flavor])
                continue
            pool = self.flavor_pool[flavor]
            share[pool.name] = share.get(pool.name, 0) + counts[ps.name] * ps.gpus
        order = sorted(share, key=lambda p: -share[p])
        return [self.by_name[p] for p in order], sorted(unknown)

    def job(self, w: _Workload) -> tuple[dict[str, Any], Running | None] | None:
        """The workload's job (a running one without its GPUs yet), or None with a note."""
        if not self.kept(w):
            return None
        counts = w.counts()
        total = self.requested(w, counts)
        if total == 0:
            return None
        running = w.is_true("Admitted") and not w.is_true("Evicted")
        candidates = self.running_pool(w) if running else self.pending_pools(w)
        if not candidates:
            return None
        sizes = {ps.gpus for ps in w.podsets if ps.gpus and counts[ps.name]}
        gang = choose_gang(total, sizes, candidates)
        for text in gang.notes:
            self.note(w, "spec.podSets", text if gang.pools else f"{text}: left out")
        if not gang.pools:
            return None
        minutes = self.duration(w)
        job: dict[str, Any] = {
            "id": w.id,
            "kind": self.kind(w),
            "priority": self.priority(w),
            "gpus": gang.gpus,
            "duration": _duration_text(minutes),
            "pools": [p.name for p in gang.pools],
        }
        if not running:
            self.pending_notes(w, minutes)
        return self.times(w, job, running, gang.pools[0])

    def kept(self, w: _Workload) -> bool:
        """False (noted) for a workload that is finished, being deleted or deactivated."""
        if w.namespace is None:
            self.note(w, "metadata.namespace", "not given: namespace default assumed")
        finished = w.condition("Finished")
        if finished is not None and finished.true:
            self.note(w, "status.conditions.Finished", f"finished ({finished.why()}): left out")
            return False
        if w.deleting is not None:
            self.note(
                w,
                "metadata.deletionTimestamp",
                f"being deleted since {w.deleting}: its pods are stopping: left out",
            )
            return False
        if not w.active and w.annotations.get(HELD_ANNOTATION) == "true":
            self.note(w, "spec.active", "false: held by horizon-opt until its planned start")
        elif not w.active:
            self.note(
                w,
                "spec.active",
                "false (deactivated): Kueue admits it only once reactivated: left out",
            )
            return False
        return True

    def requested(self, w: _Workload, counts: dict[str, int]) -> int:
        """The GPUs its pods request, 0 (noted: left out) when none; what Kueue admitted or
        charged otherwise is noted."""
        if w.uncounted:
            self.note(
                w,
                "spec.podSets",
                f"asks for {', '.join(w.uncounted)}, not counted as GPUs (counted: "
                f"{', '.join(self.gpu_resources)})",
            )
        total = sum(counts[ps.name] * ps.gpus for ps in w.podsets)
        if total == 0:
            self.note(
                w, "spec.podSets", f"requests no GPUs ({', '.join(self.gpu_resources)}): left out"
            )
            return 0
        for ps in w.podsets:
            given = (w.assignments or {}).get(ps.name)
            if given is not None and given.count is not None and given.count != ps.count:
                self.note(
                    w,
                    f"status.admission.podSetAssignments[{ps.name}].count",
                    f"partially admitted: {given.count} of {ps.count} pods of pod set {ps.name}",
                )
            asked = counts[ps.name] * ps.gpus
            if given is not None and given.usage is not None and given.usage != asked:
                self.note(
                    w,
                    f"status.admission.podSetAssignments[{ps.name}].resourceUsage",
                    f"Kueue charged {given.usage} GPUs to pod set {ps.name}, its pods request "
                    f"{asked}: took the requests (the kubelet allocates what pods request; "
                    "quota accounting can differ)",
                )
        return total

    def pending_notes(self, w: _Workload, minutes: int) -> None:
        """What a plan cannot do for a pending workload: end a run longer than what is left of
        the horizon, keep the hosts it is pinned to."""
        left = (self.clock.slots - self.clock.now) * self.cluster.horizon.slot_minutes
        if minutes > left and not self.cluster.horizon.open_end:
            self.note(
                w,
                "duration",
                f"{_duration_text(minutes)} is longer than what is left of the horizon after "
                f"now ({_duration_text(left)}): it cannot end within it, so no plan starts it "
                "(lengthen horizon.slots)",
            )
        pinned = sorted({h for ps in w.podsets for h in ps.pinned})
        if pinned:
            self.note(
                w,
                "spec.podSets",
                f"pinned to {', '.join(pinned)} by node affinity: planned on its pool, where the "
                "plan may choose other nodes (an instance does not pin a job to a node)",
            )

    def kind(self, w: _Workload) -> str:
        kind = w.annotations.get(KIND_ANNOTATION)
        if kind is None:
            return "other"
        if kind.strip() not in JOB_KINDS:
            raise _Bad(
                w.annotation_paths[KIND_ANNOTATION],
                f"expected one of {', '.join(JOB_KINDS)}, got {show(kind)}",
            )
        return kind.strip()

    def priority(self, w: _Workload) -> float:
        weight = kueue_priority(w.priority)
        if w.priority + 1 > MAX_PRIORITY:
            self.note(
                w,
                "spec.priority",
                f"{w.priority:,} is above {MAX_PRIORITY - 1:,.0f}: priority capped at "
                f"{MAX_PRIORITY:,.0f} (higher Kueue priorities tie)",
            )
        return int(weight) if weight.is_integer() else weight

    def duration(self, w: _Workload) -> int:
        """Minutes: the annotation, the time Kueue still allows, a pod's deadline, the default."""
        text = w.annotations.get(DURATION_ANNOTATION)
        deadlines = [ps.deadline for ps in w.podsets if ps.deadline is not None]
        seconds: float
        if text is not None:
            minutes = duration_minutes(text)
            if minutes is None or minutes <= 0:
                raise _Bad(
                    w.annotation_paths[DURATION_ANNOTATION],
                    f"not a duration: {show(text)} (use e.g. 90m, 6h, 1.5h, 2d)",
                )
            seconds = minutes * 60
        elif w.max_exec is not None:
            seconds = w.max_exec - w.accumulated
            if seconds <= 0:
                self.note(
                    w,
                    "spec.maximumExecutionTimeSeconds",
                    f"{w.max_exec} s, all used in earlier admissions ({w.accumulated} s): Kueue "
                    "deactivates it once admitted; 1 minute assumed",
                )
                seconds = 60
        elif deadlines:
            seconds = max(deadlines)
        else:
            self.note(
                w,
                _at("metadata.annotations", DURATION_ANNOTATION),
                "no run time (no such annotation, maximumExecutionTimeSeconds or "
                f"activeDeadlineSeconds): {_duration_text(self.default_minutes)} assumed",
            )
            return self.default_minutes
        whole = math.ceil(seconds / 60 - 1e-9)
        longest = MAX_SLOTS * self.cluster.horizon.slot_minutes
        if whole > longest:
            self.note(
                w,
                "duration",
                f"{_duration_text(whole)} is more than {MAX_SLOTS:,} slots: capped there",
            )
            return longest
        return whole

    def running_pool(self, w: _Workload) -> list[ClusterPool]:
        pools, unknown = self.assigned(w)
        if not pools:
            self.note(
                w,
                "status.admission.podSetAssignments",
                f"admitted on flavor(s) {', '.join(unknown) or '(none)'}, which no pool of the "
                "cluster file lists (pools[].flavors): left out (its GPUs look free to the "
                "planner)",
            )
        elif len(pools) > 1:
            self.note(
                w,
                "status.admission.podSetAssignments",
                f"its pod sets run on pools {', '.join(p.name for p in pools)}, an instance job "
                f"on one: placed on {pools[0].name}, which holds most of its GPUs",
            )
        return pools[:1]

    def pending_pools(self, w: _Workload) -> list[ClusterPool]:
        evicted, preempted = w.condition("Evicted"), w.condition("Preempted")
        reserved = w.condition("QuotaReserved")
        if evicted is not None and evicted.true:
            extra = f"; preempted: {preempted.reason}" if preempted and preempted.true else ""
            self.note(w, "status.conditions.Evicted", f"evicted ({evicted.why()}{extra}): pending")
        elif preempted is not None and preempted.true:
            self.note(w, "status.conditions.Preempted", f"preempted ({preempted.why()}): pending")
        if reserved is not None and not reserved.true and reserved.reason == "Inadmissible":
            self.note(
                w,
                "status.conditions.QuotaReserved",
                f"inadmissible ({reserved.message or 'no message'}): pending, though Kueue will "
                "not admit it until that is fixed",
            )
        chosen = w.annotations.get(POOLS_ANNOTATION)
        if chosen is not None:
            names = [n for n in re.split(r"[\s,;]+", chosen) if n]
            bad = [n for n in names if n not in self.by_name]
            if bad or not names:
                raise _Bad(
                    w.annotation_paths[POOLS_ANNOTATION],
                    f"unknown pool(s) {', '.join(map(repr, bad))} (pools: "
                    f"{', '.join(self.by_name)})"
                    if bad
                    else "names no pool",
                )
            return [self.by_name[n] for n in dict.fromkeys(names)]
        pools, unknown = self.assigned(w)
        if unknown:
            self.note(
                w,
                "status.admission.podSetAssignments",
                f"quota reserved on flavor(s) {', '.join(unknown)}, which no pool of the cluster "
                "file lists (pools[].flavors): not used",
            )
        if pools:
            self.note(
                w,
                "status.conditions.QuotaReserved",
                f"quota reserved on {', '.join(p.name for p in pools)}, not admitted yet "
                "(admission checks pending): pending there",
            )
            return pools
        queue = (w.namespace or "default", w.queue or "")
        if queue in self.queue_pools:
            seen = self.queue_pools[queue]
            self.note(
                w,
                "spec.queueName",
                f"pending: on {', '.join(seen)}, the pools that admitted workloads of queue "
                f"{'/'.join(queue)} hold",
            )
            return [self.by_name[n] for n in seen]
        self.note(
            w,
            "spec.queueName",
            "pending, no flavor known for its queue: allowed on every pool (set the "
            f"{POOLS_ANNOTATION} annotation to choose)",
        )
        return list(self.cluster.pools)

    def times(
        self, w: _Workload, job: dict[str, Any], running: bool, pool: ClusterPool
    ) -> tuple[dict[str, Any], Running | None] | None:
        """Release, deadline and, when running, `placed` (without GPUs)."""
        clock = self.clock
        release = w.created
        if release is None:
            self.note(w, "metadata.creationTimestamp", "not given: released now")
        placed = None
        where: dict[str, Any] | None = None
        if running:
            slots = self.run_slots(w, job, release)
            if slots is None:
                return None
            release, first, start_text, last = slots
            where = {"pool": pool.name, "start": start_text, "end": clock.time(last)}
            placed = Running(w, job, pool, first, last)
        elif release is not None and clock.up(release) >= clock.slots:
            self.note(
                w, "metadata.creationTimestamp", f"{iso(release)} is after the horizon: left out"
            )
            return None
        if release is not None:
            job["release"] = iso(release)
        self.deadline(w, job, release)
        if where is not None:
            job["placed"] = where
        return job, placed

    def run_slots(
        self, w: _Workload, job: dict[str, Any], release: datetime | None
    ) -> tuple[datetime | None, int, str, int] | None:
        """A running workload's release, first slot (and the time `placed` says), and end slot;
        None (noted) when it ends by `now`."""
        clock = self.clock
        start, release = self.admitted(w, release)
        first, start_text = clock.down(start), iso(start)
        if first >= clock.now > 0:  # running means started before now (FORMAT.md)
            first, start_text = clock.now - 1, clock.time(clock.now - 1)
            self.note(
                w,
                "status.conditions.Admitted",
                f"admitted {iso(start)}, at `now`: placed from the slot before, so it is running",
            )
            if release is not None:
                release = min(release, clock.start + first * clock.step)
        if first < 0:
            self.note(
                w,
                "status.conditions.Admitted",
                f"start: {iso(start)} is before the horizon: placed from {clock.time(0)}",
            )
            first, start_text = 0, clock.time(0)
        last = self.run_end(w, job, start)
        if last is None:
            return None
        return release, first, start_text, last

    def admitted(self, w: _Workload, release: datetime | None) -> tuple[datetime, datetime | None]:
        """When it was admitted (at the latest the snapshot), and its release (at the latest
        its admission)."""
        admitted = w.condition("Admitted")
        assert admitted is not None
        if admitted.time is None:
            raise _Bad(f"{admitted.path}.lastTransitionTime", "required field is missing")
        start = _timestamp(admitted.time, f"{admitted.path}.lastTransitionTime")
        if start > self.clock.snapshot:
            self.note(
                w,
                "status.conditions.Admitted",
                f"admitted at {iso(start)}, after the snapshot: started at the snapshot",
            )
            start = self.clock.snapshot
        if release is not None and release > start:
            self.note(
                w,
                "metadata.creationTimestamp",
                f"{iso(release)} is after its admission: released at its admission",
            )
            release = start
        return start, release

    def run_end(self, w: _Workload, job: dict[str, Any], start: datetime) -> int | None:
        """The slot a running workload is expected to end at, within the horizon and after
        `now`; None (noted) when it ends between the snapshot and `now`."""
        clock = self.clock
        expected = start + timedelta(minutes=duration_minutes(job["duration"]) or 0)
        last = clock.up(expected)
        if expected <= clock.snapshot:
            last = clock.now + 1
            self.note(
                w,
                "duration",
                f"expected to end at {iso(expected)} ({job['duration']} after its "
                f"admission), before the snapshot, yet still admitted: assumed to end at "
                f"{clock.time(last)}",
            )
        elif last <= clock.now and not _stopped_by_kueue(w):
            last = clock.now + 1  # an estimate stops nothing: admitted now, it holds its GPUs
            self.note(
                w,
                "duration",
                f"expected to end at {iso(expected)} ({job['duration']} after its "
                f"admission), after the snapshot but by now ({clock.time(clock.now)}); only an "
                f"estimate, and it is admitted: held until {clock.time(last)}",
            )
        elif last <= clock.now:
            self.note(
                w,
                "duration",
                f"expected to end at {iso(expected)} ({job['duration']} after its "
                f"admission), after the snapshot but by now ({clock.time(clock.now)}), where "
                "the plan starts: Kubernetes or Kueue stops it by then, its GPUs are free; "
                "left out",
            )
            return None
        elif last > clock.slots and not self.cluster.horizon.open_end:
            self.note(
                w,
                "duration",
                f"end: {iso(expected)} is after the horizon: placed until "
                f"{clock.time(clock.slots)}",
            )
            last = clock.slots
        return last

    def deadline(self, w: _Workload, job: dict[str, Any], release: datetime | None) -> None:
        """The deadline annotation into `job`: one before the release is moved to it (noted)."""
        clock = self.clock
        text = w.annotations.get(DEADLINE_ANNOTATION)
        if text is None:
            return
        deadline = _timestamp(text, w.annotation_paths[DEADLINE_ANNOTATION])
        low = max(clock.up(release), 0) if release is not None else clock.now
        if clock.down(deadline) < low:
            self.note(
                w,
                _at("metadata.annotations", DEADLINE_ANNOTATION),
                f"{iso(deadline)} is before its release: set to "
                f"{clock.time(low)} (it cannot be on time)",
            )
            job["deadline"] = clock.time(low)
        else:
            job["deadline"] = iso(deadline)


def _stopped_by_kueue(w: _Workload) -> bool:
    """Whether its duration is a limit Kubernetes or Kueue enforces (maximumExecutionTimeSeconds,
    a pod's activeDeadlineSeconds), not an estimate (the annotation, the default)."""
    if DURATION_ANNOTATION in w.annotations:
        return False
    return w.max_exec is not None or any(ps.deadline is not None for ps in w.podsets)
