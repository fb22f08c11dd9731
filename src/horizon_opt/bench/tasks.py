"""What a suite runs: its instances, resolved and loaded once, and a task per (instance, solver),
or for a closed-loop suite per (instance, world kind, world seed)."""

from __future__ import annotations

import glob
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from horizon_opt.bench.suite import GenerateEntry, Suite, SuiteSpec, minutes
from horizon_opt.errors import InputError
from horizon_opt.generate import GeneratorError, generate_file
from horizon_opt.model.load import load_instance
from horizon_opt.simulate.policy import Policy, policy
from horizon_opt.simulate.world import Noise
from horizon_opt.solvers import SOLVERS

NAME_PATTERN = re.compile(r"^(?P<family>[a-z0-9_]+)-(?P<size>[a-z]+)-s(?P<seed>\d+)$")


@dataclass(frozen=True)
class BenchInstance:
    """An instance of the suite, with what results.csv says of it."""

    name: str
    path: Path
    family: str
    size: str
    seed: int | None
    jobs: int
    slots: int
    nodes: int
    gpus: int
    slot_minutes: int
    time_limit: float
    solvers: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """One run: everything the worker process needs (picklable)."""

    instance: str
    path: str
    solver: str
    time_limit: float
    workers: int
    seed: int
    plan_path: str
    progress_path: str | None
    memory_mib: int | None
    guard_seconds: float

    @property
    def label(self) -> str:
        return f"{self.instance} {self.solver}"

    @property
    def expected_seconds(self) -> float:
        """What the run should take, for the order runs start in."""
        return self.time_limit if SOLVERS[self.solver].anytime else 0.0

    @property
    def outputs(self) -> tuple[str, ...]:
        """The files the run writes."""
        return (self.plan_path,) + ((self.progress_path,) if self.progress_path else ())


@dataclass(frozen=True)
class LoopTask:
    """One closed-loop run: every policy replayed in one drawn world of an instance (picklable).
    `plans` counts the policies' plans by an anytime solver, each up to `time_limit`."""

    instance: str
    path: str
    world: str
    seed: int  # of the drawn world
    policies: tuple[Policy, ...]
    noise: Noise
    time_limit: float
    workers: int
    solver_seed: int
    plans: int
    memory_mib: int | None
    guard_seconds: float

    @property
    def label(self) -> str:
        return f"{self.instance} {self.world} s{self.seed}"

    @property
    def expected_seconds(self) -> float:
        return self.plans * self.time_limit

    @property
    def outputs(self) -> tuple[str, ...]:
        return ()


AnyTask = Task | LoopTask


def _wall_factor(workers: int) -> int:
    """cpsat with one worker budgets deterministic time, which may run past the wall-clock
    limit: up to three times it."""
    return 3 if workers == 1 else 1


def guard_seconds(solver: str, time_limit: float, workers: int, margin: float) -> float:
    """Wall seconds after which a run is killed: the margin, plus the time limit for an anytime
    solver (times `_wall_factor`)."""
    if not SOLVERS[solver].anytime:
        return margin
    return time_limit * _wall_factor(workers) + margin


def _time_limit(spec: SuiteSpec, size: str, override: float | None) -> float:
    if override is not None:
        return override
    return float(spec.time_limits.get(size, spec.time_limit))


def prepare(
    suite: Suite,
    out: Path,
    *,
    traces: str | os.PathLike[str] | None = None,
    only: str | None = None,
) -> list[BenchInstance]:
    """Resolve the suite's instances (globs, generated files in OUT/instances/), load each once
    to validate it and read its dimensions. Raises InputError on any problem."""
    base = suite.path.parent
    spec = suite.spec
    found: list[tuple[Path, str | None, str | None, float | None, list[str] | None]] = []
    problems: list[str] = []
    for i, entry in enumerate(suite.entries):
        if isinstance(entry, GenerateEntry):
            name = f"{entry.generate}-{entry.size}-s{entry.seed}"
            if only is not None and only not in name:
                continue
            target = out / "instances" / f"{name}.yaml"
            try:
                generate_file(entry.generate, entry.size, entry.seed, target, traces=traces)
            except GeneratorError as exc:
                problems.append(f"{suite.path}: instances[{i}]: {exc}")
                continue
            found.append((target, entry.generate, entry.size, entry.time_limit, entry.solvers))
            continue
        pattern = entry if isinstance(entry, str) else entry.file
        full = str(base / pattern)
        paths = sorted(Path(p) for p in glob.glob(full)) if glob.has_magic(full) else [Path(full)]
        if not paths:
            problems.append(f"{suite.path}: instances[{i}]: no file matches {pattern!r}")
        for p in paths:
            if isinstance(entry, str):
                found.append((p, None, None, None, None))
            else:
                found.append((p, entry.family, entry.size, entry.time_limit, entry.solvers))
    if problems:
        raise InputError(problems)
    instances: list[BenchInstance] = []
    seen: dict[str, Path] = {}
    for path, family, size, limit, solvers in found:
        try:
            inst = load_instance(path)
        except InputError as exc:
            problems += [f"{path}: {p}" for p in exc.problems]
            continue
        if only is not None and only not in inst.name:
            continue
        if inst.name in seen:
            problems.append(f"{path}: instance name {inst.name!r} also used by {seen[inst.name]}")
            continue
        seen[inst.name] = path
        match = NAME_PATTERN.match(inst.name)
        family = family or (match["family"] if match else inst.name)
        size = size or (match["size"] if match else "-")
        instances.append(
            BenchInstance(
                name=inst.name,
                path=path,
                family=family,
                size=size,
                seed=int(match["seed"]) if match else None,
                jobs=len(inst.jobs),
                slots=inst.slots,
                nodes=inst.num_nodes,
                gpus=int(inst.node_gpus.sum()),
                slot_minutes=inst.slot_minutes,
                time_limit=_time_limit(spec, size, limit),
                solvers=tuple(solvers or spec.solvers),
            )
        )
    if problems:
        raise InputError(problems)
    if not instances:
        raise InputError(
            [f"{suite.path}: no instance to run" + (f" matches {only!r}" if only else "")]
        )
    return instances


def make_tasks(suite: Suite, instances: Sequence[BenchInstance], out: Path) -> list[Task]:
    """One task per (instance, solver), in suite order; plans and progress go under `out`."""
    spec = suite.spec
    tasks: list[Task] = []
    for inst in instances:
        for solver in inst.solvers:
            tasks.append(
                Task(
                    instance=inst.name,
                    path=str(inst.path),
                    solver=solver,
                    time_limit=inst.time_limit,
                    workers=spec.cpsat.workers,
                    seed=spec.cpsat.seed,
                    plan_path=str(out / "plans" / f"{inst.name}-{solver}.json"),
                    progress_path=(
                        str(out / "progress" / f"{inst.name}-{solver}.json")
                        if SOLVERS[solver].anytime
                        else None
                    ),
                    memory_mib=spec.guard.memory_mib,
                    guard_seconds=guard_seconds(
                        solver, inst.time_limit, spec.cpsat.workers, spec.guard.margin_seconds
                    ),
                )
            )
    return tasks


def _slots(value: str | float, slot_minutes: int) -> int:
    """A validated loop duration as whole slots of the instance, rounded up."""
    amount = minutes(value)
    assert amount is not None  # load_suite checked it
    return math.ceil(amount / slot_minutes - 1e-9)


def make_loop_tasks(suite: Suite, instances: Sequence[BenchInstance]) -> list[LoopTask]:
    """One task per (instance, world kind, world seed) of a closed-loop suite, in suite order;
    its guard is the margin plus every anytime plan's time limit (times `_wall_factor`)."""
    spec, loop = suite.spec, suite.spec.loop
    assert loop is not None
    unseeded = [i.name for i in instances if i.seed is None]
    if loop.seeds == "instance" and unseeded:
        raise InputError(
            [
                f"{suite.path}: loop.seeds: instance: no seed in the name of {', '.join(unseeded)} "
                "(FAMILY-SIZE-sSEED); list the world seeds instead"
            ]
        )
    tasks: list[LoopTask] = []
    for inst in instances:
        every = max(1, _slots(loop.replan_every, inst.slot_minutes))
        freeze = _slots(loop.freeze, inst.slot_minutes)
        policies = tuple(
            policy(
                n,
                every,
                freeze,
                loop.stability,
                slot_minutes=inst.slot_minutes,
                keep_promises=loop.keep_promises,
                deadline_odds=loop.deadline_odds,
            )
            for n in loop.policies
        )
        plans = sum(
            p.due(t) for p in policies if SOLVERS[p.solver].anytime for t in range(inst.slots)
        )
        guard = plans * inst.time_limit * _wall_factor(spec.cpsat.workers)
        seeds = [inst.seed] if loop.seeds == "instance" else loop.seeds
        for world in loop.worlds:
            for seed in seeds:
                assert seed is not None
                tasks.append(
                    LoopTask(
                        instance=inst.name,
                        path=str(inst.path),
                        world=world,
                        seed=seed,
                        policies=policies,
                        noise=loop.world_noise,
                        time_limit=inst.time_limit,
                        workers=spec.cpsat.workers,
                        solver_seed=spec.cpsat.seed,
                        plans=plans,
                        memory_mib=spec.guard.memory_mib,
                        guard_seconds=guard + spec.guard.margin_seconds,
                    )
                )
    return tasks
