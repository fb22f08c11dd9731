"""What really ran in a replay, as an instance and a plan that `check` and `evaluate` read.

A replay's realized figures should not have to be taken on the simulator's word. Per policy it
writes the horizon as it really happened (`actual_spec`): the instance's pools, outages and jobs,
where every run is a placed job at its actual start and end on the GPUs it held, and each
service's demand is what its replicas really served. The plan of those runs (`ran_plan`) is then
a plan file like any other: `horizon-opt check` verifies it (no GPU held twice, no node over
capacity, predecessors ended first, inference beside the runs), and its `pwo` and `utilization`
are the replay's realized pwo and realized utilization.

A run that earned nothing (it failed, its user cancelled it, inference preempted it, or the
horizon ended while it still ran) is a job of its own, named `<job>#failed`, `<job>#cancelled`,
`<job>#preempted-<k>` or `<job>#unfinished` (held to the horizon's end), whose deadline is its
start, so pwo counts it as late while capacity counts its GPUs. Jobs that never ran (never
started, or waiting for a job that failed) stay free and are listed as unscheduled.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from horizon_opt.io import write_atomic
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import FloatArray, Instance, IntArray
from horizon_opt.model.spec import InstanceSpec, JobSpec, PlacedSpec
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Assignment, InferenceBlock, Plan, Unscheduled
from horizon_opt.simulate.world import World

OUTCOMES = ("completed", "failed", "cancelled", "preempted", "unfinished")


@dataclass(frozen=True)
class Run:
    """One run of a job, by names: where, from `start` to `end` (slots), and how it ended."""

    job: str
    pool: str
    start: int
    end: int
    gpus: dict[str, tuple[int, ...]]  # node name -> GPU indices held
    outcome: str  # one of OUTCOMES


@dataclass(frozen=True)
class Audit:
    """A replay's log: every run, per service the replicas that ran ([nodes of its pool, S]) and
    the demand they served ([S]), and the GPUs the inference reservation in force held ([N, S];
    a reserved replica its service did not need held its GPUs without running)."""

    runs: list[Run]
    replicas: list[IntArray]
    served: list[FloatArray]
    reserved: IntArray | None = None


def told_spec(instance: Instance, world: World) -> InstanceSpec:
    """The instance with each job's duration on each pool replaced by its actual run there: what
    a planner told the actual run times (the `-runtimes` and `-oracle` rungs) sees."""
    names = [p.name for p in instance.pools]
    jobs = [
        spec.model_copy(
            update={
                "duration": {
                    names[p]: world.run_slots(spec.id, d) for p, d in job.durations.items()
                },
                "pools": None,
            }
        )
        for spec, job in zip(instance.spec.jobs, instance.jobs, strict=True)
    ]
    return instance.spec.model_copy(update={"jobs": jobs})


def _run_id(run: Run, k: int) -> str:
    if run.outcome == "completed":
        return run.job
    if run.outcome == "preempted":
        return f"{run.job}#preempted-{k}"
    return f"{run.job}#{run.outcome}"


def _final_ids(audit: Audit) -> dict[str, str]:
    """Job id -> the id of its last run (what a job that waited for it waits for)."""
    out: dict[str, str] = {}
    counts: dict[str, int] = defaultdict(int)
    for run in sorted(audit.runs, key=lambda r: r.start):
        if run.outcome == "preempted":
            counts[run.job] += 1
        out[run.job] = _run_id(run, counts[run.job])
    return out


def actual_spec(instance: Instance, audit: Audit, policy: str) -> InstanceSpec:
    """The horizon as it really happened under `policy` (see the module docstring)."""
    spec = instance.spec
    final = _final_ids(audit)
    by_job: dict[str, list[Run]] = defaultdict(list)
    for run in sorted(audit.runs, key=lambda r: r.start):
        by_job[run.job].append(run)
    jobs: list[JobSpec] = []
    for job in spec.jobs:
        after = [final.get(a, a) for a in job.after]
        runs = by_job.get(job.id, [])
        if not runs:
            jobs.append(job.model_copy(update={"after": after}))
        for k, run in enumerate(runs, start=1):
            placed = PlacedSpec(
                pool=run.pool,
                start=run.start,
                end=run.end,
                gpus={n: list(g) for n, g in run.gpus.items()},
            )
            update = {"id": _run_id(run, k), "after": after, "placed": placed}
            if run.outcome != "completed":
                update["deadline"] = run.start  # earned nothing: late by construction
            jobs.append(job.model_copy(update=update))
    services = [
        s.model_copy(update={"demand": served.tolist(), "headroom": 0.0})
        for s, served in zip(spec.services, audit.served, strict=True)
    ]
    # (the horizon as replayed: with an open end, the extended one, no longer open)
    horizon = spec.horizon.model_copy(update={"slots": instance.slots, "open_end": False})
    return spec.model_copy(
        update={
            "name": f"{spec.name}@{policy}",
            "horizon": horizon,
            "now": None,
            "jobs": jobs,
            "services": services,
        }
    )


def _blocks(instance: Instance, audit: Audit) -> list[InferenceBlock]:
    """The replicas that ran, as blocks constant over time per (service, node)."""
    out: list[InferenceBlock] = []
    for s in instance.services:
        first = instance.pools[s.pool].first_node
        for k, row in enumerate(audit.replicas[s.index]):
            node = instance.node_names[first + k]
            t = 0
            while t < instance.slots:
                u = t
                while u < instance.slots and row[u] == row[t]:
                    u += 1
                if row[t] > 0:
                    out.append(
                        InferenceBlock(
                            service=s.name, node=node, start=t, end=u, replicas=int(row[t])
                        )
                    )
                t = u
    return out


def ran_plan(actual: Instance, instance: Instance, audit: Audit, policy: str) -> Plan:
    """The plan of what ran, for `actual` (the compiled `actual_spec`)."""
    final = _final_ids(audit)
    counts: dict[str, int] = defaultdict(int)
    assignments = []
    for run in sorted(audit.runs, key=lambda r: (r.start, r.job)):
        counts[run.job] += run.outcome == "preempted"
        job_id = _run_id(run, counts[run.job])
        gpus = {n: list(g) for n, g in run.gpus.items()}
        assignments.append(
            Assignment(job=job_id, pool=run.pool, start=run.start, end=run.end, gpus=gpus)
        )
    completed = {r.job for r in audit.runs if r.outcome == "completed"}
    unscheduled = []
    for job in instance.jobs:
        if job.id in final:
            continue
        waited = [instance.jobs[p].id for p in job.after if instance.jobs[p].id not in completed]
        reason = (
            f"never ran: it waited for {waited[0]!r}, which did not complete"
            if waited
            else "never ran: no decision started it within the horizon"
        )
        unscheduled.append(Unscheduled(job=job.id, reason=reason))
    plan = Plan(
        instance=actual.name,
        solver=policy,
        status="heuristic",
        objective=0.0,
        assignments=assignments,
        inference=_blocks(instance, audit),
        unscheduled=unscheduled,
    )
    metrics = evaluate(actual, plan)
    return plan.model_copy(update={"objective": metrics.pwo, "metrics": metrics})


def audit_files(policy: str) -> tuple[str, str]:
    """The names of a policy's audit files: the actual instance and the plan of what ran (a
    cadence's `/` becomes `_`: `cpsat@30m/0` writes `cpsat@30m_0.actual.yaml`)."""
    stem = policy.replace("/", "_")
    return f"{stem}.actual.yaml", f"{stem}.ran.json"


def write_audit(folder: Path, instance: Instance, audit: Audit, policy: str) -> Plan:
    """Write a policy's audit files into `folder` (atomically); returns the plan of what ran."""
    spec = actual_spec(instance, audit, policy)
    plan = ran_plan(compile_instance(spec), instance, audit, policy)
    data = spec.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    header = (
        f"# {spec.name}: the horizon as it really ran under {policy} (horizon-opt simulate);\n"
        f"# check it with: horizon-opt check {audit_files(policy)[0]} {audit_files(policy)[1]}\n"
    )
    actual_name, ran_name = audit_files(policy)
    write_atomic(folder / actual_name, header + text)
    plan.write(folder / ran_name)
    return plan
