"""Reading Kubernetes objects as `kubectl get -o json` writes them: typed field access whose
errors name the JSON path (`items[2].spec.podSets[0].count: expected an integer, got '3'`), so a
malformed object is refused with where, not misread."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from horizon_opt.errors import InputError, Problem
from horizon_opt.importers.source import read_json
from horizon_opt.io import read_input
from horizon_opt.model.spec import show
from horizon_opt.times import parse_time

__all__ = [
    "Bad",
    "at",
    "bool_at",
    "int_at",
    "items_of",
    "list_at",
    "object_at",
    "object_of",
    "read_objects",
    "str_at",
    "str_map_at",
    "timestamp",
    "what",
]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Bad(Exception):
    """A malformed field: its JSON path and what is wrong (`problem`, as Slurm's reader keeps
    them: importers/slurm/reader.py)."""

    def __init__(self, path: str, message: str) -> None:
        self.problem = Problem.at(path, message)
        super().__init__(str(self.problem))


def at(path: str, key: str) -> str:
    """The path of `key` in the object at `path`: `a.b`, or `a["nvidia.com/gpu"]`."""
    if _IDENT.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def what(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return show(value)


def object_of(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Bad(path, f"expected an object, got {what(value)}")
    return value


def object_at(
    obj: Mapping[str, Any], key: str, path: str, *, required: bool = False
) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        if required:
            raise Bad(at(path, key), "required field is missing")
        return {}
    return object_of(value, at(path, key))


def list_at(obj: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> list[Any]:
    value = obj.get(key)
    if value is None:
        if required:
            raise Bad(at(path, key), "required field is missing")
        return []
    if not isinstance(value, list):
        raise Bad(at(path, key), f"expected a list, got {what(value)}")
    return value


def str_at(obj: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise Bad(at(path, key), "required field is missing")
        return None
    if not isinstance(value, str):
        raise Bad(at(path, key), f"expected a string, got {what(value)}")
    if required and not value:
        raise Bad(at(path, key), "must not be empty")
    return value


def int_at(
    obj: Mapping[str, Any], key: str, path: str, *, lo: int, hi: int, required: bool = False
) -> int | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise Bad(at(path, key), "required field is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Bad(at(path, key), f"expected an integer, got {what(value)}")
    if not lo <= value <= hi:
        raise Bad(at(path, key), f"must be from {lo:,} to {hi:,}, got {show(value)}")
    return value


def bool_at(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, bool):
        raise Bad(at(path, key), f"expected true or false, got {what(value)}")
    return value


def str_map_at(obj: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    """A map of strings (annotations, flavors); null values are absent."""
    out: dict[str, str] = {}
    for k, v in object_at(obj, key, path).items():
        if v is None:
            continue
        if not isinstance(v, str):
            raise Bad(at(at(path, key), k), f"expected a string, got {what(v)}")
        out[k] = v
    return out


def timestamp(text: str, path: str) -> datetime:
    """An RFC 3339 time as Kubernetes writes it (`2026-12-01T08:15:00Z`); no offset: UTC."""
    when = parse_time(text)
    if when is None:
        raise Bad(path, f"not an ISO-8601 timestamp: {show(text)}")
    return when


def items_of(payload: Any, kind: str, command: str) -> list[tuple[str, Any]]:
    """(path, item) of the objects of `kind` in what `command` (`kubectl get ... -o json`)
    writes: a List's items, a JSON array's elements, or one object (with no `items`, of that
    kind or of no kind). Each item's own kind is checked by its reader."""
    if isinstance(payload, list):
        return [(f"[{i}]", item) for i, item in enumerate(payload)]
    if isinstance(payload, dict) and "items" in payload:
        items = payload["items"]
        if items is None:
            return []
        if not isinstance(items, list):
            raise Bad("items", f"expected a list, got {what(items)}")
        return [(f"items[{i}]", item) for i, item in enumerate(items)]
    if isinstance(payload, dict) and payload.get("kind", kind) == kind:
        return [("", payload)]
    got = (
        f"an object of kind {what(payload.get('kind'))}"
        if isinstance(payload, dict)
        else what(payload)
    )
    raise Bad(
        "(top level)",
        f"expected a {kind}, a List of {kind}s (`{command}`) or a JSON array of them, got {got}",
    )


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
