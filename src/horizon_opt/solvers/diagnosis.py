"""Why a job is late or not in a plan: the cause code that holds, with a sentence that names
what binds. Every solver's `unscheduled` reasons, `explain`, the CSV export and the report
use it, so a job gets the same answer whichever solver planned it.

The cause is read off the plan as it stands (its placements and its inference layout), never
off the moment a solver gave up on the job: a predecessor may have been dropped later, and a
solver that never "tries" jobs one by one (cpsat) needs the same answer. Four views of the
cluster are searched for the job's earliest window (each a `CapacityGrid`):

- alone: outages and the inference requirement (`req`, packed wherever it leaves the job room:
  `alone.AloneView`), no batch work; the job starts no earlier than its release and its
  predecessors' shortest runs;
- reserved: the plan's own inference layout, no batch work;
- outranked: the plan's inference and its batch jobs worth at least as much as the job (a job
  is worth what moving it puts at stake: its value, or more when a job that runs after it is
  worth more, `worth`);
- the plan: its inference and all of its batch jobs.

The first code that holds binds (`Code` lists them in that order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from horizon_opt.model.instance import Instance, IntArray, Job, topological_order
from horizon_opt.model.open_end import open_end_hint
from horizon_opt.model.windows import StartWindow
from horizon_opt.plans.inference import Layout
from horizon_opt.solvers.alone import AloneView
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.borrowed import borrowed_work, team_used, within_quota
from horizon_opt.solvers.causes import Cause, Code
from horizon_opt.solvers.grid import CapacityGrid, Fit, earliest_start
from horizon_opt.solvers.relaid import beside, during, must_move


def _until(window: StartWindow) -> tuple[str, str]:
    """('end by its deadline (slot d)', 'its deadline (slot d)'), or the same for the horizon."""
    latest, slots = window.latest_end, window.horizon
    if latest < slots:
        return f"end by its deadline (slot {latest})", f"its deadline (slot {latest})"
    return f"end within the horizon ({slots} slots)", f"the end of the horizon (slot {slots})"


class Diagnosis:
    """The causes of the late and unplanned jobs of one plan: `placements` and the `layout` of
    its inference."""

    def __init__(
        self,
        instance: Instance,
        placements: Sequence[Placement],
        layout: Layout,
        unused: str = "the solver did not place it there",
    ) -> None:
        self.instance = instance
        self.unused = unused  # why room the plan leaves is not used, when the solver knows
        self.placed = {p.job: p for p in placements}
        self.on_node: dict[int, list[Placement]] = {}
        for p in placements:
            for n in p.nodes:
                self.on_node.setdefault(n, []).append(p)
        self.free = layout.free
        self.alone = AloneView(instance)
        self._worth = [j.value for j in instance.jobs]
        for j in reversed(topological_order(instance)):
            for q in instance.successors[j]:
                self._worth[j] = max(self._worth[j], self._worth[q])
        self.reserved = CapacityGrid(instance, layout.free)
        self._full: CapacityGrid | None = None
        self._unlimited: CapacityGrid | None = None  # the plan without teams' limits
        self._relaid: dict[float | None, AloneView] = {}  # see relaid_view
        # per team: (team usage, its borrowed work, the grid without it), see _quota_borrowed
        self._borrowed: dict[int, tuple[IntArray, set[int], CapacityGrid | None]] = {}

    def value(self, j: int) -> float:
        return self.instance.jobs[j].value

    def worth(self, j: int) -> float:
        """What moving job j out of the way would put at stake: its value, or more when a job
        that runs after it (transitively) is worth more, since that job would have to go too."""
        return self._worth[j]

    def rank(self, j: int) -> tuple[float, int]:
        """Most valuable first (`worth`), then by index."""
        return (-self.worth(j), j)

    def grid(self, keep: Iterable[Placement], limits: bool = True) -> CapacityGrid:
        """The plan's inference and the placements `keep` (and its teams' limits)."""
        grid = CapacityGrid(self.instance, self.free, limits)
        for p in keep:
            self._occupy(grid, p)
        return grid

    def _occupy(self, grid: CapacityGrid, p: Placement) -> None:
        job = self.instance.jobs[p.job]
        fit = Fit(p.pool, p.start, p.nodes)
        grid.occupy(fit, job.gangs[p.pool], job.durations[p.pool], job.team)

    def causes(self, jobs: Sequence[int]) -> dict[int, Cause]:
        """The cause of each of `jobs` (unplanned, or planned late).

        Unplanned jobs go from the most valuable down, so one grid serves all of them as the
        outranked view: it only gains placements (and a grid's remembered failures stay true).
        """
        out: dict[int, Cause] = {}
        unplanned = sorted((j for j in jobs if j not in self.placed), key=self.value, reverse=True)
        ranked = sorted(self.placed.values(), key=lambda p: self.worth(p.job), reverse=True)
        outranked, k = CapacityGrid(self.instance, self.free), 0
        for j in unplanned:
            while k < len(ranked) and self.worth(ranked[k].job) >= self.value(j):
                self._occupy(outranked, ranked[k])
                k += 1
            out[j] = self._cause(j, self.full, outranked)
        for j in jobs:
            if j in self.placed:  # planned late: its own GPUs are not in its way
                others = [p for p in self.placed.values() if p.job != j]
                outranked_j = self.grid(p for p in others if self.worth(p.job) >= self.value(j))
                out[j] = self._cause(j, self.grid(others), outranked_j)
        return out

    @property
    def full(self) -> CapacityGrid:
        if self._full is None:
            self._full = self.grid(self.placed.values())
        return self._full

    def ready(self, j: int) -> int:
        """Job j's earliest start in this plan: its release and its planned predecessors' ends."""
        job = self.instance.jobs[j]
        ends = [self.placed[q].end(self.instance) for q in job.after if q in self.placed]
        return self.instance.windows[j].after(ends)

    def holders(self, fit: Fit, j: int, worth_less: bool) -> tuple[int, ...]:
        """The plan's jobs (other than j) on the window's nodes during it, worth less than j or
        at least as much (`worth`), most valuable first."""
        job = self.instance.jobs[j]
        end = fit.start + job.durations[fit.pool]
        near = {p.job: p for n in fit.nodes for p in self.on_node.get(n, ())}
        found = [
            p.job
            for p in near.values()
            if p.job != j
            and p.start < end
            and fit.start < p.end(self.instance)
            and (self.worth(p.job) < job.value) == worth_less
        ]
        return tuple(sorted(found, key=lambda q: (-self.worth(q), q)))

    def _named(self, jobs: Sequence[int], limit: int = 3) -> str:
        names = [
            f"{self.instance.jobs[q].id} ({self.value(q):,.0f}"
            + (
                f"; {self.worth(q):,.0f} with what runs after it)"
                if self.worth(q) > self.value(q)
                else ")"
            )
            for q in jobs[:limit]
        ]
        more = len(jobs) - limit
        return ", ".join(names) + (f" and {more} more" if more > 0 else "")

    def _where(self, fit: Fit) -> str:
        return f"slot {fit.start} on {self.instance.pools[fit.pool].name}"

    def _cause(self, j: int, full: CapacityGrid, outranked: CapacityGrid) -> Cause:
        inst, job, window = self.instance, self.instance.jobs[j], self.instance.windows[j]
        S, latest = window.horizon, window.latest_end
        end_in_time, until = _until(window)
        if not self.alone.can_start(job, 0, S) and not window.closed():
            return Cause(Code.NO_FITTING_POOL, self._no_pool(job))
        if not self.alone.can_start(job, window.ready, latest):
            return self._deadline_impossible(j)
        missing = [q for q in job.after if q not in self.placed]
        if missing:
            verb = "is" if len(missing) == 1 else "are"
            names = ", ".join(inst.jobs[q].id for q in missing)
            return Cause(
                Code.PREDECESSOR_UNPLANNED, f"runs after {names}, which {verb} not planned"
            )
        ready = self.ready(j)
        if not self.alone.can_start(job, ready, latest):
            last = max(job.after, key=lambda q: self.placed[q].end(inst))
            return Cause(
                Code.PREDECESSOR_LATE,
                f"runs after {inst.jobs[last].id}, which ends at slot {ready}: too late to "
                f"{end_in_time}",
            )
        beside_inference = earliest_start(self.reserved, job, ready, latest)
        if beside_inference is None:
            return self._no_room_beside_layout(j, ready, latest)
        room = earliest_start(full, job, ready, latest)
        limited = None if room is not None else self._team_limit(j, ready, latest)
        if limited is not None:
            return limited
        if room is not None:
            return Cause(
                Code.ROOM_UNUSED,
                f"fits as the plan stands, from {self._where(room)}; {self.unused}",
                room,
            )
        borrowed = self._quota_borrowed(j, ready, latest)
        if borrowed is not None:
            return borrowed
        fit = earliest_start(outranked, job, ready, latest)
        if fit is not None:
            holders = self.holders(fit, j, worth_less=True)
            quotas_first = self._others_quota(j, fit, holders)
            if quotas_first is not None:
                return quotas_first
            return Cause(
                Code.LOWER_VALUE_WORK,
                f"would fit from {self._where(fit)} by moving work worth less than it "
                f"({job.value:,.0f}): {self._named(holders)}",
                fit,
                holders,
            )
        holders = self.holders(beside_inference, j, worth_less=False)
        return Cause(
            Code.HIGHER_VALUE_WORK,
            f"work worth at least as much as it ({job.value:,.0f}) holds every window from "
            f"slot {ready} to {until}; at {self._where(beside_inference)}: "
            f"{self._named(holders)}",
            beside_inference,
            holders,
        )

    def relaid_view(self, j: int, threshold: float | None) -> AloneView:
        """The plan's other jobs (those worth at least `threshold`, or all of them) where they
        are, and the inference requirement placed to suit job j (`relaid.beside`). Shared by the
        unplanned jobs, whose plan is the same."""
        if j in self.placed:
            others = (p for p in self.placed.values() if p.job != j)
            return beside(self.instance, (p for p in others if _kept(self, p, threshold)))
        if threshold not in self._relaid:
            keep = (p for p in self.placed.values() if _kept(self, p, threshold))
            self._relaid[threshold] = beside(self.instance, keep)
        return self._relaid[threshold]

    def _no_room_beside_layout(self, j: int, ready: int, latest: int) -> Cause:
        """The plan's inference layout leaves job j no room in time, though the requirement
        alone does. `inference-reserved` only when, with every other planned job where it is,
        the requirement placed to suit it leaves it room; else batch work is in its way too:
        lower-value work when moving only that (and placing the requirement to suit it) makes
        room, else higher-value work."""
        job, until = self.instance.jobs[j], _until(self.instance.windows[j])[1]
        fit = self.relaid_view(j, None).earliest_start(job, ready, latest)
        if fit is not None:
            return Cause(
                Code.INFERENCE_RESERVED,
                f"the plan's inference reservation (how many replicas, on which nodes) leaves "
                f"it no room from slot {ready} to {until}; with the plan's other jobs where they "
                f"are and the forecast requirement placed to suit it, it could start at "
                f"{self._where(fit)}",
                fit,
            )
        others = [p for p in self.placed.values() if p.job != j]
        fit = self.relaid_view(j, job.value).earliest_start(job, ready, latest)
        if fit is not None:
            moved = must_move(
                self.instance, others, j, fit, lambda q: self.worth(q) < job.value, self.rank
            )
            holders = tuple(sorted(moved, key=self.rank))
            return Cause(
                Code.LOWER_VALUE_WORK,
                f"would fit from {self._where(fit)} by moving work worth less than it "
                f"({job.value:,.0f}) and placing the forecast requirement to suit it (the "
                f"plan's inference reservation leaves it no room): {self._named(holders)}",
                fit,
                holders,
            )
        fit = self.alone.earliest_start(job, ready, latest)
        assert fit is not None  # (the caller checked that it fits alone)
        worth_more = [
            q
            for q in {p.job for p in during(self.instance, others, j, fit)}
            if self.worth(q) >= job.value
        ]
        holders = self.holders(fit, j, worth_less=False) or tuple(sorted(worth_more, key=self.rank))
        return Cause(
            Code.HIGHER_VALUE_WORK,
            f"work worth at least as much as it ({job.value:,.0f}) holds every window from "
            f"slot {ready} to {until}, wherever the forecast requirement is placed; at "
            f"{self._where(fit)}: {self._named(holders)}",
            fit,
            holders,
        )

    def _deadline_impossible(self, j: int) -> Cause:
        """`deadline-impossible`: even alone, from its release and its predecessors' shortest
        runs, no window ends in time."""
        job, window = self.instance.jobs[j], self.instance.windows[j]
        est, S = window.ready, window.horizon
        first = self.alone.earliest_end(job, est, S)
        since = (
            f"released at slot {est}"
            if est == window.earliest
            else f"after its predecessors' shortest runs (slot {est})"
        )
        shortest = min(job.durations.values())
        when = (
            f"{since}, it needs {shortest} slot{'s' if shortest > 1 else ''} on its fastest "
            f"pool, and no window ends by slot {S}"
            if first is None
            else f"its earliest end is slot {first.start + job.durations[first.pool]} "
            f"(from {self._where(first)})"
        )
        return Cause(
            Code.DEADLINE_IMPOSSIBLE,
            f"cannot {_until(window)[0]} even alone on the cluster, beside inference and "
            f"outages: {when}",
            first,
        )

    def _team_limit(self, j: int, ready: int, latest: int) -> Cause | None:
        """`team-limit`: the nodes have room in time, but not within the job's team's limit."""
        job = self.instance.jobs[j]
        if job.team is None or not any(
            p in self.instance.teams[job.team].limit for p in job.durations
        ):
            return None
        if j in self.placed:
            others = (p for p in self.placed.values() if p.job != j)
            grid = self.grid(others, limits=False)
        else:  # (the unplanned share one view: the plan as it is)
            if self._unlimited is None:
                self._unlimited = self.grid(self.placed.values(), limits=False)
            grid = self._unlimited
        loose = earliest_start(grid, job, ready, latest)
        if loose is None:
            return None
        team = self.instance.teams[job.team]
        return Cause(
            Code.TEAM_LIMIT,
            f"its nodes have room from {self._where(loose)}, but team {team.name}'s jobs hold "
            f"its limit of {team.limit.get(loose.pool)} GPUs there",
            loose,
        )

    def _borrowed_view(self, j: int, team: int) -> tuple[IntArray, set[int], CapacityGrid | None]:
        """The plan without job j: its team usage, the work other teams run on borrowed GPUs,
        and a grid without that work (None when there is none). Shared by a team's unplanned
        jobs, whose plan is the same."""
        if j not in self.placed and team in self._borrowed:
            return self._borrowed[team]
        others = {q: p for q, p in self.placed.items() if q != j}
        used = team_used(self.instance, list(others.values()))
        gone = set(borrowed_work(self.instance, others, team, used))
        grid = self.grid(p for q, p in others.items() if q not in gone) if gone else None
        if j not in self.placed:
            self._borrowed[team] = (used, gone, grid)
        return used, gone, grid

    def _quota_borrowed(self, j: int, ready: int, latest: int) -> Cause | None:
        """`quota-borrowed-by` (`borrowed.py`): a window in time, within its team's quota,
        once other teams give back what they hold above their quotas."""
        inst, job = self.instance, self.instance.jobs[j]
        if job.team is None or not inst.teams[job.team].quota:
            return None
        used, gone, grid = self._borrowed_view(j, job.team)
        fit = None if grid is None else earliest_start(grid, job, ready, latest)
        if fit is None or not within_quota(inst, fit, j, used):
            return None
        end = fit.start + job.durations[fit.pool]
        near = {p.job: p for n in fit.nodes for p in self.on_node.get(n, ()) if p.job in gone}
        holders = sorted(q for q, p in near.items() if p.start < end and fit.start < p.end(inst))
        names = sorted(
            {inst.teams[t].name for q in holders if (t := inst.jobs[q].team) is not None}
        )
        return Cause(
            Code.QUOTA_BORROWED,
            f"would fit from {self._where(fit)} within team {inst.teams[job.team].name}'s quota "
            f"if {', '.join(names) or 'other teams'} gave back GPUs held above their quotas: "
            f"{self._named(holders)}",
            fit,
            tuple(holders),
        )

    def _others_quota(self, j: int, fit: Fit, holders: tuple[int, ...]) -> Cause | None:
        """`others-quota`: the lower-value work in the way runs within other teams' quotas,
        and the job would take its team above its own: moving that work would keep those teams
        out of their quotas (FORMAT.md, rule 9)."""
        inst, job = self.instance, self.instance.jobs[j]
        if job.team is None or not holders or not inst.teams[job.team].quota:
            return None
        used = self._borrowed_view(j, job.team)[0]
        if within_quota(inst, fit, j, used):
            return None
        end = fit.start + job.durations[fit.pool]
        owners = [inst.jobs[q].team for q in holders]
        if None in owners or job.team in owners:
            return None
        teams = {t for t in owners if t is not None}
        for t in teams:
            if (used[t, fit.pool, fit.start : end] > inst.teams[t].quota.get(fit.pool, 0)).any():
                return None
        names = ", ".join(sorted(inst.teams[t].name for t in teams))
        return Cause(
            Code.OTHERS_QUOTA,
            f"would fit from {self._where(fit)} by moving work worth less than it, but that work "
            f"runs within its own team's quota ({names}) and team {inst.teams[job.team].name} "
            f"would hold more than its quota there: {self._named(holders)}",
            fit,
            holders,
        )

    def _no_pool(self, job: Job) -> str:
        """Why no allowed pool ever holds the gang, at any time in the horizon: per pool, its run
        time against the horizon, or the most nodes that could hold its share for a whole run."""
        S, parts = self.instance.slots, []
        for p, d in sorted(job.durations.items()):
            pool, gang = self.instance.pools[p], job.gangs[p]
            if d > S:
                parts.append(
                    f"{pool.name}: runs {d} slots, longer than the horizon ({S})"
                    + open_end_hint(self.instance)
                )
                continue
            most = self.alone.most_nodes(p, gang, d)
            parts.append(
                f"{pool.name}: at most {most} of its {pool.nodes} nodes "
                f"keep {gang.gpus_per_node} GPUs free for {d} slots in a row beside inference "
                f"and outages (it needs {gang.nodes})"
            )
        return "no allowed pool can hold its gang: " + "; ".join(parts)


def _kept(diagnosis: Diagnosis, p: Placement, threshold: float | None) -> bool:
    """Whether placement p stays in a view of the jobs worth at least `threshold` (None: all)."""
    return threshold is None or diagnosis.worth(p.job) >= threshold


def unscheduled_causes(
    instance: Instance,
    placements: Sequence[Placement],
    layout: Layout,
    unused: str = "the solver did not place it there",
) -> dict[int, Cause]:
    """The cause of every job that `placements` leave out; `unused` says why room that the plan
    leaves goes unused (the solver's rule)."""
    placed = {p.job for p in placements}
    missing = [j.index for j in instance.jobs if j.index not in placed]
    if not missing:
        return {}
    return Diagnosis(instance, placements, layout, unused).causes(missing)
