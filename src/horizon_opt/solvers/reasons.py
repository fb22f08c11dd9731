"""Why a job is not in a plan: one sentence per cause, the same for every solver.

The reason is read off the plan's final placements, not off the moment a list scheduling gave
up on the job: a predecessor may have been dropped later, and a solver that never "tries" jobs
one by one (cpsat) needs the same answer. Causes, in the order they bind:

- a predecessor is not scheduled (named);
- even on an empty cluster the job cannot end in time (its earliest start is given);
- a scheduled predecessor ends too late for it (named, with its end);
- no room between its earliest start and its latest end, next to inference and the plan's jobs.
"""

from __future__ import annotations

from collections.abc import Mapping

from horizon_opt.instance import Instance
from horizon_opt.solvers.assemble import Placement


def why_not_planned(
    instance: Instance,
    j: int,
    placed: Mapping[int, Placement],
    earliest: int,
    *,
    not_before: int | None = None,
    latest: int | None = None,
) -> str:
    """The reason job j is not in the plan `placed`.

    `earliest`: its earliest start on an empty cluster (release and predecessors' shortest
    runs). `not_before`: a later start the solver's own rule imposes (fifo: no job before the one
    taken before it). `latest`: the last end the solver aims for (default: the job's deadline,
    or the horizon's end).
    """
    job = instance.jobs[j]
    S = instance.slots
    missing = [q for q in job.after if q not in placed]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        return f"runs after {', '.join(instance.jobs[q].id for q in missing)}, which {verb} not scheduled"
    latest = job.latest_end(S) if latest is None else latest
    if job.deadline is not None and latest < S:
        end_in_time, until = f"end by its deadline (slot {latest})", f"its deadline (slot {latest})"
    else:
        end_in_time, until = (
            f"end within the horizon ({S} slots)",
            f"the end of the horizon (slot {S})",
        )
    shortest = min(job.durations.values())
    if latest - earliest < shortest:
        return f"cannot {end_in_time} even on an empty cluster: earliest start is slot {earliest}"
    ready = max([job.release, *(placed[q].end(instance) for q in job.after)])
    if latest - ready < shortest:
        last = max(job.after, key=lambda q: placed[q].end(instance))
        return (
            f"runs after {instance.jobs[last].id}, which ends at slot {ready}: too late to "
            f"{end_in_time}"
        )
    start = ready if not_before is None else max(ready, not_before)
    return f"no room from slot {start} to {until} next to inference and the jobs this plan runs"
