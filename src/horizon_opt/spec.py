"""The instance file as users write it: pydantic models that mirror FORMAT.md field by field.

These models only check shape and types. Everything that needs context (time units, pool and
job references, cycles, placeability, inference feasibility) is checked when the spec is compiled
into an `Instance` (see `instance.py`), so every message can name its field path.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator


def _int_or_str(value: Any) -> int | str:
    """Accept an int or a string, nothing else (YAML booleans and floats are mistakes here)."""
    if isinstance(value, datetime):  # YAML turns unquoted timestamps into datetimes
        return value.isoformat()
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected an integer or a string, got {value!r}")
    return value


def _duration(value: Any) -> int | str | dict[str, int | str]:
    """One duration for every allowed pool, or a mapping pool -> duration."""
    if isinstance(value, dict):
        out: dict[str, int | str] = {}
        for key, item in value.items():
            try:
                out[str(key)] = _int_or_str(item)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        if not out:
            raise ValueError("needs at least one pool")
        return out
    return _int_or_str(value)


def _timestamp(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from None
    raise ValueError(f"expected an ISO-8601 timestamp, got {value!r}")


Time = Annotated[int | str, PlainValidator(_int_or_str, json_schema_input_type=int | str)]
Duration = Annotated[
    int | str | dict[str, int | str],
    PlainValidator(_duration, json_schema_input_type=int | str | dict[str, int | str]),
]
Timestamp = Annotated[datetime | None, BeforeValidator(_timestamp)]
Name = Annotated[str, Field(pattern=r"^[a-z0-9_-]+$")]


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
    slots: int = Field(ge=1, description="Number of slots S in the horizon.")
    slot_minutes: int = Field(default=60, ge=1, description="Length of one slot in minutes.")
    start: Timestamp = Field(default=None, description="Wall-clock time of slot 0 (ISO-8601).")


class PoolSpec(_Model):
    name: Name
    gpu_type: str
    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)


class OutageSpec(_Model):
    node: str = Field(description="Node name <pool>-<i>.")
    start: Time
    end: Time


class DemandCsv(_Model):
    csv: str = Field(description="CSV file path, relative to the instance file.")
    column: str


class ServiceSpec(_Model):
    name: str = Field(min_length=1)
    pool: str
    gpus_per_replica: int = Field(ge=1)
    headroom: float = Field(default=0.0, ge=0.0)
    demand: list[Annotated[float, Field(ge=0)]] | DemandCsv = Field(
        description="Forecast replicas per slot (S numbers), or {csv, column}."
    )


class JobSpec(_Model):
    id: str = Field(min_length=1)
    kind: JobKind = "other"
    priority: float = Field(gt=0)
    gpus: int = Field(ge=1)
    duration: Duration
    pools: list[str] | None = None
    release: Time = 0
    deadline: Time | None = None
    after: list[str] = Field(default_factory=list)


class InstanceSpec(_Model):
    name: str = Field(min_length=1)
    horizon: HorizonSpec
    pools: list[PoolSpec] = Field(min_length=1)
    outages: list[OutageSpec] = Field(default_factory=list)
    services: list[ServiceSpec] = Field(default_factory=list)
    jobs: list[JobSpec] = Field(default_factory=list)
