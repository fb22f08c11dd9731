"""Plans of one instance side by side: the rows are defined once, here, and rendered as plain
text (`horizon-opt compare`), HTML (the report), markdown and CSV.

A row is a label and one cell per plan; a cell is the plan's value and, for every plan but the
first (the reference), its change against the reference. The terminal is narrow, so the text
rendering is the brief view: it leaves out the rows marked `in_text=False` and shows changes
only where `change_in_text` says so. The other renderings show everything.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import JOB_KINDS
from horizon_opt.plans.plan import Metrics, Plan

Tone = Literal["better", "worse", "same"]
Verdict = Literal["good", "bad"]

KIND_ABBREVIATIONS = {
    "training": "train",
    "batch_inference": "b-inf",
    "quantization": "quant",
    "evaluation": "eval",
    "other": "other",
}


@dataclass(frozen=True)
class Change:
    """A plan's change against the reference plan, on one row."""

    text: str  # signed, with its unit: "+23.9 pp", "+103%", "-2"
    tone: Tone


@dataclass(frozen=True)
class Cell:
    value: str
    change: Change | None = None  # None for the reference, and on rows that show no change
    verdict: Verdict | None = None  # colours the value in HTML (the checker's verdict)


@dataclass(frozen=True)
class Row:
    label: str  # short, for the terminal
    title: str  # in full, for the other renderings
    cells: tuple[Cell, ...]
    breakdown: bool = False  # a part of the row above (jobs on time by kind)
    in_text: bool = True  # the terminal table shows the row
    change_in_text: bool = False  # ... and its changes, where they are the headline


@dataclass(frozen=True)
class Column:
    """One plan of the comparison: its header, the plan, its metrics, and the checker's
    violation count when the plan was checked (a `checker` row appears when all were)."""

    label: str
    plan: Plan
    metrics: Metrics
    violations: int | None = None


@dataclass(frozen=True)
class Comparison:
    labels: tuple[str, ...]  # the first is the reference
    rows: tuple[Row, ...]


def _tone(difference: float, higher_is_better: bool) -> Tone:
    if abs(difference) < 1e-12:
        return "same"
    return "better" if (difference > 0) == higher_is_better else "worse"


def _points(value: float, reference: float) -> Change:
    """A change of a fraction, in percentage points."""
    difference = 100 * (value - reference)
    return Change(f"{difference:+.1f} pp", _tone(difference, higher_is_better=True))


def _relative(value: float, reference: float) -> Change | None:
    """A change in % of the reference; none when the reference is not positive."""
    if reference <= 0:
        return None
    return Change(
        f"{100 * (value - reference) / reference:+.0f}%",
        _tone(value - reference, higher_is_better=True),
    )


def _difference(value: float, reference: float, fmt: str, higher_is_better: bool) -> Change:
    difference = value - reference
    return Change(fmt.format(difference), _tone(difference, higher_is_better))


class _Rows:
    """The rows of a comparison as they are added: a cell per column, changes against the
    first column."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self.columns = columns
        self.rows: list[Row] = []

    def add(
        self,
        label: str,
        value: Callable[[Column], str],
        change: Callable[[Column, Column], Change | None] | None = None,
        *,
        title: str | None = None,
        verdict: Callable[[Column], Verdict] | None = None,
        breakdown: bool = False,
        in_text: bool = True,
        change_in_text: bool = False,
    ) -> None:
        reference = self.columns[0]
        cells = tuple(
            Cell(
                value(c),
                None if change is None or k == 0 else change(c, reference),
                None if verdict is None else verdict(c),
            )
            for k, c in enumerate(self.columns)
        )
        self.rows.append(
            Row(label, title or label, cells, breakdown, in_text, change_in_text),
        )


def _on_time_rows(rows: _Rows, instance: Instance) -> None:
    """Jobs on time, in all and by kind (the kinds the instance has)."""
    total = len(instance.jobs)
    rows.add(
        "jobs on time",
        lambda c: f"{c.metrics.completed} / {total}",
        lambda c, r: _difference(
            c.metrics.completed, r.metrics.completed, "{:+.0f}", higher_is_better=True
        ),
    )
    for kind in JOB_KINDS:
        of = sum(1 for j in instance.jobs if j.kind == kind)
        if of:
            _kind_on_time_row(rows, kind, of)


def _kind_on_time_row(rows: _Rows, kind: str, of: int) -> None:
    rows.add(
        KIND_ABBREVIATIONS[kind],
        lambda c: f"{c.metrics.completed_by_kind.get(kind, 0)} / {of}",
        lambda c, r: _difference(
            c.metrics.completed_by_kind.get(kind, 0),
            r.metrics.completed_by_kind.get(kind, 0),
            "{:+.0f}",
            higher_is_better=True,
        ),
        title=kind.replace("_", " "),
        breakdown=True,
    )


def _cost_rows(rows: _Rows) -> None:
    """What the plan leaves out or waits for, and the GPUs it holds idle or uses."""
    rows.add("scheduled late (no value)", lambda c: str(c.metrics.late), in_text=False)
    rows.add("unscheduled", lambda c: str(len(c.plan.unscheduled)), in_text=False)
    rows.add(
        "mean wait (h)",
        lambda c: f"{c.metrics.mean_wait_hours:.2f}",
        lambda c, r: _difference(
            c.metrics.mean_wait_hours, r.metrics.mean_wait_hours, "{:+.2f}", higher_is_better=False
        ),
    )
    rows.add(
        "reserved idle GPU-h",
        lambda c: f"{c.metrics.reserved_idle_gpu_hours:,.1f}",
        lambda c, r: _difference(
            c.metrics.reserved_idle_gpu_hours,
            r.metrics.reserved_idle_gpu_hours,
            "{:+,.1f}",
            higher_is_better=False,
        ),
    )
    rows.add("batch GPU-h", lambda c: f"{c.metrics.batch_gpu_hours:,.1f}", in_text=False)


def _team_rows(rows: _Rows, instance: Instance) -> None:
    """Per team: GPU-hours used against its quota (of them borrowed) and pwo; then fairness."""
    for team in instance.teams:
        _one_team_rows(rows, team.name)
    rows.add(
        "team fairness",
        lambda c: "-" if c.metrics.team_fairness is None else f"{c.metrics.team_fairness:.3f}",
        title="team fairness (Jain's index of share / quota share; 1 = fair)",
    )


def _one_team_rows(rows: _Rows, name: str) -> None:
    def used(c: Column) -> str:
        f = c.metrics.teams[name]
        return f"{f.gpu_hours:,.0f} / {f.quota_gpu_hours:,.0f} ({f.borrowed_gpu_hours:,.0f})"

    rows.add(
        f"{name} GPU-h",
        used,
        title=f"team {name}: GPU-hours used / quota (borrowed above its quota)",
    )
    rows.add(
        f"{name} pwo",
        lambda c: f"{c.metrics.teams[name].pwo:,.1f}",
        lambda c, r: _relative(c.metrics.teams[name].pwo, r.metrics.teams[name].pwo),
        title=f"team {name}: pwo",
        breakdown=True,
    )


def compare_columns(instance: Instance, columns: Sequence[Column]) -> Comparison:
    """The comparison rows of plans of `instance`, the first column being the reference."""
    if not columns:
        raise ValueError("a comparison needs at least one plan")
    rows = _Rows(columns)
    if all(c.violations is not None for c in columns):
        rows.add(
            "checker",
            lambda c: "valid" if c.violations == 0 else f"{c.violations} violation(s)",
            verdict=lambda c: "good" if c.violations == 0 else "bad",
            in_text=False,
        )
    rows.add(
        "utilization",
        lambda c: f"{100 * c.metrics.utilization:.1f}%",
        lambda c, r: _points(c.metrics.utilization, r.metrics.utilization),
        change_in_text=True,
    )
    rows.add(
        "pwo",
        lambda c: f"{c.metrics.pwo:,.1f}",
        lambda c, r: _relative(c.metrics.pwo, r.metrics.pwo),
        title="pwo (priority-weighted output)",
        change_in_text=True,
    )
    _on_time_rows(rows, instance)
    _cost_rows(rows)
    if instance.teams:
        _team_rows(rows, instance)
    rows.add("proven bound", lambda c: "-" if c.plan.bound is None else f"{c.plan.bound:,.1f}")
    rows.add("gap", lambda c: "-" if c.plan.gap is None else f"{100 * c.plan.gap:.2f}%")
    rows.add("status", lambda c: c.plan.status)
    rows.add("solve time (s)", lambda c: f"{c.plan.wall_seconds:.2f}")
    return Comparison(tuple(c.label for c in columns), tuple(rows.rows))


# -- renderings --------------------------------------------------------------------------------


def to_text(comparison: Comparison) -> str:
    """The brief view as aligned columns: labels left, cells right, a rule under the header."""

    def cell(c: Cell, with_change: bool) -> str:
        return c.value + (f" ({c.change.text})" if with_change and c.change is not None else "")

    table = [("", list(comparison.labels))] + [
        (
            ("  " if r.breakdown else "") + r.label,
            [cell(c, r.change_in_text) for c in r.cells],
        )
        for r in comparison.rows
        if r.in_text
    ]
    label_width = max(len(label) for label, _ in table)
    widths = [max(len(cells[k]) for _, cells in table) for k in range(len(comparison.labels))]
    lines = [
        "  ".join(
            [label.ljust(label_width), *(c.rjust(w) for c, w in zip(cells, widths, strict=True))]
        )
        for label, cells in table
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def to_html(comparison: Comparison) -> str:
    """An HTML table; the classes `ref`, `sub`, `better`, `worse`, `muted`, `good` and `bad` are
    for the report's style sheet."""

    def e(text: str) -> str:
        return html.escape(text, quote=True)

    def cell(c: Cell) -> str:
        out = e(c.value) if c.verdict is None else f'<span class="{c.verdict}">{e(c.value)}</span>'
        if c.change is None:
            return out
        if c.change.tone == "same":
            return out + ' <span class="muted">(=)</span>'
        return out + f' <span class="{c.change.tone}">({e(c.change.text)})</span>'

    head = '<th class="l"></th>' + "".join(
        f'<th class="ref">{e(label)} (reference)</th>' if k == 0 else f"<th>{e(label)}</th>"
        for k, label in enumerate(comparison.labels)
    )
    body = "".join(
        ('<tr class="sub">' if r.breakdown else "<tr>")
        + f"<td>{e(r.title)}</td>"
        + "".join(f"<td>{cell(c)}</td>" for c in r.cells)
        + "</tr>"
        for r in comparison.rows
    )
    return f'<table class="metrics"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table, one line per row; cells are written as given."""
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def to_markdown(comparison: Comparison) -> str:
    """A markdown table of every row, each cell with its change against the reference."""

    def md(text: str) -> str:
        return text.replace("|", "\\|")

    def cell(c: Cell) -> str:
        return md(c.value + ("" if c.change is None else f" ({c.change.text})"))

    return markdown_table(
        ["", *(md(label) for label in comparison.labels)],
        ([md(r.title), *(cell(c) for c in r.cells)] for r in comparison.rows),
    )


def to_csv(comparison: Comparison) -> str:
    """Every row as CSV: the values of each plan, then each plan's change against the first."""
    labels = comparison.labels
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["metric", *labels, *(f"{label} change" for label in labels[1:])])
    for r in comparison.rows:
        changes = ["" if c.change is None else c.change.text for c in r.cells[1:]]
        writer.writerow([r.title, *(c.value for c in r.cells), *changes])
    return buffer.getvalue()
