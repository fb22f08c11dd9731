"""Checks across the compiled parts of an instance, once each part is compiled on its own:
placed jobs together (predecessors, GPUs held twice, nodes over their GPUs) and the required
replicas beside them. Problems go to `error` (field path, message), as the compiler collects
them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from horizon_opt.model.instance import BoolArray, IntArray, Job, Pool, Service
from horizon_opt.model.packing import pack


def slot_ranges(slots: list[int]) -> str:
    """'3-5, 9' for [3, 4, 5, 9]; at most ten ranges, then a count."""
    parts: list[str] = []
    start = prev = slots[0]
    for s in [*slots[1:], None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if s is not None:
            start = prev = s
    more = f" (+{len(parts) - 10} more)" if len(parts) > 10 else ""
    return ", ".join(parts[:10]) + more


def check_placed(
    jobs: Sequence[Job],
    pools: Sequence[Pool],
    slots: int,
    now: int,
    node_names: Sequence[str],
    node_pools: Sequence[int],
    error: Callable[[str, str], None],
) -> None:
    """Placed jobs together: their predecessors are placed and end first, no GPU of a
    started job is held twice, no node holds more than it has."""
    for job in jobs:
        if job.placed is None:
            continue
        for p in job.after:
            pred = jobs[p]
            if pred.placed is None:
                error(
                    f"jobs[{job.index}].placed",
                    f"job {job.id!r} runs after {pred.id!r}, which is not placed: a started "
                    "job's predecessors have ended (leave them out of the instance) or are "
                    "placed too",
                )
            elif pred.placed.end > job.placed.start:
                error(
                    f"jobs[{job.index}].placed.start",
                    f"slot {job.placed.start} is before {pred.id!r} ends (slot {pred.placed.end})",
                )
    runs: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    count: dict[int, IntArray] = {}
    for job in jobs:
        if job.placed is None:
            continue
        a, b = job.placed.start, job.placed.end
        for n, idx in job.placed.gpus.items():
            row = count.setdefault(n, np.zeros(slots, dtype=np.int64))
            row[a:b] += len(idx)
            if a < now:  # a started job holds these very GPUs
                for g in idx:
                    runs.setdefault((n, g), []).append((a, b, job.id))
    for (n, g), items in runs.items():
        items.sort()
        last_end, last_id = items[0][1], items[0][2]  # the run that ends last so far
        for a, b, job_id in items[1:]:
            if a < last_end:
                error(
                    "jobs",
                    f"placed jobs {last_id!r} and {job_id!r} both hold GPU {g} of "
                    f"{node_names[n]} at slot {a}",
                )
            if b > last_end:
                last_end, last_id = b, job_id
    gpus = {p.index: p.gpus_per_node for p in pools}
    for n, row in count.items():
        G = gpus[node_pools[n]]
        over = np.flatnonzero(row > G)
        if over.size:
            holders = [
                job.id
                for job in jobs
                if job.placed is not None
                and n in job.placed.gpus
                and job.placed.start <= over[0] < job.placed.end
            ]
            error(
                "jobs",
                f"placed jobs {', '.join(map(repr, holders))} hold more than the {G} GPUs "
                f"of {node_names[n]} (slots {slot_ranges(over.tolist())})",
            )


def check_inference(
    pools: Sequence[Pool],
    up: BoolArray,
    services: Sequence[Service],
    held: IntArray,
    service_names: Sequence[str],
    error: Callable[[str, str], None],
    first: int = 0,
) -> None:
    """Every slot's required replicas, from slot `first` on, must fit on the nodes that are up,
    beside the placed jobs and no other batch work."""
    for pool in pools:
        members = [s for s in services if s.pool == pool.index]
        if not members:
            continue
        short: dict[int, list[int]] = {s.index: [] for s in members}
        rows = up[pool.first_node : pool.first_node + pool.nodes]
        taken = held[pool.first_node : pool.first_node + pool.nodes]
        for t in range(first, up.shape[1]):
            free = rows[:, t].astype(np.int64) * pool.gpus_per_node - taken[:, t]
            demands = [(s.gpus_per_replica, int(s.req[t])) for s in members]
            placed, _ = pack(free, demands)
            for k, s in enumerate(members):
                if placed[k].sum() < s.req[t]:
                    short[s.index].append(t)
        for s in members:
            if short[s.index]:
                spec_index = list(service_names).index(s.name)
                beside = (
                    "beside the placed jobs"
                    if taken[:, short[s.index]].any()
                    else "even with no batch work"
                )
                error(
                    f"services[{spec_index}].demand",
                    f"service {s.name!r} needs more replicas than pool {pool.name!r} can "
                    f"hold {beside}, at slots {slot_ranges(short[s.index])}",
                )
