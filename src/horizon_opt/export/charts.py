"""Charts of a plan: a Gantt chart of nodes and GPUs, and a stacked utilization chart per pool.

Drawn with matplotlib's object API on the Agg canvas: no pyplot, no global state, nothing ever
shown on screen, so the functions are safe in servers, tests and notebooks alike (pass `ax=` to
draw into a notebook's own axes). matplotlib is imported on first use only, which keeps
`import horizon_opt` fast.

Gantt chart: one row per node, grouped by pool (pool header above each group); inside a row each
GPU of the node is a thin lane, so a job's bar covers exactly the GPU indices it holds. Bars are
coloured by kind and shaded by priority (lighter = lower priority); inference replicas are red
bands on the GPUs that jobs leave free (replicas have no GPU indices in a plan, so the chart puts
them on the highest free lanes); outages are hatched. Job ids are written in the bars wide and tall
enough to hold them. Up to `MAX_NODE_ROWS` nodes every node gets its row (100 nodes and 1,000 jobs
stay readable: the figure grows with the node count); beyond that the chart aggregates: each row is
a group of consecutive nodes of one pool, and shows at every slot the share of the group's GPUs
used by each kind, by inference, down, or idle.

Utilization chart: per pool (and for the whole cluster when there are several pools), GPUs over
time as stacked areas: forecast inference demand, inference reservation above the forecast, batch
work by kind, idle. The forecast line, the required reservation (forecast plus headroom, in whole
replicas) and the GPUs that are up are drawn on top.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from horizon_opt.errors import InputError
from horizon_opt.export._common import (
    DOWN_COLOR,
    IDLE_COLOR,
    INFERENCE_COLOR,
    KIND_COLORS,
    KIND_LABELS,
    RESERVED_COLOR,
    FloatArray,
    NodeUse,
    ensure_plan_fits,
    index_runs,
    node_use,
    pool_demand,
    pool_required,
    shade,
)
from horizon_opt.instance import Instance
from horizon_opt.io import write_atomic
from horizon_opt.metrics import evaluate
from horizon_opt.plan import Plan
from horizon_opt.spec import JOB_KINDS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from horizon_opt.prices import CapacityPrices

MAX_NODE_ROWS = 150  # above this many nodes the Gantt chart groups nodes into rows
INFERENCE_PALETTE = ("#e15759", "#ff9d9a", "#d37295", "#fabfd2", "#a8323e")
ChartKind = Literal["gantt", "utilization"]
CHART_FORMATS = (".png", ".svg")
WIDTH_IN = 14.0
DPI = 100
_ROW_PAD = 0.06  # empty space above and below the GPU lanes of a node row
_POOL_GAP = 1.0  # height of the pool header above each group of rows


# -- shared helpers ----------------------------------------------------------------------------


def new_figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


@dataclass(frozen=True)
class _Time:
    """Slots -> x: matplotlib date numbers when the horizon has a start, slot numbers otherwise."""

    base: float
    per_slot: float
    dates: bool

    def x(self, slot: float) -> float:
        return self.base + slot * self.per_slot


def _time(instance: Instance) -> _Time:
    if instance.start is None:
        return _Time(0.0, 1.0, False)
    from matplotlib.dates import date2num

    base = float(date2num(instance.start))  # type: ignore[no-untyped-call]
    return _Time(base, instance.slot_minutes / 1440, True)


def _time_axis(ax: Axes, instance: Instance, tm: _Time, label: bool = True) -> None:
    ax.set_xlim(tm.x(0), tm.x(instance.slots))
    if tm.dates:
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

        locator = AutoDateLocator(minticks=5, maxticks=14)  # type: ignore[no-untyped-call]
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
        if label:
            ax.set_xlabel("time (UTC)")
    elif label:
        ax.set_xlabel(f"slot ({instance.slot_minutes} min each)")


def _runs(mask: np.ndarray[Any, np.dtype[np.bool_]]) -> list[tuple[int, int]]:
    """[start, end) of each run of True in a 1-D mask."""
    padded = np.concatenate(([False], mask, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _rect(x0: float, x1: float, y0: float, y1: float) -> list[tuple[float, float]]:
    return [(x0, y0), (x0, y1), (x1, y1), (x1, y0)]


def _text_color(rgb: tuple[float, float, float]) -> str:
    r, g, b = rgb
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.55 else "black"


def _title(instance: Instance, plan: Plan) -> str:
    m = evaluate(instance, plan)
    return (
        f"{instance.name}: {plan.solver} plan ({plan.status}) - pwo {m.pwo:,.0f}, "
        f"utilization {100 * m.utilization:.1f}%, {m.completed} of {len(instance.jobs)} jobs on time"
    )


def save_figure(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write a figure as PNG or SVG (by the file's extension), atomically."""
    target = Path(path)
    fmt = target.suffix.lower()
    if fmt not in CHART_FORMATS:
        raise InputError(
            [f"{target}: unknown extension {target.suffix or '(none)'!r}; use .png or .svg"]
        )
    write_atomic(target, render(fig, fmt[1:]))
    return target


def render(fig: Figure, fmt: str = "png") -> bytes:
    """The figure's bytes as PNG or SVG, with no links or dates in the file's metadata."""
    buf = io.BytesIO()
    if fmt == "svg":
        meta: dict[str, Any] = {"Date": None, "Creator": "horizon-opt"}
    else:
        meta = {"Software": "horizon-opt"}
    fig.savefig(buf, format=fmt, dpi=DPI, metadata=meta)
    return buf.getvalue()


# -- Gantt chart -------------------------------------------------------------------------------


@dataclass
class _Rows:
    """Vertical layout: the top y of each row, and the pool headers."""

    top: list[float]  # per row
    labels: list[str]
    headers: list[tuple[float, str]]  # (y of the header's middle, text)
    height: float  # total y extent


def _layout(instance: Instance, groups: Sequence[Sequence[int]]) -> _Rows:
    top: list[float] = []
    labels: list[str] = []
    headers: list[tuple[float, str]] = []
    y = 0.0
    last_pool = -1
    for group in groups:
        pool = instance.pools[int(instance.node_pool[group[0]])]
        if pool.index != last_pool:
            headers.append(
                (
                    y + _POOL_GAP / 2,
                    f"{pool.name}  ({pool.gpu_type}, {pool.nodes} nodes x {pool.gpus_per_node} GPUs)",
                )
            )
            y += _POOL_GAP
            last_pool = pool.index
        top.append(y)
        first, last = instance.node_names[group[0]], instance.node_names[group[-1]]
        labels.append(first if len(group) == 1 else f"{first}..{last.rsplit('-', 1)[1]}")
        y += 1.0
    return _Rows(top, labels, headers, y)


def _groups(instance: Instance) -> list[list[int]]:
    """Rows of the chart: one node each, or consecutive nodes of a pool when there are many."""
    per_row = max(1, math.ceil(instance.num_nodes / MAX_NODE_ROWS))
    groups: list[list[int]] = []
    for pool in instance.pools:
        nodes = list(pool.node_range)
        groups += [nodes[k : k + per_row] for k in range(0, len(nodes), per_row)]
    return groups


def _inference_lanes(
    instance: Instance, plan: Plan, node: int
) -> dict[int, np.ndarray[Any, np.dtype[np.int64]]]:
    """Per service index: [G, S] bool-as-int grid of the GPU lanes its replicas are drawn on."""
    G, S = int(instance.node_gpus[node]), instance.slots
    name = instance.node_names[node]
    held = np.zeros((G, S), dtype=np.bool_)
    for a in plan.assignments:
        idx = a.gpus.get(name)
        if idx:
            held[idx, a.start : a.end] = True
    services = {s.name: s for s in instance.services}
    count = {s.index: np.zeros(S, dtype=np.int64) for s in instance.services}
    for b in plan.inference:
        if b.node == name:
            s = services[b.service]
            count[s.index][b.start : b.end] += b.replicas * s.gpus_per_replica
    lanes = {v: np.zeros((G, S), dtype=np.int64) for v, c in count.items() if c.any()}
    if not lanes:
        return lanes
    total = sum(count[v] for v in lanes)
    for t in np.flatnonzero(total):
        free = list(np.flatnonzero(~held[:, t]))
        for v in lanes:
            c = int(count[v][t])
            take = free[len(free) - c :] if c else []
            free = free[: len(free) - len(take)]
            lanes[v][take, t] = 1
    return lanes


def plot_gantt(instance: Instance, plan: Plan, ax: Axes | None = None) -> Figure:
    """Draw the plan as a Gantt chart (see the module docstring). Returns the figure.

    With `ax=None` a new figure is sized to the cluster (14 in wide, about 0.16-0.5 in per node).
    Raises PlanError when the plan names jobs, nodes or services the instance does not have.
    """
    ensure_plan_fits(instance, plan)
    groups = _groups(instance)
    rows = _layout(instance, groups)
    own = ax is None
    if ax is None:
        per_row = min(0.5, max(0.16, 9.0 / len(groups)))
        fig = new_figure(WIDTH_IN, 1.6 + per_row * rows.height)
        ax = fig.add_subplot()
    figure = ax.get_figure(root=True)
    assert figure is not None
    tm = _time(instance)
    aggregated = any(len(g) > 1 for g in groups)
    handles = (
        _draw_aggregated(ax, instance, plan, groups, rows, tm)
        if aggregated
        else _draw_nodes(ax, instance, plan, rows, tm)
    )
    ax.set_ylim(rows.height, 0)
    ax.set_yticks([t + 0.5 for t in rows.top], rows.labels)
    fontsize = 8 if len(rows.top) <= 40 else 6 if len(rows.top) <= 100 else 5
    ax.tick_params(axis="y", length=0, labelsize=fontsize)
    for y, text in rows.headers:
        ax.text(
            tm.x(0) + 0.003 * (tm.x(instance.slots) - tm.x(0)),
            y,
            text,
            va="center",
            ha="left",
            fontsize=8 if len(rows.top) <= 100 else 6,
            fontweight="bold",
        )
    _time_axis(ax, instance, tm)
    ax.grid(axis="x", color="#bbbbbb", linewidth=0.5, alpha=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    title = _title(instance, plan)
    if aggregated:
        per = max(len(g) for g in groups)
        title += f"\n(aggregated: each row is up to {per} nodes; bar height = share of their GPUs)"
    if not own:
        ax.set_title(title, fontsize=10)
    _title_and_legend(figure, ax, title if own else None, handles, columns=7)
    return figure


def _title_and_legend(
    figure: Figure, ax: Axes, title: str | None, handles: list[Any], columns: int
) -> None:
    """A figure of our own gets `title` on top and the legend below; a caller's axes get the
    legend beside them (title None)."""
    if title is None:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
        return
    figure.suptitle(title, fontsize=11)
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncol=min(len(handles), columns),
        fontsize=8,
        frameon=False,
    )


def _legend_patch(label: str, color: Any, **kw: Any) -> Any:
    from matplotlib.patches import Patch

    return Patch(facecolor=color, label=label, **kw)


def _draw_nodes(ax: Axes, instance: Instance, plan: Plan, rows: _Rows, tm: _Time) -> list[Any]:
    from matplotlib.collections import PolyCollection

    S = instance.slots
    x0, xS = tm.x(0), tm.x(S)
    lane_h = 1.0 - 2 * _ROW_PAD

    def lane(node: int, first: int, last: int) -> tuple[float, float]:
        g = int(instance.node_gpus[node])
        top = rows.top[node] + _ROW_PAD
        return top + first * lane_h / g, top + (last + 1) * lane_h / g

    # Background (idle GPUs) and outages.
    ax.add_collection(
        PolyCollection(
            [
                _rect(x0, xS, *lane(n, 0, int(instance.node_gpus[n]) - 1))
                for n in range(len(rows.top))
            ],
            facecolors=IDLE_COLOR,
            edgecolors="none",
            zorder=1,
        )
    )
    down = [
        _rect(tm.x(t0), tm.x(t1), rows.top[n] + _ROW_PAD / 2, rows.top[n] + 1 - _ROW_PAD / 2)
        for n in range(instance.num_nodes)
        for t0, t1 in _runs(~instance.up[n])
    ]
    if down:
        ax.add_collection(
            PolyCollection(
                down, facecolors="#dddddd", edgecolors=DOWN_COLOR, hatch="////", lw=0.5, zorder=4
            )
        )
    # Inference replicas on the lanes jobs leave free.
    inf_verts: list[list[tuple[float, float]]] = []
    inf_colors: list[str] = []
    for n in range(instance.num_nodes):
        for v, grid in _inference_lanes(instance, plan, n).items():
            for g in range(grid.shape[0]):
                for t0, t1 in _runs(grid[g] > 0):
                    inf_verts.append(_rect(tm.x(t0), tm.x(t1), *lane(n, g, g)))
                    inf_colors.append(INFERENCE_PALETTE[v % len(INFERENCE_PALETTE)])
    if inf_verts:
        ax.add_collection(
            PolyCollection(inf_verts, facecolors=inf_colors, edgecolors="none", zorder=2)
        )
    # Jobs: one bar per contiguous run of GPU indices on each node.
    priorities = [j.priority for j in instance.jobs] or [1.0]
    low, high = min(priorities), max(priorities)
    verts: list[list[tuple[float, float]]] = []
    colors: list[tuple[float, float, float]] = []
    labels: list[tuple[float, float, float, float, str, tuple[float, float, float]]] = []
    for a in plan.assignments:
        job = instance.jobs[instance.job_index[a.job]]
        color = shade(KIND_COLORS[job.kind], job.priority, low, high)
        biggest: tuple[float, float, float, float] | None = None
        for node, idx in a.gpus.items():
            n = instance.node_index[node]
            for g0, g1 in index_runs(idx):
                y0, y1 = lane(n, g0, g1)
                verts.append(_rect(tm.x(a.start), tm.x(a.end), y0, y1))
                colors.append(color)
                if biggest is None or y1 - y0 > biggest[3] - biggest[2]:
                    biggest = (tm.x(a.start), tm.x(a.end), y0, y1)
        if biggest is not None:
            labels.append((*biggest, a.job, color))
    if verts:
        ax.add_collection(
            PolyCollection(verts, facecolors=colors, edgecolors="white", linewidths=0.4, zorder=3)
        )
    _label_bars(ax, labels, xS - x0, rows.height)
    # Node separators.
    for n in range(instance.num_nodes):
        ax.axhline(rows.top[n] + 1, color="white", linewidth=0.6, zorder=3.5)

    handles = [
        _legend_patch(KIND_LABELS[k], KIND_COLORS[k])
        for k in JOB_KINDS
        if any(j.kind == k for j in instance.jobs)
    ]
    if high > low:
        first = next((j.kind for j in instance.jobs), "training")
        handles += [
            _legend_patch(
                f"priority {low:g} (lightest shade)", shade(KIND_COLORS[first], low, low, high)
            ),
            _legend_patch(
                f"priority {high:g} (full colour)", shade(KIND_COLORS[first], high, low, high)
            ),
        ]
    handles += [
        _legend_patch(f"inference: {s.name}", INFERENCE_PALETTE[s.index % len(INFERENCE_PALETTE)])
        for s in instance.services
    ]
    handles.append(_legend_patch("idle GPU", IDLE_COLOR, edgecolor="#cccccc"))
    if down:
        handles.append(
            _legend_patch("node down", "#dddddd", edgecolor=DOWN_COLOR, hatch="////", lw=0.5)
        )
    return handles


def _label_bars(
    ax: Axes,
    labels: list[tuple[float, float, float, float, str, tuple[float, float, float]]],
    xspan: float,
    yspan: float,
) -> None:
    """Write each job's id in its largest bar where it fits (shortened with '..' if need be)."""
    figure = ax.get_figure(root=True)
    assert figure is not None
    box = ax.get_position()  # before layout: a slight underestimate, so labels err on fitting
    width_pt = box.width * figure.get_figwidth() * 72
    height_pt = box.height * figure.get_figheight() * 72
    fontsize = 6.5
    char_pt = 0.58 * fontsize
    for x0, x1, y0, y1, text, color in labels:
        w_pt = (x1 - x0) / xspan * width_pt
        h_pt = (y1 - y0) / yspan * height_pt
        if h_pt < fontsize + 1.5:
            continue
        fits = int((w_pt - 4) // char_pt)
        if fits < min(len(text), 8):
            continue  # a stub of a few letters tells nothing
        shown = text if len(text) <= fits else text[: fits - 2] + ".."
        ax.text(
            x0 + (x1 - x0) * 0.5,
            (y0 + y1) / 2,
            shown,
            ha="center",
            va="center",
            fontsize=fontsize,
            color=_text_color(color),
            clip_on=True,
            zorder=5,
        )


def _draw_aggregated(
    ax: Axes,
    instance: Instance,
    plan: Plan,
    groups: Sequence[Sequence[int]],
    rows: _Rows,
    tm: _Time,
) -> list[Any]:
    use = node_use(instance, plan)
    S = instance.slots
    xs = np.array([tm.x(t) for t in range(S + 1)])
    kinds = [k for k in JOB_KINDS if any(j.kind == k for j in instance.jobs)]
    lane_h = 1.0 - 2 * _ROW_PAD

    def ext(a: FloatArray) -> FloatArray:
        return np.append(a, a[-1])

    for r, group in enumerate(groups):
        nodes = list(group)
        total = float(instance.node_gpus[nodes].sum())
        layers: list[tuple[FloatArray, dict[str, Any]]] = [
            (
                (total - use.capacity[nodes].sum(0)) / total,
                {"facecolor": "#dddddd", "edgecolor": DOWN_COLOR, "hatch": "////", "lw": 0},
            ),
            (use.planned[nodes].sum(0) / total, {"facecolor": INFERENCE_COLOR, "lw": 0}),
        ]
        layers += [
            (use.batch[k][nodes].sum(0) / total, {"facecolor": KIND_COLORS[k], "lw": 0})
            for k in kinds
        ]
        top = rows.top[r] + _ROW_PAD
        ax.fill_between(
            xs[[0, -1]], top, top + lane_h, facecolor=IDLE_COLOR, lw=0, zorder=1, step="post"
        )
        bottom = np.zeros(S)
        for share, style in layers:
            if not share.any():
                continue
            y_lo = top + lane_h * bottom
            y_hi = top + lane_h * (bottom + share)
            ax.fill_between(xs, ext(y_lo), ext(y_hi), step="post", zorder=2, **style)
            bottom = bottom + share
    handles = [_legend_patch(KIND_LABELS[k], KIND_COLORS[k]) for k in kinds]
    handles += [
        _legend_patch("inference (all services)", INFERENCE_COLOR),
        _legend_patch("idle GPU", IDLE_COLOR, edgecolor="#cccccc"),
    ]
    if not instance.up.all():
        handles.append(
            _legend_patch("node down", "#dddddd", edgecolor=DOWN_COLOR, hatch="////", lw=0.5)
        )
    return handles


# -- utilization chart -------------------------------------------------------------------------


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


def chart(instance: Instance, plan: Plan, kind: ChartKind) -> Figure:
    """The figure of one chart kind: 'gantt' or 'utilization'."""
    return plot_gantt(instance, plan) if kind == "gantt" else plot_utilization(instance, plan)


def write_chart(
    instance: Instance, plan: Plan, kind: ChartKind, path: str | os.PathLike[str]
) -> Path:
    """Draw one chart and write it as PNG or SVG (by extension), atomically."""
    target = Path(path)
    if target.suffix.lower() not in CHART_FORMATS:
        raise InputError(
            [f"{target}: unknown extension {target.suffix or '(none)'!r}; use .png or .svg"]
        )
    return save_figure(chart(instance, plan, kind), target)


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
