"""What the service told people: each waiting job's start as first predicted far enough ahead,
with a P50 and a P90 learned from how late the promises before it came true.

Every cycle writes `promises.json` beside its plan: job id -> the start time the first plan to
predict it at least `PROMISE_AHEAD_MINUTES` ahead gave it (`promises`), when that was and the
interval it was given (`intervals`), and the promises that came true, newest last (`history`:
when each was made, the start predicted, the start seen). A job leaves `promises` when it starts
(into `history`) or leaves the queue. The interval follows `horizon_opt.loop.lateness`, the rule the
replay's promise book measures. With `keep_promises` in the run configuration, the next cycle's
plan holds the promised starts (`replan.with_held_promises`), as `simulate --keep-promises`
does in the replay; without it the ledger still says what people were told.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from horizon_opt.actions.core import is_running
from horizon_opt.errors import InputError
from horizon_opt.loop.lateness import Lateness, calibrated_level, lateness_shares, size_class
from horizon_opt.loop.replan import PROMISE_AHEAD_MINUTES
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan
from horizon_opt.times import iso, parse_time

PROMISES = "promises.json"
HISTORY = 500  # the promises that came true kept to learn from: the newest


@dataclass(frozen=True)
class Told:
    """A promise: when it was made, the start it predicted, and its P50 and P90."""

    made: datetime
    start: datetime
    p50: datetime
    p90: datetime
    klass: str = ""  # its job's size class (`loop.lateness.size_class`); "" if not written

    @property
    def lead(self) -> float:
        """How far ahead it was made, in minutes (at least one)."""
        return max((self.start - self.made).total_seconds() / 60, 1.0)

    def lateness(self, when: datetime) -> float:
        """How late a start at `when` is, as a share of the lead."""
        return (when - self.start).total_seconds() / 60 / self.lead


@dataclass(frozen=True)
class CameTrue:
    job: str
    told: Told
    started: datetime


@dataclass(frozen=True)
class Ledger:
    told: dict[str, Told] = field(default_factory=dict)
    history: tuple[CameTrue, ...] = ()

    def intervals(self) -> dict[str, dict[str, str]]:
        """Job id -> its promise as `promises.json` and `explain` write it (ISO times)."""
        return {
            job: {"start": iso(t.start), "p50": iso(t.p50), "p90": iso(t.p90), "made": iso(t.made)}
            | ({"class": t.klass} if t.klass else {})
            for job, t in sorted(self.told.items())
        }

    def starts(self) -> dict[str, datetime]:
        """Job id -> the start it was promised."""
        return {job: t.start for job, t in self.told.items()}

    def lateness(self, now: datetime) -> tuple[list[Lateness], list[Lateness]]:
        """Lateness of the promises that came true, and so far of those still waiting."""
        return (
            [(c.told.klass, c.told.lateness(c.started)) for c in self.history],
            [(t.klass, t.lateness(now)) for t in self.told.values()],
        )

    def missed(self, now: datetime) -> list[bool]:
        """Of the promises resolved by `now`, which missed their P90: those that came true
        after it, and those still waiting past it."""
        came_true = [c.started > c.told.p90 for c in self.history]
        return came_true + [True for t in self.told.values() if now > t.p90]


def read_promises(cycle: Path | None, lines: list[str]) -> Ledger:
    """The ledger of the cycle at `cycle` (none: empty; unreadable: empty, with a warning)."""
    if cycle is None or not (cycle / PROMISES).exists():
        return Ledger()
    try:
        return parse_ledger((cycle / PROMISES).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        lines.append(f"warning: {cycle / PROMISES} is unreadable ({exc}): no promise is held")
        return Ledger()


def load_ledger(path: Path) -> Ledger:
    """A `promises.json` given by name (`explain --promises`): unreadable is an input error."""
    try:
        return parse_ledger(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError([f"--promises: cannot read {path}: {exc.strerror or exc}"]) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError([f"--promises: {path} is no promise ledger ({exc})"]) from exc


def parse_ledger(text: str) -> Ledger:
    """A `promises.json`'s ledger. A promise without its interval (written before intervals
    were) counts as made `PROMISE_AHEAD_MINUTES` before its start, with the start as its P50
    and P90."""
    raw = json.loads(text)
    intervals = raw.get("intervals", {})
    told = {
        str(job): _told(intervals.get(job), _time(when)) for job, when in raw["promises"].items()
    }
    history = tuple(
        CameTrue(str(row["job"]), _told(row, _time(row["predicted"])), _time(row["started"]))
        for row in raw.get("history", [])
    )
    return Ledger(told, history)


def _time(text: Any) -> datetime:
    when = parse_time(str(text))
    if when is None:
        raise ValueError(f"{text!r} is no time")
    return when


def _told(row: Mapping[str, Any] | None, start: datetime) -> Told:
    if row is None:
        return Told(start - timedelta(minutes=PROMISE_AHEAD_MINUTES), start, start, start)
    made, p50, p90 = (_time(row[key]) for key in ("made", "p50", "p90"))
    return Told(made, start, p50, p90, str(row.get("class", "")))


def promised_slots(instance: Instance, promises: Mapping[str, datetime]) -> dict[str, int]:
    """The ledger on this cycle's horizon: job id -> the last slot that starts by the promised
    time, for the jobs still waiting."""
    assert instance.start is not None  # the service's instances all have a start
    waiting = {job.id for job in instance.jobs if job.placed is None}
    minutes = instance.slot_minutes
    out = {}
    for job, when in promises.items():
        if job in waiting:
            elapsed = (when - instance.start).total_seconds() / 60
            out[job] = math.floor(elapsed / minutes + 1e-9)
    return out


def updated(instance: Instance, plan: Plan, ledger: Ledger) -> Ledger:
    """The ledger after this cycle: the promises of jobs that have not started; those that did
    into the history, with the start seen; and the plan's starts at least
    PROMISE_AHEAD_MINUTES ahead for waiting jobs not promised yet, each with its interval."""
    now = instance.slot_time(instance.now)
    assert now is not None  # the service's instances all have a start
    queued = {job.id: job for job in instance.jobs}
    told: dict[str, Told] = {}
    came_true = list(ledger.history)
    for job_id, t in ledger.told.items():
        job = queued.get(job_id)
        if job is None:
            continue  # it left the queue
        if job.placed is not None and is_running(instance, job):
            started = instance.slot_time(job.placed.start)
            assert started is not None
            came_true.append(CameTrue(job_id, t, started))
        else:
            told[job_id] = t
    history = tuple(came_true[-HISTORY:])
    known = Ledger(told, history)
    level, lateness = calibrated_level(known.missed(now)), known.lateness(now)
    ahead = -(-PROMISE_AHEAD_MINUTES // instance.slot_minutes)
    for a in plan.assignments:  # a running job's start is before now: never a promise
        when = instance.slot_time(a.start)
        if a.job in told or when is None or a.start - instance.now < ahead:
            continue
        lead = when - now
        klass = size_class(queued[a.job].gpus)
        p50, p90 = lateness_shares(*lateness, klass, level)
        told[a.job] = Told(now, when, _minute(when + p50 * lead), _minute(when + p90 * lead), klass)
    return Ledger(told, history)


def _minute(when: datetime) -> datetime:
    """`when` rounded up to the minute: an interval is told in minutes."""
    whole = when.replace(second=0, microsecond=0)
    return whole if whole == when else whole + timedelta(minutes=1)


def promises_json(ledger: Ledger) -> str:
    told = sorted(ledger.told.items())
    body = {
        "promises": {job: iso(t.start) for job, t in told},
        "intervals": {
            job: {k: v for k, v in row.items() if k != "start"}
            for job, row in ledger.intervals().items()
        },
        "history": [
            {
                "job": c.job,
                "made": iso(c.told.made),
                "predicted": iso(c.told.start),
                "p50": iso(c.told.p50),
                "p90": iso(c.told.p90),
                "started": iso(c.started),
            }
            | ({"class": c.told.klass} if c.told.klass else {})
            for c in ledger.history
        ],
    }
    return json.dumps(body, indent=2) + "\n"
