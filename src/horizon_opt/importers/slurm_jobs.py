"""One job of Slurm's queue in the instance's terms: its GPUs, run time, pools, release,
deadline and priority, and, when it runs, where and from when to when it is placed.

`JobMapper` holds what the mapping needs (the cluster file, the horizon around the snapshot,
sacct's history) and what it finds (the jobs, the notes, the jobs left out and why); the mapping
itself is the table in `importers/slurm.py`, whose importer goes over the payload's records with
it and then over all jobs together (GPU indices, dependencies, the compiler's word).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.importers.cluster import ClusterFile, horizon_start
from horizon_opt.importers.parts import holds_as_one_gang, part_id, split_note
from horizon_opt.importers.result import Note
from horizon_opt.importers.slurm_history import History, estimate_minutes
from horizon_opt.importers.slurm_reader import INFINITE
from horizon_opt.importers.slurm_reader import Record as _Record
from horizon_opt.importers.slurm_strings import (
    Gpus,
    NodeGpus,
    expand_hostlist,
    parse_gpus,
    parse_gres_detail,
)
from horizon_opt.spec import MAX_SLOTS, show
from horizon_opt.times import iso

__all__ = ["Job", "JobMapper"]


def _no_gpus(rec: _Record, verb: str) -> str:
    """Why a job is not GPU work: what its TRES fields say, or that the payload has none (the
    cause its note shares with others' is `_no_gpus_cause`)."""
    fields = {
        "tres_per_job": rec.tres_per_job,
        "tres_per_node": rec.tres_per_node,
        "tres_per_task": rec.tres_per_task,
        "tres_req_str": rec.tres_req_str,
        "tres_alloc_str": rec.tres_alloc_str,
    }
    said = {k: v for k, v in fields.items() if v}
    if not said:
        return (
            f"no GPU field is set ({', '.join(fields)} are all empty or absent): taken as "
            "asking for no GPUs (the planner plans GPU work)"
        )
    first, text = next(iter(said.items()))
    return f"{verb} no GPUs ({first}: {text}; the planner plans GPU work)"


def _no_gpus_cause(verb: str) -> str:
    return f"{verb} no GPUs (the planner plans GPU work)"


@dataclass
class Job:
    """A job on its way into the instance."""

    id: str
    record: _Record
    gpus: int
    minutes: int
    pools: list[str]
    release: datetime
    deadline: datetime | None = None
    after: list[str] = field(default_factory=list)
    priority: int = 0
    placed: dict[str, Any] | None = None
    nodes: dict[str, int] = field(default_factory=dict)  # running: node -> GPUs held
    known: dict[str, list[int]] | None = None  # running: node -> indices from gres_detail
    whole: str = ""  # the payload's job id: a part's whole job (importers/parts.py), else its own


def _type_matches(kind: str, pool_name: str, gpu_type: str) -> bool:
    def norm(s: str) -> str:
        return re.sub(r"[^a-z0-9]", "", s.lower())

    return norm(kind) in norm(pool_name) or norm(kind) in norm(gpu_type)


class JobMapper:
    """Jobs of the queue, one at a time, mapped onto the cluster file's pools and horizon."""

    def __init__(
        self,
        cluster: ClusterFile,
        snapshot: datetime,
        history: History | None,
        source: str,
        default_minutes: int,
    ) -> None:
        self.cluster = cluster
        self.snapshot = snapshot
        self.history = history
        self.source = source
        self.default_minutes = default_minutes
        self.notes: list[Note] = []
        self.step = timedelta(minutes=cluster.horizon.slot_minutes)
        self.start = horizon_start(cluster, snapshot)
        self.slots = cluster.horizon.slots
        self.end = self.start + self.slots * self.step
        self.now_slot = self.slot(snapshot, up=True)
        if not 0 <= self.now_slot < self.slots:
            raise InputError(
                [
                    f"{source}: the snapshot {iso(snapshot)} is outside the cluster file's "
                    f"horizon [{iso(self.start)}, {iso(self.end)}): move horizon.start or leave "
                    "it out (then the horizon starts just before the snapshot)"
                ]
            )
        self.hosts = cluster.host_nodes()
        node_pools = cluster.node_pools()  # instance node name (a host name, or <pool>-<i>)
        self.per_node = {n: p.gpus_per_node for n, p in node_pools.items()}
        self.pool_of = {n: p.name for n, p in node_pools.items()}
        self.pools = {p.name: p for p in cluster.pools}
        self.partitions: dict[str, list[str]] = {}
        for p in cluster.pools:
            for part in p.partitions:
                self.partitions.setdefault(part, []).append(p.name)
        self.jobs: list[Job] = []
        self.skipped: dict[str, str] = {}  # payload id -> why it is not imported
        self.arrays: dict[str, list[str]] = {}  # array job id -> its task ids in the payload
        self.task_of: dict[str, str] = {}  # an array task's own job id -> "<array>_<task>"
        self.seen: set[str] = set()
        self.order: dict[str, int] = {}  # a job's (or record's) place in the payload
        self.parts: dict[str, list[str]] = {}  # a running job held per node -> its parts' ids

    # ---- helpers

    def note(self, job: str, where: str, problem: str) -> None:
        self.notes.append(Note(job, where, problem))

    def skip(self, job: str, where: str, problem: str, cause: str = "") -> None:
        """Leave the job out, noted; `cause`: what its note has in common with others'."""
        self.notes.append(
            Note(job, where, f"{problem}; left out", f"{cause}; left out" if cause else "")
        )
        self.skipped[job] = problem

    def slot(self, when: datetime, up: bool) -> int:
        slots = (when - self.start) / self.step
        return math.ceil(slots - 1e-9) if up else math.floor(slots + 1e-9)

    def at(self, slot: int) -> datetime:
        return self.start + slot * self.step

    # ---- one job

    def gpus(self, rec: _Record, job_id: str, running: bool) -> Gpus | None:
        """The job's GPUs, from the first source that names them (see the table in
        importers/slurm.py)."""
        nodes = rec.node_count if isinstance(rec.node_count, int) and rec.node_count else 1
        tasks = rec.tasks if isinstance(rec.tasks, int) and rec.tasks else 1
        sources: list[tuple[str, str, int]] = []
        if running:
            sources.append(("tres_alloc_str", rec.tres_alloc_str, 1))
        sources += [
            ("tres_per_job", rec.tres_per_job, 1),
            ("tres_per_node", rec.tres_per_node, nodes),
            ("tres_per_task", rec.tres_per_task, tasks),
            ("tres_req_str", rec.tres_req_str, 1),
        ]
        said: list[tuple[str, Gpus]] = []  # (field, the job's GPUs by it) of each field set
        for name, text, times in sources:
            try:
                found = parse_gpus(text)
            except ValueError as exc:
                self.note(job_id, name, f"{exc}: ignored")
                continue
            if found is not None:
                said.append((name, Gpus(found.count * times, found.types)))
        chosen = next(((n, g) for n, g in said if g.count > 0), None)
        if chosen is None:
            return None
        others = [f"{n} says {g.count}" for n, g in said if g.count != chosen[1].count]
        if others:
            why = "the allocation" if chosen[0] == "tres_alloc_str" else "the first that names any"
            self.note(
                job_id,
                chosen[0],
                f"{'; '.join(others)}, {chosen[0]} {chosen[1].count}: took {chosen[0]} ({why})",
            )
        return chosen[1]

    def minutes(self, rec: _Record, job_id: str) -> tuple[int, int | None]:
        """(planned minutes, time limit in minutes or None when there is none)."""
        limit = rec.time_limit if isinstance(rec.time_limit, int) and rec.time_limit else None
        horizon = self.slots * self.cluster.horizon.slot_minutes
        estimate = None
        partitions = [p.strip() for p in rec.partition.split(",") if p.strip()]
        if self.history is not None:
            estimate = estimate_minutes(limit, rec.user, rec.name, partitions, self.history)
        if estimate is not None:
            self.note(job_id, "time_limit", estimate[1])
            minutes = estimate[0]
        elif limit is None:
            what = {None: "unset or INFINITE", INFINITE: "INFINITE", 0: "0 (none)"}.get(
                rec.time_limit, ""
            )
            minutes = min(self.default_minutes, horizon)
            self.note(
                job_id,
                "time_limit",
                f"{what}, and no completed runs of {rec.user}/{rec.name} in sacct to estimate "
                f"from: planned for {minutes}m (--default-duration), re-estimated at every "
                "import while it runs",
            )
        else:
            minutes = limit
        longest = MAX_SLOTS * self.cluster.horizon.slot_minutes
        if minutes > longest:
            self.note(
                job_id, "time_limit", f"{minutes} min: capped at {longest}m ({MAX_SLOTS:,} slots)"
            )
            minutes = longest
        return minutes, min(limit, longest) if limit is not None else None

    def allowed_pools(self, rec: _Record, job_id: str, gpus: Gpus) -> list[str]:
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

    def job(self, rec: _Record, job_id: str, running: bool, held: bool) -> list[Job]:
        """The record's job: one pending job, a running one (or its parts), or none (noted)."""
        if rec.state_reason == "DependencyNeverSatisfied":
            self.skip(job_id, "state_reason", "DependencyNeverSatisfied: it can never start")
            return []
        gpus = self.gpus(rec, job_id, running)
        if running:
            return self.running(rec, job_id, gpus)
        pending = self.pending(rec, job_id, held, gpus)
        return [] if pending is None else [pending]

    def pending(self, rec: _Record, job_id: str, held: bool, gpus: Gpus | None) -> Job | None:
        if gpus is None:
            self.skip(job_id, "gres", _no_gpus(rec, "asks for"), _no_gpus_cause("asks for"))
            return None
        pools = self.allowed_pools(rec, job_id, gpus)
        if not pools:
            return None
        minutes, _ = self.minutes(rec, job_id)
        release = max(rec.submit_time or self.start, self.start)
        if rec.eligible_time is not None and rec.eligible_time > max(release, self.snapshot):
            release = rec.eligible_time
            if self.slot(release, up=True) >= self.slots:
                self.skip(
                    job_id, "eligible_time", f"eligible from {iso(release)}, after the horizon"
                )
                return None
            self.note(
                job_id, "eligible_time", f"eligible from {iso(release)} (--begin): released then"
            )
        job = Job(job_id, rec, gpus.count, minutes, pools, release, whole=job_id)
        if rec.deadline is not None:
            if rec.deadline <= self.snapshot or self.slot(rec.deadline, up=False) < self.slot(
                release, up=True
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

    def running(self, rec: _Record, job_id: str, gpus: Gpus | None) -> list[Job]:
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
        release = min(max(rec.submit_time or start, self.start), start)
        priority = rec.priority if isinstance(rec.priority, int) else 0
        deadline = None
        if rec.deadline is not None:
            if self.slot(rec.deadline, up=False) < self.slot(release, up=True):
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
        self, rec: _Record, job_id: str, gpus: Gpus | None
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
                self.skip(job_id, "gres", _no_gpus(rec, "holds"), _no_gpus_cause("holds"))
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
            self.skip(job_id, "gres", _no_gpus(rec, "holds"), _no_gpus_cause("holds"))
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

    def details(self, rec: _Record, job_id: str, hosts: int) -> list[NodeGpus] | None:
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

    def run_times(self, rec: _Record, job_id: str) -> tuple[int, datetime, datetime] | None:
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
            ends = self.at(self.now_slot + 1)
            self.note(
                job_id,
                "time_limit",
                f"still running past {limited}: assumed to end at {iso(ends)}, one slot after now",
            )
        elif self.slot(ends, up=True) <= self.now_slot:
            if at_limit is not None and self.slot(at_limit, up=True) <= self.now_slot:
                self.skip(
                    job_id,
                    "time_limit",
                    f"its limit ends at {iso(at_limit)}, after the snapshot but by now "
                    f"({iso(self.at(self.now_slot))}), where the plan starts: its GPUs are free "
                    "then",
                )
                return None
            # It runs at the snapshot and nothing stops it by now: it holds its GPUs.
            ends = at_limit if at_limit is not None else self.at(self.now_slot + 1)
            self.note(
                job_id,
                "time_limit",
                f"expected to end by now ({iso(self.at(self.now_slot))}) but nothing stops it "
                f"then: held until {iso(ends)}"
                + (", its limit" if at_limit is not None else ", one slot after now"),
            )
        start = started
        if started >= self.at(self.now_slot) and self.now_slot > 0:
            start = self.at(self.now_slot - 1)  # running means started before now (FORMAT.md)
            self.note(
                job_id,
                "start_time",
                f"started {iso(started)}, at `now`: placed from the slot before, so it is running",
            )
        if started < self.start:
            start = self.start
            self.note(
                job_id,
                "start_time",
                f"started {iso(started)}, before the horizon: placed from its start {iso(self.start)}",
            )
        if ends > self.end and not self.cluster.horizon.open_end:
            ends = self.end
            self.note(
                job_id,
                "time_limit",
                f"runs past the horizon: placed until its end {iso(self.end)}",
            )
        return minutes, start, ends
