"""`import slurm`: Slurm's queue (`squeue --json`) and, optionally, its recent history
(`sacct --json`) become an instance file around the cluster file.

Both are read as Slurm's data_parser writes them (`slurmrestd` and the `--json` option of the
commands): versions v0.0.40 and later wrap numbers as `{"set": true, "infinite": false, "number":
N}` and list `job_state` (`["RUNNING", "CONFIGURING"]`); v0.0.39 wraps some numbers and writes
times and `job_state` plain; v0.0.38 and earlier write plain numbers, `null` for unset or
INFINITE, and the raw sentinels NO_VAL (4294967294) and INFINITE (4294967295). All of these are
read.

| Slurm (`squeue --json`, per job) | instance (FORMAT.md) |
| --- | --- |
| `job_id`; arrays `array_job_id` + `array_task_id` | `id`: `"1234"`; an array task `"1230_4"`; a pending array record (`array_task_string` `"2-5%2"`) becomes one job per task |
| `job_state` | PENDING: a job to plan; RUNNING (also CONFIGURING): a `placed` job; anything else (COMPLETED, CANCELLED, COMPLETING, SUSPENDED, ...) is left out with a note |
| `partition` (`"a,b"`) | `pools`: every pool whose `partitions` (cluster file) name one of them |
| `gres_detail`, `tres_per_job`, `tres_per_node` x `node_count`, `tres_per_task` x `tasks`, `tres_req_str` (`tres_alloc_str` first for a running job) | `gpus` (the first of these that names GPUs: `gres/gpu:8`, `gres/gpu:h100:4`, `gres/gpu=8`, `gpu:8(IDX:0-7)`); a GPU type (`h100`) keeps the pools whose name or `gpu_type` names it |
| `time_limit` (minutes) | `duration: "<minutes>m"` on every allowed pool; with sacct history the estimate described in `estimate_minutes`; INFINITE, unset or 0 without history: `default_duration` (4h unless given, noted) |
| `priority` (Slurm's integer) | `priority = 1 + 9 * p / max p` over the imported jobs, rounded to 0.01: 1..10 |
| `submit_time` (epoch s) | `release` (ISO); before the horizon start: the horizon start; a later `eligible_time` (`--begin`) wins |
| `deadline` (epoch s; 0 or unset = none) | `deadline` (ISO): the job ends by then (Slurm cancels it when it cannot) |
| `dependency` (`afterok:12(unfulfilled),afterany:13_*`) | `after`: afterok and afterany on jobs of the import |
| `start_time`, `nodes` (hostlist), `gres_detail` `IDX` | running: `placed: {pool, start, end, gpus}`, `end = start + duration`; on hosts the pools' `node_names` name, which `gpus` names as they are (the instance's `node_names`) |
| a running job whose GPUs per node the placement rule cannot hold (`-N2 --gpus-per-node=1`) | one placed job per node, `<id>@<host>` (importers/parts.py), noted; its dependents run after every part |
| `account` (a string; unset or empty: none) | `team`: the cluster file's team whose `accounts` lists it, else the team of that name; without teams in the cluster file, none; with teams but none that matches, none, and one note per account naming its jobs |
| `last_update` (top level, epoch s) | `now`: the snapshot |

Every job of the payload is in the instance or in a note that says why not, and the instance
compiles (a job the compiler still refuses is left out with its message as the note). A payload
that is not Slurm's shape (not an object, `jobs` missing or not a list, a job without `job_id`, a
field of the wrong type) raises InputError naming the file and the JSON path.

The payloads are read as the pydantic models of importers/slurm/reader.py (squeue; JSON paths
in errors) and importers/slurm/history.py (sacct: run-time estimates, finished jobs' outcomes);
one job is mapped by importers/slurm/jobs.py, its account to a team by
importers/slurm/teams.py; this module goes over the records (states, arrays) and then over all
jobs together (GPU indices, dependencies, what the compiler refuses).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from horizon_opt.errors import InputError, InstanceError, Problem, in_item
from horizon_opt.importers.cluster import (
    ClusterFile,
    check_snapshot,
    instance_document,
    outages_after_running,
)
from horizon_opt.importers.draft import JobDraft
from horizon_opt.importers.result import Imported, Note, compile_document, gpu_indices
from horizon_opt.importers.slurm.history import read_history
from horizon_opt.importers.slurm.jobs import JobMapper
from horizon_opt.importers.slurm.jobs_core import Job as _Job
from horizon_opt.importers.slurm.payload import check_slurm
from horizon_opt.importers.slurm.reader import BASE_STATES as _BASE_STATES
from horizon_opt.importers.slurm.reader import SqueueJob as _SqueueJob
from horizon_opt.importers.slurm.reader import SqueuePayload as _SqueuePayload
from horizon_opt.importers.slurm.reader import base_state as _base_state
from horizon_opt.importers.slurm.reader import read_payload as _read_payload
from horizon_opt.importers.slurm.teams import account_team, unmatched_accounts
from horizon_opt.model.instance import duration_minutes
from horizon_opt.model.spec import show
from horizon_opt.schedulers.slurm import Dependency, expand_ranges, parse_dependency
from horizon_opt.times import iso, parse_time

__all__ = ["DEFAULT_DURATION", "MAX_ARRAY_TASKS", "import_slurm", "scale_priority"]

DEFAULT_DURATION = "4h"  # a job with no time limit and no history (as Kueue's default)
MAX_ARRAY_TASKS = 10_000  # tasks imported from one pending array record; the rest get a note
_COMPILE_PASSES = 20  # rounds of "leave out the jobs the compiler refuses"

_ENDED = _BASE_STATES - {"PENDING", "RUNNING", "SUSPENDED"}
_HELD_FLAGS = {"REQUEUE_HOLD", "SPECIAL_EXIT", "RESV_DEL_HOLD", "STOPPED"}
_ENDING_FLAGS = {"COMPLETING", "STAGE_OUT", "SIGNALING"}


def scale_priority(priority: int, highest: int) -> float:
    """Slurm's priority on the instance's scale: `1 + 9 * priority / highest`, rounded to 0.01.

    Slurm's priorities (multifactor sums, often in the millions) only order the queue; in the
    instance a priority multiplies a job's GPU-hours in pwo. The linear map keeps Slurm's order
    and spacing, sends the highest imported job to 10 and priority 0 (held) to 1, so no job is
    worth more than 10 times another per GPU-hour.
    """
    if highest <= 0:
        return 1.0
    return round(1 + 9 * min(priority, highest) / highest, 2)


class _Importer(JobMapper):
    """The payload's records, each as the jobs it stands for, then all jobs together."""

    # ---- one record

    def record(self, rec: _SqueueJob) -> None:
        base = _base_state(rec.states)
        flags = {s.upper() for s in rec.states} - {base}
        label = rec.label
        state = "+".join(rec.states) or "(none)"
        if base not in ("PENDING", "RUNNING") or flags & _ENDING_FLAGS:
            why = "ending" if ({base} | flags) & _ENDING_FLAGS else "not pending or running"
            self.skip(label, "job_state", f"{state}: {why}")
            return
        ids = self.task_ids(rec)
        if not ids:
            return
        if base == "PENDING" and len(ids) > 1 and rec.array_max_tasks:
            self.note(
                label,
                "array_task_string",
                f"at most {rec.array_max_tasks} tasks run at once (%{rec.array_max_tasks}): not "
                "expressed, the tasks are planned independently",
            )
        if rec.het_job_id:
            self.note(
                label,
                "het_job_id",
                f"a component of heterogeneous job {rec.het_job_id}: its components start "
                "together in Slurm; planned independently",
            )
        for job_id in ids:
            self.order.setdefault(job_id, rec.index)
            if job_id in self.seen:
                self.note(job_id, "job_id", "listed twice in the payload: the first is imported")
                continue
            self.seen.add(job_id)
            self.jobs += self.job(
                rec, job_id, running=base == "RUNNING", held=bool(flags & _HELD_FLAGS)
            )

    def task_ids(self, rec: _SqueueJob) -> list[str]:
        """The ids a record stands for: one, or a pending array record's tasks."""
        if rec.array_task_id is not None:
            job_id = f"{rec.array_job_id}_{rec.array_task_id}"
            self.arrays.setdefault(str(rec.array_job_id), []).append(job_id)
            self.task_of[str(rec.job_id)] = job_id
            return [job_id]
        if not rec.array_task_string:
            return [str(rec.job_id)]
        array = rec.array_job_id or rec.job_id
        text = rec.array_task_string.split("%")[0]
        try:
            tasks = expand_ranges(text, limit=10**7)
        except ValueError as exc:
            self.skip(rec.label, "array_task_string", f"not a task list: {exc}")
            return []
        ids = [f"{array}_{int(t)}" for t in tasks]
        if len(ids) > MAX_ARRAY_TASKS:
            first, last = ids[MAX_ARRAY_TASKS], ids[-1]
            self.note(
                rec.label,
                "array_task_string",
                f"{len(ids):,} tasks: the first {MAX_ARRAY_TASKS:,} are imported, {first} .. "
                f"{last} left out",
            )
            for job_id in ids[MAX_ARRAY_TASKS:]:
                self.skipped[job_id] = "beyond the tasks imported of its array"
            ids = ids[:MAX_ARRAY_TASKS]
        self.arrays.setdefault(str(array), []).extend(ids)
        return ids

    # ---- all jobs together

    def place_gpus(self) -> None:
        """GPU indices of the running jobs: gres_detail's where they hold no GPU twice, the
        lowest free ones for the others."""
        taken: dict[str, set[int]] = {}
        known: dict[str, dict[str, list[int]]] = {}
        running = [j for j in self.jobs if j.placed is not None]
        for job in running:
            if job.known is None:
                continue
            clash = [(n, sorted(taken.get(n, set()) & set(i))) for n, i in job.known.items()]
            clash = [(n, c) for n, c in clash if c]
            if clash:
                node, idx = clash[0]
                self.note(
                    job.id,
                    "gres_detail",
                    f"GPU(s) {idx} of {node} are another running job's: indices chosen anew",
                )
                job.known = None
                continue
            for n, i in job.known.items():
                taken.setdefault(n, set()).update(i)
            known[job.id] = job.known
        indices, notes = gpu_indices([(j.id, j.nodes) for j in running], known, self.per_node)
        whole = {j.id: j.whole for j in running}
        for note in notes:
            self.skip(
                whole[note.job],
                note.field,
                f"{note.problem}: its GPUs are not reserved in the plan",
            )
        short = {whole[n.job] for n in notes}
        self.jobs = [j for j in self.jobs if j.whole not in short]
        for job in self.jobs:
            if job.placed is not None:
                job.placed["gpus"] = indices[job.id]

    def depend(self) -> None:
        """`after` lists from the pending jobs' dependencies."""
        ids = {j.id: j for j in self.jobs}
        never: set[str] = set()
        for job in self.jobs:
            if job.placed is not None or not job.record.dependency:
                continue
            try:
                deps, either = parse_dependency(job.record.dependency)
            except ValueError as exc:
                self.note(job.id, "dependency", f"{exc}: all its dependencies dropped")
                continue
            if either:
                self.note(
                    job.id,
                    "dependency",
                    f"{job.record.dependency!r}: any one of these ('?') suffices, which the "
                    "instance cannot say: dropped",
                )
                continue
            for dep in deps:
                why = self.dependency(job, dep, ids)
                if why == "never":
                    never.add(job.id)
        for job_id in never:
            self.skipped[job_id] = "its dependency can never be satisfied"
        self.jobs = [j for j in self.jobs if j.id not in never]

    def dependency(self, job: _Job, dep: Dependency, ids: dict[str, _Job]) -> str:
        """Add one dependency to `job.after`; returns "never" when the job can never start."""
        what = f"{dep.kind}:{dep.target}" if dep.target else dep.kind
        if dep.state == "failed":
            self.note(
                job.id,
                "dependency",
                f"{what} has failed (Slurm: it can never be satisfied); left out",
            )
            return "never"
        if dep.kind not in ("afterok", "afterany"):
            meaning = {
                "after": "starts once that job has started",
                "afternotok": "runs only if that job fails",
                "aftercorr": "runs after the same task of that array",
                "singleton": "waits for the user's other jobs of the same name",
                "afterburstbuffer": "waits for that job's burst buffer stage-out",
            }.get(dep.kind, "an unknown kind")
            self.note(
                job.id,
                "dependency",
                f"{what} ({meaning}) is not expressed in the instance: dropped",
            )
            return ""
        if dep.delay:
            self.note(job.id, "dependency", f"{what}: the {dep.delay} min delay is not expressed")
        array, _, task = dep.target.partition("_")
        whole = task == "*" or (not task and array in self.arrays)  # every task of an array
        if whole:
            tasks = self.arrays.get(array, [])
            queued = array in self.arrays
        else:
            target = self.task_of.get(dep.target, dep.target)  # a task named by its own job id
            tasks = [target]
            queued = target in self.skipped
        targets = [p for t in tasks for p in self.parts.get(t, [t]) if p in ids]
        if targets:
            for t in targets:
                if t != job.id and t not in job.after:
                    job.after.append(t)
            return ""
        if queued:
            why = "its tasks are left out" if whole else self.skipped[target]
            self.note(
                job.id,
                "dependency",
                f"{what}: that job is in the queue but not imported ({why}): dropped",
            )
            return ""
        return self.finished_dependency(job, dep, what)

    def finished_dependency(self, job: _Job, dep: Dependency, what: str) -> str:
        """A dependency on a job not in the queue, judged by sacct's history: satisfied, never
        satisfiable ("never"), or dropped with a note."""
        array, _, task = dep.target.partition("_")
        if self.history is None:
            self.note(
                job.id,
                "dependency",
                f"{what}: that job is not in the queue (finished?); without sacct history the "
                "dependency is dropped",
            )
            return ""
        whole = task == "*" or (not task and array in self.history.arrays)
        states = self.history.arrays.get(array) if whole else self.history.states.get(dep.target)
        if not states:
            self.note(
                job.id,
                "dependency",
                f"{what}: that job is neither in the queue nor in sacct's history: dropped",
            )
            return ""
        if dep.kind == "afterok" and all(s == "COMPLETED" for s in states):
            return ""  # it completed OK: satisfied
        if dep.kind == "afterany" and all(s in _ENDED for s in states):
            return ""  # it ended: satisfied
        if dep.kind == "afterok" and all(s in _ENDED for s in states):
            failed = sorted({s for s in states if s != "COMPLETED"})
            self.note(
                job.id,
                "dependency",
                f"{what}: that job ended {', '.join(failed)} (sacct), so it can never start; "
                "left out",
            )
            return "never"
        self.note(
            job.id,
            "dependency",
            f"{what}: sacct says that job is {', '.join(sorted(set(states)))}, but the queue "
            "does not list it: dropped",
        )
        return ""

    def drop_dangling(self) -> None:
        """Jobs left out take their place in others' `after` lists with them."""
        ids = {j.id for j in self.jobs}
        for job in self.jobs:
            gone = [a for a in job.after if a not in ids]
            for a in gone:
                self.note(job.id, "dependency", f"runs after {a}, which is left out: dropped")
            job.after = [a for a in job.after if a in ids]

    def document(self, name: str) -> dict[str, Any]:
        highest = max((j.priority for j in self.jobs), default=0)
        jobs: list[JobDraft] = []
        for j in self.jobs:
            priority = scale_priority(j.priority, highest)
            out: JobDraft = {
                "id": j.id,
                "priority": int(priority) if priority.is_integer() else priority,
                "gpus": j.gpus,
                "duration": f"{j.minutes}m",
                "pools": j.pools,
                "release": iso(j.release),
            }
            if j.deadline is not None:
                out["deadline"] = iso(j.deadline)
            if j.after:
                out["after"] = j.after
            if j.placed is not None:
                out["placed"] = j.placed
            team = account_team(self.cluster, j.record.account)
            if team is not None:
                out["team"] = team
            jobs.append(out)
        document = instance_document(self.cluster, name, self.snapshot, jobs)
        document["outages"] = self.outages()
        return document

    def outages(self) -> list[dict[str, Any]]:
        """The cluster file's outages, each starting after the running jobs on its node end."""
        running = [
            (j.whole, set(j.nodes), _time(j.placed["start"]), _time(j.placed["end"]))
            for j in self.jobs
            if j.placed is not None
        ]
        outages, notes = outages_after_running(
            self.cluster, running, self.clock.at, lambda t: self.clock.at(self.clock.up(t))
        )
        for job, text in dict.fromkeys(notes):
            if Note(job, "nodes", text) not in self.notes:  # (the document is built per pass)
                self.note(job, "nodes", text)
        return outages

    def compiled(self, name: str) -> dict[str, Any]:
        """The document, once the compiler takes it: a job it refuses is left out with the
        compiler's message (the checks above catch what Slurm's data usually holds; this
        catches the rest, e.g. a running job on a node the cluster file says is down)."""
        for _ in range(_COMPILE_PASSES):
            document = self.document(name)
            try:
                compile_document(document, self.cluster.folder)
                return document
            except InstanceError as exc:
                bad: dict[int, str] = {}
                other: list[str | Problem] = []
                for problem in exc.details:
                    found = in_item(problem, "jobs")
                    if found is None or found[0] >= len(self.jobs):
                        other.append(problem)
                    else:
                        k, where, message = found
                        bad.setdefault(k, f"{where}: {message}" if where else message)
                if other or not bad:
                    raise InputError(
                        [f"{self.source} with the cluster file: {p}" for p in exc.problems]
                    ) from None
                refused: set[str] = set()
                for k, problem in sorted(bad.items()):
                    job = self.jobs[k]
                    where = f" (its part {job.id})" if job.id != job.whole else ""
                    if job.whole not in refused:
                        self.skip(
                            job.whole, "instance", f"the planner refuses it{where}: {problem}"
                        )
                    refused.add(job.whole)
                self.jobs = [j for j in self.jobs if j.whole not in refused]
                self.drop_dangling()
        raise InputError([f"{self.source}: the imported instance does not compile"])


def _snapshot(queue: _SqueuePayload, given: datetime | None) -> tuple[datetime, Note | None]:
    """The snapshot's time: squeue's `last_update` (when it answered), else `last_backfill`,
    else `given`, else now."""
    for key, when in (("last_update", queue.last_update), ("last_backfill", queue.last_backfill)):
        if when is not None:
            note = None
            if key == "last_backfill":
                note = Note(
                    "",
                    "last_backfill",
                    f"no last_update: snapshot taken at the last backfill run, {iso(when)}",
                )
            return when, note
    if given is not None:
        when = given if given.tzinfo is not None else given.replace(tzinfo=UTC)
        return when, Note(
            "", "last_update", f"not in the payload: snapshot at the given {iso(when)}"
        )
    when = datetime.now(UTC).replace(microsecond=0)
    return when, Note(
        "", "last_update", f"not in the payload: snapshot at the current time, {iso(when)}"
    )


def import_slurm(
    squeue: Any,
    cluster: ClusterFile,
    *,
    sacct: Any | None = None,
    name: str = "slurm",
    snapshot: datetime | None = None,
    squeue_source: str = "squeue",
    sacct_source: str = "sacct",
    default_duration: str = DEFAULT_DURATION,
) -> Imported:
    """The jobs of `squeue --json` (parsed: `read_json`) around `cluster`, as an instance.

    `sacct`: parsed `sacct --json` (finished jobs): run-time estimates (`estimate_minutes`) and
    whether a finished job that a queued one depends on completed OK. `snapshot`: the time of
    the snapshot when squeue's payload does not say it (`last_update`); default now (noted).
    `default_duration`: the run time of a job with no time limit (INFINITE, unset or 0) and no
    history to estimate it from (`90m`, `4h`, `2d`); a job would otherwise be planned for the
    whole horizon and never fit. `name`: the instance's name unless the cluster file gives
    one. `squeue_source` and
    `sacct_source` name the payloads in messages (the CLI passes the file names). A payload of
    the wrong shape raises InputError, one line per problem, each naming its JSON path.
    """
    versions = [
        (source, note)
        for payload, kind, source in (
            (squeue, "squeue", squeue_source),
            (sacct, "sacct", sacct_source),
        )
        if payload is not None and (note := check_slurm(payload, kind, source)) is not None
    ]
    default_minutes = duration_minutes(default_duration)
    if default_minutes is None or default_minutes <= 0:
        raise InputError([f"default_duration: not a duration: {show(default_duration)} (e.g. 4h)"])
    queue = _read_payload(_SqueuePayload, squeue, squeue_source)
    when, snapshot_note = _snapshot(queue, snapshot)
    field = "last_update" if snapshot_note is None else snapshot_note.field
    read = field == "last_backfill" or snapshot_note is None
    check_snapshot(cluster, when, f"{squeue_source}: {field}" if read else "--now")
    history = read_history(sacct, sacct_source) if sacct is not None else None
    importer = _Importer(cluster, when, history, squeue_source, math.ceil(default_minutes - 1e-9))
    for source, note in versions:
        importer.note("", f"{source}: meta.plugin", note)
    if snapshot_note is not None:
        importer.notes.append(snapshot_note)
    elif snapshot is not None:
        given = snapshot if snapshot.tzinfo is not None else snapshot.replace(tzinfo=UTC)
        if given != when:
            importer.note(
                "",
                "last_update",
                f"the payload's time {iso(when)} is the snapshot, not the given {iso(given)}",
            )
    errors = squeue.get("errors")
    if isinstance(errors, list):
        for e in errors[:3]:
            text = (e.get("description") or e.get("error")) if isinstance(e, dict) else e
            importer.note("", "errors", f"squeue reported: {show(text)}")
    for rec in queue.jobs:
        importer.order.setdefault(rec.label, rec.index)
        importer.record(rec)
    importer.place_gpus()
    importer.depend()
    importer.drop_dangling()
    document = importer.compiled(name)
    importer.notes += unmatched_accounts(
        cluster, ((j.whole, j.record.account) for j in importer.jobs)
    )
    # Notes in the payload's order (the whole payload's first), each job's in the order made.
    order = importer.order
    notes = sorted(importer.notes, key=lambda n: order.get(n.job, -1) if n.job else -2)
    return Imported(document, tuple(notes), cluster.folder)


def _time(text: int | str) -> datetime:
    when = parse_time(str(text))
    assert when is not None  # the importer wrote it
    return when
