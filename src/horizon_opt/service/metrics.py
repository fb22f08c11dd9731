"""A cycle's figures in Prometheus' text exposition format, for node_exporter's textfile collector
(https://prometheus.io/docs/instrumenting/exposition_formats/).

Two parts: the cycle's status (written every cycle, good or failed) and the plan's figures
(written by a good cycle and repeated by a failed one, so dashboards keep showing the plan
that is in force).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from horizon_opt.actions.core import is_running
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

PREFIX = "horizon_opt"

Sample = tuple[Mapping[str, str], float]


class _Families:
    """Gauge families written by the reference client (`prometheus_client`), so names, types,
    value formats and label escaping follow the exposition format."""

    def __init__(self) -> None:
        self.families: list[GaugeMetricFamily] = []

    def add(self, name: str, help_text: str, samples: Iterable[Sample]) -> None:
        rows = list(samples)
        labels = list(dict.fromkeys(k for tags, _ in rows for k in tags))
        family = GaugeMetricFamily(f"{PREFIX}_{name}", help_text, labels=labels)
        for tags, value in rows:
            family.add_metric([tags[k] for k in labels], value)
        self.families.append(family)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return iter(self.families)

    def text(self) -> str:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)  # (a collector is anything with collect())
        return generate_latest(registry).decode("utf-8")


def status_metrics(
    when: datetime,
    ok: bool,
    last_success: datetime | None,
    applied: int = 0,
    failed: int = 0,
) -> str:
    """The cycle's own figures: when it ran, whether it succeeded (a plan, and every command
    applied), the last success, the commands applied and failed."""
    out = _Families()
    out.add("cycle_timestamp_seconds", "When the last cycle ran.", [({}, when.timestamp())])
    out.add(
        "cycle_success",
        "1 if the last cycle produced a plan and applied all its commands, else 0.",
        [({}, float(ok))],
    )
    if last_success is not None:
        out.add(
            "last_success_timestamp_seconds",
            "When a cycle last produced a plan and applied all its commands.",
            [({}, last_success.timestamp())],
        )
    out.add("commands_applied", "Commands the last cycle ran successfully.", [({}, float(applied))])
    out.add("commands_failed", "Commands of the last cycle that failed.", [({}, float(failed))])
    return out.text()


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
    out = _Families()
    out.add("plan_pwo", "Priority-weighted output the plan promises.", [({}, plan.objective)])
    if plan.bound is not None:
        out.add("plan_bound", "Proven upper bound on pwo.", [({}, plan.bound)])
    if plan.gap is not None:
        out.add("plan_gap_ratio", "(bound - pwo) / bound.", [({}, plan.gap)])
    out.add("plan_utilization_ratio", "Planned utilization (FORMAT.md).", [({}, m.utilization)])
    out.add("solve_seconds", "Wall time of the last plan.", [({}, plan.wall_seconds)])
    running = sum(is_running(instance, j) for j in instance.jobs)
    planned = len(plan.assignments) - running
    out.add(
        "jobs",
        "Jobs by state in the plan.",
        [
            ({"state": "running"}, float(running)),
            ({"state": "planned"}, float(planned)),
            ({"state": "unplanned"}, float(len(plan.unscheduled))),
        ],
    )
    out.add(
        "job_predicted_start_timestamp_seconds",
        "Planned start of each job that has not started.",
        _starts(instance, plan),
    )
    _inference(out, instance, plan, required)
    if plan.churn is not None:
        c = plan.churn
        out.add(
            "churn_jobs",
            "Promised starts the re-plan changed.",
            [
                ({"change": k}, float(getattr(c, k)))
                for k in ("moved", "later", "dropped", "broken")
            ],
        )
    if drift is not None:
        out.add(
            "drift_reservations",
            "Reservations where the scheduler differed from what was last applied.",
            [({}, float(drift))],
        )
    out.add(
        "actions",
        "Commands this cycle wrote, by kind (commands_applied: those that ran).",
        [({"kind": k}, float(n)) for k, n in sorted(actions.items())],
    )
    return out.text()


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


def _inference(
    out: _Families, instance: Instance, plan: Plan, uncapped: Mapping[str, int] | None
) -> None:
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
    out.add("inference_reserved_gpus", "GPUs the plan reserves for inference now.", reserved)
    out.add("inference_required_gpus", "GPUs the forecast (with headroom) requires now.", required)
