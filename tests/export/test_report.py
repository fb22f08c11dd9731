"""The one-file HTML report: self-contained, complete, and written by `report` and `compare`."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.errors import PlanError
from horizon_opt.export import file_labels, report_html
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

DEMO = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def demo() -> Instance:
    return ho.load_instance(DEMO)


@pytest.fixture(scope="module")
def demo_plans(demo: Instance) -> list[Plan]:
    return [ho.solve(demo, "fifo"), ho.solve(demo, "greedy")]


@pytest.fixture(scope="module")
def demo_html(
    tmp_path_factory: pytest.TempPathFactory, demo: Instance, demo_plans: list[Plan]
) -> str:
    path = tmp_path_factory.mktemp("report") / "report.html"
    assert ho.write_report(demo, demo_plans, path) == path
    return path.read_text(encoding="utf-8")


def assert_self_contained(text: str) -> None:
    assert "http://" not in text and "https://" not in text
    assert 'src="/' not in text and "url(" not in text and "@import" not in text
    assert "<script" not in text and "<link" not in text
    assert all(
        src.startswith("data:image/png;base64,") for src in re.findall(r'src="([^"]*)"', text)
    )
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', text))


def test_demo_report_is_self_contained(demo_html: str) -> None:
    assert demo_html.startswith("<!DOCTYPE html>")
    assert demo_html.rstrip().endswith("</html>")
    assert_self_contained(demo_html)
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', demo_html)
    assert len(images) == 4  # a utilization and a Gantt chart per plan
    for data in images:
        png = base64.b64decode(data, validate=True)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_demo_report_has_every_section(
    demo_html: str, demo: Instance, demo_plans: list[Plan]
) -> None:
    fifo, greedy = demo_plans
    for anchor in ["instance", "plans", "utilization", "gantt", "unscheduled", "waits"]:
        assert f'id="{anchor}"' in demo_html
    # Instance summary: pools, the outage, services.
    assert "H100-80GB-SXM" in demo_html and "a100-5" in demo_html and "search-embed" in demo_html
    # Metrics side by side, fifo first as the reference, greedy with its deltas.
    assert "fifo (reference)" in demo_html
    mf, mg = ho.evaluate(demo, fifo), ho.evaluate(demo, greedy)
    pp = 100 * (mg.utilization - mf.utilization)
    assert f"{100 * mg.utilization:.1f}%" in demo_html and f"({pp:+.1f} pp)" in demo_html
    assert f"({100 * (mg.pwo - mf.pwo) / mf.pwo:+.0f}%)" in demo_html
    assert f"{mg.completed_by_kind['training']} / 28" in demo_html
    assert f"{mg.mean_wait_hours:.2f}" in demo_html
    assert demo_html.count('<span class="good">valid</span>') == 2
    # Late and unplanned jobs with their cause codes and reasons, per plan.
    late = mf.scheduled - mf.completed
    assert f"fifo: {len(fifo.unscheduled) + late} late or unplanned" in demo_html
    for u in greedy.unscheduled:
        assert u.reason.replace("'", "&#x27;") in demo_html
        assert f"<td>{u.code}</td>" in demo_html
    # Longest waits.
    h = demo.hours_per_slot
    longest = max(
        greedy.assignments, key=lambda a: a.start - demo.jobs[demo.job_index[a.job]].release
    )
    assert longest.job in demo_html
    wait = (longest.start - demo.jobs[demo.job_index[longest.job]].release) * h
    assert f"{wait:,.1f}" in demo_html


def test_report_escapes_names_and_refuses_other_plans(
    tiny: Instance, tiny_plan: Plan, demo_plans: list[Plan]
) -> None:
    text = report_html(tiny, [tiny_plan], labels=["<b>mine</b>"])
    assert "&lt;b&gt;mine&lt;/b&gt;" in text and "<b>mine</b>" not in text
    assert_self_contained(text)
    assert "Every job runs on time." in text
    with pytest.raises(PlanError, match="plan is for instance 'demo-48h', not 'tiny'"):
        report_html(tiny, [tiny_plan, demo_plans[0]])
    with pytest.raises(ValueError):
        report_html(tiny, [])


def test_report_labels_repeated_solvers(tiny_plan: Plan) -> None:
    from horizon_opt.export.report import _labels

    assert _labels([tiny_plan, tiny_plan], None) == ["hand #1", "hand #2"]
    assert _labels([tiny_plan], ["mine"]) == ["mine"]
    with pytest.raises(ValueError):
        _labels([tiny_plan], ["a", "b"])


def test_report_command(tmp_path: Path, tiny_files: tuple[Path, Path]) -> None:
    inst, plan = tiny_files
    out = tmp_path / "out" / "r.html"
    result = runner.invoke(app, ["report", str(inst), str(plan), str(plan), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"report written to {out} (2 plan(s), ")
    text = out.read_text()
    assert_self_contained(text)
    assert text.count("data:image/png;base64,") == 4


def test_report_command_bad_input(tmp_path: Path, tiny_files: tuple[Path, Path]) -> None:
    inst, plan = tiny_files
    out = tmp_path / "r.html"
    missing = runner.invoke(app, ["report", str(inst), str(tmp_path / "no.json"), "-o", str(out)])
    assert missing.exit_code == 2
    assert "no.json: cannot read" in missing.stderr
    data = json.loads(plan.read_text())
    data["assignments"][0]["job"] = "nope"
    plan.write_text(json.dumps(data))
    bad = runner.invoke(app, ["report", str(inst), str(plan), "-o", str(out)])
    assert bad.exit_code == 2
    assert f"error: {plan}: assignments[0].job: unknown job 'nope'" in bad.stderr
    assert "Traceback" not in bad.output
    assert not out.exists()


def test_compare_writes_the_report_by_default(
    tmp_path: Path, tiny_files: tuple[Path, Path]
) -> None:
    inst, _ = tiny_files
    folder = tmp_path / "cmp"
    result = runner.invoke(
        app, ["compare", str(inst), "--solvers", "fifo,greedy", "--output-dir", str(folder)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith(f"report written to {folder / 'report.html'}")
    assert sorted(p.name for p in folder.iterdir()) == ["fifo.json", "greedy.json", "report.html"]
    assert "fifo (reference)" in (folder / "report.html").read_text()

    quiet = tmp_path / "quiet"
    result = runner.invoke(
        app,
        ["compare", str(inst), "--solvers", "fifo", "--output-dir", str(quiet), "--no-report"],
    )
    assert result.exit_code == 0, result.output
    assert "report written" not in result.stdout
    assert [p.name for p in quiet.iterdir()] == ["fifo.json"]


def test_report_with_prices_has_the_heatmap(demo: Instance, demo_plans: list[Plan]) -> None:
    from horizon_opt.analysis.prices import capacity_prices

    text = report_html(demo, demo_plans, prices=capacity_prices(demo, 10.0))
    assert '<h2 id="prices">Capacity prices</h2>' in text
    assert "One more h100 node is worth about" in text
    assert text.count("data:image/png;base64,") == 2 * len(demo_plans) + 1
    assert_self_contained(text)


def test_plans_from_files_are_named_by_solver_then_file(tiny_plan: Plan) -> None:
    """Solvers when they differ; file names when a solver repeats; both when those repeat."""
    other = tiny_plan.model_copy(update={"solver": "greedy"})
    assert file_labels([tiny_plan, other], ["x.json", "x.json"]) == ["hand", "greedy"]
    two = [tiny_plan, tiny_plan]
    assert file_labels(two, ["a/x.json", "b/y.json"]) == ["x", "y"]
    twice = [Path("a/x.json"), Path("b/x.json")]
    assert file_labels(two, twice) == [f"hand ({twice[0]})", f"hand ({twice[1]})"]
