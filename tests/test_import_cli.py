"""`horizon-opt import slurm|kueue` from the command line: notes on stderr, an instance that
loads, and bad payloads that exit 2 with the file named and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app

DATA = Path(__file__).parent / "data"
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
def test_a_bad_payload_exits_2_and_writes_nothing(source: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": [{"job_id": "x"}], "items": [{"kind": "Workload"}]')
    out = tmp_path / "inst.yaml"
    cluster = str(DATA / source / "cluster.yaml")
    result = runner.invoke(app, ["import", source, str(bad), "-c", cluster, "-o", str(out)])
    assert result.exit_code == 2
    assert f"error: {bad}: not valid JSON" in result.stderr and "Traceback" not in result.output
    assert not out.exists()
