"""summary.md: gains over the baseline, the ablation, the optimizers' cost by size, failures.
Which solver plays which part comes from the registry's flags (roles.py)."""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from horizon_opt.bench import roles
from horizon_opt.bench.rows import LoopRow, SolverRow, by_instance
from horizon_opt.bench.suite import Suite
from horizon_opt.generate import SIZES
from horizon_opt.plans.comparison_table import markdown_table

AnyRow = TypeVar("AnyRow", bound=SolverRow | LoopRow)


def figure(value: float | None) -> float:
    """A figure every good row has (pwo, utilization, wall time)."""
    assert value is not None, "a good row has its figures"
    return float(value)


def util_gain(a: SolverRow, b: SolverRow) -> float:
    """Utilization of a minus b, in percentage points."""
    return 100 * (figure(a.utilization) - figure(b.utilization))


def pwo_gain(a: SolverRow, b: SolverRow) -> float | None:
    """pwo of a over b, in % (None when b's pwo is 0)."""
    if figure(b.pwo) <= 0:
        return None
    return 100 * (figure(a.pwo) / figure(b.pwo) - 1)


def _med_max(values: Sequence[float | None], fmt: str) -> str:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return "-"
    return f"{format(statistics.median(vals), fmt)} / {format(max(vals), fmt)}"


def _groups(rows: Sequence[SolverRow]) -> list[tuple[str, str | None, list[str]]]:
    """(family, size or None for all sizes, instance names) in order of first appearance."""
    families: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        names = families.setdefault(r.family, {}).setdefault(r.size, [])
        if r.instance not in names:
            names.append(r.instance)
    order = {s: k for k, s in enumerate(SIZES)}
    out: list[tuple[str, str | None, list[str]]] = []
    for family, sizes in families.items():
        ordered = sorted(sizes, key=lambda s: order.get(s, len(order)))
        for size in ordered:
            out.append((family, size, sizes[size]))
        if len(sizes) > 1:
            out.append((family, None, [n for s in ordered for n in sizes[s]]))
    return out


def solvers_of(rows: Sequence[SolverRow]) -> list[str]:
    """The solvers of the rows, in order of first appearance (suite order)."""
    return list(dict.fromkeys(r.solver for r in rows))


def baseline_of(suite: Suite | None) -> str:
    """The reference of the `vs` columns: the suite's, else the registry's baseline."""
    return suite.spec.reference if suite is not None else roles.baseline()


def gains_tables(rows: Sequence[SolverRow], base: str | None = None) -> str:
    """Per family and size: utilization and pwo gains of each pair (`roles.gain_pairs`), and
    the gap of each solver that reports a bound."""
    base = base if base is not None else roles.baseline()
    index = by_instance(rows)
    pairs = roles.gain_pairs(solvers_of(rows), base)
    bounded = roles.bounded(solvers_of(rows))
    util_rows: list[list[str]] = []
    pwo_rows: list[list[str]] = []
    for family, size, names in _groups(rows):
        label = size if size is not None else "**all**"
        cells_u: list[str] = []
        cells_p: list[str] = []
        for a, b in pairs:
            both = [index[n] for n in names if n in index and a in index[n] and b in index[n]]
            cells_u.append(_med_max([util_gain(r[a], r[b]) for r in both], "+.1f"))
            cells_p.append(_med_max([pwo_gain(r[a], r[b]) for r in both], "+.0f"))
        for solver in bounded:
            mine = [index[n][solver] for n in names if n in index and solver in index[n]]
            cells_p.append(_med_max([100 * r.gap for r in mine if r.gap is not None], ".1f"))
        util_rows.append([family, label, str(len(names)), *cells_u])
        pwo_rows.append([family, label, str(len(names)), *cells_p])
    group = ["family", "size", "instances"]
    gaps = f"; {' and '.join(bounded)} gap to its proven bound, %" if bounded else ""
    return (
        "### Utilization gain, percentage points (median / max over instances)\n\n"
        + markdown_table([*group, *(f"{a} - {b}" for a, b in pairs)], util_rows)
        + f"\n\n### pwo gain, % (median / max over instances){gaps}\n\n"
        + markdown_table(
            [*group, *(f"{a} vs {b}" for a, b in pairs), *(f"{s} gap" for s in bounded)],
            pwo_rows,
        )
        + "\n"
    )


def ablation_table(rows: Sequence[SolverRow], base: str | None = None) -> str:
    """Per family: each step's median utilization and pwo, and what the step adds; the steps
    are the baseline, then the other solvers in suite order (`roles.ablation`)."""
    base = base if base is not None else roles.baseline()
    index = by_instance(rows)
    lines: list[list[str]] = []
    steps = roles.ablation(solvers_of(rows), base)
    for family in dict.fromkeys(r.family for r in rows):
        names = list(dict.fromkeys(r.instance for r in rows if r.family == family))
        full = [index[n] for n in names if n in index and all(s in index[n] for s in steps)]
        if not full:
            continue
        for k, solver in enumerate(steps):
            util = statistics.median(100 * figure(r[solver].utilization) for r in full)
            ratios = [
                figure(r[solver].pwo) / figure(r[base].pwo) for r in full if figure(r[base].pwo) > 0
            ]
            ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
            if k == 0:
                step_u = step_p = ""
            else:
                prev = steps[k - 1]
                step_u = f"{statistics.median(util_gain(r[solver], r[prev]) for r in full):+.1f}"
                pg = [g for r in full if (g := pwo_gain(r[solver], r[prev])) is not None]
                step_p = f"{statistics.median(pg):+.0f}%" if pg else "-"
            lines.append(
                [family, roles.label(solver), str(len(full)), f"{util:.1f}%", step_u, ratio, step_p]
            )
    header = ["family", "step", "instances", "utilization", "step gain (pp)", f"pwo vs {base}"]
    return markdown_table([*header, "step gain (pwo %)"], lines) + "\n"


def _dims(r: SolverRow) -> int:
    """jobs x slots x nodes: the size of the problem a row solved."""
    return r.jobs * r.slots * r.nodes


def cost_table(rows: Sequence[SolverRow], solver: str) -> str:
    """An optimizer's cost by size: wall time, build time, peak memory, gap, proven optima."""
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
    cp = [r for r in rows if r.solver == solver]
    order = {s: k for k, s in enumerate(SIZES)}
    for size in sorted({r.size for r in cp}, key=lambda s: order.get(s, len(order))):
        mine = [r for r in cp if r.size == size]
        good = [r for r in mine if r.ok]
        builds = [r.build_seconds for r in good if r.build_seconds is not None]
        peaks = [r.peak_mib for r in mine if r.peak_mib is not None]
        lines.append(
            [
                size,
                str(len(mine)),
                f"{statistics.median(_dims(r) for r in mine):,.0f}",
                ", ".join(f"{x:g}" for x in sorted({r.time_limit for r in mine})),
                _med_max([figure(r.wall_seconds) for r in good], ".1f"),
                f"{statistics.median(builds) if builds else 0:.2f}",
                f"{max(peaks) if peaks else 0:.0f}",
                _med_max([100 * r.gap for r in good if r.gap is not None], ".1f"),
                str(sum(r.status == "optimal" for r in good)),
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
    rows: Sequence[SolverRow],
    *,
    suite: Suite | None = None,
    jobs: int | None = None,
    seconds: float | None = None,
) -> str:
    """The markdown summary of a results table."""
    solvers = solvers_of(rows)
    base = baseline_of(suite)
    instances = list(dict.fromkeys(r.instance for r in rows))
    workers = sorted({r.workers for r in rows if r.workers is not None})
    head = [f"# Benchmark summary{f': {suite.spec.name}' if suite else ''}", ""]
    if suite is not None:
        head.append(f"- suite: `{suite.path}`")
    head += [
        f"- {len(instances)} instances x {len(solvers)} solvers ({', '.join(solvers)}) = "
        f"{len(rows)} runs; {roles.anytime()} workers {', '.join(map(str, workers))}"
        + (f"; runs at once (--jobs): {jobs}" if jobs else ""),
        f"- machine: {machine()}",
        f"- written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f", whole run {seconds / 60:.1f} min" if seconds is not None else ""),
        "- gains compare plans of the same instance; pp = percentage points of utilization; "
        "pwo % = pwo of the first / pwo of the second - 1; runs that failed or gave an invalid "
        "plan are left out (see Failures)",
        "",
        f"## Gains over {base}",
        "",
        gains_tables(rows, base),
        "## Ablation: where the gain comes from (medians over the family's instances)",
        "",
        ablation_table(rows, base),
    ]
    for solver in roles.optimizers(solvers):
        head += [f"## {solver} cost by size", "", cost_table(rows, solver)]
    head += failures(rows, ("instance", "solver"), lambda r: (r.instance, r.solver))
    return "\n".join(head) + "\n"


def failures(
    rows: Sequence[AnyRow],
    header: Sequence[str],
    run: Callable[[AnyRow], tuple[object, ...]],
    none: str = "None: every run ended with a plan that passes `check`.",
) -> list[str]:
    """The Failures section: a line per failed run (`run` tells its rows apart, one cell per
    `header` name), else `none`."""
    failed: dict[tuple[object, ...], list[str]] = {
        run(r): [str(r.status), str(r.valid or "-"), str(r.error or "")] for r in rows if not r.ok
    }
    if not failed:
        return ["## Failures", "", none]
    lines = [[*map(str, key), *cells] for key, cells in failed.items()]
    return ["## Failures", "", markdown_table([*header, "status", "valid", "error"], lines)]
