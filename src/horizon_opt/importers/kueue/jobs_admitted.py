"""An admitted Kueue Workload, placed on the pool Kueue admitted it to, from its admission to
its expected end within the horizon (its nodes come later, in importers/kueue/importer.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from horizon_opt.errors import InputError
from horizon_opt.importers.cluster import ClusterPool
from horizon_opt.importers.draft import JobDraft
from horizon_opt.importers.kueue.jobs_core import WorkloadMapperCore
from horizon_opt.importers.kueue.kube import located, timestamp
from horizon_opt.importers.kueue.workload import Workload as _Workload
from horizon_opt.model.instance import duration_minutes
from horizon_opt.schedulers.kueue import DURATION_ANNOTATION
from horizon_opt.times import iso

__all__ = ["AdmittedWorkloads", "Running"]


@dataclass
class Running:
    """An admitted workload's job on its pool from slot `start` to `end`, waiting for nodes."""

    w: _Workload
    job: JobDraft
    pool: ClusterPool
    start: int
    end: int

    @property
    def gpus(self) -> int:
        """Its gang's GPUs (a workload's are whole: importers/kueue/gang.py)."""
        return int(self.job["gpus"])


class AdmittedWorkloads(WorkloadMapperCore):
    """Admitted workloads mapped onto the pool and the slots they run in."""

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

    def run_slots(
        self, w: _Workload, job: JobDraft, release: datetime | None
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
                release = min(release, clock.at(first))
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
        where = (*w.condition_loc("Admitted"), "lastTransitionTime")
        if admitted.last_transition_time is None:
            raise InputError([located(where, "required field is missing")])
        start = timestamp(admitted.last_transition_time, where)
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

    def run_end(self, w: _Workload, job: JobDraft, start: datetime) -> int | None:
        """The slot a running workload is expected to end at, within the horizon and after
        `now`; None (noted) when it ends between the snapshot and `now`."""
        clock = self.clock
        expected = start + timedelta(minutes=duration_minutes(str(job["duration"])) or 0)
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


def _stopped_by_kueue(w: _Workload) -> bool:
    """Whether its duration is a limit Kubernetes or Kueue enforces (maximumExecutionTimeSeconds,
    a pod's activeDeadlineSeconds), not an estimate (the annotation, the default)."""
    if DURATION_ANNOTATION in w.annotations:
        return False
    return w.max_exec is not None or any(ps.deadline is not None for ps in w.podsets)
