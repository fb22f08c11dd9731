"""Headroom priced against demand error (`-guard`): long work planned against an upper quantile
of the forecast's error, short work into the band between that and the forecast.

A plan that packs batch work into the room the forecast's mean leaves is a bet: when demand runs
above the forecast, the replay (as a cluster would) preempts batch work to serve it, and a long
gang loses its whole run. A `-guard` policy plans in two steps:

1. its solver plans a state whose services' forecasts are raised to `demand * e^q`, where `q` is
   the `GUARD_QUANTILE` of the log errors `log(actual / forecast)` of every service at every slot
   before now (no raise before the first one), capped slot by slot at what fits beside the
   running jobs (packed as the compiler checks it), so the state stays an instance;
2. the short jobs that plan left out (every duration at most `SHORT_HOURS`) go into the gaps
   the plain forecast leaves, by backfill holding every start of the first plan: a short job
   in the band loses little when demand takes its GPUs, and preemption takes the lowest-value
   job first. Long jobs left out wait for the next plan.

Nothing here knows the world's noise model: only the demand the replay has already served.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from horizon_opt.instance import (
    FloatArray,
    Instance,
    Service,
    required_replicas,
    topological_order,
)
from horizon_opt.packing import pack
from horizon_opt.plan import Plan
from horizon_opt.replan import replan
from horizon_opt.snapshot import instance_at
from horizon_opt.solvers import SolveOptions

GUARD_QUANTILE = 0.9  # of the forecast's relative error seen so far
SHORT_HOURS = 2.0  # a job this short on every pool may use the band above the forecast


def learned_factor(instance: Instance, actual: Sequence[FloatArray], now: int) -> float:
    """`e^q`: the `GUARD_QUANTILE` of `actual / forecast` over every service and slot before
    `now` where the forecast is positive, at least 1 (1 when nothing has been seen)."""
    errors = [
        np.log(actual[s.index][:now][s.demand[:now] > 0] / s.demand[:now][s.demand[:now] > 0])
        for s in instance.services
    ]
    seen = np.concatenate(errors) if errors else np.empty(0)
    if seen.size == 0:
        return 1.0
    return max(1.0, math.exp(float(np.quantile(seen, GUARD_QUANTILE))))


def guarded(state: Instance, factor: float) -> Instance:
    """`state` with every service's forecast raised to `factor` times itself from `now` on,
    wherever the replicas it requires fit beside the placed jobs; never below the forecast."""
    if factor <= 1.0 or not state.services:
        return state
    demand = {s.index: s.demand.copy() for s in state.services}
    for pool in state.pools:
        members = [s for s in state.services if s.pool == pool.index]
        rows = slice(pool.first_node, pool.first_node + pool.nodes)
        free = np.maximum(state.capacity[rows] - state.placed_gpus[rows], 0)
        for t in range(state.now, state.slots) if members else ():
            raised = [required_replicas(s.demand[t] * factor, s.headroom) for s in members]
            placed, _ = pack(
                free[:, t],
                [(s.gpus_per_replica, int(r)) for s, r in zip(members, raised, strict=True)],
            )
            if any(placed[k].sum() < s.req[t] for k, s in enumerate(members)):
                continue  # the raise leaves a service short here: keep the forecast
            for k, s in enumerate(members):
                fits = int(placed[k].sum())
                top = s.demand[t] * factor if fits >= raised[k] else fits / (1 + s.headroom)
                demand[s.index][t] = max(s.demand[t], top - 1e-9)
    services = tuple(_with_demand(s, demand[s.index]) for s in state.services)
    return replace(state, services=services)


def _with_demand(service: Service, demand: FloatArray) -> Service:
    req = np.maximum(required_replicas(demand, service.headroom), service.req)
    demand.setflags(write=False)
    req.setflags(write=False)
    return replace(service, demand=demand, req=req)


def fill_band(state: Instance, plan: Plan, options: SolveOptions) -> tuple[Instance, Plan]:
    """`plan` (made for the guarded `state`) with the short jobs it leaves out or starts later
    (none waits for them) placed at their earliest in the gaps of `state` itself, every other
    start of `plan` held; and the state that plan is for (the long jobs left out, and the jobs
    after them, are not in it: they wait)."""
    hours = state.hours_per_slot
    later = {a.job for a in plan.assignments if a.start > state.now}
    waited_for = {p for job in state.jobs for p in job.after}
    movable = {
        j.id
        for j in state.jobs
        if max(j.durations.values()) * hours <= SHORT_HOURS and j.index not in waited_for
    } & later
    planned = {a.job for a in plan.assignments} - movable
    waits: set[int] = set()
    for j in topological_order(state):
        job = state.jobs[j]
        long = max(job.durations.values()) * hours > SHORT_HOURS
        left_out = job.placed is None and job.id not in planned
        if (left_out and long) or any(p in waits for p in job.after):
            waits.add(j)
    free = [
        j for j in state.jobs if j.placed is None and j.id not in planned and j.index not in waits
    ]
    if not free:
        return state, plan
    kept = plan.model_copy(
        update={"assignments": [a for a in plan.assignments if a.job in planned]}
    )
    band = instance_at(state, state.now, [j.index for j in state.jobs if j.index not in waits], {})
    return band, replan(band, kept, "backfill", options, freeze_slots=state.slots).plan
