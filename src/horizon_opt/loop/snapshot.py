"""The cluster's state at `now`, built from the compiled instance instead of from its spec.

`state.with_placed` and `without_jobs` describe a state as a spec, and `compile_instance` then
validates and compiles the whole spec again. A replay that decides at every event asks for one
state per decision, and everything but the placed jobs is already compiled and checked: here the
kept jobs are renumbered, the running ones placed, and only what a placement can get wrong is
checked again (the same rules as the compiler, with its messages' field paths). The resulting
`Instance` equals the round trip's, and its `spec` is the spec that the round trip compiles.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from horizon_opt.errors import InstanceError
from horizon_opt.model.compiler import _Compiler
from horizon_opt.model.compiler_checks import check_placed
from horizon_opt.model.instance import Instance, Job, Placed
from horizon_opt.model.open_end import extend
from horizon_opt.model.spec import InstanceSpec, PlacedSpec
from horizon_opt.model.windows import first_start


@dataclass(frozen=True)
class Running:
    """A placement in compiled terms (pool index, global node index -> GPU indices), as a
    replay holds it: no names to resolve. `end` None means the estimate, start + the job's
    duration on `pool`; a replay passes None so that the planner never sees a real end."""

    pool: int
    start: int
    gpus: Mapping[int, Sequence[int]]
    end: int | None = None


def instance_at(
    instance: Instance,
    now: int,
    keep: Collection[str] | Collection[int],
    running: Mapping[str, Running | PlacedSpec] | Mapping[int, Running | PlacedSpec],
    at_least: int = 0,
) -> Instance:
    """The state at `now`: the `keep` jobs (ids or indices of `instance`) and the `running` ones,
    renumbered in file order; the other jobs have ended and leave every `after` list.

    `running` jobs are placed as given (running, or holding a start at or after `now`); they
    must be free in `instance`, whose own placed jobs stay as they are. This is
    `compile_instance(with_placed(without_jobs(spec, left out), running, now))` without the
    validation that the compiled instance already passed: the one rule not checked again is
    that the services' required replicas still fit beside the placed jobs, which every state
    built from checked plans satisfies. Raises InstanceError for a placement the compiler
    would refuse, ValueError when the arguments cannot describe a state of `instance`.
    With an open end, the state's horizon is extended as its spec's would be, but to at least
    `at_least` slots (`open_end.extend`).
    """
    _check_source(instance, now)
    running_at = {_index(instance, k): run for k, run in running.items()}
    kept = sorted({_index(instance, k) for k in keep} | set(running_at))
    renumber = {old: new for new, old in enumerate(kept)}
    problems: list[str] = []
    jobs: list[Job] = []
    placed_specs: dict[int, PlacedSpec] = {}
    for new, old in enumerate(kept):
        job = instance.jobs[old]
        after = tuple(renumber[p] for p in job.after if p in renumber)
        path = f"jobs[{new}].placed"
        if old in running_at:
            got = _placement(instance, job, running_at[old], now, path)
            if isinstance(got, list):
                problems += got
                continue
            placed, placed_specs[old] = got
            jobs.append(_job(job, new, after, placed.start, placed))
        elif job.placed is not None:  # placed in the instance: it stays there
            if job.placed.end <= now:
                problems.append(
                    f"{path}.start: job {job.id!r} ended at slot {job.placed.end}, at or before "
                    f"now ({now}): leave finished jobs out of the instance"
                )
            jobs.append(_job(job, new, after, job.release, job.placed))
        else:
            jobs.append(_job(job, new, after, first_start(job.release, now, None), None))
    if not problems:  # placed jobs together, as the compiler checks them
        check_placed(
            jobs,
            instance.pools,
            instance.slots,
            now,
            instance.node_names,
            instance.node_pool.tolist(),
            lambda path, message: problems.append(f"{path}: {message}"),
        )
    if problems:
        raise InstanceError(problems)
    state = Instance(
        name=instance.name,
        slots=instance.slots,
        slot_minutes=instance.slot_minutes,
        start=instance.start,
        pools=instance.pools,
        node_names=instance.node_names,
        node_pool=instance.node_pool,
        up=instance.up,
        services=instance.services,
        jobs=tuple(jobs),
        spec=_spec_at(instance.spec, kept, placed_specs, now),
        warnings=instance.warnings,  # the compiler warns only about outages, which are the same
        now=now,
        teams=instance.teams,
        written_slots=instance.written_slots,
    )
    return extend(state, at_least=at_least) if instance.spec.horizon.open_end else state


def _job(job: Job, index: int, after: tuple[int, ...], release: int, placed: Placed | None) -> Job:
    """The job as the compiler makes it: a placed job runs only on its pool, for its run (its
    value still counts its fastest pool); a re-plan's promise is not part of a state."""
    durations, gangs = job.durations, job.gangs
    if placed is not None and job.placed is None:
        durations = {placed.pool: placed.end - placed.start}
        gangs = {placed.pool: job.gangs[placed.pool]}
    return replace(
        job,
        index=index,
        durations=durations,
        gangs=gangs,
        release=release,
        after=after,
        placed=placed,
        promise=None,
    )


def _check_source(instance: Instance, now: int) -> None:
    """The instance must be compiled from its own spec, and time may only move forward."""
    if instance.held is not None:
        raise ValueError("a residual instance (with `held` GPUs) has no spec of its own")
    if not instance.now <= now < instance.slots:
        raise ValueError(
            f"now {now} is not in [{instance.now}, {instance.slots}): a state is at or after "
            "its instance's now, within the horizon"
        )
    spec_jobs = instance.spec.jobs
    if len(spec_jobs) != len(instance.jobs) or any(
        j.index != i or spec_jobs[i].id != j.id for i, j in enumerate(instance.jobs)
    ):
        raise ValueError("instance.spec does not describe the instance's jobs in file order")


def _index(instance: Instance, key: int | str) -> int:
    index = instance.job_index.get(key) if isinstance(key, str) else key
    if index is None or not 0 <= index < len(instance.jobs):
        raise ValueError(f"unknown job {key!r}")
    return index


def _placement(
    instance: Instance, job: Job, run: Running | PlacedSpec, now: int, path: str
) -> tuple[Placed, PlacedSpec] | list[str]:
    """One job's placement, checked on its own as the compiler does, with the spec that writes
    it; or the problems."""
    if job.placed is not None:
        return [f"{path}: job {job.id!r} is placed already in the instance"]
    spec = run if isinstance(run, PlacedSpec) else None
    if isinstance(run, PlacedSpec):
        got = _resolved(instance, run, path)
        if isinstance(got, list):
            return got
        run = got
    if run.pool not in job.durations:
        return [f"{path}.pool: job {job.id!r} may not run on pool {run.pool}"]
    start, S = run.start, instance.slots
    end = run.end if run.end is not None else start + job.durations[run.pool]
    problems = []
    if not 0 <= start < S:
        problems.append(f"{path}.start: slot {start} is outside the horizon [0, {S})")
    elif start < job.release:
        problems.append(f"{path}.start: slot {start} is before its release (slot {job.release})")
    if end <= start:
        problems.append(f"{path}.end: slot {end} is not after start {start}")
    elif end > S and not instance.spec.horizon.open_end:
        problems.append(f"{path}.start: job {job.id!r} runs until slot {end}, past the horizon")
    elif end <= now:
        problems.append(f"{path}.start: job {job.id!r} ended at slot {end}, at or before now")
    gpus = {int(n): tuple(sorted(int(g) for g in idx)) for n, idx in run.gpus.items()}
    problems += _gang_problems(instance, job, run.pool, gpus, path)
    if problems:
        return problems
    for n in gpus:
        if instance.up[n, start:end].all():
            continue
        down = np.flatnonzero(~instance.up[n, start:end])
        problems.append(
            f"{path}.gpus: job {job.id!r} runs on {instance.node_names[n]} while that node "
            f"is down (slot {int(down[0]) + start})"
        )
    if problems:
        return problems
    return Placed(run.pool, start, end, gpus), spec or _written(instance, run)


def _written(instance: Instance, run: Running) -> PlacedSpec:
    """A checked placement as a job's `placed:` (built, not validated again)."""
    pool = instance.pools[run.pool].name
    gpus = {instance.node_names[n]: [int(g) for g in idx] for n, idx in run.gpus.items()}
    if run.end is None:  # as the round trip writes it: end unset, the estimate
        return PlacedSpec.model_construct(pool=pool, start=run.start, gpus=gpus)
    return PlacedSpec.model_construct(pool=pool, start=run.start, end=run.end, gpus=gpus)


def _resolved(instance: Instance, spec: PlacedSpec, path: str) -> Running | list[str]:
    """A `placed:` as written (names, slots or timestamps) in compiled terms."""
    pool = instance.pool_index.get(spec.pool)
    if pool is None:
        return [f"{path}.pool: unknown pool {spec.pool!r}"]
    times = _Compiler(instance.spec, {})  # its time units, nothing else
    start = times.time(spec.start, f"{path}.start", round_up=False)
    end = None if spec.end is None else times.time(spec.end, f"{path}.end", round_up=True)
    gpus = {}
    for name, idx in spec.gpus.items():
        n = instance.node_index.get(name)
        if n is None or instance.node_pool[n] != pool:
            times.error(f"{path}.gpus", f"{name!r} is not a node of pool {spec.pool!r}")
        else:
            gpus[n] = idx
    if times.problems or start is None:
        return [str(p) for p in times.problems]
    return Running(pool, start, gpus, end)


def _gang_problems(
    instance: Instance, job: Job, pool: int, gpus: Mapping[int, tuple[int, ...]], path: str
) -> list[str]:
    """The nodes are the pool's, the GPU indices distinct and on the node, and the shape is the
    job's gang on that pool."""
    p = instance.pools[pool]
    problems = []
    for n, idx in gpus.items():
        if n not in p.node_range:
            problems.append(f"{path}.gpus: node {n} is not a node of pool {p.name!r}")
        elif len(set(idx)) != len(idx) or not all(0 <= g < p.gpus_per_node for g in idx):
            problems.append(
                f"{path}.gpus.{instance.node_names[n]}: GPU indices {list(idx)} are not "
                f"distinct indices in 0..{p.gpus_per_node - 1}"
            )
    gang = job.gangs[pool]
    if not problems and (
        len(gpus) != gang.nodes or {len(v) for v in gpus.values()} != {gang.gpus_per_node}
    ):
        problems.append(
            f"{path}.gpus: a gang of {job.gpus} GPUs on pool {p.name} holds "
            f"{gang.gpus_per_node} GPUs on each of {gang.nodes} node(s)"
        )
    return problems


def _spec_at(
    spec: InstanceSpec, kept: list[int], placed: Mapping[int, PlacedSpec], now: int
) -> InstanceSpec:
    """The spec that the round trip compiles: the kept jobs in file order, `after` lists without
    the others, the new placements, `now`. Copies, no validation (every part was valid)."""
    ids = {spec.jobs[i].id for i in kept}
    jobs = []
    for i in kept:
        job = spec.jobs[i]
        update: dict[str, object] = {}
        if not ids.issuperset(job.after):
            update["after"] = [a for a in job.after if a in ids]
        if i in placed:
            update["placed"] = placed[i]
        jobs.append(job.model_copy(update=update) if update else job)
    return spec.model_copy(update={"jobs": jobs, "now": now})
