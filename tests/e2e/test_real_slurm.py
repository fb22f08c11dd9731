"""`horizon-opt run --apply` against a real Slurm (Debian's slurm-wlm: slurmctld and four slurmd
on this host, tests/fake/real_slurm.py) while real jobs run: Slurm takes every command, no
command ends a job, a reservation with a replica in it is never ended, and what a killed apply
or a hand-deleted reservation left is repaired by the next cycle.

The cluster: gpu1..gpu4, 4 GPUs each, partition `gpu`; the service chat, a whole host's 4 GPUs
per replica, whose replicas run as the service user (MAGNETIC reservations take that user's jobs
only). Slurm 22.05 reserves whole nodes (it has no GPU reservations), so a reservation is a host.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fake import HORIZON_OPT, write_demand_csv
from fake.real_slurm import NODES, SERVICE_USER

from horizon_opt.actions.slurm_state import parse_fields


def _reset(slurm: Any) -> None:
    """No job and no reservation left from an earlier test."""
    slurm.run(["scancel", "--full", "--user=root"])
    slurm.run(["scancel", "--full", f"--user={SERVICE_USER}"])
    for name in _reservations(slurm):
        slurm.scontrol("delete", f"ReservationName={name}")
    _wait(lambda: not slurm.run(["squeue", "-h"]).stdout.strip(), "jobs to end")


def _wait(ready: Any, what: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _reservations(slurm: Any) -> dict[str, dict[str, str]]:
    shown = slurm.scontrol("show", "reservation", "-o").stdout
    rows = [parse_fields(line) for line in shown.splitlines()]
    return {r["ReservationName"]: r for r in rows if "ReservationName" in r}


def _jobs(slurm: Any) -> dict[str, tuple[str, str]]:
    """Job id -> (state, reservation)."""
    out = slurm.run(["squeue", "-h", "-o", "%i %T %v"]).stdout
    return {i: (s, r) for i, s, r in (line.split() for line in out.splitlines())}


def _setup(tmp: Path, pattern: list[float], hints: bool = False) -> Path:
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    write_demand_csv(tmp / "chat.csv", hour, pattern)
    (tmp / "cluster.yaml").write_text(
        "horizon: {slots: 12, slot_minutes: 60}\n"
        "pools:\n"
        "  - {name: gpu, gpu_type: FAKE, nodes: 4, gpus_per_node: 4,\n"
        f"     partitions: [gpu], node_names: [{', '.join(NODES)}]}}\n"
        "services:\n"
        "  - {name: chat, pool: gpu, gpus_per_replica: 4, demand: {csv: chat.csv, column: replicas}}\n"
    )
    config = tmp / "run.yaml"
    config.write_text(
        "scheduler: slurm\ncluster: cluster.yaml\nqueue: {command: [squeue, --json]}\n"
        "state: state\nevery: 1h\nsolver: greedy\ntime_limit: 2\nworkers: 1\n"
        f"slurm: {{users: [{SERVICE_USER}], service_jobs: {{users: [{SERVICE_USER}]}}, "
        f"start_hints: {'true' if hints else 'false'}}}\n"
    )
    return config


def _cycle(slurm: Any, config: Path, at_hour: bool = False) -> dict[str, Any]:
    """One cycle; `at_hour`: as cron starts it at the top of the hour, its commands run minutes
    later (22.05's squeue says no snapshot time: `--now` is it)."""
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    now = ["--now", hour.isoformat()] if at_hour else []
    done = subprocess.run(
        [str(HORIZON_OPT), "run", str(config), "--apply", *now],
        env=slurm.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads((config.parent / "state" / "status.json").read_text())
    assert status["ok"] and status["failed"] == 0, status
    return status


def _assert_reserved_every_hour(
    held: dict[str, dict[str, str]], hours: int, first: int = 0
) -> None:
    """A whole node (the one replica's 4 GPUs) is reserved in every hour from the `first` on."""
    now = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=5)
    hour = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=first)
    spans = [
        (datetime.fromisoformat(r["StartTime"]), datetime.fromisoformat(r["EndTime"]))
        for r in held.values()
    ]
    for h in range(hours):
        at = max(now, hour + timedelta(hours=h, minutes=30))
        assert any(a <= at < b for a, b in spans), (at, sorted(spans))


def _replica(slurm: Any) -> str:
    job = slurm.sbatch("-N1", "--gres=gpu:4", "-t", "20", "--wrap", "sleep 600", user=SERVICE_USER)
    _wait(lambda: _jobs(slurm).get(job, ("",))[0] == "RUNNING", "the replica to start")
    return job


def test_cycles_never_end_a_job_or_a_reservation_a_replica_runs_in(
    slurm_cluster: Any, tmp_path: Path
) -> None:
    slurm = slurm_cluster
    _reset(slurm)
    config = _setup(tmp_path, [1])  # one replica: one whole node all day
    _cycle(slurm, config, at_hour=True)
    held = _reservations(slurm)
    assert held and all(n.startswith("hopt-chat-") for n in held)
    assert all(r["Users"] == SERVICE_USER for r in held.values())
    _assert_reserved_every_hour(held, hours=10)
    replica = _replica(slurm)
    home = _jobs(slurm)[replica][1]
    assert home in held  # MAGNETIC: the replica landed in the service's reservation

    batch = [
        slurm.sbatch("-N1", "--gres=gpu:4", "-t", "120", "--wrap", "sleep 600"),
        slurm.sbatch("-N1", "--gres=gpu:2", "-t", "60", "--wrap", "sleep 600"),
    ]
    _wait(lambda: all(_jobs(slurm).get(j, ("",))[0] == "RUNNING" for j in batch), "batch jobs")
    batch.append(slurm.sbatch("-N3", "--gres=gpu:4", "-t", "60", "--wrap", "sleep 600"))
    _cycle(slurm, config)
    _assert_reserved_every_hour(_reservations(slurm), hours=9, first=1)
    assert _jobs(slurm)[replica] == ("RUNNING", home)
    imported = (config.parent / "state" / "current" / "instance.yaml").read_text()
    assert f"id: '{batch[0]}'" in imported and f"id: '{replica}'" not in imported  # served

    _setup(tmp_path, [0])  # the forecast drops to nothing: the plan reserves nothing
    _cycle(slurm, config)
    jobs = _jobs(slurm)
    assert jobs[replica] == ("RUNNING", home)  # its reservation goes on until it ends
    assert home in _reservations(slurm)
    assert all(jobs[j][0] in ("RUNNING", "PENDING") for j in batch)


def test_a_killed_apply_and_a_hand_deleted_reservation_are_repaired(
    slurm_cluster: Any, tmp_path: Path
) -> None:
    slurm = slurm_cluster
    _reset(slurm)
    config = _setup(tmp_path, [1, 1, 2, 2, 2, 2])  # a second node from two hours on
    _cycle(slurm, config, at_hour=True)
    held = _reservations(slurm)
    later = sorted(held)[-1]
    assert len(held) >= 2
    assert datetime.fromisoformat(held[later]["StartTime"]) > datetime.now() - timedelta(0)
    (config.parent / "state" / "applied.json").write_text("{}\n")  # killed before the ledger
    assert slurm.scontrol("delete", f"ReservationName={later}").returncode == 0
    _cycle(slurm, config)
    assert set(_reservations(slurm)) == set(held)
    _cycle(slurm, config)  # and then nothing changes
    assert set(_reservations(slurm)) == set(held)


def test_the_documented_configuration_works_as_pasted(slurm_cluster: Any, tmp_path: Path) -> None:
    """docs/operating.md's run configuration, with only its state folder moved here: its
    history command (sacct) fails without slurmdbd, which the cycle notes and goes on."""
    slurm = slurm_cluster
    _reset(slurm)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "operating.md").read_text()
    blocks = [textwrap.dedent(b) for b in re.findall(r"```yaml\n(.*?)```", docs, re.S)]
    text = next(b for b in blocks if b.lstrip().startswith("scheduler:"))
    config = _setup(tmp_path, [1])
    config.write_text(
        text.replace("/var/lib/horizon-opt", str(tmp_path / "state")).replace(
            "svc-inference", SERVICE_USER
        )
    )
    status = _cycle(slurm, config)
    assert status["applied"] >= 1 and _reservations(slurm)


def test_drained_and_down_nodes_get_no_reservation(slurm_cluster: Any, tmp_path: Path) -> None:
    slurm = slurm_cluster
    _reset(slurm)
    off = ["gpu1", "gpu2"]
    for node, state in zip(off, ["DRAIN", "DOWN"], strict=True):
        slurm.scontrol("update", f"NodeName={node}", f"State={state}", "Reason=hopt-test")
    try:
        config = _setup(tmp_path, [2])  # two replicas: two whole nodes, gpu3 and gpu4 only
        _cycle(slurm, config, at_hour=True)
        held = _reservations(slurm)
        assert held
        assert not [r for r in held.values() if set(off) & set(r["Nodes"].split(","))]
        _assert_reserved_every_hour(held, hours=10)
    finally:
        for node in off:
            slurm.scontrol("update", f"NodeName={node}", "State=RESUME")
        _wait(lambda: _up(slurm, off), "the nodes to come back")


def _up(slurm: Any, nodes: list[str]) -> bool:
    shown = slurm.run(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout.split("\n")
    states = dict(line.split() for line in shown if line.strip())
    return all(states.get(n) in ("idle", "resv", "mix", "alloc") for n in nodes)


def _eligible(slurm: Any, job: str) -> datetime:
    shown = parse_fields(slurm.scontrol("show", "job", "-o", job).stdout)
    return datetime.fromisoformat(shown["EligibleTime"])


def test_a_start_hint_moves_earlier_when_the_gpus_free_up(
    slurm_cluster: Any, tmp_path: Path
) -> None:
    """A 2-node job waits for a running 2-node job's limit: its hint (StartTime=, which Slurm
    reports as its eligible time) holds it until then. The running job is cancelled; the next
    cycle moves the hint earlier (to the slot after the job's submission: `--now` is the top
    of the hour, the job came later)."""
    slurm = slurm_cluster
    _reset(slurm)
    running = slurm.sbatch("-N2", "--gres=gpu:4", "-t", "120", "--wrap", "sleep 600")
    _wait(lambda: _jobs(slurm).get(running, ("",))[0] == "RUNNING", "the running job")
    config = _setup(tmp_path, [1], hints=True)
    _cycle(slurm, config, at_hour=True)  # inference takes one of the two free nodes
    waiting = slurm.sbatch("-N2", "--gres=gpu:4", "-t", "60", "--wrap", "sleep 600")
    time.sleep(2)
    assert _jobs(slurm)[waiting][0] == "PENDING"
    _cycle(slurm, config, at_hour=True)
    first = _eligible(slurm, waiting)
    assert first > datetime.now() + timedelta(minutes=1)  # held for the running job's limit
    slurm.run(["scancel", running], check=True)
    _wait(lambda: running not in _jobs(slurm), "the running job to end")
    assert _jobs(slurm)[waiting][0] == "PENDING"  # held by its hint
    _cycle(slurm, config, at_hour=True)
    assert _eligible(slurm, waiting) < first


def test_a_run_killed_between_two_commands_is_completed_by_the_next(
    slurm_cluster: Any, tmp_path: Path
) -> None:
    """The run is killed (SIGKILL) while its second reservation is being created: the ledger
    holds the first; the next cycle reads Slurm back and creates only what is missing."""
    slurm = slurm_cluster
    _reset(slurm)
    config = _setup(tmp_path, [1, 1, 2, 2, 2, 2])  # several reservations
    real = shutil.which("scontrol", path=slurm.env["PATH"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mark = tmp_path / "created"
    (bin_dir / "scontrol").write_text(
        "#!/bin/sh\n"
        f'case "$*" in *"create reservation"*)\n'
        f"  if [ -e {mark} ]; then sleep 60; fi\n"
        f'  "{real}" "$@"; rc=$?; touch {mark}; exit $rc;;\n'
        "esac\n"
        f'exec "{real}" "$@"\n'
    )
    (bin_dir / "scontrol").chmod(0o755)
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    env = {**slurm.env, "PATH": f"{bin_dir}:{slurm.env['PATH']}"}
    run = subprocess.Popen(
        [str(HORIZON_OPT), "run", str(config), "--apply", "--now", hour.isoformat()],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait(lambda: mark.exists() and len(_reservations(slurm)) == 1, "the first create")
        time.sleep(0.5)  # the second create is asleep in the wrapper
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    first = set(_reservations(slurm))
    ledger = json.loads((config.parent / "state" / "applied.json").read_text())
    assert {t.removeprefix("reservation/") for t in ledger} == first
    _cycle(slurm, config, at_hour=True)
    after = set(_reservations(slurm))
    current = json.loads((config.parent / "state" / "current" / "actions.json").read_text())
    wanted = {t.removeprefix("reservation/") for t in current["desired"]}
    assert first < after == wanted
