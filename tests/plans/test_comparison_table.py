"""The comparison table: one set of rows, rendered as the terminal table, HTML, markdown and CSV.

Two plans of TINY (conftest.py: 3 jobs, one each of training, quantization and evaluation) with
metrics set by hand, so every cell and change below can be read off them.
"""

from __future__ import annotations

import csv
import io

import pytest

from horizon_opt.model.instance import Instance
from horizon_opt.plans.comparison_table import (
    Column,
    Comparison,
    compare_columns,
    markdown_table,
    to_csv,
    to_html,
    to_markdown,
    to_text,
)
from horizon_opt.plans.plan import Metrics, Plan

KINDS = {"training": 1, "batch_inference": 0, "quantization": 0, "evaluation": 0, "other": 0}


@pytest.fixture
def columns(tiny_plan: Plan) -> list[Column]:
    reference = Metrics(
        utilization=0.5,
        pwo=10.0,
        completed=1,
        completed_by_kind=KINDS,
        mean_wait_hours=2.0,
        reserved_idle_gpu_hours=1234.5,
        batch_gpu_hours=4.0,
        late=1,
    )
    better = Metrics(
        utilization=0.625,
        pwo=12.0,
        completed=3,
        completed_by_kind={**KINDS, "quantization": 1, "evaluation": 1},
        mean_wait_hours=0.5,
        reserved_idle_gpu_hours=1234.5,
        batch_gpu_hours=6.0,
    )
    cpsat = tiny_plan.model_copy(
        update={"solver": "cpsat", "status": "feasible", "bound": 13.0, "gap": 1 / 13}
    )
    cpsat = cpsat.model_copy(update={"wall_seconds": 1.234})
    return [Column("fifo", tiny_plan, reference), Column("cpsat", cpsat, better)]


@pytest.fixture
def table(tiny: Instance, columns: list[Column]) -> Comparison:
    return compare_columns(tiny, columns)


def test_text_is_the_brief_view(table: Comparison) -> None:
    assert to_text(table) == "\n".join(
        [
            "                          fifo             cpsat",
            "------------------------------------------------",
            "utilization              50.0%  62.5% (+12.5 pp)",
            "pwo                       10.0       12.0 (+20%)",
            "jobs on time             1 / 3             3 / 3",
            "  train                  1 / 1             1 / 1",
            "  quant                  0 / 1             1 / 1",
            "  eval                   0 / 1             1 / 1",
            "mean wait (h)             2.00              0.50",
            "reserved idle GPU-h    1,234.5           1,234.5",
            "proven bound                 -              13.0",
            "gap                          -             7.69%",
            "status               heuristic          feasible",
            "solve time (s)            0.00              1.23",
        ]
    )


def test_changes_and_their_tones(table: Comparison) -> None:
    rows = {r.title: r for r in table.rows}
    assert all(r.cells[0].change is None for r in table.rows)  # the reference

    def change(title: str) -> tuple[str, str] | None:
        c = rows[title].cells[1].change
        return None if c is None else (c.text, c.tone)

    assert change("pwo (priority-weighted output)") == ("+20%", "better")
    assert change("jobs on time") == ("+2", "better")
    assert change("mean wait (h)") == ("-1.50", "better")
    assert change("reserved idle GPU-h") == ("+0.0", "same")
    assert change("training") == ("+0", "same") and change("evaluation") == ("+1", "better")
    assert change("status") is None and change("batch GPU-h") is None
    assert "checker" not in rows  # only when every plan was checked


def test_html_shows_every_row_with_coloured_changes(tiny: Instance, columns: list[Column]) -> None:
    checked = [Column(c.label, c.plan, c.metrics, violations=k) for k, c in enumerate(columns)]
    text = to_html(compare_columns(tiny, checked))
    assert text.startswith('<table class="metrics"><thead><tr><th class="l"></th>')
    assert '<th class="ref">fifo (reference)</th><th>cpsat</th>' in text
    assert (
        '<tr><td>checker</td><td><span class="good">valid</span></td>'
        '<td><span class="bad">1 violation(s)</span></td></tr>'
    ) in text
    assert '<td>62.5% <span class="better">(+12.5 pp)</span></td>' in text
    assert '<td>3 / 3 <span class="better">(+2)</span></td>' in text
    assert '<tr class="sub"><td>quantization</td>' in text
    assert '<td>1,234.5 <span class="muted">(=)</span></td>' in text
    assert "<tr><td>scheduled late (no value)</td><td>1</td><td>0</td></tr>" in text
    assert "<tr><td>batch GPU-h</td><td>4.0</td><td>6.0</td></tr>" in text


def test_html_escapes_labels(tiny: Instance, columns: list[Column]) -> None:
    named = [Column("<b>", c.plan, c.metrics) for c in columns]
    text = to_html(compare_columns(tiny, named))
    assert "&lt;b&gt; (reference)" in text and "<b>" not in text


def test_markdown_has_every_row_and_change(table: Comparison) -> None:
    lines = to_markdown(table).splitlines()
    assert lines[:2] == ["|  | fifo | cpsat |", "| --- | --- | --- |"]
    assert "| jobs on time | 1 / 3 | 3 / 3 (+2) |" in lines
    assert "| pwo (priority-weighted output) | 10.0 | 12.0 (+20%) |" in lines
    assert "| unscheduled | 0 | 0 |" in lines
    assert len(lines) == 2 + len(table.rows)


def test_csv_has_values_then_changes(table: Comparison) -> None:
    rows = list(csv.reader(io.StringIO(to_csv(table))))
    assert rows[0] == ["metric", "fifo", "cpsat", "cpsat change"]
    assert ["utilization", "50.0%", "62.5%", "+12.5 pp"] in rows
    assert ["status", "heuristic", "feasible", ""] in rows
    assert len(rows) == 1 + len(table.rows)


def test_markdown_table_layout() -> None:
    assert markdown_table(["a", "b"], [["1", ""], ["x", "y"]]) == (
        "| a | b |\n| --- | --- |\n| 1 |  |\n| x | y |"
    )


def test_a_reference_without_pwo_shows_no_relative_change(
    tiny: Instance, columns: list[Column]
) -> None:
    empty = Column("none", columns[0].plan, Metrics())
    table = compare_columns(tiny, [empty, columns[1]])
    pwo = next(r for r in table.rows if r.label == "pwo")
    assert pwo.cells[1].change is None
    assert "12.0 (" not in to_text(table)


def test_no_plans_is_an_error(tiny: Instance) -> None:
    with pytest.raises(ValueError):
        compare_columns(tiny, [])
