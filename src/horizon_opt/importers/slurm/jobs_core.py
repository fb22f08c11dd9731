"""What mapping a Slurm job needs whatever its state: the cluster file's pools and partitions,
the horizon around the snapshot, the notes and the jobs left out, and the job's GPUs and run time.

`JobMapperCore` is shared by the pending part (`PendingJobs`, importers/slurm/jobs.py) and the
running part (`RunningJobs`, importers/slurm/jobs_running.py) of `JobMapper`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from horizon_opt.errors import InputError
from horizon_opt.importers.clock import Clock
from horizon_opt.importers.cluster import ClusterFile
from horizon_opt.importers.draft import PlacedDraft
from horizon_opt.importers.result import Note
from horizon_opt.importers.slurm.history import History, estimate_minutes
from horizon_opt.importers.slurm.reader import INFINITE
from horizon_opt.importers.slurm.reader import SqueueJob as _SqueueJob
from horizon_opt.model.spec import MAX_SLOTS
from horizon_opt.schedulers.slurm import Gpus, parse_gpus
from horizon_opt.times import iso

__all__ = ["Job", "JobMapperCore", "no_gpus_cause", "no_gpus_reason"]


def no_gpus_reason(rec: _SqueueJob, verb: str) -> str:
    """Why a job is not GPU work: what its TRES fields say, or that the payload has none (the
    cause its note shares with others' is `no_gpus_cause`)."""
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


def no_gpus_cause(verb: str) -> str:
    return f"{verb} no GPUs (the planner plans GPU work)"


@dataclass
class Job:
    """A job on its way into the instance."""

    id: str
    record: _SqueueJob
    gpus: int
    minutes: int
    pools: list[str]
    release: datetime
    deadline: datetime | None = None
    after: list[str] = field(default_factory=list)
    priority: int = 0
    placed: PlacedDraft | None = None
    nodes: dict[str, int] = field(default_factory=dict)  # running: node -> GPUs held
    known: dict[str, list[int]] | None = None  # running: node -> indices from gres_detail
    whole: str = ""  # the payload's job id: a part's whole job (importers/parts.py), else its own


class JobMapperCore:
    """The cluster file, the horizon and what the mapping finds, shared by every job's state."""

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
        self.clock = Clock(cluster, snapshot)
        if not 0 <= self.clock.now < self.clock.slots:
            raise InputError(
                [
                    f"{source}: the snapshot {iso(snapshot)} is outside the cluster file's "
                    f"horizon [{iso(self.clock.start)}, {iso(self.clock.end)}): move horizon.start or leave "
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

    # ---- one job

    def gpus(self, rec: _SqueueJob, job_id: str, running: bool) -> Gpus | None:
        """The job's GPUs, from the first source that names them (see the table in
        importers/slurm/importer.py)."""
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

    def minutes(self, rec: _SqueueJob, job_id: str) -> tuple[int, int | None]:
        """(planned minutes, time limit in minutes or None when there is none)."""
        limit = rec.time_limit if isinstance(rec.time_limit, int) and rec.time_limit else None
        horizon = self.clock.slots * self.cluster.horizon.slot_minutes
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
