"""A Kueue workload's gang: the GPUs of its pods as one instance gang, and the candidate pools
that can place it under FORMAT.md's placement rule (rounded up to whole nodes when none can as
asked), with notes on what changed (see the text of importers/kueue/importer.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from horizon_opt.importers.cluster import ClusterPool

__all__ = ["Gang", "choose_gang", "fits_rule"]


def fits_rule(gpus: int, pool: ClusterPool) -> bool:
    """FORMAT.md's placement rule on `pool`."""
    g = pool.gpus_per_node
    return gpus <= g or (gpus % g == 0 and gpus // g <= pool.nodes)


@dataclass(frozen=True)
class Gang:
    """GPUs as planned, the pools that can place them (none: left out), and the notes."""

    gpus: int
    pools: list[ClusterPool]
    notes: list[str]


def choose_gang(total: int, sizes: set[int], candidates: list[ClusterPool]) -> Gang:
    """The gang's GPUs and the candidate pools that can place it (see the text of
    importers/kueue/importer.py)."""
    biggest = max(sizes)
    fit = [p for p in candidates if biggest <= p.gpus_per_node]
    notes: list[str] = []
    small = [p.name for p in candidates if p not in fit]
    pods = "pods of " + "/".join(str(s) for s in sorted(sizes)) + " GPUs"
    exact = [p for p in fit if fits_rule(total, p)]
    gpus = total
    if exact:
        broken = [p.name for p in fit if p not in exact]
        if small or broken:
            why = []
            if small:
                why.append(f"{', '.join(small)}: a pod of {biggest} GPUs fits no node")
            if broken:
                why.append(
                    f"{', '.join(broken)}: a gang of {total} GPUs is neither one node's nor whole "
                    "nodes' (placement rule)"
                )
            notes.append(f"not allowed on {'; '.join(why)}")
        pools = exact
        odd = sorted(
            {s for s in sizes for p in pools if total > p.gpus_per_node and p.gpus_per_node % s}
        )
        if odd:
            notes.append(
                f"pods of {'/'.join(map(str, odd))} GPUs may not fill whole nodes of "
                f"{'/'.join(str(p.gpus_per_node) for p in pools)} GPUs: the plan holds whole nodes"
            )
    else:
        rounded = sorted(
            (math.ceil(total / p.gpus_per_node) * p.gpus_per_node, k)
            for k, p in enumerate(fit)
            if math.ceil(total / p.gpus_per_node) <= p.nodes
        )
        if not rounded:
            where = ", ".join(
                f"{p.name} has {p.nodes} nodes of {p.gpus_per_node}" for p in candidates
            )
            return Gang(total, [], [f"a gang of {total} GPUs ({pods}) fits no pool ({where})"])
        gpus = rounded[0][0]
        pools = [p for p in fit if fits_rule(gpus, p)]
        nodes = " or ".join(f"{gpus // p.gpus_per_node} whole nodes of {p.name}" for p in pools)
        notes.append(
            f"a gang of {total} GPUs ({pods}) fits no pool under the placement rule (at most one "
            f"node's GPUs, or whole nodes): planned as {gpus} GPUs, {nodes}"
        )
    return Gang(gpus, pools, notes)
