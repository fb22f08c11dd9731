"""Kubernetes objects as `kubectl get -o json` (or `-o yaml`) writes them, read as pydantic
models: the field types and the base model the Kueue readers share (Workloads: workload.py;
LocalQueues, ClusterQueues: queues.py), whose problems are named by JSON path
(`items[2].spec.podSets[0].count: expected an integer, got '3'`), so a malformed object is
refused with where, not misread (importers/payload_model.py).

Kubernetes writes `null` for an unset field as often as it leaves it out: both read as unset,
and as missing for a required field. Every model ignores fields it does not know (each API
version adds some) and is frozen: it is the payload as read. `read_objects` reads a file (JSON
or YAML), `items_of` finds its objects (a List, an array, one object), `parse_items` validates
each, every malformed field of each a problem line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from horizon_opt.errors import InputError, Loc, Problem
from horizon_opt.importers.payload_model import json_path, payload_problems
from horizon_opt.importers.source import read_json
from horizon_opt.io import read_input
from horizon_opt.model.spec import show
from horizon_opt.times import parse_time

__all__ = [
    "INT32",
    "Flag",
    "KubeModel",
    "KubeObject",
    "Name",
    "ObjectMeta",
    "Str",
    "StrMap",
    "Text",
    "Timestamp",
    "ValueMap",
    "int_in",
    "items_of",
    "listed",
    "located",
    "needed_list",
    "optional",
    "parse_items",
    "read_objects",
    "required",
    "timestamp",
    "what",
]

INT32 = 2**31 - 1


def what(value: Any) -> str:
    """A value as a message names it: `null`, `true`, `an object`, `a list`, `'3'`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return show(value)


def located(loc: Loc, message: str) -> Problem:
    """A problem at `loc`, found after parsing (a check that needs the cluster file, or a field
    only one kind of workload uses)."""
    return Problem(json_path(loc), message, loc)


def _parse_time(text: str) -> datetime:
    when = parse_time(text)
    if when is None:
        raise ValueError(f"not an ISO-8601 timestamp: {show(text)}")
    return when


def timestamp(text: str, loc: Loc) -> datetime:
    """An RFC 3339 time as Kubernetes writes it (`2026-12-01T08:15:00Z`); no offset: UTC.
    InputError names `loc` when it is not one."""
    try:
        return _parse_time(text)
    except ValueError as exc:
        raise InputError([located(loc, str(exc))]) from None


def _text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"expected a string, got {what(value)}")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {what(value)}")
    return value


def _text_or_empty(value: Any) -> str:
    return _text(value) or ""


def _name(value: Any) -> str:
    if value is None:
        raise ValueError("required field is missing")
    text = _string(value)
    if not text:
        raise ValueError("must not be empty")
    return text


def _flag(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {what(value)}")
    return value


def _timestamp(value: Any) -> datetime | None:
    text = _text(value)
    return None if text is None else _parse_time(text)


def int_in(lo: int, hi: int, *, needed: bool = False) -> PlainValidator:
    """An integer from `lo` to `hi` (null: unset, or missing when `needed`)."""

    def check(value: Any) -> int | None:
        if value is None:
            if needed:
                raise ValueError("required field is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {what(value)}")
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo:,} to {hi:,}, got {show(value)}")
        return value

    return PlainValidator(check)


def _object_or_empty(value: Any) -> Any:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {what(value)}")
    return value


def _present(value: Any) -> Any:
    if value is None:
        raise ValueError("required field is missing")
    return value


def _list_or_empty(value: Any) -> Any:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {what(value)}")
    return value


def _needed_list(value: Any) -> Any:
    return _list_or_empty(_present(value))


def _strings(value: Any) -> Any:
    """A map of strings: null values are absent."""
    return {k: v for k, v in _object_or_empty(value).items() if v is not None}


optional = BeforeValidator(_object_or_empty)  # an object field: null or absent reads as {}
required = BeforeValidator(_present)  # a required field: null is missing
listed = BeforeValidator(_list_or_empty)  # a list field: null or absent reads as []
needed_list = BeforeValidator(_needed_list)  # a required list field

Text = Annotated[str | None, PlainValidator(_text)]
Str = Annotated[str, PlainValidator(_text_or_empty)]  # a string; null or absent: ""
Name = Annotated[str, PlainValidator(_name)]  # a required, non-empty string
Flag = Annotated[bool | None, PlainValidator(_flag)]
Timestamp = Annotated[datetime | None, PlainValidator(_timestamp)]
StrMap = Annotated[dict[str, Annotated[str, PlainValidator(_string)]], BeforeValidator(_strings)]
ValueMap = Annotated[dict[str, Any], optional]  # values read by the model that holds it


class KubeModel(BaseModel):
    """A part of a Kubernetes object: camelCase fields, unknown ones ignored, frozen."""

    model_config = ConfigDict(
        frozen=True, extra="ignore", alias_generator=to_camel, populate_by_name=True
    )

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object, got {what(data)}")
        return data


class ObjectMeta(KubeModel):
    name: Name
    namespace: Text = None


class KubeObject(KubeModel):
    """A top-level object of `kind` (none: taken to be one), with its place in the payload."""

    kind_name: ClassVar[str]
    kind: Any = None
    _loc: Loc = PrivateAttr(())
    _index: int = PrivateAttr(0)

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        if value is not None and value != cls.kind_name:
            raise ValueError(f"expected a {cls.kind_name}, got {what(value)}")
        return value

    @property
    def loc(self) -> Loc:
        """Where it is in the payload: `("items", 2)`, `(2,)`, or `()` for the whole."""
        return self._loc

    @property
    def index(self) -> int:
        """Its place among the payload's objects."""
        return self._index

    @property
    def path(self) -> str:
        return json_path(self._loc)


K = TypeVar("K", bound=KubeObject)


def items_of(payload: Any, kind: str, command: str) -> list[tuple[Loc, Any]]:
    """(location, item) of the objects of `kind` in what `command` (`kubectl get ... -o json`)
    writes: a List's items, a JSON array's elements, or one object (with no `items`, of that
    kind or of no kind). Each item's own kind is checked by its model; InputError when the
    payload is none of these."""
    if isinstance(payload, list):
        return [((i,), item) for i, item in enumerate(payload)]
    if isinstance(payload, dict) and "items" in payload:
        items = payload["items"]
        if items is None:
            return []
        if not isinstance(items, list):
            raise InputError([located(("items",), f"expected a list, got {what(items)}")])
        return [(("items", i), item) for i, item in enumerate(items)]
    if isinstance(payload, dict) and payload.get("kind", kind) == kind:
        return [((), payload)]
    got = (
        f"an object of kind {what(payload.get('kind'))}"
        if isinstance(payload, dict)
        else what(payload)
    )
    raise InputError(
        [
            located(
                (),
                f"expected a {kind}, a List of {kind}s (`{command}`) or a JSON array of them, "
                f"got {got}",
            )
        ]
    )


def parse_items(
    model: type[K], items: Sequence[tuple[Loc, Any]], source: str, context: dict[str, Any]
) -> tuple[list[K], list[str]]:
    """Each item as `model` (validated with `context`), and a problem line per malformed field
    of each, `<source>: <JSON path>: ...`."""
    parsed: list[K] = []
    problems: list[str] = []
    for index, (loc, item) in enumerate(items):
        try:
            obj = model.model_validate(item, context=context)
        except ValidationError as exc:
            problems += [f"{source}: {p}" for p in payload_problems(exc, loc)]
            continue
        obj._loc, obj._index = loc, index
        parsed.append(obj)
    return parsed, problems


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML as kubectl writes it, with an unquoted timestamp kept as the text it is (the
    fields that hold times are strings in the API; a hand-edited file may leave off quotes)."""


_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node)
)


def read_objects(path: str | os.PathLike[str], what: str) -> Any:
    """The parsed content of a `kubectl get ... -o json` or `-o yaml` file: JSON when the text
    starts with `{` or `[`, else YAML; several YAML documents (`---`) read as a list of them.
    InputError names the file, and `what` it should hold, when it is neither."""
    file = Path(path)
    text = read_input(file)
    if text.lstrip()[:1] in ("{", "["):
        return read_json(file, what)
    try:
        documents = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except RecursionError:
        raise InputError([f"{file}: not valid YAML ({what}): nested too deeply"]) from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:
        raise InputError(
            [f"{file}: neither JSON nor valid YAML ({what}): {' '.join(str(exc).split())}"]
        ) from None
    if not documents:
        raise InputError([f"{file}: empty: expected {what}"])
    return documents[0] if len(documents) == 1 else documents
