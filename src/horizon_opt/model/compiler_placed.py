"""The GPUs a placed job holds, as its instance file names them, checked on their own: each a
node of the job's pool, the indices distinct GPUs of that node. A helper of the compiler
(compiler.py), apart so that module stays small."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from horizon_opt.model.instance import Pool
from horizon_opt.model.spec import show

__all__ = ["gpus_by_node"]


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
        if len(set(idx)) != len(idx) or max(idx, default=0) >= pool.gpus_per_node:
            error(
                f"{path}.gpus.{name}",
                f"GPU indices {show(idx)} are not distinct indices in 0..{pool.gpus_per_node - 1}",
            )
            continue
        out[n] = tuple(sorted(idx))
    return out
