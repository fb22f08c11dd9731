"""Errors that reach users: each carries one line per problem, starting with its field path.

A problem found in a field is kept as data too (`Problem`: the path as parts and the message),
so a caller that wrote the input can say it against its own input (an importer names the job
and field of the queue a compile problem comes from) without reading the message's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

Loc = tuple[str | int, ...]  # a field path as parts: ("jobs", 3, "placed", "gpus")

_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_location(loc: Sequence[int | str], *, quoted: bool = False) -> str:
    """('jobs', 3, 'duration', 'h100') -> 'jobs[3].duration.h100'.

    Union tags (spec.py writes them `<...>`) name a form of a field, not a field: left out.
    `quoted`: a key that is not an identifier is written as JSON writes it, so that the path
    can be followed in a JSON file (`requests["nvidia.com/gpu"]`).
    """
    out = ""
    for part in loc:
        if isinstance(part, str) and part.startswith("<") and part.endswith(">"):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif quoted and not _IDENT.match(part):
            out += f"[{json.dumps(part)}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def parse_location(path: str) -> Loc:
    """'jobs[3].duration.h100' -> ('jobs', 3, 'duration', 'h100'): `format_location` undone."""
    if path == "(top level)":
        return ()
    return tuple(int(index) if index else name for index, name in _PART.findall(path))


@dataclass(frozen=True)
class Problem:
    """One problem in a field: its path as written and as parts, and what is wrong."""

    path: str  # FORMAT.md's notation, as the line shows it
    message: str
    loc: Loc = ()

    @classmethod
    def at(cls, path: str, message: str) -> Problem:
        return cls(path, message, parse_location(path))

    @classmethod
    def of(cls, loc: Sequence[int | str], message: str) -> Problem:
        return cls(format_location(loc), message, tuple(loc))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def in_item(problem: str | Problem, name: str) -> tuple[int, str, str] | None:
    """(k, the path inside the item, the message) of a problem located in item k of list
    `name` (`jobs[3].placed.gpus: ...` -> (3, 'placed.gpus', ...)); None for any other."""
    if not isinstance(problem, Problem):
        return None
    loc = problem.loc
    if len(loc) < 2 or loc[0] != name or not isinstance(loc[1], int):
        return None
    inside = problem.path.removeprefix(f"{name}[{loc[1]}]").lstrip(".")
    return loc[1], inside, problem.message


class InputError(ValueError):
    """Bad input file. The CLI prints `problems` one per line and exits with code 2."""

    def __init__(self, problems: Sequence[str | Problem]) -> None:
        self.details: tuple[str | Problem, ...] = tuple(problems)  # as given: data where located
        self.problems = [str(p) for p in problems]
        super().__init__("\n".join(self.problems))


class InstanceError(InputError):
    """The instance file is invalid."""


class PlanError(InputError):
    """The plan file cannot be read (an invalid but well-formed plan is the checker's business)."""


class BoundWarning(UserWarning):
    """A bound failed the check against the plan it bounds (it is below the plan's pwo), so it
    was dropped: the plan stands, with no bound. The CLI prints it as `warning: ...`."""
