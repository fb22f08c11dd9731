"""The plan as Slurm commands: advance reservations that follow the inference forecast, and
start-time and node hints for the pending jobs; running jobs are never touched.

Sources: the scontrol(1) man page (sections "RESERVATIONS - SPECIFICATIONS FOR CREATE AND UPDATE
COMMANDS" and "JOBS - SPECIFICATIONS FOR UPDATE COMMAND"), the Advanced Resource Reservation Guide
(slurm.schedmd.com/reservations.html) and slurm.conf(5) `ResvOverRun`, read in the releases 23.11
and 26.05 (the same for everything used here), with the reservation code (src/slurmctld/
reservation.c, update_resv and create_resv) read where the pages are silent.

Reservations. A reservation's users run only on its resources, and no other job does. Slurm 23.11
added GPU reservations (`TRES=` / `TRESPerNode=gres/gpu=N`); `granularity="gpu"` (the default)
reserves exactly the GPUs the plan gives a service on each host. Before 23.11 only cores, whole
nodes, licenses and burst buffers can be reserved: `granularity="node"` reserves the hosts whose
GPUs the plan gives wholly or mostly (more than half) to inference, and a note says which planned
GPUs that leaves unreserved. A job must fit inside its reservation and is ended at its end
(`ResvOverRun`, default 0), so a reservation ends on a host only where the plan changes what it
holds there: each host's runs of constant GPUs (or of being reserved) form the periods, and runs
with the same start, end and size share one reservation (`TRESPerNode` is one count for all its
nodes). Only periods that start within `lookahead_minutes` are written. Names are
`<prefix>-<service>-<YYYYMMDDTHHMM>` (the start in UTC; `-<n>gpu` in GPU mode; the first host
added when two periods would share a name), so an unchanged period keeps its name and costs no
command next cycle, and the reservation running at `now` keeps its name while the plan keeps
its hosts and size.

Flags: `IGNORE_JOBS` because with `Nodes=` Slurm otherwise refuses a reservation on any node
where a running job's time limit reaches past the start, even when the plan (which already
leaves running jobs their GPUs) uses only the free GPUs; a reservation never ends or moves a
running job (the guide: running jobs are cancelled by hand if at all), and a GPU reservation is
still chosen by a will-run test that counts running jobs' GPUs. `MAGNETIC` (20.02.4 on) lets the
allowed users' jobs land in a reservation without naming it, since names change from period to
period. `NO_HOLD_JOBS_AFTER` keeps pending jobs that named a period's reservation from being
held when it ends. Inference replicas are jobs of `users` no longer than their period.

Changes: a reservation that has not started is updated (`Duration=`, and `Nodes=` for whole-node
ones; Slurm cannot change the nodes of a GPU reservation, so that is a delete and a create) or
deleted. One that has started (its start at or before the clock) is never deleted (Slurm refuses
one in use) and never ended while jobs run in it (they would end with it): actions/slurm_keep.py
changes it in place (`Nodes=`, `EndTime=` only later) or keeps it to its end; an empty one the
plan drops is ended now (`EndTime=now`); one that has ended is left for Slurm to purge. A period
whose start has passed when the commands run is created `StartTime=now` with its `EndTime=`
(slurmctld refuses a start more than a few minutes in the past). No period starts on GPUs a
running job holds before its time limit (`SlurmState.held`). With `SlurmState.reservations`
(read back from Slurm each cycle) the commands start from what Slurm holds, not from what an
earlier cycle believed it sent; with `SlurmState.version` before 23.11 whole nodes are reserved.

Jobs: a pending job the plan assigns gets `StartTime=` (its earliest start) at the planned
start and, when that falls within `hold_after_minutes` (the re-planning cadence), `ReqNodeList=`
the planned hosts; further out the next cycle decides the hosts. A hint the plan drops is
cleared (`StartTime=now ReqNodeList=`). Job ids are the importer's (`1234`, array task
`1230_4`, which `JobId=` takes as is); running jobs and their parts (`<id>@<host>`) get nothing.

Times: scontrol reads a time without offset (`YYYY-MM-DDTHH:MM:SS`) in the local time zone of
the scontrol process (parse_time), so times are written in `time_zone` and each command that
holds one runs under `env TZ=<time_zone>`. In a zone with daylight saving time a wall-clock time
in the repeated hour is ambiguous: UTC, the default, has none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from horizon_opt.actions.core import (
    Action,
    Actions,
    Desired,
    changes,
    check_plan,
    checked_applied,
    is_running,
    parse_desired,
    wall_clock,
)
from horizon_opt.actions.layout import (
    Period,
    Segment,
    group_runs,
    host_runs,
    node_owners,
    segments,
)
from horizon_opt.actions.slurm_keep import clip_runs, going_on, started
from horizon_opt.actions.slurm_state import GPU_RESERVATIONS, SlurmState
from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Assignment, Plan
from horizon_opt.times import iso, parse_time

__all__ = ["RESERVATION_FLAGS", "SlurmOptions", "SlurmState", "slurm_actions"]

RESERVATION_FLAGS = frozenset(
    [
        "ANY_NODES",
        "DAILY",
        "FLEX",
        "FORCE_START",
        "HOURLY",
        "IGNORE_JOBS",
        "LICENSE_ONLY",
        "MAGNETIC",
        "MAINT",
        "NO_HOLD_JOBS_AFTER",
        "OVERLAP",
        "PART_NODES",
        "PURGE_COMP",
        "REPLACE",
        "REPLACE_DOWN",
        "SPEC_NODES",
        "STATIC_ALLOC",
        "TIME_FLOAT",
        "USER_DELETE",
        "WEEKDAY",
        "WEEKEND",
        "WEEKLY",
    ]
)
"""The flags scontrol(1) lists for `create reservation`."""

STARTING = timedelta(minutes=2)
"""A reservation starting this soon is not deleted: it may have started when the command runs,
and Slurm refuses to delete a started one (the next cycle ends it if it is empty)."""

SLURM_JOB_ID = re.compile(r"^[0-9]+(_[0-9]+)?$")
_NAME_PART = re.compile(r"[^A-Za-z0-9_.-]")
_WORD = re.compile(r"^[^\s,=]+$")


@dataclass(frozen=True)
class SlurmOptions:
    """How the plan is written for one Slurm cluster."""

    users: tuple[str, ...] = ()  # Users= of the inference reservations
    accounts: tuple[str, ...] = ()  # Accounts=; a reservation needs users or accounts
    reservation_prefix: str = "hopt"
    lookahead_minutes: int = 1440  # reservations are written for periods starting this soon
    time_zone: str = "UTC"  # the zone scontrol runs in (see the module's "Times")
    hold_after_minutes: int = 60  # the re-planning cadence: hosts are pinned this far ahead
    granularity: Literal["gpu", "node"] = "gpu"  # gpu: Slurm 23.11 or later
    flags: tuple[str, ...] = ("IGNORE_JOBS", "MAGNETIC", "NO_HOLD_JOBS_AFTER")
    gres: str = "gpu"  # the GRES name in TRESPerNode=gres/<gres>=N
    start_hints: bool = True  # pending jobs get the plan's StartTime (False: reservations only)

    def zone(self) -> ZoneInfo:
        """The time zone, after checking every option: InputError, one line per problem."""
        problems = []
        if not self.users and not self.accounts:
            problems.append("slurm options: a reservation needs users or accounts (Users=)")
        for name, values in (("users", self.users), ("accounts", self.accounts)):
            problems += [
                f"slurm options: {name}: {v!r} is not a name" for v in values if not _WORD.match(v)
            ]
        if not _WORD.match(self.reservation_prefix):
            problems.append(f"slurm options: reservation_prefix {self.reservation_prefix!r}")
        if self.lookahead_minutes <= 0 or self.hold_after_minutes <= 0:
            problems.append("slurm options: lookahead_minutes and hold_after_minutes must be > 0")
        if self.granularity not in ("gpu", "node"):
            problems.append(f"slurm options: granularity {self.granularity!r}: gpu or node")
        unknown = sorted(set(self.flags) - RESERVATION_FLAGS)
        if unknown:
            problems.append(f"slurm options: flags not in scontrol(1): {', '.join(unknown)}")
        if not _WORD.match(self.gres):
            problems.append(f"slurm options: gres {self.gres!r} is not a GRES name")
        try:
            zone = ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            problems.append(f"slurm options: time_zone {self.time_zone!r} is not an IANA zone")
        if problems:
            raise InputError(problems)
        return zone


def slurm_actions(
    instance: Instance,
    plan: Plan,
    options: SlurmOptions,
    applied: Mapping[str, Mapping[str, str]] | None = None,
    state: SlurmState | None = None,
) -> Actions:
    """The scontrol commands that make Slurm follow `plan` from `instance.now` on, for what
    changed since `applied` (the `desired` of the last applied cycle; None: nothing applied).
    `state`: what the cycle read from Slurm; its reservations, when read, replace the applied
    ones (so a lost command or a reservation deleted by hand is repaired), and its version
    chooses the form of the reservations."""
    state = state or SlurmState()
    zone = options.zone()
    notes: list[str] = []
    if options.granularity == "gpu" and state.version and state.version < GPU_RESERVATIONS:
        options = replace(options, granularity="node")
        notes.append(
            f"Slurm {state.version[0]}.{state.version[1]:02d} has no GPU reservations "
            "(23.11 and later): whole nodes are reserved"
        )
    clock = state.clock or wall_clock(instance)
    assigned = check_plan(instance, plan)
    before = checked_applied(applied)
    if state.reservations is not None:
        jobs = {t: p for t, p in (before or {}).items() if not t.startswith("reservation/")}
        before = {**jobs, **parse_desired(state.reservations, "reservations read back")}
    segs = segments(instance, plan)
    desired, more = _reservations(instance, segs, options, before or {}, state, clock)
    notes += more
    if options.start_hints:
        desired.update(_job_hints(instance, assigned, options))
    render = _Renderer(instance, options, zone, clock, state)
    return Actions(desired, tuple(changes(before, desired, render)), "slurm", tuple(notes))


# ---- desired state


def _reservations(
    instance: Instance,
    segs: list[Segment],
    options: SlurmOptions,
    before: Desired,
    state: SlurmState,
    clock: datetime,
) -> tuple[Desired, list[str]]:
    """Reservation targets: the started ones that go on, and the periods that start before
    now + lookahead, none on GPUs a running job holds before its limit."""
    whole = options.granularity == "node"
    runs = host_runs(instance, segs, (lambda s: node_owners(instance, s)) if whole else _gpus)
    runs, notes = clip_runs(instance, runs, state.held, whole)
    ahead = instance.now * instance.slot_minutes + options.lookahead_minutes
    active = started(before, clock)
    out: Desired = {}
    found: list[Period] = []
    for service in instance.services:
        kept = going_on(instance, runs[service.name], active.get(service.name, []), whole, state)
        out.update(kept.targets)
        notes += kept.notes
        found += [
            p
            for p in group_runs(service.name, kept.rest)
            if p.start * instance.slot_minutes < ahead
        ]
    soon = [*active.values(), *started(before, clock + STARTING).values()]
    begun = {f"reservation/{a.name}" for mine in soon for a in mine}  # or too soon to delete
    for p, name in zip(found, _names(instance, found, options), strict=True):
        if f"reservation/{name}" in out.keys() | begun:  # a started one has that name
            name = f"{name}-{_NAME_PART.sub('_', p.hosts[0])}"
        out[f"reservation/{name}"] = _props(instance, p, whole)
    notes += _unreserved(instance, segs, options) if whole else []
    return out, notes


def _gpus(segment: Segment) -> Mapping[str, Mapping[str, int]]:
    return segment.gpus


def _props(instance: Instance, p: Period, whole: bool) -> dict[str, str]:
    start, end = instance.slot_time(p.start), instance.slot_time(p.end)
    assert start is not None and end is not None  # wall_clock checked horizon.start
    return {
        "service": p.service,
        "start": iso(start),
        "end": iso(end),
        "nodes": ",".join(p.hosts),
        "gpus_per_node": "" if whole else str(p.gpus),
    }


def name_part(service: str) -> str:
    """A service's name as reservation names write it."""
    return _NAME_PART.sub("_", service)


def _names(instance: Instance, found: list[Period], options: SlurmOptions) -> list[str]:
    """`<prefix>-<service>-<start, UTC>` (`-<n><gres>` for GPU reservations); periods that
    would share a name (same start and size, other ends) each add their first host."""
    safe = {s.name: _NAME_PART.sub("_", s.name) for s in instance.services}
    if len(set(safe.values())) < len(safe):
        raise InputError(["slurm: two services give the same reservation name part"])
    base = []
    for p in found:
        when = instance.slot_time(p.start)
        assert when is not None
        name = f"{options.reservation_prefix}-{safe[p.service]}-{when.astimezone(UTC):%Y%m%dT%H%M}"
        base.append(name if options.granularity == "node" else f"{name}-{p.gpus}{options.gres}")
    shared = {n for n in base if base.count(n) > 1}
    return [
        f"{n}-{_NAME_PART.sub('_', p.hosts[0])}" if n in shared else n
        for n, p in zip(base, found, strict=True)
    ]


def _unreserved(instance: Instance, segs: list[Segment], options: SlurmOptions) -> list[str]:
    """For whole-node reservations: the planned inference GPUs on nodes that are not reserved."""
    ahead = instance.now * instance.slot_minutes + options.lookahead_minutes
    left: dict[str, set[str]] = {}
    for seg in segs:
        if seg.start * instance.slot_minutes >= ahead:
            break
        owners = node_owners(instance, seg)
        for service, nodes in seg.gpus.items():
            mine = owners.get(service, {})
            left.setdefault(service, set()).update(n for n in nodes if n not in mine)
    return [
        f"{service}: whole-node reservations leave its planned GPUs on {', '.join(sorted(nodes))} "
        "unreserved at times (inference holds half or less of those nodes there)"
        for service, nodes in sorted(left.items())
        if nodes
    ]


def _job_hints(
    instance: Instance, assigned: Mapping[str, Assignment], options: SlurmOptions
) -> Desired:
    """A start (and, soon enough, hosts) for each pending job the plan assigns."""
    pin_before = instance.now + options.hold_after_minutes / instance.slot_minutes
    out: Desired = {}
    bad = []
    for job in instance.jobs:
        a = assigned.get(job.id)
        if a is None or is_running(instance, job) or "@" in job.id:
            continue
        if not SLURM_JOB_ID.match(job.id):
            bad.append(job.id)
            continue
        start = instance.slot_time(a.start)
        assert start is not None
        nodes = ",".join(sorted(a.gpus)) if a.start < pin_before else ""
        out[f"job/{job.id}"] = {"start": iso(start), "nodes": nodes}
    if bad:
        raise InputError([f"slurm: job {j!r} is not a Slurm job id (1234 or 1230_4)" for j in bad])
    return out


# ---- commands


class _Renderer:
    """The commands for one changed target, with what they need to know of this cycle."""

    def __init__(
        self,
        instance: Instance,
        options: SlurmOptions,
        zone: ZoneInfo,
        now: datetime,
        state: SlurmState,
    ):
        self.options = options
        self.zone = zone
        self.now = now
        self.state = state
        self.pending = {j.id for j in instance.jobs if not is_running(instance, j)}

    def __call__(
        self, op: str, target: str, old: Mapping[str, str] | None, new: Mapping[str, str] | None
    ) -> list[Action]:
        kind, _, name = target.partition("/")
        if kind == "reservation":
            return self._reservation(name, target, old, new)
        if kind == "job":
            return self._job(name, target, old, new)
        return []  # a target of another tool: not Slurm's

    def _time(self, text: str) -> str:
        when = parse_time(text)
        if when is None:
            raise InputError([f"applied: {text!r} is not an ISO time"])
        return when.astimezone(self.zone).strftime("%Y-%m-%dT%H:%M:%S")

    def _tz(self) -> tuple[str, ...]:
        return ("env", f"TZ={self.options.time_zone}", "scontrol")

    def _span(self, props: Mapping[str, str]) -> str:
        start, end = self._time(props["start"]), self._time(props["end"])
        return f"{start} to {end} {self.options.time_zone}"

    def _reservation(
        self,
        name: str,
        target: str,
        old: Mapping[str, str] | None,
        new: Mapping[str, str] | None,
    ) -> list[Action]:
        if new is None:
            assert old is not None
            return self._gone(name, target, old)
        if old is None:
            return [self._create(name, target, new)]
        nodes_changed = (set(old.get("nodes", "").split(",")), old.get("gpus_per_node")) != (
            set(new["nodes"].split(",")),
            new["gpus_per_node"],
        )
        if nodes_changed and new["gpus_per_node"] and not self._started(old):
            why = "Slurm cannot change the nodes of a GPU reservation: deleted and made again"
            gone = Action("delete", target, ("scontrol", "delete", f"ReservationName={name}"), why)
            return [gone, self._create(name, target, new)]
        argv = [*self._tz(), "update", f"ReservationName={name}"]
        if nodes_changed:
            argv.append(f"Nodes={new['nodes']}")
        if old.get("end") != new["end"] or old.get("start") != new["start"]:
            if self._started(old):  # the start has passed: only the end moves
                argv.append(f"EndTime={self._time(new['end'])}")
            else:
                argv.append(f"Duration={_minutes(new)}")
        if len(argv) == 5:
            return []  # nothing Slurm holds changed
        why = f"{new['service']}: the plan now reserves {_what(new)} from {self._span(new)}"
        return [Action("update", target, tuple(argv), why)]

    def _start(self, text: str) -> str:
        """The start to create at: `now` once it has passed (slurmctld refuses a start more
        than a few minutes in the past, and the plan's slot began before the snapshot)."""
        when = parse_time(text)
        return "now" if when is not None and when < self.now else self._time(text)

    def _length(self, props: Mapping[str, str]) -> str:
        """`Duration=` from a start to come; `EndTime=` from one that starts now, so Slurm
        holds the plan's end to the second."""
        start = parse_time(props["start"])
        if start is not None and start < self.now:
            return f"EndTime={self._time(props['end'])}"
        return f"Duration={_minutes(props)}"

    def _started(self, props: Mapping[str, str]) -> bool:
        """It has started at the clock (a start exactly at it counts: Slurm has begun it)."""
        start = parse_time(props.get("start", ""))
        return start is not None and start <= self.now

    def _create(self, name: str, target: str, new: Mapping[str, str]) -> Action:
        o = self.options
        argv = [
            *self._tz(),
            "create",
            "reservation",
            f"ReservationName={name}",
            f"StartTime={self._start(new['start'])}",
            self._length(new),
            f"Nodes={new['nodes']}",
        ]
        if new["gpus_per_node"]:
            argv.append(f"TRESPerNode=gres/{o.gres}={new['gpus_per_node']}")
        if o.users:
            argv.append(f"Users={','.join(o.users)}")
        if o.accounts:
            argv.append(f"Accounts={','.join(o.accounts)}")
        if o.flags:
            argv.append(f"Flags={','.join(o.flags)}")
        why = f"{new['service']}: the plan's inference holds {_what(new)} from {self._span(new)}"
        if not new["gpus_per_node"]:
            why += " (whole nodes: inference holds more than half of each node's GPUs there)"
        return Action("create", target, tuple(argv), why)

    def _gone(self, name: str, target: str, old: Mapping[str, str]) -> list[Action]:
        start, end = parse_time(old.get("start", "")), parse_time(old.get("end", ""))
        service = old.get("service", "?")
        if end is not None and end <= self.now:
            return []  # it has ended: Slurm purges it
        if start is not None and self.now < start <= self.now + STARTING:
            return []  # it starts before a delete could reach Slurm: the next cycle ends it
        if start is not None and start <= self.now:
            if self.state.is_occupied(name):
                return []  # jobs run in it: it goes on to its end rather than end them now
            why = (
                f"{service}: the plan no longer holds {_what(old)} from now: the started "
                "reservation, with no job in it, ends now (Slurm refuses to delete a started one)"
            )
            argv = ("scontrol", "update", f"ReservationName={name}", "EndTime=now")
            return [Action("release", target, argv, why)]
        why = f"{service}: the plan no longer reserves {_what(old)} in this period"
        return [Action("delete", target, ("scontrol", "delete", f"ReservationName={name}"), why)]

    def _job(
        self,
        job: str,
        target: str,
        old: Mapping[str, str] | None,
        new: Mapping[str, str] | None,
    ) -> list[Action]:
        if new is None:
            if job not in self.pending:
                return []  # it started, ended or left the queue: nothing to clear
            why = f"the plan no longer starts job {job} in the horizon: its start hint is cleared"
            clear = ("scontrol", "update", f"JobId={job}", "StartTime=now", "ReqNodeList=")
            return [Action("clear", target, clear, why)]
        argv = [*self._tz(), "update", f"JobId={job}"]
        if old is None or old.get("start") != new["start"]:
            argv.append(f"StartTime={self._time(new['start'])}")
        if (old or {}).get("nodes", "") != new["nodes"]:
            argv.append(f"ReqNodeList={new['nodes']}")
        when = f"{self._time(new['start'])} {self.options.time_zone}"
        where = f" on {new['nodes']}" if new["nodes"] else "; hosts are left to a later cycle"
        why = f"the plan starts job {job} at {when}{where}"
        return [Action("create" if old is None else "update", target, tuple(argv), why)]


def _minutes(props: Mapping[str, str]) -> int:
    """Minutes from the start to the end, rounded up."""
    start, end = parse_time(props["start"]), parse_time(props["end"])
    if start is None or end is None:
        raise InputError(
            [f"applied: a reservation with times {props['start']!r}, {props['end']!r}"]
        )
    return max(1, -(-(end - start) // timedelta(minutes=1)))


def _what(props: Mapping[str, str]) -> str:
    nodes = props.get("nodes", "")
    count = props.get("gpus_per_node", "")
    if not count:
        return f"nodes {nodes}" if "," in nodes else f"node {nodes}"
    return f"{count} GPUs on each of {nodes}" if "," in nodes else f"{count} GPUs on {nodes}"
