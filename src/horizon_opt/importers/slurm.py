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
| `start_time`, `nodes` (hostlist), `gres_detail` `IDX` | running: `placed: {pool, start, end, gpus}`, `end = start + duration`; host names map through the pools' `node_names` |
| a running job whose GPUs per node the placement rule cannot hold (`-N2 --gpus-per-node=1`) | one placed job per node, `<id>@<host>` (importers/parts.py), noted; its dependents run after every part |
| `last_update` (top level, epoch s) | `now`: the snapshot |

Every job of the payload is in the instance or in a note that says why not, and the instance
compiles (a job the compiler still refuses is left out with its message as the note). A payload
that is not Slurm's shape (not an object, `jobs` missing or not a list, a job without `job_id`, a
field of the wrong type) raises InputError naming the file and the JSON path.
"""

from __future__ import annotations

import enum
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from horizon_opt.errors import InputError, InstanceError
from horizon_opt.importers.cluster import ClusterFile, horizon_start, instance_document
from horizon_opt.importers.parts import holds_as_one_gang, part_id, split_note
from horizon_opt.importers.payload import check_slurm
from horizon_opt.importers.result import Imported, Note, gpu_indices
from horizon_opt.importers.slurm_strings import (
    Dependency,
    Gpus,
    NodeGpus,
    expand_hostlist,
    expand_ranges,
    parse_dependency,
    parse_gpus,
    parse_gres_detail,
)
from horizon_opt.importers.source import read_json
from horizon_opt.instance import compile_instance, duration_minutes
from horizon_opt.io import parse_spec
from horizon_opt.spec import MAX_SLOTS, show
from horizon_opt.times import iso

__all__ = [
    "MAX_ARRAY_TASKS",
    "MIN_HISTORY",
    "Dependency",
    "Gpus",
    "History",
    "NodeGpus",
    "estimate_minutes",
    "expand_hostlist",
    "expand_ranges",
    "import_slurm",
    "parse_dependency",
    "parse_gpus",
    "parse_gres_detail",
    "read_history",
    "read_json",
    "scale_priority",
]

MIN_HISTORY = 3  # completed runs sacct must show before their run times replace the time limit
DEFAULT_DURATION = "4h"  # a job with no time limit and no history (as Kueue's default)
MAX_ARRAY_TASKS = 10_000  # tasks imported from one pending array record; the rest get a note
_COMPILE_PASSES = 20  # rounds of "leave out the jobs the compiler refuses"

# Slurm's sentinels, as the plain-number formats (v0.0.38 and earlier) write them.
_NO_VAL = {0xFFFFFFFE, 0xFFFFFFFFFFFFFFFE, 0xFFFE}
_INFINITE = {0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0xFFFF}
_MAX_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z

_BASE_STATES = {
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
}
_ENDED = _BASE_STATES - {"PENDING", "RUNNING", "SUSPENDED"}
_HELD_FLAGS = {"REQUEUE_HOLD", "SPECIAL_EXIT", "RESV_DEL_HOLD", "STOPPED"}
_ENDING_FLAGS = {"COMPLETING", "STAGE_OUT", "SIGNALING"}


class _Infinite(enum.Enum):
    INFINITE = "INFINITE"


INFINITE = _Infinite.INFINITE
SlurmNumber = int | _Infinite | None  # None: unset (Slurm's NO_VAL, null, or absent)


# --------------------------------------------------------------------------------------------
# Reading a file


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


# --------------------------------------------------------------------------------------------
# Reading the payloads: typed fields, every problem named by its JSON path


class _Fields:
    """Typed access to a JSON object's fields, collecting problems as `<source>: <path>: ...`."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{self.source}: {path}: {message}")

    def number(self, obj: dict[str, Any], key: str, path: str, what: str) -> SlurmNumber:
        """A Slurm number: plain, null, a sentinel, or `{set, infinite, number}`."""
        value = obj.get(key)
        where = f"{path}.{key}"
        if value is None:
            return None
        if isinstance(value, dict):
            unknown = set(value) - {"set", "infinite", "number"}
            flags = [value.get("set"), value.get("infinite")]
            if unknown or any(f is not None and not isinstance(f, bool) for f in flags):
                self.fail(where, f"expected {what} or {{set, infinite, number}}, got {show(value)}")
                return None
            if value.get("infinite") is True:
                return INFINITE
            if value.get("set") is False:
                return None
            value = value.get("number")
            if value is None:
                self.fail(where, f"expected {what}: 'set' is true but 'number' is missing")
                return None
            where += ".number"
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**64:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            self.fail(where, f"expected {what}, got {show(value)}")
            return None
        if value in _NO_VAL:
            return None
        if value in _INFINITE:
            return INFINITE
        return value

    def epoch(self, obj: dict[str, Any], key: str, path: str) -> datetime | None:
        """A time (epoch seconds); 0, unset and INFINITE are no time."""
        value = self.number(obj, key, path, "epoch seconds")
        if not isinstance(value, int) or value == 0:
            return None
        if value > _MAX_EPOCH:
            self.fail(f"{path}.{key}", f"expected epoch seconds before the year 10000, got {value}")
            return None
        return datetime.fromtimestamp(value, UTC)

    def string(self, obj: dict[str, Any], key: str, path: str) -> str:
        value = obj.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            self.fail(f"{path}.{key}", f"expected a string, got {show(value)}")
            return ""
        return value

    def strings(self, obj: dict[str, Any], key: str, path: str) -> list[str]:
        """A list of strings (a single string is one item: older formats)."""
        value = obj.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            self.fail(f"{path}.{key}", f"expected a list of strings, got {show(value)}")
            return []
        for k, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"{path}.{key}[{k}]", f"expected a string, got {show(item)}")
                return []
        return value

    def boolean(self, obj: dict[str, Any], key: str, path: str) -> bool:
        value = obj.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.fail(f"{path}.{key}", f"expected true or false, got {show(value)}")
            return False
        return value

    def mapping(self, obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(f"{path}.{key}", f"expected an object, got {show(value)}")
            return {}
        return value

    def job_list(self, payload: Any, what: str) -> list[Any]:
        if not isinstance(payload, dict):
            self.fail("(top level)", f"expected an object ({what}), got {type(payload).__name__}")
            return []
        if "jobs" not in payload:
            self.fail("jobs", f"required field is missing (is this {what}?)")
            return []
        jobs = payload["jobs"]
        if not isinstance(jobs, list):
            self.fail("jobs", f"expected a list of jobs, got {show(jobs)}")
            return []
        return jobs

    def job_id(self, obj: dict[str, Any], path: str) -> int | None:
        if obj.get("job_id") is None:
            self.fail(f"{path}.job_id", "required field is missing")
            return None
        before = len(self.problems)
        value = self.number(obj, "job_id", path, "a job id")
        if len(self.problems) > before:
            return None
        if not isinstance(value, int) or value == 0:
            self.fail(f"{path}.job_id", f"expected a job id, got {show(obj.get('job_id'))}")
            return None
        return value


@dataclass
class _Record:
    """One job record of `squeue --json`, as typed values."""

    index: int
    job_id: int
    array_job_id: int
    array_task_id: int | None
    array_task_string: str
    array_max_tasks: int
    het_job_id: int
    states: list[str]
    user: str
    name: str
    partition: str
    nodes: str
    node_count: SlurmNumber
    tasks: SlurmNumber
    tres_per_job: str
    tres_per_node: str
    tres_per_task: str
    tres_req_str: str
    tres_alloc_str: str
    gres_detail: list[str]
    time_limit: SlurmNumber
    priority: SlurmNumber
    submit_time: datetime | None
    eligible_time: datetime | None
    start_time: datetime | None
    deadline: datetime | None
    dependency: str
    hold: bool
    state_reason: str

    @property
    def path(self) -> str:
        return f"jobs[{self.index}]"

    @property
    def label(self) -> str:
        """The job as squeue shows it: `12`, `10_3`, a pending array record `10_[2-5]`."""
        if self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        if self.array_task_string:
            return f"{self.array_job_id or self.job_id}_[{self.array_task_string}]"
        return str(self.job_id)


def _read_record(f: _Fields, k: int, job: Any) -> _Record | None:
    path = f"jobs[{k}]"
    if not isinstance(job, dict):
        f.fail(path, f"expected a job object, got {show(job)}")
        return None
    before = len(f.problems)
    job_id = f.job_id(job, path)
    array_job = f.number(job, "array_job_id", path, "a job id")
    array_task = f.number(job, "array_task_id", path, "an array task id")
    max_tasks = f.number(job, "array_max_tasks", path, "a task count")
    het = f.number(job, "het_job_id", path, "a job id")
    record = _Record(
        index=k,
        job_id=job_id or 0,
        array_job_id=array_job if isinstance(array_job, int) else 0,
        array_task_id=array_task if isinstance(array_task, int) else None,
        array_task_string=f.string(job, "array_task_string", path).strip(),
        array_max_tasks=max_tasks if isinstance(max_tasks, int) else 0,
        het_job_id=het if isinstance(het, int) else 0,
        states=f.strings(job, "job_state", path),
        user=f.string(job, "user_name", path),
        name=f.string(job, "name", path),
        partition=f.string(job, "partition", path),
        nodes=f.string(job, "nodes", path),
        node_count=f.number(job, "node_count", path, "a node count"),
        tasks=f.number(job, "tasks", path, "a task count"),
        tres_per_job=f.string(job, "tres_per_job", path),
        tres_per_node=f.string(job, "tres_per_node", path),
        tres_per_task=f.string(job, "tres_per_task", path),
        tres_req_str=f.string(job, "tres_req_str", path),
        tres_alloc_str=f.string(job, "tres_alloc_str", path),
        gres_detail=f.strings(job, "gres_detail", path),
        time_limit=f.number(job, "time_limit", path, "minutes"),
        priority=f.number(job, "priority", path, "an integer priority"),
        submit_time=f.epoch(job, "submit_time", path),
        eligible_time=f.epoch(job, "eligible_time", path),
        start_time=f.epoch(job, "start_time", path),
        deadline=f.epoch(job, "deadline", path),
        dependency=f.string(job, "dependency", path),
        hold=f.boolean(job, "hold", path),
        state_reason=f.string(job, "state_reason", path),
    )
    if record.array_job_id == 0 and record.array_task_id is not None:
        record.array_task_id = None  # a task id without its array: not an array job
    return record if len(f.problems) == before and job_id is not None else None


# --------------------------------------------------------------------------------------------
# sacct history: run-time estimates and the outcome of finished jobs


@dataclass
class History:
    """What sacct says about finished jobs: the fraction of its time limit each completed run
    used, by (user, job name) and by partition; completed runs' elapsed minutes; and the base
    state of every job (`"12"`, an array task `"10_3"`, an array's tasks under `"10"`)."""

    ratios: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (user, name)
    by_partition: dict[str, list[float]] = field(default_factory=dict)
    elapsed: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # minutes
    states: dict[str, list[str]] = field(default_factory=dict)  # "12", "10_3" -> base states
    arrays: dict[str, list[str]] = field(default_factory=dict)  # "10" -> its tasks' states


def _base_state(states: Iterable[str]) -> str:
    states = [s.upper() for s in states]
    return next((s for s in states if s in _BASE_STATES), states[0] if states else "")


def read_history(payload: Any, source: str = "sacct") -> History:
    """The history in parsed `sacct --json` output; InputError names the JSON path of a field
    of the wrong type."""
    check_slurm(payload, "sacct", source)
    problems: list[str] = []
    f = _Fields(source, problems)
    history = History()
    for k, job in enumerate(f.job_list(payload, "sacct --json output")):
        path = f"jobs[{k}]"
        if not isinstance(job, dict):
            f.fail(path, f"expected a job object, got {show(job)}")
            continue
        job_id = f.job_id(job, path)
        time = f.mapping(job, "time", path)
        state = f.mapping(job, "state", path)
        array = f.mapping(job, "array", path)
        elapsed = f.number(time, "elapsed", f"{path}.time", "seconds")
        limit = f.number(time, "limit", f"{path}.time", "minutes")
        current = f.strings(state, "current", f"{path}.state")
        array_job = f.number(array, "job_id", f"{path}.array", "a job id")
        task = f.number(array, "task_id", f"{path}.array", "an array task id")
        user = f.string(job, "user", path)
        name = f.string(job, "name", path)
        partitions = f.string(job, "partition", path)
        if job_id is None or problems:
            continue
        base = _base_state(current)
        history.states.setdefault(str(job_id), []).append(base)
        if isinstance(array_job, int) and array_job and isinstance(task, int):
            history.states.setdefault(f"{array_job}_{task}", []).append(base)
            history.arrays.setdefault(str(array_job), []).append(base)
        if base != "COMPLETED" or not isinstance(elapsed, int):
            continue
        if isinstance(limit, int) and limit > 0:
            ratio = min(elapsed / 60 / limit, 1.0)
            history.ratios.setdefault((user, name), []).append(ratio)
            for p in partitions.split(","):
                history.by_partition.setdefault(p.strip(), []).append(ratio)
        history.elapsed.setdefault((user, name), []).append(elapsed / 60)
    if problems:
        raise InputError(problems)
    return history


def estimate_minutes(
    limit: int | None, user: str, name: str, partitions: list[str], history: History
) -> tuple[int, str] | None:
    """A run-time estimate from sacct history, with the note that says how; None: no estimate.

    Slurm kills a job at its time limit, so users ask for generous limits (often the
    partition's maximum) and most jobs end well before them; planning every job at its limit
    leaves the cluster idle behind jobs that have finished. The estimate is the median fraction
    of their limits that the same user's completed jobs of the same name used (at least
    MIN_HISTORY of them; else the partition's completed jobs), applied to this job's limit and
    rounded up to a minute. The ratio carries over when a user changes the limit; the median
    ignores the odd hung or quick-failing run; only COMPLETED runs count (a failed or
    cancelled run says nothing about the work). It is never above the limit: Slurm ends the
    job there. A job without a limit (`limit` None) gets the median elapsed time of the same
    user's completed jobs of that name.
    """
    if limit is None:
        runs = history.elapsed.get((user, name), [])
        if len(runs) < MIN_HISTORY:
            return None
        minutes = max(1, math.ceil(statistics.median(runs) - 1e-9))
        return minutes, (
            f"no time limit; sacct: {len(runs)} completed runs of {user}/{name} took a median "
            f"{minutes} min: planned for {minutes}m"
        )
    ratios = history.ratios.get((user, name), [])
    whose = f"{user}/{name}"
    if len(ratios) < MIN_HISTORY:
        ratios = [r for p in partitions for r in history.by_partition.get(p, [])]
        whose = f"partition {', '.join(partitions)}"
        if len(ratios) < MIN_HISTORY:
            return None
    ratio = statistics.median(ratios)
    minutes = min(limit, max(1, math.ceil(limit * ratio - 1e-9)))
    return minutes, (
        f"time limit {limit} min; sacct: {len(ratios)} completed runs of {whose} used a median "
        f"{ratio:.0%} of their limits: planned for {minutes}m (the limit stays the bound)"
    )


def _no_gpus(rec: _Record, verb: str) -> str:
    """Why a job is not GPU work: what its TRES fields say, or that the payload has none."""
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


# --------------------------------------------------------------------------------------------
# The import


@dataclass
class _Job:
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


class _Importer:
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
        self.per_node = {
            f"{p.name}-{i}": p.gpus_per_node for p in cluster.pools for i in range(p.nodes)
        }
        self.pool_of = {n: n.rsplit("-", 1)[0] for n in self.per_node}
        self.pools = {p.name: p for p in cluster.pools}
        self.partitions: dict[str, list[str]] = {}
        for p in cluster.pools:
            for part in p.partitions:
                self.partitions.setdefault(part, []).append(p.name)
        self.jobs: list[_Job] = []
        self.skipped: dict[str, str] = {}  # payload id -> why it is not imported
        self.arrays: dict[str, list[str]] = {}  # array job id -> its task ids in the payload
        self.task_of: dict[str, str] = {}  # an array task's own job id -> "<array>_<task>"
        self.seen: set[str] = set()
        self.order: dict[str, int] = {}  # a job's (or record's) place in the payload
        self.parts: dict[str, list[str]] = {}  # a running job held per node -> its parts' ids

    # ---- helpers

    def note(self, job: str, where: str, problem: str) -> None:
        self.notes.append(Note(job, where, problem))

    def skip(self, job: str, where: str, problem: str) -> None:
        self.note(job, where, f"{problem}; left out")
        self.skipped[job] = problem

    def slot(self, when: datetime, up: bool) -> int:
        slots = (when - self.start) / self.step
        return math.ceil(slots - 1e-9) if up else math.floor(slots + 1e-9)

    def at(self, slot: int) -> datetime:
        return self.start + slot * self.step

    # ---- one record

    def record(self, rec: _Record) -> None:
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

    def task_ids(self, rec: _Record) -> list[str]:
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

    def gpus(self, rec: _Record, job_id: str, running: bool) -> Gpus | None:
        """The job's GPUs, from the first source that names them (see the module's table)."""
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

    def job(self, rec: _Record, job_id: str, running: bool, held: bool) -> list[_Job]:
        """The record's job: one pending job, a running one (or its parts), or none (noted)."""
        if rec.state_reason == "DependencyNeverSatisfied":
            self.skip(job_id, "state_reason", "DependencyNeverSatisfied: it can never start")
            return []
        gpus = self.gpus(rec, job_id, running)
        if running:
            return self.running(rec, job_id, gpus)
        pending = self.pending(rec, job_id, held, gpus)
        return [] if pending is None else [pending]

    def pending(self, rec: _Record, job_id: str, held: bool, gpus: Gpus | None) -> _Job | None:
        if gpus is None:
            self.skip(job_id, "gres", _no_gpus(rec, "asks for"))
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
        job = _Job(job_id, rec, gpus.count, minutes, pools, release, whole=job_id)
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

    def running(self, rec: _Record, job_id: str, gpus: Gpus | None) -> list[_Job]:
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
            job = _Job(share_id, rec, sum(nodes.values()), minutes, [pool_name], release)
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
                self.skip(job_id, "gres", _no_gpus(rec, "holds"))
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
            self.skip(job_id, "gres", _no_gpus(rec, "holds"))
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
            self.skip(
                job_id,
                "time_limit",
                f"expected to end at {iso(ends)}, after the snapshot but by now "
                f"({iso(self.at(self.now_slot))}), where the plan starts: its GPUs are free then",
            )
            return None
        start = started
        if started < self.start:
            start = self.start
            self.note(
                job_id,
                "start_time",
                f"started {iso(started)}, before the horizon: placed from its start {iso(self.start)}",
            )
        if ends > self.end:
            ends = self.end
            self.note(
                job_id,
                "time_limit",
                f"runs past the horizon: placed until its end {iso(self.end)}",
            )
        return minutes, start, ends

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
        jobs: list[dict[str, Any]] = []
        for j in self.jobs:
            priority = scale_priority(j.priority, highest)
            out: dict[str, Any] = {
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
            jobs.append(out)
        return instance_document(self.cluster, name, self.snapshot, jobs)

    def compiled(self, name: str) -> dict[str, Any]:
        """The document, once the compiler takes it: a job it refuses is left out with the
        compiler's message (the checks above catch what Slurm's data usually holds; this
        catches the rest, e.g. a running job on a node the cluster file says is down)."""
        for _ in range(_COMPILE_PASSES):
            document = self.document(name)
            try:
                compile_instance(parse_spec(document))
                return document
            except InstanceError as exc:
                bad: dict[int, str] = {}
                other: list[str] = []
                for problem in exc.problems:
                    m = re.match(r"jobs\[(\d+)\]([^:]*): (.*)", problem, re.DOTALL)
                    if m is None or int(m.group(1)) >= len(self.jobs):
                        other.append(problem)
                    else:
                        where = m.group(2).lstrip(".")
                        bad.setdefault(
                            int(m.group(1)), f"{where}: {m.group(3)}" if where else m.group(3)
                        )
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


def _snapshot(
    payload: dict[str, Any], f: _Fields, given: datetime | None
) -> tuple[datetime, Note | None]:
    """The snapshot's time: squeue's `last_update` (when it answered), else `last_backfill`,
    else `given`, else now."""
    for key in ("last_update", "last_backfill"):
        when = f.epoch(payload, key, "(top level)")
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
    problems: list[str] = []
    f = _Fields(squeue_source, problems)
    raw = f.job_list(squeue, "squeue --json output")
    records = [r for k, job in enumerate(raw) if (r := _read_record(f, k, job)) is not None]
    when, snapshot_note = _snapshot(squeue if isinstance(squeue, dict) else {}, f, snapshot)
    if problems:
        raise InputError(problems)
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
    errors = squeue.get("errors") if isinstance(squeue, dict) else None
    if isinstance(errors, list):
        for e in errors[:3]:
            text = (e.get("description") or e.get("error")) if isinstance(e, dict) else e
            importer.note("", "errors", f"squeue reported: {show(text)}")
    for rec in records:
        importer.order.setdefault(rec.label, rec.index)
        importer.record(rec)
    importer.place_gpus()
    importer.depend()
    importer.drop_dangling()
    document = importer.compiled(name)
    # Notes in the payload's order (the whole payload's first), each job's in the order made.
    order = importer.order
    notes = sorted(importer.notes, key=lambda n: order.get(n.job, -1) if n.job else -2)
    return Imported(document, tuple(notes))
