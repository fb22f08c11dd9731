"""Inference demand that no longer fits beside the running jobs: planned with what fits.

A state where running jobs hold GPUs that the forecast now needs (demand grew past what is free)
is not an instance (FORMAT.md refuses it). A planner run by hand should say so and stop; a
re-planning service must not: a cycle that fails keeps the old reservations and quotas in force
until the jobs end. So the cycle caps each service's demand, slot by slot, at the replicas that
still fit (packed as the compiler checks it), plans that, and says where the forecast will be
short.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance, required_replicas
from horizon_opt.model.load import parse_spec
from horizon_opt.model.packing import pack


def capped(document: dict[str, Any], demands: dict[int, list[float]]) -> tuple[Instance, list[str]]:
    """The instance of `document` with every service's demand cut to what fits beside the
    placed jobs (`demands`: per service index, its demand series, read from its CSV or inline),
    and one warning per service that was cut. Other problems raise InstanceError as usual."""
    spec = parse_spec(document)
    series: dict[int, list[float]] = {
        i: [float(x) for x in (demands[i] if i in demands else _inline(s.demand))]
        for i, s in enumerate(spec.services)
    }
    probe = compile_instance(spec, {i: [0.0] * len(v) for i, v in series.items()})
    req = {i: required_replicas(v, spec.services[i].headroom) for i, v in series.items()}
    cuts: list[tuple[str, int, int]] = []  # (service, slot, replicas short)
    for pool in probe.pools:
        members = [s for s in probe.services if s.pool == pool.index]
        rows = slice(pool.first_node, pool.first_node + pool.nodes)
        free_all = probe.up[rows].astype(np.int64) * pool.gpus_per_node - probe.placed_gpus[rows]
        for t in range(probe.slots):
            wanted = [(s.gpus_per_replica, int(req[s.index][t])) for s in members]
            placed, _ = pack(free_all[:, t], wanted)
            for k, s in enumerate(members):
                fits = int(placed[k].sum())
                if fits < wanted[k][1]:
                    series[s.index][t] = max(fits / (1 + s.headroom) - 1e-9, 0.0)
                    cuts.append((s.name, t, wanted[k][1] - fits))
    return compile_instance(spec, series), _summary(cuts)


def _inline(demand: object) -> list[float]:
    """A service's inline demand series (a CSV one is in `demands`)."""
    assert isinstance(demand, list)
    return [float(x) for x in demand]


def _summary(cuts: list[tuple[str, int, int]]) -> list[str]:
    """One line per service: at which slots the forecast is short, and by how many replicas."""
    by_service: dict[str, list[tuple[int, int]]] = {}
    for name, slot, short in cuts:
        by_service.setdefault(name, []).append((slot, short))
    return [
        f"service {name!r}: the forecast needs more replicas than fit beside the running jobs at "
        f"{len(slots)} slot(s) from slot {slots[0][0]} (up to {max(n for _, n in slots)} short): "
        "planned with what fits; inference will be short there until they end"
        for name, slots in by_service.items()
    ]


def required_now(
    document: dict[str, Any], demands: dict[int, list[float]], now: int
) -> dict[str, int]:
    """GPUs each service's forecast (with headroom) requires at slot `now`, before any cut:
    what the metrics report beside what is reserved."""
    spec = parse_spec(document)
    out = {}
    for i, s in enumerate(spec.services):
        series = [float(x) for x in (demands[i] if i in demands else _inline(s.demand))]
        if 0 <= now < len(series):
            out[s.name] = int(required_replicas(series, s.headroom)[now]) * s.gpus_per_replica
    return out
