"""The suite file: which instances, solvers and time limits a benchmark runs (docs/bench.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from horizon_opt.errors import InputError
from horizon_opt.generate import SIZES
from horizon_opt.io import read_yaml, validation_problems
from horizon_opt.solvers import SOLVERS

DEFAULT_SOLVERS = tuple(SOLVERS)  # what a suite without `solvers` runs: every solver


class _Model(BaseModel):
    """Unknown fields are errors: a typo in a suite file must not pass silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class FileEntry(_Model):
    file: str
    family: str | None = None
    size: str | None = None
    time_limit: float | None = Field(default=None, gt=0)
    solvers: list[str] | None = None


class GenerateEntry(_Model):
    generate: str
    size: str
    seed: int = 0
    time_limit: float | None = Field(default=None, gt=0)
    solvers: list[str] | None = None


class CpsatSpec(_Model):
    workers: int = Field(default=1, ge=1)
    seed: int = 0


class GuardSpec(_Model):
    memory_mib: int | None = Field(default=6144, ge=256)
    margin_seconds: float = Field(default=120.0, gt=0)


class SuiteSpec(_Model):
    name: str = "suite"
    solvers: list[str] = Field(default_factory=lambda: list(DEFAULT_SOLVERS), min_length=1)
    time_limits: dict[str, float] = Field(default_factory=dict)
    time_limit: float = Field(default=60.0, gt=0)
    cpsat: CpsatSpec = CpsatSpec()
    guard: GuardSpec = GuardSpec()
    anytime: list[str] = Field(default_factory=list)
    instances: list[Any] = Field(min_length=1)


@dataclass(frozen=True)
class Suite:
    spec: SuiteSpec
    path: Path
    entries: tuple[str | FileEntry | GenerateEntry, ...]


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Read and validate a suite file; raises InputError with one line per problem."""
    file = Path(path)
    data = read_yaml(file)
    if not isinstance(data, dict):
        raise InputError([f"{file}: expected a mapping of fields"])
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError([f"{file}: {p}" for p in validation_problems(exc)]) from None
    problems: list[str] = []
    entries: list[str | FileEntry | GenerateEntry] = []
    for i, raw in enumerate(spec.instances):
        where = f"{file}: instances[{i}]"
        try:
            if isinstance(raw, str):
                entries.append(raw)
            elif isinstance(raw, dict) and "generate" in raw:
                entries.append(GenerateEntry.model_validate(raw))
            elif isinstance(raw, dict) and "file" in raw:
                entries.append(FileEntry.model_validate(raw))
            else:
                problems.append(
                    f"{where}: expected a file path, {{file: PATH}} or "
                    f"{{generate: FAMILY, size: SIZE, seed: N}}, got {raw!r}"
                )
        except ValidationError as exc:
            problems += [f"{where}.{p}" for p in validation_problems(exc)]
    named = [("solvers", spec.solvers)] + [
        (f"instances[{i}].solvers", e.solvers)
        for i, e in enumerate(entries)
        if not isinstance(e, str) and e.solvers is not None
    ]
    for where, solvers in named:
        unknown = [s for s in solvers or [] if s not in SOLVERS]
        if unknown:
            problems.append(
                f"{file}: {where}: unknown solver(s) {unknown}; choose from {', '.join(SOLVERS)}"
            )
    for i, e in enumerate(entries):
        if isinstance(e, GenerateEntry) and e.size not in SIZES:
            problems.append(
                f"{file}: instances[{i}].size: unknown size {e.size!r}; "
                f"choose one of {', '.join(SIZES)}"
            )
    if problems:
        raise InputError(problems)
    return Suite(spec, file, tuple(entries))
