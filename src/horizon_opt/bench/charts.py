"""The PNG charts of a suite: by_family.png, scaling.png, anytime.png (matplotlib); ladder.png
for a closed-loop suite. The baseline and the optimizers charted come from the registry's flags
(roles.py)."""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from horizon_opt.bench import roles
from horizon_opt.bench.loop_summary import top_shares
from horizon_opt.bench.rows import LoopRow, SolverRow, by_instance
from horizon_opt.bench.suite import DEFAULT_SOLVERS
from horizon_opt.bench.summary import figure
from horizon_opt.generate import SIZES


def _median_by(
    rows: Sequence[SolverRow],
    family: str,
    solver: str,
    key: Callable[[SolverRow], float | None],
) -> float | None:
    vals = [
        v for r in rows if r.family == family and r.solver == solver and (v := key(r)) is not None
    ]
    return statistics.median(vals) if vals else None


def _dims(r: SolverRow) -> int:
    return r.jobs * r.slots * r.nodes


def write_charts(
    rows: Sequence[SolverRow], out: Path, anytime: Sequence[str] = (), base: str | None = None
) -> list[Path]:
    """by_family.png, scaling.png and anytime.png (when there is data for them); pwo relative
    to `base` (default: the registry's baseline)."""
    out.mkdir(parents=True, exist_ok=True)
    base = base if base is not None else roles.baseline()
    good = [r for r in rows if r.ok]
    solvers = [s for s in DEFAULT_SOLVERS if any(r.solver == s for r in good)]
    solvers += [s for s in dict.fromkeys(r.solver for r in good) if s not in solvers]
    best = roles.optimizers(solvers)
    cp = [r for r in good if r.solver in best]
    files: list[Path] = []
    if good:
        files.append(_by_family(good, solvers, base, out / "by_family.png"))
    if cp:
        files.append(_scaling(good, solvers, best, out / "scaling.png"))
    ran = {r.instance for r in cp}
    chosen = [name for name in anytime if name in ran] or _default_anytime(cp)
    curves = _anytime_curves(chosen, best, out / "progress")
    if curves:
        files.append(_anytime(curves, " and ".join(best), out / "anytime.png"))
    return files


def _by_family(good: Sequence[SolverRow], solvers: Sequence[str], base: str, path: Path) -> Path:
    """Utilization and pwo (relative to the baseline) by solver, per family."""
    from matplotlib.figure import Figure  # only the chart step needs matplotlib

    families = list(dict.fromkeys(r.family for r in good))
    base_pwo = {n: figure(r[base].pwo) for n, r in by_instance(good).items() if base in r}

    def rel(r: SolverRow) -> float | None:
        reference = base_pwo.get(r.instance)
        return figure(r.pwo) / reference if reference else None

    fig = Figure(figsize=(max(8.0, 2.6 * len(families) + 3), 4.2), layout="constrained")
    ax_u, ax_p = fig.subplots(1, 2)
    width = 0.8 / len(solvers)
    for k, solver in enumerate(solvers):
        xs = [i + (k - (len(solvers) - 1) / 2) * width for i in range(len(families))]
        utils = [
            _median_by(good, f, solver, lambda r: 100 * figure(r.utilization)) for f in families
        ]
        pwos = [_median_by(good, f, solver, rel) for f in families]
        bars = ax_u.bar(xs, [u or 0 for u in utils], width, label=solver)
        ax_u.bar_label(bars, labels=[f"{u:.0f}" if u else "" for u in utils], fontsize=6)
        bars = ax_p.bar(xs, [p or 0 for p in pwos], width, label=solver)
        ax_p.bar_label(bars, labels=[f"{p:.1f}" if p else "" for p in pwos], fontsize=6)
    for ax, title in (
        (ax_u, "utilization, % (median over instances)"),
        (ax_p, f"pwo relative to {base} (median over instances)"),
    ):
        ax.set_xticks(range(len(families)), families)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    ax_p.axhline(1.0, color="black", linewidth=0.8)
    ax_u.legend(fontsize=8, loc="lower right")
    fig.savefig(path, dpi=130)
    return path


def _scaling(
    good: Sequence[SolverRow], solvers: Sequence[str], best: Sequence[str], path: Path
) -> Path:
    """Against jobs x slots x nodes: the optimizers' gap and wall time, every other solver's
    wall time, every solver's peak memory."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    cp = [r for r in good if r.solver in best]
    named = " and ".join(best)
    fig = Figure(figsize=(10, 8.4), layout="constrained")
    (ax_g, ax_t), (ax_h, ax_m) = fig.subplots(2, 2)
    markers = dict(zip(SIZES, itertools.cycle("osD^vP"), strict=False))  # a marker per size
    colors = {f: f"C{k % 10}" for k, f in enumerate(dict.fromkeys(r.family for r in cp))}
    for r in cp:
        style = {"color": colors[r.family], "marker": markers.get(r.size, "o"), "alpha": 0.8}
        ax_g.scatter([_dims(r)], [100 * r.gap if r.gap is not None else 0.0], **style)
        ax_t.scatter([_dims(r)], [figure(r.wall_seconds)], **style)
    handles = [
        Line2D([], [], color=c, marker="o", linestyle="", label=f) for f, c in colors.items()
    ]
    handles += [
        Line2D([], [], color="grey", marker=m, linestyle="", label=s)
        for s, m in markers.items()
        if any(r.size == s for r in cp)
    ]
    ax_g.legend(handles=handles, fontsize=8)
    limits = ", ".join(f"{x:g}" for x in sorted({r.time_limit for r in cp}))
    for ax, title in (
        (ax_g, f"{named} gap to proven bound, %"),
        (ax_t, f"{named} wall time, s (time limits: {limits})"),
    ):
        ax.set_xscale("log")
        ax.set_xlabel("jobs x slots x nodes")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    ax_t.set_yscale("log")
    for k, solver in enumerate(solvers):
        mine = sorted((r for r in good if r.solver == solver), key=_dims)
        style = {"color": f"C{k % 10}", "marker": "o", "linestyle": "", "label": solver}
        if solver not in best:
            ax_h.plot([_dims(r) for r in mine], [figure(r.wall_seconds) for r in mine], **style)
        peaks = [r for r in mine if r.peak_mib is not None]
        if peaks:
            ax_m.plot([_dims(r) for r in peaks], [figure(r.peak_mib) for r in peaks], **style)
    for ax, title in ((ax_h, "other solvers' wall time, s"), (ax_m, "peak memory per run, MiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("jobs x slots x nodes")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    fig.savefig(path, dpi=130)
    return path


Curve = tuple[str, list[float], list[float]]  # label, solve times, gaps (%)


def _anytime_curves(chosen: Sequence[str], best: Sequence[str], progress: Path) -> list[Curve]:
    """Gap over solve time of the chosen instances' optimizer runs, from their progress events."""
    curves: list[Curve] = []
    for name, solver in itertools.product(chosen, best):
        path = progress / f"{name}-{solver}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        points = [(float(t), float(o), float(b)) for t, o, b in data["events"] if b is not None]
        wall, pwo, bound = data["final"]
        if bound is not None:
            points.append((float(wall), float(pwo), float(bound)))
        if points:
            ts = [p[0] for p in points]
            gs = [100 * (p[2] - p[1]) / max(p[2], 1e-9) for p in points]
            who = name if len(best) == 1 else f"{name} {solver}"
            curves.append((f"{who} (limit {data['time_limit']:g} s)", ts, gs))
    return curves


def _anytime(curves: Sequence[Curve], named: str, path: Path) -> Path:
    """The anytime chart: one step curve per run."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    for label, ts, gs in curves:
        ax.step(ts, gs, where="post", label=label, marker=".", markersize=3)
    ax.set_xlabel("solve time, s")
    ax.set_ylabel("gap to proven bound, %")
    ax.set_title(f"{named} anytime curve: gap over solve time", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=130)
    return path


def _default_anytime(cp: Sequence[SolverRow]) -> list[str]:
    """The first medium and the first large optimizer instance (else the two largest)."""
    chosen: list[str] = []
    for size in ("medium", "large"):
        names = [r.instance for r in cp if r.size == size]
        if names:
            chosen.append(names[0])
    if not chosen:
        chosen = list(dict.fromkeys(r.instance for r in sorted(cp, key=_dims)[-2:]))
    return chosen


def write_loop_chart(
    rows: Sequence[LoopRow], out: Path, top: str, order: Sequence[str]
) -> list[Path]:
    """ladder.png: per (family, world), each policy's median share of the top rung's realized
    pwo, bars in ladder order (when a run replayed)."""
    from matplotlib.figure import Figure  # only the chart step needs matplotlib

    shares = top_shares(rows, top)
    policies = [p for p in order if any(s.get(p) is not None for s in shares.values())]
    if not policies:
        return []
    out.mkdir(parents=True, exist_ok=True)
    groups = [f"{family}\n{world}" for family, world in shares]
    fig = Figure(
        figsize=(max(7.0, 0.4 * len(groups) * len(policies) + 3), 4.2), layout="constrained"
    )
    ax = fig.subplots()
    width = 0.8 / len(policies)
    for k, policy in enumerate(policies):
        xs = [i + (k - (len(policies) - 1) / 2) * width for i in range(len(groups))]
        values = [s.get(policy) for s in shares.values()]
        bars = ax.bar(xs, [v or 0 for v in values], width, label=policy)
        ax.bar_label(bars, labels=[f"{v:.2f}" if v else "" for v in values], fontsize=6)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(f"realized pwo as a share of {top}'s (median over runs)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.legend(fontsize=8, loc="lower right")
    path = out / "ladder.png"
    fig.savefig(path, dpi=130)
    return [path]
