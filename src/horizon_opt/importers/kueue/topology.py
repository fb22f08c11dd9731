"""Where a Kueue topology assignment puts a pod set's pods: pods per host.

Kueue's Topology Aware Scheduling records, per admitted pod set, the topology domains its pods
go to (`status.admission.podSetAssignments[].topologyAssignment`), in one of two shapes:

- v1beta1: `levels` (node label keys, highest first) and `domains`, each `{values: [one value
  per level], count: pods}`;
- v1beta2: `levels` and `slices`, each `{domainCount, valuesPerLevel, podCounts}`: per level
  either one `universal` value for every domain of the slice or `individual` values
  (`prefix` + each of `roots` + `suffix`), and pods per domain either `universal` (the same
  for each) or `individual` (one count per domain).

Only an assignment whose lowest level is `kubernetes.io/hostname` names hosts; one that stops at
a higher level (a rack, a block) says nothing about nodes, and reads as None.
"""

from __future__ import annotations

from typing import Any

from horizon_opt.importers.kueue.kube import Bad, at, int_at, list_at, object_at, object_of, str_at

__all__ = ["HOSTNAME_LEVEL", "topology_hosts"]

HOSTNAME_LEVEL = "kubernetes.io/hostname"
_INT32 = 2**31 - 1


def topology_hosts(value: Any, path: str) -> dict[str, int] | None:
    """Pods per host of a topology assignment (either shape), or None when it names no hosts.
    A malformed assignment raises Bad naming the JSON path."""
    if value is None:
        return None
    topo = object_of(value, path)
    levels = list_at(topo, "levels", path)
    if not levels or levels[-1] != HOSTNAME_LEVEL:
        return None
    if "slices" in topo:
        return _slices(topo, len(levels), path)
    if "domains" in topo:
        return _domains(topo, len(levels), path)
    return None


def _domains(topo: dict[str, Any], levels: int, path: str) -> dict[str, int]:
    """v1beta1: one `{values, count}` per domain."""
    out: dict[str, int] = {}
    for d, dom in enumerate(list_at(topo, "domains", path)):
        dpath = f"{at(path, 'domains')}[{d}]"
        dom = object_of(dom, dpath)
        values = list_at(dom, "values", dpath, required=True)
        if len(values) != levels or not isinstance(values[-1], str):
            raise Bad(at(dpath, "values"), f"expected {levels} strings, one per level")
        count = int_at(dom, "count", dpath, lo=0, hi=_INT32, required=True)
        assert count is not None
        out[values[-1]] = out.get(values[-1], 0) + count
    return out


def _slices(topo: dict[str, Any], levels: int, path: str) -> dict[str, int]:
    """v1beta2: slices of domains, values and pod counts per slice, commons extracted."""
    out: dict[str, int] = {}
    for k, raw in enumerate(list_at(topo, "slices", path)):
        spath = f"{at(path, 'slices')}[{k}]"
        piece = object_of(raw, spath)
        count = int_at(piece, "domainCount", spath, lo=1, hi=_INT32, required=True)
        assert count is not None
        per_level = list_at(piece, "valuesPerLevel", spath, required=True)
        if len(per_level) != levels:
            raise Bad(
                at(spath, "valuesPerLevel"), f"expected {levels} entries, one per level of levels"
            )
        vpath = f"{at(spath, 'valuesPerLevel')}[{levels - 1}]"
        hosts = _values(object_of(per_level[-1], vpath), count, vpath)
        pods = _pod_counts(object_at(piece, "podCounts", spath, required=True), count, spath)
        for host, n in zip(hosts, pods, strict=True):
            out[host] = out.get(host, 0) + n
    return out


def _values(level: dict[str, Any], count: int, path: str) -> list[str]:
    """The `count` values of one level: `universal`, or `prefix` + root + `suffix`."""
    universal = str_at(level, "universal", path)
    individual = object_at(level, "individual", path)
    if (universal is None) == (not individual):
        raise Bad(path, "expected exactly one of universal and individual")
    if universal is not None:
        return [universal] * count
    ipath = at(path, "individual")
    prefix = str_at(individual, "prefix", ipath) or ""
    suffix = str_at(individual, "suffix", ipath) or ""
    roots = list_at(individual, "roots", ipath, required=True)
    if len(roots) != count or not all(isinstance(r, str) for r in roots):
        raise Bad(at(ipath, "roots"), f"expected {count} strings (domainCount)")
    return [f"{prefix}{r}{suffix}" for r in roots]


def _pod_counts(counts: dict[str, Any], domains: int, path: str) -> list[int]:
    """Pods in each of the slice's domains: one `universal` count, or `individual` ones."""
    cpath = at(path, "podCounts")
    universal = int_at(counts, "universal", cpath, lo=1, hi=_INT32)
    individual = list_at(counts, "individual", cpath)
    if (universal is None) == (not individual):
        raise Bad(cpath, "expected exactly one of universal and individual")
    if universal is not None:
        return [universal] * domains
    ipath = at(cpath, "individual")
    if len(individual) != domains or not all(
        isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= _INT32 for n in individual
    ):
        raise Bad(ipath, f"expected {domains} pod counts (domainCount) from 1")
    return list(individual)
