"""Reading Slurm's JSON payloads (`squeue --json`, `sacct --json`) as typed values, every
problem named by its JSON path (`squeue.json: jobs[3].time_limit: expected minutes, got 'x'`).

Slurm's data_parser writes numbers three ways: v0.0.40 and later wrap them as `{"set": true,
"infinite": false, "number": N}`; v0.0.39 wraps some and writes others plain; v0.0.38 and earlier
write plain numbers, `null` for unset or INFINITE, and the raw sentinels NO_VAL (4294967294) and
INFINITE (4294967295). `Fields` reads all of them as a `SlurmNumber`: an int, INFINITE, or None
(unset). `read_record` reads one job of `squeue --json` into a `Record`; `importers/slurm/importer.py`
says what the importer makes of it, and `importers/slurm/history.py` reads sacct's jobs with the
same `Fields`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from horizon_opt.errors import InputError, Problem
from horizon_opt.model.spec import show

__all__ = [
    "BASE_STATES",
    "INFINITE",
    "Fields",
    "Record",
    "SlurmNumber",
    "base_state",
    "read_record",
]

# Slurm's sentinels, as the plain-number formats (v0.0.38 and earlier) write them.
_NO_VAL = {0xFFFFFFFE, 0xFFFFFFFFFFFFFFFE, 0xFFFE}
_INFINITE = {0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0xFFFF}
_MAX_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z

BASE_STATES = {
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


class _Infinite(enum.Enum):
    INFINITE = "INFINITE"


INFINITE = _Infinite.INFINITE
SlurmNumber = int | _Infinite | None  # None: unset (Slurm's NO_VAL, null, or absent)


class Fields:
    """Typed access to a JSON object's fields, collecting every problem with its JSON path
    (`error()` then refuses the payload, one line per problem: `<source>: <path>: ...`)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(Problem.at(path, message))

    def error(self) -> InputError:
        return InputError([f"{self.source}: {p}" for p in self.problems])

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
class Record:
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
    account: str  # "" when unset
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


def read_record(f: Fields, k: int, job: Any) -> Record | None:
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
    record = Record(
        index=k,
        job_id=job_id or 0,
        array_job_id=array_job if isinstance(array_job, int) else 0,
        array_task_id=array_task if isinstance(array_task, int) else None,
        array_task_string=f.string(job, "array_task_string", path).strip(),
        array_max_tasks=max_tasks if isinstance(max_tasks, int) else 0,
        het_job_id=het if isinstance(het, int) else 0,
        states=f.strings(job, "job_state", path),
        user=f.string(job, "user_name", path),
        account=f.string(job, "account", path).strip(),
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


def base_state(states: Iterable[str]) -> str:
    """The base state of a `job_state` list (`["RUNNING", "CONFIGURING"]`: RUNNING): the first
    that is one of BASE_STATES, else the first."""
    states = [s.upper() for s in states]
    return next((s for s in states if s in BASE_STATES), states[0] if states else "")
