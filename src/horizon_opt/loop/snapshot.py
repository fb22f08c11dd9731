"""The cluster's state at `now`, built from the compiled instance instead of from its spec.

`state.with_placed` and `without_jobs` describe a state as a spec, and `compile_instance` then
validates and compiles the whole spec again. A replay that decides at every event asks for one
state per decision, and everything but the placed jobs is already compiled and checked: here the
kept jobs are renumbered, the running ones placed, and only what a placement can get wrong is
checked again, by the compiler's own checks (`PlacedCompiler` for one placed job,
`check_placed` for placed jobs together), so its messages are the compiler's. The resulting
`Instance` equals the round trip's, and its `spec` is the spec that the round trip compiles.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from horizon_opt.errors import InstanceError
from horizon_opt.model.compiler_checks import check_placed
from horizon_opt.model.compiler_placed import PlacedCompiler
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
    checks = PlacedCompiler.for_state(instance, now)
    jobs: list[Job] = []
    placed_specs: dict[int, PlacedSpec] = {}
    for new, old in enumerate(kept):
        job = instance.jobs[old]
        after = tuple(renumber[p] for p in job.after if p in renumber)
        path = f"jobs[{new}]"
        if old in running_at:
            got = _placement(checks, instance, job, running_at[old], path)
            if got is None:
                continue
            placed, placed_specs[old] = got
            jobs.append(_job(job, new, after, placed.start, placed))
        elif job.placed is not None:  # placed in the instance: it stays there
            checks.check_running(job.id, job.placed.end, f"{path}.placed")
            jobs.append(_job(job, new, after, job.release, job.placed))
        else:
            jobs.append(_job(job, new, after, first_start(job.release, now, None), None))
    if not checks.problems:  # placed jobs together, as the compiler checks them
        check_placed(
            jobs,
            instance.pools,
            instance.slots,
            now,
            instance.node_names,
            checks.node_pools,
            checks.error,
        )
    if checks.problems:
        raise InstanceError(checks.problems)
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
    checks: PlacedCompiler, instance: Instance, job: Job, run: Running | PlacedSpec, path: str
) -> tuple[Placed, PlacedSpec] | None:
    """One job's placement, checked on its own by the compiler's checks, with the spec that
    writes it; None when `checks` holds its problems. Checked as written: a state's spec is
    what the round trip compiles, and one rule reads both forms."""
    if job.placed is not None:
        checks.error(f"{path}.placed", f"job {job.id!r} is placed already in the instance")
        return None
    spec = run if isinstance(run, PlacedSpec) else _written(instance, run)
    placed = checks.placement(job, job.durations, job.gangs, spec, instance.pools, path)
    return None if placed is None else (placed, spec)


def _written(instance: Instance, run: Running) -> PlacedSpec:
    """A placement in compiled terms as a job's `placed:` (built, not validated: the checks
    read it next). Its pool and nodes must exist: indices outside the instance describe no
    state of it."""
    nodes = len(instance.node_names)
    if not 0 <= run.pool < len(instance.pools) or not all(0 <= n < nodes for n in run.gpus):
        raise ValueError(f"pool {run.pool} or a node of {sorted(run.gpus)} is not the instance's")
    pool = instance.pools[run.pool].name
    gpus = {instance.node_names[n]: [int(g) for g in idx] for n, idx in run.gpus.items()}
    start = int(run.start)
    if run.end is None:  # as the round trip writes it: end unset, the estimate
        return PlacedSpec.model_construct(pool=pool, start=start, gpus=gpus)
    return PlacedSpec.model_construct(pool=pool, start=start, end=int(run.end), gpus=gpus)


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
