"""Family `deadline`: most jobs are due, so a plan's value depends on when jobs run, not only
which ones."""

from __future__ import annotations

import math
import os

from horizon_opt.generate.aliases import InstanceData, Rng
from horizon_opt.generate.jobs import Job, dependent_releases
from horizon_opt.generate.sizes import Size
from horizon_opt.generate.synthetic import synthetic

DEADLINE_SHARE = 0.85  # of jobs with a deadline
TIGHT_SHARE = 0.45  # of jobs with a tight one
END_OF_DAY_HOUR = 18  # loose deadlines snap down to the last 18:00 UTC that still allows them


def _deadline_times(size: Size, rng: Rng, jobs: list[Job]) -> None:
    """Deadlines on 85% of the jobs: 45% tight (slack 10-50% of the chain), 40% loose (100-300%,
    snapped to the end of a working day when one fits); tight jobs are urgent (priority >= 5-10)."""
    earliest_end, chain_start = dependent_releases(size, jobs)
    per_day = 24 * 60 // size.slot_minutes
    eod = END_OF_DAY_HOUR * 60 // size.slot_minutes
    for j in jobs:
        draw = float(rng.random())
        ee = earliest_end[j.id]
        chain = ee - chain_start[j.id]
        if draw >= DEADLINE_SHARE or ee > size.slots:
            continue
        if draw < TIGHT_SHARE:
            deadline = ee + math.ceil(float(rng.uniform(0.1, 0.5)) * chain)
            j.priority = max(j.priority, int(rng.integers(5, 11)))
        else:
            deadline = ee + math.ceil(float(rng.uniform(1.0, 3.0)) * chain)
            end_of_day = (deadline - eod) // per_day * per_day + eod
            if ee <= end_of_day < deadline:
                deadline = end_of_day
        j.deadline = min(size.slots, deadline)


def deadline(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Most jobs due, tight and loose, so value depends on timing; see docs/generator.md."""
    return synthetic(name, size, rng, peak_share=0.4, load=1.5, add_times=_deadline_times)
