"""Exports: CSV tables that round-trip, charts that render (PNG and SVG), the `export` command."""

from __future__ import annotations

import csv
import json
import struct
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.errors import InputError, PlanError
from horizon_opt.export import charts
from horizon_opt.export.csv import (
    ASSIGNMENT_COLUMNS,
    INFERENCE_COLUMNS,
    format_indices,
    inference_path,
    parse_indices,
)
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

DEMO = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


@pytest.fixture(scope="module")
def demo() -> Instance:
    return ho.load_instance(DEMO)


@pytest.fixture(scope="module")
def demo_greedy(demo: Instance) -> Plan:
    return ho.solve(demo, "greedy")


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# -- CSV -----------------------------------------------------------------------------------------


def test_indices_text_round_trips() -> None:
    gpus = {"h100-0": [0, 1, 2, 3, 6], "h100-1": [7]}
    assert format_indices(gpus) == "h100-0:0-3,6 h100-1:7"
    assert parse_indices("h100-0:0-3,6 h100-1:7") == gpus
    for bad in ["", "h100-0", "h100-0:", "h100-0:3-1", "h100-0:x"]:
        with pytest.raises(ValueError):
            parse_indices(bad)


def test_csv_round_trips_the_demo_plan(tmp_path: Path, demo: Instance, demo_greedy: Plan) -> None:
    first, second = ho.write_csv(demo, demo_greedy, tmp_path / "plan.csv")
    assert (first, second) == (tmp_path / "plan.csv", tmp_path / "plan-inference.csv")
    assert ho.read_csv(first) == demo_greedy.assignments
    assert ho.read_inference_csv(second) == demo_greedy.inference
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan-inference.csv", "plan.csv"]


def test_csv_is_a_clean_table(tmp_path: Path, demo: Instance, demo_greedy: Plan) -> None:
    first, second = ho.write_csv(demo, demo_greedy, tmp_path / "plan.csv")
    raw = first.read_bytes()
    assert raw.startswith(b"job,kind,priority,")
    assert b"\r\n" in raw  # RFC 4180 line ends, as spreadsheets expect
    with first.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == ASSIGNMENT_COLUMNS
    assert len(rows) == 1 + len(demo_greedy.assignments) + len(demo_greedy.unscheduled)
    assert all(len(r) == len(ASSIGNMENT_COLUMNS) for r in rows)
    everything = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    # Unplanned jobs follow the assignments: no pool or slots, the plan's cause code and reason.
    unplanned = everything[len(demo_greedy.assignments) :]
    assert [(r["job"], r["cause_code"], r["reason"]) for r in unplanned] == [
        (u.job, u.code, u.reason) for u in demo_greedy.unscheduled
    ]
    assert {(r["status"], r["pool"], r["start_slot"], r["on_time"]) for r in unplanned} == {
        ("not-planned", "", "", "no")
    }
    table = everything[: len(demo_greedy.assignments)]
    assert {r["status"] for r in table} <= {"on-time", "late"}
    by_job = {r["job"]: r for r in table}
    a = demo_greedy.assignments[0]
    row = by_job[a.job]
    job = demo.jobs[demo.job_index[a.job]]
    assert row["kind"] == job.kind
    assert row["pool"] == a.pool
    assert row["nodes"] == " ".join(a.gpus)
    assert row["start_time"] == a.start_time and row["start_time"].endswith("Z")
    assert float(row["wait_h"]) == (a.start - job.release) * demo.hours_per_slot
    assert {r["on_time"] for r in table} <= {"yes", "no"}
    m = ho.evaluate(demo, demo_greedy)
    assert sum(r["on_time"] == "yes" for r in table) == m.completed
    with second.open(newline="") as fh:
        inf = list(csv.DictReader(fh))
    assert tuple(inf[0]) == INFERENCE_COLUMNS
    assert sum(int(r["gpus"]) for r in inf) == sum(
        b.replicas * {"chat": 2, "search-embed": 1}[b.service] for b in demo_greedy.inference
    )


def test_csv_without_a_horizon_start(tmp_path: Path, tiny: Instance, tiny_plan: Plan) -> None:
    first, second = ho.write_csv(tiny, tiny_plan, tmp_path / "t.csv")
    assert ho.read_csv(first) == tiny_plan.assignments
    assert ho.read_inference_csv(second) == tiny_plan.inference
    with first.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["start_time"] for r in rows} == {""}
    # tiny: h = 0.5; quant has deadline 2 and ends at 2; ev is released at 1 and starts at 2.
    assert [(r["job"], r["wait_h"], r["on_time"], r["deadline_slot"]) for r in rows] == [
        ("train", "0", "yes", ""),
        ("quant", "0", "yes", "2"),
        ("ev", "0.5", "yes", ""),
    ]


def test_csv_round_trips_fifo_on_a_timestamped_instance(
    tmp_path: Path, instance_of: Callable[[str], Instance]
) -> None:
    inst = instance_of("mixed")
    plan = ho.solve(inst, "fifo")
    assert plan.assignments and plan.inference
    first, second = ho.write_csv(inst, plan, tmp_path / "mixed.csv")
    assert ho.read_csv(first) == plan.assignments
    assert ho.read_inference_csv(second) == plan.inference


def test_csv_quotes_formula_like_names(
    tmp_path: Path,
    compile_spec: Callable[[dict[str, Any]], Instance],
    tiny_spec: dict[str, Any],
    tiny_plan_dict: dict[str, Any],
) -> None:
    """A job id a spreadsheet would evaluate is written as text, and read back unchanged."""
    tiny_spec["jobs"][2]["id"] = "=1+1, quant"
    tiny_plan_dict["assignments"][1]["job"] = "=1+1, quant"
    inst = compile_spec(tiny_spec)
    plan = Plan.parse(tiny_plan_dict)
    first, _ = ho.write_csv(inst, plan, tmp_path / "t.csv")
    assert '"\'=1+1, quant"' in first.read_text()
    assert ho.read_csv(first) == plan.assignments


def test_read_csv_reports_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        ",".join(ASSIGNMENT_COLUMNS) + "\nj,training,1,1,a,a-0,a-0:x,0,1,,,1,0,,0,yes\n"
    )
    with pytest.raises(PlanError) as err:
        ho.read_csv(path)
    assert "row 2" in err.value.problems[0]
    path.write_text("job,pool\nj,a\n")
    with pytest.raises(PlanError, match="missing column"):
        ho.read_csv(path)
    with pytest.raises(PlanError, match="cannot read"):
        ho.read_csv(tmp_path / "missing.csv")


def test_inference_path() -> None:
    assert inference_path("out/plan.csv") == Path("out/plan-inference.csv")


# -- charts --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gantt", "utilization"])
def test_demo_charts_render_as_png(
    tmp_path: Path, demo: Instance, demo_greedy: Plan, kind: charts.ChartKind
) -> None:
    path = charts.write_chart(demo, demo_greedy, kind, tmp_path / f"{kind}.png")
    data = path.read_bytes()
    width, height = png_size(data)
    assert width == 1400 and 600 <= height <= 3000
    assert len(data) > 20_000  # a picture, not an empty canvas
    assert b"http" not in data  # no link in the metadata
    assert [p.name for p in tmp_path.iterdir()] == [f"{kind}.png"]  # no temp file left


@pytest.mark.parametrize("kind", ["gantt", "utilization"])
def test_tiny_charts_render_as_svg(
    tmp_path: Path, tiny: Instance, tiny_plan: Plan, kind: str
) -> None:
    path = tmp_path / f"{kind}.svg"
    charts.write_chart(tiny, tiny_plan, "gantt" if kind == "gantt" else "utilization", path)
    root = ET.fromstring(path.read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(list(root.iter())) > 50
    assert b"<dc:date>" not in path.read_bytes()  # reproducible: no date in the metadata


def test_gantt_shows_ids_outages_and_inference(demo: Instance, demo_greedy: Plan) -> None:
    fig = ho.plot_gantt(demo, demo_greedy)
    ax = fig.axes[0]
    texts = {t.get_text() for t in ax.texts}
    assert any(t.startswith("h100") for t in texts) and any(t.startswith("a100") for t in texts)
    assert "sft-llama-70b-chat" in texts  # a 16-GPU, 14-hour bar is labelled in full
    legend = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    assert {"training", "inference: chat", "inference: search-embed", "node down"} <= legend
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["h100-0", "h100-1"]
    assert ax.xaxis.get_label().get_text() == "time (UTC)"


def test_charts_draw_into_given_axes(tiny: Instance, tiny_plan: Plan) -> None:
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert ho.plot_gantt(tiny, tiny_plan, ax=ax) is fig
    assert ax.xaxis.get_label().get_text() == "slot (30 min each)"
    fig2 = Figure()
    axes = fig2.subplots(2, 1)
    assert ho.plot_utilization(tiny, tiny_plan, ax=list(axes)) is fig2
    assert axes[1].get_title(loc="left").startswith("b (B, 1 nodes x 2 GPUs)")
    fig3 = Figure()
    one = fig3.add_subplot()
    ho.plot_utilization(tiny, tiny_plan, ax=one, pool="a")
    assert one.get_title(loc="left").startswith("a (A, 2 nodes x 4 GPUs)")
    # tiny pool a: batch 4*2 (train) + 2*1 (ev) = 10 GPU-slots, inference forecast
    # (1 + 0.5 + 2 + 1) * 2 = 9, available 8*3 + 4 = 28 -> 19 / 28 = 67.9%
    assert "utilization 67.9%" in one.get_title(loc="left")


def test_gantt_aggregates_many_nodes(
    monkeypatch: pytest.MonkeyPatch, demo: Instance, demo_greedy: Plan
) -> None:
    monkeypatch.setattr(charts, "MAX_NODE_ROWS", 4)  # 12 nodes -> rows of 3 nodes
    fig = ho.plot_gantt(demo, demo_greedy)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["h100-0..2", "h100-3..5", "a100-0..2", "a100-3..5"]
    assert "aggregated" in fig.get_suptitle()
    assert png_size(charts.render(fig))[0] == 1400


def test_charts_refuse_a_plan_of_another_instance(demo: Instance, tiny_plan: Plan) -> None:
    with pytest.raises(PlanError, match="plan is for instance 'tiny', not 'demo-48h'"):
        ho.plot_gantt(demo, tiny_plan)
    with pytest.raises(PlanError):
        ho.plot_utilization(demo, tiny_plan)


def test_charts_refuse_unknown_names(tiny: Instance, tiny_plan_dict: dict[str, Any]) -> None:
    tiny_plan_dict["assignments"][0]["gpus"] = {"a-7": [0, 1, 2, 3]}
    tiny_plan_dict["inference"][0]["service"] = "search"
    with pytest.raises(PlanError) as err:
        ho.plot_gantt(tiny, Plan.parse(tiny_plan_dict))
    assert err.value.problems == [
        "plan: assignments[0].gpus: unknown node 'a-7'",
        "plan: inference[0].service: unknown service 'search'",
    ]


def test_unknown_chart_extension(tmp_path: Path, tiny: Instance, tiny_plan: Plan) -> None:
    with pytest.raises(InputError, match=r"use \.png or \.svg"):
        charts.write_chart(tiny, tiny_plan, "gantt", tmp_path / "g.jpg")
    assert not list(tmp_path.iterdir())


# -- the export command --------------------------------------------------------------------------


def test_export_command_writes_each_format(tmp_path: Path, tiny_files: tuple[Path, Path]) -> None:
    inst, plan = tiny_files
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["export", str(plan), "-i", str(inst), "-f", "csv", "-o", str(out / "t.csv")]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"wrote {out / 't.csv'} (3 assignments) and {out / 't-inference.csv'} (4 inference blocks)"
        in result.stdout
    )
    assert len(ho.read_csv(out / "t.csv")) == 3
    for fmt, name in [("gantt", "g.png"), ("utilization", "u.svg")]:
        result = runner.invoke(
            app,
            ["export", str(plan), "--instance", str(inst), "--format", fmt, "-o", str(out / name)],
        )
        assert result.exit_code == 0, result.output
        assert f"wrote {out / name}" in result.stdout
    assert png_size((out / "g.png").read_bytes())[0] == 1400
    ET.fromstring((out / "u.svg").read_bytes())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "pie", "-o", "x.png"], "error: --format: unknown format 'pie'"),
        (
            ["-f", "gantt", "-o", "x.jpg"],
            "error: --output: gantt needs a file name ending in .png or .svg",
        ),
        (["-f", "csv", "-o", "x.xlsx"], "error: --output: csv needs a file name ending in .csv"),
    ],
)
def test_export_command_bad_options(
    tmp_path: Path, tiny_files: tuple[Path, Path], args: list[str], message: str
) -> None:
    inst, plan = tiny_files
    args = [a if not a.startswith("x.") else str(tmp_path / a) for a in args]
    result = runner.invoke(app, ["export", str(plan), "-i", str(inst), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not list(tmp_path.glob("x.*"))


def test_export_command_bad_files(tmp_path: Path, tiny_files: tuple[Path, Path]) -> None:
    inst, plan = tiny_files
    missing = runner.invoke(
        app,
        [
            "export",
            str(tmp_path / "nope.json"),
            "-i",
            str(inst),
            "-f",
            "csv",
            "-o",
            str(tmp_path / "x.csv"),
        ],
    )
    assert missing.exit_code == 2
    assert "nope.json: cannot read" in missing.stderr
    other = json.loads(plan.read_text())
    other["instance"] = "demo-48h"
    plan.write_text(json.dumps(other))
    wrong = runner.invoke(
        app, ["export", str(plan), "-i", str(inst), "-f", "gantt", "-o", str(tmp_path / "x.png")]
    )
    assert wrong.exit_code == 2
    assert wrong.stderr == f"error: {plan}: the plan is for instance 'demo-48h', not 'tiny'\n"
    assert "Traceback" not in wrong.output
    assert not (tmp_path / "x.png").exists()


def test_charts_and_csv_for_every_small_instance(tmp_path: Path, any_instance: Instance) -> None:
    """No jobs, no services, gangs, outages, timestamps: the figures build and the CSV round-trips."""
    plan = ho.solve(any_instance, "fifo")
    gantt = ho.plot_gantt(any_instance, plan)
    assert len(gantt.axes) == 1
    util = ho.plot_utilization(any_instance, plan)
    assert len(util.axes) == len(any_instance.pools) + (len(any_instance.pools) > 1)
    first, second = ho.write_csv(any_instance, plan, tmp_path / "p.csv")
    assert ho.read_csv(first) == plan.assignments
    assert ho.read_inference_csv(second) == plan.inference
