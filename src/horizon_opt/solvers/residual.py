"""Placed jobs are not a solver's business: solvers plan the residual instance, and the placed
jobs are put back into the plan afterwards.

The residual instance leaves the placed jobs (running, or holding a promised start) out, takes
their GPUs off the capacity (`Instance.held`), and turns each dependency on a placed job into a
release at its end. Every solver, present and future, thereby honours placed jobs the same way,
without a code path of its own for them; the checker verifies the merged plan on the full
instance.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.assemble import Placement, assignments_of, plan_placements, stamp
from horizon_opt.solvers.options import SolveOptions
from horizon_opt.solvers.progress import Progress
from horizon_opt.solvers.stop import StopCriterion


def residual_instance(instance: Instance) -> Instance:
    """The instance without its placed jobs, whose GPUs are taken (jobs are renumbered)."""
    kept = [j for j in instance.jobs if j.placed is None]
    renumber = {j.index: k for k, j in enumerate(kept)}
    jobs = []
    for k, job in enumerate(kept):
        ends = [p.end for q in job.after if (p := instance.jobs[q].placed) is not None]
        jobs.append(
            replace(
                job,
                index=k,
                release=instance.windows[job.index].after(ends),
                after=tuple(renumber[q] for q in job.after if q in renumber),
            )
        )
    return replace(
        instance,
        jobs=tuple(jobs),
        held=instance.placed_gpus,
        team_held=instance.placed_team_gpus,
    )


def placed_value(instance: Instance) -> float:
    """What the placed jobs add to pwo: the value of those that end on time."""
    return sum(
        j.value
        for j in instance.jobs
        if j.placed is not None and instance.windows[j.index].on_time(j.placed.end)
    )


def started_gpus(instance: Instance) -> dict[int, Mapping[int, tuple[int, ...]]]:
    """The GPU indices that placed jobs which have started hold (a plan keeps them)."""
    return {
        j.index: j.placed.gpus
        for j in instance.jobs
        if j.placed is not None and j.placed.start < instance.now
    }


def put_back_placed(instance: Instance, plan: Plan, started: float) -> Plan:
    """The residual instance's plan with the placed jobs put back: they keep pool, start and
    nodes, and the GPU indices of those that have started; the others' indices are handed out
    again around them."""
    placements = [
        Placement(j.index, j.placed.pool, j.placed.start, j.placed.nodes)
        for j in instance.jobs
        if j.placed is not None
    ]
    placements += plan_placements(instance, plan)
    draft = plan.model_copy(
        update={
            "instance": instance.name,
            "assignments": assignments_of(instance, placements, started_gpus(instance)),
        }
    )
    bound = None if plan.bound is None else plan.bound + placed_value(instance)
    return stamp(instance, draft, started=started, bound=bound, build_seconds=plan.build_seconds)


@dataclass(frozen=True)
class _WithPlaced:
    """A stop criterion judging the residual search's progress with the placed jobs' value
    added, as the plan's gap will be (the residual plan's alone is larger: `GapBelow` would
    stop later than asked)."""

    criterion: StopCriterion
    offset: float  # the placed jobs' value

    def __call__(self, progress: Progress) -> StopCriterion | None:
        return self.criterion(progress.shifted(self.offset))


def solve_around_placed(
    run: Callable[[Instance, SolveOptions], Plan], instance: Instance, options: SolveOptions
) -> Plan:
    """Run a solver on the residual instance and put the placed jobs back."""
    if not any(j.placed is not None for j in instance.jobs):
        return run(instance, options)
    started = time.perf_counter()
    offset = placed_value(instance)
    report, stop = options.on_progress, options.stop
    if report is not None:
        options = replace(options, on_progress=lambda p: report(p.shifted(offset)))
    if stop is not None:
        options = replace(options, stop=_WithPlaced(stop, offset))
    plan = run(residual_instance(instance), options)
    return put_back_placed(instance, plan, started)
