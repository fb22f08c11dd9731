"""`slurm_actions`: scontrol commands for the plan, checked against scontrol(1) as of Slurm 26.05
(the same keywords back to 23.11, the first release with GPU reservations, `TRESPerNode=`).

Every command is parsed back by `_scontrol` below, which knows only what the man page documents:
the keywords of "RESERVATIONS - SPECIFICATIONS FOR CREATE AND UPDATE COMMANDS" and of "JOBS -
SPECIFICATIONS FOR UPDATE COMMAND", the reservation flags, and the time forms of StartTime.

STATE: 8 slots of one hour from 2026-12-01T00:00Z, now = 2 (02:00). Pool a: a-0, a-1 (4 GPUs
each). Service chat on a, 2 GPUs per replica. Jobs:
  100      running on a-1 GPUs 0-1 from slot 0 to 4
  105@a-1  a running part (importers/parts.py) on a-1 GPUs 2-3 from slot 1 to 3
  101      pending, 2 GPUs, 2 slots;  102_3 pending array task, 4 GPUs, 3 slots;  103 pending
The hand plan (valid, `check` says so): 101 on a-1 GPUs 2-3 at [3, 5); 102_3 on a-1 at [5, 8);
103 unscheduled; chat: a-0 4 GPUs in [0, 6) then 2 GPUs in [6, 8), a-1 2 GPUs in [4, 5).
From now, each host's runs: a-0 4 GPUs [2, 6) and 2 GPUs [6, 8); a-1 2 GPUs [4, 5).
"""

from __future__ import annotations

import copy
import re
import shlex
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from horizon_opt.actions import RESERVATION_FLAGS, Actions, SlurmOptions, slurm_actions
from horizon_opt.actions.slurm_state import SlurmState
from horizon_opt.errors import InputError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.check import check
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import solve

# ---- what scontrol(1) documents

RESERVATION_KEYS = {
    k.lower(): k
    for k in [
        "ReservationName",
        "Accounts",
        "AllowedPartitions",
        "BurstBuffer",
        "CoreCnt",
        "Duration",
        "EndTime",
        "Flags",
        "Features",
        "Groups",
        "Licenses",
        "MaxStartDelay",
        "NodeCnt",
        "Nodes",
        "PartitionName",
        "QOS",
        "Skip",
        "StartTime",
        "TRES",
        "TRESPerNode",
        "Users",
    ]
}
JOB_UPDATE_KEYS = {
    k.lower()
    for k in [
        "JobId",
        "JobName",
        "Account",
        "AdminComment",
        "ArrayTaskThrottle",
        "BurstBuffer",
        "Clusters",
        "ClusterFeatures",
        "Comment",
        "Contiguous",
        "CoreSpec",
        "CPUsPerTask",
        "Deadline",
        "DelayBoot",
        "Dependency",
        "EligibleTime",
        "EndTime",
        "ExcNodeList",
        "Extra",
        "Features",
        "Gres",
        "Licenses",
        "MailType",
        "MailUser",
        "MCSLabel",
        "MinCPUsNode",
        "MinMemoryCPU",
        "MinMemoryNode",
        "MinTmpDiskNode",
        "Name",
        "Nice",
        "NodeList",
        "NumCPUs",
        "NumNodes",
        "NumTasks",
        "OverSubscribe",
        "Partition",
        "Prefer",
        "Priority",
        "QOS",
        "Reboot",
        "ReqCores",
        "ReqNodeList",
        "ReqNodes",
        "ReqProcs",
        "ReqSockets",
        "ReqThreads",
        "Requeue",
        "ReservationName",
        "ResetAccrueTime",
        "SiteFactor",
        "StdErr",
        "StdIn",
        "StdOut",
        "StartTime",
        "Switches",
        "TasksPerNode",
        "ThreadSpec",
        "TimeLimit",
        "TimeMin",
        "UserID",
        "WCKey",
        "WorkDir",
    ]
}
# StartTime / EndTime: "now", or a date and time as YYYY-MM-DD[THH:MM[:SS]] (no offset).
TIME = re.compile(r"^(now|\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?)$")
HOSTS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(,[A-Za-z0-9][A-Za-z0-9._-]*)*$")
TRES_PER_NODE = re.compile(r"^gres/[a-z0-9_]+(:[A-Za-z0-9_]+)?=[0-9]+$")
JOB_ID = re.compile(r"^[0-9]+(_[0-9]+)?$")


def _pairs(tokens: list[str]) -> dict[str, str]:
    out = {}
    for token in tokens:
        key, eq, value = token.partition("=")
        assert eq, f"{token!r} is not Keyword=value"
        assert key.lower() not in out, f"{key} given twice"
        out[key.lower()] = value
    return out


def _reservation_fields(fields: dict[str, str], create: bool) -> None:
    unknown = set(fields) - set(RESERVATION_KEYS)
    assert not unknown, f"not reservation keywords in scontrol(1): {unknown}"
    for key in ("starttime", "endtime"):
        if key in fields:
            assert TIME.match(fields[key]), fields[key]
    if "duration" in fields:
        assert fields["duration"].isdigit() and int(fields["duration"]) > 0
    if "nodes" in fields:
        assert HOSTS.match(fields["nodes"]), fields["nodes"]
    if "flags" in fields:
        assert set(fields["flags"].split(",")) <= RESERVATION_FLAGS
    if "trespernode" in fields:
        assert TRES_PER_NODE.match(fields["trespernode"]), fields["trespernode"]
    if create:  # "A new reservation must specify ..."
        assert "starttime" in fields
        assert {"duration", "endtime"} & set(fields)
        assert {"nodecnt", "nodes", "licenses"} & set(fields)
        assert {"users", "groups", "accounts", "qos", "allowedpartitions"} & set(fields)
        assert not {"users", "groups"} <= set(fields)  # mutually exclusive
        assert "skip" not in fields  # update only


def _scontrol(argv: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """Check one command against scontrol(1); returns (what it is, its fields by lower key)."""
    args = list(argv)
    if args[0] == "env":
        assert args[1].startswith("TZ=")
        ZoneInfo(args[1].removeprefix("TZ="))
        args = args[2:]
    assert args[0] == "scontrol"
    if args[1:3] == ["create", "reservation"]:
        fields = _pairs(args[3:])
        _reservation_fields(fields, create=True)
        return "create reservation", fields
    if args[1] == "delete":
        assert len(args) == 3 and args[2].startswith("ReservationName=")
        return "delete reservation", _pairs(args[2:])
    assert args[1] == "update", argv
    fields = _pairs(args[2:])
    if args[2].startswith("ReservationName="):
        _reservation_fields(fields, create=False)
        assert "starttime" not in fields  # never updated: the name holds the start
        return "update reservation", fields
    assert args[2].startswith("JobId="), argv
    assert JOB_ID.match(fields["jobid"]), fields["jobid"]
    assert set(fields) <= JOB_UPDATE_KEYS
    assert TIME.match(fields.get("starttime", "now"))
    assert fields.get("reqnodelist", "") == "" or HOSTS.match(fields["reqnodelist"])
    return "update job", fields


def _commands(actions: Actions) -> list[tuple[str, dict[str, str]]]:
    out = [_scontrol(a.argv) for a in actions.actions]
    script = actions.to_script()
    lines = [ln for ln in script.splitlines() if ln and not ln.startswith("#") and ln != "set -eu"]
    assert [tuple(shlex.split(ln)) for ln in lines] == [a.argv for a in actions.actions]
    return out


EMPTY = SlurmState(occupied={})  # squeue read: no job runs in any reservation

# ---- the state and its plan

STATE: dict[str, Any] = {
    "name": "slurm-state",
    "horizon": {"slots": 8, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"},
    "now": 2,
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 2, "demand": [1] * 8}],
    "jobs": [
        {
            "id": "100",
            "priority": 1,
            "gpus": 2,
            "duration": 4,
            "placed": {"pool": "a", "start": 0, "gpus": {"a-1": [0, 1]}},
        },
        {
            "id": "105@a-1",
            "priority": 1,
            "gpus": 2,
            "duration": 2,
            "placed": {"pool": "a", "start": 1, "gpus": {"a-1": [2, 3]}},
        },
        {"id": "101", "priority": 2, "gpus": 2, "duration": 2},
        {"id": "102_3", "priority": 1, "gpus": 4, "duration": 3},
        {"id": "103", "priority": 1, "gpus": 2, "duration": 1},
    ],
}


def _plan_data() -> dict[str, Any]:
    return {
        "instance": "slurm-state",
        "solver": "hand",
        "status": "heuristic",
        "objective": 0.0,
        "assignments": [
            {"job": "100", "pool": "a", "start": 0, "end": 4, "gpus": {"a-1": [0, 1]}},
            {"job": "105@a-1", "pool": "a", "start": 1, "end": 3, "gpus": {"a-1": [2, 3]}},
            {"job": "101", "pool": "a", "start": 3, "end": 5, "gpus": {"a-1": [2, 3]}},
            {"job": "102_3", "pool": "a", "start": 5, "end": 8, "gpus": {"a-1": [0, 1, 2, 3]}},
        ],
        "inference": [
            {"service": "chat", "node": "a-0", "start": 0, "end": 6, "replicas": 2},
            {"service": "chat", "node": "a-0", "start": 6, "end": 8, "replicas": 1},
            {"service": "chat", "node": "a-1", "start": 4, "end": 5, "replicas": 1},
        ],
        "unscheduled": [{"job": "103", "reason": "left out by hand"}],
    }


def _instance(spec: dict[str, Any] = STATE) -> Instance:
    return compile_instance(parse_spec(spec))


def _plan(data: dict[str, Any] | None = None, instance: Instance | None = None) -> Plan:
    plan = Plan.parse(data or _plan_data())
    assert not check(instance or _instance(), plan)
    return plan


OPTIONS = SlurmOptions(users=("svc-infer",), hold_after_minutes=120)


def test_first_cycle_reserves_each_hosts_runs_and_hints_pending_jobs() -> None:
    actions = slurm_actions(_instance(), _plan(), OPTIONS)
    got = _commands(actions)
    resv = {f["reservationname"]: f for kind, f in got if kind == "create reservation"}
    assert set(resv) == {
        "hopt-chat-20261201T0200-4gpu",
        "hopt-chat-20261201T0400-2gpu",
        "hopt-chat-20261201T0600-2gpu",
    }
    first = resv["hopt-chat-20261201T0200-4gpu"]
    assert first["starttime"] == "2026-12-01T02:00:00"
    assert first["duration"] == "240"  # 02:00 to 06:00: a-0 keeps 4 GPUs while a-1 changes
    assert first["nodes"] == "a-0" and first["trespernode"] == "gres/gpu=4"
    assert first["users"] == "svc-infer"
    assert first["flags"] == "IGNORE_JOBS,MAGNETIC,NO_HOLD_JOBS_AFTER"
    assert resv["hopt-chat-20261201T0400-2gpu"]["nodes"] == "a-1"
    assert resv["hopt-chat-20261201T0400-2gpu"]["duration"] == "60"
    assert resv["hopt-chat-20261201T0600-2gpu"]["duration"] == "120"
    jobs = {f["jobid"]: f for kind, f in got if kind == "update job"}
    # hold_after 120 min: 101 (slot 3) starts before slot 4 and gets its host; 102_3 (slot 5)
    # gets only its start; 103 is unplanned and never had a hint.
    assert jobs == {
        "101": {"jobid": "101", "starttime": "2026-12-01T03:00:00", "reqnodelist": "a-1"},
        "102_3": {"jobid": "102_3", "starttime": "2026-12-01T05:00:00"},
    }
    assert all(a.argv[:3] == ("env", "TZ=UTC", "scontrol") for a in actions.actions)


def test_running_jobs_and_parts_never_get_an_action() -> None:
    """Even when the applied state says they had a hint (they started since)."""
    applied = {
        "job/100": {"start": "2026-12-01T00:00:00Z", "nodes": "a-1"},
        "job/105@a-1": {"start": "2026-12-01T01:00:00Z", "nodes": "a-1"},
    }
    actions = slurm_actions(_instance(), _plan(), OPTIONS, applied)
    targets = {a.target for a in actions.actions}
    assert not targets & {"job/100", "job/105@a-1"}
    assert not any("100" in " ".join(a.argv) for a in actions.actions)
    assert "job/100" not in actions.desired


def test_second_cycle_with_the_applied_state_gives_nothing() -> None:
    first = slurm_actions(_instance(), _plan(), OPTIONS)
    again = slurm_actions(_instance(), _plan(), OPTIONS, first.desired)
    assert again.actions == ()
    assert again.desired == first.desired


def test_a_fifo_plan_round_trips_through_json_and_gives_nothing_the_second_time() -> None:
    inst = _instance()
    plan = solve(inst, "fifo")
    first = slurm_actions(inst, plan, OPTIONS)
    _commands(first)
    assert not any(a.target in ("job/100", "job/105@a-1") for a in first.actions)
    stored = Actions.from_json(first.to_json())
    assert slurm_actions(inst, plan, OPTIONS, stored.desired).actions == ()


def test_a_changed_plan_changes_only_its_targets() -> None:
    first = slurm_actions(_instance(), _plan(), OPTIONS)
    data = _plan_data()
    # a-0 keeps 4 GPUs to the end: its 02:00 reservation runs to 08:00, the 06:00 one goes.
    data["inference"][1] = {"service": "chat", "node": "a-0", "start": 6, "end": 8, "replicas": 2}
    actions = slurm_actions(_instance(), _plan(data), OPTIONS, first.desired)
    assert _commands(actions) == [
        ("delete reservation", {"reservationname": "hopt-chat-20261201T0600-2gpu"}),
        (  # it started at 02:00 (now): only its end moves, and only later
            "update reservation",
            {"reservationname": "hopt-chat-20261201T0200-4gpu", "endtime": "2026-12-01T08:00:00"},
        ),
    ]
    del data["assignments"][3]
    data["unscheduled"].append({"job": "102_3", "reason": "by hand"})
    data["inference"][2]["replicas"] = 0
    dropped = slurm_actions(_instance(), _plan(data), OPTIONS, actions.desired)
    # 102_3 is no longer planned: its hint is cleared; a-1's replica is gone with its period.
    assert _commands(dropped) == [
        ("update job", {"jobid": "102_3", "starttime": "now", "reqnodelist": ""}),
        ("delete reservation", {"reservationname": "hopt-chat-20261201T0400-2gpu"}),
    ]


def test_moved_hosts_of_a_gpu_reservation_are_a_delete_and_a_create() -> None:
    """Slurm cannot change the nodes of a GPU reservation (reservation.c, update_resv): the
    applied 04:00 reservation was on a-0, the plan now has it on a-1."""
    applied = copy.deepcopy(slurm_actions(_instance(), _plan(), OPTIONS).desired)
    applied["reservation/hopt-chat-20261201T0400-2gpu"]["nodes"] = "a-0"
    actions = slurm_actions(_instance(), _plan(), OPTIONS, applied)
    got = _commands(actions)
    assert [kind for kind, _ in got] == ["delete reservation", "create reservation"]
    assert {f["reservationname"] for _, f in got} == {"hopt-chat-20261201T0400-2gpu"}
    assert got[1][1]["nodes"] == "a-1"


def _later(now: int) -> dict[str, Any]:
    """STATE at a later `now`: jobs that ended are left out, as the importer does."""
    spec = copy.deepcopy(STATE)
    spec["now"] = now
    spec["jobs"] = [j for j in spec["jobs"] if j["id"] != "105@a-1"]
    return spec


def test_next_cycle_keeps_the_running_reservation_and_its_name() -> None:
    first = slurm_actions(_instance(), _plan(), OPTIONS)
    inst = _instance(_later(3))
    data = _plan_data()
    data["assignments"] = [a for a in data["assignments"] if a["job"] != "105@a-1"]
    actions = slurm_actions(inst, _plan(data, inst), OPTIONS, first.desired)
    assert actions.actions == ()
    assert "reservation/hopt-chat-20261201T0200-4gpu" in actions.desired
    assert actions.desired["reservation/hopt-chat-20261201T0200-4gpu"]["start"] == (
        "2026-12-01T02:00:00Z"
    )


def test_a_running_reservation_the_plan_drops_ends_now_and_a_dropped_hint_is_cleared() -> None:
    """No job runs in the 02:00 reservation (read from squeue): it can end now."""
    first = slurm_actions(_instance(), _plan(), OPTIONS)
    inst = _instance(_later(3))
    data = _plan_data()
    data["assignments"] = [a for a in data["assignments"] if a["job"] not in ("105@a-1", "102_3")]
    data["unscheduled"].append({"job": "102_3", "reason": "by hand"})
    # From now on chat holds 2 GPUs on a-0 (not 4): the 4-GPU reservation must end.
    data["inference"][0] = {"service": "chat", "node": "a-0", "start": 0, "end": 3, "replicas": 2}
    data["inference"].append(
        {"service": "chat", "node": "a-0", "start": 3, "end": 6, "replicas": 1}
    )
    actions = slurm_actions(inst, _plan(data, inst), OPTIONS, first.desired, EMPTY)
    got = _commands(actions)
    release = (
        "update reservation",
        {"reservationname": "hopt-chat-20261201T0200-4gpu", "endtime": "now"},
    )
    assert release in got
    assert actions.actions[got.index(release)].kind == "release"
    assert ("update job", {"jobid": "102_3", "starttime": "now", "reqnodelist": ""}) in got
    created = [f for kind, f in got if kind == "create reservation"]
    assert [(f["reservationname"], f["starttime"], f["duration"]) for f in created] == [
        ("hopt-chat-20261201T0300-2gpu", "2026-12-01T03:00:00", "300")
    ]  # a-0 holds 2 GPUs from 03:00 to 08:00; the old 06:00 period is deleted
    assert ("delete reservation", {"reservationname": "hopt-chat-20261201T0600-2gpu"}) in got


def test_an_ended_reservation_is_left_to_slurm() -> None:
    applied = {
        "reservation/hopt-chat-20261201T0000-4gpu": {
            "service": "chat",
            "start": "2026-12-01T00:00:00Z",
            "end": "2026-12-01T02:00:00Z",
            "nodes": "a-0",
            "gpus_per_node": "4",
        }
    }
    actions = slurm_actions(_instance(), _plan(), OPTIONS, applied)
    assert not any(a.target == next(iter(applied)) for a in actions.actions)


def test_times_are_written_in_the_configured_zone_names_stay_utc() -> None:
    options = SlurmOptions(users=("svc",), time_zone="America/New_York", hold_after_minutes=120)
    actions = slurm_actions(_instance(), _plan(), options)
    got = _commands(actions)
    resv = {f["reservationname"]: f for kind, f in got if kind == "create reservation"}
    # 02:00Z on 1 December is 21:00 EST (UTC-5) on 30 November.
    assert resv["hopt-chat-20261201T0200-4gpu"]["starttime"] == "2026-11-30T21:00:00"
    jobs = {f["jobid"]: f for kind, f in got if kind == "update job"}
    assert jobs["101"]["starttime"] == "2026-11-30T22:00:00"
    assert all(a.argv[:2] == ("env", "TZ=America/New_York") for a in actions.actions)


def test_reservation_names_are_stable_across_cycles_and_lookahead_limits_them() -> None:
    one = slurm_actions(_instance(), _plan(), OPTIONS)
    two = slurm_actions(_instance(), _plan(), OPTIONS)
    assert one.desired == two.desired and one.to_json() == two.to_json()
    short = SlurmOptions(users=("svc",), lookahead_minutes=180, reservation_prefix="hz")
    names = sorted(
        t for t in slurm_actions(_instance(), _plan(), short).desired if "reservation" in t
    )
    # Periods starting before 02:00 + 3 h = 05:00: those from 02:00 and 04:00.
    assert names == [
        "reservation/hz-chat-20261201T0200-4gpu",
        "reservation/hz-chat-20261201T0400-2gpu",
    ]


def test_node_granularity_reserves_mostly_inference_nodes_and_says_what_it_leaves() -> None:
    """Before Slurm 23.11 a reservation takes whole nodes: a-0 (4 of 4 GPUs to inference from
    02:00 to 06:00) is reserved; a-1 (2 of 4) and a-0 from 06:00 (2 of 4) are not."""
    options = SlurmOptions(users=("svc",), granularity="node", accounts=("infer",))
    actions = slurm_actions(_instance(), _plan(), options)
    got = [f for kind, f in _commands(actions) if kind == "create reservation"]
    assert got == [
        {
            "reservationname": "hopt-chat-20261201T0200",
            "starttime": "2026-12-01T02:00:00",
            "duration": "240",
            "nodes": "a-0",
            "users": "svc",
            "accounts": "infer",
            "flags": "IGNORE_JOBS,MAGNETIC,NO_HOLD_JOBS_AFTER",
        }
    ]
    assert any(
        "whole nodes" in a.why
        for a in actions.actions
        if a.kind == "create" and "reservation" in a.target
    )
    assert any("a-0, a-1" in n and "unreserved" in n for n in actions.notes)


def test_whole_node_reservations_update_their_nodes_in_place() -> None:
    options = SlurmOptions(users=("svc",), granularity="node")
    first = slurm_actions(_instance(), _plan(), options)
    data = _plan_data()
    data["inference"] = [
        {"service": "chat", "node": "a-1", "start": 0, "end": 6, "replicas": 2},
        {"service": "chat", "node": "a-0", "start": 6, "end": 8, "replicas": 1},
    ]
    data["assignments"] = [
        {"job": "100", "pool": "a", "start": 0, "end": 4, "gpus": {"a-1": [0, 1]}},
        {"job": "105@a-1", "pool": "a", "start": 1, "end": 3, "gpus": {"a-1": [2, 3]}},
    ]
    data["unscheduled"] = [{"job": j, "reason": "by hand"} for j in ("101", "102_3", "103")]
    stored = copy.deepcopy(first.desired)
    del stored["job/101"], stored["job/102_3"]
    actions = slurm_actions(_instance(), Plan.parse(data), options, stored)
    assert _commands(actions) == [
        ("update reservation", {"reservationname": "hopt-chat-20261201T0200", "nodes": "a-1"})
    ]


def test_bad_input_is_an_input_error() -> None:
    with pytest.raises(InputError, match="needs users or accounts"):
        slurm_actions(_instance(), _plan(), SlurmOptions())
    with pytest.raises(InputError, match="not an IANA zone"):
        slurm_actions(_instance(), _plan(), SlurmOptions(users=("u",), time_zone="Mars/Base"))
    with pytest.raises(InputError, match="flags not in scontrol"):
        slurm_actions(_instance(), _plan(), SlurmOptions(users=("u",), flags=("KILL_JOBS",)))
    spec = copy.deepcopy(STATE)
    spec["jobs"][2]["id"] = "train-7"
    data = _plan_data()
    data["instance"] = spec["name"]
    data["assignments"][2]["job"] = "train-7"
    with pytest.raises(InputError, match="'train-7' is not a Slurm job id"):
        slurm_actions(_instance(spec), Plan.parse(data), OPTIONS)


# Inference only: pool a of three 4-GPU hosts, chat takes whole hosts (4 GPUs a replica).
CHAT_ONLY: dict[str, Any] = {
    "name": "chat-only",
    "horizon": {"slots": 8, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"},
    "now": 2,
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 3, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 4, "demand": [1] * 8}],
}


def _chat_plan(blocks: list[tuple[str, int, int]]) -> Plan:
    return Plan.parse(
        {
            "instance": "chat-only",
            "solver": "hand",
            "status": "heuristic",
            "objective": 0.0,
            "inference": [
                {"service": "chat", "node": n, "start": a, "end": b, "replicas": 1}
                for n, a, b in blocks
            ],
        }
    )


def test_periods_that_would_share_a_name_add_their_first_host() -> None:
    inst = _instance(CHAT_ONLY)
    plan = _chat_plan([("a-0", 0, 5), ("a-1", 2, 7), ("a-2", 5, 8)])
    assert not check(inst, plan)
    got = _commands(slurm_actions(inst, plan, OPTIONS))
    names = {f["reservationname"]: (f["nodes"], f["duration"]) for _, f in got}
    assert names == {
        "hopt-chat-20261201T0200-4gpu-a-0": ("a-0", "180"),
        "hopt-chat-20261201T0200-4gpu-a-1": ("a-1", "300"),
        "hopt-chat-20261201T0500-4gpu": ("a-2", "180"),
    }


def test_running_reservations_go_on_when_their_hosts_keep_their_gpus() -> None:
    """Cycle 1 (now 02:00): a-0 from 02:00 and a-1 from 04:00, two reservations. Cycle 2 (now
    05:00): both hosts run on to 08:00; each running reservation goes on under its name rather
    than being ended and made again as one."""
    plan = _chat_plan([("a-0", 0, 8), ("a-1", 4, 8)])
    first = slurm_actions(_instance(CHAT_ONLY), plan, OPTIONS)
    assert sorted(first.desired) == [
        "reservation/hopt-chat-20261201T0200-4gpu",
        "reservation/hopt-chat-20261201T0400-4gpu",
    ]
    later = _instance({**CHAT_ONLY, "now": 5})
    assert slurm_actions(later, plan, OPTIONS, first.desired).actions == ()
    # a-0 now stops at 06:00 and a-2 takes over: a-0's reservation (empty) is shortened, a-2's
    # is new.
    shorter = _chat_plan([("a-0", 0, 6), ("a-1", 4, 8), ("a-2", 6, 8)])
    got = _commands(slurm_actions(later, shorter, OPTIONS, first.desired, EMPTY))
    assert got[0] == (
        "update reservation",
        {"reservationname": "hopt-chat-20261201T0200-4gpu", "endtime": "2026-12-01T06:00:00"},
    )
    assert [(k, f["reservationname"], f["nodes"]) for k, f in got[1:]] == [
        ("create reservation", "hopt-chat-20261201T0600-4gpu", "a-2")
    ]
