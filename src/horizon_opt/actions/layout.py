"""Where the plan puts inference, from `now` on: the GPUs each service holds on each node, as
segments of constant layout, and the periods a scheduler reserves from them.

A plan's inference blocks may be split arbitrarily (FORMAT.md), so the blocks themselves say
nothing stable; the layout they add up to does. A sweep over the blocks' ends gives segments in
which no service's GPUs on any node change; a scheduler's reservations follow each node's runs
of segments in which what it can reserve there (the node, or a number of its GPUs) stays the same.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

__all__ = ["Period", "Run", "Segment", "group_runs", "host_runs", "node_owners", "segments"]


@dataclass(frozen=True)
class Segment:
    """Slots [start, end) in which every service holds the same GPUs on the same nodes."""

    start: int
    end: int
    gpus: Mapping[str, Mapping[str, int]]  # service -> node -> GPUs (> 0)


@dataclass(frozen=True)
class Run:
    """Slots [start, end) in which a service can reserve `gpus` on `host` (0: the whole host)."""

    host: str
    start: int
    end: int
    gpus: int


@dataclass(frozen=True)
class Period:
    """Slots [start, end) in which a service holds `gpus` on each of `hosts` (0: whole hosts),
    and no longer on any of them: what one reservation holds."""

    service: str
    start: int
    end: int
    hosts: tuple[str, ...]
    gpus: int


def segments(instance: Instance, plan: Plan) -> list[Segment]:
    """The plan's inference from `now` to the horizon's end, as consecutive segments."""
    gpr = {s.name: s.gpus_per_replica for s in instance.services}
    events: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    for block in plan.inference:
        start, end = max(block.start, instance.now), min(block.end, instance.slots)
        if start >= end or block.replicas == 0:
            continue
        gpus = block.replicas * gpr[block.service]
        events[start].append((block.service, block.node, gpus))
        events[end].append((block.service, block.node, -gpus))
    times = sorted(events)
    held: dict[tuple[str, str], int] = defaultdict(int)
    out = []
    for t, nxt in itertools.pairwise(times):
        for service, node, delta in events[t]:
            held[service, node] += delta
        layout: dict[str, dict[str, int]] = defaultdict(dict)
        for (service, node), g in sorted(held.items()):
            if g > 0:
                layout[service][node] = g
        out.append(Segment(t, nxt, dict(layout)))
    return out


def node_owners(instance: Instance, segment: Segment) -> dict[str, dict[str, int]]:
    """Whole nodes for a scheduler that reserves only whole nodes: a node whose GPUs inference
    holds wholly or mostly (more than half) goes to the service holding most of them there (ties:
    the first service of the instance). service -> node -> 0."""
    order = {s.name: s.index for s in instance.services}
    per_node: dict[str, dict[str, int]] = defaultdict(dict)
    for service, nodes in segment.gpus.items():
        for node, g in nodes.items():
            per_node[node][service] = g
    owners: dict[str, dict[str, int]] = defaultdict(dict)
    for node, held in per_node.items():
        size = int(instance.node_gpus[instance.node_index[node]])
        if 2 * sum(held.values()) > size:
            owner = min(held, key=lambda s: (-held[s], order[s]))
            owners[owner][node] = 0
    return dict(owners)


def host_runs(
    instance: Instance,
    segs: list[Segment],
    reservable: Callable[[Segment], Mapping[str, Mapping[str, int]]],
) -> dict[str, list[Run]]:
    """Service -> each host's runs of consecutive segments in which the service can reserve the
    same GPUs there (`reservable(segment)`: service -> host -> GPUs): a reservation should end on
    a host only where the plan changes that host, so that replicas elsewhere are not cut off."""
    out: dict[str, list[Run]] = {}
    for service in instance.services:
        runs: list[Run] = []
        open_: dict[str, Run] = {}
        for seg in segs:
            held = reservable(seg).get(service.name, {})
            for host, run in list(open_.items()):
                if held.get(host) != run.gpus or run.end != seg.start:
                    runs.append(run)
                    del open_[host]
            for host, g in held.items():
                start = open_[host].start if host in open_ else seg.start
                open_[host] = Run(host, start, seg.end, g)
        out[service.name] = runs + list(open_.values())
    return out


def group_runs(service: str, runs: list[Run]) -> list[Period]:
    """Runs with the same start, end and GPUs as one period each, by start, then first host."""
    groups: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for run in runs:
        groups[run.start, run.end, run.gpus].append(run.host)
    periods = [Period(service, a, b, tuple(sorted(h)), g) for (a, b, g), h in groups.items()]
    return sorted(periods, key=lambda p: (p.start, p.hosts))
