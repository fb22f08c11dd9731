"""What mapping a Kueue Workload needs whether it is admitted or pending: the horizon's clock,
the pools of each flavor, the notes, and the workload's GPUs, kind, priority, run time and
deadline.

`WorkloadMapperCore` is shared by the pending part (`PendingWorkloads`, importers/kueue/jobs.py)
and the admitted part (`AdmittedWorkloads`, importers/kueue/jobs_admitted.py) of `WorkloadMapper`.
"""

from __future__ import annotations

import math
from datetime import datetime

from horizon_opt.errors import InputError
from horizon_opt.importers.clock import Clock
from horizon_opt.importers.cluster import ClusterFile, ClusterPool
from horizon_opt.importers.draft import JobDraft
from horizon_opt.importers.kueue.kube import located, timestamp
from horizon_opt.importers.kueue.workload import Workload as _Workload
from horizon_opt.importers.payload_model import json_path
from horizon_opt.importers.result import Note
from horizon_opt.model.instance import duration_minutes
from horizon_opt.model.spec import JOB_KINDS, MAX_PRIORITY, MAX_SLOTS, show
from horizon_opt.schedulers.kueue import (
    DEADLINE_ANNOTATION,
    DURATION_ANNOTATION,
    HELD_ANNOTATION,
    KIND_ANNOTATION,
)
from horizon_opt.times import iso

__all__ = [
    "WorkloadMapperCore",
    "duration_text",
    "kueue_priority",
]


def kueue_priority(priority: int) -> float:
    """The instance priority of a Kueue priority (int32, may be zero or negative): `p + 1` for
    `p >= 0`, capped at 1,000,000, and `1 / (1 - p)` below, to 12 significant digits: positive,
    1 at 0, and strictly increasing up to 999,999 (the whole int32 range below), so Kueue's
    order is kept."""
    if priority >= 0:
        return float(min(priority + 1, MAX_PRIORITY))
    return float(f"{1 / (1 - priority):.12g}")


def duration_text(minutes: int) -> str:
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


class WorkloadMapperCore:
    """The cluster file, the horizon's clock and the notes, shared by admitted and pending
    workloads."""

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

    def kind(self, w: _Workload) -> str:
        kind = w.annotations.get(KIND_ANNOTATION)
        if kind is None:
            return "other"
        if kind.strip() not in JOB_KINDS:
            why = f"expected one of {', '.join(JOB_KINDS)}, got {show(kind)}"
            raise InputError([located(w.annotation_loc(KIND_ANNOTATION), why)])
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
                why = f"not a duration: {show(text)} (use e.g. 90m, 6h, 1.5h, 2d)"
                raise InputError([located(w.annotation_loc(DURATION_ANNOTATION), why)])
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
                json_path(("metadata", "annotations", DURATION_ANNOTATION)),
                "no run time (no such annotation, maximumExecutionTimeSeconds or "
                f"activeDeadlineSeconds): {duration_text(self.default_minutes)} assumed",
            )
            return self.default_minutes
        whole = math.ceil(seconds / 60 - 1e-9)
        longest = MAX_SLOTS * self.cluster.horizon.slot_minutes
        if whole > longest:
            self.note(
                w,
                "duration",
                f"{duration_text(whole)} is more than {MAX_SLOTS:,} slots: capped there",
            )
            return longest
        return whole

    def deadline(self, w: _Workload, job: JobDraft, release: datetime | None) -> None:
        """The deadline annotation into `job`: one before the release is moved to it (noted)."""
        clock = self.clock
        text = w.annotations.get(DEADLINE_ANNOTATION)
        if text is None:
            return
        deadline = timestamp(text, w.annotation_loc(DEADLINE_ANNOTATION))
        low = max(clock.up(release), 0) if release is not None else clock.now
        if clock.down(deadline) < low:
            self.note(
                w,
                json_path(("metadata", "annotations", DEADLINE_ANNOTATION)),
                f"{iso(deadline)} is before its release: set to "
                f"{clock.time(low)} (it cannot be on time)",
            )
            job["deadline"] = clock.time(low)
        else:
            job["deadline"] = iso(deadline)
