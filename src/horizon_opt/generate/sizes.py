"""Cluster shapes and the size table shared by every family, so sizes compare across families."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

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


# Small and medium use 30-minute slots so that their short horizons still resolve the daily cycle
# and hour-long jobs; large and xl use 60-minute slots to keep the grid (nodes x slots) small.
SIZES: dict[str, Size] = {
    "small": Size(_cluster(4), jobs=40, slots=48, slot_minutes=30, services=2, outages=1),
    "medium": Size(_cluster(12, 10, 6), jobs=300, slots=96, slot_minutes=30, services=3, outages=2),
    "large": Size(
        _cluster(64, 40, 24), jobs=1500, slots=192, slot_minutes=60, services=5, outages=4
    ),
    "xl": Size(
        _cluster(256, 160, 96), jobs=5000, slots=672, slot_minutes=60, services=8, outages=12
    ),
    # 16,384 GPUs: the scale of the clusters that most need planning, over two weeks.
    "xxl": Size(
        _cluster(1024, 640, 384), jobs=20000, slots=336, slot_minutes=60, services=12, outages=24
    ),
}

# Slowdown of each GPU type against h100 (uniform range, drawn per job).
SLOWDOWN: dict[str, tuple[float, float]] = {
    "h100": (1.0, 1.0),
    "a100": (1.5, 2.0),
    "l40s": (2.0, 3.0),
}
