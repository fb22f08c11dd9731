"""An open end (`horizon.open_end`): the planned horizon reaches until every job can end.

Without it a job earns value only when it ends by the horizon's last slot, so no plan starts a
job longer than what is left of the horizon, and a rolling loop that re-plans over a moving
horizon never starts it at all. With it the compiled instance is the written one extended by as
many slots as the latest job needs to end when started as early as it may, after what runs
now. In the extension every node is up and each service's forecast repeats its last day
(seasonal-naive, the baseline that `forecast` measures against). Every solver, bound, the
checker and the metrics then read the longer horizon and nothing else changes, which is why the
horizon is extended rather than valuing a job's part inside it (docs/design.md, "Open end").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from horizon_opt.errors import InstanceError
from horizon_opt.model.instance import FloatArray, Instance, Service, required_replicas
from horizon_opt.model.spec import MAX_NODE_SLOTS


def open_end_hint(instance: Instance) -> str:
    """What lets a job longer than the horizon run, for messages that say it cannot; nothing
    where the horizon already extends until each job can end."""
    if instance.spec.horizon.open_end:
        return ""
    return " (with horizon.open_end: true it may run past the horizon's end)"


def needed_slots(instance: Instance) -> int:
    """Where the latest job ends when it starts as early as it may (its release, not before
    `now`, past its predecessors' shortest runs) but not before every placed job has ended, on
    its slowest pool: so each job alone could still run after what runs now."""
    placed_ends = [j.placed.end for j in instance.jobs if j.placed is not None]
    held_until = max(placed_ends, default=0)
    ends = [instance.written_slots or instance.slots, held_until]
    for job, window in zip(instance.jobs, instance.windows, strict=True):
        if job.placed is None:
            ends.append(max(window.ready, held_until) + max(job.durations.values()))
    return max(ends)


def extend(
    instance: Instance,
    tails: Mapping[int, FloatArray] | None = None,
    at_least: int = 0,
    exactly: int | None = None,
) -> Instance:
    """The instance over `needed_slots` slots (itself when they are its own). Each service's
    demand past the horizon as written is its `tails` series (default: what the instance
    already has there) as far as it goes, then the last written day repeated; so a state built
    from an extended instance equals the one its spec compiles to, however often it grew or
    shrank before. `at_least`: the slots it keeps however few it needs (a replay's states
    never shrink, so that a plan made before still fits the state after); `exactly`: the slots
    it plans over, however many it would need (a state compiled again keeps its horizon), but
    never fewer than its placed jobs' ends."""
    if exactly is None:
        slots = max(needed_slots(instance), at_least)
    else:
        ends = [j.placed.end for j in instance.jobs if j.placed is not None]
        slots = max(exactly, *ends, instance.written_slots or instance.slots)
    if slots == instance.slots and not tails:
        return instance
    if instance.num_nodes * slots > MAX_NODE_SLOTS:
        raise InstanceError(
            [
                f"horizon.open_end: the jobs need {slots:,} slots to end, and "
                f"{instance.num_nodes:,} nodes x {slots:,} slots is more than the "
                f"{MAX_NODE_SLOTS:,} node-slots horizon-opt plans (use longer slots)"
            ]
        )
    if not _in_calendar(instance, slots):
        raise InstanceError(
            [f"horizon.open_end: slot {slots:,}, where the jobs end, is after the year 9999"]
        )
    written = instance.written_slots or instance.slots
    if tails is None:
        tails = {s.index: s.demand[written:] for s in instance.services}
    more = slots - written
    up = np.concatenate([instance.up[:, :written], np.ones((instance.num_nodes, more), bool)], 1)
    up.setflags(write=False)
    day = _slots_per_day(instance.slot_minutes)
    services = tuple(
        _extend_service(s, written, more, day, tails.get(s.index)) for s in instance.services
    )
    extended = written if slots > written else None
    return replace(instance, slots=slots, up=up, services=services, written_slots=extended)


def _in_calendar(instance: Instance, slot: int) -> bool:
    try:
        instance.slot_time(slot)
    except OverflowError:
        return False
    return True


def _slots_per_day(slot_minutes: int) -> int:
    return max(1, round(1440 / slot_minutes))


def repeat_last_day(series: np.ndarray, more: int, day: int) -> np.ndarray:
    """`more` values after `series`: its last `day` values over and over (seasonal-naive); its
    last value when it is shorter than a day."""
    if len(series) < day:
        tail = np.full(more, series[-1])
    else:
        last = series[len(series) - day :]
        tail = np.resize(last, more)
    return np.concatenate([series, tail])


def _extend_service(
    service: Service, written: int, more: int, day: int, tail: FloatArray | None
) -> Service:
    demand = repeat_last_day(service.demand[:written], more, day)
    if tail is not None:
        given = tail[:more]
        demand[written : written + len(given)] = given
    req = required_replicas(demand, service.headroom)
    demand.setflags(write=False)
    req.setflags(write=False)
    return replace(service, demand=demand, req=req)
