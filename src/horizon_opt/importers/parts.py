"""A running job whose GPUs the placement rule cannot hold as one gang, held as one placed part
per node.

FORMAT.md's placement rule (a gang of at most G GPUs on one node, a larger one on whole nodes)
is a rule for the plans the solvers make. A job already running may sit otherwise: `-N2
--gpus-per-node=1` on 4-GPU nodes holds one GPU on each of two nodes. Leaving it out would make
its GPUs look free, so plans would double-book them while `check` says VALID. Each node it
holds becomes a placed job of its own (`<id>@<host>`, the GPUs it holds there, the same pool,
times, priority and deadline), which the placement rule does hold and the compiler and checker
verify like any running job; a job that runs after it runs after every part.
"""

from __future__ import annotations

from collections.abc import Mapping

from horizon_opt.model.instance import Pool, gang_on

__all__ = ["PART_SEPARATOR", "holds_as_one_gang", "part_id", "split_note"]

PART_SEPARATOR = "@"


def holds_as_one_gang(
    counts: Mapping[str, int], pool_of: Mapping[str, str], nodes: int, gpus_per_node: int
) -> bool:
    """Whether GPUs held per node (instance node -> count) are one gang of one pool under the
    compiler's own placement rule (`gang_on`), so the job needs no parts."""
    pools = {pool_of[n] for n in counts}
    if len(pools) != 1 or not counts:
        return False
    total = sum(counts.values())
    gang = gang_on(Pool(0, next(iter(pools)), "", nodes, gpus_per_node, 0), total)
    return (
        gang is not None
        and gang.nodes == len(counts)
        and all(c == gang.gpus_per_node for c in counts.values())
    )


def part_id(job_id: str, host: str) -> str:
    """The id of the part of `job_id` on `host` (the scheduler's host name)."""
    return f"{job_id}{PART_SEPARATOR}{host}"


def split_note(held: Mapping[str, int], gpus_per_node: Mapping[str, int]) -> str:
    """Why a running job was split, for its note (`held`: host -> GPUs it holds there)."""
    spread = ", ".join(f"{h}: {c}" for h, c in held.items())
    sizes = "/".join(str(g) for g in dict.fromkeys(gpus_per_node[h] for h in held))
    return (
        f"holds GPUs {spread} (nodes of {sizes} GPUs), which the placement rule cannot hold as "
        f"one gang (one node, or whole nodes): placed as {len(held)} parts, one per node "
        f"({part_id('<id>', '<host>')}), so its GPUs stay held"
    )
