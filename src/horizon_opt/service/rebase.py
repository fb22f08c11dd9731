"""A plan moved onto a later horizon: the horizon rolls with each cycle's snapshot, the plan the
cycle replaces was made on the one before."""

from __future__ import annotations

from datetime import datetime

from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan


def rebased(plan: Plan, start: datetime, slot_minutes: int, instance: Instance) -> Plan | None:
    """`plan`, made on a horizon starting at `start` with `slot_minutes`, on `instance`'s
    horizon: every slot shifted by the whole slots between the two starts. What starts before
    the new slot 0 is left out (it is running, placed by the import, or it did not start); so
    is what ends after the new horizon. None when the grids differ (another slot length, or a
    start that is not a whole number of slots earlier)."""
    if instance.start is None or slot_minutes != instance.slot_minutes:
        return None
    seconds = (instance.start - start).total_seconds()
    step = slot_minutes * 60
    if seconds < 0 or seconds % step:
        return None
    shift = int(seconds // step)
    S = instance.slots
    assignments = [
        a.model_copy(update={"start": a.start - shift, "end": a.end - shift})
        for a in plan.assignments
        if a.start - shift >= 0 and a.end - shift <= S
    ]
    inference = [
        b.model_copy(update={"start": max(b.start - shift, 0), "end": min(b.end - shift, S)})
        for b in plan.inference
        if min(b.end - shift, S) > max(b.start - shift, 0)
    ]
    return plan.model_copy(update={"assignments": assignments, "inference": inference})
