"""A fake Slurm for end-to-end tests of `horizon-opt run`: `squeue --json` answers from a small
world kept in a JSON file (FAKE_SLURM_STATE), `scontrol` records every command it receives and
applies the ones horizon-opt sends (job start hints, reservations), refusing what slurmctld
refuses (a hint for a job that is no longer pending, a reservation name that exists or does
not). `tick MINUTES` advances the clock: jobs end, then pending jobs start in priority order
where their hint, their requested nodes and the reservations let them.

Run as `python -m tests.fake.slurm squeue --json` (the test writes `squeue` and `scontrol`
wrappers onto PATH).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _load() -> tuple[Path, dict[str, Any]]:
    path = Path(os.environ["FAKE_SLURM_STATE"])
    return path, json.loads(path.read_text())


def _save(path: Path, state: dict[str, Any]) -> None:
    path.write_text(json.dumps(state, indent=1))


def _num(value: int | None) -> dict[str, Any]:
    return {"set": value is not None, "infinite": False, "number": value or 0}


def hostlist(hosts: list[str]) -> str:
    return ",".join(hosts)


def _record(job: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    running = job["state"] == "RUNNING"
    alloc: dict[str, list[int]] = job.get("alloc", {})
    per_node = job["gpus"] // job["nodes"]
    gres = [f"gpu:h100:{len(g)}(IDX:{','.join(map(str, g))})" for g in alloc.values()]
    return {
        "job_id": job["id"],
        "name": job["name"],
        "user_name": job["user"],
        "account": "ml",
        "partition": job["partition"],
        "job_state": [job["state"]],
        "state_reason": "None" if running else "Priority",
        "priority": _num(job["priority"]),
        "submit_time": _num(job["submit"]),
        "eligible_time": _num(job.get("begin") or job["submit"]),  # StartTime= sets it
        "start_time": _num(job.get("start") if running else job.get("begin")),
        "time_limit": _num(job["limit_minutes"]),
        "node_count": _num(job["nodes"]),
        "nodes": hostlist(list(alloc)) if running else "",
        "gres_detail": gres,
        "tres_per_node": f"gres/gpu:{per_node}",
        "tres_req_str": f"node={job['nodes']},gres/gpu={job['gpus']}",
        "tres_alloc_str": f"node={job['nodes']},gres/gpu={job['gpus']}" if running else "",
        "array_job_id": _num(0),
        "array_task_id": {"set": False, "infinite": False, "number": 0},
        "array_task_string": "",
        "dependency": "",
        "hold": False,
    }


def squeue(state: dict[str, Any]) -> str:
    jobs = [j for j in state["jobs"] if j["state"] in ("PENDING", "RUNNING")]
    return json.dumps(
        {
            "jobs": [_record(j, state) for j in jobs],
            "last_update": _num(state["clock"]),
            "meta": {
                "plugin": {"data_parser": "data_parser/v0.0.41"},
                "slurm": {"release": "24.05.3"},
            },
            "errors": [],
            "warnings": [],
        }
    )


def _epoch(text: str, zone_offset: int = 0) -> int:
    if text == "now":
        raise ValueError("now")
    when = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return int(when.timestamp()) - zone_offset


def _pairs(args: list[str]) -> dict[str, str]:
    out = {}
    for a in args:
        key, sep, value = a.partition("=")
        if not sep:
            raise SystemExit(f"scontrol: error: invalid argument {a!r}")
        out[key] = value
    return out


def show(state: dict[str, Any], args: list[str]) -> str:
    """`scontrol version`, `show reservation -o`, `show nodes -o`, as Slurm 24.05 writes them."""
    if args == ["version"]:
        return "slurm 24.05.3\n"
    if args[:2] == ["show", "nodes"]:
        return "".join(
            f"NodeName={h} Arch=x86_64 OS=Linux 6.1 #1 SMP State={n.get('state', 'IDLE')} "
            f"Partitions={n['partition']} Reason={n.get('reason', '(null)')}\n"
            for h, n in state["nodes"].items()
        )
    lines = []
    for name, r in sorted(state["reservations"].items()):
        start = _epoch(r["StartTime"])
        end = start + 60 * int(r["Duration"])
        nodes = r["Nodes"].split(",")
        per = r.get("TRESPerNode", "")
        tres = f"cpu={32 * len(nodes)}" + (
            f",gres/gpu={int(per.split('=')[1]) * len(nodes)}" if per else ""
        )
        lines.append(
            f"ReservationName={name} StartTime={_iso(start)} EndTime={_iso(end)} "
            f"Duration={r['Duration']} Nodes={r['Nodes']} NodeCnt={len(nodes)} "
            f"Flags={r.get('Flags', '')} TRES={tres} Users={r.get('Users', '')} State=ACTIVE"
        )
    return "\n".join(lines) + "\n" if lines else "No reservations in the system\n"


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def scontrol(state: dict[str, Any], args: list[str]) -> None:
    state["log"].append(["scontrol", *args])
    verb = args[0]
    if verb in ("create", "update", "delete") and len(args) > 1 and args[1] == "reservation":
        _reservation(state, verb, _pairs(args[2:]))
        return
    if verb in ("update", "delete") and args[1].startswith("ReservationName="):
        _reservation(state, verb, _pairs(args[1:]))
        return
    if verb == "update" and args[1].lower().startswith("jobid="):
        _job_update(state, _pairs(args[1:]))
        return
    raise SystemExit(f"scontrol: error: unexpected command {args!r}")


def _job_update(state: dict[str, Any], pairs: dict[str, str]) -> None:
    key = next(k for k in pairs if k.lower() == "jobid")
    job = next((j for j in state["jobs"] if str(j["id"]) == pairs[key]), None)
    if job is None:
        raise SystemExit(f"slurm_update error: Invalid job id specified {pairs[key]}")
    if job["state"] != "PENDING":
        raise SystemExit("slurm_update error: Job is no longer pending execution")
    for k, v in pairs.items():
        if k == "StartTime":
            job["begin"] = None if v == "now" else _epoch(v)
        elif k == "ReqNodeList":
            job["req_nodes"] = [h for h in v.split(",") if h]
        elif k != key:
            state.setdefault("job_fields", []).append(k)


def _reservation(state: dict[str, Any], verb: str, pairs: dict[str, str]) -> None:
    name = pairs.get("ReservationName")
    if not name:
        raise SystemExit("scontrol: error: ReservationName must be given")
    have = state["reservations"]
    if name in state.get("refuse", []):
        raise SystemExit(f"Error creating the reservation: Requested nodes are busy ({name})")
    if verb == "create" and name in have:
        raise SystemExit(f"Error creating the reservation: Duplicate reservation name {name}")
    if verb in ("update", "delete") and name not in have:
        raise SystemExit(f"Error: reservation {name} not found")
    if verb == "delete":
        del have[name]
        return
    if pairs.get("StartTime") == "now":
        pairs["StartTime"] = _iso(state["clock"])
    if "EndTime" in pairs:  # end a running reservation now, or move its end
        end = pairs.pop("EndTime")
        start = _epoch(pairs.get("StartTime") or have[name]["StartTime"])
        stop = state["clock"] if end == "now" else _epoch(end)
        pairs["Duration"] = str(max((stop - start) // 60, 0))
        state.setdefault("ended", []).extend([name] if end == "now" else [])
    have[name] = {**have.get(name, {}), **pairs}


def reserved(state: dict[str, Any], at: int) -> dict[str, int]:
    """GPUs per host that reservations hold at `at` (TRESPerNode=gres/gpu=N, else the node)."""
    out: dict[str, int] = {}
    for r in state["reservations"].values():
        start = _epoch(r["StartTime"])
        if not start <= at < start + 60 * int(r["Duration"]):
            continue
        per = r.get("TRESPerNode", "")
        for host in r["Nodes"].split(","):
            gpus = int(per.split("=")[1]) if per else state["nodes"][host]["gpus"]
            out[host] = out.get(host, 0) + gpus
    return out


def tick(state: dict[str, Any], minutes: int) -> None:
    """Advance the clock: jobs that reach their run time end, then pending jobs start in
    priority order where their hint, requested nodes and the reservations let them."""
    state["clock"] += 60 * minutes
    now = state["clock"]
    for job in state["jobs"]:
        if job["state"] == "RUNNING" and job["start"] + 60 * job["run_minutes"] <= now:
            job["state"] = "COMPLETED"
    taken: dict[str, set[int]] = {}
    for job in state["jobs"]:
        if job["state"] == "RUNNING":
            for host, idx in job["alloc"].items():
                taken.setdefault(host, set()).update(idx)
    held = reserved(state, now)
    pending = [j for j in state["jobs"] if j["state"] == "PENDING" and j["submit"] <= now]
    for job in sorted(pending, key=lambda j: -j["priority"]):
        if job.get("begin") and job["begin"] > now:
            continue
        per = job["gpus"] // job["nodes"]
        hosts = job.get("req_nodes") or [
            h for h, n in state["nodes"].items() if n["partition"] == job["partition"]
        ]
        fit = [
            h
            for h in hosts
            if state["nodes"][h]["gpus"] - len(taken.get(h, ())) - held.get(h, 0) >= per
        ][: job["nodes"]]
        if len(fit) < job["nodes"]:
            continue
        job.update(state="RUNNING", start=now, alloc={})
        for h in fit:
            free = [g for g in range(state["nodes"][h]["gpus"]) if g not in taken.get(h, set())]
            job["alloc"][h] = free[:per]
            taken.setdefault(h, set()).update(free[:per])


def main(argv: list[str]) -> int:
    path, state = _load()
    command, args = argv[0], argv[1:]
    if command == "squeue" and "--json" not in args:  # the jobs running in a reservation
        name = next(a.split("=", 1)[1] for a in args if a.startswith("--reservation="))
        running = [j for j in state["jobs"] if j["state"] == "RUNNING" and j.get("resv") == name]
        sys.stdout.write("".join(f"{j['id']}\n" for j in running))
        return 0
    if command == "squeue":
        sys.stdout.write(squeue(state))
        return 0
    if command == "tick":
        tick(state, int(args[0]))
        _save(path, state)
        return 0
    if command == "scontrol" and args and args[0] in ("version", "show"):
        sys.stdout.write(show(state, args))
        return 0
    if command == "scontrol":
        try:
            scontrol(state, args)
        finally:
            _save(path, state)
        return 0
    raise SystemExit(f"fake slurm: unknown command {command}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
