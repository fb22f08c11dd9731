"""Turn a solver's decisions (job -> pool, start, nodes) into a concrete plan file.

Solvers decide GPU counts per node and slot; here each job gets concrete GPU indices. Sweeping
each node's jobs in start order and handing out the lowest free indices always succeeds when the
per-slot counts fit, because a job keeps its indices for its whole run and releases them at its
end, before any job that starts at or after that end asks for them.
"""

from __future__ import annotations

import time
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import TypeAdapter

from horizon_opt.errors import BoundWarning
from horizon_opt.model.instance import Instance, topological_order
from horizon_opt.plans.inference import Layout
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Assignment, InferenceBlock, Plan, Status, Unscheduled
from horizon_opt.plans.tolerance import reaches
from horizon_opt.solvers.causes import Cause


@dataclass(frozen=True)
class Placement:
    job: int
    pool: int
    start: int
    nodes: tuple[int, ...]  # global node indices

    def end(self, instance: Instance) -> int:
        return self.start + instance.jobs[self.job].durations[self.pool]

    def gpus_per_node(self, instance: Instance) -> int:
        """GPUs it holds on each of its nodes."""
        return instance.jobs[self.job].gangs[self.pool].gpus_per_node

    def earned(self, instance: Instance) -> float:
        """What the placement adds to the objective: the job's value when it ends on time (plus
        its promise's bonus when it keeps the promised start), else 0 (a late job may still
        enable others)."""
        if not instance.windows[self.job].on_time(self.end(instance)):
            return 0.0
        return instance.jobs[self.job].value + self.bonus(instance)

    def bonus(self, instance: Instance) -> float:
        """The stability bonus it earns: its job's promise, kept (callers check it is on time)."""
        promise = instance.jobs[self.job].promise
        if promise is None or not promise.kept(self.pool, self.start):
            return 0.0
        return promise.bonus


def drop_idle_late(instance: Instance, placements: Sequence[Placement]) -> list[Placement]:
    """Remove late jobs (no value) that no scheduled job runs after: they only burn GPUs."""
    placed = {p.job: p for p in placements}
    for j in reversed(topological_order(instance)):
        p = placed.get(j)
        if p is None or p.earned(instance) > 0:
            continue
        if not any(q in placed for q in instance.successors[j]):
            del placed[j]
    return list(placed.values())


def gpu_indices(
    instance: Instance,
    placements: Sequence[Placement],
    fixed: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
) -> dict[int, dict[int, list[int]]]:
    """job -> node -> GPU indices, lowest free indices in start order on each node.

    `placements` are in the order the solver placed them, which breaks ties of equal start.
    `fixed`: job -> node -> indices that a job already holds (it is running); every such job
    must start before every other job, so the sweep hands out only what they leave.
    """
    fixed = fixed or {}
    by_node: dict[int, list[Placement]] = defaultdict(list)
    for p in placements:
        for n in p.nodes:
            by_node[n].append(p)
    out: dict[int, dict[int, list[int]]] = defaultdict(dict)
    for n, items in by_node.items():
        G = int(instance.node_gpus[n])
        busy_until = np.zeros(G, dtype=np.int64)  # slot at which each GPU index becomes free
        # Start order; ties in the order the solver placed the jobs (FIFO: the job taken first
        # gets the lowest free indices).
        for p in sorted(items, key=lambda q: q.start):
            want = p.gpus_per_node(instance)
            if p.job in fixed:
                free = np.asarray(fixed[p.job][n], dtype=np.int64)
                if (busy_until[free] > p.start).any():
                    free = free[:0]
            else:
                free = np.flatnonzero(busy_until <= p.start)[:want]
            if len(free) < want:
                raise RuntimeError(
                    f"internal error: node {instance.node_names[n]} over capacity at slot {p.start}"
                )
            busy_until[free] = p.end(instance)
            out[p.job][n] = [int(g) for g in free]
    return out


# A plan holds a block per (service, node) and change of count: tens of thousands on a large
# cluster, validated as one list (faster than constructing them one by one).
_BLOCKS = TypeAdapter(list[InferenceBlock])


def inference_blocks(instance: Instance, layout: Layout) -> list[InferenceBlock]:
    """Run-length encode each (service, node) replica series into constant blocks."""
    blocks: list[dict[str, str | int]] = []
    for s in instance.services:
        first = instance.pools[s.pool].first_node
        reps = layout.replicas[s.index]
        # A block starts where a node's count changes (or at slot 0) and ends at the next change.
        change = np.ones_like(reps, dtype=bool)
        change[:, 1:] = reps[:, 1:] != reps[:, :-1]
        rows, starts = np.nonzero(change)
        ends = np.r_[starts[1:], 0]
        ends[np.r_[rows[1:] != rows[:-1], True]] = instance.slots
        for row, a, b in zip(rows.tolist(), starts.tolist(), ends.tolist(), strict=True):
            count = int(reps[row, a])
            if count > 0:
                node = instance.node_names[first + row]
                blocks.append(
                    {"service": s.name, "node": node, "start": a, "end": b, "replicas": count}
                )
    return _BLOCKS.validate_python(blocks)


def _iso(instance: Instance, slot: int) -> str | None:
    when = instance.slot_time(slot)
    return None if when is None else when.isoformat().replace("+00:00", "Z")


def plan_placements(instance: Instance, plan: Plan) -> list[Placement]:
    """A plan's assignments of the instance's jobs as placements (nodes in ascending order)."""
    index, pools, nodes = instance.job_index, instance.pool_index, instance.node_index
    return [
        Placement(index[a.job], pools[a.pool], a.start, tuple(sorted(nodes[n] for n in a.gpus)))
        for a in plan.assignments
        if a.job in index
    ]


def assignments_of(
    instance: Instance,
    placements: Sequence[Placement],
    fixed: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
) -> list[Assignment]:
    """The plan file's assignments, in start order, with concrete GPU indices."""
    indices = gpu_indices(instance, placements, fixed)
    return [
        Assignment(
            job=instance.jobs[p.job].id,
            pool=instance.pools[p.pool].name,
            start=p.start,
            end=p.end(instance),
            gpus={instance.node_names[n]: idx for n, idx in sorted(indices[p.job].items())},
            start_time=_iso(instance, p.start),
            end_time=_iso(instance, p.end(instance)),
        )
        for p in sorted(placements, key=lambda q: (q.start, q.job))
    ]


def build_plan(
    instance: Instance,
    solver: str,
    placements: Sequence[Placement],
    layout: Layout,
    reasons: Mapping[int, Cause],
    *,
    started: float,
    status: Status = "heuristic",
    bound: float | None = None,
    bound_source: str | None = None,
    build_seconds: float | None = None,
    fixed: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
) -> Plan:
    """Assemble, evaluate and stamp a plan; `reasons` holds the cause of every job not placed
    (`causes.unscheduled_causes`); `fixed`: GPU indices of jobs that hold theirs already."""
    placed = {p.job for p in placements}
    unscheduled = [
        Unscheduled(job=j.id, reason=reasons[j.index].sentence, code=reasons[j.index].code)
        for j in instance.jobs
        if j.index not in placed
    ]
    draft = Plan(
        instance=instance.name,
        solver=solver,
        status=status,
        objective=0.0,
        assignments=assignments_of(instance, placements, fixed),
        inference=inference_blocks(instance, layout),
        unscheduled=unscheduled,
    )
    return stamp(
        instance,
        draft,
        started=started,
        bound=bound,
        bound_source=bound_source,
        build_seconds=build_seconds,
    )


def stamp(
    instance: Instance,
    draft: Plan,
    *,
    started: float,
    bound: float | None,
    build_seconds: float | None,
    bound_source: str | None = None,
) -> Plan:
    """The plan with its metrics, objective (pwo), proven bound and gap, and wall time.
    `bound_source` names what proved the bound (None: the draft's own, e.g. when placed jobs
    are put back); a plan without a bound has none."""
    metrics = evaluate(instance, draft)
    objective = metrics.pwo
    if bound is not None:
        if not reaches(bound, objective):
            # A bound below a valid plan proves nothing: drop it, keep the plan.
            warnings.warn(
                f"{draft.solver}: the bound {bound:g} ({bound_source or 'unnamed'}) is below the "
                f"plan's pwo {objective:g}: it proves nothing, so the plan is written without one",
                BoundWarning,
                stacklevel=2,
            )
            bound = None
            if draft.status == "optimal":
                draft = draft.model_copy(update={"status": "feasible"})
        else:
            bound = max(bound, objective)  # float rounding must never show a negative gap
    gap = None if bound is None else (bound - objective) / max(bound, 1e-9)
    return draft.model_copy(
        update={
            "objective": objective,
            "bound": bound,
            "gap": gap,
            "bound_source": None if bound is None else bound_source or draft.bound_source,
            "wall_seconds": round(time.perf_counter() - started, 3),
            "build_seconds": build_seconds,
            "metrics": metrics,
        }
    )
