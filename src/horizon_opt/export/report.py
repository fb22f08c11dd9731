"""One self-contained HTML report on an instance and one or more plans of it.

The file needs no network and nothing beside it: styles are inline, charts are PNG images
embedded as `data:` URIs, there is no script and no external link, so it can be mailed around and
opened anywhere. Sections: the instance; the plans side by side (the first is the reference for
the deltas); the utilization chart and the Gantt chart of each plan; each plan's late and
unplanned jobs with their cause codes and what it would take (`explain`); the jobs that waited
longest.
"""

from __future__ import annotations

import base64
import html
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from horizon_opt.analysis.explain import explain
from horizon_opt.analysis.prices import CapacityPrices, format_prices
from horizon_opt.export._common import ensure_plan_fits
from horizon_opt.export.explanations import what_it_takes
from horizon_opt.io import write_atomic
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import JOB_KINDS
from horizon_opt.plans.check import check
from horizon_opt.plans.comparison_table import Column, compare_columns, to_html
from horizon_opt.plans.metrics import evaluate, on_time
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers.causes import MEANING
from horizon_opt.version import __version__

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LONGEST_WAITS = 10  # rows in each plan's "longest waits" table
OPEN_UP_TO = 30  # tables with at most this many rows are shown open, longer ones folded

_CSS = """
body { font: 14px/1.45 -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #222;
       max-width: 1500px; margin: 0 auto; padding: 16px 28px 48px; }
h1 { font-size: 24px; margin: 8px 0 2px; }
h2 { font-size: 19px; margin: 34px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #4e79a7; }
h3 { font-size: 15px; margin: 22px 0 6px; }
p.sub { color: #666; margin: 0 0 12px; }
nav a { margin-right: 14px; color: #2c5d8f; text-decoration: none; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e3e3e3; text-align: right;
         vertical-align: top; }
th { background: #f3f5f8; font-weight: 600; }
td.l, th.l { text-align: left; }
table.unscheduled td:nth-last-child(-n+2), table.unscheduled th:nth-last-child(-n+2) {
    text-align: left; max-width: 520px; }
tr.sub td:first-child { padding-left: 26px; color: #555; }
table.metrics td:first-child, table.metrics th:first-child { text-align: left; }
table.metrics th.ref { background: #e6ecf4; }
.better { color: #1b7a32; }
.worse { color: #b3261e; }
.muted { color: #888; }
.bad { color: #b3261e; font-weight: 600; }
.good { color: #1b7a32; font-weight: 600; }
img.chart { width: 100%; height: auto; border: 1px solid #e3e3e3; margin: 4px 0 14px; }
details summary { cursor: pointer; margin: 6px 0; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 18px; margin: 6px 0; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _when(instance: Instance, slot: int) -> str:
    when = instance.slot_time(slot)
    return f"slot {slot}" if when is None else f"{when:%m-%d %H:%M}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1, cls: str = "") -> str:
    """An HTML table; cells are already escaped HTML; the first `left` columns align left."""
    th = "".join(
        f'<th class="l">{h}</th>' if k < left else f"<th>{h}</th>" for k, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="l">{c}</td>' if k < left else f"<td>{c}</td>" for k, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _fold(summary: str, content: str, rows: int) -> str:
    opened = " open" if rows <= OPEN_UP_TO else ""
    return f"<details{opened}><summary>{summary}</summary>{content}</details>"


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="chart" alt="{_e(alt)}" src="data:image/png;base64,{data}">'


# -- sections ----------------------------------------------------------------------------------


def _instance_section(instance: Instance) -> str:
    return "\n".join(
        [
            *_instance_facts(instance),
            *_pools_table(instance),
            *_outages_table(instance),
            *_services_table(instance),
            *_kinds_table(instance),
        ]
    )


def _instance_facts(instance: Instance) -> list[str]:
    """The section's heading and the instance in a few lines: horizon, cluster, GPU-hours
    available, forecast inference, batch work against what inference leaves free."""
    h = instance.hours_per_slot
    S = instance.slots
    horizon = f"{S} slots x {instance.slot_minutes} min = {S * h:,.1f} h"
    if instance.start is not None:
        end = instance.slot_time(S)
        assert end is not None
        horizon += f", {instance.start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
    available = float(instance.capacity.sum()) * h
    forecast = sum(float(s.demand.sum()) * s.gpus_per_replica * h for s in instance.services)
    required = sum(float(s.req.sum()) * s.gpus_per_replica * h for s in instance.services)
    work = sum(j.work_hours for j in instance.jobs)
    free = available - required
    facts = [
        ("horizon", horizon),
        ("cluster", f"{instance.num_nodes} nodes, {int(instance.node_gpus.sum()):,} GPUs"),
        ("available GPU-h", f"{available:,.0f} (nodes that are up)"),
        (
            "inference forecast",
            f"{forecast:,.0f} GPU-h ({100 * forecast / max(available, 1e-9):.1f}% of available); "
            f"required with headroom {required:,.0f} GPU-h",
        ),
        (
            "batch queue",
            f"{len(instance.jobs)} jobs, {work:,.0f} GPU-h at their fastest pool "
            f"({work / max(free, 1e-9):.2f}x the {free:,.0f} GPU-h that inference leaves free)",
        ),
    ]
    out = ['<h2 id="instance">Instance</h2><dl class="facts">']
    out += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts]
    out.append("</dl>")
    return out


def _pools_table(instance: Instance) -> list[str]:
    h = instance.hours_per_slot
    down_slots = (~instance.up).sum(axis=1)
    pool_rows = [
        [
            _e(p.name),
            _e(p.gpu_type),
            str(p.nodes),
            str(p.gpus_per_node),
            f"{p.nodes * p.gpus_per_node:,}",
            f"{float(down_slots[list(p.node_range)].sum()) * h:,.0f}",
        ]
        for p in instance.pools
    ]
    return [
        "<h3>Pools</h3>",
        _table(["pool", "GPU type", "nodes", "GPUs/node", "GPUs", "node-hours down"], pool_rows, 2),
    ]


def _outages_table(instance: Instance) -> list[str]:
    """Each node's runs of down slots, folded; nothing when every node is always up."""
    outages = []
    for n in range(instance.num_nodes):
        mask = ~instance.up[n]
        edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            outages.append(
                [
                    _e(instance.node_names[n]),
                    _e(_when(instance, int(a))),
                    _e(_when(instance, int(b))),
                ]
            )
    if not outages:
        return []
    return [
        "<h3>Outages</h3>",
        _fold(
            f"{len(outages)} outage(s)",
            _table(["node", "from", "to"], outages, 3),
            len(outages),
        ),
    ]


def _services_table(instance: Instance) -> list[str]:
    if not instance.services:
        return []
    h = instance.hours_per_slot
    service_rows = [
        [
            _e(s.name),
            _e(instance.pools[s.pool].name),
            str(s.gpus_per_replica),
            f"{100 * s.headroom:g}%",
            f"{float(s.demand.min()):,.1f} / {float(s.demand.mean()):,.1f} / {float(s.demand.max()):,.1f}",
            f"{int(s.req.max())}",
            f"{float(s.demand.sum()) * s.gpus_per_replica * h:,.0f}",
        ]
        for s in instance.services
    ]
    return [
        "<h3>Inference services</h3>",
        _table(
            [
                "service",
                "pool",
                "GPUs/replica",
                "headroom",
                "forecast replicas min / mean / max",
                "peak required replicas",
                "forecast GPU-h",
            ],
            service_rows,
            2,
        ),
    ]


def _kinds_table(instance: Instance) -> list[str]:
    """The batch jobs by kind: how many, their GPUs, priorities and work."""
    kind_rows = []
    for kind in JOB_KINDS:
        jobs = [j for j in instance.jobs if j.kind == kind]
        if not jobs:
            continue
        kind_rows.append(
            [
                _e(kind.replace("_", " ")),
                str(len(jobs)),
                f"{min(j.gpus for j in jobs)}-{max(j.gpus for j in jobs)}",
                f"{min(j.priority for j in jobs):g}-{max(j.priority for j in jobs):g}",
                f"{sum(j.work_hours for j in jobs):,.0f}",
                str(sum(1 for j in jobs if j.deadline is not None)),
                str(sum(1 for j in jobs if j.after)),
            ]
        )
    if not kind_rows:
        return []
    return [
        "<h3>Batch jobs</h3>",
        _table(
            ["kind", "jobs", "GPUs", "priority", "work GPU-h", "with deadline", "with after"],
            kind_rows,
        ),
    ]


def _metrics_section(instance: Instance, planned: Sequence[Column]) -> str:
    note = (
        '<p class="sub">Deltas are against the first plan. pwo counts priority x GPU-hours of the '
        "jobs that end by their deadline; utilization is (batch GPU-hours + forecast inference "
        "GPU-hours) / available GPU-hours; gap = (bound - pwo) / bound.</p>"
    )
    return (
        '<h2 id="plans">Plans side by side</h2>'
        + note
        + to_html(compare_columns(instance, planned))
    )


def _charts_section(instance: Instance, planned: Sequence[Column]) -> str:
    from horizon_opt.export.charts import plot_gantt, plot_utilization, render

    util = ['<h2 id="utilization">Utilization over time</h2>']
    util.append(
        '<p class="sub">GPUs per pool: forecast inference demand (red), reservation above it '
        "(pink), batch work by kind, idle (grey); the black line is the forecast, the dashed line "
        "the required reservation, the thin line the GPUs that are up.</p>"
    )
    gantt = ['<h2 id="gantt">Gantt charts</h2>']
    gantt.append(
        '<p class="sub">One row per node (each GPU a lane), grouped by pool; bars are coloured by '
        "kind, lighter for lower priority; red lanes are inference replicas, hatched spans are "
        "outages.</p>"
    )
    for p in planned:
        util.append(f"<h3>{_e(p.label)}</h3>")
        util.append(_img(render(plot_utilization(instance, p.plan)), f"utilization, {p.label}"))
        gantt.append(f"<h3>{_e(p.label)}</h3>")
        gantt.append(_img(render(plot_gantt(instance, p.plan)), f"Gantt chart, {p.label}"))
    return "\n".join(util + gantt)


def _why_rows(instance: Instance, column: Column) -> list[list[str]]:
    """One row per late or unplanned job, most valuable first: `explain`'s answer when the plan
    passes the checker, else the plan's own reasons."""
    if column.violations == 0:
        found = [r for r in explain(instance, column.plan) if r.code is not None]
        found.sort(key=lambda r: -r.value)
        return [
            [
                _e(r.job),
                _e(r.status),
                f"{r.priority:g}",
                f"{r.value:,.1f}",
                "-" if r.earliest_alone is None else _when(instance, r.earliest_alone),
                _e(r.code),
                _e(r.reason),
                "<br>".join(_e(line) for line in what_it_takes(instance, r)),
            ]
            for r in found
        ]
    jobs = [(instance.jobs[instance.job_index[u.job]], u) for u in column.plan.unscheduled]
    jobs.sort(key=lambda ju: -ju[0].value)
    return [
        [
            _e(j.id),
            "not-planned",
            f"{j.priority:g}",
            f"{j.value:,.1f}",
            "",
            _e(u.code or ""),
            _e(u.reason),
            '<span class="muted">(the plan fails the checker)</span>',
        ]
        for j, u in jobs
    ]


def _unscheduled_section(instance: Instance, planned: Sequence[Column]) -> str:
    out = ['<h2 id="unscheduled">Why jobs wait: late and unplanned jobs</h2>']
    out.append(
        '<p class="sub">Each late or unplanned job with its cause code (the first that holds, in '
        "this order): "
        + "; ".join(f"<b>{_e(code)}</b>: {_e(text)}" for code, text in MEANING.items())
        + ". &ldquo;Alone&rdquo; is the earliest start the job would have with no other batch "
        "work.</p>"
    )
    for p in planned:
        rows = _why_rows(instance, p)
        out.append(f"<h3>{_e(p.label)}: {len(rows)} late or unplanned</h3>")
        if not rows:
            out.append('<p class="muted">Every job runs on time.</p>')
            continue
        counts = Counter(row[5] for row in rows)
        out.append(
            '<p class="sub">'
            + ", ".join(f"{n} {code}" for code, n in counts.most_common())
            + "</p>"
        )
        table = _table(
            [
                "job",
                "status",
                "priority",
                "value",
                "alone",
                "cause",
                "reason",
                "what it would take",
            ],
            rows,
            2,
            cls="unscheduled",
        )
        out.append(_fold(f"{len(rows)} job(s), most valuable first", table, len(rows)))
    return "\n".join(out)


def _waits_section(instance: Instance, planned: Sequence[Column]) -> str:
    h = instance.hours_per_slot
    out = [f'<h2 id="waits">Longest waits (top {LONGEST_WAITS} per plan)</h2>']
    for p in planned:
        waits = sorted(
            p.plan.assignments,
            key=lambda a: -(a.start - instance.jobs[instance.job_index[a.job]].wait_release),
        )[:LONGEST_WAITS]
        out.append(f"<h3>{_e(p.label)}</h3>")
        if not waits:
            out.append('<p class="muted">No job runs.</p>')
            continue
        rows = []
        for a in waits:
            j = instance.jobs[instance.job_index[a.job]]
            ok = on_time(instance, a.job, a.end)
            rows.append(
                [
                    _e(j.id),
                    _e(j.kind.replace("_", " ")),
                    f"{j.priority:g}",
                    str(j.gpus),
                    _e(a.pool),
                    _e(_when(instance, j.wait_release)),
                    _e(_when(instance, a.start)),
                    f"{(a.start - j.wait_release) * h:,.1f}",
                    "-" if j.deadline is None else _e(_when(instance, j.deadline)),
                    '<span class="good">yes</span>' if ok else '<span class="bad">late</span>',
                ]
            )
        out.append(
            _table(
                [
                    "job",
                    "kind",
                    "priority",
                    "GPUs",
                    "pool",
                    "release",
                    "start",
                    "wait (h)",
                    "deadline",
                    "on time",
                ],
                rows,
                2,
            )
        )
    return "\n".join(out)


def _figure(ax: Axes) -> Figure:
    figure = ax.get_figure(root=True)
    assert figure is not None
    return figure


def _prices_section(instance: Instance, prices: CapacityPrices) -> str:
    from horizon_opt.export.charts import plot_prices, render

    reading = format_prices(instance, prices).strip().splitlines()
    return "\n".join(
        [
            '<h2 id="prices">Capacity prices</h2>',
            '<p class="sub">What one more node of each pool adds to the relaxation&rsquo;s '
            "bound at each slot (the LP&rsquo;s duals): an upper estimate of what the capacity "
            "is worth, not a plan&rsquo;s gain (benchmarks/README.md measures how well it "
            "predicts re-solves).</p>",
            _img(
                render(_figure(plot_prices(instance, prices))), "capacity prices per pool and slot"
            ),
            "<pre>" + _e("\n".join(reading)) + "</pre>",
        ]
    )


def _labels(plans: Sequence[Plan], labels: Sequence[str] | None) -> list[str]:
    if labels is not None:
        if len(labels) != len(plans):
            raise ValueError(f"{len(labels)} labels for {len(plans)} plans")
        return list(labels)
    names = [p.solver for p in plans]
    return [
        name if names.count(name) == 1 else f"{name} #{names[: k + 1].count(name)}"
        for k, name in enumerate(names)
    ]


def file_labels(plans: Sequence[Plan], files: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Names for plans read from `files`: their solvers; when a solver comes twice, the files'
    names (without extension); when those repeat too, both."""
    solvers = [p.solver for p in plans]
    stems = [Path(f).stem for f in files]
    if len(set(solvers)) == len(solvers):
        return solvers
    if len(set(stems)) == len(stems):
        return stems
    return [f"{s} ({f})" for s, f in zip(solvers, files, strict=True)]


def report_html(
    instance: Instance,
    plans: Sequence[Plan],
    labels: Sequence[str] | None = None,
    prices: CapacityPrices | None = None,
) -> str:
    """The report as one HTML string (see the module docstring).

    `labels` name the plans in the report (default: the solver names, numbered when repeated);
    with `prices`, a section shows them as a heatmap.
    Raises PlanError when a plan is for another instance or names what the instance lacks.
    """

    if not plans:
        raise ValueError("a report needs at least one plan")
    names = _labels(plans, labels)
    for name, plan in zip(names, plans, strict=True):
        ensure_plan_fits(instance, plan, source=name)
    planned = [
        Column(name, plan, evaluate(instance, plan), check(instance, plan).total)
        for name, plan in zip(names, plans, strict=True)
    ]
    title = f"horizon-opt report: {instance.name}"
    nav = " ".join(
        f'<a href="#{anchor}">{text}</a>'
        for anchor, text in [
            ("instance", "Instance"),
            ("plans", "Plans"),
            ("utilization", "Utilization"),
            ("gantt", "Gantt"),
            ("unscheduled", "Why jobs wait"),
            ("waits", "Longest waits"),
            *([("prices", "Capacity prices")] if prices is not None else []),
        ]
    )
    body = "\n".join(
        [
            f"<h1>{_e(title)}</h1>",
            f'<p class="sub">{len(plans)} plan(s): {_e(", ".join(names))}. '
            f"Written by horizon-opt {_e(__version__)}.</p>",
            f"<nav>{nav}</nav>",
            _instance_section(instance),
            _metrics_section(instance, planned),
            _charts_section(instance, planned),
            _unscheduled_section(instance, planned),
            _waits_section(instance, planned),
            *([_prices_section(instance, prices)] if prices is not None else []),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def write_report(
    instance: Instance,
    plans: Sequence[Plan],
    path: str | os.PathLike[str],
    labels: Sequence[str] | None = None,
    prices: CapacityPrices | None = None,
) -> Path:
    """Write the one-file HTML report atomically; returns its path."""
    target = Path(path)
    write_atomic(target, report_html(instance, plans, labels, prices))
    return target
