"""The checks that a pool's `node_names` can name its nodes, shared by the compiler (the instance
file) and the importers (the cluster file), so both refuse the same names with the same words.

A node is named by its pool's `node_names` (the cluster's host names) or, without them,
`<pool>-<i>`. Every plan, outage and placed job names a node by that one name, so names must be
unique across the whole instance, generated ones included.
"""

from __future__ import annotations

from collections.abc import Sequence

from horizon_opt.model.spec import PoolSpec, default_node_name

# (pool name, nodes, its node_names or None) for each pool, in file order
PoolNames = tuple[str, int, Sequence[str] | None]


def generated_node(name: str, pools: dict[str, int]) -> tuple[str, int] | None:
    """(pool, index) when `name` is `<pool>-<i>` of a pool in `pools` (pool -> nodes) that
    does not name its nodes, `i` written plainly and below its node count; else None."""
    prefix, _, k = name.rpartition("-")
    if prefix not in pools or not (k.isascii() and k.isdigit()) or str(int(k)) != k:
        return None
    return (prefix, int(k)) if int(k) < pools[prefix] else None


def name_problems(pools: Sequence[PoolNames]) -> list[str]:
    """One problem per `node_names` that cannot name its pool's nodes, with its field path:
    a count other than `nodes`, or a name that another node of the instance already has."""
    if all(given is None for _, _, given in pools):
        return []  # generated names never collide: pool names are unique, and `-` ends them
    unnamed = {name: nodes for name, nodes, given in pools if given is None}
    problems: list[str] = []
    seen: dict[str, str] = {}  # a given name -> the field that gave it first
    for k, (_, nodes, given) in enumerate(pools):
        if given is None:
            continue
        path = f"pools[{k}].node_names"
        if len(given) != nodes:
            problems.append(f"{path}: {len(given)} names for {nodes} nodes (one per node)")
        for i, host in enumerate(given):
            other = generated_node(host, unnamed)
            if other is not None:
                pool, index = other
                nodes_of = (
                    f"{default_node_name(pool, 0)} .. {default_node_name(pool, unnamed[pool] - 1)}"
                )
                problems.append(
                    f"{path}[{i}]: {host!r} is the name of node {index} of pool {pool!r}, which "
                    f"has no node_names (its nodes are {nodes_of})"
                )
            elif host in seen:
                problems.append(f"{path}[{i}]: {host!r} names another node too ({seen[host]})")
            else:
                seen[host] = f"{path}[{i}]"
    return problems


def all_node_names(pools: Sequence[PoolSpec]) -> tuple[tuple[str, ...], list[str]]:
    """Every node's name by global index (its pool's `node_names`, else `<pool>-<i>`), and the
    problems of the given names. A pool with too few or too many names (reported) keeps the
    names it gives its nodes, so that outages and placed jobs that use them are not refused
    as well."""
    problems = name_problems([(p.name, p.nodes, p.node_names) for p in pools])
    names: list[str] = []
    for p in pools:
        given = list(p.node_names or ())[: p.nodes]
        names += [*given, *(default_node_name(p.name, i) for i in range(len(given), p.nodes))]
    return tuple(names), problems
