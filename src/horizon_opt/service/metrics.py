"""A cycle's figures in Prometheus' text exposition format, for node_exporter's textfile collector
(https://prometheus.io/docs/instrumenting/exposition_formats/).

Two parts: the cycle's status (written every cycle, good or failed) and the plan's figures
(written by a good cycle and repeated by a failed one, so dashboards keep showing the plan
that is in force).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from horizon_opt.actions.core import is_running
from horizon_opt.instance import Instance
from horizon_opt.plan import Plan

PREFIX = "horizon_opt"

Sample = tuple[Mapping[str, str], float]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(name: str, help_text: str, samples: Iterable[Sample], kind: str = "gauge") -> str:
    lines = [f"# HELP {PREFIX}_{name} {help_text}", f"# TYPE {PREFIX}_{name} {kind}"]
    for labels, value in samples:
        tags = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        lines.append(
            f"{PREFIX}_{name}{{{tags}}} {value:.10g}" if tags else f"{PREFIX}_{name} {value:.10g}"
        )
    return "\n".join(lines) + "\n"


def status_metrics(
    when: datetime,
    ok: bool,
    last_success: datetime | None,
    applied: int = 0,
    failed: int = 0,
) -> str:
    """The cycle's own figures: when it ran, whether it succeeded (a plan, and every command
    applied), the last success, the commands applied and failed."""
    text = _family("cycle_timestamp_seconds", "When the last cycle ran.", [({}, when.timestamp())])
    text += _family(
        "cycle_success",
        "1 if the last cycle produced a plan and applied all its commands, else 0.",
        [({}, float(ok))],
    )
    if last_success is not None:
        text += _family(
            "last_success_timestamp_seconds",
            "When a cycle last produced a plan and applied all its commands.",
            [({}, last_success.timestamp())],
        )
    text += _family(
        "commands_applied", "Commands the last cycle ran successfully.", [({}, float(applied))]
    )
    return text + _family(
        "commands_failed", "Commands of the last cycle that failed.", [({}, float(failed))]
    )


def plan_metrics(
    instance: Instance,
    plan: Plan,
    actions: Mapping[str, int],
    required: Mapping[str, int] | None = None,
    drift: int | None = None,
) -> str:
    """The plan in force: value, bound and gap, job counts, each pending job's predicted start,
    inference reserved against the forecast now, churn, solve time, actions by kind."""
    m = plan.metrics
    text = _family(
        "plan_pwo", "Priority-weighted output the plan promises.", [({}, plan.objective)]
    )
    if plan.bound is not None:
        text += _family("plan_bound", "Proven upper bound on pwo.", [({}, plan.bound)])
    if plan.gap is not None:
        text += _family("plan_gap_ratio", "(bound - pwo) / bound.", [({}, plan.gap)])
    text += _family(
        "plan_utilization_ratio", "Planned utilization (FORMAT.md).", [({}, m.utilization)]
    )
    text += _family("solve_seconds", "Wall time of the last plan.", [({}, plan.wall_seconds)])
    running = sum(is_running(instance, j) for j in instance.jobs)
    planned = len(plan.assignments) - running
    text += _family(
        "jobs",
        "Jobs by state in the plan.",
        [
            ({"state": "running"}, float(running)),
            ({"state": "planned"}, float(planned)),
            ({"state": "unplanned"}, float(len(plan.unscheduled))),
        ],
    )
    text += _family(
        "job_predicted_start_timestamp_seconds",
        "Planned start of each job that has not started.",
        _starts(instance, plan),
    )
    text += _inference(instance, plan, required)
    if plan.churn is not None:
        c = plan.churn
        text += _family(
            "churn_jobs",
            "Promised starts the re-plan changed.",
            [
                ({"change": k}, float(getattr(c, k)))
                for k in ("moved", "later", "dropped", "broken")
            ],
        )
    if drift is not None:
        text += _family(
            "drift_reservations",
            "Reservations where the scheduler differed from what was last applied.",
            [({}, float(drift))],
        )
    text += _family(
        "actions",
        "Commands this cycle wrote, by kind (commands_applied: those that ran).",
        [({"kind": k}, float(n)) for k, n in sorted(actions.items())],
    )
    return text


def _starts(instance: Instance, plan: Plan) -> list[Sample]:
    if instance.start is None:
        return []
    step = instance.slot_minutes * 60
    zero = instance.start.timestamp()
    return [
        ({"job": a.job, "pool": a.pool}, zero + a.start * step)
        for a in plan.assignments
        if a.start >= instance.now
    ]


def _inference(instance: Instance, plan: Plan, uncapped: Mapping[str, int] | None) -> str:
    """GPUs reserved for each service at `now`, beside the forecast's requirement (`uncapped`:
    before the cut to what fits beside the running jobs, when there was one)."""
    now = instance.now
    reserved: list[Sample] = []
    required: list[Sample] = []
    for s in instance.services:
        replicas = sum(
            b.replicas for b in plan.inference if b.service == s.name and b.start <= now < b.end
        )
        reserved.append(({"service": s.name}, float(replicas * s.gpus_per_replica)))
        need = int(s.req[now]) * s.gpus_per_replica
        required.append(({"service": s.name}, float((uncapped or {}).get(s.name, need))))
    text = _family("inference_reserved_gpus", "GPUs the plan reserves for inference now.", reserved)
    return text + _family(
        "inference_required_gpus", "GPUs the forecast (with headroom) requires now.", required
    )
