"""Kueue's steps of a cycle: the import of its Workloads and the kubectl actions (the batch
ClusterQueue's quota, read from `cluster_queue_object` each cycle, and the workloads' holds)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from horizon_opt.actions import Actions, KueueOptions, kueue_actions
from horizon_opt.importers import Imported
from horizon_opt.importers.kueue import import_kueue
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.service.context import Context, jobs_only
from horizon_opt.service.settings import KueueSettings

__all__ = ["check", "import_queue", "make_actions"]


def check(section: Any) -> str | None:
    """What the run configuration lacks for Kueue (its `kueue:` section), or None."""
    if not isinstance(section, KueueSettings):
        return "scheduler kueue needs a `kueue:` section (cluster_queue)"
    return None


def import_queue(
    ctx: Context, queue: Any, history: Any | None, now: datetime | None, read: object
) -> Imported:
    """The Workloads imported around the cluster file's jobs part (Kueue reads no history,
    and nothing back: `read` is None)."""
    assert ctx.cluster is not None  # the config requires it for a scheduler payload
    assert history is None  # the config refuses one
    return import_kueue(
        queue,
        jobs_only(ctx.cluster),
        snapshot=now,
        default_duration=ctx.default_duration,
        source="queue",
    )


def make_actions(
    ctx: Context,
    instance: Instance,
    plan: Plan,
    applied: Mapping[str, Mapping[str, str]] | None,
    read: object,
    document: Mapping[str, Any],
) -> Actions:
    """The kubectl commands, from the batch ClusterQueue as it is now."""
    k = ctx.section
    assert isinstance(k, KueueSettings)
    pools = [] if ctx.cluster is None else ctx.cluster.pools
    obj = ctx.parse(
        ctx.read(k.cluster_queue_object, "cluster_queue_object"), "cluster_queue_object"
    )
    options = KueueOptions(
        cluster_queue=k.cluster_queue,
        cluster_queue_object=obj,
        flavors={p.name: p.flavors[0] for p in pools if p.flavors},
        resource=k.resource,
        hold_after_minutes=ctx.every_minutes,
        holds=k.holds,
        quota_window_minutes=k.quota_window_minutes,
    )
    return kueue_actions(instance, plan, options, applied)
