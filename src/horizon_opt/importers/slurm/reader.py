"""Slurm's JSON payloads (`squeue --json`, `sacct --json`) as pydantic models, every problem
named by its JSON path from pydantic's error locations (`squeue.json: jobs[3].time_limit:
expected minutes, got 'x'`), as the instance file's are; importers/payload_model.py is the
core it shares with Kueue's reader.

Slurm's data_parser writes numbers three ways: v0.0.40 and later wrap them as `{"set": true,
"infinite": false, "number": N}`; v0.0.39 wraps some and writes others plain; v0.0.38 and earlier
write plain numbers, `null` for unset or INFINITE, and the raw sentinels NO_VAL (4294967294) and
INFINITE (4294967295). `slurm_number` reads all of them as a `SlurmNumber`: an int, INFINITE, or
None (unset). `SqueueJob` is one job of `squeue --json`; `importers/slurm/importer.py` says what
the importer makes of it, and `importers/slurm/history.py` models sacct's jobs with the same
field types. Every model ignores fields it does not know: each Slurm release adds some.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetPydanticSchema,
    PlainValidator,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic_core import core_schema

from horizon_opt.importers.payload_model import read_payload
from horizon_opt.model.spec import show

__all__ = [
    "BASE_STATES",
    "INFINITE",
    "Epoch",
    "Flag",
    "JobId",
    "SlurmModel",
    "SlurmNumber",
    "SlurmPayload",
    "SqueueJob",
    "SqueuePayload",
    "Strings",
    "Text",
    "an_object",
    "base_state",
    "jobs_default",
    "read_payload",
    "slurm_number",
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


def _plain(value: Any, what: str) -> SlurmNumber:
    """A number as the plain formats write it, their sentinels read as unset and INFINITE."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**64:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise ValueError(f"expected {what}, got {show(value)}")
    if value in _NO_VAL:
        return None
    if value in _INFINITE:
        return INFINITE
    return value


def _number(value: Any, what: str, wrapped: Callable[[Any], Any]) -> SlurmNumber:
    """A number in any of the three formats; `wrapped` validates `{"number": N}`, so that a bad
    N is named at `<field>.number`, where it is."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return _plain(value, what)
    flags = [value.get("set"), value.get("infinite")]
    unknown = set(value) - {"set", "infinite", "number"}
    if unknown or any(f is not None and not isinstance(f, bool) for f in flags):
        raise ValueError(f"expected {what} or {{set, infinite, number}}, got {show(value)}")
    if value.get("infinite") is True:
        return INFINITE
    if value.get("set") is False:
        return None
    if value.get("number") is None:
        raise ValueError(f"expected {what}: 'set' is true but 'number' is missing")
    number: SlurmNumber = wrapped({"number": value["number"]})["number"]
    return number


def slurm_number(what: str, then: Callable[[SlurmNumber, Any], Any] | None = None) -> Any:
    """The annotation of a Slurm number field (`Annotated[SlurmNumber, slurm_number("minutes")]`):
    `what` says what it counts in messages; `then(number, raw)` makes the field's value of it
    (and may raise ValueError: a problem at the field)."""
    number = core_schema.no_info_plain_validator_function(lambda v: _plain(v, what))

    def validate(value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> Any:
        read = _number(value, what, handler)
        return then(read, value) if then is not None else read

    schema = core_schema.no_info_wrap_validator_function(
        validate, core_schema.dict_schema(values_schema=number)
    )
    return GetPydanticSchema(lambda _source, _handler: schema)


def _job_id(number: SlurmNumber, raw: Any) -> int:
    if raw is None:
        raise ValueError("required field is missing")
    if not isinstance(number, int) or number == 0:
        raise ValueError(f"expected a job id, got {show(raw)}")
    return number


def _epoch(number: SlurmNumber, _raw: Any) -> datetime | None:
    """0, unset and INFINITE are no time."""
    if not isinstance(number, int) or number == 0:
        return None
    if number > _MAX_EPOCH:
        raise ValueError(f"expected epoch seconds before the year 10000, got {number}")
    return datetime.fromtimestamp(number, UTC)


def _or_zero(number: SlurmNumber, _raw: Any) -> int:
    return number if isinstance(number, int) else 0


def _or_none(number: SlurmNumber, _raw: Any) -> int | None:
    return number if isinstance(number, int) else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {show(value)}")
    return value


def _stripped(value: Any) -> str:
    return _text(value).strip()


def _item(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {show(value)}")
    return value


def _listish(value: Any) -> Any:
    """A list of strings; a single string is one item (older formats); null is none."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise ValueError(f"expected a list of strings, got {show(value)}")
    return value


def _flag(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {show(value)}")
    return value


def an_object(what: str, *, null_is_empty: bool = True) -> BeforeValidator:
    """An object field (`what`: how a message names it); null reads as `{}`, the defaults,
    unless `null_is_empty` is false."""

    def check(value: Any) -> Any:
        if value is None and null_is_empty:
            return {}
        if not isinstance(value, dict):
            raise ValueError(f"expected {what}, got {show(value)}")
        return value

    return BeforeValidator(check)


_ABSENT: Any = object()  # a payload's `jobs` when it has none (a default pydantic validates)


def jobs_default() -> Any:
    """The default of a payload's `jobs`: validated, so that `SlurmPayload` names what is
    missing."""
    return Field(default=_ABSENT, validate_default=True)


JobId = Annotated[int, slurm_number("a job id", _job_id)]
Epoch = Annotated[datetime | None, slurm_number("epoch seconds", _epoch)]
Text = Annotated[str, PlainValidator(_text)]
Strings = Annotated[list[Annotated[str, PlainValidator(_item)]], BeforeValidator(_listish)]
Flag = Annotated[bool, PlainValidator(_flag)]


class SlurmModel(BaseModel):
    """What Slurm's models share: unknown fields are ignored (each release adds some)."""

    model_config = ConfigDict(extra="ignore")


class SlurmPayload(SlurmModel):
    """What both payloads share: an object at the top level (`output`: the command's output it
    should be, for the message)."""

    output: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object ({cls.output}), got {type(data).__name__}")
        return data

    @field_validator("jobs", mode="before", check_fields=False)
    @classmethod
    def _jobs(cls, value: Any) -> Any:
        """Each payload's `jobs`: required, a list (`jobs_default` lets a missing one reach
        here, to be named with the output it should be)."""
        if value is _ABSENT:
            raise ValueError(f"required field is missing (is this {cls.output}?)")
        if not isinstance(value, list):
            raise ValueError(f"expected a list of jobs, got {show(value)}")
        return value


class SqueueJob(SlurmModel):
    """One job record of `squeue --json`, as typed values (fields in the order problems are
    listed)."""

    job_id: JobId
    array_job_id: Annotated[int, slurm_number("a job id", _or_zero)] = 0
    array_task_id: Annotated[int | None, slurm_number("an array task id", _or_none)] = None
    array_max_tasks: Annotated[int, slurm_number("a task count", _or_zero)] = 0
    het_job_id: Annotated[int, slurm_number("a job id", _or_zero)] = 0
    array_task_string: Annotated[str, PlainValidator(_stripped)] = ""
    states: Strings = Field(default_factory=list, alias="job_state")
    user: Text = Field(default="", alias="user_name")
    account: Annotated[str, PlainValidator(_stripped)] = ""  # "" when unset
    name: Text = ""
    partition: Text = ""
    nodes: Text = ""
    node_count: Annotated[SlurmNumber, slurm_number("a node count")] = None
    tasks: Annotated[SlurmNumber, slurm_number("a task count")] = None
    tres_per_job: Text = ""
    tres_per_node: Text = ""
    tres_per_task: Text = ""
    tres_req_str: Text = ""
    tres_alloc_str: Text = ""
    gres_detail: Strings = Field(default_factory=list)
    time_limit: Annotated[SlurmNumber, slurm_number("minutes")] = None
    priority: Annotated[SlurmNumber, slurm_number("an integer priority")] = None
    submit_time: Epoch = None
    eligible_time: Epoch = None
    start_time: Epoch = None
    deadline: Epoch = None
    dependency: Text = ""
    hold: Flag = False
    state_reason: Text = ""
    _index: int = PrivateAttr(0)

    @model_validator(mode="after")
    def _array(self) -> SqueueJob:
        if self.array_job_id == 0:
            self.array_task_id = None  # a task id without its array: not an array job
        return self

    @property
    def index(self) -> int:
        """The record's place in the payload's `jobs`."""
        return self._index

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


class SqueuePayload(SlurmPayload):
    """`squeue --json` as the importer reads it: its jobs and the snapshot's times."""

    output: ClassVar[str] = "squeue --json output"
    jobs: list[Annotated[SqueueJob, an_object("a job object", null_is_empty=False)]] = (
        jobs_default()
    )
    last_update: Epoch = None
    last_backfill: Epoch = None

    @model_validator(mode="after")
    def _indices(self) -> SqueuePayload:
        for k, job in enumerate(self.jobs):
            job._index = k
        return self


def base_state(states: Iterable[str]) -> str:
    """The base state of a `job_state` list (`["RUNNING", "CONFIGURING"]`: RUNNING): the first
    that is one of BASE_STATES, else the first."""
    states = [s.upper() for s in states]
    return next((s for s in states if s in BASE_STATES), states[0] if states else "")
