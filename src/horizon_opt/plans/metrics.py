"""Exact metrics of a plan, as FORMAT.md defines them. Computed from the plan file alone."""

from __future__ import annotations

import numpy as np

from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import JOB_KINDS
from horizon_opt.plans.plan import Metrics, Plan
from horizon_opt.plans.team_metrics import fairness, team_figures


def on_time(instance: Instance, job_id: str, end: int) -> bool:
    return instance.jobs[instance.job_index[job_id]].ends_on_time(end)


def evaluate(instance: Instance, plan: Plan) -> Metrics:
    """Metrics of a plan (assumed valid: run `check` first for a verdict).

    With `now`, GPU-hours and utilization cover the slots from `now` on (before is history);
    pwo, completed and waits count every assigned job, placed ones included."""
    h = instance.hours_per_slot
    now = instance.now
    available = float(instance.capacity[:, now:].sum()) * h
    batch = 0.0
    pwo = 0.0
    waits: list[float] = []
    by_kind: dict[str, int] = dict.fromkeys(JOB_KINDS, 0)
    late = 0
    for a in plan.assignments:
        job = instance.jobs[instance.job_index[a.job]]
        batch += job.gpus * max(a.end - max(a.start, now), 0) * h
        if on_time(instance, a.job, a.end):
            pwo += job.value
            by_kind[job.kind] += 1
            waits.append((a.start - job.wait_release) * h)
        else:
            late += 1
    inference = sum(float(s.demand[now:].sum()) * s.gpus_per_replica * h for s in instance.services)
    planned = {s.name: np.zeros(instance.slots) for s in instance.services}
    for b in plan.inference:
        if b.service in planned:
            planned[b.service][b.start : b.end] += b.replicas
    reserved_idle = sum(
        float((planned[s.name] - s.demand)[now:].sum()) * s.gpus_per_replica * h
        for s in instance.services
    )
    by_team: dict[str, object] = {}
    if instance.teams:
        figures = team_figures(instance, plan)
        by_team = {"teams": figures, "team_fairness": fairness(figures)}
    return Metrics(
        **by_team,
        available_gpu_hours=available,
        batch_gpu_hours=batch,
        inference_gpu_hours=inference,
        reserved_idle_gpu_hours=reserved_idle,
        utilization=(batch + inference) / available if available > 0 else 0.0,
        pwo=pwo,
        completed=len(waits),
        completed_by_kind=by_kind,
        mean_wait_hours=float(np.mean(waits)) if waits else 0.0,
        scheduled=len(plan.assignments),
        late=late,
    )
