"""`horizon-opt run` end to end, as a real process against a fake Slurm (tests/fake/slurm.py):
`squeue --json` answers from a small world, `scontrol` records and applies what it receives and
refuses what slurmctld refuses (a hint for a running job, a reservation created twice).

The cluster: three 8-GPU H100 hosts, a chat service whose forecast (a demand CSV in wall-clock
time) needs 2 to 4 replicas of 2 GPUs; two jobs running, four waiting, one arriving later.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake import HORIZON_OPT, assert_current_plan_valid, install_commands, write_demand_csv
from fake import slurm as fake
from prometheus_client.parser import text_string_to_metric_families

from horizon_opt.service.folder import StateFolder

REPO = Path(__file__).resolve().parents[2]
# The fake's clock is a day ahead of the real one: Slurm's present is the later of the two.
T0 = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
HOSTS = ["gpu-h100-01", "gpu-h100-02", "gpu-h100-03"]
DEMAND = [2, 2, 3, 4, 4, 3, 2, 2]  # replicas, repeating every 8 hours


def _epoch(when: datetime) -> int:
    return int(when.timestamp())


def _job(id_: int, gpus: int, nodes: int, limit: int, run: int, prio: int, **kw: Any) -> dict:
    return {
        "id": id_,
        "name": f"job-{id_}",
        "user": "alice",
        "partition": "gpu-h100",
        "gpus": gpus,
        "nodes": nodes,
        "limit_minutes": limit,
        "run_minutes": run,
        "priority": prio,
        "submit": kw.pop("submit", _epoch(T0 - timedelta(hours=2))),
        "state": "PENDING",
        **kw,
    }


def _world() -> dict[str, Any]:
    running = {
        101: (T0 - timedelta(hours=1), {"gpu-h100-01": list(range(8))}, 240, 180),
        102: (T0 - timedelta(minutes=30), {"gpu-h100-02": [0, 1, 2, 3]}, 120, 60),
    }
    jobs = [
        _job(i, sum(len(g) for g in alloc.values()), 1, limit, run, 3000)
        | {"state": "RUNNING", "start": _epoch(start), "alloc": alloc}
        for i, (start, alloc, limit, run) in running.items()
    ]
    jobs += [
        _job(103, 8, 1, 180, 120, 5000),
        _job(104, 16, 2, 240, 200, 9000),
        _job(105, 2, 1, 60, 30, 1000),
        _job(106, 4, 1, 120, 90, 2000, submit=_epoch(T0 + timedelta(hours=2))),
    ]
    return {
        "clock": _epoch(T0),
        "nodes": {h: {"partition": "gpu-h100", "gpus": 8} for h in HOSTS},
        "jobs": jobs,
        "reservations": {},
        "log": [],
    }


@pytest.fixture
def cluster(tmp_path: Path) -> dict[str, Any]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install_commands(bin_dir, "slurm.py", {"squeue": "squeue", "scontrol": "scontrol"})
    state = tmp_path / "world.json"
    state.write_text(json.dumps(_world()))
    write_demand_csv(tmp_path / "chat.csv", T0, DEMAND)
    (tmp_path / "cluster.yaml").write_text(
        "horizon: {slots: 24, slot_minutes: 60}\n"
        "pools:\n"
        "  - {name: h100, gpu_type: H100-80GB, nodes: 3, gpus_per_node: 8,\n"
        f"     partitions: [gpu-h100], node_names: [{', '.join(HOSTS)}]}}\n"
        "services:\n"
        "  - {name: chat, pool: h100, gpus_per_replica: 2, demand: {csv: chat.csv, column: replicas}}\n"
    )
    (tmp_path / "run.yaml").write_text(
        "scheduler: slurm\ncluster: cluster.yaml\nqueue: {command: [squeue, --json]}\n"
        "state: state\nevery: 1h\nfreeze: 1h\nsolver: cpsat\ntime_limit: 1\nworkers: 1\n"
        "slurm: {users: [svc-chat], start_hints: true}\n"
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM_STATE": str(state)}
    return {"dir": tmp_path, "env": env, "world": state}


def _run(c: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HORIZON_OPT), "run", str(c["dir"] / "run.yaml"), *args],
        env=c["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _world_now(c: dict[str, Any]) -> dict[str, Any]:
    return json.loads(c["world"].read_text())


def _tick(c: dict[str, Any], minutes: int) -> None:
    path = c["world"]
    state = json.loads(path.read_text())
    fake.tick(state, minutes)
    path.write_text(json.dumps(state))


def _check_holds(c: dict[str, Any]) -> None:
    """The reservations keep every running job's GPUs (for its whole time limit) and hold at
    least what the forecast needs, hour by hour to the end of the horizon (24 slots from the
    hour before the snapshot)."""
    world = _world_now(c)
    clock = world["clock"]
    for hour in range(23):
        at = clock + 3600 * hour
        held = fake.reserved(world, at)
        want = 2 * math.ceil(DEMAND[((at - _epoch(T0)) // 3600) % len(DEMAND)])
        assert sum(held.values()) >= want, (hour, held, want)
        for job in world["jobs"]:
            if job["state"] != "RUNNING" or job["start"] + 60 * job["limit_minutes"] <= at:
                continue
            for host, idx in job["alloc"].items():
                assert held.get(host, 0) + len(idx) <= 8, (hour, host, job["id"], held)


def _commands(c: dict[str, Any]) -> list[list[str]]:
    return list(_world_now(c)["log"])


def test_cycles_follow_the_forecast_keep_running_jobs_and_change_only_what_changed(
    cluster: dict[str, Any],
) -> None:
    first = _run(cluster, "--apply")
    assert first.returncode == 0, first.stderr
    assert "applied" in first.stdout
    script = (cluster["dir"] / "state" / "current" / "actions.sh").read_text()
    assert "Applied by this cycle" in script and "nothing has been applied" not in script
    _check_holds(cluster)
    sent = _commands(cluster)
    assert any(a[1:3] == ["create", "reservation"] for a in sent)
    running = {"JobId=101", "JobId=102"}
    assert not [a for a in sent if running & set(a)]
    assert_current_plan_valid(cluster["dir"] / "state")

    again = _run(cluster, "--apply")  # the same queue at the same time: nothing to change
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert _commands(cluster) == sent

    _tick(cluster, 60)  # an hour on: 102 ended, hinted jobs started, the hosts changed hands
    later = _run(cluster, "--apply")
    assert later.returncode == 0, later.stderr + later.stdout
    _check_holds(cluster)
    new = _commands(cluster)[len(sent) :]
    started = {f"JobId={j['id']}" for j in _world_now(cluster)["jobs"] if j["state"] != "PENDING"}
    assert not [a for a in new if started & set(a)]
    assert len(list((cluster["dir"] / "state" / "cycles").iterdir())) == 3


def test_a_failed_import_keeps_the_last_good_plan(cluster: dict[str, Any]) -> None:
    assert _run(cluster).returncode == 0
    state = cluster["dir"] / "state"
    good = (state / "current").resolve()
    plan = (good / "plan.json").read_text()
    cluster["world"].write_text("{broken")
    failed = _run(cluster)
    assert failed.returncode == 1
    assert "FAILED" in failed.stdout and "error: queue" in failed.stderr
    assert (state / "current").resolve() == good and (good / "plan.json").read_text() == plan
    status = json.loads((state / "status.json").read_text())
    assert status["ok"] is False and status["plan_in_force"] == good.name
    metrics = {
        f.name: f for f in text_string_to_metric_families((state / "metrics.prom").read_text())
    }
    assert metrics["horizon_opt_cycle_success"].samples[0].value == 0
    assert metrics["horizon_opt_plan_pwo"].samples[0].value > 0  # the plan still in force


def test_a_second_run_while_one_holds_the_state_folder_exits_3(cluster: dict[str, Any]) -> None:
    with StateFolder(cluster["dir"] / "state").locked():
        busy = _run(cluster)
    assert busy.returncode == 3 and "holds" in busy.stderr


def test_without_apply_nothing_reaches_the_scheduler(cluster: dict[str, Any]) -> None:
    done = _run(cluster)
    assert done.returncode == 0, done.stderr
    assert _commands(cluster) == []
    script = (cluster["dir"] / "state" / "current" / "actions.sh").read_text()
    assert "scontrol create reservation" in script and "not applied" in done.stdout
    assert "nothing has been applied" in script


def _metric(c: dict[str, Any], name: str) -> float:
    text = (c["dir"] / "state" / "metrics.prom").read_text()
    family = next(f for f in text_string_to_metric_families(text) if f.name == name)
    return float(family.samples[0].value)


def _names_held(c: dict[str, Any]) -> set[str]:
    return set(_world_now(c)["reservations"])


def test_an_action_the_scheduler_refuses_stops_the_rest_and_the_next_cycle_repairs(
    cluster: dict[str, Any],
) -> None:
    """Slurm refuses one create: the cycle stops there, exits 1, the ledger lists every command
    that ran, last_success does not move; the next cycle sends only what is missing."""
    dry = _run(cluster)
    assert dry.returncode == 0, dry.stderr
    succeeded = json.loads((cluster["dir"] / "state" / "status.json").read_text())["last_success"]
    assert succeeded  # the dry cycle succeeded
    actions = json.loads((cluster["dir"] / "state" / "current" / "actions.json").read_text())
    creates = [a for a in actions["actions"] if "create" in a["argv"]]
    refused = next(p for p in creates[1]["argv"] if p.startswith("ReservationName=")).split("=")[1]
    world = _world_now(cluster)
    world["refuse"] = [refused]
    cluster["world"].write_text(json.dumps(world))
    failed = _run(cluster, "--apply")
    assert failed.returncode == 1 and "Requested nodes are busy" in failed.stderr
    applied = json.loads((cluster["dir"] / "state" / "applied.json").read_text())
    ran = _commands(cluster)
    assert f"reservation/{refused}" not in applied
    assert len(applied) == len(ran) - 1  # every command the fake took, not the refused one
    status = json.loads((cluster["dir"] / "state" / "status.json").read_text())
    assert status["ok"] is False and status["plan_in_force"] == status["cycle"]
    assert status["last_success"] == succeeded  # the dry cycle's (both may fall in one second)
    assert _metric(cluster, "horizon_opt_commands_failed") == 1
    assert _metric(cluster, "horizon_opt_cycle_success") == 0
    world = _world_now(cluster)
    world["refuse"] = []
    cluster["world"].write_text(json.dumps(world))
    held = _names_held(cluster)
    retry = _run(cluster, "--apply")
    assert retry.returncode == 0, retry.stderr
    again = [a[3] for a in _commands(cluster)[len(ran) :] if a[1:3] == ["create", "reservation"]]
    assert f"ReservationName={refused}" in again
    assert not {f"ReservationName={n}" for n in held} & set(again)
    assert _metric(cluster, "horizon_opt_commands_failed") == 0


def test_a_kill_mid_apply_and_a_hand_deleted_reservation_are_repaired_next_cycle(
    cluster: dict[str, Any],
) -> None:
    """Slurm holds what ran before a kill (the ledger lost it) and someone deletes one by hand:
    the next cycle reads the reservations back, creates only the missing one, never one twice."""
    first = _run(cluster, "--apply")
    assert first.returncode == 0, first.stderr
    held = _names_held(cluster)
    (cluster["dir"] / "state" / "applied.json").write_text("{}\n")  # the kill: ledger empty
    world = _world_now(cluster)
    gone = sorted(held)[-1]
    del world["reservations"][gone]
    cluster["world"].write_text(json.dumps(world))
    sent = len(_commands(cluster))
    again = _run(cluster, "--apply")
    assert again.returncode == 0, again.stderr + again.stdout
    new = [a for a in _commands(cluster)[sent:] if "reservation" in " ".join(a)]
    assert [a[3] for a in new if a[1:3] == ["create", "reservation"]] == [f"ReservationName={gone}"]
    assert _names_held(cluster) == held
    assert not _world_now(cluster).get("ended")
    assert _metric(cluster, "horizon_opt_drift_reservations") == len(held) - 1


def test_a_failing_history_read_warns_and_the_cycle_goes_on(cluster: dict[str, Any]) -> None:
    config = cluster["dir"] / "run.yaml"
    config.write_text(config.read_text() + 'history: {command: ["false"]}\n')
    done = _run(cluster, "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "history was not read" in done.stdout + done.stderr
    assert _metric(cluster, "horizon_opt_cycle_success") == 1


def test_a_down_node_gets_no_reservation_and_is_noted(cluster: dict[str, Any]) -> None:
    world = _world_now(cluster)
    world["nodes"][HOSTS[2]]["state"] = "DOWN*"
    cluster["world"].write_text(json.dumps(world))
    done = _run(cluster, "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"node {HOSTS[2]} is DOWN" in done.stderr
    held = _world_now(cluster)["reservations"].values()
    assert held and not [r for r in held if HOSTS[2] in r["Nodes"]]


def test_a_start_hint_read_back_is_not_a_release_so_a_later_plan_can_start_it_earlier(
    cluster: dict[str, Any],
) -> None:
    """Slurm reports a StartTime= hint as the job's eligible_time; the next cycle must not read
    it as the job's release (the hint could then only move later)."""
    first = _run(cluster, "--apply")
    assert first.returncode == 0, first.stderr
    world = _world_now(cluster)
    hinted = {str(j["id"]): j["begin"] for j in world["jobs"] if j.get("begin")}
    later = {i: b for i, b in hinted.items() if b > world["clock"]}
    assert later  # some pending job waits for a later start
    again = _run(cluster, "--apply")
    assert again.returncode == 0, again.stderr
    document = yaml.safe_load((cluster["dir"] / "state" / "current" / "instance.yaml").read_text())
    releases = {j["id"]: j.get("release") for j in document["jobs"]}
    for job, begin in later.items():
        hint = datetime.fromtimestamp(begin, UTC).isoformat().replace("+00:00", "Z")
        assert releases[job] != hint, (job, releases[job])


def test_a_reservation_a_job_entered_since_the_queue_was_read_is_not_ended(
    cluster: dict[str, Any],
) -> None:
    """The queue said the started reservation was empty (the plan drops it: it would end
    now); when the command is about to run a replica runs in it: the command is held back."""
    assert _run(cluster, "--apply").returncode == 0
    _tick(cluster, 60)
    world = _world_now(cluster)
    begun = [
        n for n, r in world["reservations"].items() if fake._epoch(r["StartTime"]) < world["clock"]
    ]
    assert begun
    running = next(j for j in world["jobs"] if j["state"] == "RUNNING")
    running["resv"] = begun[0]  # squeue --json does not say it: it started after the read
    cluster["world"].write_text(json.dumps(world))
    write_demand_csv(cluster["dir"] / "chat.csv", T0, [0])
    done = _run(cluster, "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"release reservation/{begun[0]} not run: jobs run in it" in done.stderr
    assert begun[0] not in _world_now(cluster).get("ended", [])
    applied = json.loads((cluster["dir"] / "state" / "applied.json").read_text())
    assert f"reservation/{begun[0]}" in applied


def _sacct(runs: list[tuple[int, str, int, int]]) -> dict[str, Any]:
    """sacct --json of completed runs: (id, name, limit minutes, elapsed minutes), alice's."""
    start = _epoch(T0 - timedelta(days=2))
    jobs = [
        {
            "job_id": i,
            "name": name,
            "user": "alice",
            "account": "ml",
            "partition": "gpu-h100",
            "array": {"job_id": 0, "task_id": {"set": False, "infinite": False, "number": 0}},
            "state": {"current": ["COMPLETED"], "reason": "None"},
            "time": {
                "elapsed": 60 * elapsed,
                "limit": {"set": True, "infinite": False, "number": limit},
                "start": start,
                "end": start + 60 * elapsed,
                "submission": start,
            },
        }
        for i, name, limit, elapsed in runs
    ]
    meta = {"plugin": {"data_parser": "data_parser/v0.0.41"}, "slurm": {"release": "24.05.3"}}
    return {"jobs": jobs, "meta": meta, "errors": [], "warnings": []}


def test_with_history_no_reservation_takes_gpus_before_the_running_jobs_limits(
    cluster: dict[str, Any],
) -> None:
    """sacct says alice's job-101 runs take half their limit: 101 (started an hour ago, limit
    4 h) is predicted to end in an hour, but holds its 8 GPUs until its limit, 3 h from now;
    every reservation leaves them to it."""
    runs = [(900 + k, "job-101", 240, 120) for k in range(3)]
    (cluster["dir"] / "sacct.json").write_text(json.dumps(_sacct(runs)))
    config = cluster["dir"] / "run.yaml"
    config.write_text(config.read_text() + "history: {file: sacct.json}\n")
    done = _run(cluster, "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    _check_holds(cluster)
