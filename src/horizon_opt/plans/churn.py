"""Churn of a re-plan: what changed for the jobs that the previous plan had promised a start.

A re-plan from `now` may move, delay or drop jobs whose owners were told when they would run.
Every re-plan reports these changes against the plan it replaces, so nobody learns of a broken
promise by noticing it. Only promises still in the future count: a job whose previous start is
before `now` is running or done, and a previous job that the instance no longer holds is
finished. Pure functions of the instance and the two plans; both plans are assumed to list each
job at most once (the checker rejects a plan that does not).
"""

from __future__ import annotations

from dataclasses import dataclass

from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Assignment, Churn, Plan


@dataclass(frozen=True)
class Move:
    """One compared job whose promise changed: another start or pool, or dropped (`new_*` None)."""

    job: str
    old_pool: str
    old_start: int
    old_end: int
    new_pool: str | None
    new_start: int | None
    new_end: int | None

    @property
    def dropped(self) -> bool:
        return self.new_start is None

    @property
    def shift(self) -> int | None:
        """Slots the start moved by (positive: later), or None when dropped."""
        return None if self.new_start is None else self.new_start - self.old_start


def _compared(
    instance: Instance, previous: Plan, new: Plan
) -> list[tuple[Assignment, Assignment | None]]:
    """(previous, new) assignment of each compared job, in the order of the previous plan."""
    now_assigned = {a.job: a for a in new.assignments}
    return [
        (old, now_assigned.get(old.job))
        for old in previous.assignments
        if old.job in instance.job_index and old.start >= instance.now
    ]


def job_move(old: Assignment, new: Assignment | None) -> Move | None:
    """The Move of a job from `old` to `new` (None: not assigned), or None when it keeps its
    start and pool: the one definition of "moved" that churn and plan diffs share."""
    if new is not None and new.start == old.start and new.pool == old.pool:
        return None
    return Move(
        old.job,
        old.pool,
        old.start,
        old.end,
        None if new is None else new.pool,
        None if new is None else new.start,
        None if new is None else new.end,
    )


def moved_jobs(instance: Instance, previous: Plan, new: Plan) -> list[Move]:
    """Compared jobs that the new plan starts at another slot or on another pool, or drops;
    ordered by previous start, then job order in the instance, so a listing reads as a timeline."""
    moves = [
        m for old, a in _compared(instance, previous, new) if (m := job_move(old, a)) is not None
    ]
    moves.sort(key=lambda m: (m.old_start, instance.job_index[m.job]))
    return moves


def churn(instance: Instance, previous: Plan, new: Plan) -> Churn:
    """Churn of `new` against `previous`; `Churn` defines each figure.

    A compared job the new plan does not assign counts as dropped whether or not it is listed
    as unscheduled: a plan the checker accepts lists it there.
    """
    h = instance.hours_per_slot
    compared = _compared(instance, previous, new)
    moved = later = dropped = 0
    gpu_hours = 0.0
    shifts: list[float] = []
    for m in moved_jobs(instance, previous, new):
        if m.new_start is None or m.new_end is None:
            dropped += 1
            continue
        moved += 1
        later += m.new_start > m.old_start
        shifts.append(abs(m.new_start - m.old_start) * h)
        gpu_hours += instance.jobs[instance.job_index[m.job]].gpus * (m.new_end - m.new_start) * h
    broken = 0
    for old, a in compared:
        job = instance.jobs[instance.job_index[old.job]]
        if job.ends_on_time(old.end) and (a is None or not job.ends_on_time(a.end)):
            broken += 1
    before = {a.job for a in previous.assignments}
    return Churn(
        compared=len(compared),
        moved=moved,
        moved_gpu_hours=gpu_hours,
        mean_shift_hours=sum(shifts) / moved if moved else 0.0,
        max_shift_hours=max(shifts, default=0.0),
        later=later,
        dropped=dropped,
        broken=broken,
        new=sum(1 for a in new.assignments if a.job in instance.job_index and a.job not in before),
    )
