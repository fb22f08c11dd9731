"""What Slurm holds, read back each cycle, so the commands follow what Slurm has rather than what
an earlier cycle believed it sent.

- `scontrol show reservation -o`: the tool's own reservations (names `<prefix>-...`) as targets
  in the desired-state form (`held_reservations`); one line per reservation, `Key=Value` fields.
- `scontrol show nodes -o`: each node's state (`node_states`, `unusable_nodes`): DOWN, DRAIN,
  FAIL, MAINT, FUTURE, POWERED_DOWN and NOT_RESPONDING (`*`) nodes take no new work.
- `scontrol version` (`slurm 23.11.4`, `slurm-wlm 22.05.8`): `parse_version`; GPU reservations
  (`TRESPerNode=gres/gpu=N`) need 23.11 (`GPU_RESERVATIONS`).
- `squeue --json`: the running jobs in each reservation (`resv_name`; `occupied`) and the GPUs
  each running job holds on each host until its time limit (`held_gpus`): estimates from the
  history shape predictions, never reservations on GPUs a job still holds.

These are plain text formats meant for people; only the fields named here are read, and a value
may hold spaces (`OS=Linux 6.1 #1 SMP`, `Reason=disk failed`), so fields are split before each
`Key=` rather than at every space.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from horizon_opt.actions.core import Desired
from horizon_opt.errors import InputError
from horizon_opt.schedulers.slurm import expand_hostlist, parse_gres_detail
from horizon_opt.times import iso

__all__ = [
    "GPU_RESERVATIONS",
    "UNUSABLE_STATES",
    "SlurmState",
    "drift",
    "held_gpus",
    "held_reservations",
    "job_id",
    "node_states",
    "occupied",
    "parse_fields",
    "parse_version",
    "unusable_nodes",
]

GPU_RESERVATIONS = (23, 11)
"""The first Slurm release whose reservations take GPUs (`TRESPerNode=gres/gpu=N`)."""

UNUSABLE_STATES = frozenset(
    [
        "DOWN",
        "DRAIN",
        "DRAINED",
        "DRAINING",
        "FAIL",
        "FAILING",
        "MAINT",
        "FUTURE",
        "POWERED_DOWN",
        "POWER_DOWN",
        "POWERING_DOWN",
        "REBOOT_ISSUED",
        "NOT_RESPONDING",
    ]
)

_KEY = re.compile(r"(?:^|\s)(?=[A-Za-z][A-Za-z0-9_:]*=)")
_VERSION = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class SlurmState:
    """What one cycle read from Slurm, for `slurm_actions`. Every field is optional: None
    means not read, and the commands then assume the safe case."""

    clock: datetime | None = None  # Slurm's time at the snapshot (None: the now slot's time)
    reservations: Desired | None = None  # the tool's reservations as Slurm holds them
    occupied: Mapping[str, tuple[str, ...]] | None = None  # reservation -> running job ids
    # host -> (GPUs, until): what running jobs that are not the service's hold, to their limits
    held: Mapping[str, tuple[tuple[int, datetime], ...]] = field(default_factory=dict)
    version: tuple[int, int] | None = None

    def is_occupied(self, name: str) -> bool:
        """Jobs may run in reservation `name` (True when it was not read)."""
        return self.occupied is None or bool(self.occupied.get(name))


def parse_fields(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` line as {key: value}; `(null)` is an empty value."""
    out = {}
    for part in _KEY.split(line.strip()):
        key, sep, value = part.strip().partition("=")
        if sep:
            out[key] = "" if value == "(null)" else value
    return out


def parse_version(text: str) -> tuple[int, int]:
    """(major, minor) of `scontrol version`'s answer; InputError when it names none."""
    found = _VERSION.search(text)
    if found is None:
        raise InputError([f"scontrol version: no version in {text.strip()[:80]!r}"])
    return int(found.group(1)), int(found.group(2))


def _local(text: str, zone: ZoneInfo) -> datetime | None:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=zone)).astimezone(UTC)


def held_reservations(
    text: str, prefix: str, services: Mapping[str, str], zone: ZoneInfo
) -> Desired:
    """The tool's reservations in `scontrol show reservation -o` output, as desired-state
    targets (`reservation/<name>`: service, start, end, nodes, gpus_per_node). `services` maps
    each service's name part in reservation names to the service; times are read in `zone`
    (scontrol runs with TZ set to it). Reservations of others are left out."""
    out: Desired = {}
    for line in text.splitlines():
        f = parse_fields(line)
        name = f.get("ReservationName", "")
        if not re.match(rf"{re.escape(prefix)}-.+-[0-9]{{8}}T[0-9]{{4}}(-|$)", name):
            continue  # not one of this tool's names: <prefix>-<service>-<YYYYMMDDTHHMM>...
        start, end = _local(f.get("StartTime", ""), zone), _local(f.get("EndTime", ""), zone)
        if start is None or end is None:
            raise InputError([f"scontrol show reservation: {name}: unreadable StartTime/EndTime"])
        try:
            hosts = expand_hostlist(f.get("Nodes", ""))
        except ValueError as exc:
            raise InputError([f"scontrol show reservation: {name}: Nodes: {exc}"]) from None
        rest = name[len(prefix) + 1 :]
        service = next(
            (s for part, s in sorted(services.items()) if rest.startswith(f"{part}-")), ""
        )
        out[f"reservation/{name}"] = {
            "service": service,
            "start": iso(start),
            "end": iso(end),
            "nodes": ",".join(hosts),
            "gpus_per_node": _per_node(f, len(hosts)),
        }
    return out


def _per_node(fields: Mapping[str, str], hosts: int) -> str:
    """GPUs per node of a GPU reservation (`TRESPerNode=gres/gpu=8` where shown, else
    `TRES=cpu=8,gres/gpu=16` over its nodes), else ''."""
    for item in fields.get("TRESPerNode", "").split(","):
        key, _, value = item.partition("=")
        if key.startswith("gres/gpu") and value.isdigit():
            return value
    for item in fields.get("TRES", "").split(","):
        key, _, value = item.partition("=")
        if key.startswith("gres/gpu") and value.isdigit() and hosts:
            return str(int(value) // hosts)
    return ""


def drift(ledger: Desired, held: Desired) -> int:
    """Reservations where what Slurm holds is not what the ledger says this tool left: missing,
    unknown to the ledger, or with other nodes, size or end (a start may differ: one whose
    planned start had passed was created to start at once)."""
    mine = {t for t in ledger if t.startswith("reservation/")}
    out = len(mine ^ set(held))
    for target in mine & set(held):
        a, b = ledger[target], held[target]
        if (set(a.get("nodes", "").split(",")), a.get("gpus_per_node"), a.get("end")) != (
            set(b.get("nodes", "").split(",")),
            b.get("gpus_per_node"),
            b.get("end"),
        ):
            out += 1
    return out


def node_states(text: str) -> dict[str, set[str]]:
    """Each node's state words in `scontrol show nodes -o` output: `IDLE+DRAIN` -> IDLE, DRAIN;
    `DOWN*` -> DOWN, NOT_RESPONDING."""
    out = {}
    for line in text.splitlines():
        f = parse_fields(line)
        if "NodeName" not in f:
            continue
        raw = f.get("State", "").upper()
        words = {w.rstrip("*~#!%$@^-") for w in raw.split("+") if w}
        if any(w.endswith("*") for w in raw.split("+")):
            words.add("NOT_RESPONDING")
        out[f["NodeName"]] = words
    return out


def unusable_nodes(states: Mapping[str, set[str]]) -> dict[str, str]:
    """The nodes that take no new work, with the state that says so."""
    return {
        node: "+".join(sorted(words & UNUSABLE_STATES))
        for node, words in sorted(states.items())
        if words & UNUSABLE_STATES
    }


def _jobs(payload: Any) -> Iterable[Mapping[str, Any]]:
    jobs = payload.get("jobs") if isinstance(payload, Mapping) else None
    return [j for j in jobs if isinstance(j, Mapping)] if isinstance(jobs, list) else []


def _number(value: Any) -> int | None:
    """A number of any data_parser version (plain, or {"set", "infinite", "number"})."""
    if isinstance(value, Mapping):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value < 4294967294 else None


def job_id(job: Mapping[str, Any]) -> str:
    """A job's id as text, whichever data_parser version wrote it."""
    number = _number(job.get("job_id"))
    return "?" if number is None else str(number)


def _running(job: Mapping[str, Any]) -> bool:
    state = job.get("job_state")
    states = state if isinstance(state, list) else [state]
    return "RUNNING" in states


def occupied(payload: Any) -> dict[str, tuple[str, ...]]:
    """Reservation name -> the ids of the running jobs in it, from `squeue --json`."""
    out: dict[str, list[str]] = {}
    for job in _jobs(payload):
        name = job.get("resv_name") or job.get("reservation")
        if _running(job) and isinstance(name, str) and name:
            out.setdefault(name, []).append(job_id(job))
    return {k: tuple(v) for k, v in sorted(out.items())}


def held_gpus(payload: Any, forever: datetime) -> dict[str, tuple[tuple[int, datetime], ...]]:
    """Host -> (GPUs, until) of each running job in `squeue --json`: until its start plus its
    time limit (`forever` when it has none), as `gres_detail` counts its GPUs per host."""
    out: dict[str, list[tuple[int, datetime]]] = {}
    for job in _jobs(payload):
        if not _running(job):
            continue
        start, limit = _number(job.get("start_time")), _number(job.get("time_limit"))
        until = forever
        if start is not None and limit is not None:
            until = min(forever, datetime.fromtimestamp(start, UTC) + timedelta(minutes=limit))
        nodes, detail = job.get("nodes"), job.get("gres_detail")
        if not isinstance(nodes, str) or not isinstance(detail, list):
            continue
        try:
            hosts = expand_hostlist(nodes)
            per = [parse_gres_detail(d).count for d in detail if isinstance(d, str)]
        except ValueError:
            continue
        for host, count in zip(hosts, per, strict=False):
            if count:
                out.setdefault(host, []).append((count, until))
    return {h: tuple(v) for h, v in out.items()}
