"""What the service told people: each waiting job's start as first predicted far enough ahead.

Every cycle writes `promises.json` beside its plan: job id -> the start time the first plan to
predict it at least `PROMISE_AHEAD_MINUTES` ahead gave it. A job leaves the ledger when it
starts or leaves the queue. With `keep_promises` in the run configuration, the next cycle's plan
holds these starts (`replan.with_held_promises`), as `simulate --keep-promises` does in the
replay; without it the ledger still says what people were told, and how far plans moved from it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from horizon_opt.actions.core import is_running
from horizon_opt.instance import Instance
from horizon_opt.plan import Plan
from horizon_opt.replan import PROMISE_AHEAD_MINUTES
from horizon_opt.times import iso, parse_time

PROMISES = "promises.json"


def read_promises(cycle: Path | None, lines: list[str]) -> dict[str, datetime]:
    """The ledger of the cycle at `cycle` (none: empty; unreadable: empty, with a warning)."""
    if cycle is None or not (cycle / PROMISES).exists():
        return {}
    try:
        raw = json.loads((cycle / PROMISES).read_text(encoding="utf-8"))
        when = {str(job): parse_time(str(text)) for job, text in raw["promises"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        lines.append(f"warning: {cycle / PROMISES} is unreadable ({exc}): no promise is held")
        return {}
    return {job: t for job, t in when.items() if t is not None}


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


def updated(
    instance: Instance, plan: Plan, promises: Mapping[str, datetime]
) -> dict[str, datetime]:
    """The ledger after this cycle: its promises of jobs that have not started, and the plan's
    starts at least PROMISE_AHEAD_MINUTES ahead for waiting jobs not promised yet."""
    started = {job.id for job in instance.jobs if is_running(instance, job)}
    queued = {job.id for job in instance.jobs}
    out = {job: t for job, t in promises.items() if job in queued and job not in started}
    ahead = -(-PROMISE_AHEAD_MINUTES // instance.slot_minutes)
    for a in plan.assignments:  # a running job's start is before now: never a promise
        when = instance.slot_time(a.start)
        if a.job not in out and when is not None and a.start - instance.now >= ahead:
            out[a.job] = when
    return out


def promises_json(promises: Mapping[str, datetime]) -> str:
    body = {job: iso(when) for job, when in sorted(promises.items())}
    return json.dumps({"promises": body}, indent=2) + "\n"
