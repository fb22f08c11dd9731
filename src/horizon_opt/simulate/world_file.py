"""World files: the actual world of a replay as data (`simulate --actual FILE`).

A world measured on a real cluster (or edited by hand) can be replayed instead of a drawn one,
and a drawn world written out replays exactly the same when read back: shares and demand are
written with every digit of their floats. The format is FORMAT.md's "World file (simulate
--actual)".
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from horizon_opt.errors import InputError
from horizon_opt.io import read_yaml, write_atomic
from horizon_opt.model.instance import FloatArray, Instance
from horizon_opt.model.spec import MAX_DEMAND, show
from horizon_opt.simulate.world import World

try:  # libyaml's parser when PyYAML has it, as io.read_yaml (deep nesting fails fast there)
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

WORLD_FORMAT = "horizon-opt.world/1"
OUTCOMES = ("completed", "failed", "cancelled")
MAX_PROBLEMS = 20  # a file wrong everywhere gets this many messages, not thousands
_FIELDS = ("format", "instance", "jobs", "services")
_JOB_FIELDS = ("run", "outcome")
# JSON writes `1e-05` where YAML 1.1 wants `1.0e-05`: such a string is still a number here
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


class _DuplicateKey(yaml.YAMLError):
    pass


class _UniqueKeyLoader(_BaseLoader):
    """YAML that refuses a key named twice in one mapping (plain YAML keeps the last silently,
    which would drop a job's or a service's first entry without a word)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                twice = key in seen
            except TypeError:  # an unhashable key: the base class says so
                break
            if twice:
                raise _DuplicateKey(
                    f"key {show(key)} appears twice (line {key_node.start_mark.line + 1})"
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def _number(value: Any) -> float | None:
    """A YAML number (an int, a float, or a JSON-style exponent YAML read as a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, int):  # an integer beyond float's range is out of every range here
        return float(value) if abs(value) < 2**1000 else math.copysign(math.inf, value)
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return float(value)
    return None


def _key(value: Any) -> str | None:
    """A job id or service name as written: a string, or an integer (`7:` means job "7")."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _mapping(data: Any, where: str, problems: list[str]) -> dict[Any, Any]:
    """`data` if it is a mapping; empty (`jobs:` with nothing after it) is an empty one."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(f"{where}: expected a mapping, got {type(data).__name__}")
        return {}
    return data


def _header(data: dict[Any, Any], instance: Instance, problems: list[str]) -> None:
    for key in data:
        if key not in _FIELDS:
            problems.append(f"{show(key)}: unknown field (fields: {', '.join(_FIELDS)})")
    for key in ("format", "instance"):
        if key not in data:
            problems.append(f"{key}: required field is missing")
    if "format" in data and data["format"] != WORLD_FORMAT:
        problems.append(f"format: {show(data['format'])} is not {WORLD_FORMAT!r}")
    if "instance" in data and data["instance"] != instance.name:
        problems.append(
            f"instance: the world is for instance {show(data['instance'])}, not {instance.name!r}"
        )


def _run(value: Any, where: str, problems: list[str]) -> float:
    """A job's `run`: the share of its estimate that it runs, from 0 to 1."""
    run = _number(value)
    if run is None:
        problems.append(f"{where}: not a number: {show(value)}")
    elif not math.isfinite(run):
        problems.append(f"{where}: must be a finite number from 0 to 1, got {show(value)}")
    elif run < 0:
        problems.append(f"{where}: negative run {show(value)}; run is a share of the estimate")
    elif run > 1:
        problems.append(
            f"{where}: {show(value)} is more than 1: a job never runs past its estimate"
        )
    else:
        return run
    return 1.0


def _jobs(
    data: Any, instance: Instance, problems: list[str]
) -> tuple[dict[str, float], set[str], set[str]]:
    """Run shares of every job (1 when not listed), and the failed and the cancelled ones."""
    share = {job.id: 1.0 for job in instance.jobs}
    fails: set[str] = set()
    cancels: set[str] = set()
    for raw, entry in _mapping(data, "jobs", problems).items():
        job_id = _key(raw)
        if job_id not in share:
            problems.append(f"jobs: no job {show(raw)} in instance {instance.name!r}")
            continue
        where = f"jobs.{job_id}"
        entry = _mapping(entry, where, problems)
        for key in entry:
            if key not in _JOB_FIELDS:
                problems.append(f"{where}.{key}: unknown field (fields: run, outcome)")
        if "run" in entry:
            share[job_id] = _run(entry["run"], f"{where}.run", problems)
        outcome = entry.get("outcome", "completed")
        if outcome not in OUTCOMES:
            problems.append(
                f"{where}.outcome: unknown outcome {show(outcome)}; use one of "
                f"{', '.join(OUTCOMES)}"
            )
        elif outcome != "completed":
            fails.add(job_id)
            if outcome == "cancelled":
                cancels.add(job_id)
    return share, fails, cancels


def _series(values: Any, where: str, slots: int) -> tuple[FloatArray | None, str | None]:
    """A service's actual replicas per slot, or why they are refused."""
    if not isinstance(values, list):
        return None, f"{where}: expected a list of one number per slot, got {type(values).__name__}"
    if len(values) != slots:
        return None, f"{where}: {len(values)} numbers, but the instance has {slots} slots"
    out = np.empty(slots)
    for t, value in enumerate(values):
        number = _number(value)
        if number is None:
            return None, f"{where}[{t}]: not a number: {show(value)}"
        if not math.isfinite(number) or number > MAX_DEMAND:
            return None, (
                f"{where}[{t}]: demand must be a finite number of at most {MAX_DEMAND:,.0f} "
                f"replicas, got {show(value)}"
            )
        if number < 0:
            return None, f"{where}[{t}]: negative demand {show(value)}"
        out[t] = number
    out.setflags(write=False)
    return out, None


def _services(data: Any, instance: Instance, problems: list[str]) -> tuple[FloatArray, ...]:
    """Actual demand of every service (its forecast when not listed), in instance order."""
    demand = [s.demand for s in instance.services]
    index = {s.name: s.index for s in instance.services}
    for raw, values in _mapping(data, "services", problems).items():
        name = _key(raw)
        if name not in index:
            problems.append(f"services: no service {show(raw)} in instance {instance.name!r}")
            continue
        where = f"services.{name}"
        series, why = _series(values, where, instance.slots)
        if why is not None:
            problems.append(why)
        elif series is not None:
            demand[index[name]] = series
    return tuple(demand)


def read_world(path: str | os.PathLike[str], instance: Instance) -> World:
    """The world a world file gives for `instance`; any problem raises InputError, one line per
    problem, each naming the file and the field."""
    file = Path(path)
    data = read_yaml(file, loader=_UniqueKeyLoader)
    if not isinstance(data, dict):
        raise InputError(
            [f"{file}: (top level): expected a mapping of fields, got {type(data).__name__}"]
        )
    problems: list[str] = []
    _header(data, instance, problems)
    share, fails, cancels = _jobs(data.get("jobs"), instance, problems)
    demand = _services(data.get("services"), instance, problems)
    if problems:
        more = len(problems) - MAX_PROBLEMS
        shown = [f"{file}: {p}" for p in problems[:MAX_PROBLEMS]]
        raise InputError(shown + ([f"{file}: ... and {more} more"] if more > 0 else []))
    return World(share, frozenset(fails), demand, frozenset(cancels))


def _outcome(world: World, job_id: str) -> str:
    if job_id in world.cancels:
        return "cancelled"
    return "failed" if job_id in world.fails else "completed"


def _text(instance: Instance, world: World) -> str:
    """A world file's text: every job and every service, floats in full (`repr`) precision."""
    jobs = {
        job.id: {"run": float(world.run_share[job.id]), "outcome": _outcome(world, job.id)}
        for job in instance.jobs
    }
    data = {
        "format": WORLD_FORMAT,
        "instance": instance.name,
        "jobs": jobs,
        "services": {s.name: [float(v) for v in world.demand[s.index]] for s in instance.services},
    }
    body = yaml.safe_dump(
        data, default_flow_style=None, sort_keys=False, width=100, allow_unicode=True
    )
    return '# horizon-opt world file: see FORMAT.md, "World file (simulate --actual)"\n' + body


def write_world(path: str | os.PathLike[str], instance: Instance, world: World) -> None:
    """Write `world` for `instance` atomically, so that `read_world` gives it back exactly."""
    write_atomic(path, _text(instance, world))
