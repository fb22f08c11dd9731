"""One Kueue Workload as one instance job: its GPUs as a gang on the pools that can place it,
its run time, priority, kind, release and deadline, and, when admitted, its pool and the slots
it runs in (the nodes come later, from all running jobs together, in importers/kueue/importer.py).

`WorkloadMapper` holds what the mapping needs (the cluster file, the horizon's clock (importers/clock.py), the
pools of each flavor and LocalQueue) and the notes it makes; the mapping is the table in
importers/kueue/importer.py, whose importer goes over the payload with it.

Its parts: `WorkloadMapperCore` (importers/kueue/jobs_core.py: the clock, notes, a workload's
GPUs, kind, priority, run time and deadline), `PendingWorkloads` (here: the pools a pending
workload may be admitted to) and `AdmittedWorkloads` (importers/kueue/jobs_admitted.py: the
slots an admitted workload runs in).
"""

from __future__ import annotations

import re

from horizon_opt.errors import InputError
from horizon_opt.importers.cluster import ClusterPool
from horizon_opt.importers.draft import JobDraft, PlacedDraft
from horizon_opt.importers.kueue.gang import choose_gang
from horizon_opt.importers.kueue.jobs_admitted import AdmittedWorkloads, Running
from horizon_opt.importers.kueue.jobs_core import WorkloadMapperCore, duration_text
from horizon_opt.importers.kueue.kube import located
from horizon_opt.importers.kueue.workload import Workload as _Workload
from horizon_opt.schedulers.kueue import POOLS_ANNOTATION
from horizon_opt.times import iso

__all__ = ["PendingWorkloads", "WorkloadMapper"]


class PendingWorkloads(WorkloadMapperCore):
    """Pending workloads mapped onto the pools they may be admitted to."""

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
                why = (
                    f"unknown pool(s) {', '.join(map(repr, bad))} (pools: "
                    f"{', '.join(self.by_name)})"
                    if bad
                    else "names no pool"
                )
                raise InputError([located(w.annotation_loc(POOLS_ANNOTATION), why)])
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

    def pending_notes(self, w: _Workload, minutes: int) -> None:
        """What a plan cannot do for a pending workload: end a run longer than what is left of
        the horizon, keep the hosts it is pinned to."""
        left = (self.clock.slots - self.clock.now) * self.cluster.horizon.slot_minutes
        if minutes > left and not self.cluster.horizon.open_end:
            self.note(
                w,
                "duration",
                f"{duration_text(minutes)} is longer than what is left of the horizon after "
                f"now ({duration_text(left)}): it cannot end within it, so no plan starts it "
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


class WorkloadMapper(PendingWorkloads, AdmittedWorkloads):
    """Workloads, one at a time, mapped onto the cluster file's pools and horizon."""

    def job(self, w: _Workload) -> tuple[JobDraft, Running | None] | None:
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
        job: JobDraft = {
            "id": w.id,
            "kind": self.kind(w),
            "priority": self.priority(w),
            "gpus": gang.gpus,
            "duration": duration_text(minutes),
            "pools": [p.name for p in gang.pools],
        }
        if not running:
            self.pending_notes(w, minutes)
        return self.times(w, job, running, gang.pools[0])

    def times(
        self, w: _Workload, job: JobDraft, running: bool, pool: ClusterPool
    ) -> tuple[JobDraft, Running | None] | None:
        """Release, deadline and, when running, `placed` (without GPUs)."""
        clock = self.clock
        release = w.created
        if release is None:
            self.note(w, "metadata.creationTimestamp", "not given: released now")
        placed = None
        where: PlacedDraft | None = None
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
