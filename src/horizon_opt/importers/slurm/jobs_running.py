"""A running Slurm job, placed where it runs: the GPUs it holds on each node (gres_detail or
its TRES), and the slots from its start to its expected end within the horizon.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from horizon_opt.errors import InputError
from horizon_opt.importers.parts import holds_as_one_gang, part_id, split_note
from horizon_opt.importers.slurm.jobs_core import Job, JobMapperCore, no_gpus_cause, no_gpus_reason
from horizon_opt.importers.slurm.reader import SqueueJob as _SqueueJob
from horizon_opt.model.spec import show
from horizon_opt.schedulers.slurm import Gpus, NodeGpus, expand_hostlist, parse_gres_detail
from horizon_opt.times import iso

__all__ = ["RunningJobs"]


class RunningJobs(JobMapperCore):
    """Running jobs mapped onto the nodes they hold and the slots they run in."""

    def running(self, rec: _SqueueJob, job_id: str, gpus: Gpus | None) -> list[Job]:
        """A running job, placed where it runs: one job, or one part per node when the
        placement rule cannot hold its GPUs as one gang (see importers/parts.py)."""
        held = self.held(rec, job_id, gpus)
        if held is None:
            return []
        counts, known, host_of = held
        pool = self.pools[self.pool_of[next(iter(counts))]]
        G = pool.gpus_per_node
        if known is not None:
            bad = [n for n, idx in known.items() if max(idx, default=0) >= self.per_node[n]]
            if bad:
                self.note(
                    job_id,
                    "gres_detail",
                    f"GPU index beyond {self.per_node[bad[0]] - 1} on {bad[0]}: ignored",
                )
                known = None
        times = self.run_times(rec, job_id)
        if times is None:
            return []
        minutes, start, ends = times
        release = min(max(rec.submit_time or start, self.clock.start), start)
        priority = rec.priority if isinstance(rec.priority, int) else 0
        deadline = None
        if rec.deadline is not None:
            if self.clock.down(rec.deadline) < self.clock.up(release):
                self.note(job_id, "deadline", f"{iso(rec.deadline)} is before its start: dropped")
            else:
                deadline = rec.deadline
        if holds_as_one_gang(counts, self.pool_of, pool.nodes, G):
            shares = [(job_id, counts)]
        else:
            self.note(
                job_id,
                "gres_detail",
                split_note(
                    {host_of[n]: c for n, c in counts.items()},
                    {host_of[n]: self.per_node[n] for n in counts},
                ),
            )
            shares = [(part_id(job_id, host_of[n]), {n: c}) for n, c in counts.items()]
            self.parts[job_id] = [s for s, _ in shares]
        jobs = []
        for share_id, nodes in shares:
            pool_name = self.pool_of[next(iter(nodes))]
            job = Job(share_id, rec, sum(nodes.values()), minutes, [pool_name], release)
            job.placed = {"pool": pool_name, "start": iso(start), "end": iso(ends)}
            job.nodes = nodes
            job.known = None if known is None else {n: known[n] for n in nodes if n in known}
            job.priority, job.deadline = priority, deadline
            job.whole = job_id
            self.order.setdefault(share_id, rec.index)
            jobs.append(job)
        return jobs

    def held(
        self, rec: _SqueueJob, job_id: str, gpus: Gpus | None
    ) -> tuple[dict[str, int], dict[str, list[int]] | None, dict[str, str]] | None:
        """GPUs a running job holds per instance node, their indices when gres_detail says,
        and each node's host name; None (noted) when it holds none the plan can see."""
        try:
            hosts = expand_hostlist(rec.nodes)
        except ValueError as exc:
            raise InputError(
                [f"{self.source}: {rec.path}.nodes: not a hostlist: {exc}: {show(rec.nodes)}"]
            ) from None
        if not hosts:
            self.skip(job_id, "nodes", "RUNNING without nodes")
            return None
        unknown = [h for h in hosts if h not in self.hosts]
        if unknown:
            shown = ", ".join(unknown[:5]) + (
                f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            )
            if gpus is None and not any(g for g in rec.gres_detail or []):
                self.skip(job_id, "gres", no_gpus_reason(rec, "holds"), no_gpus_cause("holds"))
            else:
                self.skip(
                    job_id,
                    "nodes",
                    f"runs on {shown}, not in the cluster file's node_names: its GPUs are not "
                    "reserved in the plan",
                )
            return None
        nodes = [self.hosts[h] for h in hosts]
        host_of = dict(zip(nodes, hosts, strict=True))
        counts: dict[str, int] = {}
        known: dict[str, list[int]] | None = {}
        details = self.details(rec, job_id, len(hosts))
        detailed = sum(d.count for d in details) if details is not None else None
        if detailed is not None and gpus is not None and detailed != gpus.count:
            took = "gres_detail (where they sit)" if detailed else "the TRES count"
            self.note(
                job_id,
                "gres_detail",
                f"holds {detailed} GPUs on its nodes, its TRES say {gpus.count}: took {took}",
            )
        if details is not None and any(d.count for d in details):
            for node, d in zip(nodes, details, strict=True):
                if d.count:
                    counts[node] = d.count
                    if known is not None and d.indices is not None:
                        known[node] = list(d.indices)
                    else:
                        known = None
        elif gpus is not None:
            share = -(-gpus.count // len(nodes))
            if gpus.count % len(nodes):
                self.note(
                    job_id,
                    "nodes",
                    f"{gpus.count} GPUs do not split evenly over its {len(nodes)} nodes and "
                    f"gres_detail does not say how they sit: held as {share} on each (at most "
                    "that many on any one)",
                )
            counts = {n: share for n in nodes}
            known = None
        if not counts:
            self.skip(job_id, "gres", no_gpus_reason(rec, "holds"), no_gpus_cause("holds"))
            return None
        over = [n for n, c in counts.items() if c > self.per_node[n]]
        if over:
            self.skip(
                job_id,
                "gres_detail",
                f"holds {counts[over[0]]} GPUs of {host_of[over[0]]}, which has "
                f"{self.per_node[over[0]]} in the cluster file: its GPUs are not reserved in the "
                "plan (fix gpus_per_node)",
            )
            return None
        return counts, known, host_of

    def details(self, rec: _SqueueJob, job_id: str, hosts: int) -> list[NodeGpus] | None:
        """gres_detail, one entry per host, when it reads."""
        if rec.gres_detail and len(rec.gres_detail) == hosts:
            try:
                return [parse_gres_detail(d) for d in rec.gres_detail]
            except ValueError as exc:
                self.note(job_id, "gres_detail", f"{exc}: ignored")
        elif rec.gres_detail:
            self.note(
                job_id,
                "gres_detail",
                f"{len(rec.gres_detail)} entries for {hosts} nodes: ignored",
            )
        return None

    def run_times(self, rec: _SqueueJob, job_id: str) -> tuple[int, datetime, datetime] | None:
        """(planned minutes, placed start, placed end) of a running job, within the horizon;
        None (with a note) when it ends between the snapshot and `now`."""
        minutes, limit = self.minutes(rec, job_id)
        started = rec.start_time
        if started is None:
            self.note(job_id, "start_time", f"unset: taken as the snapshot {iso(self.snapshot)}")
            started = self.snapshot
        elif started > self.snapshot:
            self.note(
                job_id, "start_time", f"{iso(started)} is after the snapshot: taken as the snapshot"
            )
            started = self.snapshot
        ends = started + timedelta(minutes=minutes)
        at_limit = started + timedelta(minutes=limit) if limit is not None else None
        if ends <= self.snapshot and at_limit is not None and at_limit > self.snapshot:
            ends = at_limit  # past the estimate, not the limit: Slurm lets it run until then
            self.note(
                job_id,
                "time_limit",
                f"has run past the estimate: expected to end at its limit, {iso(ends)}",
            )
        if ends <= self.snapshot:
            limited = f"its time limit ({iso(at_limit)})" if at_limit else "its expected end"
            ends = self.clock.at(self.clock.now + 1)
            self.note(
                job_id,
                "time_limit",
                f"still running past {limited}: assumed to end at {iso(ends)}, one slot after now",
            )
        elif self.clock.up(ends) <= self.clock.now:
            if at_limit is not None and self.clock.up(at_limit) <= self.clock.now:
                self.skip(
                    job_id,
                    "time_limit",
                    f"its limit ends at {iso(at_limit)}, after the snapshot but by now "
                    f"({iso(self.clock.at(self.clock.now))}), where the plan starts: its GPUs are free "
                    "then",
                )
                return None
            # It runs at the snapshot and nothing stops it by now: it holds its GPUs.
            ends = at_limit if at_limit is not None else self.clock.at(self.clock.now + 1)
            self.note(
                job_id,
                "time_limit",
                f"expected to end by now ({iso(self.clock.at(self.clock.now))}) but nothing stops it "
                f"then: held until {iso(ends)}"
                + (", its limit" if at_limit is not None else ", one slot after now"),
            )
        start = started
        if started >= self.clock.at(self.clock.now) and self.clock.now > 0:
            start = self.clock.at(
                self.clock.now - 1
            )  # running means started before now (FORMAT.md)
            self.note(
                job_id,
                "start_time",
                f"started {iso(started)}, at `now`: placed from the slot before, so it is running",
            )
        if started < self.clock.start:
            start = self.clock.start
            self.note(
                job_id,
                "start_time",
                f"started {iso(started)}, before the horizon: placed from its start {iso(self.clock.start)}",
            )
        if ends > self.clock.end and not self.clock.open_end:
            ends = self.clock.end
            self.note(
                job_id,
                "time_limit",
                f"runs past the horizon: placed until its end {iso(self.clock.end)}",
            )
        return minutes, start, ends
