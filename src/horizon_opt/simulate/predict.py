"""Run-time distributions instead of limits: what a `-predict` policy's planners see.

A job's duration in an instance is its user's estimate, a time limit: the job ends at it or
before it, often long before. A `-predict` planner sees instead a run time learned, in the
replay, from the jobs that have ended so far: the share of its estimate (on the pool it ran) that
each held its GPUs. Completed, failed and cancelled runs all count, since each freed its GPUs
then; a preempted run says nothing about when its job would have ended and is not observed.

- Groups: the job's kind, falling back to all kinds, falling back to the estimate itself (share
  1) while fewer than `minimum` runs have ended: a quantile of two runs is noise.
- A waiting job: the `q`-quantile of its group's shares times its estimate on each pool,
  rounded up to whole slots, from 1 to the estimate. The limit stays the kill time: no job runs
  past it, so no prediction does.
- A running job, conditioned on the time it has run: the `q`-quantile of the shares that exceed
  its elapsed share, so a job that outlives its prediction is predicted again, later, at every
  decision; its limit when no observed run lasted that long.

An underestimate makes plans whose next starts get blocked (the replay re-plans then); an
overestimate wastes the time a job frees until the next decision: `q` trades one against the
other.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from horizon_opt.instance import Instance
from horizon_opt.spec import InstanceSpec

QUANTILE = 0.5  # the share of observed runs that a prediction outlasts
MINIMUM_RUNS = 5  # ended runs a group needs before its shares are trusted
ALL = "*"  # the group of every kind
EPS = 1e-9


def quantile(shares: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-quantile of sorted `shares`: the smallest share that at least a
    share `q` of them do not exceed (an observed run, not an interpolation); 1 when empty."""
    if not shares:
        return 1.0
    return shares[max(math.ceil(q * len(shares) - EPS) - 1, 0)]


def slots(share: float, estimate: int) -> int:
    """`share` of `estimate` in whole slots, rounded up, from 1 to the estimate."""
    return max(1, min(estimate, math.ceil(share * estimate - EPS)))


@dataclass
class Predictor:
    """Observed run-time shares per job kind, and the predictions they give."""

    q: float = QUANTILE
    minimum: int = MINIMUM_RUNS
    observed: dict[str, list[float]] = field(default_factory=dict)  # group -> sorted shares

    def observe(self, kind: str, held: int, estimate: int) -> None:
        """A run of a `kind` job ended after holding its GPUs `held` slots of its `estimate`."""
        for group in (kind, ALL):
            bisect.insort(self.observed.setdefault(group, []), held / estimate)

    def group(self, kind: str) -> list[float]:
        """The sorted shares a `kind` job is predicted from: its kind's, else every kind's,
        else none (a group is trusted from `minimum` runs)."""
        for group in (kind, ALL):
            shares = self.observed.get(group, [])
            if len(shares) >= self.minimum:
                return shares
        return []

    def share(self, kind: str) -> float:
        """The predicted share of its estimate that a waiting `kind` job runs."""
        return quantile(self.group(kind), self.q)

    def end(self, kind: str, estimate: int, start: int, t: int) -> int:
        """The predicted end of a `kind` job running since `start`, at slot `t`: the quantile
        of the shares that exceed its elapsed share, at most `start + estimate` (its limit, when
        no run was observed or none lasted that long). A share that exceeds the elapsed one
        rounds up past `t`, so the job is predicted to end after `t`."""
        shares = self.group(kind)
        longer = shares[bisect.bisect_right(shares, (t - start) / estimate + EPS) :]
        return start + slots(quantile(longer, self.q), estimate)


def predicted_spec(
    instance: Instance, predictor: Predictor, limited: Collection[int] = ()
) -> InstanceSpec:
    """The instance with each job's duration on each pool, but the `limited` pools (indices),
    replaced by its predicted run there, as `audit.told_spec` does with the actual runs."""
    names = [p.name for p in instance.pools]
    jobs = [
        spec.model_copy(
            update={
                "duration": {
                    names[p]: d if p in limited else slots(predictor.share(job.kind), d)
                    for p, d in job.durations.items()
                },
                "pools": None,
            }
        )
        for spec, job in zip(instance.spec.jobs, instance.jobs, strict=True)
    ]
    return instance.spec.model_copy(update={"jobs": jobs})
