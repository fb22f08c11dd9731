"""The inference services of a spec compiled: each service's pool, demand and the replicas it
needs; then whether they fit next to the running jobs.
"""

from __future__ import annotations

import numpy as np

from horizon_opt.model.compiler_checks import check_inference
from horizon_opt.model.compiler_core import CompilerCore
from horizon_opt.model.instance import (
    BoolArray,
    Job,
    Pool,
    Service,
    _placed_gpus,
    required_replicas,
)
from horizon_opt.model.spec import MAX_DEMAND

__all__ = ["ServicesCompiler"]


class ServicesCompiler(CompilerCore):
    """The spec's `services:` as `Service`s, every problem collected."""

    def services(self, pools: tuple[Pool, ...]) -> tuple[Service, ...]:
        by_name = {p.name: p for p in pools}
        services: list[Service] = []
        seen: set[str] = set()
        for i, s in enumerate(self.spec.services):
            path = f"services[{i}]"
            if s.name in seen:
                self.error(f"{path}.name", f"duplicate service name {s.name!r}")
            seen.add(s.name)
            pool = by_name.get(s.pool)
            if pool is None:
                self.error(f"{path}.pool", f"unknown pool {s.pool!r}")
            elif pool.gpus_per_node % s.gpus_per_replica:
                self.error(
                    f"{path}.gpus_per_replica",
                    f"{s.gpus_per_replica} does not divide gpus_per_node "
                    f"{pool.gpus_per_node} of pool {pool.name!r}",
                )
                pool = None
            demand = np.asarray(self.demands.get(i, ()), dtype=np.float64)
            if self.spec.horizon.open_end and i in self.passed and len(demand) > self.S:
                # (a series passed in compiled, extension included: `open_end.extend` keeps it)
                self.tails[len(services)] = demand[self.S :]
                demand = demand[: self.S]
            if len(demand) != self.S:
                self.error(
                    f"{path}.demand", f"expected {self.S} values (one per slot), got {len(demand)}"
                )
                continue
            bad = np.flatnonzero(~((demand >= 0) & (demand <= MAX_DEMAND)))  # NaN fails both
            if bad.size:
                t = int(bad[0])
                self.error(
                    f"{path}.demand[{t}]",
                    f"must be a number from 0 to {MAX_DEMAND:,.0f} replicas, got {demand[t]}",
                )
                continue
            if pool is None:
                continue
            req = required_replicas(demand, s.headroom)
            demand.setflags(write=False)
            req.setflags(write=False)
            services.append(
                Service(
                    len(services), s.name, pool.index, s.gpus_per_replica, s.headroom, demand, req
                )
            )
        return tuple(services)

    def check_services_fit(
        self,
        pools: tuple[Pool, ...],
        up: BoolArray,
        services: tuple[Service, ...],
        jobs: tuple[Job, ...],
        first: int = 0,
    ) -> None:
        """The services' required replicas fit next to the GPUs the running jobs hold (from
        slot `first` on)."""
        names = [x.name for x in self.spec.services]
        held = _placed_gpus(jobs, up.shape)
        check_inference(pools, up, services, held, names, self.error, first)
