"""`import slurm`: squeue/sacct JSON (data_parser v0.0.38 to v0.0.42 shapes) into an instance.

The fixtures in tests/data/slurm/ follow Slurm's documented shapes: squeue.json and sacct.json
as v0.0.41 writes them (numbers wrapped as {set, infinite, number}, job_state a list), the
-v0.0.38 files the same jobs as older Slurm wrote them (plain numbers, null for INFINITE,
job_state a string). The snapshot is 2026-12-01T10:20Z (squeue's last_update); with 60-minute
slots and no horizon.start the horizon starts at 09:00 (one slot before the snapshot's slot),
`now` is slot 2 (11:00) and the horizon ends at 2026-12-03T09:00.
"""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import horizon_opt
from horizon_opt.errors import InputError, InstanceError, Problem
from horizon_opt.importers import ClusterFile, Imported, read_cluster
from horizon_opt.importers.slurm import (
    History,
    estimate_minutes,
    import_slurm,
    read_history,
    scale_priority,
)
from horizon_opt.importers.source import read_json
from horizon_opt.schedulers.slurm import expand_ranges

DATA = Path(__file__).parents[1] / "data" / "slurm"
SNAPSHOT = datetime(2026, 12, 1, 10, 20, tzinfo=UTC)
T0 = int(SNAPSHOT.timestamp())  # epoch seconds of the snapshot


def load(name: str) -> Any:
    return read_json(DATA / name, "test fixture")


@pytest.fixture(scope="module")
def cluster() -> ClusterFile:
    return read_cluster(DATA / "cluster.yaml")


@pytest.fixture(scope="module")
def imported(cluster: ClusterFile) -> Imported:
    return import_slurm(
        load("squeue.json"), cluster, sacct=load("sacct.json"), squeue_source="squeue.json"
    )


def jobs_of(imported: Imported) -> dict[str, dict[str, Any]]:
    return {j["id"]: j for j in imported.document["jobs"]}


def notes_of(imported: Imported) -> list[str]:
    return [str(n) for n in imported.notes]


# --------------------------------------------------------------------------------------------
# The fixture, field by field


def test_fixture_pending_jobs_field_by_field(imported: Imported) -> None:
    jobs = jobs_of(imported)
    # 1004: priority 40000 is the highest -> 10; tres_per_job gres/gpu:16; partitions
    # gpu-h100,gpu-a100, but 16 GPUs fit only h100 (a100: 2 nodes x 4); 2880 min limit, the
    # partitions' 5 completed runs in sacct used a median 60% -> 1728m; submitted before the
    # horizon -> its start; deadline epoch -> ISO.
    assert jobs["1004"] == {
        "id": "1004",
        "priority": 10,
        "gpus": 16,
        "duration": "1728m",
        "pools": ["h100"],
        "release": "2026-12-01T09:00:00Z",
        "deadline": "2026-12-03T06:00:00Z",
    }
    # 1005: 1 + 9 * 20000 / 40000 = 5.5; gres/gpu:h100:4 on partition gpu (both pools): the
    # type keeps h100; no sacct history for bob/eval-70b nor partition gpu: the limit, 90m.
    assert jobs["1005"] == {
        "id": "1005",
        "priority": 5.5,
        "gpus": 4,
        "duration": "90m",
        "pools": ["h100"],
        "release": "2026-12-01T10:05:00Z",
        "after": ["1004"],
    }
    # 1006: GPUs from tres_req_str (gres/gpu=8 and gres/gpu:h100=8 count 8 once);
    # afterany:990, which sacct says COMPLETED: satisfied, dropped without a note.
    assert jobs["1006"] == {
        "id": "1006",
        "priority": round(1 + 9 * 15000 / 40000, 2),
        "gpus": 8,
        "duration": "360m",
        "pools": ["h100"],
        "release": "2026-12-01T10:10:00Z",
    }
    # The pending array record 1010 (array_task_string "2-3") becomes one job per task.
    for task in ("1010_2", "1010_3"):
        assert jobs[task] == {
            "id": task,
            "priority": round(1 + 9 * 5000 / 40000, 2),
            "gpus": 1,
            "duration": "60m",
            "pools": ["a100"],
            "release": "2026-12-01T09:00:00Z",
        }
    # 1022: INFINITE time limit -> the whole horizon, 48 h; priority 0 (held) -> 1.
    assert jobs["1022"]["duration"] == "240m"
    assert jobs["1022"]["priority"] == 1
    # 1040: eligible_time 18:00 (--begin) is later than its submit time: released then.
    assert jobs["1040"]["release"] == "2026-12-01T18:00:00Z"


def test_fixture_running_jobs_field_by_field(imported: Imported) -> None:
    jobs = jobs_of(imported)
    # 1001: started 07:30, before the horizon (09:00): placed from 09:00; alice/train-llm's
    # three completed runs used 50%, 60%, 70% of 1440 min: median 60% -> 864 min, so it ends
    # 07:30 + 14h24 = 21:54. Nodes gpu-h100-[01-02] (h100's nodes 0 and 1), IDX 0-7 each.
    assert jobs["1001"] == {
        "id": "1001",
        "priority": round(1 + 9 * 30000 / 40000, 2),
        "gpus": 16,
        "duration": "864m",
        "pools": ["h100"],
        "release": "2026-12-01T09:00:00Z",
        "placed": {
            "pool": "h100",
            "start": "2026-12-01T09:00:00Z",
            "end": "2026-12-01T21:54:00Z",
            "gpus": {"gpu-h100-01": list(range(8)), "gpu-h100-02": list(range(8))},
        },
    }
    # 1002: gres_detail gpu:h100:4(IDX:2-5) on gpu-h100-03 (h100's node 2), indices kept.
    assert jobs["1002"]["placed"]["gpus"] == {"gpu-h100-03": [2, 3, 4, 5]}
    assert jobs["1002"]["placed"]["start"] == "2026-12-01T10:00:00Z"
    # 1003: no gres_detail: 2 GPUs (tres_alloc_str) get the lowest indices not held by another
    # running job on gpu-a100-01 (1010_1 holds index 2 there).
    assert jobs["1003"]["placed"] == {
        "pool": "a100",
        "start": "2026-12-01T09:30:00Z",
        "end": "2026-12-01T13:30:00Z",
        "gpus": {"gpu-a100-01": [0, 1]},
    }
    # 1012 is task 1 of array 1010: its id is 1010_1.
    assert jobs["1010_1"]["placed"] == {
        "pool": "a100",
        "start": "2026-12-01T10:10:00Z",
        "end": "2026-12-01T11:10:00Z",
        "gpus": {"gpu-a100-01": [2]},
    }


def test_fixture_document_around_the_cluster(imported: Imported) -> None:
    doc = imported.document
    assert doc["name"] == "slurm-demo"
    assert doc["now"] == "2026-12-01T10:20:00Z"  # last_update
    assert doc["horizon"] == {"slots": 48, "slot_minutes": 60, "start": "2026-12-01T09:00:00Z"}
    assert [j["id"] for j in doc["jobs"]] == [
        "1001",
        "1002",
        "1003",
        "1010_2",
        "1010_3",
        "1010_1",
        "1004",
        "1005",
        "1006",
        "1008",
        "1022",
        "1040",
    ]


def test_fixture_notes(imported: Imported) -> None:
    assert notes_of(imported) == [
        "1001: time_limit: time limit 1440 min; sacct: 3 completed runs of alice/train-llm used "
        "a median 60% of their limits: planned for 864m (the limit stays the bound)",
        "1001: start_time: started 2026-12-01T07:30:00Z, before the horizon: placed from its "
        "start 2026-12-01T09:00:00Z",
        "1002: time_limit: time limit 120 min; sacct: 3 completed runs of partition gpu-h100 "
        "used a median 60% of their limits: planned for 72m (the limit stays the bound)",
        "1010_0: job_state: COMPLETED: not pending or running; left out",
        "1004: gres: 16 GPUs cannot be placed on a100 (one node, or whole nodes): left out of "
        "its pools",
        "1004: time_limit: time limit 2880 min; sacct: 5 completed runs of partition gpu-h100, "
        "gpu-a100 used a median 60% of their limits: planned for 1728m (the limit stays the "
        "bound)",
        "1006: time_limit: time limit 600 min; sacct: 3 completed runs of partition gpu-h100 "
        "used a median 60% of their limits: planned for 360m (the limit stays the bound)",
        "1007: dependency: afterok:991: that job ended FAILED (sacct), so it can never start; "
        "left out",
        "1008: dependency: after:1002 (starts once that job has started) is not expressed in "
        "the instance: dropped",
        "1020: gres: asks for no GPUs (tres_req_str: cpu=32,mem=128G,node=1,billing=32; the "
        "planner plans GPU work); left out",
        "1021: partition: 'viz': no pool of the cluster file lists it in `partitions`; left out",
        "1022: time_limit: INFINITE, and no completed runs of hank/notebook in sacct to estimate "
        "from: planned for 240m (--default-duration), re-estimated at every import while it runs",
        "1022: priority: held (priority 0 or a hold): planned at priority 1, though it starts "
        "only when released",
        "1030: nodes: runs on login-01, not in the cluster file's node_names: its GPUs are not "
        "reserved in the plan; left out",
        "1031: job_state: COMPLETED+COMPLETING: ending; left out",
        "1040: eligible_time: eligible from 2026-12-01T18:00:00Z (--begin): released then",
    ]


def payload_ids(payload: Any) -> set[str]:
    """The jobs a payload stands for, as the importer names them."""
    out: set[str] = set()
    for job in payload["jobs"]:
        task = job.get("array_task_id")
        task = task.get("number") if isinstance(task, dict) and task.get("set") else task
        array = job.get("array_job_id")
        array = array.get("number") if isinstance(array, dict) else array
        if isinstance(task, int) and array:
            out.add(f"{array}_{task}")
        elif job.get("array_task_string"):
            tasks = expand_ranges(job["array_task_string"].split("%")[0])
            out.update(f"{array or job['job_id']}_{int(t)}" for t in tasks)
        else:
            out.add(str(job["job_id"]))
    return out


@pytest.mark.parametrize(
    ("squeue", "sacct"),
    [("squeue.json", "sacct.json"), ("squeue-v0.0.38.json", "sacct-v0.0.38.json")],
)
def test_every_job_is_imported_or_noted(cluster: ClusterFile, squeue: str, sacct: str) -> None:
    payload = load(squeue)
    result = import_slurm(payload, cluster, sacct=load(sacct), snapshot=SNAPSHOT)
    imported = set(jobs_of(result))
    noted = {n.job for n in result.notes}
    assert payload_ids(payload) <= imported | noted
    left_out = {n.job for n in result.notes if n.problem.endswith("left out")}
    assert payload_ids(payload) == imported | left_out
    assert not imported & left_out


def test_old_plain_number_format_gives_the_same_instance(
    cluster: ClusterFile, imported: Imported
) -> None:
    """v0.0.38: plain numbers, null for INFINITE, job_state strings, no last_update (so the
    given snapshot is used, and noted)."""
    old = import_slurm(
        load("squeue-v0.0.38.json"), cluster, sacct=load("sacct-v0.0.38.json"), snapshot=SNAPSHOT
    )
    assert old.document == imported.document
    assert str(old.notes[0]) == (
        "last_update: not in the payload: snapshot at the given 2026-12-01T10:20:00Z"
    )


def test_round_trip_solvers_and_checker(imported: Imported) -> None:
    instance = imported.compile()
    assert instance.now == 2
    assert len(instance.placed) == 4
    greedy = horizon_opt.solve(instance, "greedy")
    cpsat = horizon_opt.solve(instance, "cpsat", time_limit=1, workers=1)
    for solver, plan in (("greedy", greedy), ("cpsat", cpsat)):
        assert not horizon_opt.check(instance, plan), solver
        assigned = {a.job for a in plan.assignments}
        assert {"1001", "1002", "1003", "1010_1"} <= assigned  # running jobs stay


def test_yaml_output_reloads(imported: Imported, tmp_path: Path) -> None:
    path = tmp_path / "slurm.yaml"
    path.write_text(imported.to_yaml())
    assert len(horizon_opt.load_instance(path).jobs) == len(imported.document["jobs"])


# --------------------------------------------------------------------------------------------
# Small payloads: one thing at a time

SMALL: dict[str, Any] = {
    "horizon": {"slots": 24, "slot_minutes": 60},
    "pools": [
        {
            "name": "h100",
            "gpu_type": "H100",
            "nodes": 2,
            "gpus_per_node": 8,
            "partitions": ["gpu"],
            "node_names": ["g01", "g02"],
        },
        {
            "name": "l4",
            "gpu_type": "L4-24GB",
            "nodes": 1,
            "gpus_per_node": 4,
            "partitions": ["gpu", "small"],
            "node_names": ["s01"],
        },
    ],
}


def small_cluster(**changes: Any) -> ClusterFile:
    return ClusterFile.model_validate({**SMALL, **changes})


def wrap(n: int) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": n}


def job(job_id: int = 1, **fields: Any) -> dict[str, Any]:
    """A pending v0.0.41 job: 1 GPU on partition gpu, 60 min, submitted 20 min ago."""
    out: dict[str, Any] = {
        "job_id": job_id,
        "job_state": ["PENDING"],
        "partition": "gpu",
        "tres_per_node": "gres/gpu:1",
        "node_count": wrap(1),
        "time_limit": wrap(60),
        "priority": wrap(100),
        "submit_time": wrap(T0 - 1200),
        "array_job_id": wrap(0),
        "array_task_id": {"set": False, "infinite": False, "number": 0},
        "user_name": "u",
        "name": "n",
    }
    out.update(fields)
    return out


def running(job_id: int = 1, **fields: Any) -> dict[str, Any]:
    """A running job: on g01 (h100's node 0) since 10 minutes before the snapshot."""
    return job(
        job_id, **{"job_state": ["RUNNING"], "start_time": wrap(T0 - 600), "nodes": "g01", **fields}
    )


def run(*jobs: dict[str, Any], cluster: ClusterFile | None = None, **kw: Any) -> Imported:
    payload = {"jobs": list(jobs), "last_update": wrap(T0)}
    return import_slurm(payload, cluster or small_cluster(), **kw)


def one(result: Imported) -> dict[str, Any]:
    (only,) = result.document["jobs"]
    assert isinstance(only, dict)
    return only


@pytest.mark.parametrize(
    ("value", "duration", "note"),
    [
        (wrap(90), "90m", None),  # v0.0.40+
        (90, "90m", None),  # v0.0.38 and earlier
        (90.0, "90m", None),
        (None, "240m", "unset or INFINITE"),  # v0.0.38's INFINITE
        ({"set": False, "infinite": True, "number": 0}, "240m", "INFINITE"),
        ({"set": False, "infinite": False, "number": 0}, "240m", "unset or INFINITE"),
        (4294967295, "240m", "INFINITE"),  # the raw sentinels
        (4294967294, "240m", "unset or INFINITE"),
        (0, "240m", "0 (none)"),
    ],
)
def test_time_limit_forms(value: Any, duration: str, note: str | None) -> None:
    result = run(job(time_limit=value))
    assert one(result)["duration"] == duration
    notes = notes_of(result)
    if note is None:
        assert notes == []
    else:
        (only,) = notes
        assert only.startswith(f"1: time_limit: {note}, and no completed runs of ")
        assert only.endswith(
            "in sacct to estimate from: planned for 240m (--default-duration), re-estimated at "
            "every import while it runs"
        )


def test_a_job_without_a_limit_or_history_gets_the_default_duration() -> None:
    """Planned for the whole horizon it could never fit beside anything; the default is given
    by the user, capped at the horizon (24 h here), and refused when it is not a duration."""
    unlimited = job(time_limit=0)
    assert one(run(unlimited, default_duration="90m"))["duration"] == "90m"
    assert one(run(unlimited, default_duration="3d"))["duration"] == "1440m"
    with pytest.raises(InputError, match="default_duration: not a duration: 'soon'"):
        run(unlimited, default_duration="soon")


def test_long_time_limit_is_capped_at_the_longest_duration() -> None:
    result = run(
        job(time_limit=wrap(200_000)),
        cluster=small_cluster(horizon={"slots": 24, "slot_minutes": 1}),
    )
    assert one(result)["duration"] == "100000m"
    assert notes_of(result) == ["1: time_limit: 200000 min: capped at 100000m (100,000 slots)"]


@pytest.mark.parametrize(
    ("fields", "gpus", "pools"),
    [
        ({"tres_per_node": "gres/gpu:4"}, 4, ["h100", "l4"]),
        ({"tres_per_node": "gres/gpu=4"}, 4, ["h100", "l4"]),
        ({"tres_per_node": "gpu:4"}, 4, ["h100", "l4"]),  # GRES as older Slurm wrote it
        ({"tres_per_node": "gres:gpu:2"}, 2, ["h100", "l4"]),
        ({"tres_per_node": "gres/gpu"}, 1, ["h100", "l4"]),
        ({"tres_per_node": "gres/gpu:l4:2"}, 2, ["l4"]),  # the type picks the pool
        ({"tres_per_node": "gres/gpu:H100:2"}, 2, ["h100"]),
        ({"tres_per_node": "gres/gpu:8", "node_count": wrap(2)}, 16, ["h100"]),  # x nodes
        ({"tres_per_node": "", "tres_per_job": "gres/gpu:8"}, 8, ["h100"]),
        ({"tres_per_node": "", "tres_per_task": "gres/gpu:1", "tasks": wrap(3)}, 3, ["h100", "l4"]),
        ({"tres_per_node": "", "tres_req_str": "cpu=8,mem=1G,node=1,gres/gpu=6"}, 6, ["h100"]),
        (
            {"tres_per_node": "", "tres_req_str": "cpu=8,gres/gpu=4,gres/gpu:l4=4"},
            4,
            ["l4"],
        ),
        ({"tres_per_node": "gres/gpu:2,gres/shard:4"}, 2, ["h100", "l4"]),
        ({"tres_per_node": "gres/gpu:4", "tres_per_job": "gres/gpu:8"}, 8, ["h100"]),
    ],
)
def test_gpus_and_pools(fields: dict[str, Any], gpus: int, pools: list[str]) -> None:
    got = one(run(job(**fields)))
    assert (got["gpus"], got["pools"]) == (gpus, pools)


def test_scale_priority() -> None:
    assert scale_priority(4000, 4000) == 10
    assert scale_priority(0, 4000) == 1
    assert scale_priority(2000, 4000) == 5.5
    assert scale_priority(1, 3) == 4
    assert scale_priority(0, 0) == 1


def test_priorities_are_scaled_over_the_imported_jobs() -> None:
    result = run(
        job(1, priority=wrap(4_294_000)),
        job(2, priority=wrap(2_147_000)),
        job(3, priority=1000),
        job(4, priority=wrap(0)),
    )
    assert [j["priority"] for j in result.document["jobs"]] == [10, 5.5, 1, 1]
    assert "4: priority: held (priority 0 or a hold)" in notes_of(result)[0]


def test_priority_unset_is_noted() -> None:
    result = run(job(priority={"set": False, "infinite": False, "number": 0}))
    assert notes_of(result) == ["1: priority: unset: planned at priority 1"]
    assert one(result)["priority"] == 1


# --------------------------------------------------------------------------------------------
# Times


def test_release_deadline_and_eligible_time() -> None:
    result = run(
        job(1, submit_time=wrap(T0 - 86400)),  # before the horizon: its start
        job(2, submit_time=wrap(T0 - 300), deadline=wrap(T0 + 7200)),
        job(3, deadline=wrap(0)),  # 0: none
        job(4, eligible_time=wrap(T0 + 3600)),  # --begin an hour from now
        job(5, eligible_time=wrap(T0 - 60)),  # already eligible: the submit time counts
    )
    jobs = jobs_of(result)
    assert jobs["1"]["release"] == "2026-12-01T09:00:00Z"
    assert jobs["2"]["release"] == "2026-12-01T10:15:00Z"
    assert jobs["2"]["deadline"] == "2026-12-01T12:20:00Z"
    assert "deadline" not in jobs["3"]
    assert jobs["4"]["release"] == "2026-12-01T11:20:00Z"
    assert jobs["5"]["release"] == "2026-12-01T10:00:00Z"
    assert notes_of(result) == [
        "4: eligible_time: eligible from 2026-12-01T11:20:00Z (--begin): released then"
    ]
    result.compile()


def test_deadline_passed_or_eligible_after_the_horizon_leaves_the_job_out() -> None:
    result = run(
        job(1, deadline=wrap(T0 - 60)),
        job(2, eligible_time=wrap(T0 + 30 * 86400)),
        job(3),
    )
    assert list(jobs_of(result)) == ["3"]
    assert notes_of(result) == [
        "1: deadline: 2026-12-01T10:19:00Z has passed or comes before its release: Slurm "
        "cancels it; left out",
        "2: eligible_time: eligible from 2026-12-31T10:20:00Z, after the horizon; left out",
    ]


def test_snapshot_from_the_payload_the_argument_or_the_clock() -> None:
    cluster = small_cluster()
    base = {"jobs": [job()]}
    assert import_slurm({**base, "last_update": wrap(T0)}, cluster).notes == ()
    later = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    given = import_slurm({**base, "last_update": T0}, cluster, snapshot=later)
    assert given.document["now"] == "2026-12-01T10:20:00Z"
    assert notes_of(given) == [
        "last_update: the payload's time 2026-12-01T10:20:00Z is the snapshot, not the given "
        "2026-12-01T12:00:00Z"
    ]
    backfill = import_slurm({**base, "last_backfill": wrap(T0 - 30)}, cluster)
    assert backfill.document["now"] == "2026-12-01T10:19:30Z"
    assert "no last_update" in notes_of(backfill)[0]
    argument = import_slurm(base, cluster, snapshot=later.replace(tzinfo=None))
    assert argument.document["now"] == "2026-12-01T12:00:00Z"
    clock = import_slurm(
        {"jobs": [job(submit_time=wrap(0))]},
        cluster,  # no submit time: the horizon start
    )
    assert notes_of(clock)[0].startswith(
        "last_update: not in the payload: snapshot at the current time"
    )
    clock.compile()


def test_a_snapshot_outside_the_cluster_files_horizon_is_refused() -> None:
    cluster = small_cluster(horizon={"slots": 24, "start": "2026-12-05T00:00:00Z"})
    with pytest.raises(InputError, match=r"squeue: the snapshot 2026-12-01T10:20:00Z is outside"):
        run(job(), cluster=cluster)


def test_a_cluster_file_start_is_kept() -> None:
    cluster = small_cluster(horizon={"slots": 24, "start": "2026-12-01T06:00:00Z"})
    result = run(job(submit_time=wrap(T0 - 3 * 3600)), cluster=cluster)
    assert result.document["horizon"]["start"] == "2026-12-01T06:00:00Z"
    assert one(result)["release"] == "2026-12-01T07:20:00Z"


# --------------------------------------------------------------------------------------------
# Running jobs


def test_running_job_with_gres_detail_and_hostlist() -> None:
    result = run(
        running(
            nodes="g[01-02]",
            node_count=wrap(2),
            tres_per_node="gres/gpu:8",
            gres_detail=["gpu:h100:8(IDX:0-7)", "gpu:h100:8(IDX:0-7)"],
        )
    )
    assert one(result) == {
        "id": "1",
        "priority": 10,
        "gpus": 16,
        "duration": "60m",
        "pools": ["h100"],
        "release": "2026-12-01T10:00:00Z",
        "placed": {
            "pool": "h100",
            "start": "2026-12-01T10:10:00Z",
            "end": "2026-12-01T11:10:00Z",
            "gpus": {"g01": list(range(8)), "g02": list(range(8))},
        },
    }
    assert result.notes == ()


def test_running_jobs_without_indices_take_the_lowest_free_ones() -> None:
    result = run(
        running(1, tres_per_node="gres/gpu:2", gres_detail=["gpu:2(IDX:0-1)"]),
        running(2, tres_per_node="gres/gpu:3"),
        running(3, tres_per_node="gres/gpu:2", gres_detail=["gpu(CNT:2)"]),
    )
    placed = {j["id"]: j["placed"]["gpus"] for j in result.document["jobs"]}
    assert placed == {"1": {"g01": [0, 1]}, "2": {"g01": [2, 3, 4]}, "3": {"g01": [5, 6]}}
    result.compile()


def test_running_jobs_that_claim_the_same_gpu() -> None:
    result = run(
        running(1, tres_per_node="gres/gpu:2", gres_detail=["gpu:2(IDX:0-1)"]),
        running(2, tres_per_node="gres/gpu:2", gres_detail=["gpu:2(IDX:1-2)"]),
    )
    placed = {j["id"]: j["placed"]["gpus"] for j in result.document["jobs"]}
    assert placed == {"1": {"g01": [0, 1]}, "2": {"g01": [2, 3]}}
    assert notes_of(result) == [
        "2: gres_detail: GPU(s) [1] of g01 are another running job's: indices chosen anew"
    ]


def test_running_jobs_that_fill_a_node_beyond_its_gpus() -> None:
    result = run(running(1, tres_per_node="gres/gpu:6"), running(2, tres_per_node="gres/gpu:4"))
    assert list(jobs_of(result)) == ["1"]
    assert notes_of(result) == [
        "2: gpus: node g01 has no 4 free GPU indices left: its GPUs are not reserved in the "
        "plan; left out"
    ]
    result.compile()


def test_gpu_fields_that_disagree_are_noted_and_the_allocation_wins() -> None:
    """Job 1 asks for 0 GPUs per node and was allocated 2 (tres_alloc_str): 2, noted. Job 2's
    gres_detail says it holds none on g02 while its allocation says 2: the count is the
    allocation's, spread as without gres_detail, noted. Job 3's fields agree: no note."""
    result = run(
        running(1, tres_per_node="gres/gpu:0", tres_alloc_str="cpu=4,gres/gpu=2"),
        running(2, nodes="g02", gres_detail=["gpu:h100:0"], tres_alloc_str="gres/gpu=2"),
        running(3, nodes="g02", tres_per_node="gres/gpu:2", tres_alloc_str="gres/gpu=2"),
    )
    jobs = jobs_of(result)
    assert [jobs[k]["gpus"] for k in ("1", "2", "3")] == [2, 2, 2]
    assert notes_of(result) == [
        "1: tres_alloc_str: tres_per_node says 0, tres_alloc_str 2: took tres_alloc_str (the "
        "allocation)",
        "2: tres_alloc_str: tres_per_node says 1, tres_alloc_str 2: took tres_alloc_str (the "
        "allocation)",
        "2: gres_detail: holds 0 GPUs on its nodes, its TRES say 2: took the TRES count",
    ]
    result.compile()


@pytest.mark.parametrize(
    ("fields", "note"),
    [
        (
            {"nodes": "g01,x9"},
            "1: nodes: runs on x9, not in the cluster file's node_names: its GPUs are not "
            "reserved in the plan; left out",
        ),
        (
            {"nodes": "g01", "gres_detail": ["gpu:h100:9(IDX:0-8)"], "tres_per_node": "gres/gpu:9"},
            "1: gres_detail: holds 9 GPUs of g01, which has 8 in the cluster file: its GPUs "
            "are not reserved in the plan (fix gpus_per_node); left out",
        ),
        (
            {"nodes": "", "tres_per_node": "gres/gpu:1"},
            "1: nodes: RUNNING without nodes; left out",
        ),
        (
            {"tres_per_node": ""},
            "1: gres: no GPU field is set (tres_per_job, tres_per_node, tres_per_task, "
            "tres_req_str, tres_alloc_str are all empty or absent): taken as asking for no GPUs "
            "(the planner plans GPU work); left out",
        ),
        (  # a CPU-only job on a host the cluster file does not name: not about GPUs at all
            {"nodes": "cpu-07", "tres_per_node": "", "tres_alloc_str": "cpu=4,mem=8G"},
            "1: gres: holds no GPUs (tres_alloc_str: cpu=4,mem=8G; the planner plans GPU work); "
            "left out",
        ),
    ],
)
def test_running_jobs_the_instance_cannot_hold(fields: dict[str, Any], note: str) -> None:
    result = run(running(**fields), job(2))
    assert list(jobs_of(result)) == ["2"]
    assert notes_of(result) == [note]


def spread(job_id: int = 1, **fields: Any) -> dict[str, Any]:
    """`sbatch -N2 --gpus-per-node=1`, running on g01 and g02 (8-GPU nodes)."""
    return running(
        job_id, nodes="g[01-02]", node_count=wrap(2), tres_per_node="gres/gpu:1", **fields
    )


def test_a_running_job_thinner_than_its_nodes_is_held_one_part_per_node() -> None:
    result = run(spread(gres_detail=["gpu:1(IDX:3)", "gpu:1(IDX:5)"]))
    parts = jobs_of(result)
    assert list(parts) == ["1@g01", "1@g02"]
    assert [p["placed"]["gpus"] for p in parts.values()] == [{"g01": [3]}, {"g02": [5]}]
    assert {p["gpus"] for p in parts.values()} == {1}
    assert {(p["placed"]["start"], p["placed"]["end"], p["priority"]) for p in parts.values()} == {
        ("2026-12-01T10:10:00Z", "2026-12-01T11:10:00Z", 10)
    }
    assert notes_of(result) == [
        "1: gres_detail: holds GPUs g01: 1, g02: 1 (nodes of 8 GPUs), which the placement rule "
        "cannot hold as one gang (one node, or whole nodes): placed as 2 parts, one per node "
        "(<id>@<host>), so its GPUs stay held"
    ]
    instance = result.compile()
    assert instance.placed_gpus[:, 2].tolist() == [1, 1, 0]  # both GPUs held at now


@pytest.mark.parametrize(
    ("fields", "held", "note"),
    [
        (
            {"nodes": "g01,s01", "tres_per_node": "gres/gpu:4", "node_count": wrap(2)},
            {"1@g01": {"g01": [0, 1, 2, 3]}, "1@s01": {"s01": [0, 1, 2, 3]}},
            "1: gres_detail: holds GPUs g01: 4, s01: 4 (nodes of 8/4 GPUs)",
        ),
        (
            {"nodes": "g[01-02]", "tres_alloc_str": "gres/gpu=3", "tres_per_node": ""},
            {"1@g01": {"g01": [0, 1]}, "1@g02": {"g02": [0, 1]}},
            "1: nodes: 3 GPUs do not split evenly over its 2 nodes and gres_detail does not say "
            "how they sit: held as 2 on each (at most that many on any one)",
        ),
    ],
)
def test_running_jobs_over_two_pools_or_split_unevenly_are_held_per_node(
    fields: dict[str, Any], held: dict[str, Any], note: str
) -> None:
    result = run(running(**fields))
    assert {k: j["placed"]["gpus"] for k, j in jobs_of(result).items()} == held
    assert notes_of(result)[0].startswith(note)
    result.compile()


def test_a_job_after_a_running_job_held_in_parts_runs_after_every_part() -> None:
    result = run(spread(7), job(8, dependency="afterok:7(unfulfilled)"))
    assert jobs_of(result)["8"]["after"] == ["7@g01", "7@g02"]
    instance = result.compile()
    plan = horizon_opt.solve(instance, "greedy")
    assert not horizon_opt.check(instance, plan)


def test_a_part_the_planner_refuses_takes_its_whole_job_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compiler refuses part 1@g02 once (a running job's node that is down no longer makes
    it refuse one: the outage waits for the job), so the refusal is played here."""
    import horizon_opt.importers.slurm.importer as slurm_module

    real = slurm_module.compile_document

    def refuse_once(document: dict[str, Any], folder: Any) -> Any:
        ids = [j["id"] for j in document["jobs"]]
        if "1@g02" in ids:
            k = ids.index("1@g02")
            down = Problem.at(f"jobs[{k}].placed.gpus", "job '1@g02' runs on g02 while down")
            raise InstanceError([down])
        return real(document, folder)

    monkeypatch.setattr(slurm_module, "compile_document", refuse_once)
    result = run(spread(), job(2))
    assert list(jobs_of(result)) == ["2"]
    note = notes_of(result)[-1]
    assert note.startswith("1: instance: the planner refuses it (its part 1@g02): placed.gpus:")
    assert note.endswith("; left out")


def test_spread_fixture_round_trip_and_no_double_booking(cluster: ClusterFile) -> None:
    """tests/data/slurm/squeue-spread.json: 2001 is `-N2 --gpus-per-node=1` on the two 4-GPU
    a100 nodes, 2004 two GPUs on each of two 8-GPU h100 nodes; 2003 wants both a100 nodes whole,
    so a plan may start it only once 2001 has ended."""
    result = import_slurm(load("squeue-spread.json"), cluster, squeue_source="spread.json")
    jobs = jobs_of(result)
    assert sorted(jobs) == [
        "2001@gpu-a100-01",
        "2001@gpu-a100-02",
        "2002",
        "2003",
        "2004@gpu-h100-03",
        "2004@gpu-h100-04",
    ]
    assert jobs["2002"]["after"] == ["2001@gpu-a100-01", "2001@gpu-a100-02"]
    instance = result.compile()
    plan = horizon_opt.solve(instance, "greedy")
    assert not horizon_opt.check(instance, plan)
    ends = instance.jobs[instance.job_index["2001@gpu-a100-01"]].placed
    assert ends is not None
    start = {a.job: a.start for a in plan.assignments}
    assert start["2003"] >= ends.end
    early = plan.model_copy(
        update={
            "assignments": [
                a.model_copy(update={"start": instance.now, "end": instance.now + a.end - a.start})
                if a.job == "2003"
                else a
                for a in plan.assignments
            ]
        }
    )
    problems = [str(v) for v in horizon_opt.check(instance, early)]
    assert any("2001@gpu-a100-0" in p for p in problems), problems


def test_running_job_times_are_clipped_to_the_horizon() -> None:
    result = run(
        running(1, start_time=wrap(T0 - 3 * 3600), time_limit=wrap(40 * 60)),
        running(2, start_time=wrap(T0 + 60), tres_per_node="gres/gpu:1", nodes="g02"),
        running(3, start_time=wrap(0), nodes="s01"),
    )
    jobs = jobs_of(result)
    # 1: started 07:20, horizon 09:00 to 2026-12-02T09:00; 40 h limit ends past it.
    assert jobs["1"]["placed"]["start"] == "2026-12-01T09:00:00Z"
    assert jobs["1"]["placed"]["end"] == "2026-12-02T09:00:00Z"
    assert jobs["2"]["placed"]["start"] == "2026-12-01T10:20:00Z"
    assert jobs["3"]["placed"]["start"] == "2026-12-01T10:20:00Z"
    assert notes_of(result) == [
        "1: start_time: started 2026-12-01T07:20:00Z, before the horizon: placed from its start "
        "2026-12-01T09:00:00Z",
        "1: time_limit: runs past the horizon: placed until its end 2026-12-02T09:00:00Z",
        "2: start_time: 2026-12-01T10:21:00Z is after the snapshot: taken as the snapshot",
        "3: start_time: unset: taken as the snapshot 2026-12-01T10:20:00Z",
    ]
    result.compile()


def test_with_an_open_end_a_running_job_keeps_its_limit() -> None:
    """The same 40 h job (started 07:20) with the cluster file's `horizon.open_end`: placed until
    its limit, 2026-12-02T23:20, past the 24-hour horizon, which the instance extends."""
    small = small_cluster()
    open_cluster = small.model_copy(
        update={"horizon": small.horizon.model_copy(update={"open_end": True})}
    )
    result = run(
        running(1, start_time=wrap(T0 - 3 * 3600), time_limit=wrap(40 * 60)),
        cluster=open_cluster,
    )
    assert jobs_of(result)["1"]["placed"]["end"] == "2026-12-02T23:20:00Z"
    assert not any("past the horizon" in n for n in notes_of(result))
    inst = result.compile()
    assert inst.written_slots is not None and inst.slots > inst.written_slots


def test_running_past_the_estimate_and_past_the_limit() -> None:
    history = {
        "jobs": [
            {
                "job_id": 100 + k,
                "user": "u",
                "name": "n",
                "partition": "gpu",
                "state": {"current": ["COMPLETED"]},
                "time": {"elapsed": 600, "limit": wrap(120)},  # 1/12 of the limit
            }
            for k in range(3)
        ]
    }
    result = run(
        # started 09:50, 120 min limit: the 10 min estimate ended at 10:00, before now (11:00):
        # it ends at its limit, 11:50.
        running(1, start_time=wrap(T0 - 1800), time_limit=wrap(120)),
        # started 08:20 (placed from 09:00), 60 min limit (estimate 5 min): past both; it ends
        # one slot after now.
        running(2, start_time=wrap(T0 - 7200), nodes="g02"),
        sacct=history,
    )
    jobs = jobs_of(result)
    assert jobs["1"]["duration"] == "10m"
    assert jobs["1"]["placed"]["end"] == "2026-12-01T11:50:00Z"
    assert jobs["2"]["duration"] == "5m"
    assert jobs["2"]["placed"]["end"] == "2026-12-01T12:00:00Z"
    assert [n for n in notes_of(result) if "past" in n] == [
        "1: time_limit: has run past the estimate: expected to end at its limit, "
        "2026-12-01T11:50:00Z",
        "2: time_limit: still running past its time limit (2026-12-01T09:20:00Z): assumed to "
        "end at 2026-12-01T12:00:00Z, one slot after now",
    ]
    result.compile()


def test_a_running_job_whose_limit_ends_between_the_snapshot_and_now_is_not_past_it() -> None:
    """Snapshot 10:20, now 11:00 (slots of 60 min round up). Job 1 started 09:30 with a 60 min
    limit: killed at 10:30, after the snapshot: it is not running past its limit, and by now its
    GPUs are free, so it is left out (it was held until 12:00 with a false "past its time limit").
    Job 2, started 09:30 with a 180 min limit, ends at 12:30 and stays placed."""
    result = run(
        running(1, start_time=wrap(T0 - 3000), time_limit=wrap(60)),
        running(2, start_time=wrap(T0 - 3000), time_limit=wrap(180), nodes="g02"),
    )
    assert list(jobs_of(result)) == ["2"]
    assert jobs_of(result)["2"]["placed"]["end"] == "2026-12-01T12:30:00Z"
    assert notes_of(result) == [
        "1: time_limit: its limit ends at 2026-12-01T10:30:00Z, after the snapshot but by now "
        "(2026-12-01T11:00:00Z), where the plan starts: its GPUs are free then; left out"
    ]
    result.compile()


def test_a_running_job_without_a_limit_holds_its_gpus_past_a_guess_that_ends_by_now() -> None:
    """Snapshot 10:20, now 11:00. Job 1 started 09:30 with no limit (INFINITE) and no history:
    the 60 min default puts its end at 10:30, after the snapshot but by now. Nothing stops it
    then, so it holds its GPUs until one slot after now (it was left out, and job 2 planned onto
    its GPUs)."""
    infinite = {"set": False, "infinite": True, "number": 0}
    result = run(
        running(1, start_time=wrap(T0 - 3000), time_limit=infinite),
        job(2, gres_detail=None),
        default_duration="60m",
    )
    jobs = jobs_of(result)
    assert jobs["1"]["placed"]["end"] == "2026-12-01T12:00:00Z"
    assert (
        "1: time_limit: expected to end by now (2026-12-01T11:00:00Z) but nothing stops it "
        "then: held until 2026-12-01T12:00:00Z, one slot after now"
    ) in notes_of(result)
    result.compile()


def test_a_running_job_on_a_node_the_cluster_file_marks_down_keeps_its_gpus() -> None:
    """Drained nodes keep running their jobs: job 1 runs on g01 (h100-0 in the cluster file,
    down from slot 0 to 5) until 11:10, so the outage starts at the next slot boundary, 12:00
    (it was left out, its GPUs free for job 2, while `check` said VALID)."""
    cluster = small_cluster(outages=[{"node": "h100-0", "start": 0, "end": 5}])
    result = run(running(), job(2), cluster=cluster)
    assert list(jobs_of(result)) == ["1", "2"]
    assert result.document["outages"] == [
        {"node": "g01", "start": "2026-12-01T12:00:00Z", "end": "2026-12-01T14:00:00Z"}
    ]
    assert notes_of(result) == [
        "1: nodes: runs on g01, down from 2026-12-01T09:00:00Z in the cluster file: the outage "
        "starts after it ends, at 2026-12-01T12:00:00Z"
    ]
    result.compile()


def test_inference_that_no_longer_fits_beside_the_running_jobs_is_an_error() -> None:
    cluster = small_cluster(
        services=[{"name": "chat", "pool": "l4", "gpus_per_replica": 4, "demand": [1] * 24}]
    )
    with pytest.raises(InputError, match=r"squeue with the cluster file: services\[0\]\.demand"):
        run(running(nodes="s01"), cluster=cluster)


# --------------------------------------------------------------------------------------------
# Job states, arrays, partitions


@pytest.mark.parametrize(
    ("state", "note"),
    [
        (["COMPLETED"], "COMPLETED: not pending or running"),
        (["CANCELLED"], "CANCELLED: not pending or running"),
        ("FAILED", "FAILED: not pending or running"),
        (["SUSPENDED"], "SUSPENDED: not pending or running"),
        (["RUNNING", "COMPLETING"], "RUNNING+COMPLETING: ending"),
        ("COMPLETING", "COMPLETING: ending"),
        ([], "(none): not pending or running"),
    ],
)
def test_jobs_that_are_neither_pending_nor_running(state: Any, note: str) -> None:
    result = run(job(1, job_state=state), job(2))
    assert list(jobs_of(result)) == ["2"]
    assert notes_of(result) == [f"1: job_state: {note}; left out"]


@pytest.mark.parametrize("state", [["PENDING", "REQUEUED"], "PENDING", ["RUNNING", "CONFIGURING"]])
def test_state_flags_keep_the_job(state: Any) -> None:
    fields: dict[str, Any] = {}
    if "RUNNING" in state:
        fields = {"start_time": wrap(T0 - 60), "nodes": "g01"}
    assert len(run(job(job_state=state, **fields)).document["jobs"]) == 1


def test_held_flags_are_noted() -> None:
    result = run(job(job_state=["PENDING", "REQUEUE_HOLD"]))
    assert notes_of(result)[0].startswith("1: priority: held")


def test_pending_array_records_become_tasks() -> None:
    result = run(
        job(
            20,
            array_job_id=wrap(20),
            array_task_string="0-7:2%2",
            array_max_tasks=wrap(2),
        ),
        running(25, array_job_id=wrap(20), array_task_id=wrap(1)),
        job(30, array_job_id=20, array_task_id=3),  # the plain-number form
    )
    assert list(jobs_of(result)) == ["20_0", "20_2", "20_4", "20_6", "20_1", "20_3"]
    assert notes_of(result) == [
        "20_[0-7:2%2]: array_task_string: at most 2 tasks run at once (%2): not expressed, the "
        "tasks are planned independently"
    ]


def test_huge_arrays_are_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("horizon_opt.importers.slurm.importer.MAX_ARRAY_TASKS", 3)
    result = run(job(7, array_job_id=wrap(7), array_task_string="1-5"))
    assert list(jobs_of(result)) == ["7_1", "7_2", "7_3"]
    assert notes_of(result) == [
        "7_[1-5]: array_task_string: 5 tasks: the first 3 are imported, 7_4 .. 7_5 left out"
    ]


def test_bad_array_task_string_is_noted() -> None:
    result = run(job(7, array_job_id=wrap(7), array_task_string="1-x"), job(8))
    assert list(jobs_of(result)) == ["8"]
    assert notes_of(result) == [
        "7_[1-x]: array_task_string: not a task list: not a number or a range: '1-x'; left out"
    ]


def test_heterogeneous_job_components_are_noted() -> None:
    result = run(job(5, het_job_id=wrap(5)), job(6, het_job_id=wrap(5)))
    assert len(result.document["jobs"]) == 2
    assert notes_of(result) == [
        f"{k}: het_job_id: a component of heterogeneous job 5: its components start together "
        "in Slurm; planned independently"
        for k in (5, 6)
    ]


def test_duplicate_jobs_are_noted_once_imported() -> None:
    result = run(job(1), job(1, tres_per_node="gres/gpu:2"))
    assert one(result)["gpus"] == 1
    assert notes_of(result) == ["1: job_id: listed twice in the payload: the first is imported"]


@pytest.mark.parametrize(
    ("fields", "pools", "note"),
    [
        (
            {"partition": "gpu,cpu"},
            ["h100", "l4"],
            "1: partition: 'cpu' maps to no pool: planned on h100, l4 only",
        ),
        ({"partition": "small"}, ["l4"], None),
        (
            {"tres_per_node": "gres/gpu:v100:1"},
            ["h100", "l4"],
            "1: gres: GPU type v100 names no allowed pool (by name or gpu_type): all of h100, l4 kept",
        ),
        (
            {"tres_per_node": "gres/gpu:2", "node_count": wrap(2)},
            ["h100", "l4"],
            "1: node_count: 2 nodes asked for; the plan places its 4 GPUs on one node or on "
            "whole nodes (the planner's placement rule)",
        ),
        (
            {"tres_per_node": "gres/gpu:6"},
            ["h100"],
            "1: gres: 6 GPUs cannot be placed on l4 (one node, or whole nodes): left out of its "
            "pools",
        ),
    ],
)
def test_partitions_and_pools(fields: dict[str, Any], pools: list[str], note: str | None) -> None:
    result = run(job(**fields))
    assert one(result)["pools"] == pools
    assert notes_of(result) == ([note] if note else [])


@pytest.mark.parametrize(
    ("fields", "note"),
    [
        (
            {"partition": "cpu"},
            "partition: 'cpu': no pool of the cluster file lists it in `partitions`",
        ),
        (
            {"partition": "cpu,io"},
            "partition: 'cpu,io': no pool of the cluster file lists any of them in `partitions`",
        ),
        ({"partition": ""}, "partition: no partition"),
        (
            {"tres_per_node": "", "tres_req_str": "cpu=4,mem=8G"},
            "gres: asks for no GPUs (tres_req_str: cpu=4,mem=8G; the planner plans GPU work)",
        ),
        (
            {"tres_per_node": "gres/gpu:12"},
            "gres: 12 GPUs fit no allowed pool (h100: 2 nodes x 8 GPUs, l4: 1 nodes x 4 GPUs): a gang takes GPUs of one node or whole nodes",
        ),
        (
            {"state_reason": "DependencyNeverSatisfied"},
            "state_reason: DependencyNeverSatisfied: it can never start",
        ),
    ],
)
def test_pending_jobs_left_out(fields: dict[str, Any], note: str) -> None:
    result = run(job(1, **fields), job(2))
    assert list(jobs_of(result)) == ["2"]
    assert notes_of(result) == [f"1: {note}; left out"]


def test_a_gpu_string_it_cannot_read_is_noted_and_the_next_source_used() -> None:
    result = run(job(tres_per_node="gres/gpu:a:b:1", tres_req_str="gres/gpu=2"))
    assert one(result)["gpus"] == 2
    assert notes_of(result) == ["1: tres_per_node: not a GPU count: 'gres/gpu:a:b:1': ignored"]


# --------------------------------------------------------------------------------------------
# Dependencies


def sacct_of(*jobs: tuple[int, str] | tuple[int, str, int, int]) -> dict[str, Any]:
    out = []
    for j in jobs:
        entry: dict[str, Any] = {"job_id": j[0], "state": {"current": [j[1]]}}
        if len(j) == 4:
            entry["array"] = {"job_id": j[2], "task_id": wrap(j[3])}
        out.append(entry)
    return {"jobs": out}


def test_dependencies_within_the_import() -> None:
    result = run(
        job(1),
        job(2, dependency="afterok:1(unfulfilled)"),
        job(3, dependency="afterany:1:2,afterok:4_*(unfulfilled)"),
        job(40, array_job_id=wrap(4), array_task_string="0-1"),
        job(5, dependency="afterok:4(unfulfilled)"),  # the whole array
        job(6, dependency="afterok:42(unfulfilled)"),  # a task by its own job id
        job(42, array_job_id=wrap(4), array_task_id=wrap(9)),
        running(7, dependency=""),
        job(8, dependency="afterok:7(unfulfilled)"),  # after a running job
    )
    jobs = jobs_of(result)
    assert jobs["2"]["after"] == ["1"]
    assert jobs["3"]["after"] == ["1", "2", "4_0", "4_1", "4_9"]
    assert jobs["5"]["after"] == ["4_0", "4_1", "4_9"]
    assert jobs["6"]["after"] == ["4_9"]
    assert jobs["8"]["after"] == ["7"]
    assert result.notes == ()
    result.compile()


def test_dependencies_on_finished_jobs_with_sacct() -> None:
    sacct = sacct_of(
        (90, "COMPLETED"),
        (91, "FAILED"),
        (92, "CANCELLED"),
        (93, "RUNNING"),
        (80, "COMPLETED", 80, 0),
        (81, "TIMEOUT", 80, 1),
    )
    result = run(
        job(1, dependency="afterok:90(unfulfilled)"),  # completed OK: silently satisfied
        job(2, dependency="afterany:91(unfulfilled)"),  # ended: satisfied
        job(3, dependency="afterok:92(unfulfilled)"),  # never: left out
        job(4, dependency="afterok:93(unfulfilled)"),  # sacct says running, squeue not
        job(5, dependency="afterok:99(unfulfilled)"),  # nowhere
        job(6, dependency="afterok:80_0(unfulfilled)"),
        job(7, dependency="afterok:80(unfulfilled)"),  # a task timed out: never
        job(8, dependency="afterany:80_*(unfulfilled)"),
        sacct=sacct,
    )
    assert list(jobs_of(result)) == ["1", "2", "4", "5", "6", "8"]
    assert all("after" not in j for j in result.document["jobs"])
    assert notes_of(result) == [
        "3: dependency: afterok:92: that job ended CANCELLED (sacct), so it can never start; "
        "left out",
        "4: dependency: afterok:93: sacct says that job is RUNNING, but the queue does not list "
        "it: dropped",
        "5: dependency: afterok:99: that job is neither in the queue nor in sacct's history: "
        "dropped",
        "7: dependency: afterok:80: that job ended TIMEOUT (sacct), so it can never start; left "
        "out",
    ]


def test_dependencies_without_sacct_and_of_other_kinds() -> None:
    result = run(
        job(1, dependency="afterok:90(unfulfilled)"),
        job(2, dependency="afternotok:1(unfulfilled)"),
        job(3, dependency="singleton(unfulfilled)"),
        job(4, dependency="afterok:1(unfulfilled)?afterok:2(unfulfilled)"),
        job(5, dependency="afterok:1(failed)"),
        job(6, dependency="afterok:1+5(unfulfilled)"),
        job(7, dependency="aftercorr:1(unfulfilled)"),
        job(8, dependency="afterok:x1"),
        job(9, partition="cpu"),
        job(10, dependency="afterok:9(unfulfilled)"),
    )
    assert "5" not in jobs_of(result)
    assert jobs_of(result)["6"]["after"] == ["1"]
    assert [n for n in notes_of(result) if ": dependency:" in n] == [
        "1: dependency: afterok:90: that job is not in the queue (finished?); without sacct "
        "history the dependency is dropped",
        "2: dependency: afternotok:1 (runs only if that job fails) is not expressed in the "
        "instance: dropped",
        "3: dependency: singleton (waits for the user's other jobs of the same name) is not "
        "expressed in the instance: dropped",
        "4: dependency: 'afterok:1(unfulfilled)?afterok:2(unfulfilled)': any one of these ('?') "
        "suffices, which the instance cannot say: dropped",
        "5: dependency: afterok:1 has failed (Slurm: it can never be satisfied); left out",
        "6: dependency: afterok:1: the 5 min delay is not expressed",
        "7: dependency: aftercorr:1 (runs after the same task of that array) is not expressed "
        "in the instance: dropped",
        "8: dependency: not a job id in 'afterok:x1': 'x1': all its dependencies dropped",
        "10: dependency: afterok:9: that job is in the queue but not imported ('cpu': no pool "
        "of the cluster file lists it in `partitions`): dropped",
    ]


def test_a_dependency_on_a_job_left_out_later_is_dropped() -> None:
    result = run(
        job(1, deadline=wrap(T0 - 5)),  # left out: its deadline has passed
        job(2, dependency="afterok:1(unfulfilled)"),
        job(3, dependency="afterok:5(unfulfilled)"),
        job(5, dependency="afterok:3(unfulfilled)"),  # a cycle: Slurm refuses them
    )
    assert list(jobs_of(result)) == ["2", "3"]
    assert notes_of(result)[1:] == [
        "2: dependency: afterok:1: that job is in the queue but not imported "
        "(2026-12-01T10:19:55Z has passed or comes before its release: Slurm cancels it): "
        "dropped",
        "3: dependency: runs after 5, which is left out: dropped",
        "5: instance: the planner refuses it: after: dependency cycle: 3 -> 5 -> 3; left out",
    ]
    result.compile()


# --------------------------------------------------------------------------------------------
# History and estimates


def test_estimate_minutes() -> None:
    history = History(
        ratios={("u", "n"): [0.2, 0.5, 0.9], ("u", "few"): [0.1]},
        by_partition={"gpu": [0.3, 0.4, 0.5, 0.9]},
        elapsed={("u", "n"): [30.0, 45.5, 90.0]},
    )
    assert estimate_minutes(100, "u", "n", ["gpu"], history) == (
        50,
        "time limit 100 min; sacct: 3 completed runs of u/n used a median 50% of their "
        "limits: planned for 50m (the limit stays the bound)",
    )
    # Too few runs of its own: the partition's (median of 0.3, 0.4, 0.5, 0.9 = 0.45).
    got = estimate_minutes(100, "u", "few", ["gpu"], history)
    assert got is not None and got[0] == 45
    assert estimate_minutes(100, "u", "few", ["other"], history) is None
    # No limit: the median elapsed time, rounded up.
    got = estimate_minutes(None, "u", "n", [], history)
    assert got is not None and got[0] == 46
    assert estimate_minutes(None, "v", "n", [], history) is None
    # Never above the limit, never below a minute.
    assert estimate_minutes(1, "u", "n", [], History(ratios={("u", "n"): [0.0] * 3})) == (
        1,
        "time limit 1 min; sacct: 3 completed runs of u/n used a median 0% of their limits: "
        "planned for 1m (the limit stays the bound)",
    )


def test_read_history_counts_only_completed_runs() -> None:
    history = read_history(load("sacct.json"))
    assert history.ratios[("alice", "train-llm")] == [0.5, 0.6, 0.7]  # not the CANCELLED one
    assert history.states["991"] == ["FAILED"]
    assert history.states["1010_0"] == ["COMPLETED"]
    assert history.arrays["1010"] == ["COMPLETED"]
    assert read_history(load("sacct-v0.0.38.json")) == history


# --------------------------------------------------------------------------------------------
# Malformed payloads: InputError naming the JSON path


def bad_job(**fields: Any) -> dict[str, Any]:
    fourth = job(4)
    fourth.update(fields)
    return {"jobs": [job(1), job(2), job(3), fourth], "last_update": wrap(T0)}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "squeue.json: (top level): expected an object (squeue --json output), got list"),
        (
            {"job": []},
            "squeue.json: jobs: required field is missing (is this squeue --json output?)",
        ),
        ({"jobs": {}}, "squeue.json: jobs: expected a list of jobs, got {}"),
        ({"jobs": [job(1), 7]}, "squeue.json: jobs[1]: expected a job object, got 7"),
        ({"jobs": [job(1), None]}, "squeue.json: jobs[1]: expected a job object, got None"),
        (bad_job(time_limit="x"), "squeue.json: jobs[3].time_limit: expected minutes, got 'x'"),
        (bad_job(time_limit=-5), "squeue.json: jobs[3].time_limit: expected minutes, got -5"),
        (bad_job(time_limit=True), "squeue.json: jobs[3].time_limit: expected minutes, got True"),
        (bad_job(time_limit=1.5), "squeue.json: jobs[3].time_limit: expected minutes, got 1.5"),
        (
            bad_job(time_limit={"set": True, "infinite": False}),
            "squeue.json: jobs[3].time_limit: expected minutes: 'set' is true but 'number' is "
            "missing",
        ),
        (
            bad_job(time_limit={"set": True, "number": "60"}),
            "squeue.json: jobs[3].time_limit.number: expected minutes, got '60'",
        ),
        (
            bad_job(time_limit={"set": "yes", "number": 60}),
            "squeue.json: jobs[3].time_limit: expected minutes or {set, infinite, number}, got",
        ),
        (
            bad_job(time_limit={"value": 60}),
            "squeue.json: jobs[3].time_limit: expected minutes or {set, infinite, number}, got",
        ),
        (bad_job(job_id=None), "squeue.json: jobs[3].job_id: required field is missing"),
        (bad_job(job_id="12"), "squeue.json: jobs[3].job_id: expected a job id, got '12'"),
        (bad_job(job_id=0), "squeue.json: jobs[3].job_id: expected a job id, got 0"),
        (
            bad_job(priority=[1]),
            "squeue.json: jobs[3].priority: expected an integer priority, got [1]",
        ),
        (
            bad_job(submit_time="today"),
            "squeue.json: jobs[3].submit_time: expected epoch seconds, got 'today'",
        ),
        (
            bad_job(deadline=wrap(10**13)),
            "squeue.json: jobs[3].deadline: expected epoch seconds before the year 10000, got "
            "10000000000000",
        ),
        (
            bad_job(node_count="2"),
            "squeue.json: jobs[3].node_count: expected a node count, got '2'",
        ),
        (bad_job(job_state=3), "squeue.json: jobs[3].job_state: expected a list of strings, got 3"),
        (
            bad_job(job_state=["PENDING", 3]),
            "squeue.json: jobs[3].job_state[1]: expected a string, got 3",
        ),
        (
            bad_job(partition=["gpu"]),
            "squeue.json: jobs[3].partition: expected a string, got ['gpu']",
        ),
        (bad_job(gres_detail=[1]), "squeue.json: jobs[3].gres_detail[0]: expected a string, got 1"),
        (bad_job(hold="no"), "squeue.json: jobs[3].hold: expected true or false, got 'no'"),
        (
            bad_job(job_state=["RUNNING"], nodes="g[01-", start_time=wrap(T0)),
            "squeue.json: jobs[3].nodes: not a hostlist: '[' without ']': 'g[01-'",
        ),
        (
            {"jobs": [job()], "last_update": "now"},
            "squeue.json: last_update: expected epoch seconds, got 'now'",
        ),
        (
            {"jobs": [job()], "last_update": wrap(T0), "last_backfill": "x"},
            "squeue.json: last_backfill: expected epoch seconds, got 'x'",
        ),
    ],
)
def test_malformed_squeue_payloads(payload: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        import_slurm(payload, small_cluster(), squeue_source="squeue.json")
    assert err.value.problems[0].startswith(message), err.value.problems


def test_every_problem_is_listed() -> None:
    payload = {"jobs": [job(1, time_limit="x"), job(2, priority="y"), {"name": "z"}]}
    with pytest.raises(InputError) as err:
        import_slurm(payload, small_cluster())
    assert err.value.problems == [
        "squeue: jobs[0].time_limit: expected minutes, got 'x'",
        "squeue: jobs[1].priority: expected an integer priority, got 'y'",
        "squeue: jobs[2].job_id: required field is missing",
    ]


@pytest.mark.parametrize(
    ("sacct", "message"),
    [
        ("x", "sacct.json: (top level): expected an object (sacct --json output), got str"),
        (
            {"jobs": [{"job_id": 1, "time": []}]},
            "sacct.json: jobs[0].time: expected an object, got []",
        ),
        (
            {"jobs": [{"job_id": 1, "time": {"elapsed": "1h"}}]},
            "sacct.json: jobs[0].time.elapsed: expected seconds, got '1h'",
        ),
        (
            {"jobs": [{"job_id": 1, "state": {"current": 5}}]},
            "sacct.json: jobs[0].state.current: expected a list of strings, got 5",
        ),
        (
            {"jobs": [{"job_id": 1, "array": {"task_id": {"set": 1}}}]},
            "sacct.json: jobs[0].array.task_id: expected an array task id or {set, infinite, number}",
        ),
        ({"jobs": [{"name": "x"}]}, "sacct.json: jobs[0].job_id: required field is missing"),
        (
            {"jobs": [{"job_id": 1, "time": {"limit": {"set": True, "number": "1"}}}]},
            "sacct.json: jobs[0].time.limit.number: expected minutes, got '1'",
        ),
    ],
)
def test_malformed_sacct_payloads(sacct: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        run(job(), sacct=sacct, sacct_source="sacct.json")
    assert err.value.problems[0].startswith(message), err.value.problems


def test_squeue_errors_are_noted() -> None:
    payload = {
        "jobs": [job()],
        "last_update": wrap(T0),
        "errors": [{"description": "partial result", "error_number": 1}],
    }
    result = import_slurm(payload, small_cluster())
    assert notes_of(result) == ["errors: squeue reported: 'partial result'"]


# --------------------------------------------------------------------------------------------
# read_json


def test_read_json(tmp_path: Path) -> None:
    good = tmp_path / "q.json"
    good.write_text('{"jobs": []}')
    assert read_json(good, "squeue --json output") == {"jobs": []}
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{"jobs": []}')
    assert read_json(bom, "x") == {"jobs": []}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read: No such file or directory"),
        (
            b'{"jobs": [',
            "not valid JSON (squeue --json output): Expecting value at line 1 column 11",
        ),
        (b'{"a": NaN}', "not valid JSON (squeue --json output): NaN is not a JSON number"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (
            b"[" * 100_000 + b"]" * 100_000,
            "not valid JSON (squeue --json output): nested too deeply",
        ),
    ],
)
def test_read_json_errors_name_the_file(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "squeue.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_json(path, "squeue --json output")
    (problem,) = err.value.problems
    assert problem.startswith(f"{path}: "), problem
    assert message in problem, problem


def test_fixture_files_are_slurm_shaped() -> None:
    """The fixtures carry the fields of Slurm's schema the importer reads, in their
    documented forms: wrapped numbers in v0.0.41, plain ones in v0.0.38."""
    new, old = load("squeue.json"), load("squeue-v0.0.38.json")
    assert new["meta"]["plugin"]["data_parser"] == "data_parser/v0.0.41"
    assert set(new) >= {"jobs", "last_backfill", "last_update", "meta", "errors", "warnings"}
    for a, b in zip(new["jobs"], old["jobs"], strict=True):
        assert isinstance(a["job_state"], list) and isinstance(b["job_state"], str)
        assert set(a["time_limit"]) == {"set", "infinite", "number"}
        assert b["time_limit"] is None or isinstance(b["time_limit"], int)
    assert json.dumps(new).count('"infinite": true') == 1  # 1022's INFINITE limit
    assert re.search(r'"time_limit": null', json.dumps(old))


# --------------------------------------------------------------------------------------------
# Never a traceback: the fixture with fields replaced at random


def mutations(seed: int, typed: bool) -> list[dict[str, Any]]:
    """Copies of squeue.json with 1 to 6 fields replaced: by values of the field's type
    (`typed`: odd but well-formed jobs) or by anything (malformed payloads)."""
    rng = random.Random(seed)
    base = load("squeue.json")
    numbers = [0, 1, 4, 60, 1004, 2**32 - 1, 2**32 - 2, T0 - 86400 * 3, T0 - 60, T0 + 3600]
    strings = {
        "nodes": ["gpu-h100-[01-04]", "gpu-a100-[01-02]", "gpu-h100-01,gpu-a100-01", ""],
        "tres_per_node": ["gres/gpu:8", "gres/gpu:h100:3", "gres/gpu:12", "", "gres/gpu:0"],
        "tres_alloc_str": ["gres/gpu=8", "gres/gpu=3", ""],
        "dependency": ["afterok:1004", "afterok:1001:1002,afterany:1010_*", "afterok:9(failed)"],
        "partition": ["gpu", "gpu-a100,gpu-h100", "cpu", ""],
        "array_task_string": ["", "1-3", "0-4:2%1"],
    }
    lists = {
        "job_state": [["RUNNING"], ["PENDING"], ["COMPLETED"], ["PENDING", "REQUEUE_HOLD"]],
        "gres_detail": [[], ["gpu:h100:8(IDX:0-7)"], ["gpu:3(IDX:5-7)"], ["gpu(CNT:2)"]],
    }
    numeric = ["time_limit", "priority", "submit_time", "start_time", "deadline", "node_count"]
    anything = [None, -1, 1.5, "x", [], {}, True, {"set": True}, {"set": 2}, [1], "g["]
    out = []
    for _ in range(150):
        payload = json.loads(json.dumps(base))
        for _ in range(rng.randint(1, 6)):
            job = rng.choice(payload["jobs"])
            name = rng.choice([*numeric, *strings, *lists])
            if not typed:
                job[name] = rng.choice(anything)
            elif name in strings:
                job[name] = rng.choice(strings[name])
            elif name in lists:
                job[name] = rng.choice(lists[name])
            else:
                value = rng.choice(numbers)
                job[name] = rng.choice([value, wrap(value), {"infinite": True}])
        out.append(payload)
    return out


def test_odd_but_well_formed_payloads_import_and_compile(cluster: ClusterFile) -> None:
    sacct = load("sacct.json")
    for k, payload in enumerate(mutations(1, typed=True)):
        result = import_slurm(payload, cluster, sacct=sacct if k % 2 else None)
        result.compile()
        noted = {n.job for n in result.notes}
        for n in list(noted):
            if m := re.fullmatch(r"(\d+)_\[(.*)\]", n):  # a whole array record left out
                noted |= {f"{m[1]}_{int(t)}" for t in expand_ranges(m[2].split("%")[0])}
        assert payload_ids(payload) <= set(jobs_of(result)) | noted


def test_malformed_payloads_raise_input_errors_with_paths(cluster: ClusterFile) -> None:
    for payload in mutations(2, typed=False):
        try:
            import_slurm(payload, cluster).compile()
        except InputError as exc:
            assert all(re.match(r"squeue: jobs\[\d+\]\.\w+", p) for p in exc.problems), exc


def test_a_snapshot_too_late_for_its_horizon_is_refused_by_name() -> None:
    """A last_update in year 9999 leaves no room for a horizon after it: a clean error naming
    the field, not an OverflowError."""
    late = int(datetime(9999, 12, 31, 23, tzinfo=UTC).timestamp())
    with pytest.raises(InputError, match=r"squeue: last_update: 9999-12-31T23:00:00Z is too late"):
        import_slurm({"jobs": [job(1)], "last_update": wrap(late)}, small_cluster())


def test_cpu_only_jobs_with_different_tres_sum_up_in_one_line() -> None:
    """Five CPU-only jobs, each with its own TRES string: five notes, one summary line."""
    from horizon_opt.importers.result import note_lines

    cpu = [job(k, tres_per_node=None, tres_req_str=f"cpu={k},mem={k}G") for k in range(1, 6)]
    result = run(*cpu, job(9))
    lines = [ln for ln in note_lines(result.notes) if ln.startswith("gres")]
    assert lines == [
        "gres: asks for no GPUs (the planner plans GPU work); left out (5 jobs: 1, 2, 3 and 2 more)"
    ]
    assert "1: gres: asks for no GPUs (tres_req_str: cpu=1,mem=1G;" in str(result.notes[0])
