"""What the exporters share: plan-against-instance checks, colours, and per-slot GPU counts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from horizon_opt.errors import PlanError
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import JOB_KINDS, JobKind
from horizon_opt.plans.plan import Plan
from horizon_opt.times import iso

FloatArray = npt.NDArray[np.float64]

# Tableau-10 hues: distinct, print well, and stay apart for the common colour-vision deficiencies.
KIND_COLORS: dict[str, str] = {
    "training": "#4e79a7",
    "batch_inference": "#f28e2b",
    "quantization": "#59a14f",
    "evaluation": "#b07aa1",
    "other": "#9c755f",
}
KIND_LABELS: dict[str, str] = {
    "training": "training",
    "batch_inference": "batch inference",
    "quantization": "quantization",
    "evaluation": "evaluation",
    "other": "other",
}
INFERENCE_COLOR = "#e15759"  # forecast inference demand (and replicas in the Gantt chart)
RESERVED_COLOR = "#f5b5b6"  # inference reservation above the forecast
IDLE_COLOR = "#f2f2f2"
DOWN_COLOR = "#8c8c8c"


def slot_iso(instance: Instance, slot: int) -> str | None:
    when = instance.slot_time(slot)
    return None if when is None else iso(when)


def plan_problems(instance: Instance, plan: Plan) -> list[str]:
    """Why a plan cannot be drawn or tabulated for this instance (unknown names, bad slots).

    A plan that passes is not necessarily valid (the checker decides that); it only refers to
    jobs, pools, nodes, GPUs, services and slots that exist in the instance.
    """
    if plan.instance != instance.name:  # everything else would only repeat this
        return [f"the plan is for instance {plan.instance!r}, not {instance.name!r}"]
    problems: list[str] = []
    S = instance.slots
    for i, a in enumerate(plan.assignments):
        where = f"assignments[{i}]"
        if a.job not in instance.job_index:
            problems.append(f"{where}.job: unknown job {a.job!r}")
        pool = instance.pool_index.get(a.pool)
        if pool is None:
            problems.append(f"{where}.pool: unknown pool {a.pool!r}")
        if not 0 <= a.start < a.end <= S:
            problems.append(f"{where}: slots {a.start}..{a.end} outside the horizon 0..{S}")
        for node, idx in a.gpus.items():
            n = instance.node_index.get(node)
            if n is None:
                problems.append(f"{where}.gpus: unknown node {node!r}")
                continue
            if pool is not None and instance.node_pool[n] != pool:
                problems.append(f"{where}.gpus: node {node!r} is not in pool {a.pool!r}")
            g = int(instance.node_gpus[n])
            if any(not 0 <= k < g for k in idx):
                problems.append(f"{where}.gpus.{node}: GPU index outside 0..{g - 1}")
        if len(problems) > 20:
            break
    services = {s.name for s in instance.services}
    for i, b in enumerate(plan.inference):
        where = f"inference[{i}]"
        if b.service not in services:
            problems.append(f"{where}.service: unknown service {b.service!r}")
        if b.node not in instance.node_index:
            problems.append(f"{where}.node: unknown node {b.node!r}")
        if not 0 <= b.start < b.end <= S:
            problems.append(f"{where}: slots {b.start}..{b.end} outside the horizon 0..{S}")
        if len(problems) > 20:
            break
    for i, u in enumerate(plan.unscheduled):
        if u.job not in instance.job_index:
            problems.append(f"unscheduled[{i}].job: unknown job {u.job!r}")
    return problems[:20]


def ensure_plan_fits(instance: Instance, plan: Plan, source: str = "plan") -> None:
    """Raise PlanError (one line per problem, prefixed with `source`) if `plan_problems` finds any."""
    problems = plan_problems(instance, plan)
    if problems:
        raise PlanError([f"{source}: {p}" for p in problems])


def shade(color: str, priority: float, low: float, high: float) -> tuple[float, float, float]:
    """`color` mixed with white: full colour at the highest priority, 35% at the lowest."""
    r, g, b = (int(color[k : k + 2], 16) / 255 for k in (1, 3, 5))
    t = 1.0 if high <= low else 0.35 + 0.65 * (priority - low) / (high - low)
    return (1 - t + t * r, 1 - t + t * g, 1 - t + t * b)


@dataclass(frozen=True)
class NodeUse:
    """GPUs in use per node and slot, by category (GPU counts, not indices)."""

    batch: dict[JobKind, FloatArray]  # kind -> [N, S] GPUs held by jobs of that kind
    planned: FloatArray  # [N, S] GPUs of planned inference replicas
    capacity: FloatArray  # [N, S] GPUs of nodes that are up


def node_use(instance: Instance, plan: Plan) -> NodeUse:
    N, S = instance.num_nodes, instance.slots
    batch: dict[JobKind, FloatArray] = {k: np.zeros((N, S)) for k in JOB_KINDS}
    for a in plan.assignments:
        kind = instance.jobs[instance.job_index[a.job]].kind
        for node, idx in a.gpus.items():
            batch[kind][instance.node_index[node], a.start : a.end] += len(idx)
    planned = np.zeros((N, S))
    gpr = {s.name: s.gpus_per_replica for s in instance.services}
    for blk in plan.inference:
        planned[instance.node_index[blk.node], blk.start : blk.end] += (
            blk.replicas * gpr[blk.service]
        )
    return NodeUse(batch, planned, instance.capacity.astype(np.float64))


def pool_demand(instance: Instance, pool: int | None) -> FloatArray:
    """Forecast inference GPUs per slot on one pool (None: all pools)."""
    return _inference_gpus(instance, pool, required=False)


def pool_required(instance: Instance, pool: int | None) -> FloatArray:
    """Required inference GPUs per slot (forecast with headroom, rounded up to replicas)."""
    return _inference_gpus(instance, pool, required=True)


def _inference_gpus(instance: Instance, pool: int | None, *, required: bool) -> FloatArray:
    out = np.zeros(instance.slots)
    for s in instance.services:
        if pool is None or s.pool == pool:
            out += (s.req if required else s.demand) * s.gpus_per_replica
    return out


def index_runs(indices: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive GPU indices, first and last: [0, 1, 2, 3, 6] -> [(0, 3), (6, 6)]."""
    runs: list[tuple[int, int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs
