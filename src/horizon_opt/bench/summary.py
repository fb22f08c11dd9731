"""summary.md: gains over fifo, the ablation, cpsat's cost by size, failures."""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime

from horizon_opt.bench.rows import Row, by_instance, ok
from horizon_opt.bench.suite import Suite
from horizon_opt.comparison_table import markdown_table
from horizon_opt.generate import SIZES

ABLATION = (
    ("fifo", "fifo (static peak reservation, arrival order)"),
    ("fifo-elastic", "fifo-elastic (per-slot reservation)"),
    ("greedy", "greedy (value order)"),
    ("cpsat", "cpsat (optimization)"),
)


def util_gain(a: Row, b: Row) -> float:
    """Utilization of a minus b, in percentage points."""
    return 100 * (float(a["utilization"]) - float(b["utilization"]))


def pwo_gain(a: Row, b: Row) -> float | None:
    """pwo of a over b, in % (None when b's pwo is 0)."""
    if float(b["pwo"]) <= 0:
        return None
    return 100 * (float(a["pwo"]) / float(b["pwo"]) - 1)


def _med_max(values: Sequence[float | None], fmt: str) -> str:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return "-"
    return f"{format(statistics.median(vals), fmt)} / {format(max(vals), fmt)}"


def _groups(rows: Sequence[Row]) -> list[tuple[str, str | None, list[str]]]:
    """(family, size or None for all sizes, instance names) in order of first appearance."""
    families: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        sizes = families.setdefault(str(r["family"]), {})
        names = sizes.setdefault(str(r["size"]), [])
        if r["instance"] not in names:
            names.append(str(r["instance"]))
    order = {s: k for k, s in enumerate(SIZES)}
    out: list[tuple[str, str | None, list[str]]] = []
    for family, sizes in families.items():
        ordered = sorted(sizes, key=lambda s: order.get(s, len(order)))
        for size in ordered:
            out.append((family, size, sizes[size]))
        if len(sizes) > 1:
            out.append((family, None, [n for s in ordered for n in sizes[s]]))
    return out


PAIRS = (("cpsat", "fifo"), ("greedy", "fifo"), ("cpsat", "greedy"))


def gains_tables(rows: Sequence[Row]) -> str:
    """Per family and size: utilization and pwo gains of each pair, and cpsat's gap."""
    index = by_instance(rows)
    util_rows: list[list[str]] = []
    pwo_rows: list[list[str]] = []
    for family, size, names in _groups(rows):
        label = size if size is not None else "**all**"
        cells_u: list[str] = []
        cells_p: list[str] = []
        for a, b in PAIRS:
            both = [index[n] for n in names if n in index and a in index[n] and b in index[n]]
            cells_u.append(_med_max([util_gain(r[a], r[b]) for r in both], "+.1f"))
            cells_p.append(_med_max([pwo_gain(r[a], r[b]) for r in both], "+.0f"))
        gaps = [
            100 * float(index[n]["cpsat"]["gap"])
            for n in names
            if n in index and "cpsat" in index[n] and index[n]["cpsat"]["gap"] is not None
        ]
        util_rows.append([family, label, str(len(names)), *cells_u])
        pwo_rows.append([family, label, str(len(names)), *cells_p, _med_max(gaps, ".1f")])
    group = ["family", "size", "instances"]
    return (
        "### Utilization gain, percentage points (median / max over instances)\n\n"
        + markdown_table([*group, "cpsat - fifo", "greedy - fifo", "cpsat - greedy"], util_rows)
        + "\n\n### pwo gain, % (median / max over instances); cpsat gap to its proven bound, %\n\n"
        + markdown_table(
            [*group, "cpsat vs fifo", "greedy vs fifo", "cpsat vs greedy", "cpsat gap"], pwo_rows
        )
        + "\n"
    )


def ablation_table(rows: Sequence[Row]) -> str:
    """Per family: each step's median utilization and pwo, and what the step adds."""
    index = by_instance(rows)
    lines: list[list[str]] = []
    steps = [s for s, _ in ABLATION]
    families = list(dict.fromkeys(str(r["family"]) for r in rows))
    for family in families:
        names = list(dict.fromkeys(str(r["instance"]) for r in rows if r["family"] == family))
        full = [index[n] for n in names if n in index and all(s in index[n] for s in steps)]
        if not full:
            continue
        for k, (solver, label) in enumerate(ABLATION):
            util = statistics.median(100 * float(r[solver]["utilization"]) for r in full)
            ratios = [
                float(r[solver]["pwo"]) / float(r["fifo"]["pwo"])
                for r in full
                if float(r["fifo"]["pwo"]) > 0
            ]
            ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
            if k == 0:
                step_u = step_p = ""
            else:
                prev = steps[k - 1]
                step_u = f"{statistics.median(util_gain(r[solver], r[prev]) for r in full):+.1f}"
                pg = [g for r in full if (g := pwo_gain(r[solver], r[prev])) is not None]
                step_p = f"{statistics.median(pg):+.0f}%" if pg else "-"
            lines.append([family, label, str(len(full)), f"{util:.1f}%", step_u, ratio, step_p])
    header = ["family", "step", "instances", "utilization", "step gain (pp)", "pwo vs fifo"]
    return markdown_table([*header, "step gain (pwo %)"], lines) + "\n"


def cost_table(rows: Sequence[Row]) -> str:
    """cpsat's cost by size: wall time, build time, peak memory, gap, proven optima."""
    header = [
        "size",
        "runs",
        "jobs x slots x nodes (median)",
        "time limit (s)",
        "wall s (median / max)",
        "build s (median)",
        "peak MiB (max)",
        "gap % (median / max)",
        "optimal",
        "failed",
    ]
    lines: list[list[str]] = []
    cp = [r for r in rows if r["solver"] == "cpsat"]
    order = {s: k for k, s in enumerate(SIZES)}
    for size in sorted({str(r["size"]) for r in cp}, key=lambda s: order.get(s, len(order))):
        mine = [r for r in cp if r["size"] == size]
        good = [r for r in mine if ok(r)]
        dims = statistics.median(int(r["jobs"]) * int(r["slots"]) * int(r["nodes"]) for r in mine)
        limits = sorted({float(r["time_limit"]) for r in mine})
        builds = [float(r["build_seconds"]) for r in good if r["build_seconds"] is not None]
        peaks = [float(r["peak_mib"]) for r in mine if r["peak_mib"] is not None]
        lines.append(
            [
                size,
                str(len(mine)),
                f"{dims:,.0f}",
                ", ".join(f"{x:g}" for x in limits),
                _med_max([float(r["wall_seconds"]) for r in good], ".1f"),
                f"{statistics.median(builds) if builds else 0:.2f}",
                f"{max(peaks) if peaks else 0:.0f}",
                _med_max([100 * float(r["gap"]) for r in good if r["gap"] is not None], ".1f"),
                str(sum(r["status"] == "optimal" for r in good)),
                str(len(mine) - len(good)),
            ]
        )
    return markdown_table(header, lines) + "\n"


def machine() -> str:
    """The machine the numbers come from, for the reader of summary.md."""
    return (
        f"{os.cpu_count()} CPUs (nproc), {platform.machine()}, {platform.system()} "
        f"{platform.release()}, {platform.python_implementation()} {platform.python_version()}"
    )


def summarize(
    rows: Sequence[Row],
    *,
    suite: Suite | None = None,
    jobs: int | None = None,
    seconds: float | None = None,
) -> str:
    """The markdown summary of a results table."""
    solvers = list(dict.fromkeys(str(r["solver"]) for r in rows))
    instances = list(dict.fromkeys(str(r["instance"]) for r in rows))
    workers = sorted({int(r["workers"]) for r in rows if r.get("workers") is not None})
    head = [f"# Benchmark summary{f': {suite.spec.name}' if suite else ''}", ""]
    if suite is not None:
        head.append(f"- suite: `{suite.path}`")
    head += [
        f"- {len(instances)} instances x {len(solvers)} solvers ({', '.join(solvers)}) = "
        f"{len(rows)} runs; cpsat workers {', '.join(map(str, workers))}"
        + (f"; runs at once (--jobs): {jobs}" if jobs else ""),
        f"- machine: {machine()}",
        f"- written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f", whole run {seconds / 60:.1f} min" if seconds is not None else ""),
        "- gains compare plans of the same instance; pp = percentage points of utilization; "
        "pwo % = pwo of the first / pwo of the second - 1; runs that failed or gave an invalid "
        "plan are left out (see Failures)",
        "",
        "## Gains over fifo",
        "",
        gains_tables(rows),
        "## Ablation: where the gain comes from (medians over the family's instances)",
        "",
        ablation_table(rows),
        "## cpsat cost by size",
        "",
        cost_table(rows),
    ]
    head += failures(rows, ("instance", "solver"))
    return "\n".join(head) + "\n"


def failures(
    rows: Sequence[Row],
    keys: Sequence[str],
    none: str = "None: every run ended with a plan that passes `check`.",
) -> list[str]:
    """The Failures section: a line per failed run (its rows told apart by `keys`), else `none`."""
    failed = {tuple(r[k] for k in keys): r for r in rows if not ok(r)}
    if not failed:
        return ["## Failures", "", none]
    table = markdown_table(
        [*keys, "status", "valid", "error"],
        (
            [*map(str, key), str(r["status"]), str(r["valid"] or "-"), str(r["error"] or "")]
            for key, r in failed.items()
        ),
    )
    return ["## Failures", "", table]
