"""`horizon-opt import slurm|kueue` from the command line: notes on stderr, an instance that
loads, and bad payloads that exit 2 with the file named and nothing written."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app

DATA = Path(__file__).parents[1] / "data"
runner = CliRunner()

SOURCES = {
    "slurm": [str(DATA / "slurm" / "squeue.json"), "--sacct", str(DATA / "slurm" / "sacct.json")],
    "kueue": [str(DATA / "kueue" / "workloads.json"), "--now", "2026-12-01T10:30:00Z"],
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_import_writes_a_plannable_instance(source: str, tmp_path: Path) -> None:
    out = tmp_path / "inst.yaml"
    cluster = str(DATA / source / "cluster.yaml")
    result = runner.invoke(app, ["import", source, *SOURCES[source], "-c", cluster, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "note: " in result.stderr and "jobs imported;" in result.stderr
    inst = ho.load_instance(out)
    assert any(j.placed is not None for j in inst.jobs)  # running jobs stay where they run
    plan = ho.solve(inst, "greedy")
    assert ho.check(inst, plan) == []


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_demand_csv_of_the_cluster_file_is_read_and_kept_reachable(
    source: str, tmp_path: Path
) -> None:
    """A service's demand CSV is relative to the cluster file; the written instance names it
    relative to itself, wherever it is written."""
    text = (DATA / source / "cluster.yaml").read_text()
    start = datetime(2026, 11, 30, tzinfo=UTC)
    rows = [f"{(start + timedelta(hours=h)).isoformat()},{1 + h % 3}" for h in range(24 * 6)]
    (tmp_path / "chat.csv").write_text("time,replicas\n" + "\n".join(rows) + "\n")
    lines = text.splitlines()
    at = next(k for k, line in enumerate(lines) if line.strip().startswith("demand:"))
    end = next((k for k in range(at + 1, len(lines)) if not lines[k].startswith("  " * 3)), None)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at : end or len(lines)] = [f"{indent}demand: {{csv: chat.csv, column: replicas}}"]
    (tmp_path / "cluster.yaml").write_text("\n".join(lines) + "\n")
    out = tmp_path / "sub" / "inst.yaml"
    args = ["import", source, *SOURCES[source], "-c", str(tmp_path / "cluster.yaml")]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "csv: ../chat.csv" in out.read_text()
    inst = ho.load_instance(out)
    assert inst.services[0].demand.max() == 3


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_bad_payload_exits_2_and_writes_nothing(source: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": [{"job_id": "x"}], "items": [{"kind": "Workload"}]')
    out = tmp_path / "inst.yaml"
    cluster = str(DATA / source / "cluster.yaml")
    result = runner.invoke(app, ["import", source, str(bad), "-c", cluster, "-o", str(out)])
    assert result.exit_code == 2
    assert f"error: {bad}: not valid JSON" in result.stderr and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "expected", "found"),
    [
        (["sacct.json"], "squeue", "sacct"),  # the history given as the queue
        (["squeue.json", "--sacct", "squeue.json"], "sacct", "squeue"),  # the queue as history
        (["sacct-v0.0.38.json"], "squeue", "sacct"),  # no meta.command: told by the jobs' shape
    ],
)
def test_a_slurm_payload_of_the_other_kind_is_refused(
    args: list[str], expected: str, found: str, tmp_path: Path
) -> None:
    """An sacct file read as the queue was an empty queue and exit 0; it is refused, naming what
    was expected and what was found."""
    paths = [a if a.startswith("--") else str(DATA / "slurm" / a) for a in args]
    out = tmp_path / "inst.yaml"
    cluster = str(DATA / "slurm" / "cluster.yaml")
    result = runner.invoke(app, ["import", "slurm", *paths, "-c", cluster, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"expected the output of `{expected} --json`, found the output of `{found} --json`" in (
        result.stderr
    )
    assert "Traceback" not in result.output and not out.exists()


def test_a_data_parser_outside_the_documented_range_is_noted(tmp_path: Path) -> None:
    payload = json.loads((DATA / "slurm" / "squeue.json").read_text())
    payload["meta"]["plugin"]["data_parser"] = "data_parser/v0.0.45"
    queue = tmp_path / "squeue.json"
    queue.write_text(json.dumps(payload))
    out = tmp_path / "inst.yaml"
    cluster = str(DATA / "slurm" / "cluster.yaml")
    result = runner.invoke(app, ["import", "slurm", str(queue), "-c", cluster, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "data_parser v0.0.45 is outside the documented v0.0.38 to v0.0.42" in result.stderr


def test_a_kueue_api_version_outside_the_documented_ones_is_noted(tmp_path: Path) -> None:
    payload = json.loads((DATA / "kueue" / "workloads.json").read_text())
    for item in payload["items"]:
        item["apiVersion"] = "kueue.x-k8s.io/v1"
    workloads = tmp_path / "workloads.json"
    workloads.write_text(json.dumps(payload))
    out = tmp_path / "inst.yaml"
    cluster = str(DATA / "kueue" / "cluster.yaml")
    args = ["import", "kueue", str(workloads), "-c", cluster, "-o", str(out)]
    result = runner.invoke(app, [*args, "--now", "2026-12-01T10:30:00Z"])
    assert result.exit_code == 0, result.output
    assert "kueue.x-k8s.io/v1 is outside the documented kueue.x-k8s.io/v1beta1 and" in (
        result.stderr
    )


def test_notes_of_one_cause_are_one_line_unless_all_are_asked_for(tmp_path: Path) -> None:
    """One array record of twelve pending tasks on a partition no pool lists was twelve
    identical lines (real payloads gave thousands); the summary says it once, with the count
    and three of the tasks."""
    payload = json.loads((DATA / "slurm" / "squeue.json").read_text())
    array = next(j for j in payload["jobs"] if j["job_id"] == 1010)
    payload["jobs"] = [{**array, "array_task_string": "0-11", "partition": "nowhere"}]
    queue = tmp_path / "squeue.json"
    queue.write_text(json.dumps(payload))
    cluster = str(DATA / "slurm" / "cluster.yaml")
    base = ["import", "slurm", str(queue), "-c", cluster, "-o", str(tmp_path / "inst.yaml")]
    summary = runner.invoke(app, base)
    assert summary.exit_code == 0, summary.output
    lines = [line for line in summary.stderr.splitlines() if "nowhere" in line]
    assert lines == [
        "note: partition: 'nowhere': no pool of the cluster file lists it in `partitions`; "
        "left out (12 jobs: 1010_0, 1010_1, 1010_2 and 9 more)"
    ]
    every = runner.invoke(app, [*base, "--notes", "all"])
    assert len([line for line in every.stderr.splitlines() if "nowhere" in line]) == 12
    bad = runner.invoke(app, [*base, "--notes", "some"])
    assert bad.exit_code == 2 and "use summary or all, got 'some'" in bad.output


def test_note_lines_keep_single_notes_as_they_are() -> None:
    from horizon_opt.importers.result import Note, note_lines

    notes = [Note("a", "gres", "x"), Note("", "meta", "y"), Note("a", "gres", "x")]
    assert note_lines(notes) == ["a: gres: x", "meta: y"]
