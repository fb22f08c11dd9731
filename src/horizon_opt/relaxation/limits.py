"""Team limits (FORMAT.md, validity rule 8) as rows of the relaxations.

Every valid plan keeps, per team and pool with a limit and at every slot: the GPUs of the team's
runs on the pool (placed ones included) <= max(the team's room, what its placed jobs alone hold
there), the room being its limit less what jobs left out of the instance hold
(`Instance.team_room`). That is a linear row over the columns, so adding it keeps every valid
plan's point feasible and the bound proven. Quotas (rule 9) are left out: the rule keeps some
plans out, and a relaxation may admit more plans than are valid, never fewer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from horizon_opt.model.instance import FloatArray, Instance, IntArray


@dataclass(frozen=True)
class TeamLimits:
    """One chain of rows per limited (team, pool), row i of a chain being slot i."""

    keys: list[tuple[int, int]]  # (team, pool) of each chain
    cap: FloatArray  # [len(keys), S] GPUs the team's runs may hold on the pool at each slot
    chain: IntArray  # [columns] the chain each column counts in, -1 for none

    @property
    def chains(self) -> int:
        return len(self.keys)


def limit_caps(instance: Instance) -> dict[tuple[int, int], FloatArray]:
    """Per limited (team, pool), the GPUs its runs may hold at each slot, placed runs included:
    the checker's max(limit, placed) on the room left to this instance."""
    room, placed = instance.team_room, instance.placed_team_gpus
    return {
        (team.index, p): np.maximum(room[team.index, p], placed[team.index, p]).astype(np.float64)
        for team in instance.teams
        for p in sorted(team.limit)
    }


def team_limits(instance: Instance, job: IntArray, pool: IntArray) -> TeamLimits:
    """The limit rows of `instance` for the columns (job, pool) (no chain when no limit)."""
    caps = limit_caps(instance)
    keys = list(caps)
    of_job = np.full((len(instance.jobs), len(instance.pools)), -1, dtype=np.int64)
    for j in instance.jobs:
        for p in j.durations:
            if j.team is not None and (j.team, p) in caps:
                of_job[j.index, p] = keys.index((j.team, p))
    cap = np.array([caps[key] for key in keys]).reshape(len(keys), instance.slots)
    chain = of_job[job, pool] if len(job) else np.zeros(0, dtype=np.int64)
    return TeamLimits(keys, cap, chain.astype(np.int64))
