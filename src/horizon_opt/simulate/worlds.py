"""The kinds of drawn world a replay can run in, by name (`--world`, a loop suite's `worlds`)."""

from __future__ import annotations

import os

from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance
from horizon_opt.simulate.cluster_world import draw_cluster_world
from horizon_opt.simulate.trace_world import draw_trace_world
from horizon_opt.simulate.world import Noise, World, draw_world
from horizon_opt.simulate.world_file import read_world

WORLDS = ("cluster", "trace", "synthetic")
DEFAULT_WORLD = "cluster"


def world_noise_for(kind: str | None, noise: str | None) -> Noise:
    """The synthetic noise `--noise` gives, refused for a world that draws its own: the cluster
    world takes none of it, the trace world only its demand."""
    if noise is None:
        return Noise()
    if (kind or DEFAULT_WORLD) == "cluster":
        raise InputError(
            ["--noise: the cluster world draws its own noise; add --world synthetic to set it"]
        )
    return Noise.parse(noise)


def world_for(instance: Instance, kind: str, seed: int, noise: Noise | None = None) -> World:
    """The drawn world of `kind` for `instance`: `synthetic` (the `noise` model), `trace`
    (run times, failures and cancellations shaped by real traces; of `noise` it takes only
    `demand`, since the traces say nothing of the instance's forecasts) or `cluster` (limits,
    outcomes and demand errors shaped like real clusters: it takes nothing of `noise`)."""
    noise = noise or Noise()
    if kind == "synthetic":
        return draw_world(instance, noise, seed)
    if kind == "trace":
        return draw_trace_world(instance, seed, noise.demand)
    if kind == "cluster":
        return draw_cluster_world(instance, seed)
    raise InputError([f"--world: unknown world {kind!r}; use one of {', '.join(WORLDS)}"])


def replay_world(
    instance: Instance,
    kind: str | None,
    seed: int,
    noise: Noise,
    actual: str | os.PathLike[str] | None = None,
) -> tuple[World, str]:
    """The world a replay runs in (`actual`, a world file, else the drawn world of `kind`, the
    cluster world when None) and a line that says where it came from."""
    if actual is not None:
        if kind is not None:
            raise InputError(["--actual: a world file replaces the drawn world; leave out --world"])
        return read_world(actual, instance), f"read from {actual}"
    kind = kind or DEFAULT_WORLD
    shape = f" ({noise})" if kind == "synthetic" else ""
    return world_for(instance, kind, seed, noise), f"{kind}{shape}, seed {seed}"
