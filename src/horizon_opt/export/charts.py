"""Charts of a plan: the Gantt chart of nodes and GPUs, and `chart`/`write_chart` for either kind.

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
The utilization chart and the price heatmap are in `pool_charts`, the shared figure helpers in
`figures`; their names are re-exported here.
"""

from __future__ import annotations

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
    FloatArray,
    ensure_plan_fits,
    index_runs,
    node_use,
    shade,
)
from horizon_opt.export.figures import (
    CHART_FORMATS,
    DPI,
    WIDTH_IN,
    _legend_patch,
    _rect,
    _runs,
    _text_color,
    _Time,
    _time,
    _time_axis,
    _title,
    _title_and_legend,
    new_figure,
    render,
    save_figure,
)
from horizon_opt.export.pool_charts import plot_prices, plot_utilization
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import JOB_KINDS
from horizon_opt.plans.plan import Plan

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "CHART_FORMATS",
    "DPI",
    "INFERENCE_PALETTE",
    "MAX_NODE_ROWS",
    "WIDTH_IN",
    "ChartKind",
    "chart",
    "new_figure",
    "plot_gantt",
    "plot_prices",
    "plot_utilization",
    "render",
    "save_figure",
    "write_chart",
]

MAX_NODE_ROWS = 150  # above this many nodes the Gantt chart groups nodes into rows
INFERENCE_PALETTE = ("#e15759", "#ff9d9a", "#d37295", "#fabfd2", "#a8323e")
ChartKind = Literal["gantt", "utilization"]
_ROW_PAD = 0.06  # empty space above and below the GPU lanes of a node row
_POOL_GAP = 1.0  # height of the pool header above each group of rows


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


def _draw_nodes(ax: Axes, instance: Instance, plan: Plan, rows: _Rows, tm: _Time) -> list[Any]:
    down = _draw_background(ax, instance, rows, tm)
    _draw_inference(ax, instance, plan, rows, tm)
    _draw_jobs(ax, instance, plan, rows, tm)
    # Node separators.
    for n in range(instance.num_nodes):
        ax.axhline(rows.top[n] + 1, color="white", linewidth=0.6, zorder=3.5)
    return _node_legend(instance, down)


def _lane(instance: Instance, rows: _Rows, node: int, first: int, last: int) -> tuple[float, float]:
    """Where GPUs `first` to `last` of a node run in its row, bottom and top."""
    lane_h = 1.0 - 2 * _ROW_PAD
    g = int(instance.node_gpus[node])
    top = rows.top[node] + _ROW_PAD
    return top + first * lane_h / g, top + (last + 1) * lane_h / g


def _draw_background(ax: Axes, instance: Instance, rows: _Rows, tm: _Time) -> bool:
    """Idle GPUs under everything, outages hatched over it; whether any node is ever down."""
    from matplotlib.collections import PolyCollection

    x0, xS = tm.x(0), tm.x(instance.slots)
    ax.add_collection(
        PolyCollection(
            [
                _rect(x0, xS, *_lane(instance, rows, n, 0, int(instance.node_gpus[n]) - 1))
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
    return bool(down)


def _draw_inference(ax: Axes, instance: Instance, plan: Plan, rows: _Rows, tm: _Time) -> None:
    """Inference replicas on the lanes jobs leave free."""
    from matplotlib.collections import PolyCollection

    inf_verts: list[list[tuple[float, float]]] = []
    inf_colors: list[str] = []
    for n in range(instance.num_nodes):
        for v, grid in _inference_lanes(instance, plan, n).items():
            for g in range(grid.shape[0]):
                for t0, t1 in _runs(grid[g] > 0):
                    inf_verts.append(_rect(tm.x(t0), tm.x(t1), *_lane(instance, rows, n, g, g)))
                    inf_colors.append(INFERENCE_PALETTE[v % len(INFERENCE_PALETTE)])
    if inf_verts:
        ax.add_collection(
            PolyCollection(inf_verts, facecolors=inf_colors, edgecolors="none", zorder=2)
        )


def _draw_jobs(ax: Axes, instance: Instance, plan: Plan, rows: _Rows, tm: _Time) -> None:
    """Jobs: one bar per contiguous run of GPU indices on each node, shaded by priority, each
    job's id in its tallest bar."""
    from matplotlib.collections import PolyCollection

    low, high = _priority_range(instance)
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
                y0, y1 = _lane(instance, rows, n, g0, g1)
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
    _label_bars(ax, labels, tm.x(instance.slots) - tm.x(0), rows.height)


def _priority_range(instance: Instance) -> tuple[float, float]:
    """The lowest and highest job priority (1 and 1 without jobs): the ends of the shading."""
    priorities = [j.priority for j in instance.jobs] or [1.0]
    return min(priorities), max(priorities)


def _node_legend(instance: Instance, down: bool) -> list[Any]:
    """Legend entries: the kinds present, the priority shades, the services, idle and down."""
    low, high = _priority_range(instance)
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
