"""Whether one placement of one job is valid: the one owner of the rules of a placed job on its own
(its pool allowed, start in the horizon and not before its release, end after start and within
the horizon unless it is open, not ended by `now`, nodes of the pool, GPU indices distinct and
on the node, the job's gang shape, nodes up for the run).

The compiler checks a job's `placed:` here (`JobsCompiler`, compiler_jobs.py), and so does a
replay's state for a running job (`loop/snapshot.py`, through `PlacedCompiler.for_state`), so a
new rule about a placed job is written once. Placed jobs together are `compiler_checks`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from horizon_opt.model.compiler_checks import slot_ranges
from horizon_opt.model.compiler_core import CompilerCore
from horizon_opt.model.instance import Gang, Instance, Placed, Pool
from horizon_opt.model.spec import PlacedSpec, show

__all__ = ["Placeable", "PlacedCompiler", "gpus_by_node"]


class Placeable(Protocol):
    """What the rules read of the job itself (a `JobSpec` as written, or a compiled `Job`)."""

    @property
    def id(self) -> str: ...
    @property
    def gpus(self) -> int: ...
    @property
    def release(self) -> int | str: ...


class PlacedCompiler(CompilerCore):
    """Checks a job's `placed:` against the horizon, nodes and outages that the core holds."""

    @classmethod
    def for_state(cls, instance: Instance, now: int) -> PlacedCompiler:
        """The checks of a state of a compiled `instance` at `now`: its time units, horizon,
        nodes and outages, without compiling its spec again."""
        core = cls(instance.spec, {})
        core.S, core.now = instance.slots, now
        core.node_names, core.node_index = instance.node_names, instance.node_index
        core.node_pools, core.up_rows = instance.node_pool.tolist(), instance.up
        return core

    def placement(
        self,
        job: Placeable,
        durations: Mapping[int, int],
        gangs: Mapping[int, Gang],
        spec: PlacedSpec,
        pools: Sequence[Pool],
        path: str,
    ) -> Placed | None:
        """Job `path`'s (`jobs[i]`) placement `spec`, checked on its own: pool, times, nodes and
        the placement rule; None when it cannot be built. `durations` and `gangs` are the job's
        on the pools it may run on; a job's release slot itself is fine (rounded down)."""
        where = f"{path}.placed"
        pool = next((p for p in pools if p.name == spec.pool), None)
        if pool is None:
            self.error(f"{where}.pool", f"unknown pool {spec.pool!r}")
            return None
        if pool.index not in durations:
            self.error(f"{where}.pool", f"job {job.id!r} may not run on pool {pool.name!r}")
            return None
        start = self.time(spec.start, f"{where}.start", round_up=False)
        if start is None:
            return None
        end = start + durations[pool.index]
        problems = len(self.problems)
        released = self.time(job.release, f"{path}.release", round_up=False)
        if not 0 <= start < self.S:
            self.error(f"{where}.start", f"slot {start} is outside the horizon [0, {self.S})")
        elif released is not None and start < released:
            self.error(f"{where}.start", f"slot {start} is before its release (slot {released})")
        if spec.end is not None:  # the expected end, when known better than the estimate
            given = self.time(spec.end, f"{where}.end", round_up=True)
            if given is not None and given <= start:
                self.error(f"{where}.end", f"slot {given} is not after start {start}")
            elif given is not None:
                end = given
        if end > self.S and not self.spec.horizon.open_end:
            self.error(
                f"{where}.start",
                f"job {job.id!r} runs until slot {end}, past the horizon ({self.S} slots)",
            )
        self.check_running(job.id, end, where)
        gang = gangs[pool.index]
        gpus = gpus_by_node(spec.gpus, pool, self.node_index, self.node_pools, where, self.error)
        if len(self.problems) > problems:
            return None
        sizes = sorted({len(v) for v in gpus.values()})
        if len(gpus) != gang.nodes or sizes != [gang.gpus_per_node]:
            whole = f"{gang.nodes} whole nodes" if gang.nodes > 1 else "one node"
            self.error(
                f"{where}.gpus",
                f"a gang of {job.gpus} GPUs on pool {pool.name} holds {gang.gpus_per_node} GPUs "
                f"on each of {whole}; this holds {show({k: list(v) for k, v in spec.gpus.items()})}",
            )
            return None
        self.check_up(job.id, gpus, start, end, where)
        return Placed(pool.index, start, end, gpus)

    def check_running(self, job_id: str, end: int, where: str) -> None:
        """A placed job has not ended by `now`: a state holds no finished job."""
        if end <= self.now:
            self.error(
                f"{where}.start",
                f"job {job_id!r} ended at slot {end}, at or before now ({self.now}): "
                "leave finished jobs out of the instance",
            )

    def check_up(
        self, job_id: str, gpus: Mapping[int, Sequence[int]], start: int, end: int, where: str
    ) -> None:
        """Every node of the run is up for all of it."""
        for n in gpus:
            down = np.flatnonzero(~self.up_rows[n, start:end])
            if down.size:
                self.error(
                    f"{where}.gpus",
                    f"job {job_id!r} runs on {self.node_names[n]} while that node "
                    f"is down (slots {slot_ranges((down + start).tolist())})",
                )


def gpus_by_node(
    gpus: Mapping[str, Sequence[int]],
    pool: Pool,
    node_index: Mapping[str, int],
    node_pools: Sequence[int],
    path: str,
    error: Callable[[str, str], None],
) -> dict[int, tuple[int, ...]]:
    """`placed.gpus` by node index, indices sorted; each bad entry is reported to `error`
    (field path, message) and left out."""
    out: dict[int, tuple[int, ...]] = {}
    for name, idx in gpus.items():
        n = node_index.get(name)
        if n is None or node_pools[n] != pool.index:
            error(f"{path}.gpus", f"{name!r} is not a node of pool {pool.name!r}")
            continue
        if len(set(idx)) != len(idx) or not all(0 <= g < pool.gpus_per_node for g in idx):
            error(
                f"{path}.gpus.{name}",
                f"GPU indices {show(idx)} are not distinct indices in 0..{pool.gpus_per_node - 1}",
            )
            continue
        out[n] = tuple(sorted(idx))
    return out
