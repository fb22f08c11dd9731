"""The instance file as users write it: pydantic models that mirror FORMAT.md field by field.

These models check shape, types and ranges (the limits below). Everything that needs context
(time units, pool and job references, cycles, placeability, inference feasibility, sizes of the
whole cluster) is checked when the spec is compiled into an `Instance` (see `instance.py`), so
every message can name its field path.
"""

from __future__ import annotations

import reprlib
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
)

# Limits of what horizon-opt plans (FORMAT.md, "Limits", quotes them). No real cluster comes near
# them; within them every count fits an int64 and every per-node, per-slot array stays small
# enough to allocate, and input beyond them is refused before anything is allocated.
MAX_SLOTS = 100_000  # horizon.slots; also the longest duration, in slots
MAX_SLOT_MINUTES = 7 * 24 * 60  # horizon.slot_minutes: one week
MAX_NODES = 100_000  # nodes of all pools together
MAX_NODE_SLOTS = 10_000_000  # nodes x slots: the size of every per-node, per-slot array
MAX_GPUS_PER_NODE = 1_024  # pools[].gpus_per_node, services[].gpus_per_replica
MAX_JOB_GPUS = MAX_NODES * MAX_GPUS_PER_NODE  # jobs[].gpus
MAX_PRIORITY = 1e6  # jobs[].priority
MAX_DEMAND = 1e6  # replicas per slot of a service's demand
MAX_HEADROOM = 10.0  # services[].headroom
MAX_TIME_SLOTS = 10**10  # largest |slot index| of a time field
MAX_HOST_NAME = 253  # characters of a node's host name (pools[].node_names): DNS's limit
# A host name (pools[].node_names): no space, `:` or `,`, on which CSV cells and options split.
HOST_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def show(value: Any) -> str:
    """A short repr of user input for messages: a long string, a deep list or a huge number must
    not make a huge message, or fail (Python refuses to print an int of over 4,300 digits)."""
    if isinstance(value, int) and abs(value) >= 10**18:
        return "an integer of more than 18 digits"
    return _REPR.repr(value)


def _int_or_str(value: Any) -> int | str:
    """Accept an int or a string, nothing else (YAML booleans and floats are mistakes here)."""
    if isinstance(value, date):  # YAML reads unquoted timestamps and dates: mean the quoted form
        return value.isoformat()
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected an integer or a string, got {show(value)}")
    return value


def _pool_keys(value: Any) -> Any:
    """Keys of a per-pool mapping are pool names (YAML reads a name like `100` as a number)."""
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else value


def _some_pool(value: dict[str, int | str]) -> dict[str, int | str]:
    if not value:
        raise ValueError("needs at least one pool")
    return value


def _mapping_or_other(value: Any) -> str:
    """Discriminator: a mapping is validated as the mapping form, anything else as the other form.

    Only one form is validated, so an error speaks about the form the user wrote. The tags are
    written `<...>`: `errors.format_location` leaves them out of field paths.
    """
    return "<mapping>" if isinstance(value, dict | BaseModel) else "<value>"


def _timestamp(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, date):  # an unquoted YAML date: its midnight, like "2026-12-01"
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"not an ISO-8601 timestamp: {show(value)}") from None
    raise ValueError(f"expected an ISO-8601 timestamp, got {show(value)}")


Time = Annotated[int | str, PlainValidator(_int_or_str, json_schema_input_type=int | str)]
Duration = Annotated[
    Annotated[Time, Tag("<value>")]
    | Annotated[
        dict[str, Time],
        BeforeValidator(_pool_keys),
        AfterValidator(_some_pool),
        Tag("<mapping>"),
    ],
    Discriminator(_mapping_or_other),
]
Timestamp = Annotated[datetime | None, BeforeValidator(_timestamp)]
Name = Annotated[str, Field(pattern=r"^[a-z0-9_-]+$")]
HostName = Annotated[str, Field(pattern=HOST_NAME_PATTERN, max_length=MAX_HOST_NAME)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


JobKind = Literal["training", "batch_inference", "quantization", "evaluation", "other"]
JOB_KINDS: tuple[JobKind, ...] = (
    "training",
    "batch_inference",
    "quantization",
    "evaluation",
    "other",
)


class HorizonSpec(_Model):
    slots: int = Field(ge=1, le=MAX_SLOTS, description="Number of slots S in the horizon.")
    slot_minutes: int = Field(
        default=60, ge=1, le=MAX_SLOT_MINUTES, description="Length of one slot in minutes."
    )
    start: Timestamp = Field(default=None, description="Wall-clock time of slot 0 (ISO-8601).")
    open_end: bool = Field(
        default=False,
        description="Jobs may run past the last slot: the planned horizon extends until every "
        "job can end (FORMAT.md, Open end).",
    )


class PoolSpec(_Model):
    name: Name
    gpu_type: str
    nodes: int = Field(ge=1, le=MAX_NODES)
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS_PER_NODE)
    node_names: list[HostName] | None = Field(
        default=None,
        description="Host names of the pool's nodes, in node order, exactly `nodes` of them; "
        "default <pool>-<i>.",
    )

    def names(self) -> list[str]:
        """The pool's node names in node order: one place that applies the default, so every
        reader of a spec names nodes as the compiler does."""
        if self.node_names is not None:
            return list(self.node_names)
        return [default_node_name(self.name, i) for i in range(self.nodes)]


def default_node_name(pool: str, index: int) -> str:
    """`<pool>-<i>`: the name of node `index` of a pool that does not name its nodes."""
    return f"{pool}-{index}"


class OutageSpec(_Model):
    node: str = Field(description="Node name: <pool>-<i>, or the pool's node_names.")
    start: Time
    end: Time


class BlackoutSpec(_Model):
    """Slots [start, end) in which a job may not run (FORMAT.md, `blackout`)."""

    start: Time
    end: Time


class DemandCsv(_Model):
    csv: str = Field(description="CSV file path, relative to the instance file.")
    column: str


class ServiceSpec(_Model):
    name: str = Field(min_length=1)
    pool: str
    gpus_per_replica: int = Field(ge=1, le=MAX_GPUS_PER_NODE)
    headroom: float = Field(default=0.0, ge=0.0, le=MAX_HEADROOM, allow_inf_nan=False)
    demand: Annotated[
        Annotated[
            list[Annotated[float, Field(ge=0, le=MAX_DEMAND, allow_inf_nan=False)]],
            Tag("<value>"),
        ]
        | Annotated[DemandCsv, Tag("<mapping>")],
        Discriminator(_mapping_or_other),
    ] = Field(description="Forecast replicas per slot (S numbers), or {csv, column}.")


class PlacedSpec(_Model):
    """Where a job already is: the shape of a plan assignment (`end` is optional)."""

    pool: str
    start: Time
    end: Time | None = Field(
        default=None,
        description="The expected end when known better than start + duration; the job then "
        "lasts end - start.",
    )
    gpus: dict[str, list[Annotated[int, Field(ge=0, lt=MAX_GPUS_PER_NODE)]]] = Field(
        min_length=1, description="Node name -> GPU indices held."
    )


class JobSpec(_Model):
    id: str = Field(min_length=1)
    kind: JobKind = "other"
    priority: float = Field(gt=0, le=MAX_PRIORITY, allow_inf_nan=False)
    gpus: int = Field(ge=1, le=MAX_JOB_GPUS)
    duration: Duration
    pools: list[str] | None = None
    release: Time = 0
    deadline: Time | None = None
    after: list[str] = Field(default_factory=list)
    placed: PlacedSpec | None = Field(
        default=None, description="A running job (start < now) or a held start; never moved."
    )
    team: str | None = Field(default=None, description="The team whose limits it counts against.")
    blackout: list[BlackoutSpec] = Field(
        default_factory=list,
        description="Windows [start, end) in which the job may not run: no run of it overlaps one.",
    )


PoolGpus = Annotated[
    dict[str, Annotated[int, Field(ge=0, le=MAX_JOB_GPUS)]], BeforeValidator(_pool_keys)
]


class TeamSpec(_Model):
    """A team (a Slurm account, a Kueue ClusterQueue) and its GPUs per pool."""

    name: Name
    quota: PoolGpus = Field(
        default_factory=dict, description="Pool name -> GPUs the team is entitled to."
    )
    limit: PoolGpus = Field(
        default_factory=dict,
        description="Pool name -> the most GPUs its jobs may hold at any slot (hard); a pool "
        "not listed has no limit.",
    )
    weight: float = Field(
        default=1.0,
        gt=0,
        le=MAX_PRIORITY,
        allow_inf_nan=False,
        description="Its share of what no quota covers, relative to other teams.",
    )


class InstanceSpec(_Model):
    name: str = Field(min_length=1)
    horizon: HorizonSpec
    now: Time | None = Field(
        default=None, description="First slot that can still be planned; before it is history."
    )
    pools: list[PoolSpec] = Field(min_length=1)
    outages: list[OutageSpec] = Field(default_factory=list)
    services: list[ServiceSpec] = Field(default_factory=list)
    jobs: list[JobSpec] = Field(default_factory=list)
    teams: list[TeamSpec] = Field(default_factory=list)
