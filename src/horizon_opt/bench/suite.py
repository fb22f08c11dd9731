"""The suite file: which instances, solvers and time limits a benchmark runs, or, with a `loop`
section, which policies it replays in which worlds (docs/bench.md)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from horizon_opt.bench import roles
from horizon_opt.errors import InputError
from horizon_opt.generate import SIZES
from horizon_opt.io import read_yaml, validation_problems
from horizon_opt.loop.replan import MAX_STABILITY
from horizon_opt.model.instance import duration_minutes
from horizon_opt.simulate.policy import policy
from horizon_opt.simulate.world import Noise
from horizon_opt.simulate.worlds import WORLDS
from horizon_opt.solvers import SOLVERS
from horizon_opt.solvers.options import ONE_PLAN_SECONDS

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


class LoopSpec(_Model):
    """A closed-loop suite: every policy replayed in the same drawn world, per instance, world
    kind and seed. Durations are minutes, or text with a unit (90m, 2h)."""

    policies: list[str] = Field(min_length=1)  # in ladder order, the bottom rung first
    worlds: list[str] = Field(default_factory=lambda: ["cluster"], min_length=1)
    seeds: list[int] | Literal["instance"] = Field(default_factory=lambda: [0])
    replan_every: str | float = "2h"
    freeze: str | float = "2h"
    stability: float = Field(default=0.0, ge=0)
    # None: `LEARNED_KEEP_PROMISES` for -expect and -risk re-plans, none for the others
    keep_promises: float | None = Field(default=None, ge=0, le=MAX_STABILITY)
    deadline_odds: bool = True  # for -expect and -risk re-plans (`simulate.deadline_odds`)
    noise: str = str(Noise())
    top: str | None = None  # the rung the share of the top rung divides by; default the last
    base: str | None = None  # the policy `vs` compares with; default the registry's loop baseline

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        """One message for a value that is neither form (not one per form)."""
        if value != "instance" and not isinstance(value, list):
            raise ValueError(f"expected a list of world seeds or `instance`, got {value!r}")
        return value

    @property
    def top_rung(self) -> str:
        return self.top if self.top is not None else self.policies[-1]

    @property
    def reference(self) -> str:
        """The policy the `vs` column compares with."""
        return self.base if self.base is not None else roles.loop_baseline()

    @property
    def world_noise(self) -> Noise:
        return Noise.parse(self.noise)


def minutes(value: str | float) -> float | None:
    """A loop duration in minutes: a number is minutes, text needs a unit; None if neither."""
    amount = float(value) if isinstance(value, int | float) else duration_minutes(value)
    return amount if amount is not None and math.isfinite(amount) else None


class SuiteSpec(_Model):
    name: str = "suite"
    solvers: list[str] = Field(default_factory=lambda: list(DEFAULT_SOLVERS), min_length=1)
    time_limits: dict[str, float] = Field(default_factory=dict)
    time_limit: float = Field(default=ONE_PLAN_SECONDS, gt=0)
    cpsat: CpsatSpec = CpsatSpec()
    guard: GuardSpec = GuardSpec()
    anytime: list[str] = Field(default_factory=list)
    baseline: str | None = None  # the solver `vs` compares with; default the registry's baseline
    instances: list[Any] = Field(min_length=1)
    loop: LoopSpec | None = None

    @property
    def reference(self) -> str:
        """The solver the `vs` columns and the ablation's first step are."""
        return self.baseline if self.baseline is not None else roles.baseline()


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
    named: list[tuple[str, list[str] | None]] = [("solvers", spec.solvers)]
    named.append(("baseline", [spec.baseline] if spec.baseline is not None else None))
    named += [
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
    if spec.loop is not None:
        problems += _loop_problems(file, data, spec.loop, entries)
    if problems:
        raise InputError(problems)
    return Suite(spec, file, tuple(entries))


def _loop_problems(
    file: Path,
    data: dict[str, Any],
    loop: LoopSpec,
    entries: list[str | FileEntry | GenerateEntry],
) -> list[str]:
    """What is wrong with a suite's `loop` section, each problem naming its field."""
    where = f"{file}: loop"
    problems = [
        f"{file}: {name}: a suite with `loop` replays loop.policies; leave {name} out"
        for name in ("solvers", "anytime", "baseline")
        if name in data
    ]
    problems += [
        f"{file}: instances[{i}].solvers: a suite with `loop` replays loop.policies"
        for i, e in enumerate(entries)
        if not isinstance(e, str) and e.solvers is not None
    ]
    for name in loop.policies:
        try:
            policy(name, 1, 0)
        except InputError as exc:
            problems += [f"{where}.policies: {p.removeprefix('--policy: ')}" for p in exc.problems]
    twice = sorted({p for p in loop.policies if loop.policies.count(p) > 1})
    if twice:
        problems.append(f"{where}.policies: named more than once: {twice}")
    unknown = [w for w in loop.worlds if w not in WORLDS]
    if unknown:
        problems.append(
            f"{where}.worlds: unknown world(s) {unknown}; choose from {', '.join(WORLDS)}"
        )
    for name, value in (("replan_every", loop.replan_every), ("freeze", loop.freeze)):
        amount = minutes(value)
        if amount is None or amount < 0 or (name == "replan_every" and amount == 0):
            least = "more than 0" if name == "replan_every" else "0 or more"
            problems.append(
                f"{where}.{name}: expected minutes ({least}) or a duration such as 90m or 2h, "
                f"got {value!r}"
            )
    try:
        Noise.parse(loop.noise)
    except InputError as exc:
        problems += [f"{where}.noise: {p.removeprefix('--noise: ')}" for p in exc.problems]
    for name, rung in (("top", loop.top), ("base", loop.base)):
        if rung is not None and rung not in loop.policies:
            problems.append(f"{where}.{name}: {rung!r} is not one of loop.policies")
    return problems
