"""Family `hetero`: a cluster that kept its older GPUs, so where a job runs changes how long it
takes (and whether it can run there at all)."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from horizon_opt.generate.aliases import InstanceData, Rng
from horizon_opt.generate.jobs import placeable
from horizon_opt.generate.sizes import PoolShape, Size
from horizon_opt.generate.synthetic import synthetic

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


def _hetero_pools(
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
    fits = [p for p in size.pools if p.name in allowed and placeable(p, gpus, limits[p.name])]
    if not fits:  # the restriction left nothing: fall back to any pool that can place it
        fits = [p for p in size.pools if placeable(p, gpus, limits[p.name])]
    return {p.name: slowdown[p.name] for p in fits}


def hetero(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Three GPU generations, per-job slowdowns and allowed pools; see docs/generator.md."""
    return synthetic(
        name, hetero_size(size), rng, peak_share=0.35, load=2.0, pools_for=_hetero_pools
    )
