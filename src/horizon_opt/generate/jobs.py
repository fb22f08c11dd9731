"""Batch jobs as the synthetic families draw them: mix, gangs, pools, durations, releases, deadlines.

The `trace` family reuses the per-job rules (priorities, allowed pools, durations, deadlines) for
what its trace does not record. File order is release order, and ids count in file order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from horizon_opt.generate.aliases import IntArray, Rng
from horizon_opt.generate.sizes import SLOWDOWN, PoolShape, Size


@dataclass
class Job:
    """A job while it is drawn: mutable, because releases, deadlines and ids are set last."""

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


# (size, rng, kind, gpus, gang limits) -> allowed pool -> slowdown
PoolsFn = Callable[[Size, Rng, str, int, dict[str, int]], dict[str, float]]
TimesFn = Callable[[Size, Rng, list[Job]], None]  # sets releases of dependents and deadlines

PRIORITY_WEIGHTS = np.array([22, 20, 16, 12, 9, 7, 5, 4, 3, 2], dtype=np.float64)
TRAIN_GPUS = ((1, 0.15), (2, 0.10), (4, 0.15), (8, 0.30), (16, 0.18), (32, 0.12))
BATCH_GPUS = ((1, 0.20), (2, 0.25), (4, 0.25), (8, 0.22), (16, 0.08))


def draw_priority(rng: Rng) -> int:
    """Priority 1-10, skewed low."""
    return int(rng.choice(10, p=PRIORITY_WEIGHTS / PRIORITY_WEIGHTS.sum())) + 1


def gang_nodes_limit(size: Size, reserved: dict[str, IntArray]) -> dict[str, int]:
    """Most whole nodes a gang can take on each pool beside inference at its trough."""
    return {
        p.name: p.nodes - math.ceil(int(reserved[p.name].min()) / p.gpus_per_node)
        for p in size.pools
    }


def placeable(pool: PoolShape, gpus: int, limit: int) -> bool:
    """Whether a gang fits the pool: within one node, or whole nodes up to `limit`."""
    g = pool.gpus_per_node
    return gpus <= g or (gpus % g == 0 and gpus // g <= limit)


def allowed_pools(
    size: Size, rng: Rng, kind: str, gpus: int, limits: dict[str, int]
) -> dict[str, float]:
    """Allowed pools (with their slowdown) under enterprise's restriction rules."""
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
    fits = [p for p in size.pools if p.name in allowed and placeable(p, gpus, limits[p.name])]
    if not fits:  # the restriction left nothing: fall back to any pool that can place it
        fits = [p for p in size.pools if placeable(p, gpus, limits[p.name])]
    return {p.name: float(rng.uniform(*SLOWDOWN.get(p.name, (1.0, 1.0)))) for p in fits}


def _choose_gpus(
    size: Size, rng: Rng, table: tuple[tuple[int, float], ...], limits: dict[str, int]
) -> int:
    """A gang size from `table` (size, weight), among those some pool can place."""
    options = [(g, w) for g, w in table if any(placeable(p, g, limits[p.name]) for p in size.pools)]
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


def pool_durations(size: Size, job: Job, scale: float) -> dict[str, int]:
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


def _work_hours(size: Size, jobs: list[Job], scale: float) -> float:
    """Batch load in GPU-hours: gpus x duration on each job's fastest pool."""
    h = size.slot_minutes / 60
    return sum(j.gpus * min(pool_durations(size, j, scale).values()) * h for j in jobs)


class _Draw:
    """What drawing one job mix shares: the random stream, the gang limits, the pool rule, and
    the counter behind the ids (one count across kinds, so ids are unique)."""

    def __init__(
        self, size: Size, rng: Rng, limits: dict[str, int], pools_for: PoolsFn, n: int
    ) -> None:
        self.size = size
        self.rng = rng
        self.limits = limits
        self.pools_for = pools_for
        self.width = len(str(n))
        self.counter = iter(range(1, n + 1))

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self.counter):0{self.width}d}"

    def pools(self, kind: str, gpus: int) -> dict[str, float]:
        return self.pools_for(self.size, self.rng, kind, gpus, self.limits)

    def roots(self, kind: str, count: int) -> list[Job]:
        """Training or batch-inference jobs: no predecessor, durations scaled to the load."""
        size, rng = self.size, self.rng
        out: list[Job] = []
        for _ in range(count):
            if kind == "training":
                gpus = _choose_gpus(size, rng, TRAIN_GPUS, self.limits)
                base = float(rng.lognormal(0.0, 0.9)) * (1 + math.log2(gpus) / 5)
                prefix = "train"
            else:
                gpus = _choose_gpus(size, rng, BATCH_GPUS, self.limits)
                base = float(rng.lognormal(-0.3, 0.7))
                prefix = "bi"
            job_id = self.new_id(prefix)
            priority = draw_priority(rng)
            out.append(
                Job(job_id, kind, priority, gpus, self.pools(kind, gpus), base, scalable=True)
            )
        return out

    def quantizations(self, trainings: list[Job], count: int) -> list[Job]:
        """Each after a training drawn by its GPUs (no training twice), on half its GPUs."""
        weights = np.array([j.gpus for j in trainings], dtype=np.float64)
        picks = self.rng.choice(
            len(trainings), size=count, replace=False, p=weights / weights.sum()
        )
        quants: list[Job] = []
        for i in picks:
            parent = trainings[int(i)]
            gpus = min(8, max(1, parent.gpus // 2))
            quants.append(
                Job(
                    self.new_id("quant"),
                    "quantization",
                    parent.priority,
                    gpus,
                    self.pools("quantization", gpus),
                    float(self.rng.uniform(1.0, 3.0)),
                    scalable=False,
                    after=parent.id,
                )
            )
        return quants

    def evaluations(self, quants: list[Job], trainings: list[Job], count: int) -> list[Job]:
        """Each after a quantization (two in three) or a training."""
        rng = self.rng
        evals: list[Job] = []
        for _ in range(count):
            if quants and rng.random() < 2 / 3:
                parent = quants[int(rng.integers(len(quants)))]
            else:
                parent = trainings[int(rng.integers(len(trainings)))]
            gpus = int(rng.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
            evals.append(
                Job(
                    self.new_id("eval"),
                    "evaluation",
                    parent.priority,
                    gpus,
                    self.pools("evaluation", gpus),
                    float(rng.uniform(1.0, 6.0)),
                    scalable=False,
                    after=parent.id,
                )
            )
        return evals


def _load_scale(size: Size, roots: list[Job], fixed: list[Job], target: float) -> float:
    """The factor on training and batch-inference durations that brings the load to `target`
    GPU-hours (a few fixed-point steps: rounding and the 40% cap make the load a step function
    of the scale)."""
    fixed_hours = _work_hours(size, fixed, 1.0)
    scale = 1.0
    for _ in range(8):
        scalable = _work_hours(size, roots, scale)
        scale *= max(target - fixed_hours, 1.0) / max(scalable, 1e-9)
    return scale


def _file_order(jobs: list[Job], width: int) -> None:
    """Sort by release, then creation order (which puts a job after the job it runs after), and
    number the ids in that order."""
    position = {j.id: k for k, j in enumerate(jobs)}
    jobs.sort(key=lambda j: (j.release, position[j.id]))
    renamed = {j.id: f"{j.id.split('-')[0]}-{k:0{width}d}" for k, j in enumerate(jobs, start=1)}
    for j in jobs:
        j.id = renamed[j.id]
        j.after = None if j.after is None else renamed[j.after]


def make_jobs(
    size: Size,
    rng: Rng,
    reserved: dict[str, IntArray],
    left_gpu_hours: float,
    load: float,
    pools_for: PoolsFn | None = None,
    add_times: TimesFn | None = None,
) -> list[Job]:
    """The enterprise job mix, scaled to `load` x `left_gpu_hours` (see docs/generator.md).

    `pools_for` (allowed pools and their slowdowns) and `add_times` (dependent releases and
    deadlines) default to enterprise's rules."""
    add_times = add_times or set_times
    n = size.jobs
    n_quant = round(0.15 * n)
    n_eval = round(0.17 * n)
    n_batch = round(0.25 * n)
    n_train = n - n_quant - n_eval - n_batch
    draw = _Draw(size, rng, gang_nodes_limit(size, reserved), pools_for or allowed_pools, n)
    roots = draw.roots("training", n_train) + draw.roots("batch_inference", n_batch)
    order = rng.permutation(len(roots))
    roots = [roots[i] for i in order]
    for job in roots:
        job.release = _release_slot(size, rng)
    trainings = [j for j in roots if j.kind == "training"]
    quants = draw.quantizations(trainings, n_quant)
    evals = draw.evaluations(quants, trainings, n_eval)
    jobs = roots + quants + evals
    scale = _load_scale(size, roots, quants + evals, load * left_gpu_hours)
    for j in jobs:
        j.durations = pool_durations(size, j, scale)
    add_times(size, rng, jobs)
    _file_order(jobs, draw.width)
    return jobs


def dependent_releases(size: Size, jobs: list[Job]) -> tuple[dict[str, int], dict[str, int]]:
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


def set_times(size: Size, rng: Rng, jobs: list[Job]) -> None:
    """Releases of dependent jobs and deadlines on about a third of the jobs.

    A dependent job is submitted when its `after` job would end if it ran at once (its earliest
    end; at most the last slot). A deadline is achievable if the job's chain runs at once."""
    earliest_end, chain_start = dependent_releases(size, jobs)
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
