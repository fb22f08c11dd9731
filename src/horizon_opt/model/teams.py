"""Teams: who a job belongs to, and the GPUs per pool its team may hold.

A team (a Slurm account, a Kueue ClusterQueue) has per pool a quota (the GPUs it is entitled
to) and an optional hard limit (the most GPUs its jobs may hold at any slot). The limit is a
placement rule like a node's capacity: every solver keeps it, through `CapacityGrid` and the
cpsat model, and the checker verifies it. Placed jobs are never moved: where they alone hold
more than the limit (a limit lowered under running work), the team starts nothing new there
until they end, and the checker measures the limit against max(limit, what they hold).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from horizon_opt.model.spec import TeamSpec

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Team:
    index: int
    name: str
    quota: Mapping[int, int]  # pool index -> GPUs it is entitled to
    limit: Mapping[int, int]  # pool index -> the most GPUs it may hold at a slot
    weight: float


def compile_teams(
    specs: Sequence[TeamSpec],
    pool_index: Mapping[str, int],
    error: Callable[[str, str], None],
) -> tuple[Team, ...]:
    """The teams of a spec; every problem goes to `error(field path, message)`."""
    teams: list[Team] = []
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        path = f"teams[{i}]"
        if spec.name in seen:
            error(f"{path}.name", f"duplicate team name {spec.name!r}")
        seen.add(spec.name)
        quota = _per_pool(spec.quota, pool_index, f"{path}.quota", error)
        limit = _per_pool(spec.limit, pool_index, f"{path}.limit", error)
        for p, cap in limit.items():
            if quota.get(p, 0) > cap:
                name = next(n for n, k in pool_index.items() if k == p)
                error(
                    f"{path}.limit.{name}",
                    f"limit {cap} is below the quota {quota[p]}: a team may always use its quota",
                )
        teams.append(Team(i, spec.name, quota, limit, spec.weight))
    return tuple(teams)


def team_index(
    name: str | None, teams: Sequence[Team], path: str, error: Callable[[str, str], None]
) -> int | None:
    """The index of the team called `name`; None without one (an unknown name is an error)."""
    if name is None:
        return None
    for team in teams:
        if team.name == name:
            return team.index
    known = ", ".join(t.name for t in teams) or "none defined"
    error(path, f"unknown team {name!r} (teams: {known})")
    return None


def _per_pool(
    gpus: Mapping[str, int],
    pool_index: Mapping[str, int],
    path: str,
    error: Callable[[str, str], None],
) -> dict[int, int]:
    out: dict[int, int] = {}
    for name, value in gpus.items():
        if name not in pool_index:
            error(f"{path}.{name}", f"unknown pool {name!r} (pools: {', '.join(pool_index)})")
        else:
            out[pool_index[name]] = value
    return out


def team_usage(
    teams: int,
    pools: int,
    slots: int,
    runs: Iterable[tuple[int | None, int, int, int, int]],
) -> IntArray:
    """[teams, pools, slots] GPUs held per team, from runs (team, pool, start, end, gpus);
    runs of jobs without a team are left out."""
    out = np.zeros((teams, pools, slots), dtype=np.int64)
    for team, pool, start, end, gpus in runs:
        if team is not None:
            out[team, pool, max(start, 0) : max(end, 0)] += gpus
    return out


def quota_profile(teams: Sequence[Team], pools: int) -> IntArray:
    """[teams, pools] each team's quota per pool (0 where it has none)."""
    out = np.zeros((len(teams), pools), dtype=np.int64)
    for team in teams:
        for p, q in team.quota.items():
            out[team.index, p] = q
    return out


def limit_profile(teams: Sequence[Team], pools: int, slots: int, no_limit: int) -> IntArray:
    """[teams, pools, slots] each team's limit per pool and slot; `no_limit` where it has none."""
    out = np.full((len(teams), pools, slots), no_limit, dtype=np.int64)
    for team in teams:
        for p, cap in team.limit.items():
            out[team.index, p] = cap
    return out
