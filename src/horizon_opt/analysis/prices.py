"""Capacity prices: what one more GPU, or one more node, of a pool could add to pwo, per slot.

They come from the time-indexed LP's duals (`relaxation/`), those that certify its bound. The
certificate L(y) = free.y + whole.yw + sum_j max(0, max rc_j) is linear in the capacity for
fixed duals, so with D more GPUs at free[p, t] the same duals certify bound + y[p, t] D: a price
is an upper estimate of how much the relaxation's bound can rise, exact for small changes when
the duals are unique. One more node of pool p adds G GPUs to free[p, t] and one node to
whole[p, t] at every slot from `now` (the past cannot gain capacity), so its price at slot t is
G y[p, t] + yw[p, t].

That holds for the runs the LP has. One more node can also make room for runs that fit nowhere
now (a gang larger than what inference leaves free at a peak): the duals say nothing about those,
so where such runs exist (`unpriced_jobs`) the node price is no upper estimate and may be low.
The prices bound the change of the relaxation, not of a plan's pwo: benchmarks/prices.py
measures how well they predict re-solved plans.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import time as dt_time
from typing import Any

import numpy as np

from horizon_opt.model.instance import FloatArray, Instance
from horizon_opt.relaxation import pool_free_gpus, solve_lp
from horizon_opt.times import iso

WINDOWS = 8  # the horizon is cut into this many windows to say when capacity is worth most
PEAK_WINDOWS = 3  # windows named per pool


@dataclass(frozen=True)
class CapacityPrices:
    """The marginal pwo of capacity, per pool and slot, from the LP whose bound is `bound`."""

    pools: tuple[str, ...]
    gpu: FloatArray  # [P, S] one more GPU of pool p at slot t
    node: FloatArray  # [P, S] one more node of pool p at slot t
    bound: float  # the LP bound that the duals certify
    converged: bool  # False: the LP stopped at its time limit; the prices are rougher
    seconds: float
    # per pool: jobs that one more node gives runs they have nowhere now (not priced)
    unpriced_jobs: tuple[int, ...]

    @property
    def gpu_total(self) -> FloatArray:
        """[P] one more GPU for the whole horizon."""
        out: FloatArray = self.gpu.sum(axis=1)
        return out

    @property
    def node_total(self) -> FloatArray:
        """[P] one more node for the whole horizon."""
        out: FloatArray = self.node.sum(axis=1)
        return out


def capacity_prices(instance: Instance, time_limit: float) -> CapacityPrices:
    """The prices from the time-indexed LP, solved for at most about `time_limit` seconds.

    When the LP stops early its duals still certify its bound, but they are those of a partial
    master, so the prices are rougher (`converged` says which).
    """
    relaxation = solve_lp(instance, time.perf_counter() + max(0.0, time_limit))
    duals = relaxation.lp.duals
    G = np.array([p.gpus_per_node for p in instance.pools], dtype=np.float64)[:, None]
    future = np.arange(instance.slots) >= instance.now
    gpu = np.where(future, duals.y, 0.0)
    node = np.where(future, G * duals.y + duals.yw, 0.0)
    gpu.setflags(write=False)
    node.setflags(write=False)
    return CapacityPrices(
        pools=tuple(p.name for p in instance.pools),
        gpu=gpu,
        node=node,
        bound=relaxation.lp.bound,
        converged=relaxation.lp.converged,
        seconds=relaxation.seconds,
        unpriced_jobs=jobs_with_new_runs(instance),
    )


def jobs_with_new_runs(instance: Instance) -> tuple[int, ...]:
    """Per pool, the jobs that one more node would give runs the relaxation does not have.

    The same filter as `build_columns` (a run fits alone next to the required inference), with
    the extra node's GPUs from `now` on. (A gang that needs every node of the pool plus one is
    not counted: the compiled instance no longer lists the pool for it.)
    """
    free = pool_free_gpus(instance)
    future = np.arange(instance.slots) >= instance.now
    counts = [0] * len(instance.pools)
    for job, window in zip(instance.jobs, instance.windows, strict=True):
        for p, d in job.durations.items():
            starts = window.allowed(d, window.ready, window.useful_end).array()
            if not len(starts):
                continue
            more = free[p] + instance.pools[p].gpus_per_node * future
            now_blocked = np.r_[0, np.cumsum(free[p] < job.gpus)]
            more_blocked = np.r_[0, np.cumsum(more < job.gpus)]
            fits_now = now_blocked[starts + d] == now_blocked[starts]
            fits_more = more_blocked[starts + d] == more_blocked[starts]
            counts[p] += bool(np.any(fits_more & ~fits_now))
    return tuple(counts)


def peak_windows(prices: CapacityPrices, pool: int) -> list[tuple[int, int, float]]:
    """(start, end, share of the pool's node price) of the WINDOWS windows of the horizon worth
    most, most first, up to PEAK_WINDOWS of them (none when the price is 0).

    Windows rather than slots: the duals of an LP vertex put the price on a few slots of a
    stretch where capacity binds, and another optimal vertex may pick other slots of it.
    """
    row = prices.node[pool]
    total = float(row.sum())
    if total <= 0:
        return []
    S = len(row)
    size = max(1, round(S / WINDOWS))
    windows = [
        (a, min(S, a + size), float(row[a : a + size].sum()) / total) for a in range(0, S, size)
    ]
    windows.sort(key=lambda w: -w[2])
    return [w for w in windows[:PEAK_WINDOWS] if w[2] > 0]


def _span(instance: Instance, start: int, end: int) -> str:
    """Slots [start, end) as times (UTC) when the horizon has a start, else as slot numbers."""
    first, last = instance.slot_time(start), instance.slot_time(end)
    if first is None or last is None:
        return f"slot {start}" if end == start + 1 else f"slots {start}-{end - 1}"
    days = (last.date() - first.date()).days
    if days == 0 or (days == 1 and last.time() == dt_time(0)):
        tail = "24:00" if days else f"{last:%H:%M}"
    else:
        tail = f"{last:%m-%d %H:%M}"
    return f"{first:%m-%d %H:%M}-{tail}"


def _pwo(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.2g}"


def _table(rows: Sequence[Sequence[str]], left: set[int]) -> list[str]:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if k in left else c.rjust(w)
            for k, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in rows
    ]


def format_prices(instance: Instance, prices: CapacityPrices) -> str:
    """A table per pool, when capacity is worth most, and a one-line reading (`whatif --prices`)."""
    state = "converged" if prices.converged else "stopped at its time limit: rougher prices"
    since = f" from slot {instance.now}" if instance.now else ""
    lines = [
        f"Capacity prices from the time-indexed LP (bound {prices.bound:,.1f} pwo, {state}, "
        f"{prices.seconds:.1f}s):",
        f"what one more GPU or node of a pool, over the whole horizon{since}, adds to the bound"
        " at most.",
        "",
    ]
    rows = [("pool", "GPUs/node", "+1 GPU", "+1 node", "worth most at")]
    for p, name in enumerate(prices.pools):
        windows = peak_windows(prices, p)
        rows.append(
            (
                name,
                str(instance.pools[p].gpus_per_node),
                f"+{prices.gpu_total[p]:,.1f}",
                f"+{prices.node_total[p]:,.1f}",
                ", ".join(f"{_span(instance, a, b)} ({s:.0%})" for a, b, s in windows) or "-",
            )
        )
    lines += [*_table(rows, {0, 4}), ""]
    order = sorted(range(len(prices.pools)), key=lambda p: -float(prices.node_total[p]))
    if not order or prices.node_total[order[0]] <= 0:
        lines.append("No pool's capacity binds in the LP: one more node adds nothing it prices.")
    else:
        first, *rest = order
        more = "".join(
            f"; one more {prices.pools[p]} node +{_pwo(prices.node_total[p])}" for p in rest
        )
        lines.append(
            f"One more {prices.pools[first]} node is worth about "
            f"+{_pwo(prices.node_total[first])} pwo over this horizon{more}."
        )
    for p, count in enumerate(prices.unpriced_jobs):
        if count:
            lines.append(
                f"{prices.pools[p]}: one more node also gives {count} job{'s' if count != 1 else ''}"
                " runs that do not fit now; the price leaves those out and may be low."
            )
    utc = ", times in UTC" if instance.start is not None else ""
    lines.append(f"(worth most at: the parts of the horizon with most of the node price{utc})")
    return "\n".join(lines)


def prices_to_json(instance: Instance, prices: CapacityPrices) -> dict[str, Any]:
    """The prices as plain data for scripts: totals, per-slot prices and peak ranges per pool."""
    return {
        "bound": prices.bound,
        "converged": prices.converged,
        "seconds": prices.seconds,
        "now": instance.now,
        "slot_minutes": instance.slot_minutes,
        "start": None if instance.start is None else iso(instance.start),
        "pools": [
            {
                "name": name,
                "gpus_per_node": instance.pools[p].gpus_per_node,
                "gpu_total": float(prices.gpu_total[p]),
                "node_total": float(prices.node_total[p]),
                "unpriced_jobs": prices.unpriced_jobs[p],
                "peaks": [
                    {"start": a, "end": b, "share": share}
                    for a, b, share in peak_windows(prices, p)
                ],
                "gpu": prices.gpu[p].tolist(),
                "node": prices.node[p].tolist(),
            }
            for p, name in enumerate(prices.pools)
        ],
    }
