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

Families are small functions in the `FAMILIES` registry, `(name, size, rng) -> dict`.

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
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from horizon_opt.io import write_atomic

Rng = np.random.Generator
IntArray = npt.NDArray[np.int64]
InstanceData = dict[str, Any]
FamilyFn = Callable[[str, "Size", Rng], InstanceData]

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
    size: Size, rng: Rng, peak_share: float = 0.48, headroom: float = 0.1
) -> list[InstanceData]:
    """Services on the one or two first pools, forecast peaks adding up to `peak_share` of GPUs."""
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
            demand = daily_cycle(
                size,
                rng,
                peak=gpus / gpr,
                trough_ratio=float(rng.uniform(0.28, 0.38)),
                peak_hour=float(rng.uniform(11, 15)),
            )
            k_name = len(services)
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
    size: Size, rng: Rng, reserved: dict[str, IntArray], left_gpu_hours: float, load: float
) -> list[_Job]:
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
            _pools_for(size, rng, "training", gpus, limits),
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
            _pools_for(size, rng, "batch_inference", gpus, limits),
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
                _pools_for(size, rng, "quantization", gpus, limits),
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
                _pools_for(size, rng, "evaluation", gpus, limits),
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
    _add_times(size, rng, jobs)
    # File order: by release, then creation order (which puts a job after the job it runs after).
    # Ids are numbered in file order.
    position = {j.id: k for k, j in enumerate(jobs)}
    jobs.sort(key=lambda j: (j.release, position[j.id]))
    renamed = {j.id: f"{j.id.split('-')[0]}-{k:0{width}d}" for k, j in enumerate(jobs, start=1)}
    for j in jobs:
        j.id = renamed[j.id]
        j.after = None if j.after is None else renamed[j.after]
    return jobs


def _add_times(size: Size, rng: Rng, jobs: list[_Job]) -> None:
    """Releases of dependent jobs and deadlines on about a third of the jobs.

    A dependent job is submitted when its `after` job would end if it ran at once (its earliest
    end; at most the last slot). A deadline is achievable if the job's chain runs at once."""
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


def enterprise(name: str, size: Size, rng: Rng) -> InstanceData:
    """Inference-heavy company cluster; see the module docstring."""
    services = make_services(size, rng)
    reserved = reservation(size, services)
    outages, up = make_outages(size, rng, reserved)
    h = size.slot_minutes / 60
    available = sum(float(up[p.name].sum()) * p.gpus_per_node for p in size.pools) * h
    left = available - sum(float(r.sum()) for r in reserved.values()) * h
    jobs = make_jobs(size, rng, reserved, left, load=2.0)
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


FAMILIES: dict[str, FamilyFn] = {
    "enterprise": enterprise,
}


def generate(family: str, size: str, seed: int) -> InstanceData:
    """Instance data for (family, size, seed): a plain dict following FORMAT.md."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    rng = np.random.default_rng(seed)
    return FAMILIES[family](f"{family}-{size}-s{seed}", SIZES[size], rng)


def write_instance(data: InstanceData, path: str | os.PathLike[str]) -> None:
    """Write instance data as YAML, atomically (readers never see half a file)."""
    # Block style for the structure, flow style for leaves (durations, demand, outages, short jobs).
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    header = f"# {data.get('name', 'instance')}: generated by horizon_opt.generate (FORMAT.md v1)\n"
    write_atomic(path, header + text)
