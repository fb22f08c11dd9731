"""`import csv` and the cluster file: a job table becomes an instance that loads, solves and
checks; every field lands where FORMAT.md puts it; bad tables name their row and column."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.importers import read_cluster
from horizon_opt.importers.cluster import horizon_start
from horizon_opt.importers.result import Note, gpu_indices
from horizon_opt.importers.table import import_table

DATA = Path(__file__).parents[1] / "data" / "csv"
SNAPSHOT = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
runner = CliRunner()


def imported(table: Path = DATA / "jobs.csv") -> ho.Instance:
    return import_table(table, read_cluster(DATA / "cluster.yaml"), snapshot=SNAPSHOT).compile()


def test_horizon_starts_one_slot_before_the_snapshot_slot() -> None:
    # 10:30 lies in the 10:00 slot; slot 0 is 09:00, so `now` (rounded up) is slot 2 (11:00).
    cluster = read_cluster(DATA / "cluster.yaml")
    assert horizon_start(cluster, SNAPSHOT) == datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert imported().now == 2


def test_fields_land_where_format_puts_them() -> None:
    inst = imported()
    ft, ev, emb = (
        inst.jobs[inst.job_index[i]] for i in ("ft-llama-70b", "eval-70b", "embed-corpus")
    )
    # ft: 16 GPUs on the host names gpu-h100-03/04 = h100-2/h100-3, started 08:00 (before the
    # horizon: placed from slot 0), expected end 20:00 = slot 11.
    assert ft.placed is not None
    assert (ft.placed.pool, ft.placed.start, ft.placed.end) == (0, 0, 11)
    assert ft.placed.gpus == {2: tuple(range(8)), 3: tuple(range(8))}
    assert (ft.kind, ft.priority, ft.gpus) == ("training", 8, 16)
    # eval: 2h on either pool, after ft, due 2026-12-02T12:00 = slot 27.
    assert ev.durations == {0: 2, 1: 2} and ev.deadline == 27 and ev.after == (ft.index,)
    # embed: default pools (all), released at 12:00 = slot 3, 6h = 6 slots.
    assert emb.durations == {0: 6, 1: 6} and emb.release == 3 and emb.priority == 2


def test_round_trip_solves_and_checks() -> None:
    inst = imported()
    for solver, opts in [("greedy", {}), ("cpsat", {"time_limit": 1.0, "workers": 1})]:
        plan = ho.solve(inst, solver, **opts)
        assert ho.check(inst, plan) == []
        assert {a.job for a in plan.assignments} >= {"ft-llama-70b"}


def test_notes_say_what_was_not_mapped() -> None:
    result = import_table(DATA / "jobs.csv", read_cluster(DATA / "cluster.yaml"), snapshot=SNAPSHOT)
    assert [str(n) for n in result.notes] == [
        "column 'owner': not a job field: ignored",
        "ft-llama-70b: start: 2026-12-01T08:00:00Z is before the horizon: placed from "
        "2026-12-01T09:00:00Z",
    ]


@pytest.mark.parametrize(
    ("header", "row", "message"),
    [
        ("id,gpus", "a,8", "missing column(s) duration"),
        ("id,gpus,duration", "a,x,2h", "row 2: gpus: expected a number, got 'x'"),
        ("id,gpus,duration", "a,8,2w", "row 2 (a): duration:"),
        ("id,gpus,duration,pools", "a,8,2h,h200", "row 2 (a): pools: unknown pool 'h200'"),
        ("id,gpus,duration,after", "a,8,2h,zz", "row 2 (a): after: unknown job id 'zz'"),
        ("id,gpus,duration,start,nodes", "a,8,2h,0,gpu-x", "row 2: nodes: unknown node(s) gpu-x"),
        ("id,gpus,duration,start", "a,8,2h,0", "row 2: nodes: a placed job needs both"),
    ],
)
def test_bad_tables_name_row_and_column(
    tmp_path: Path, header: str, row: str, message: str
) -> None:
    table = tmp_path / "t.csv"
    table.write_text(f"{header}\n{row}\n")
    with pytest.raises(InputError) as exc:
        imported(table)
    assert any(message in p for p in exc.value.problems), exc.value.problems


def test_gpu_indices_avoid_known_ones_and_say_when_a_node_is_full() -> None:
    indices, notes = gpu_indices(
        [("a", {"n": 4}), ("b", {"n": 4}), ("c", {"n": 2})],
        {"a": {"n": [0, 1, 2, 3]}},
        {"n": 8},
    )
    assert indices == {"a": {"n": [0, 1, 2, 3]}, "b": {"n": [4, 5, 6, 7]}, "c": {"n": []}}
    assert notes == [Note("c", "gpus", "node n has no 2 free GPU indices left")]


def test_bad_cluster_file(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text(
        "horizon: {slots: 48}\npools: [{name: H100, gpu_type: x, nodes: 1, gpus_per_node: 8}]\n"
    )
    with pytest.raises(InputError, match=r"pools\[0\]\.name"):
        read_cluster(bad)
    bad.write_text(
        "horizon: {slots: 48}\npools: [{name: a, gpu_type: x, nodes: 1, gpus_per_node: 8, "
        "node_names: [h1, h2]}]\n"
    )
    with pytest.raises(InputError, match=r"node_names: 2 names for 1 nodes"):
        read_cluster(bad)


def test_cli_writes_the_instance_and_prints_the_notes(tmp_path: Path) -> None:
    out = tmp_path / "inst.yaml"
    args = ["import", "csv", str(DATA / "jobs.csv"), "-c", str(DATA / "cluster.yaml")]
    result = runner.invoke(app, [*args, "-o", str(out), "--now", "2026-12-01T10:30:00Z"])
    assert result.exit_code == 0, result.output
    assert "note: column 'owner': not a job field: ignored" in result.stderr
    assert "3 jobs imported; 2 note(s) on 1 job(s)" in result.stderr
    assert yaml.safe_load(out.read_text())["now"] == "2026-12-01T10:30:00Z"
    assert ho.load_instance(out).name == "jobs"
    bad = runner.invoke(app, [*args, "-o", str(tmp_path / "x.yaml"), "--now", "soon"])
    assert bad.exit_code == 2 and "error: --now: not an ISO-8601 time: 'soon'" in bad.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_a_running_job_past_the_horizon_ends_with_it(tmp_path: Path) -> None:
    # Horizon: 48 slots from 09:00; a 3-day job started at 09:00 would end after it.
    table = tmp_path / "t.csv"
    table.write_text("id,gpus,duration,start,nodes\nlong,8,3d,2026-12-01T09:00:00Z,h100-0\n")
    result = import_table(table, read_cluster(DATA / "cluster.yaml"), snapshot=SNAPSHOT)
    assert [str(n) for n in result.notes] == [
        "long: end: 2026-12-04T09:00:00Z is after the horizon: placed to end with it"
    ]
    job = result.compile().jobs[0]
    assert job.placed is not None and (job.placed.start, job.placed.end) == (0, 48)


def test_with_an_open_end_a_running_job_keeps_its_end(tmp_path: Path) -> None:
    """The same job with the cluster file's `horizon.open_end`: placed until its end, slot 72,
    and the instance plans over 72 slots."""
    cluster = yaml.safe_load((DATA / "cluster.yaml").read_text())
    cluster["horizon"]["open_end"] = True
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    table = tmp_path / "t.csv"
    table.write_text("id,gpus,duration,start,nodes\nlong,8,3d,2026-12-01T09:00:00Z,h100-0\n")
    result = import_table(table, read_cluster(path), snapshot=SNAPSHOT)
    assert list(result.notes) == []
    assert result.document["horizon"]["open_end"] is True
    inst = result.compile()
    assert inst.jobs[0].placed is not None and inst.jobs[0].placed.end == 72
    assert (inst.slots, inst.written_slots) == (72, 48)


def test_the_team_column_takes_a_team_or_an_account_it_lists(tmp_path: Path) -> None:
    cluster = yaml.safe_load((DATA / "cluster.yaml").read_text())
    cluster["teams"] = [{"name": "llm", "quota": {"h100": 8}, "accounts": ["ml"]}]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    table = tmp_path / "t.csv"
    table.write_text("id,gpus,duration,team\na,8,2h,llm\nb,8,2h,ml\nc,8,2h,\n")
    inst = import_table(table, read_cluster(path), snapshot=SNAPSHOT).compile()
    assert [j.team for j in inst.jobs] == [0, 0, None]
    table.write_text("id,gpus,duration,team\na,8,2h,vision\n")
    with pytest.raises(InputError) as exc:
        import_table(table, read_cluster(path), snapshot=SNAPSHOT)
    assert any("row 2 (a): team: unknown team 'vision'" in p for p in exc.value.problems)
