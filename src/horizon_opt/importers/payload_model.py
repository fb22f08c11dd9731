"""A scheduler's JSON payload read as pydantic models: the core the Slurm and Kueue readers
share. Every problem is named by its JSON path, from pydantic's own error locations
(`squeue.json: jobs[3].time_limit: expected minutes, got 'x'`, `workloads.json:
items[2].spec.podSets[0].count: expected an integer, got '3'`), and kept as data (`Problem`).

A key that is not an identifier is written as JSON writes it (`requests["nvidia.com/gpu"]`), so
the path can be followed in the file. A check a field's type cannot make (one that needs a
sibling field, or a setting of the import) runs in a model validator and names the field it is
about with `fail_at`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from horizon_opt.errors import InputError, Loc, Problem, format_location
from horizon_opt.io import validation_located

__all__ = [
    "checked",
    "fail_at",
    "json_path",
    "payload_problems",
    "read_payload",
    "validate_at",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def json_path(loc: Sequence[int | str]) -> str:
    """('items', 2, 'requests', 'nvidia.com/gpu') -> 'items[2].requests["nvidia.com/gpu"]'."""
    return format_location(loc, quoted=True)


def payload_problems(exc: ValidationError, prefix: Loc = ()) -> list[Problem]:
    """One problem per pydantic error (as the instance file's: io.validation_located), at
    `prefix` + pydantic's location (`prefix`: where the validated value is in the payload)."""
    problems = []
    for p in validation_located(exc):
        loc = (*prefix, *p.loc)
        problems.append(Problem(json_path(loc), p.message, loc))
    return problems


def read_payload(model: type[M], payload: Any, source: str) -> M:
    """`payload` as `model`; InputError lists every problem, `<source>: <JSON path>: ...`."""
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise InputError([f"{source}: {p}" for p in payload_problems(exc)]) from None


def _details(problem: Problem, value: Any) -> InitErrorDetails:
    error = PydanticCustomError("value_error", "{message}", {"message": problem.message})
    return {"type": error, "loc": problem.loc, "input": value}


def fail_at(loc: Loc, message: str, value: Any = None) -> NoReturn:
    """Refuse the field at `loc`, from a validator of the model that holds it (the location is
    the model's own: pydantic puts the model's place in front)."""
    details = _details(Problem(json_path(loc), message, loc), value)
    raise ValidationError.from_exception_data("payload", [details])


def validate_at(loc: Loc, model: type[M], value: Any) -> M:
    """`value` as `model`, from a validator of the model that holds it at `loc`: for a part
    that is read only when another field says so."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = zip(payload_problems(exc, loc), exc.errors(), strict=True)
        details = [_details(p, err["input"]) for p, err in problems]
        raise ValidationError.from_exception_data("payload", details) from None


def checked(loc: Loc, check: Callable[[Any], T], value: Any) -> T:
    """`check(value)`; a ValueError it raises is a problem at `loc` (as in `fail_at`)."""
    try:
        return check(value)
    except ValueError as exc:
        fail_at(loc, str(exc), value)
