"""Seeded instance generator: benchmark families of realistic instances, at four sizes.

`generate(family, size, seed)` returns instance data as a plain dict that follows FORMAT.md (ready
for YAML), and `write_instance(data, path)` writes it. The same (family, size, seed) always gives
the identical dict: every random draw comes from one `numpy.random.default_rng(seed)`, in a fixed
order. Instances are named `<family>-<size>-s<seed>`.

Sizes (cluster shape, queue length, horizon) are one table, `SIZES`, shared by every family:

| size   | pools (nodes of 8 GPUs)         | GPUs  | jobs  | slots | slot   | horizon | services |
| ------ | ------------------------------- | ----- | ----- | ----- | ------ | ------- | -------- |
| small  | h100 4                          | 32    | 40    | 48    | 30 min | 1 day   | 2        |
| medium | h100 12, a100 10, l40s 6        | 224   | 300   | 96    | 30 min | 2 days  | 3        |
| large  | h100 64, a100 40, l40s 24       | 1,024 | 1,500 | 192   | 60 min | 8 days  | 5        |
| xl     | h100 256, a100 160, l40s 96     | 4,096 | 5,000 | 672   | 60 min | 4 weeks | 8        |

Small and medium use 30-minute slots so that their short horizons still resolve the daily cycle
and hour-long jobs; large and xl use 60-minute slots to keep the grid (nodes x slots) small.

Families are small functions in the `FAMILIES` registry, `(name, size, rng, *, traces) -> dict`
(`traces` matters to `trace` only). `generate_file(family, size, seed, path)` writes the YAML with
the family's notes (the trace attribution) as comments; `horizon-opt generate` calls it.

| family       | what it models                                   | inference peak | batch load |
| ------------ | ------------------------------------------------ | -------------- | ---------- |
| `enterprise` | inference-heavy company cluster                  | 48% of GPUs    | 2.0x       |
| `hetero`     | three GPU generations, per-job speeds and pools  | 35%            | 2.0x       |
| `deadline`   | most jobs due, tight or loose                    | 40%            | 1.5x       |
| `trace`      | real jobs and demand shape from public traces    | 48%            | as traced  |

Batch load = sum of gpus x duration on each job's fastest pool / GPU-hours left by inference.

Family `enterprise`: an inference-heavy company cluster.

- Inference: real-time services on the one or two newest pools (h100, then a100), all with
  `headroom: 0.1` and demand given inline. Together their forecast peaks at about 48% of all GPUs
  (at most 70% of the pools they run on); each follows a daily cycle with its peak between 11:00
  and 15:00 and a night trough of 28-38% of the peak, 4% noise, and (horizons over two days)
  weekends at 80%. Each service's replica size (1, 2, 4 or 8 GPUs) divides the node and leaves it
  at least four replicas at the peak.
- Outages: a few maintenance windows (4-24 h, one node each; small 1, medium 2, large 4, xl 12),
  dropped where they would leave inference short, so the instance always validates.
- Jobs, in release order: about 43% training (gangs of 8, 16, 32 GPUs and some of 1-4), 25% batch
  inference (1-16 GPUs), 15% quantization (`after:` a training job, mostly the large ones) and 17%
  evaluation (`after:` a quantization job or, a third of the time, a training job). Gang sizes are
  limited to what a pool can place beside inference at its night trough.
- Pools: durations are given per pool; a100 is 1.5-2x and l40s 2-3x slower than h100 (drawn per
  job). Some jobs are restricted: multi-node training never runs on l40s (PCIe nodes), 8-GPU
  training half the time not, 12% of jobs (40% of quantization: FP8) are h100-only and 5%
  a100-only; a pool where the job would take more than 80% of the horizon is left out.
- Priorities 1-10, skewed low (1-3 for about 58% of jobs, 8-10 for about 9%); quantization and
  evaluation inherit their training job's priority.
- Releases: 10% of root jobs at slot 0 (the backlog), the rest over the first 60% of the horizon,
  denser in working hours. A dependent job is released when its `after:` job would end if it
  started at its own release (the pipeline submits it then), at most at the last slot.
- File order is release order; ids (`train-0042`, `bi-`, `quant-`, `eval-`) count in file order.
- Deadlines on about a third of the jobs: the earliest possible end along the job's chain, plus
  30-200% of that chain's length, capped at the horizon.
- Load: training and batch-inference durations (log-normal, longer for larger gangs, at most 40%
  of the horizon on their fastest pool) are scaled so that the batch load, the sum of gpus x
  duration on each job's fastest pool, is about twice the GPU-hours that inference leaves free
  (available GPU-hours minus the per-slot reservation `req x gpus_per_replica`).

Family `hetero`: a cluster that kept its older GPUs, so where a job runs changes how long it takes.

- Pools: three generations, h100 (H100-80GB-SXM), a100 (A100-80GB-SXM) and v100 (V100-32GB-SXM2).
  Sizes with three pools keep the table's node counts with v100 in place of l40s; small's 4 nodes
  become h100 2, a100 1, v100 1 (same 32 GPUs).
- Per-type durations: each job draws two slowdowns against h100 in [1.5, 3]; the smaller is its
  a100 factor, the larger its v100 factor (so a job is 1.5-3x slower on an older type, and how much
  depends on the job: memory-bound jobs gain little from a newer GPU).
- Per-job allowed pools: gangs of 16+ GPUs and 8+-GPU batch inference never on v100 (the model does
  not fit in 32 GB); 40% of quantization jobs (FP8) h100-only; 10% of jobs cannot use h100 (legacy
  container image without Hopper support); 8% pinned to one pool (data locality, a team's quota);
  a pool where the job would take more than 80% of the horizon is left out, as in enterprise.
- Everything else as in enterprise (job mix, dependencies, priorities, releases, a third with
  deadlines, batch load 2x), with lighter inference: forecast peak at 35% of the GPUs.

Family `deadline`: most jobs are due, so a plan's value depends on when jobs run, not only which.

- Cluster, inference (peak at 40% of the GPUs), outages, job mix, dependencies and releases as in
  enterprise; batch load 1.5x (the deadlines, not the queue length, make it hard).
- Deadlines on 85% of the jobs, measured from the earliest possible end along the job's chain
  (`after:` jobs run at once): 45% tight, slack 10-50% of the chain's length, and urgent (priority
  raised to at least a draw from 5-10); 40% loose, slack 100-300%, moved down to the last 18:00 UTC
  (end of a working day) that still leaves the earliest end on time. Capped at the horizon.

Family `trace`: jobs and inference shape drawn from two public traces (`../shared/traces/`).

- Jobs: `size.jobs` consecutive jobs of `jobs_msitp_cluster02.csv` from a seeded position,
  skipping jobs whose gang the cluster cannot place (e.g. 64 GPUs on small). Gang sizes are real.
  Run times are real, taken as the run time on h100 (the trace has no GPU type), capped at 40% of
  the horizon and rounded to slots (at least one); a100 is 1.5-2x and l40s 2-3x slower, drawn per
  job as in enterprise. Arrivals are real: times since the first chosen job, kept as they are when
  they fit in the first 60% of the horizon, else compressed linearly into it (order, bursts and
  lulls kept; the rate raised).
- Not in the trace, filled in: priority from enterprise's distribution (1-10, skewed low); kind
  from gang size and run time (8+ GPUs or 4+ h: training; under 1 h: evaluation; else batch
  inference); allowed pools by enterprise's rules (multi-node training not on l40s, 12% h100-only,
  5% a100-only); deadlines on a third of the jobs, as in enterprise. No dependencies (none in the
  trace), so no quantization jobs.
- Inference: the enterprise services (pools, replica sizes, peak at 48% of the GPUs, headroom 0.1),
  but each demand series is the request rate of one ServeGen model (service k: `m-mid`, `m-small`,
  `deepseek-r1`, in turn) from a seeded day of `inference_servegen.csv`, from 00:00, wrapping
  around at the trace's end; collection gaps (`gap` = 1) are interpolated; 10-minute windows are
  averaged per slot. The per-replica throughput is chosen so that the series' maximum needs the
  service's peak replicas: the shape (daily cycle, bursts, peak/trough) is the trace's, the level
  is the cluster's.
- Load is whatever the real jobs bring: usually well under the synthetic families' (batch load
  over seeds 0-9: small median 0.8, medium 0.4, large 0.2), so this family shows gains when the
  queue is not overfull.
- The CSVs are not in the repository: `generate(..., traces=DIR)`, `--traces DIR`, the
  `HORIZON_OPT_TRACES` variable, or by default `../shared/traces` beside the repository root.
  Instances written from them are self-contained YAML (demand inline), with this attribution:

  Jobs: Microsoft ITP cluster02 trace, 2021 (used by ElasticFlow, ASPLOS 2023), from
  microsoft/elasticflow-traces, commit 277ed24d0e908c31a1c98145819e2e3853d8ac00, MIT licence,
  Copyright (c) Microsoft Corporation. Inference demand shape: Alibaba Model Studio ServeGen
  trace, 2025, from alibaba/ServeGen, commit f891d1189eb32b3868dfc443800c4150548c282a, Apache-2.0.
"""

from __future__ import annotations

import csv
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import yaml

from horizon_opt.io import write_atomic

Rng = np.random.Generator
IntArray = npt.NDArray[np.int64]
InstanceData = dict[str, Any]
ShapeFn = Callable[["Size", Rng, float, int], list[float]]  # (size, rng, peak, k) -> demand
PoolsFn = Callable[["Size", Rng, str, int, dict[str, int]], dict[str, float]]
TimesFn = Callable[["Size", Rng, list["_Job"]], None]

START = datetime(2026, 12, 1, tzinfo=UTC)  # a Tuesday, 00:00 UTC: slot 0 of every instance


@dataclass(frozen=True)
class PoolShape:
    name: str
    gpu_type: str
    nodes: int
    gpus_per_node: int = 8


@dataclass(frozen=True)
class Size:
    pools: tuple[PoolShape, ...]
    jobs: int
    slots: int
    slot_minutes: int
    services: int
    outages: int

    @property
    def gpus(self) -> int:
        return sum(p.nodes * p.gpus_per_node for p in self.pools)

    @property
    def hours(self) -> float:
        return self.slots * self.slot_minutes / 60


def _cluster(h100: int, a100: int = 0, l40s: int = 0) -> tuple[PoolShape, ...]:
    shapes = [
        PoolShape("h100", "H100-80GB-SXM", h100),
        PoolShape("a100", "A100-80GB-SXM", a100),
        PoolShape("l40s", "L40S-48GB-PCIe", l40s),
    ]
    return tuple(p for p in shapes if p.nodes > 0)


SIZES: dict[str, Size] = {
    "small": Size(_cluster(4), jobs=40, slots=48, slot_minutes=30, services=2, outages=1),
    "medium": Size(_cluster(12, 10, 6), jobs=300, slots=96, slot_minutes=30, services=3, outages=2),
    "large": Size(
        _cluster(64, 40, 24), jobs=1500, slots=192, slot_minutes=60, services=5, outages=4
    ),
    "xl": Size(
        _cluster(256, 160, 96), jobs=5000, slots=672, slot_minutes=60, services=8, outages=12
    ),
}

# Slowdown of each GPU type against h100 (uniform range, drawn per job).
SLOWDOWN: dict[str, tuple[float, float]] = {
    "h100": (1.0, 1.0),
    "a100": (1.5, 2.0),
    "l40s": (2.0, 3.0),
}


# -- inference ---------------------------------------------------------------------------------


def daily_cycle(
    size: Size, rng: Rng, peak: float, trough_ratio: float, peak_hour: float
) -> list[float]:
    """Forecast replicas per slot: cosine day (peak at `peak_hour`), noise, lighter weekends.

    Rescaled so that its maximum is exactly `peak`; rounded to two decimals."""
    hours = np.arange(size.slots) * size.slot_minutes / 60
    shape = 0.5 * (1 + np.cos(2 * np.pi * (hours - peak_hour) / 24))
    series = trough_ratio + (1 - trough_ratio) * shape
    series *= 1 + rng.normal(0.0, 0.04, size.slots)
    if size.hours > 48:
        weekday = np.array([(START + timedelta(hours=float(h))).weekday() for h in hours])
        series *= np.where(weekday >= 5, 0.8, 1.0)
    series = np.clip(series, 0.05, None)
    series *= peak / series.max()
    return [round(float(v), 2) for v in series]


def required(demand: list[float], headroom: float) -> list[int]:
    """FORMAT.md's req[v][t] = ceil(demand * (1 + headroom) - 1e-9)."""
    return [math.ceil(d * (1 + headroom) - 1e-9) for d in demand]


SERVICE_NAMES = (
    "chat",
    "search-embed",
    "code-assist",
    "rerank",
    "summarize",
    "translate",
    "moderation",
    "voice",
)


def make_services(
    size: Size,
    rng: Rng,
    peak_share: float = 0.48,
    headroom: float = 0.1,
    shape: ShapeFn | None = None,
) -> list[InstanceData]:
    """Services on the one or two first pools, forecast peaks adding up to `peak_share` of GPUs.

    Demand follows `daily_cycle` unless `shape(size, rng, peak, k)` gives service k's series."""
    hosts = list(size.pools[: min(2, len(size.pools))])
    host_gpus = sum(p.nodes * p.gpus_per_node for p in hosts)
    fraction = min(0.7, peak_share * size.gpus / host_gpus)  # of each host pool, at the peak
    services: list[InstanceData] = []
    for k, pool in enumerate(hosts):
        count = len(range(k, size.services, len(hosts)))  # round-robin over the host pools
        shares = rng.dirichlet(np.full(count, 4.0))
        budget = fraction * pool.nodes * pool.gpus_per_node
        for share in shares:
            gpus = float(share) * budget
            sizes = [g for g in (1, 2, 4, 8) if pool.gpus_per_node % g == 0 and gpus / g >= 4]
            gpr = int(rng.choice(sizes or [1]))
            k_name = len(services)
            if shape is not None:
                demand = shape(size, rng, gpus / gpr, k_name)
            else:
                demand = daily_cycle(
                    size,
                    rng,
                    peak=gpus / gpr,
                    trough_ratio=float(rng.uniform(0.28, 0.38)),
                    peak_hour=float(rng.uniform(11, 15)),
                )
            services.append(
                {
                    "name": SERVICE_NAMES[k_name]
                    if k_name < len(SERVICE_NAMES)
                    else f"svc-{k_name}",
                    "pool": pool.name,
                    "gpus_per_replica": gpr,
                    "headroom": headroom,
                    "demand": demand,
                }
            )
    return services


def reservation(size: Size, services: list[InstanceData]) -> dict[str, IntArray]:
    """GPUs reserved for inference per pool and slot (req x gpus_per_replica)."""
    out = {p.name: np.zeros(size.slots, dtype=np.int64) for p in size.pools}
    for s in services:
        out[s["pool"]] += np.array(required(s["demand"], s["headroom"])) * s["gpus_per_replica"]
    return out


def make_outages(
    size: Size, rng: Rng, reserved: dict[str, IntArray]
) -> tuple[list[InstanceData], dict[str, IntArray]]:
    """Maintenance windows that never leave inference short. Returns them and nodes up per pool."""
    up = {p.name: np.full(size.slots, p.nodes, dtype=np.int64) for p in size.pools}
    by_node: set[str] = set()
    outages: list[InstanceData] = []
    weights = np.array([p.nodes for p in size.pools], dtype=np.float64)
    for _ in range(size.outages):
        pool = size.pools[int(rng.choice(len(size.pools), p=weights / weights.sum()))]
        node = f"{pool.name}-{int(rng.integers(pool.nodes))}"
        length = max(1, round(float(rng.uniform(4, 24)) * 60 / size.slot_minutes))
        start = int(rng.integers(0, max(1, size.slots - length)))
        end = min(size.slots, start + length)
        trial = up[pool.name].copy()
        trial[start:end] -= 1
        # Replica sizes are powers of two dividing the node, so first-fit decreasing packs them
        # perfectly: the total is the only test needed.
        if node in by_node or np.any(reserved[pool.name] > trial * pool.gpus_per_node):
            continue
        by_node.add(node)
        up[pool.name] = trial
        outages.append({"node": node, "start": start, "end": end})
    return outages, up


# -- jobs --------------------------------------------------------------------------------------


@dataclass
class _Job:
    id: str
    kind: str
    priority: int
    gpus: int
    speed: dict[str, float]  # allowed pool -> slowdown against h100
    hours: float  # duration on h100 (reference), before rounding
    scalable: bool  # training / batch inference: scaled to reach the target load
    release: int = 0
    after: str | None = None
    deadline: int | None = None
    durations: dict[str, int] | None = None  # final slots per pool, once the load is scaled


PRIORITY_WEIGHTS = np.array([22, 20, 16, 12, 9, 7, 5, 4, 3, 2], dtype=np.float64)
TRAIN_GPUS = ((1, 0.15), (2, 0.10), (4, 0.15), (8, 0.30), (16, 0.18), (32, 0.12))
BATCH_GPUS = ((1, 0.20), (2, 0.25), (4, 0.25), (8, 0.22), (16, 0.08))


def _priority(rng: Rng) -> int:
    return int(rng.choice(10, p=PRIORITY_WEIGHTS / PRIORITY_WEIGHTS.sum())) + 1


def _gang_nodes_limit(size: Size, reserved: dict[str, IntArray]) -> dict[str, int]:
    """Most whole nodes a gang can take on each pool beside inference at its trough."""
    return {
        p.name: p.nodes - math.ceil(int(reserved[p.name].min()) / p.gpus_per_node)
        for p in size.pools
    }


def _placeable(pool: PoolShape, gpus: int, limit: int) -> bool:
    g = pool.gpus_per_node
    return gpus <= g or (gpus % g == 0 and gpus // g <= limit)


def _pools_for(
    size: Size, rng: Rng, kind: str, gpus: int, limits: dict[str, int]
) -> dict[str, float]:
    """Allowed pools (with their slowdown) under the family's restriction rules."""
    names = [p.name for p in size.pools]
    allowed = set(names)
    if kind == "training" and gpus > 8:
        allowed.discard("l40s")  # no multi-node training on PCIe nodes
    elif kind == "training" and gpus == 8 and rng.random() < 0.5:
        allowed.discard("l40s")
    draw = rng.random()
    if "h100" in allowed and (draw < 0.12 or (kind == "quantization" and draw < 0.4)):
        allowed = {"h100"}
    elif "a100" in allowed and draw > 0.95:
        allowed = {"a100"}
    placeable = [p for p in size.pools if p.name in allowed and _placeable(p, gpus, limits[p.name])]
    if not placeable:  # the restriction left nothing: fall back to any pool that can place it
        placeable = [p for p in size.pools if _placeable(p, gpus, limits[p.name])]
    return {p.name: float(rng.uniform(*SLOWDOWN.get(p.name, (1.0, 1.0)))) for p in placeable}


def _choose_gpus(
    size: Size, rng: Rng, table: tuple[tuple[int, float], ...], limits: dict[str, int]
) -> int:
    options = [
        (g, w) for g, w in table if any(_placeable(p, g, limits[p.name]) for p in size.pools)
    ]
    weights = np.array([w for _, w in options])
    return int(options[int(rng.choice(len(options), p=weights / weights.sum()))][0])


def _release_slot(size: Size, rng: Rng) -> int:
    """Backlog at slot 0 (10%), else the first 60% of the horizon, denser in working hours."""
    if rng.random() < 0.1:
        return 0
    last = max(1, int(0.6 * size.slots))
    hours = np.arange(last) * size.slot_minutes / 60
    weight = 1.0 + 0.8 * np.cos(2 * np.pi * (hours - 13) / 24)
    return int(rng.choice(last, p=weight / weight.sum()))


def _slots(size: Size, hours: float) -> int:
    return max(1, round(hours * 60 / size.slot_minutes))


def _durations(size: Size, job: _Job, scale: float) -> dict[str, int]:
    """Duration in slots per allowed pool; a pool where the job would take > 80% is dropped."""
    hours = job.hours * scale if job.scalable else job.hours
    fastest = min(job.speed.values())
    cap = 0.4 * size.hours / fastest  # at most 40% of the horizon on the fastest pool
    hours = min(hours, cap)
    out: dict[str, int] = {}
    previous = (0.0, 0)  # (slowdown, slots) of the next faster pool: a slower pool takes longer
    for name, slow in sorted(job.speed.items(), key=lambda item: item[1]):
        slots = _slots(size, hours * slow)
        if slow > previous[0] and previous[1]:
            slots = max(slots, previous[1] + 1)
        out[name] = slots
        previous = (slow, slots)
    out = {name: out[name] for name in job.speed}  # pool order
    kept = {name: d for name, d in out.items() if d <= 0.8 * size.slots}
    return kept or {min(out, key=lambda n: out[n]): min(out.values())}


def _work_hours(size: Size, jobs: list[_Job], scale: float) -> float:
    h = size.slot_minutes / 60
    return sum(j.gpus * min(_durations(size, j, scale).values()) * h for j in jobs)


def make_jobs(
    size: Size,
    rng: Rng,
    reserved: dict[str, IntArray],
    left_gpu_hours: float,
    load: float,
    pools_for: PoolsFn | None = None,
    add_times: TimesFn | None = None,
) -> list[_Job]:
    """The enterprise job mix (see the module docstring). `pools_for` (allowed pools and their
    slowdowns) and `add_times` (dependent releases and deadlines) default to enterprise's rules."""
    pools_for = pools_for or _pools_for
    add_times = add_times or _add_times
    n = size.jobs
    n_quant = round(0.15 * n)
    n_eval = round(0.17 * n)
    n_batch = round(0.25 * n)
    n_train = n - n_quant - n_eval - n_batch
    limits = _gang_nodes_limit(size, reserved)
    width = len(str(n))
    counter = iter(range(1, n + 1))

    def new_id(prefix: str) -> str:
        return f"{prefix}-{next(counter):0{width}d}"

    roots: list[_Job] = []
    for _ in range(n_train):
        gpus = _choose_gpus(size, rng, TRAIN_GPUS, limits)
        base = float(rng.lognormal(0.0, 0.9)) * (1 + math.log2(gpus) / 5)
        job = _Job(
            new_id("train"),
            "training",
            _priority(rng),
            gpus,
            pools_for(size, rng, "training", gpus, limits),
            base,
            scalable=True,
        )
        roots.append(job)
    for _ in range(n_batch):
        gpus = _choose_gpus(size, rng, BATCH_GPUS, limits)
        base = float(rng.lognormal(-0.3, 0.7))
        job = _Job(
            new_id("bi"),
            "batch_inference",
            _priority(rng),
            gpus,
            pools_for(size, rng, "batch_inference", gpus, limits),
            base,
            scalable=True,
        )
        roots.append(job)
    order = rng.permutation(len(roots))
    roots = [roots[i] for i in order]
    for job in roots:
        job.release = _release_slot(size, rng)

    trainings = [j for j in roots if j.kind == "training"]
    weights = np.array([j.gpus for j in trainings], dtype=np.float64)
    picks = rng.choice(len(trainings), size=n_quant, replace=False, p=weights / weights.sum())
    quants: list[_Job] = []
    for i in picks:
        parent = trainings[int(i)]
        gpus = min(8, max(1, parent.gpus // 2))
        quants.append(
            _Job(
                new_id("quant"),
                "quantization",
                parent.priority,
                gpus,
                pools_for(size, rng, "quantization", gpus, limits),
                float(rng.uniform(1.0, 3.0)),
                scalable=False,
                after=parent.id,
            )
        )
    evals: list[_Job] = []
    for _ in range(n_eval):
        if quants and rng.random() < 2 / 3:
            parent = quants[int(rng.integers(len(quants)))]
        else:
            parent = trainings[int(rng.integers(len(trainings)))]
        gpus = int(rng.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
        evals.append(
            _Job(
                new_id("eval"),
                "evaluation",
                parent.priority,
                gpus,
                pools_for(size, rng, "evaluation", gpus, limits),
                float(rng.uniform(1.0, 6.0)),
                scalable=False,
                after=parent.id,
            )
        )
    jobs = roots + quants + evals

    # Scale training and batch-inference durations to the target load (a few fixed-point steps:
    # rounding and the 40% cap make the load a step function of the scale).
    target = load * left_gpu_hours
    fixed = _work_hours(size, quants + evals, 1.0)
    scale = 1.0
    for _ in range(8):
        scalable = _work_hours(size, roots, scale)
        scale *= max(target - fixed, 1.0) / max(scalable, 1e-9)

    for j in jobs:
        j.durations = _durations(size, j, scale)
    add_times(size, rng, jobs)
    # File order: by release, then creation order (which puts a job after the job it runs after).
    # Ids are numbered in file order.
    position = {j.id: k for k, j in enumerate(jobs)}
    jobs.sort(key=lambda j: (j.release, position[j.id]))
    renamed = {j.id: f"{j.id.split('-')[0]}-{k:0{width}d}" for k, j in enumerate(jobs, start=1)}
    for j in jobs:
        j.id = renamed[j.id]
        j.after = None if j.after is None else renamed[j.after]
    return jobs


def _dependent_releases(size: Size, jobs: list[_Job]) -> tuple[dict[str, int], dict[str, int]]:
    """Release each dependent job at its `after` job's earliest end (at most the last slot).

    Returns each job's earliest end and the release of the first job of its chain."""
    earliest_end: dict[str, int] = {}
    chain_start: dict[str, int] = {}
    for j in jobs:  # parents come before their dependents in `jobs`
        assert j.durations is not None
        if j.after is None:
            chain_start[j.id] = j.release
        else:
            chain_start[j.id] = chain_start[j.after]
            j.release = min(earliest_end[j.after], size.slots - 1)
        earliest_end[j.id] = j.release + min(j.durations.values())
    return earliest_end, chain_start


def _add_times(size: Size, rng: Rng, jobs: list[_Job]) -> None:
    """Releases of dependent jobs and deadlines on about a third of the jobs.

    A dependent job is submitted when its `after` job would end if it ran at once (its earliest
    end; at most the last slot). A deadline is achievable if the job's chain runs at once."""
    earliest_end, chain_start = _dependent_releases(size, jobs)
    wanted = round(len(jobs) / 3)
    for k in rng.permutation(len(jobs)):
        if wanted == 0:
            break
        j = jobs[int(k)]
        ee = earliest_end[j.id]
        if ee > size.slots:
            continue
        slack = float(rng.uniform(0.3, 2.0)) * (ee - chain_start[j.id])
        j.deadline = min(size.slots, ee + math.ceil(slack))
        wanted -= 1


def _job_data(size: Size, job: _Job) -> InstanceData:
    durations = job.durations
    assert durations is not None
    out: InstanceData = {"id": job.id, "kind": job.kind, "priority": job.priority, "gpus": job.gpus}
    if len(size.pools) == 1:
        out["duration"] = next(iter(durations.values()))
    else:
        out["duration"] = durations
    if job.release:
        out["release"] = job.release
    if job.deadline is not None:
        out["deadline"] = job.deadline
    if job.after is not None:
        out["after"] = [job.after]
    return out


# -- families ----------------------------------------------------------------------------------


class GeneratorError(ValueError):
    """A generator request that cannot be met: unknown family or size, missing trace files."""


class FamilyFn(Protocol):
    def __call__(
        self, name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
    ) -> InstanceData: ...


def _left_gpu_hours(size: Size, up: dict[str, IntArray], reserved: dict[str, IntArray]) -> float:
    """GPU-hours that inference (the per-slot reservation) leaves to batch work."""
    h = size.slot_minutes / 60
    available = sum(float(up[p.name].sum()) * p.gpus_per_node for p in size.pools) * h
    return available - sum(float(r.sum()) for r in reserved.values()) * h


def _instance(
    name: str,
    size: Size,
    outages: list[InstanceData],
    services: list[InstanceData],
    jobs: list[_Job],
) -> InstanceData:
    return {
        "name": name,
        "horizon": {
            "slots": size.slots,
            "slot_minutes": size.slot_minutes,
            "start": START.isoformat().replace("+00:00", "Z"),
        },
        "pools": [
            {
                "name": p.name,
                "gpu_type": p.gpu_type,
                "nodes": p.nodes,
                "gpus_per_node": p.gpus_per_node,
            }
            for p in size.pools
        ],
        "outages": outages,
        "services": services,
        "jobs": [_job_data(size, j) for j in jobs],
    }


def enterprise(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Inference-heavy company cluster; see the module docstring."""
    return _synthetic(name, size, rng, peak_share=0.48, load=2.0)


def _synthetic(
    name: str,
    size: Size,
    rng: Rng,
    *,
    peak_share: float,
    load: float,
    pools_for: PoolsFn | None = None,
    add_times: TimesFn | None = None,
) -> InstanceData:
    """The synthetic families' common recipe: services, outages, then `load` x the GPU-hours
    they leave as jobs (`pools_for`, `add_times`: see `make_jobs`)."""
    services = make_services(size, rng, peak_share=peak_share)
    reserved = reservation(size, services)
    outages, up = make_outages(size, rng, reserved)
    left = _left_gpu_hours(size, up, reserved)
    jobs = make_jobs(size, rng, reserved, left, load, pools_for, add_times)
    return _instance(name, size, outages, services, jobs)


# -- hetero ------------------------------------------------------------------------------------

HETERO_TYPES = (("h100", "H100-80GB-SXM"), ("a100", "A100-80GB-SXM"), ("v100", "V100-32GB-SXM2"))


def hetero_size(size: Size) -> Size:
    """The size's nodes over three GPU generations (h100, a100, v100).

    Sizes with three pools keep their node counts (v100 in place of l40s); a one-pool size of
    n nodes becomes n - 2k, k, k with k = max(1, n // 4) (small: 2, 1, 1)."""
    counts = [p.nodes for p in size.pools]
    if len(counts) != len(HETERO_TYPES):
        n = sum(counts)
        older = max(1, n // 4)
        counts = [n - 2 * older, older, older]
    pools = tuple(
        PoolShape(name, gpu_type, nodes)
        for (name, gpu_type), nodes in zip(HETERO_TYPES, counts, strict=True)
    )
    return replace(size, pools=pools)


def _hetero_pools_for(
    size: Size, rng: Rng, kind: str, gpus: int, limits: dict[str, int]
) -> dict[str, float]:
    """Per-job slowdowns (two draws in [1.5, 3], the older generation the slower) and pools."""
    older = np.sort(rng.uniform(1.5, 3.0, size=2))
    slowdown = {"h100": 1.0, "a100": float(older[0]), "v100": float(older[1])}
    fp8, draw = float(rng.random()), float(rng.random())
    allowed = set(slowdown)
    if gpus >= 16 or (kind == "batch_inference" and gpus >= 8):
        allowed.discard("v100")  # the model does not fit in 32 GB per GPU
    if kind == "quantization" and fp8 < 0.4:
        allowed = {"h100"}  # FP8 needs Hopper
    elif draw < 0.10:
        allowed.discard("h100")  # legacy container image built without sm_90 (Hopper) support
    elif draw < 0.18:
        pinned = sorted(allowed)
        allowed = {pinned[int(rng.integers(len(pinned)))]}  # data locality or a team's quota
    placeable = [p for p in size.pools if p.name in allowed and _placeable(p, gpus, limits[p.name])]
    if not placeable:  # the restriction left nothing: fall back to any pool that can place it
        placeable = [p for p in size.pools if _placeable(p, gpus, limits[p.name])]
    return {p.name: slowdown[p.name] for p in placeable}


def hetero(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Three GPU generations, per-job slowdowns and allowed pools; see the module docstring."""
    return _synthetic(
        name, hetero_size(size), rng, peak_share=0.35, load=2.0, pools_for=_hetero_pools_for
    )


# -- deadline ----------------------------------------------------------------------------------

DEADLINE_SHARE = 0.85  # of jobs with a deadline
TIGHT_SHARE = 0.45  # of jobs with a tight one
END_OF_DAY_HOUR = 18  # loose deadlines snap down to the last 18:00 UTC that still allows them


def _deadline_times(size: Size, rng: Rng, jobs: list[_Job]) -> None:
    """Deadlines on 85% of the jobs: 45% tight (slack 10-50% of the chain), 40% loose (100-300%,
    snapped to the end of a working day when one fits); tight jobs are urgent (priority >= 5-10)."""
    earliest_end, chain_start = _dependent_releases(size, jobs)
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
    """Most jobs due, tight and loose, so value depends on timing; see the module docstring."""
    return _synthetic(name, size, rng, peak_share=0.4, load=1.5, add_times=_deadline_times)


# -- trace -------------------------------------------------------------------------------------

TRACES_ENV = "HORIZON_OPT_TRACES"
TRACE_JOBS_FILE = "jobs_msitp_cluster02.csv"
TRACE_INFERENCE_FILE = "inference_servegen.csv"
TRACE_MODELS = ("m-mid", "m-small", "deepseek-r1")  # service k follows model k mod 3
TRACE_WINDOW_MINUTES = 10
TRACE_ATTRIBUTION = """\
Jobs (gang sizes, run times, arrivals): Microsoft ITP cluster02 trace, 2021 (used by ElasticFlow,
ASPLOS 2023), from microsoft/elasticflow-traces, commit 277ed24d0e908c31a1c98145819e2e3853d8ac00,
MIT licence, Copyright (c) Microsoft Corporation.
Inference demand shape: Alibaba Model Studio ServeGen trace, 2025, from alibaba/ServeGen, commit
f891d1189eb32b3868dfc443800c4150548c282a, Apache-2.0 licence.
"""

FloatArray = npt.NDArray[np.float64]


def default_traces_dir() -> Path:
    """`../shared/traces` relative to the repository root (this file is src/horizon_opt/...)."""
    return Path(__file__).resolve().parents[3] / "shared" / "traces"


def find_traces(traces: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds both trace CSVs: `traces` if given, else $HORIZON_OPT_TRACES, else
    `../shared/traces` beside the repository (or beside the working directory)."""
    if traces is not None:
        candidates = [Path(traces)]
    elif os.environ.get(TRACES_ENV):
        candidates = [Path(os.environ[TRACES_ENV])]
    else:
        candidates = list(
            dict.fromkeys([default_traces_dir(), Path.cwd().resolve().parent / "shared" / "traces"])
        )
    for folder in candidates:
        if (folder / TRACE_JOBS_FILE).is_file() and (folder / TRACE_INFERENCE_FILE).is_file():
            return folder
    looked = ", ".join(str(c) for c in candidates)
    raise GeneratorError(
        f"family 'trace' needs {TRACE_JOBS_FILE} and {TRACE_INFERENCE_FILE}; not found in {looked}. "
        f"Point to the folder with --traces DIR or the {TRACES_ENV} environment variable."
    )


@dataclass(frozen=True)
class TraceJobs:
    submit_s: IntArray
    gpus: IntArray
    duration_s: IntArray


def _read_csv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError as exc:
        raise GeneratorError(f"cannot read {path}: {exc.strerror}") from None


@functools.lru_cache(maxsize=4)
def load_trace_jobs(folder: str) -> TraceJobs:
    """The job trace's columns, in submission order (read once per folder)."""
    path = Path(folder) / TRACE_JOBS_FILE
    rows = _read_csv(path)
    try:
        out = TraceJobs(
            np.array([int(r["submit_time_s"]) for r in rows], dtype=np.int64),
            np.array([int(r["num_gpus"]) for r in rows], dtype=np.int64),
            np.array([int(r["duration_s"]) for r in rows], dtype=np.int64),
        )
    except (KeyError, ValueError) as exc:
        raise GeneratorError(f"{path}: unexpected content ({exc})") from None
    order = np.argsort(out.submit_s, kind="stable")
    arrays = [a[order] for a in (out.submit_s, out.gpus, out.duration_s)]
    for a in arrays:
        a.flags.writeable = False
    return TraceJobs(*arrays)


@functools.lru_cache(maxsize=4)
def load_trace_inference(folder: str) -> dict[str, FloatArray]:
    """Request rate per 10-minute window for each model; collection gaps (`gap` = 1, every
    client silent) are filled by linear interpolation between the neighbouring windows."""
    path = Path(folder) / TRACE_INFERENCE_FILE
    rows = _read_csv(path)
    out: dict[str, FloatArray] = {}
    try:
        for model in TRACE_MODELS:
            mine = sorted((int(r["time_s"]), r) for r in rows if r["model"] == model)
            rate = np.array([float(r["rate_rps"]) for _, r in mine])
            gap = np.array([r["gap"] == "1" for _, r in mine])
            if not len(rate) or gap.all():
                raise GeneratorError(f"{path}: no usable rows for model {model!r}")
            x = np.arange(len(rate))
            rate = np.interp(x, x[~gap], rate[~gap])
            rate.flags.writeable = False
            out[model] = rate
    except (KeyError, ValueError) as exc:
        raise GeneratorError(f"{path}: unexpected content ({exc})") from None
    return out


def _trace_shape(rates: dict[str, FloatArray]) -> ShapeFn:
    """Demand of service k: model k mod 3's request rate from a seeded day of the trace (wrapping
    around at its end), averaged per slot and scaled so that its maximum is the service's peak."""

    def shape(size: Size, rng: Rng, peak: float, k: int) -> list[float]:
        series = rates[TRACE_MODELS[k % len(TRACE_MODELS)]]
        per_day = 24 * 60 // TRACE_WINDOW_MINUTES
        first = int(rng.integers(max(1, len(series) // per_day))) * per_day
        if size.slot_minutes % TRACE_WINDOW_MINUTES:
            raise GeneratorError(f"slot_minutes must be a multiple of {TRACE_WINDOW_MINUTES}")
        per_slot = size.slot_minutes // TRACE_WINDOW_MINUTES
        idx = (first + np.arange(size.slots * per_slot)) % len(series)
        demand = series[idx].reshape(size.slots, per_slot).mean(axis=1)
        demand *= peak / max(float(demand.max()), 1e-9)
        return [round(float(v), 2) for v in demand]

    return shape


def trace_kind(gpus: int, hours: float) -> str:
    """The trace has no job kind: 8+ GPUs or 4+ hours is training, under an hour evaluation,
    anything else batch inference."""
    if gpus >= 8 or hours >= 4:
        return "training"
    if hours < 1:
        return "evaluation"
    return "batch_inference"


_KIND_PREFIX = {"training": "train", "batch_inference": "bi", "evaluation": "eval"}


def _trace_jobs(
    size: Size, rng: Rng, reserved: dict[str, IntArray], trace: TraceJobs
) -> list[_Job]:
    """`size.jobs` consecutive trace jobs (from a seeded position) whose gang the cluster can
    place; real gang sizes, run times (on h100) and arrivals (compressed to the first 60% of
    the horizon when they span more)."""
    limits = _gang_nodes_limit(size, reserved)
    fits = {
        int(g): any(_placeable(p, int(g), limits[p.name]) for p in size.pools)
        for g in np.unique(trace.gpus)
    }
    idx = np.flatnonzero([fits[int(g)] for g in trace.gpus])
    n = size.jobs
    if len(idx) < n:
        raise GeneratorError(f"the job trace has only {len(idx)} placeable jobs, {n} needed")
    chosen = idx[int(rng.integers(0, len(idx) - n + 1)) :][:n]
    seconds = trace.submit_s[chosen] - trace.submit_s[chosen[0]]
    slots = seconds / (60 * size.slot_minutes)
    last = max(1, int(0.6 * size.slots)) - 1  # latest release slot
    if slots[-1] > last:
        slots = slots * (last / slots[-1])
    releases = np.floor(slots + 1e-9).astype(np.int64)
    width = len(str(n))
    jobs: list[_Job] = []
    for k, (i, release) in enumerate(zip(chosen, releases, strict=True), start=1):
        gpus = int(trace.gpus[i])
        hours = float(trace.duration_s[i]) / 3600
        kind = trace_kind(gpus, hours)
        job = _Job(
            f"{_KIND_PREFIX[kind]}-{k:0{width}d}",
            kind,
            _priority(rng),
            gpus,
            _pools_for(size, rng, kind, gpus, limits),
            hours,
            scalable=False,
            release=int(release),
        )
        job.durations = _durations(size, job, 1.0)
        jobs.append(job)
    _add_times(size, rng, jobs)
    return jobs


def trace(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Jobs and inference shape from the public traces; see the module docstring."""
    folder = str(find_traces(traces))
    services = make_services(size, rng, shape=_trace_shape(load_trace_inference(folder)))
    reserved = reservation(size, services)
    outages, _up = make_outages(size, rng, reserved)
    jobs = _trace_jobs(size, rng, reserved, load_trace_jobs(folder))
    return _instance(name, size, outages, services, jobs)


FAMILIES: dict[str, FamilyFn] = {
    "enterprise": enterprise,
    "hetero": hetero,
    "deadline": deadline,
    "trace": trace,
}

# Comment lines written at the top of an instance file of the family (attribution of sources).
NOTES: dict[str, str] = {"trace": TRACE_ATTRIBUTION}


def generate(
    family: str, size: str, seed: int, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Instance data for (family, size, seed): a plain dict following FORMAT.md.

    `traces` is the folder of the trace CSVs (family `trace` only; see `find_traces`)."""
    if family not in FAMILIES:
        raise GeneratorError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise GeneratorError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    rng = np.random.default_rng(seed)
    return FAMILIES[family](f"{family}-{size}-s{seed}", SIZES[size], rng, traces=traces)


def write_instance(data: InstanceData, path: str | os.PathLike[str], note: str = "") -> None:
    """Write instance data as YAML, atomically (readers never see half a file). `note` becomes
    comment lines after the header (e.g. the sources of a trace instance)."""
    # Block style for the structure, flow style for leaves (durations, demand, outages, short jobs).
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    header = f"# {data.get('name', 'instance')}: generated by horizon_opt.generate (FORMAT.md v1)\n"
    header += "".join(f"# {line}".rstrip() + "\n" for line in note.splitlines())
    write_atomic(path, header + text)


def generate_file(
    family: str,
    size: str,
    seed: int,
    path: str | os.PathLike[str],
    *,
    traces: str | os.PathLike[str] | None = None,
) -> InstanceData:
    """Generate an instance and write it (with the family's notes) to `path`; returns the data."""
    data = generate(family, size, seed, traces=traces)
    write_instance(data, path, note=NOTES.get(family, ""))
    return data
