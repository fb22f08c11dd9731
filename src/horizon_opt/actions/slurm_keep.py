"""What the Slurm commands keep of what already runs: the reservations that have started, and
the GPUs running jobs hold until their time limits.

A started reservation is never ended or deleted while jobs run in it: Slurm ends the jobs in a
reservation when it ends (slurm.conf `ResvOverRun`, default 0), so `EndTime=now` would kill the
inference replicas it holds, and Slurm refuses to delete one in use. A change is made in place
(`Nodes=` for whole-node reservations, `EndTime=` only later) or, where Slurm cannot change it
in place (the nodes of a GPU reservation), deferred: it goes on unchanged to its end and the
plan's new periods start beside it. A started reservation with no job in it ends now.

Running jobs hold their GPUs until their limits: an estimate from the history may say a job
ends earlier, and the plan may give its GPUs to inference after the estimate, but a reservation
there starts only once the limit has passed (`clip_runs`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from horizon_opt.actions.core import Desired
from horizon_opt.actions.layout import Run
from horizon_opt.actions.slurm_state import SlurmState
from horizon_opt.model.instance import Instance
from horizon_opt.times import iso, parse_time

__all__ = ["Started", "clip_runs", "going_on", "started"]


@dataclass(frozen=True)
class Started:
    """A reservation of the applied (or read back) state that runs at the clock."""

    name: str
    props: Mapping[str, str]
    hosts: tuple[str, ...]
    gpus: int  # per host; 0 for whole nodes
    end: datetime


def started(before: Desired, clock: datetime) -> dict[str, list[Started]]:
    """The reservations of `before` running at `clock` (a start exactly at it counts), by
    service."""
    out: dict[str, list[Started]] = {}
    for target, props in sorted(before.items()):
        if not target.startswith("reservation/"):
            continue
        start, end = parse_time(props.get("start", "")), parse_time(props.get("end", ""))
        size = props.get("gpus_per_node", "") or "0"
        if start is None or end is None or not start <= clock < end or not size.isdigit():
            continue
        hosts = tuple(h for h in props.get("nodes", "").split(",") if h)
        entry = Started(target.removeprefix("reservation/"), props, hosts, int(size), end)
        out.setdefault(props.get("service", ""), []).append(entry)
    return out


@dataclass
class Kept:
    """What `going_on` keeps: targets with their properties, notes, and the runs left to new
    periods."""

    targets: Desired
    notes: list[str]
    rest: list[Run]


def _slot_at(instance: Instance, when: datetime) -> int:
    assert instance.start is not None
    return math.ceil((when - instance.start).total_seconds() / 60 / instance.slot_minutes - 1e-9)


def going_on(
    instance: Instance,
    runs: list[Run],
    active: list[Started],
    whole: bool,
    state: SlurmState,
) -> Kept:
    """The started reservations of one service that go on, as targets; the runs left for new
    periods. One goes on under its name while the plan keeps its hosts and size from now (whole
    nodes: while the plan holds any host from now, its nodes updated); otherwise it ends now
    when empty, and when jobs run in it, it is updated only as Slurm can without ending them,
    or kept as it is to its end."""
    now = instance.now
    by_host = {r.host: r for r in runs if r.start == now}
    out = Kept({}, [], [r for r in runs if r.start != now])

    def kept_whole(a: Started) -> bool:
        return bool(a.hosts) and all(h in by_host and by_host[h].gpus == a.gpus for h in a.hosts)

    # those the plan keeps as they are first: a changed one takes only the hosts left
    for a in sorted(active, key=lambda a: (not kept_whole(a), a.name)):
        busy = state.is_occupied(a.name)
        match = [h for h in a.hosts if h in by_host and by_host[h].gpus == a.gpus]
        if match and len(match) == len(a.hosts):
            hosts = list(a.hosts)
        elif whole and by_host:
            hosts = match + [h for h in by_host if h not in match]
        elif busy:
            _defer(instance, a, by_host, out, state)
            continue
        else:
            continue  # it ends now (nothing runs in it) and the plan's periods start afresh
        end = min(by_host[h].end for h in hosts)
        end_time = instance.slot_time(end)
        assert end_time is not None
        if busy and end_time < a.end:  # never shorter while jobs run in it
            end_time, end = a.end, max(end, _slot_at(instance, a.end))
        for h in hosts:
            run = by_host.pop(h)
            if run.end > end:
                out.rest.append(Run(h, end, run.end, run.gpus))
        out.targets[f"reservation/{a.name}"] = {
            "service": a.props.get("service", ""),
            "start": a.props["start"],
            "end": iso(end_time),
            "nodes": ",".join(hosts),
            "gpus_per_node": str(a.gpus) if a.gpus else "",
        }
    out.rest += by_host.values()
    return out


def _defer(
    instance: Instance, a: Started, by_host: dict[str, Run], out: Kept, state: SlurmState
) -> None:
    """Keep `a` as it is to its end; the plan's runs on its hosts from now hold only what it
    does not."""
    out.targets[f"reservation/{a.name}"] = dict(a.props)
    ids = (state.occupied or {}).get(a.name, ())
    jobs = f" ({', '.join(ids)})" if ids else ""
    out.notes.append(
        f"{a.props.get('service', '?')}: reservation {a.name} goes on unchanged to "
        f"{iso(a.end)}: jobs run in it{jobs}, and Slurm cannot change its nodes without ending "
        "them"
    )
    until = _slot_at(instance, a.end)
    for h in a.hosts:
        run = by_host.pop(h, None)
        if run is None:
            continue
        if run.gpus > a.gpus and until > run.start:
            out.rest.append(Run(h, run.start, min(until, run.end), run.gpus - a.gpus))
        if run.end > until:
            out.rest.append(Run(h, max(until, run.start), run.end, run.gpus))


def clip_runs(
    instance: Instance,
    runs: Mapping[str, list[Run]],
    held: Mapping[str, tuple[tuple[int, datetime], ...]],
    whole: bool,
) -> tuple[dict[str, list[Run]], list[str]]:
    """The runs with each start moved past the limits of the running jobs whose GPUs it would
    need (`held`: host -> (GPUs, until)); runs that cannot start before their end are dropped.
    Returns the runs and a note for each one moved."""
    if not held:
        return dict(runs), []
    free = _free(instance, runs, held, whole)
    notes = []
    out: dict[str, list[Run]] = {}
    for service, mine in runs.items():
        kept = []
        for run in mine:
            start = run.start
            room = free.get(run.host)
            while room is not None and start < run.end and room[start] < 0:
                start += 1
            if start != run.start:
                when, planned = instance.slot_time(start), instance.slot_time(run.start)
                assert when is not None and planned is not None  # slurm_actions checked
                shown = "no time in the horizon" if start >= run.end else iso(when)
                notes.append(
                    f"{service}: {_size(run, whole)} on {run.host} reserved from {shown} instead "
                    f"of {iso(planned)}: running jobs hold them until their time limits"
                )
            if start < run.end:
                kept.append(Run(run.host, start, run.end, run.gpus))
        out[service] = kept
    return out, notes


def _size(run: Run, whole: bool) -> str:
    return "the node" if whole else f"{run.gpus} GPUs"


def _free(
    instance: Instance,
    runs: Mapping[str, list[Run]],
    held: Mapping[str, tuple[tuple[int, datetime], ...]],
    whole: bool,
) -> dict[str, list[int]]:
    """Per host that running jobs hold GPUs on, per slot: its GPUs less what the running jobs
    hold to their limits and what the runs reserve (negative: a run there cannot start then).
    Whole nodes: -1 while any running job holds a GPU there."""
    cap = {n: int(g) for n, g in zip(instance.node_names, instance.node_gpus, strict=True)}
    times = [instance.slot_time(t) for t in range(instance.slots)]
    out: dict[str, list[int]] = {}
    for host, jobs in held.items():
        busy = [sum(g for g, until in jobs if at is None or until > at) for at in times]
        out[host] = (
            [-1 if b else 0 for b in busy] if whole else [cap.get(host, 0) - b for b in busy]
        )
    if not whole:
        for mine in runs.values():
            for r in mine:
                room = out.get(r.host)
                if room is None:
                    continue  # no running job there: the plan's own layout fits
                for t in range(r.start, min(r.end, instance.slots)):
                    room[t] -= r.gpus
    return out
