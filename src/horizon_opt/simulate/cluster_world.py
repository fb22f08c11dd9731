"""The `cluster` world: limits, outcomes and demand errors shaped like real clusters.

The `trace` world gives each trace job the tightest round limit above its run, so nearly every
completed job uses most of its limit, its failure share does not depend on the gang, failures
pile up at the limit, and demand strays as little as the synthetic world's. This world draws
each of those from published data instead (sources in docs/simulate.md, "The cluster world"):

- Limits as users give them. A user asks for a round limit (`ROUND_LIMITS_H`) at or above their
  job's run time times an overestimate drawn log-uniformly from [1, `OVERESTIMATE_MAX`], which
  puts the median run / limit of the Microsoft ITP trace's jobs at 0.4-0.5, as published logs
  show (Mu'alem & Feitelson 2001; Tsafrir et al. 2005). A job of the instance asks for its
  estimate; when it completes it runs a ratio drawn from the trace jobs of the limit nearest it.
- Outcomes by gang size: a share `FAIL_SINGLE` of 1-GPU jobs and `FAIL_GANG` of larger ones
  fail (Alibaba's GPU trace of 2023); `CANCELLED` of all jobs are cancelled by their user (the
  Philly row of AcmeTrace, as the `trace` world).
- When a failed or cancelled job ends: a uniform share of the run it would have had, so those
  ends spread over the run instead of piling at the limit.
- Inference demand: the forecast times exp(e), with `e` a block of the hourly seasonal-naive
  log errors of the ServeGen series that ship with the package (`inference_servegen.csv`: each
  hour against the same hour a day before), one block per service from a random model and hour.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass

import numpy as np

from horizon_opt.generate.trace import default_traces_dir, load_trace_jobs
from horizon_opt.model.instance import FloatArray, Instance
from horizon_opt.simulate.trace_world import (
    MIN_BAND_JOBS,
    ROUND_LIMITS_H,
    estimate_hours,
    nearest_limit,
    trace_model,
)
from horizon_opt.simulate.world import World

OVERESTIMATE_MAX = 2.0  # users ask for up to this many times their run, before rounding up
FAIL_SINGLE = 0.079  # share of 1-GPU jobs that fail
FAIL_GANG = 0.57  # share of multi-GPU jobs that fail
SERVEGEN_FILE = "inference_servegen.csv"
SERVEGEN_MODELS = ("m-mid", "m-small")  # the series of 14 days (deepseek-r1 has one: no lag)
CLUSTER_STREAM = 20261203  # a random stream of its own, apart from the other worlds'


@dataclass(frozen=True)
class ClusterModel:
    """What the cluster world draws from, for tests and reports to check draws by."""

    limits_h: tuple[float, ...]  # round limits with enough trace jobs to draw from, ascending
    ratios: tuple[FloatArray, ...]  # per limit: its trace jobs' run / limit ratios, sorted
    cancelled: float  # share of jobs their user cancels
    demand_errors: tuple[FloatArray, ...]  # per ServeGen model: hourly log errors, in time order

    def band(self, estimate_h: float) -> int:
        """Index of the limit nearest `estimate_h` (`nearest_limit`)."""
        return nearest_limit(self.limits_h, estimate_h)

    def fail_share(self, gpus: int) -> float:
        return FAIL_SINGLE if gpus == 1 else FAIL_GANG


@functools.cache
def cluster_model() -> ClusterModel:
    """The cluster world's distributions, from the packaged traces and a fixed stream (the same
    instance and seed give the same world everywhere)."""
    rng = np.random.default_rng([0, CLUSTER_STREAM])
    run_h = load_trace_jobs(str(default_traces_dir())).duration_s.astype(np.float64) / 3600
    limits = np.array(ROUND_LIMITS_H, dtype=np.float64)
    asked = run_h * np.exp(rng.uniform(0.0, math.log(OVERESTIMATE_MAX), len(run_h)))
    band = np.minimum(np.searchsorted(limits, asked, side="left"), len(limits) - 1)
    kept: list[float] = []
    ratios: list[FloatArray] = []
    for b, limit in enumerate(limits):
        mine = np.sort(np.minimum(1.0, run_h[band == b] / limit))
        if len(mine) >= MIN_BAND_JOBS:
            mine.setflags(write=False)
            kept.append(float(limit))
            ratios.append(mine)
    return ClusterModel(tuple(kept), tuple(ratios), trace_model().cancelled, _demand_errors())


def _demand_errors() -> tuple[FloatArray, ...]:
    """Per ServeGen model, log(requests in an hour / requests in the same hour a day before),
    hours whose windows (or the day-before's) hold a collection gap left out."""
    requests: dict[str, dict[int, float]] = {m: {} for m in SERVEGEN_MODELS}
    gaps: dict[str, set[int]] = {m: set() for m in SERVEGEN_MODELS}
    with (default_traces_dir() / SERVEGEN_FILE).open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["model"] not in requests:
                continue
            hour = int(float(row["time_s"])) // 3600
            hours = requests[row["model"]]
            hours[hour] = hours.get(hour, 0.0) + float(row["requests"])
            if row["gap"] == "1":
                gaps[row["model"]].add(hour)
    out = []
    for model in SERVEGEN_MODELS:
        hours, gap = requests[model], gaps[model]
        errors = [
            math.log(hours[h] / hours[h - 24])
            for h in sorted(hours)
            if h - 24 in hours
            and h not in gap
            and h - 24 not in gap
            and hours[h] > 0
            and hours[h - 24] > 0
        ]
        series = np.array(errors, dtype=np.float64)
        series.setflags(write=False)
        out.append(series)
    return tuple(out)


def draw_cluster_world(instance: Instance, seed: int) -> World:
    """The cluster world for `instance` (see the module's docstring)."""
    model = cluster_model()
    rng = np.random.default_rng([seed, CLUSTER_STREAM])
    share: dict[str, float] = {}
    fails: set[str] = set()
    cancels: set[str] = set()
    for job in instance.jobs:
        estimate = estimate_hours(instance, job)
        u, v, w = rng.random(3)
        ratios = model.ratios[model.band(estimate)]
        full = float(ratios[int(v * len(ratios))])
        if u < model.cancelled + model.fail_share(job.gpus):
            share[job.id] = full * w
            fails.add(job.id)
            if u < model.cancelled:
                cancels.add(job.id)
        else:
            share[job.id] = full
    demand = tuple(_actual_demand(s.demand, instance, model, rng) for s in instance.services)
    return World(share, frozenset(fails), demand, frozenset(cancels))


def _actual_demand(
    forecast: FloatArray, instance: Instance, model: ClusterModel, rng: np.random.Generator
) -> FloatArray:
    """The forecast times exp(e), `e` one block of a ServeGen model's hourly errors from a
    random hour (wrapping around), each slot taking its hour's error."""
    errors = model.demand_errors[int(rng.integers(len(model.demand_errors)))]
    first = int(rng.integers(len(errors)))
    hour = (np.arange(instance.slots) * instance.slot_minutes) // 60
    actual = forecast * np.exp(errors[(first + hour) % len(errors)])
    actual.setflags(write=False)
    return actual
