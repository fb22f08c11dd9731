"""The plan file `horizon-opt.plan/1`: what every solver writes and the checker reads."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from horizon_opt.errors import PlanError, format_location
from horizon_opt.io import read_text, validation_problems, write_atomic

PLAN_FORMAT = "horizon-opt.plan/1"
Status = Literal["optimal", "feasible", "heuristic"]

PLAN_INT_MAX = 1_000_000_000
"""Largest integer a plan may hold (slot, GPU index, replicas, count): far beyond any cluster,
and small enough that numpy's int64 sums of such values cannot overflow."""
MAX_EXTRA_DEPTH = 32  # nesting of a metric the format does not define (`Metrics` extras)


def _text(value: str) -> str:
    """A lone surrogate (JSON `"\\ud800"`) is not text: a report or CSV could not write it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid Unicode text (a lone surrogate)") from None
    return value


Text = Annotated[str, AfterValidator(_text)]
Count = Annotated[int, Field(ge=0, le=PLAN_INT_MAX)]
Seconds = Annotated[float, Field(ge=0.0)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Assignment(_Model):
    job: Text
    pool: Text
    start: Count
    end: Count
    gpus: dict[Text, list[Count]] = Field(
        description="node name -> GPU indices held for the whole run"
    )
    start_time: Text | None = Field(default=None, description="ISO time of start, if known")
    end_time: Text | None = Field(default=None, description="ISO time of end, if known")


class InferenceBlock(_Model):
    service: Text
    node: Text
    start: Count
    end: Count
    replicas: Count


class Unscheduled(_Model):
    job: Text
    reason: Text
    code: Text | None = Field(
        default=None,
        description="the cause code (FORMAT.md, cause codes); plans of other tools may omit it",
    )


def _extra_problem(value: Any, where: str) -> str | None:
    """Why a figure the format does not define could not be written back as JSON, if it could not.

    Iterative, so that deep nesting is reported instead of overflowing the stack. Types JSON
    never produces are left to serialization, which fails loudly on them.
    """
    stack = [(value, where, 1)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_EXTRA_DEPTH:
            return f"{path}: nested more than {MAX_EXTRA_DEPTH} levels deep"
        if isinstance(item, float) and not math.isfinite(item):
            return f"{path}: not a finite number"
        if isinstance(item, str):
            try:
                _text(item)
            except ValueError as exc:
                return f"{path}: {exc}"
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}", depth + 1) for k, v in item.items())
            stack.extend((k, f"{path} (a key)", depth + 1) for k in item)
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item))
    return None


class TeamFigures(_Model):
    """One team's figures (FORMAT.md, Metrics by team), from `now` on where GPU-hours."""

    gpu_hours: float = Field(ge=0.0, description="GPU-hours its assigned jobs hold")
    quota_gpu_hours: float = Field(ge=0.0, description="its quota over the slots, in GPU-hours")
    borrowed_gpu_hours: float = Field(ge=0.0, description="GPU-hours held above its quota")
    lent_gpu_hours: float = Field(
        ge=0.0, description="quota left idle while other teams held more than theirs there"
    )
    share: float = Field(ge=0.0, description="its part of all teams' GPU-hours")
    quota_share: float = Field(ge=0.0, description="its part of all teams' quota GPU-hours")
    pwo: float = Field(ge=0.0)
    completed: Count
    mean_wait_hours: float = Field(ge=0.0)
    kept_out_slots: Count = Field(
        default=0,
        description="(pool, slot) pairs at which a waiting job of it, within its quota, found "
        "no room only because other teams held GPUs above their quotas",
    )


class Metrics(BaseModel):
    """The figures of a plan that FORMAT.md defines; `metrics.evaluate` computes them.

    Plan files written by hand or by other tools may hold only some of them, or others: they
    load, a missing figure reads as zero, and only the figures the file held are written back.
    """

    model_config = ConfigDict(frozen=True, extra="allow", allow_inf_nan=False)

    available_gpu_hours: float = 0.0
    batch_gpu_hours: float = 0.0
    inference_gpu_hours: float = 0.0
    reserved_idle_gpu_hours: float = 0.0
    utilization: float = 0.0
    pwo: float = 0.0
    completed: Count = 0
    completed_by_kind: dict[Text, Count] = Field(default_factory=dict)
    mean_wait_hours: float = 0.0
    scheduled: Count = Field(default=0, description="assigned jobs, on time or not")
    late: Count = Field(default=0, description="assigned jobs that end after their deadline")
    teams: dict[Text, TeamFigures] = Field(
        default_factory=dict, description="per team, when the instance has teams"
    )
    team_fairness: float | None = Field(
        default=None,
        description="Jain's index over teams with a quota of share / quota_share (1 = fair)",
    )

    @model_validator(mode="after")
    def _extras_are_json(self) -> Metrics:
        """Figures of other tools are kept as they are, so they must be writable JSON too."""
        for key, value in (self.model_extra or {}).items():
            problem = _extra_problem(value, key)
            if problem is not None:
                raise ValueError(problem)
        return self

    @model_serializer(mode="wrap")
    def _held_figures_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A figure the plan never held is not written as a zero."""
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if key in self.model_fields_set}


class Churn(_Model):
    """How a re-plan differs from the plan it replaces, so that people holding a promised start
    learn what moved. Only promises still in the future (previous start >= `now`) of jobs still
    in the instance are compared; `churn.churn` computes it."""

    compared: Count = Field(
        description="jobs of the instance that the previous plan assigned at or after now: "
        "the base of the other counts"
    )
    moved: Count = Field(
        description="compared jobs still assigned, but at another start or on another pool"
    )
    moved_gpu_hours: float = Field(
        ge=0.0, description="sum over moved jobs of gpus * new duration * hours per slot"
    )
    mean_shift_hours: float = Field(
        ge=0.0, description="mean over moved jobs of |new start - old start| in hours (0 if none)"
    )
    max_shift_hours: float = Field(
        ge=0.0, description="max over moved jobs of |new start - old start| in hours (0 if none)"
    )
    later: Count = Field(description="moved jobs that now start later than promised")
    dropped: Count = Field(description="compared jobs that the new plan leaves unscheduled")
    broken: Count = Field(
        description="compared jobs on time in the previous plan (end <= deadline, or no "
        "deadline) that are now unscheduled or late"
    )
    new: Count = Field(
        description="jobs the new plan assigns that the previous plan did not assign "
        "(newly arrived, or unscheduled before)"
    )
    stability: float = Field(
        default=0.0,
        ge=0.0,
        description="the stability weight of the re-plan: keeping a promise was worth this "
        "times the job's value",
    )
    held: Count = Field(
        default=0,
        description="jobs whose promised start fell in the freeze window and was held "
        "(counted among the compared, never moved)",
    )


class _DuplicateKeyError(Exception):
    """A JSON object names a key twice: readers disagree on which value counts."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _parse_int(digits: str) -> int | float:
    """A JSON integer; one too long for `int()` (4300 digits) reads as +-inf: every field
    rejects that, naming itself, where `json.loads` alone would fail without saying where."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def _loads(text: str) -> Any:
    """JSON with no key twice in an object; `_parse_int` only when `int()` refuses a number,
    which keeps the common case at C speed."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of more digits than int() reads
        return json.loads(text, object_pairs_hook=_unique_keys, parse_int=_parse_int)


class Plan(_Model):
    format: Literal["horizon-opt.plan/1"] = "horizon-opt.plan/1"
    instance: Text
    solver: Text
    status: Status
    objective: float
    bound: float | None = None
    gap: float | None = None
    bound_source: Text | None = Field(
        default=None,
        description="what proved `bound`: lp, mip, pool-cpsat or node-cpsat (FORMAT.md); "
        "other tools may omit it",
    )
    wall_seconds: Seconds = 0.0
    build_seconds: Seconds | None = Field(default=None, description="model build time (cpsat)")
    assignments: list[Assignment] = Field(default_factory=list)
    inference: list[InferenceBlock] = Field(default_factory=list)
    unscheduled: list[Unscheduled] = Field(default_factory=list)
    metrics: Metrics = Field(default_factory=Metrics)
    churn: Churn | None = Field(
        default=None, description="what a re-plan changed against the previous plan (replan)"
    )

    def to_json(self) -> str:
        """Strict JSON: a NaN or infinity (only code that skips validation can put one in) is a
        bug to report, not output to write. `churn` is written only by re-plans, `bound_source`
        only with a bound, and an unscheduled job's `code` only when it has one (FORMAT.md: it may
        be omitted; never written as `null`)."""
        data = self.model_dump(mode="json", exclude_none=False)
        for optional in ("churn", "bound_source"):
            if data[optional] is None:
                del data[optional]
        for entry in data["unscheduled"]:
            if entry["code"] is None:
                del entry["code"]
        try:
            return json.dumps(data, indent=1, allow_nan=False) + "\n"
        except ValueError as exc:
            raise RuntimeError(
                f"internal error: the plan cannot be written as JSON: {exc}"
            ) from exc

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: a reader never sees half a plan."""
        write_atomic(path, self.to_json())

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Plan:
        """Read and validate a plan file; any problem with it raises PlanError, never a traceback."""
        file = Path(path)
        try:
            text = read_text(file)
        except OSError as exc:
            raise PlanError([f"{file}: cannot read: {exc.strerror}"]) from None
        except ValueError as exc:  # not UTF-8 text, or too large
            raise PlanError([f"{file}: {exc}"]) from None
        try:
            data = _loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError([f"{file}: not valid JSON: {exc}"]) from None
        except _DuplicateKeyError as exc:
            raise PlanError(
                [f"{file}: not valid JSON: key {exc.args[0]!r} appears twice"]
            ) from None
        except RecursionError:
            raise PlanError([f"{file}: not valid JSON: nested too deeply"]) from None
        return cls.parse(data)

    @classmethod
    def parse(cls, data: Any) -> Plan:
        """Validate parsed JSON strictly: `"0"`, `true` or `1.0` is not an integer in a plan."""
        try:
            return cls.model_validate(data, strict=True)
        except ValidationError as exc:
            problems = validation_problems(exc)  # one per error, in order
            for k, err in enumerate(exc.errors()):
                huge = isinstance(err["input"], float) and math.isinf(err["input"])
                if err["type"] == "int_type" and huge:  # see `_parse_int`
                    where = format_location(err["loc"])
                    problems[k] = f"{where}: must be an integer from 0 to {PLAN_INT_MAX}"
            raise PlanError(problems) from None
