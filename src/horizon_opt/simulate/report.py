"""A replay's results as rows, a table relative to the online baselines, a CSV and a chart."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from horizon_opt.export.charts import new_figure
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.simulate.replay_figures import Replay

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

BASELINES = ("fifo", "backfill")  # realized pwo is also given relative to these, when replayed


def top_rung(replays: Sequence[Replay]) -> Replay | None:
    """The first replay of a policy told every arrival and run time (`-oracle`), if any."""
    return next((r for r in replays if r.policy.endswith("-oracle")), None)


def rows(replays: Sequence[Replay]) -> list[dict[str, Any]]:
    """One flat row per policy (no per-slot series), with pwo relative to the baselines and,
    when an `-oracle` policy was replayed, as a share of that top rung."""
    realized = {r.policy: r.realized_pwo for r in replays}
    in_window = {r.policy: r.window_pwo for r in replays}
    top = top_rung(replays)
    out = []
    for r in replays:
        row = {f.name: getattr(r, f.name) for f in fields(r) if f.name not in Replay.SERIES}
        for base in BASELINES:
            if base in realized and realized[base] > 0:
                row[f"vs_{base}"] = r.realized_pwo / realized[base] - 1
        if in_window.get("backfill", 0) > 0:
            row["window_vs_backfill"] = r.window_pwo / in_window["backfill"] - 1
        if top is not None and top.realized_pwo > 0:
            row["of_top"] = r.realized_pwo / top.realized_pwo
        out.append(row)
    return out


def to_csv(replays: Sequence[Replay]) -> str:
    table = rows(replays)
    names = list(dict.fromkeys(k for row in table for k in row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buf.getvalue()


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _preempted(r: Replay) -> str:
    """Its preemptions, saying how many reclaimed a team's quota when any did."""
    return f"{r.preemptions}, {r.reclaims} for quota" if r.reclaims else str(r.preemptions)


def format_table(replays: Sequence[Replay]) -> str:
    """A markdown table: what each policy realized, and what its plans cost to make."""
    head = (
        "| policy | planned pwo | realized pwo | vs fifo | vs backfill | of top rung | utilization | "
        "window pwo (vs backfill) | window utilization | "
        "preemptions (GPU-h lost) | SLO short | promise error h / P50 error h (P90 coverage, jobs) | "
        "moved / re-plan | "
        "plans | solver s |"
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for row, r in zip(rows(replays), replays, strict=True):
        planned = "-" if r.planned_pwo is None else f"{r.planned_pwo:,.0f}"
        lines.append(
            f"| {r.policy} | {planned} | {r.realized_pwo:,.0f} | {_pct(row.get('vs_fifo'))} | "
            f"{_pct(row.get('vs_backfill'))} | {_share(row.get('of_top'))} | "
            f"{100 * r.realized_utilization:.1f}% | "
            f"{r.window_pwo:,.0f} ({_pct(row.get('window_vs_backfill'))}) | "
            f"{100 * r.window_utilization:.1f}% | "
            f"{_preempted(r)} ({r.lost_gpu_hours:,.0f}) | {100 * r.slo_short_share:.2f}% | "
            f"{_promises(r)} | "
            f"{r.mean_moved:.1f} | {r.decisions} | {r.solver_seconds:,.1f} |"
        )
    return "\n".join(lines)


def _promises(r: Replay) -> str:
    """Promise error / P50 error (P90 coverage, promises): none made in the window, no figures."""
    if not r.promised:
        return "- / - (-, 0)"
    return (
        f"{r.promise_error_hours:.1f} / {r.promise_p50_error_hours:.1f} "
        f"({_share(r.promise_p90_coverage)}, {r.promised})"
    )


def starved_lines(replays: Sequence[Replay], hours_per_slot: float) -> str:
    """A line per policy that starved a job (it could have run whole on GPUs that sat idle while
    it waited), naming the longest waits; one line when none did."""
    starving = [r for r in replays if r.starved]
    if not starving:
        return "starved jobs (could have run whole on GPUs that sat idle while they waited): none"
    lines = ["starved jobs (could have run whole on GPUs that sat idle while they waited):"]
    for r in starving:
        worst = sorted(r.starved_jobs.items(), key=lambda item: (-item[1], item[0]))[:3]
        named = ", ".join(f"{job} {slots * hours_per_slot:g} h" for job, slots in worst)
        more = f", and {r.starved - len(worst)} more" if r.starved > len(worst) else ""
        lines.append(f"- {r.policy}: {r.starved} ({named}{more})")
    return "\n".join(lines)


def team_table(ran: Mapping[str, Plan], replays: Sequence[Replay]) -> str:
    """A markdown table of each team's realized GPU-hours per policy (from the plans of what
    ran): its share against its quota share, what it held above its quota, its runs preempted
    to give quota back (reclaimed), its pwo, and each policy's fairness (Jain's index of share
    over quota share)."""
    head = (
        "| policy | team | share of GPU-h | quota share | borrowed GPU-h | reclaimed runs | "
        "realized pwo |"
    )
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    reclaimed = {r.policy: r.reclaimed_by_team for r in replays}
    for policy, plan in ran.items():
        for name, f in plan.metrics.teams.items():
            lines.append(
                f"| {policy} | {name} | {_share(f.share)} | {_share(f.quota_share)} | "
                f"{f.borrowed_gpu_hours:,.0f} | {reclaimed[policy].get(name, 0)} | {f.pwo:,.0f} |"
            )
        fair = plan.metrics.team_fairness
        lines.append(f"| {policy} | fairness | {'-' if fair is None else f'{fair:.3f}'} | | | | |")
    return "\n".join(lines)


def plot_realized(instance: Instance, replays: Sequence[Replay], ax: Axes | None = None) -> Figure:
    """Cumulative realized pwo over the horizon, one line per policy; an open-loop policy's
    planned pwo as a dotted level, so the reader sees how much of it was realized."""
    if ax is None:
        fig = new_figure(9.0, 4.5)
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.get_figure()  # type: ignore[assignment]
    hours = [t * instance.hours_per_slot for t in range(instance.slots + 1)]
    for r in replays:
        (line,) = ax.plot(hours, r.realized_by_slot, label=f"{r.policy} (realized)")
        if r.planned_pwo is not None:
            ax.axhline(
                r.planned_pwo, linestyle=":", color=line.get_color(), label=f"{r.policy} (planned)"
            )
    ax.set_xlabel("hours into the horizon")
    ax.set_ylabel("pwo of jobs ended on time")
    ax.set_title(f"{instance.name}: realized pwo over time")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(alpha=0.3)
    return fig
