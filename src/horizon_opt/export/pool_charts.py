"""Charts per pool over time: the stacked utilization chart of a plan (`plot_utilization`) and the
capacity-price heatmap (`plot_prices`).

Utilization chart: per pool (and for the whole cluster when there are several pools), GPUs over
time as stacked areas: forecast inference demand, inference reservation above the forecast, batch
work by kind, idle. The forecast line, the required reservation (forecast plus headroom, in whole
replicas) and the GPUs that are up are drawn on top.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from horizon_opt.errors import InputError
from horizon_opt.export._common import (
    IDLE_COLOR,
    INFERENCE_COLOR,
    KIND_COLORS,
    KIND_LABELS,
    RESERVED_COLOR,
    FloatArray,
    NodeUse,
    ensure_plan_fits,
    node_use,
    pool_demand,
    pool_required,
)
from horizon_opt.export.figures import (
    WIDTH_IN,
    _legend_patch,
    _Time,
    _time,
    _time_axis,
    _title,
    _title_and_legend,
    new_figure,
)
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import JOB_KINDS
from horizon_opt.plans.plan import Plan

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from horizon_opt.analysis.prices import CapacityPrices


def plot_utilization(
    instance: Instance,
    plan: Plan,
    ax: Axes | Sequence[Axes] | None = None,
    *,
    pool: str | None = None,
) -> Figure:
    """Draw GPUs over time as stacked areas (see the module docstring). Returns the figure.

    With `ax=None`: a new figure with one panel per pool, plus one for the whole cluster first when
    there are several pools (`pool=` keeps only that pool). With one Axes: the whole cluster, or
    `pool`. With a sequence of Axes: one pool each, in the instance's pool order.
    """
    ensure_plan_fits(instance, plan)
    if pool is not None and pool not in instance.pool_index:
        raise InputError([f"pool: unknown pool {pool!r}"])
    selected: list[int | None]
    if pool is not None:
        selected = [instance.pool_index[pool]]
    elif ax is None or isinstance(ax, Sequence):
        selected = [p.index for p in instance.pools]
        if ax is None and len(instance.pools) > 1:
            selected.insert(0, None)
    else:
        selected = [None]
    own = ax is None
    axes: list[Axes]
    if ax is None:
        fig = new_figure(WIDTH_IN, 1.3 + 2.7 * len(selected))
        first = fig.add_subplot(len(selected), 1, 1)
        axes = [first] + [
            fig.add_subplot(len(selected), 1, k + 1, sharex=first) for k in range(1, len(selected))
        ]
    elif isinstance(ax, Sequence):
        axes = list(ax)
        if len(axes) != len(selected):
            raise ValueError(f"need {len(selected)} axes (one per pool), got {len(axes)}")
    else:
        axes = [ax]
    figure = axes[0].get_figure(root=True)
    assert figure is not None
    use = node_use(instance, plan)
    tm = _time(instance)
    handles: list[Any] = []
    for k, (axis, p) in enumerate(zip(axes, selected, strict=True)):
        handles = _draw_pool_use(axis, instance, use, p, tm, label=k == len(axes) - 1)
    _title_and_legend(figure, axes[0], _title(instance, plan) if own else None, handles, columns=6)
    return figure


def _draw_pool_use(
    ax: Axes, instance: Instance, use: NodeUse, pool: int | None, tm: _Time, label: bool
) -> list[Any]:
    from matplotlib.lines import Line2D

    S = instance.slots
    h = instance.hours_per_slot
    nodes = (
        list(range(instance.num_nodes)) if pool is None else list(instance.pools[pool].node_range)
    )
    cap = use.capacity[nodes].sum(0)
    planned = use.planned[nodes].sum(0)
    demand = pool_demand(instance, pool)
    required = pool_required(instance, pool)
    kinds = [k for k in JOB_KINDS if any(j.kind == k for j in instance.jobs)]
    batch = {k: use.batch[k][nodes].sum(0) for k in kinds}
    layers: list[tuple[str, FloatArray, str]] = [
        ("inference (forecast demand)", np.minimum(demand, planned), INFERENCE_COLOR),
        ("inference reserved above forecast", np.maximum(planned - demand, 0), RESERVED_COLOR),
    ]
    layers += [(KIND_LABELS[k], batch[k], KIND_COLORS[k]) for k in kinds]
    used = sum((layer[1] for layer in layers), start=np.zeros(S))
    layers.append(("idle", np.maximum(cap - used, 0), IDLE_COLOR))
    xs = np.array([tm.x(t) for t in range(S + 1)])

    def ext(a: FloatArray) -> FloatArray:
        return np.append(a, a[-1])

    handles: list[Any] = []
    bottom = np.zeros(S)
    for name, values, color in layers:
        ax.fill_between(
            xs, ext(bottom), ext(bottom + values), step="post", facecolor=color, lw=0, zorder=1
        )
        handles.append(
            _legend_patch(name, color, **({"edgecolor": "#cccccc"} if name == "idle" else {}))
        )
        bottom = bottom + values
    ax.step(xs, ext(cap), where="post", color="black", lw=1.0, zorder=3)
    ax.step(xs, ext(required), where="post", color="#7a2a28", lw=1.0, ls="--", zorder=3)
    ax.step(xs, ext(demand), where="post", color="black", lw=1.6, zorder=4)
    handles += [
        Line2D([], [], color="black", lw=1.6, label="forecast inference demand"),
        Line2D([], [], color="#7a2a28", lw=1.0, ls="--", label="required (forecast + headroom)"),
        Line2D([], [], color="black", lw=1.0, label="GPUs up"),
    ]
    available = float(cap.sum()) * h
    batch_h = float(sum((b.sum() for b in batch.values()), start=0.0)) * h
    inference_h = float(demand.sum()) * h
    idle_reserved = float(np.maximum(planned - demand, 0).sum()) * h
    util = (batch_h + inference_h) / available if available > 0 else 0.0
    if pool is None:
        name = f"all pools ({instance.num_nodes} nodes)"
    else:
        p = instance.pools[pool]
        name = f"{p.name} ({p.gpu_type}, {p.nodes} nodes x {p.gpus_per_node} GPUs)"
    ax.set_title(
        f"{name}: utilization {100 * util:.1f}% (batch {100 * batch_h / max(available, 1e-9):.1f}%, "
        f"inference {100 * inference_h / max(available, 1e-9):.1f}%), "
        f"reserved idle {idle_reserved:,.0f} GPU-h",
        fontsize=9,
        loc="left",
    )
    ax.set_ylabel("GPUs")
    top = float(np.max(instance.node_gpus[nodes]) * len(nodes))
    ax.set_ylim(0, top * 1.04)
    _time_axis(ax, instance, tm, label=label)
    if not label:
        ax.tick_params(axis="x", labelbottom=False)
    ax.grid(axis="both", color="#bbbbbb", linewidth=0.5, alpha=0.5)
    ax.set_axisbelow(False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return handles


def plot_prices(instance: Instance, prices: CapacityPrices, ax: Axes | None = None) -> Axes:
    """A heatmap of the node price, pool x time: when one more node of each pool adds most to
    the LP bound (see `prices.py`). Draws into `ax` when given, else into a new figure; returns
    the axes.

    One LP vertex's duals put a stretch's price on a few of its slots, so the map is spiky:
    read it by stretches, and the pool totals (on the labels) as the figures to quote.
    """
    P, S = prices.node.shape
    if ax is None:
        ax = new_figure(WIDTH_IN, 1.4 + 0.45 * P).add_subplot(1, 1, 1)
    figure = ax.get_figure(root=True)
    assert figure is not None
    tm = _time(instance)
    xs = np.array([tm.x(t) for t in range(S + 1)])
    top = float(prices.node.max(initial=0.0))
    mesh = ax.pcolormesh(
        xs, np.arange(P + 1), prices.node, cmap="Reds", vmin=0.0, vmax=top if top > 0 else 1.0
    )
    ax.set_yticks(
        np.arange(P) + 0.5,
        labels=[
            f"{name}  +{total:,.0f}"
            for name, total in zip(prices.pools, prices.node_total, strict=True)
        ],
    )
    ax.set_ylim(P, 0)
    _time_axis(ax, instance, tm)
    figure.colorbar(mesh, ax=ax, label="pwo per node-slot", pad=0.01)
    state = "" if prices.converged else ", LP stopped early"
    ax.set_title(
        f"{instance.name}: what one more node of each pool adds to the bound, per slot "
        f"(total on the left; LP bound {prices.bound:,.0f}{state})",
        fontsize=9,
        loc="left",
    )
    return ax
