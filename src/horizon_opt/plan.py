"""The plan file `horizon-opt.plan/1`: what every solver writes and the checker reads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
    metrics: dict[str, Any] = Field(default_factory=dict)

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
