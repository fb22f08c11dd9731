"""The actual world a replay runs in: how long jobs really run and what inference really needs.

Planners see estimates and a forecast; the replay executes their plans against draws from this
model, the same draws for every policy (one seeded stream per instance and seed). Two kinds of
drawn world (`worlds.world_for`), and worlds read from a file (`simulate/world_file.py`):

- `synthetic`, the `Noise` model. Users' estimates are time limits, so a job never runs past its
  estimate (Slurm kills it at its limit). A share `fail` of jobs fails after a uniform 5-90% of
  its estimate and earns nothing; a share `early` ends successfully after a uniform 40-100% of
  it; the rest run their full estimate.
- `trace` (`simulate/trace_world.py`): run times as a share of round time limits, and shares of
  failed and cancelled jobs, taken from real traces, so that estimates are as loose as real users
  make them and as many jobs end without value as in real GPU clusters.

In both, a fraction is drawn per job, so the real run time on any pool is that fraction of the
job's duration on that pool, rounded up to whole slots; and the actual demand of each service is
its forecast times `exp(e_t)`, where `e_t` is an AR(1) series (correlation `DEMAND_CORRELATION`
from slot to slot, so errors last for hours, as forecast errors do) with standard deviation
`Noise.demand`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from horizon_opt.errors import InputError
from horizon_opt.model.instance import FloatArray, Instance

DEMAND_CORRELATION = 0.8
FAIL_AT = (0.05, 0.9)  # share of the estimate at which a failing job fails
EARLY_AT = (0.4, 1.0)  # share of the estimate at which an early job ends


@dataclass(frozen=True)
class Noise:
    """How far the actual world strays from what the planners are told."""

    early: float = 0.7  # share of jobs that end before their estimate
    fail: float = 0.1  # share of jobs that fail (no value)
    demand: float = 0.1  # standard deviation of the relative error of inference demand

    def __post_init__(self) -> None:
        for name in ("early", "fail", "demand"):
            value = getattr(self, name)
            if not (0.0 <= value <= 1.0):
                raise ValueError(f"{name} must be from 0 to 1, got {value}")
        if self.early + self.fail > 1.0:
            raise ValueError(f"early + fail must be at most 1, got {self.early + self.fail}")

    @classmethod
    def parse(cls, text: str) -> Noise:
        """`early=0.7,fail=0.1,demand=0.1` (any subset; `none` for the planners' own world)."""
        if text.strip() == "none":
            return cls(early=0.0, fail=0.0, demand=0.0)
        known = {f.name for f in fields(cls)}
        values: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep or key not in known:
                raise InputError(
                    [f"--noise: {part!r} is not one of {', '.join(sorted(known))} = a number"]
                )
            try:
                values[key] = float(value)
            except ValueError:
                raise InputError([f"--noise: {key}: not a number: {value!r}"]) from None
        try:
            return cls(**values)
        except ValueError as exc:
            raise InputError([f"--noise: {exc}"]) from None

    def __str__(self) -> str:
        return f"early={self.early:g},fail={self.fail:g},demand={self.demand:g}"


@dataclass(frozen=True)
class World:
    """One draw of the actual world for an instance."""

    run_share: dict[str, float]  # job id -> share of its estimated duration that it runs
    fails: frozenset[str]  # jobs that end without value at the end of that share
    demand: tuple[FloatArray, ...]  # per service (instance order): actual replicas per slot
    cancels: frozenset[str] = frozenset()  # of `fails`: cancelled by their user, not failed

    def run_slots(self, job_id: str, estimate: int) -> int:
        """Slots the job really runs when its estimate on the chosen pool is `estimate`."""
        return max(1, min(estimate, math.ceil(self.run_share[job_id] * estimate - 1e-9)))


def draw_demand(
    instance: Instance, rng: np.random.Generator, sigma: float
) -> tuple[FloatArray, ...]:
    """Actual replicas per slot of each service (instance order): its forecast times the
    exponential of an AR(1) error of standard deviation `sigma`, drawn from `rng`."""
    demand: list[FloatArray] = []
    rho = DEMAND_CORRELATION
    for s in instance.services:
        e = np.empty(instance.slots)
        shocks = rng.standard_normal(instance.slots) * sigma
        e[0] = shocks[0]
        for t in range(1, instance.slots):
            e[t] = rho * e[t - 1] + math.sqrt(1 - rho * rho) * shocks[t]
        actual = s.demand * np.exp(e)
        actual.setflags(write=False)
        demand.append(actual)
    return tuple(demand)


def draw_world(instance: Instance, noise: Noise, seed: int) -> World:
    """The actual world for `instance`; the same seed gives the same world."""
    rng = np.random.default_rng([seed, 20261201])
    share: dict[str, float] = {}
    fails: set[str] = set()
    for job in instance.jobs:
        u, v = rng.random(2)
        if u < noise.fail:
            share[job.id] = FAIL_AT[0] + v * (FAIL_AT[1] - FAIL_AT[0])
            fails.add(job.id)
        elif u < noise.fail + noise.early:
            share[job.id] = EARLY_AT[0] + v * (EARLY_AT[1] - EARLY_AT[0])
        else:
            share[job.id] = 1.0
    return World(share, frozenset(fails), draw_demand(instance, rng, noise.demand))
