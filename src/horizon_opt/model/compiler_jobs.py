"""The jobs of a spec compiled: each job's durations per pool, gang, release, deadline,
blackouts, dependencies, team and, when it runs, its `placed:` (checked by `PlacedCompiler`,
compiler_placed.py); then dependency cycles and the running jobs together.
"""

from __future__ import annotations

from horizon_opt.model.compiler_checks import check_placed
from horizon_opt.model.compiler_placed import PlacedCompiler
from horizon_opt.model.instance import Job, Pool, dependency_cycle, gang_on
from horizon_opt.model.teams import team_index
from horizon_opt.model.windows import first_start

__all__ = ["JobsCompiler"]


class JobsCompiler(PlacedCompiler):
    """The spec's `jobs:` as `Job`s, every problem collected."""

    def jobs(self, pools: tuple[Pool, ...]) -> tuple[Job, ...]:
        by_name = {p.name: p for p in pools}
        ids: dict[str, int] = {}
        for i, j in enumerate(self.spec.jobs):
            if j.id in ids:
                self.error(f"jobs[{i}].id", f"duplicate job id {j.id!r}")
            else:
                ids[j.id] = i
        jobs: list[Job] = []
        for i, j in enumerate(self.spec.jobs):
            path = f"jobs[{i}]"
            durations = self.job_durations(i, by_name)
            gangs = {p: g for p in durations if (g := gang_on(pools[p], j.gpus)) is not None}
            placeable = {p: d for p, d in durations.items() if p in gangs}
            if durations and not placeable:
                why = ", ".join(
                    f"{pools[p].name} has {pools[p].nodes} nodes of {pools[p].gpus_per_node} GPUs"
                    for p in durations
                )
                self.error(
                    f"{path}.gpus",
                    f"a gang of {j.gpus} GPUs cannot be placed on any allowed pool ({why}); "
                    "it must fit on one node or be a multiple of gpus_per_node on whole nodes",
                )
            release = self.time(j.release, f"{path}.release", round_up=True)
            if release is not None:
                if isinstance(j.release, int) and release < 0:
                    self.error(f"{path}.release", f"must be >= 0, got {release}")
                elif release >= self.S:
                    self.error(
                        f"{path}.release",
                        f"after the horizon (slot {release}, horizon has {self.S} slots)",
                    )
                release = max(release, 0)
            deadline = None
            if j.deadline is not None:
                deadline = self.time(j.deadline, f"{path}.deadline", round_up=False)
                if deadline is not None and release is not None and deadline < release:
                    self.error(f"{path}.deadline", f"before release ({deadline} < {release})")
                elif deadline is not None and deadline > self.S and not self.in_calendar(deadline):
                    self.error(f"{path}.deadline", f"slot {deadline} is after the year 9999")
            after = self.job_after(i, ids)
            blackouts = self.blackouts(i)
            team = team_index(j.team, self.teams, f"{path}.team", self.error)
            if not placeable or release is None:
                continue
            fastest = min(placeable.values())
            placed = None
            if j.placed is not None:
                placed = self.placement(j, placeable, gangs, j.placed, pools, path)
                if placed is None:
                    continue
                placeable = {placed.pool: placed.end - placed.start}
                gangs = {placed.pool: gangs[placed.pool]}
            jobs.append(
                Job(
                    index=i,
                    id=j.id,
                    kind=j.kind,
                    priority=j.priority,
                    gpus=j.gpus,
                    durations=placeable,
                    gangs=gangs,
                    release=first_start(release, self.now, placed),
                    submitted=release if placed is None else min(release, placed.start),
                    deadline=deadline,
                    after=tuple(after),
                    work_hours=j.gpus * fastest * self.slot_minutes / 60,
                    placed=placed,
                    team=team,
                    blackouts=blackouts,
                )
            )
        if len(jobs) == len(self.spec.jobs):
            self.check_cycles(jobs)
            check_placed(
                jobs, pools, self.S, self.now, self.node_names, self.node_pools, self.error
            )
        return tuple(jobs)

    def blackouts(self, i: int) -> tuple[tuple[int, int], ...]:
        """A job's `blackout:` as slots [a, b), sorted and merged: a window covers every slot it
        touches (start rounded down, end up, as an outage)."""
        spans: list[tuple[int, int]] = []
        for k, w in enumerate(self.spec.jobs[i].blackout):
            path = f"jobs[{i}].blackout[{k}]"
            start = self.time(w.start, f"{path}.start", round_up=False)
            end = self.time(w.end, f"{path}.end", round_up=True)
            if start is None or end is None:
                continue
            if start >= end:
                self.error(f"{path}.end", f"must be after start ({end} <= {start})")
            else:
                spans.append((start, end))
        merged: list[tuple[int, int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        return tuple(merged)

    def job_durations(self, i: int, by_name: dict[str, Pool]) -> dict[int, int]:
        j = self.spec.jobs[i]
        path = f"jobs[{i}]"
        out: dict[int, int] = {}
        if isinstance(j.duration, dict):
            if j.pools is not None:
                self.error(f"{path}.pools", "give pools only with a single duration value")
            items = [(name, value, f"{path}.duration.{name}") for name, value in j.duration.items()]
        else:
            names = j.pools if j.pools is not None else list(by_name)
            if j.pools is not None and not j.pools:
                self.error(f"{path}.pools", "must name at least one pool")
            items = [(name, j.duration, f"{path}.duration") for name in names]
        parsed: dict[str, int | None] = {}  # a single value is parsed (and reported) once
        for k, (name, value, vpath) in enumerate(items):
            pool = by_name.get(name)
            if pool is None:
                where = vpath if isinstance(j.duration, dict) else f"{path}.pools[{k}]"
                self.error(where, f"unknown pool {name!r}")
                continue
            if vpath not in parsed:
                parsed[vpath] = self.duration(value, vpath)
            slots = parsed[vpath]
            if slots is not None:
                out[pool.index] = slots
        return out

    def check_cycles(self, jobs: list[Job]) -> None:
        found = dependency_cycle(jobs)
        if found is not None:
            node, cycle = found
            names = " -> ".join(jobs[c].id for c in cycle)
            self.error(f"jobs[{node}].after", f"dependency cycle: {names}")

    def job_after(self, i: int, ids: dict[str, int]) -> list[int]:
        """The indices of the jobs that job i runs after (an unknown id, or itself, is an
        error)."""
        j, after = self.spec.jobs[i], []
        for k, dep in enumerate(j.after):
            if dep not in ids:
                self.error(f"jobs[{i}].after[{k}]", f"unknown job id {dep!r}")
            elif dep == j.id:
                self.error(f"jobs[{i}].after[{k}]", "a job cannot run after itself")
            else:
                after.append(ids[dep])
        return after
