"""The `trace` world: run times, failures and cancellations shaped by real GPU-cluster traces.

Why: a world where every job runs its estimate times one uniform factor flatters schedulers
(Tsafrir, "Using inaccurate estimates accurately", JSSPP 2010). Real estimates are time limits
picked from a few round values, so how loose an estimate is depends on the job, and many jobs
end without value. What the world is built from (both files ship in `horizon_opt/data/traces`,
with attribution and licences in its README.md):

- Completed jobs. Each job of the Microsoft ITP trace (`jobs_msitp_cluster02.csv`) gets the time
  limit its user would have asked for, the smallest of `ROUND_LIMITS_H` at or above its run
  time, and its ratio run / limit. A job of the instance asks for its estimate (its duration on
  its fastest pool) as its limit; when it completes, it runs a ratio drawn from the trace jobs of
  the limit nearest its estimate (on a log scale, among the limits that hold at least
  `MIN_BAND_JOBS` trace jobs), times its estimate. So it never runs past its estimate.
- Failed and cancelled jobs: their shares of all jobs are the `Philly` row of AcmeTrace's
  `job_outcomes_acmetrace.csv` (Hu et al., NSDI 2024): the GPU jobs of Microsoft's Philly
  cluster (Jeon et al., ATC 2019; ITP's predecessor) that ended `Failed`, and `Killed` by their
  user. When such a job ends is not data: no trace we could obtain gives it relative to the
  job's limit. The world assumes that the time until a job fails or is cancelled is distributed
  as the ITP run times (a trace without status, so they mix all three outcomes), whatever the
  job's estimate, capped at the estimate (a job still running at its limit is killed there and
  counts as failed). So long jobs mostly fail early, and short ones often at their limit.
- Inference demand: the synthetic world's AR(1) forecast error (`world.draw_demand`) with the
  standard deviation given (`Noise.demand`): no trace gives the forecast errors of the
  instance's own services.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass

import numpy as np

from horizon_opt.generate.trace import default_traces_dir, load_trace_jobs
from horizon_opt.model.instance import FloatArray, Instance, Job
from horizon_opt.simulate.world import World, draw_demand

ROUND_LIMITS_H = (1, 2, 4, 8, 12, 24, 48, 72, 168, 336)  # the time limits users ask for, hours
MIN_BAND_JOBS = 20  # fewer trace jobs than this under one limit are too few to draw from
OUTCOMES_FILE = "job_outcomes_acmetrace.csv"
OUTCOMES_CLUSTER = "Philly"  # the row of OUTCOMES_FILE whose shares the world uses
TRACE_STREAM = 20261202  # seeds a random stream of its own, apart from the synthetic world's


@dataclass(frozen=True)
class TraceModel:
    """The distributions the trace world draws from, for tests and reports to check draws by."""

    limits_h: tuple[float, ...]  # round limits with enough trace jobs to draw from, ascending
    ratios: tuple[FloatArray, ...]  # per limit: its trace jobs' run / limit ratios, sorted
    run_hours: FloatArray  # every trace job's run time in hours, sorted: the time to end early
    failed: float  # share of jobs that fail
    cancelled: float  # share of jobs their user cancels

    def band(self, estimate_h: float) -> int:
        """Index of the limit nearest `estimate_h` (`nearest_limit`)."""
        return nearest_limit(self.limits_h, estimate_h)


def nearest_limit(limits_h: tuple[float, ...], estimate_h: float) -> int:
    """Index of the limit nearest `estimate_h` on a log scale (the lower one on a tie)."""
    gaps = [abs(math.log(estimate_h / limit)) for limit in limits_h]
    return gaps.index(min(gaps))


def estimate_hours(instance: Instance, job: Job) -> float:
    """A job's estimate, the limit it asks for: its run on its fastest pool (a job with no pool
    to run on never starts: any estimate will do)."""
    return min(job.durations.values(), default=1) * instance.hours_per_slot


def _outcome_shares() -> tuple[float, float]:
    """(failed, cancelled) shares of GPU jobs in `OUTCOMES_CLUSTER`'s row, over the three
    outcomes (the published rates are rounded, so they need not add up to exactly 1)."""
    path = default_traces_dir() / OUTCOMES_FILE
    with path.open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == OUTCOMES_CLUSTER)
    done, cancel, fail = (float(row[f"{k}_rate_gpu"]) for k in ("complete", "cancel", "fail"))
    total = done + cancel + fail
    return fail / total, cancel / total


@functools.cache
def trace_model() -> TraceModel:
    """The trace world's distributions, from the copies of the traces that ship with the
    package (never $HORIZON_OPT_TRACES: the same instance and seed must give the same world
    everywhere)."""
    run_s = load_trace_jobs(str(default_traces_dir())).duration_s.astype(np.float64)
    limits_s = np.array(ROUND_LIMITS_H, dtype=np.float64) * 3600
    band = np.searchsorted(limits_s, run_s, side="left")
    if band.max() >= len(limits_s):
        raise RuntimeError(f"a trace job runs longer than {ROUND_LIMITS_H[-1]} h, the last limit")
    limits: list[float] = []
    ratios: list[FloatArray] = []
    for b, limit in enumerate(ROUND_LIMITS_H):
        mine = np.sort(run_s[band == b] / limits_s[b])
        if len(mine) >= MIN_BAND_JOBS:
            mine.setflags(write=False)
            limits.append(float(limit))
            ratios.append(mine)
    run_hours = np.sort(run_s / 3600)
    run_hours.setflags(write=False)
    failed, cancelled = _outcome_shares()
    return TraceModel(tuple(limits), tuple(ratios), run_hours, failed, cancelled)


def draw_trace_world(instance: Instance, seed: int, demand_sigma: float) -> World:
    """The trace world for `instance` (see the module's docstring); the same instance and seed
    give the same world."""
    model = trace_model()
    rng = np.random.default_rng([seed, TRACE_STREAM])
    share: dict[str, float] = {}
    fails: set[str] = set()
    cancels: set[str] = set()
    for job in instance.jobs:
        estimate = estimate_hours(instance, job)
        u, v = rng.random(2)
        if u < model.failed + model.cancelled:
            end = float(model.run_hours[int(v * len(model.run_hours))])
            share[job.id] = min(1.0, end / estimate)
            fails.add(job.id)
            if u >= model.failed:
                cancels.add(job.id)
        else:
            ratios = model.ratios[model.band(estimate)]
            share[job.id] = float(ratios[int(v * len(ratios))])
    demand = draw_demand(instance, rng, demand_sigma)
    return World(share, frozenset(fails), demand, frozenset(cancels))
