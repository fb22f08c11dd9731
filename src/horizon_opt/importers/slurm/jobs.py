"""One job of Slurm's queue in the instance's terms: its GPUs, run time, pools, release,
deadline and priority, and, when it runs, where and from when to when it is placed.

`JobMapper` holds what the mapping needs (the cluster file, the horizon around the snapshot,
sacct's history) and what it finds (the jobs, the notes, the jobs left out and why); the mapping
itself is the table in `importers/slurm/importer.py`, whose importer goes over the payload's records with
it and then over all jobs together (GPU indices, dependencies, the compiler's word).

Its parts: `JobMapperCore` (importers/slurm/jobs_core.py: the horizon, notes, a job's GPUs and run
time), `PendingJobs` (here: the pools a pending job may run on, its release, deadline and
priority) and `RunningJobs` (importers/slurm/jobs_running.py: the nodes and slots of a running
job).
"""

from __future__ import annotations

import re

from horizon_opt.importers.slurm.jobs_core import Job, JobMapperCore, no_gpus_cause, no_gpus_reason
from horizon_opt.importers.slurm.jobs_running import RunningJobs
from horizon_opt.importers.slurm.reader import INFINITE
from horizon_opt.importers.slurm.reader import SqueueJob as _SqueueJob
from horizon_opt.schedulers.slurm import Gpus
from horizon_opt.times import iso

__all__ = ["JobMapper", "PendingJobs"]


def _type_matches(kind: str, pool_name: str, gpu_type: str) -> bool:
    def norm(s: str) -> str:
        return re.sub(r"[^a-z0-9]", "", s.lower())

    return norm(kind) in norm(pool_name) or norm(kind) in norm(gpu_type)


class PendingJobs(JobMapperCore):
    """Pending jobs mapped onto the pools their partitions, GPU types and gang allow."""

    def allowed_pools(self, rec: _SqueueJob, job_id: str, gpus: Gpus) -> list[str]:
        partitions = [p.strip() for p in rec.partition.split(",") if p.strip()]
        pools: list[str] = []
        for part in partitions:
            for pool in self.partitions.get(part, []):
                if pool not in pools:
                    pools.append(pool)
        unmapped = [p for p in partitions if p not in self.partitions]
        if not partitions:
            self.skip(job_id, "partition", "no partition")
            return []
        if not pools:
            self.skip(
                job_id,
                "partition",
                f"{rec.partition!r}: no pool of the cluster file lists "
                f"{'it' if len(partitions) == 1 else 'any of them'} in `partitions`",
            )
            return []
        if unmapped:
            self.note(
                job_id,
                "partition",
                f"{', '.join(map(repr, unmapped))} maps to no pool: planned on "
                f"{', '.join(pools)} only",
            )
        if gpus.types:
            typed = [
                p
                for p in pools
                if any(_type_matches(t, p, self.pools[p].gpu_type) for t in gpus.types)
            ]
            kinds = ", ".join(sorted(gpus.types))
            if typed and typed != pools:
                pools = typed
            elif not typed:
                self.note(
                    job_id,
                    "gres",
                    f"GPU type {kinds} names no allowed pool (by name or gpu_type): all of "
                    f"{', '.join(pools)} kept",
                )
        fits = [p for p in pools if self.fits(p, gpus.count)]
        if not fits:
            self.skip(
                job_id,
                "gres",
                f"{gpus.count} GPUs fit no allowed pool ("
                + ", ".join(
                    f"{p}: {self.pools[p].nodes} nodes x {self.pools[p].gpus_per_node} GPUs"
                    for p in pools
                )
                + "): a gang takes GPUs of one node or whole nodes",
            )
            return []
        if fits != pools:
            self.note(
                job_id,
                "gres",
                f"{gpus.count} GPUs cannot be placed on {', '.join(p for p in pools if p not in fits)} "
                "(one node, or whole nodes): left out of its pools",
            )
        count = rec.node_count if isinstance(rec.node_count, int) else None
        if count and count > 1:
            shapes = {
                p: 1
                if gpus.count <= self.pools[p].gpus_per_node
                else gpus.count // self.pools[p].gpus_per_node
                for p in fits
            }
            if any(n != count for n in shapes.values()):
                self.note(
                    job_id,
                    "node_count",
                    f"{count} nodes asked for; the plan places its {gpus.count} GPUs on one node "
                    "or on whole nodes (the planner's placement rule)",
                )
        return fits

    def fits(self, pool: str, gpus: int) -> bool:
        p = self.pools[pool]
        G = p.gpus_per_node
        return gpus <= G or (gpus % G == 0 and gpus // G <= p.nodes)

    def pending(self, rec: _SqueueJob, job_id: str, held: bool, gpus: Gpus | None) -> Job | None:
        if gpus is None:
            self.skip(job_id, "gres", no_gpus_reason(rec, "asks for"), no_gpus_cause("asks for"))
            return None
        pools = self.allowed_pools(rec, job_id, gpus)
        if not pools:
            return None
        minutes, _ = self.minutes(rec, job_id)
        release = max(rec.submit_time or self.clock.start, self.clock.start)
        if rec.eligible_time is not None and rec.eligible_time > max(release, self.snapshot):
            release = rec.eligible_time
            if self.clock.up(release) >= self.clock.slots:
                self.skip(
                    job_id, "eligible_time", f"eligible from {iso(release)}, after the horizon"
                )
                return None
            self.note(
                job_id, "eligible_time", f"eligible from {iso(release)} (--begin): released then"
            )
        job = Job(job_id, rec, gpus.count, minutes, pools, release, whole=job_id)
        if rec.deadline is not None:
            if rec.deadline <= self.snapshot or self.clock.down(rec.deadline) < self.clock.up(
                release
            ):
                self.skip(
                    job_id,
                    "deadline",
                    f"{iso(rec.deadline)} has passed or comes before its release: Slurm cancels it",
                )
                return None
            job.deadline = rec.deadline
        if held or rec.hold or rec.priority == 0:
            self.note(
                job_id,
                "priority",
                "held (priority 0 or a hold): planned at priority 1, though it starts only "
                "when released",
            )
        job.priority = rec.priority if isinstance(rec.priority, int) else 0
        if rec.priority is None or rec.priority is INFINITE:
            self.note(job_id, "priority", "unset: planned at priority 1")
        return job


class JobMapper(PendingJobs, RunningJobs):
    """Jobs of the queue, one at a time, mapped onto the cluster file's pools and horizon."""

    def job(self, rec: _SqueueJob, job_id: str, running: bool, held: bool) -> list[Job]:
        """The record's job: one pending job, a running one (or its parts), or none (noted)."""
        if rec.state_reason == "DependencyNeverSatisfied":
            self.skip(job_id, "state_reason", "DependencyNeverSatisfied: it can never start")
            return []
        gpus = self.gpus(rec, job_id, running)
        if running:
            return self.running(rec, job_id, gpus)
        pending = self.pending(rec, job_id, held, gpus)
        return [] if pending is None else [pending]
