"""Shared pieces of the plan charts: figures on matplotlib's Agg canvas (`new_figure`), the time
axis, titles and legends, and writing a figure as PNG or SVG (`save_figure`, `render`).

matplotlib is imported inside the functions, on first use only.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from horizon_opt.errors import InputError
from horizon_opt.io import write_atomic
from horizon_opt.model.instance import Instance
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Plan

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CHART_FORMATS = (".png", ".svg")
WIDTH_IN = 14.0
DPI = 100


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
