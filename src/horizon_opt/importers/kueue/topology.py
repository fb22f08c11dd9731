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
a higher level (a rack, a block) says nothing about nodes, reads as no hosts, and its domains are
not read. The counts that must agree across fields (values per level, domains per slice) are
checked by `TopologyAssignment`, each problem named by its JSON path.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PrivateAttr, model_validator

from horizon_opt.errors import Loc
from horizon_opt.importers.kueue.kube import (
    INT32,
    KubeModel,
    Text,
    int_in,
    listed,
    needed_list,
    optional,
    required,
    what,
)
from horizon_opt.importers.payload_model import fail_at, validate_at

__all__ = ["HOSTNAME_LEVEL", "TopologyAssignment"]

HOSTNAME_LEVEL = "kubernetes.io/hostname"


class Domain(KubeModel):
    """v1beta1: one domain, its value at each level and its pods."""

    values: Annotated[list[Any], needed_list]
    count: Annotated[int, int_in(0, INT32, needed=True)]


def _list_or_none(value: Any) -> Any:
    """A list, or None (required only when the level's values are `individual`)."""
    if value is not None and not isinstance(value, list):
        raise ValueError(f"expected a list, got {what(value)}")
    return value


class Individual(KubeModel):
    prefix: Text = None
    suffix: Text = None
    roots: Annotated[list[Any] | None, BeforeValidator(_list_or_none)] = None


class LevelValues(KubeModel):
    """v1beta2: one level's values for the domains of a slice."""

    universal: Text = None
    individual: Annotated[Individual | None, optional] = None


class PodCounts(KubeModel):
    universal: Annotated[int | None, int_in(1, INT32)] = None
    individual: Annotated[list[Any], listed] = Field(default_factory=list)


class Slice(KubeModel):
    """v1beta2: domains that share their values' shape and pod counts."""

    domain_count: Annotated[int, int_in(1, INT32, needed=True)]
    values_per_level: Annotated[list[Any], needed_list]  # only the hostname level is read
    pod_counts: Annotated[PodCounts, required]


class TopologyAssignment(KubeModel):
    """A pod set's topology assignment; `hosts`: pods per host, None when it names no hosts."""

    levels: Annotated[list[Any], listed] = Field(default_factory=list)
    domains: Annotated[list[Domain], listed] = Field(default_factory=list)
    slices: Annotated[list[Slice], listed] = Field(default_factory=list)
    _hosts: dict[str, int] | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _hostname_only(cls, data: Any) -> Any:
        """Domains are read only down to the hostname, and v1beta2's slices before v1beta1's
        domains: those of another shape are not read at all."""
        if not isinstance(data, dict) or not isinstance(data.get("levels"), list):
            return data
        levels = data["levels"]
        if not levels or levels[-1] != HOSTNAME_LEVEL:
            return {"levels": levels}
        if "slices" in data:
            return {k: v for k, v in data.items() if k != "domains"}
        return data

    @model_validator(mode="after")
    def _read_hosts(self) -> TopologyAssignment:
        if not self.levels or self.levels[-1] != HOSTNAME_LEVEL:
            return self
        if "slices" in self.model_fields_set:
            self._hosts = self._slice_hosts()
        elif "domains" in self.model_fields_set:
            self._hosts = self._domain_hosts()
        return self

    @property
    def hosts(self) -> dict[str, int] | None:
        return self._hosts

    def _domain_hosts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        levels = len(self.levels)
        for d, dom in enumerate(self.domains):
            host = dom.values[-1] if dom.values else None
            if len(dom.values) != levels or not isinstance(host, str):
                fail_at(("domains", d, "values"), f"expected {levels} strings, one per level")
            out[host] = out.get(host, 0) + dom.count
        return out

    def _slice_hosts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        levels = len(self.levels)
        for k, piece in enumerate(self.slices):
            loc: Loc = ("slices", k)
            if len(piece.values_per_level) != levels:
                fail_at(
                    (*loc, "valuesPerLevel"), f"expected {levels} entries, one per level of levels"
                )
            where = (*loc, "valuesPerLevel", levels - 1)
            level = validate_at(where, LevelValues, piece.values_per_level[-1])
            hosts = _values(level, piece.domain_count, where)
            pods = _pod_counts(piece.pod_counts, piece.domain_count, (*loc, "podCounts"))
            for host, n in zip(hosts, pods, strict=True):
                out[host] = out.get(host, 0) + n
        return out


def _values(level: LevelValues, count: int, loc: Loc) -> list[str]:
    """The `count` values of one level: `universal`, or `prefix` + root + `suffix`."""
    individual = level.individual
    given = individual is not None and bool(individual.model_fields_set)
    if (level.universal is None) == (not given):
        fail_at(loc, "expected exactly one of universal and individual")
    if level.universal is not None:
        return [level.universal] * count
    assert individual is not None
    roots = individual.roots
    if roots is None:
        fail_at((*loc, "individual", "roots"), "required field is missing")
    if len(roots) != count or not all(isinstance(r, str) for r in roots):
        fail_at((*loc, "individual", "roots"), f"expected {count} strings (domainCount)")
    prefix, suffix = individual.prefix or "", individual.suffix or ""
    return [f"{prefix}{r}{suffix}" for r in roots]


def _pod_counts(counts: PodCounts, domains: int, loc: Loc) -> list[int]:
    """Pods in each of the slice's domains: one `universal` count, or `individual` ones."""
    if (counts.universal is None) == (not counts.individual):
        fail_at(loc, "expected exactly one of universal and individual")
    if counts.universal is not None:
        return [counts.universal] * domains
    if len(counts.individual) != domains or not all(
        isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= INT32
        for n in counts.individual
    ):
        fail_at((*loc, "individual"), f"expected {domains} pod counts (domainCount) from 1")
    return list(counts.individual)
