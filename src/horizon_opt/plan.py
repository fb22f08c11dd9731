"""The plan file `horizon-opt.plan/1`: what every solver writes and the checker reads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from horizon_opt.errors import PlanError
from horizon_opt.io import validation_problems, write_atomic

PLAN_FORMAT = "horizon-opt.plan/1"
Status = Literal["optimal", "feasible", "heuristic"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Assignment(_Model):
    job: str
    pool: str
    start: int
    end: int
    gpus: dict[str, list[int]] = Field(
        description="node name -> GPU indices held for the whole run"
    )
    start_time: str | None = Field(default=None, description="ISO time of start, if known")
    end_time: str | None = Field(default=None, description="ISO time of end, if known")


class InferenceBlock(_Model):
    service: str
    node: str
    start: int
    end: int
    replicas: int


class Unscheduled(_Model):
    job: str
    reason: str


class Metrics(BaseModel):
    """The figures of a plan that FORMAT.md defines; `metrics.evaluate` computes them.

    Plan files written by hand or by other tools may hold only some of them, or others: they
    load, a missing figure reads as zero, and only the figures the file held are written back.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    available_gpu_hours: float = 0.0
    batch_gpu_hours: float = 0.0
    inference_gpu_hours: float = 0.0
    reserved_idle_gpu_hours: float = 0.0
    utilization: float = 0.0
    pwo: float = 0.0
    completed: int = 0
    completed_by_kind: dict[str, int] = Field(default_factory=dict)
    mean_wait_hours: float = 0.0
    scheduled: int = Field(default=0, description="assigned jobs, on time or not")
    late: int = Field(default=0, description="assigned jobs that end after their deadline")

    @model_serializer(mode="wrap")
    def _held_figures_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A figure the plan never held is not written as a zero."""
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if key in self.model_fields_set}


class Plan(_Model):
    format: Literal["horizon-opt.plan/1"] = "horizon-opt.plan/1"
    instance: str
    solver: str
    status: Status
    objective: float
    bound: float | None = None
    gap: float | None = None
    wall_seconds: float = 0.0
    build_seconds: float | None = Field(default=None, description="model build time (cpsat)")
    assignments: list[Assignment] = Field(default_factory=list)
    inference: list[InferenceBlock] = Field(default_factory=list)
    unscheduled: list[Unscheduled] = Field(default_factory=list)
    metrics: Metrics = Field(default_factory=Metrics)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=False), indent=1) + "\n"

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: a reader never sees half a plan."""
        write_atomic(path, self.to_json())

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Plan:
        file = Path(path)
        try:
            data = json.loads(file.read_text())
        except OSError as exc:
            raise PlanError([f"{file}: cannot read: {exc.strerror}"]) from None
        except json.JSONDecodeError as exc:
            raise PlanError([f"{file}: not valid JSON: {exc}"]) from None
        return cls.parse(data)

    @classmethod
    def parse(cls, data: Any) -> Plan:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise PlanError(validation_problems(exc)) from None
