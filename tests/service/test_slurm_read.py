"""What a Slurm cycle reads besides the queue (actions/slurm_state.py, service/slurm_read.py):
scontrol's one-line output as 22.05 and 24.05 write it, the service's own jobs, the jobs in each
reservation and the GPUs running jobs hold to their limits."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from horizon_opt.actions.slurm_state import (
    drift,
    held_gpus,
    held_reservations,
    node_states,
    occupied,
    parse_version,
    unusable_nodes,
)
from horizon_opt.errors import InputError
from horizon_opt.service.settings import ServiceJobs, SlurmSettings
from horizon_opt.service.slurm_read import (
    FOREVER,
    held_to_limits,
    limits_of,
    outages,
    read_slurm,
    without_service_jobs,
)

RESERVATIONS = (
    "ReservationName=hopt-chat-20261203T1500 StartTime=2026-12-03T14:05:26 "
    "EndTime=2026-12-03T16:00:00 Duration=01:54:34 Nodes=gpu[3-4] NodeCnt=2 CoreCnt=32 "
    "Features=(null) PartitionName=(null) Flags=IGNORE_JOBS,SPEC_NODES,MAGNETIC TRES=cpu=32 "
    "Users=nobody Groups=(null) Accounts=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a\n"
    "ReservationName=hopt-chat-20261203T1600-4gpu StartTime=2026-12-03T16:00:00 "
    "EndTime=2026-12-03T17:00:00 Duration=01:00:00 Nodes=gpu1,gpu2 NodeCnt=2 "
    "TRES=cpu=4,gres/gpu=8 Users=nobody State=INACTIVE\n"
    "ReservationName=maint StartTime=2026-12-03T16:00:00 EndTime=2026-12-03T17:00:00 Nodes=gpu1\n"
    "ReservationName=hopt-by-hand StartTime=2026-12-03T16:00:00 EndTime=2026-12-03T17:00:00 "
    "Nodes=gpu1\n"
)
NODES = (
    "NodeName=gpu1 Arch=x86_64 OS=Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC State=IDLE+DRAIN "
    "Reason=disk failed [root@2026-12-03T10:00:00]\n"
    "NodeName=gpu2 OS=Linux 6.1.0 #1 SMP State=DOWN* Reason=Not responding\n"
    "NodeName=gpu3 State=MIXED Partitions=gpu\n"
    "NodeName=gpu4 State=ALLOCATED+MAINT+RESERVED\n"
)


def _num(n: int) -> dict[str, object]:
    return {"set": True, "infinite": False, "number": n}


QUEUE = {
    "jobs": [
        {  # 22.05 (v0.0.38): plain numbers, plain state
            "job_id": 7,
            "job_state": "RUNNING",
            "user_name": "alice",
            "start_time": 1796306400,
            "time_limit": 120,
            "nodes": "gpu[1-2]",
            "gres_detail": ["gpu:4(IDX:0-3)", "gpu:2(IDX:0-1)"],
            "resv_name": "",
        },
        {  # 24.05 (v0.0.41): wrapped numbers, a list of states; a replica in a reservation
            "job_id": _num(8),
            "job_state": ["RUNNING"],
            "user_name": "svc-chat",
            "start_time": _num(1796306400),
            "time_limit": _num(30),
            "nodes": "gpu3",
            "gres_detail": ["gpu:4(IDX:0-3)"],
            "resv_name": "hopt-chat-20261203T1500",
        },
        {"job_id": 9, "job_state": "PENDING", "user_name": "svc-chat", "partition": "gpu"},
        {
            "job_id": 10,
            "job_state": "RUNNING",
            "user_name": "bob",
            "time_limit": None,
            "start_time": 1796306400,
            "nodes": "gpu4",
            "gres_detail": ["gpu:1(IDX:0)"],
        },
    ]
}


def test_reservations_read_back_are_the_tools_own_as_targets() -> None:
    got = held_reservations(RESERVATIONS, "hopt", {"chat": "chat"}, ZoneInfo("UTC"))
    assert got == {
        "reservation/hopt-chat-20261203T1500": {
            "service": "chat",
            "start": "2026-12-03T14:05:26Z",
            "end": "2026-12-03T16:00:00Z",
            "nodes": "gpu3,gpu4",
            "gpus_per_node": "",
        },
        "reservation/hopt-chat-20261203T1600-4gpu": {
            "service": "chat",
            "start": "2026-12-03T16:00:00Z",
            "end": "2026-12-03T17:00:00Z",
            "nodes": "gpu1,gpu2",
            "gpus_per_node": "4",
        },
    }
    assert held_reservations("No reservations in the system\n", "hopt", {}, ZoneInfo("UTC")) == {}
    per_node = RESERVATIONS.replace("TRES=cpu=4,gres/gpu=8", "TRESPerNode=gres/gpu=4")
    got = held_reservations(per_node, "hopt", {"chat": "chat"}, ZoneInfo("UTC"))
    assert got["reservation/hopt-chat-20261203T1600-4gpu"]["gpus_per_node"] == "4"
    paris = held_reservations(RESERVATIONS, "hopt", {"chat": "chat"}, ZoneInfo("Europe/Paris"))
    assert paris["reservation/hopt-chat-20261203T1600-4gpu"]["start"] == "2026-12-03T15:00:00Z"


def test_node_states_with_spaces_in_other_fields() -> None:
    states = node_states(NODES)
    assert states["gpu1"] == {"IDLE", "DRAIN"}
    assert states["gpu2"] == {"DOWN", "NOT_RESPONDING"}
    assert unusable_nodes(states) == {
        "gpu1": "DRAIN",
        "gpu2": "DOWN+NOT_RESPONDING",
        "gpu4": "MAINT",
    }


def test_versions() -> None:
    assert parse_version("slurm-wlm 22.05.8\n") == (22, 5)
    assert parse_version("slurm 23.11.4") == (23, 11)
    with pytest.raises(InputError, match="scontrol version"):
        parse_version("scontrol: error: cannot connect")


def test_jobs_in_reservations_and_gpus_held_to_the_limits() -> None:
    assert occupied(QUEUE) == {"hopt-chat-20261203T1500": ("8",)}
    held = held_gpus(QUEUE, FOREVER)
    two_hours = datetime(2026, 12, 3, 16, tzinfo=UTC)
    assert held["gpu1"] == ((4, two_hours),) and held["gpu2"] == ((2, two_hours),)
    assert held["gpu4"] == ((1, FOREVER),)  # no limit: held for good


def test_the_services_own_jobs_are_left_out_of_the_batch_work() -> None:
    match = ServiceJobs(users=["svc-chat"])
    batch, mine = without_service_jobs(QUEUE, match)
    assert mine == ["8", "9"]
    assert [j["job_id"] for j in batch["jobs"]] == [7, 10]
    assert without_service_jobs(QUEUE, ServiceJobs()) == (QUEUE, [])
    by_partition = without_service_jobs(QUEUE, ServiceJobs(partitions=["gpu"]))[0]
    assert 9 not in [j["job_id"] for j in by_partition["jobs"]]


def test_read_slurm_runs_scontrol_and_makes_outages_of_unusable_nodes() -> None:
    answers = {
        "scontrol version": "slurm-wlm 22.05.8\n",
        "scontrol show reservation": RESERVATIONS,
        "nodes": NODES,
    }
    settings = SlurmSettings(users=["svc-chat"], service_jobs=ServiceJobs(users=["svc-chat"]))
    read, notes = read_slurm(settings, QUEUE, {"chat": "chat"}, lambda argv, what: answers[what])
    assert read.state.version == (22, 5)
    assert read.state.occupied == {"hopt-chat-20261203T1500": ("8",)}
    assert "gpu3" not in read.state.held  # the replica's GPUs are the reservation's
    assert any("service's own" in n for n in notes)
    assert any("gpu2 is DOWN" in n for n in notes)
    snapshot = datetime(2026, 12, 3, 14, 30, tzinfo=UTC)
    down = {o["node"]: o["start"] for o in outages(read, snapshot, {"gpu1", "gpu2", "gpu3"})}
    assert down == {  # gpu1 drains: its job runs on to its limit; gpu4 is not in the cluster file
        "gpu1": "2026-12-03T16:00:00+00:00",
        "gpu2": "2026-12-03T14:30:00+00:00",
    }


def test_drift_counts_reservations_slurm_holds_otherwise_than_the_ledger() -> None:
    held = held_reservations(RESERVATIONS, "hopt", {"chat": "chat"}, ZoneInfo("UTC"))
    ledger = {t: dict(p) for t, p in held.items()}
    ledger["reservation/hopt-chat-20261203T1500"]["start"] = "2026-12-03T14:00:00Z"  # began now
    ledger["job/12"] = {"start": "2026-12-03T18:00:00Z", "nodes": ""}
    assert drift(ledger, held) == 0
    ledger["reservation/hopt-chat-20261203T1600-4gpu"]["nodes"] = "gpu1"
    ledger["reservation/hopt-chat-20261203T2000-4gpu"] = {"nodes": "gpu2", "end": "x"}
    assert drift(ledger, held) == 2


def test_running_jobs_are_placed_to_their_limits_where_an_estimate_ended_them_sooner() -> None:
    limits = limits_of(QUEUE)
    assert limits["7"] == datetime(2026, 12, 3, 16, tzinfo=UTC) and limits["10"] == FOREVER
    document = {
        "horizon": {"slots": 8, "slot_minutes": 60, "start": "2026-12-03T13:00:00Z"},
        "jobs": [
            {"id": "7", "duration": "60m", "placed": {"end": "2026-12-03T15:00:00Z"}},
            {"id": "10@gpu4", "duration": "60m", "placed": {"end": "2026-12-03T15:00:00Z"}},
            {"id": "11", "duration": "60m"},
        ],
    }
    assert held_to_limits(document, limits) == 2
    jobs = document["jobs"]
    assert jobs[0]["placed"]["end"] == "2026-12-03T16:00:00Z" and jobs[0]["duration"] == "120m"
    assert jobs[1]["placed"]["end"] == "2026-12-03T21:00:00Z"  # no limit: the horizon's end
    assert "placed" not in jobs[2]
