"""Large-neighbourhood search: free a few nodes' jobs in a time window, re-solve exactly.

A neighbourhood frees the jobs on a few nodes of one pool in a time window, plus waiting jobs
that could run there (drawn by value and LP share), fixes everything else, and CP-SAT solves
that subproblem exactly with a short limit; its plan is kept when it is no worse. Half the
windows are random; the other half are cut around one waiting job, on the nodes with the most
room there and wide enough for its whole run (a long gang never fits a shorter window).
Neighbourhoods grow while they solve to optimality and shrink when not. Rounds of ejection moves
(`eject.py`) run at the start and every `eject_every` of the budget.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

import horizon_opt.solvers.cpsat.starts as starts
from horizon_opt.model.instance import Pool
from horizon_opt.solvers.cpsat.eject import Ejector
from horizon_opt.solvers.cpsat.guide import LpGuide
from horizon_opt.solvers.cpsat.incumbent import Incumbent, ranks_above, weighted_ends
from horizon_opt.solvers.cpsat.model import NodeModel, Subproblem, room_beside
from horizon_opt.solvers.cpsat.search import Search
from horizon_opt.solvers.listsched import inherited_ranks, priority_large_first

# Whole-horizon windows in a row that free no job before the search stops: with an open end it
# never stops at the proven pwo, and a state may leave no job to move.
EMPTY_DRAWS = 20


class Lns:
    def __init__(self, search: Search, inc: Incumbent, guide: LpGuide | None) -> None:
        self.search = search
        self.inst = search.inst
        self.params = search.params
        self.rng = search.rng
        self.inc = inc
        self.guide = guide
        self.ejector: Ejector | None = None

    def weights(self, jobs: list[int]) -> np.ndarray:
        """Draw weights of jobs: value, times (floor + LP share) when the LP is known."""
        weights = np.array([self.inst.jobs[j].value for j in jobs], dtype=float)
        if self.guide is not None and jobs:
            weights *= self.params.lp_weight_floor + self.guide.share[jobs]
        return weights

    def eject(self) -> None:
        """Passes of ejection moves, most valuable waiting jobs first, while they gain."""
        search, inc = self.search, self.inc
        if self.ejector is None:
            ranks = inherited_ranks(self.inst, priority_large_first)
            self.ejector = Ejector(
                inc, ranks, self.params.eject_candidates, self.params.eject_max_cost_ratio
            )
        weights = np.array([j.value for j in self.inst.jobs])
        if self.guide is not None:
            weights *= self.params.lp_weight_floor + self.guide.share

        def stop() -> bool:
            search.budget.charge(self.params.deterministic_per_subproblem)
            return search.only_bound_time_left()

        while not search.only_bound_time_left():
            result = self.ejector.run_pass(weights, stop)
            search.write_log(
                f"eject {search.budget.elapsed():8.2f}s pwo {inc.value():.3f} ({result.tries} "
                f"tries, {result.hits} hits, +{result.gained:.3f})"
            )
            search.report(inc)
            if not result.hits:
                break

    def neighbourhood(
        self, n_nodes: int, width: int, max_free: int, avoid: Subproblem | None = None
    ) -> Subproblem | None:
        """Free the jobs on a few nodes of one pool in a time window, plus waiting jobs.

        With `avoid`, the result shares no node, no job and no dependency with that subproblem,
        so both can be solved at once and both results applied.
        """
        rng = self.rng
        avoid_nodes, avoid_jobs = self.avoided(avoid)
        open_nodes = [[n for n in p.node_range if n not in avoid_nodes] for p in self.inst.pools]
        waiting = self.waiting(avoid_jobs)
        weights = self.weights(waiting)
        target = None
        if waiting and weights.sum() > 0 and rng.random() < self.params.around_waiting_share:
            target = self.target_window(
                waiting[int(rng.choice(len(waiting), p=weights / weights.sum()))],
                open_nodes,
                n_nodes,
            )
        if target is not None:
            pool, chosen, a, b, seed_jobs = target
        else:
            window = self.random_window(open_nodes, n_nodes, width)
            if window is None:
                return None
            pool, chosen, a, b = window
            seed_jobs = []
        free_jobs = self.running_in(chosen, a, b, n_nodes, avoid_nodes, avoid_jobs)
        rng.shuffle(free_jobs)
        free_jobs = seed_jobs + free_jobs[: max(0, max_free - len(seed_jobs))]
        free_jobs += self.waiting_picks(
            waiting, weights, seed_jobs, pool, a, b, max_free - len(free_jobs)
        )
        if not free_jobs:
            return None
        kind = "window" if target is None else "around a waiting job"
        return self.subproblem(free_jobs, sorted(chosen), kind)

    def avoided(self, avoid: Subproblem | None) -> tuple[set[int], set[int]]:
        """The nodes and jobs a subproblem solved alongside `avoid` must leave alone: its nodes,
        and its jobs with their predecessors and successors."""
        avoid_nodes: set[int] = set(avoid.nodes) if avoid else set()
        avoid_jobs: set[int] = set()
        if avoid is not None:
            for j in avoid.jobs:
                avoid_jobs.add(j)
                avoid_jobs.update(self.inst.jobs[j].after)
                avoid_jobs.update(self.inst.successors[j])
        return avoid_nodes, avoid_jobs

    def waiting(self, avoid_jobs: set[int]) -> list[int]:
        """Unplaced jobs whose predecessors are all placed: those a subproblem may start."""
        inc = self.inc
        return [
            j.index
            for j in self.inst.jobs
            if j.index not in inc.placements
            and j.index not in avoid_jobs
            and all(q in inc.placements for q in j.after)
        ]

    def random_window(
        self, open_nodes: list[list[int]], n_nodes: int, width: int
    ) -> tuple[Pool, set[int], int, int] | None:
        """A pool drawn by its open nodes, a window of `width` slots, and nodes drawn by the
        GPU-slots left idle there; None when no node is open."""
        inst, inc, rng = self.inst, self.inc, self.rng
        S = inst.slots
        sizes = np.array([len(nodes) for nodes in open_nodes], dtype=float)
        if sizes.sum() == 0:
            return None
        pool = inst.pools[int(rng.choice(len(inst.pools), p=sizes / sizes.sum()))]
        pool_nodes = np.array(open_nodes[pool.index])
        a = int(rng.integers(0, max(1, S - width + 1)))
        b = min(S, a + width)
        # Nodes drawn by the GPU-slots left idle in the window (plus one, so all can come).
        idle = (inc.free - inc.used)[pool_nodes, a:b].sum(axis=1) + 1.0
        chosen = set(
            int(n)
            for n in rng.choice(
                pool_nodes,
                size=min(n_nodes, len(pool_nodes)),
                replace=False,
                p=idle / idle.sum(),
            )
        )
        return pool, chosen, a, b

    def running_in(
        self,
        chosen: set[int],
        a: int,
        b: int,
        n_nodes: int,
        avoid_nodes: set[int],
        avoid_jobs: set[int],
    ) -> list[int]:
        """Placed jobs on the chosen nodes in [a, b). A gang that is only partly on them brings
        its other nodes into `chosen` (up to twice `n_nodes`, none of `avoid_nodes`)."""
        inst = self.inst
        free_jobs: list[int] = []
        for j, p in self.inc.placements.items():
            if j in avoid_jobs:
                continue
            if p.start < b and p.end(inst) > a and chosen.intersection(p.nodes):
                if not chosen.issuperset(p.nodes):
                    if len(chosen) + len(p.nodes) > 2 * n_nodes or avoid_nodes.intersection(
                        p.nodes
                    ):
                        continue
                    chosen.update(p.nodes)
                free_jobs.append(j)
        return free_jobs

    def waiting_picks(
        self,
        waiting: list[int],
        weights: np.ndarray,
        seed_jobs: list[int],
        pool: Pool,
        a: int,
        b: int,
        left: int,
    ) -> list[int]:
        """Waiting jobs that could run on this pool in the window, drawn by value (and LP
        share): `left` of them, at least `lns_waiting_min`."""
        inst = self.inst
        fits = [
            i
            for i, j in enumerate(waiting)
            if j not in seed_jobs
            and pool.index in inst.jobs[j].durations
            and inst.windows[j].ready < b
            and (inst.windows[j].latest_end > a or inst.successors[j])
        ]
        room = min(len(fits), max(self.params.lns_waiting_min, left))
        if not (room and weights[fits].sum() > 0):
            return []
        w = weights[fits]
        picks = self.rng.choice(
            len(fits), size=min(room, int((w > 0).sum())), replace=False, p=w / w.sum()
        )
        return [waiting[fits[int(i)]] for i in picks]

    def subproblem(self, free_jobs: list[int], nodes: list[int], kind: str) -> Subproblem:
        """Free `free_jobs` on `nodes`; every other job stays where it is."""
        inst, inc = self.inst, self.inc
        free_set = set(free_jobs)
        released = {j: inc.placements[j] for j in free_jobs if j in inc.placements}
        residual = (inc.free - inc.used)[nodes].copy()
        row = {n: r for r, n in enumerate(nodes)}
        for p in released.values():
            for n in p.nodes:
                if n in row:
                    residual[row[n], p.start : p.end(inst)] += p.gpus_per_node(inst)
        earliest: dict[int, int] = {}
        latest: dict[int, int] = {}
        must: set[int] = set()
        for j in free_jobs:
            job = inst.jobs[j]
            lo = inst.windows[j].after(
                inc.placements[q].end(inst) for q in job.after if q not in free_set
            )
            hi = inst.windows[j].horizon
            for s in inst.successors[j]:
                if s not in free_set and s in inc.placements:
                    hi = min(hi, inc.placements[s].start)
                    must.add(j)
            earliest[j] = lo
            latest[j] = hi
        return Subproblem(
            free_jobs,
            nodes,
            residual,
            earliest,
            latest,
            must,
            dict(released),
            kind,
            team_room=room_beside(
                inst, [p for q, p in inc.placements.items() if q not in free_set]
            ),
        )

    def target_window(
        self, j: int, open_nodes: list[list[int]], n_nodes: int
    ) -> tuple[Pool, set[int], int, int, list[int]] | None:
        """A window for waiting job j: a pool it may use, around the LP's start when known,
        on the nodes of that pool with the most GPU-slots free there."""
        inst, inc, rng, guide = self.inst, self.inc, self.rng, self.guide
        job = inst.jobs[j]
        pools = [p for p in job.durations if len(open_nodes[p]) >= job.gangs[p].nodes]
        if not pools:
            return None
        p = (
            guide.pool[j]
            if guide is not None and guide.pool.get(j) in pools
            else int(rng.choice(pools))
        )
        pool = inst.pools[p]
        d = job.durations[p]
        window = inst.windows[j]
        lo, hi = window.ready, window.latest_end
        if hi - lo < d:
            hi = window.horizon  # runs late for a successor, if at all
        if hi - lo < d:
            return None
        centre = guide.start.get(j) if guide is not None else None
        if centre is None:
            centre = int(rng.integers(lo, hi - d + 1))
        margin = int(rng.integers(1, max(2, d)))
        a, b = max(lo, centre - margin), min(hi, centre + d + margin)
        nodes = np.array(open_nodes[p])
        room = (inc.free - inc.used)[nodes, a:b].sum(axis=1) + rng.random(len(nodes))
        k = max(n_nodes, job.gangs[p].nodes)
        chosen = set(int(n) for n in nodes[np.argsort(-room)[:k]])
        return pool, chosen, a, b, [j]

    def accept(
        self, sub: Subproblem, nm: NodeModel, solver: cp_model.CpSolver, status: Any
    ) -> bool:
        """Apply a subproblem's solution when it is no worse; True when pwo went up."""
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return False
        inst = self.inst
        found = nm.extract(solver)
        before = sum(p.earned(inst) for p in sub.hint.values())
        after = sum(p.earned(inst) for p in found.values())
        weights = self.search.end_weights
        ends_before = weighted_ends(inst, weights, sub.hint.values())
        ends_after = weighted_ends(inst, weights, found.values())
        improved = after > before + 1e-9
        even = not ranks_above(before, ends_before, after, ends_after, self.search.end_rate)
        if even:  # (no worse: a tie of pwo and weighted ends included)
            self.inc.replace(sub.jobs, found)
        return improved

    def run(self) -> None:
        """Improve the incumbent until the budget (less the bound's reserve) is spent, the stop
        criterion says stop, or its pwo reaches the proven bound."""
        search, inc, params, budget = self.search, self.inc, self.params, self.search.budget
        n_nodes = params.lns_nodes
        width = max(4, int(self.inst.slots * params.lns_width_share))
        max_free = params.lns_free_jobs
        sub_limit = budget.cpsat_limit(params.subproblem_seconds)
        it = 0
        last_report = 0.0
        outcomes: Counter[str] = Counter()
        # With two or more workers and no need to repeat exactly, two disjoint subproblems are
        # solved at once, each with half the workers: small subproblems gain little from a
        # second worker, and twice as many of them are tried.
        pairs = search.lns_workers >= 2 and not budget.deterministic
        next_eject = budget.spent()
        empty = 0  # whole-horizon windows in a row that freed no job
        while not search.only_bound_time_left() and not search.settled(inc):
            if search.pool_solution is not None:  # the background pool-level model is done
                starts.pool_start(search, inc)
                continue
            if budget.spent() >= next_eject:
                self.eject()
                next_eject = budget.spent() + params.eject_every
                continue
            sub = self.neighbourhood(n_nodes, width, max_free)
            if sub is None:
                budget.charge(params.deterministic_per_subproblem)  # (a deterministic clock)
                empty = empty + 1 if width >= self.inst.slots else 0
                if empty >= EMPTY_DRAWS:  # whole-horizon windows free no job: none to move
                    break
                width = min(self.inst.slots, width * 2)
                continue
            empty = 0
            subs = [sub]
            if pairs:
                other = self.neighbourhood(n_nodes, width, max_free, avoid=sub)
                if other is not None:
                    subs.append(other)
            models = [search.build(x) for x in subs]
            limit = min(sub_limit, budget.remaining(reserve=search.bound_reserve))
            workers = max(1, search.lns_workers // len(subs))
            solvers = [
                search.runner.solver(limit, search.opt.seed + it + k, workers)
                for k in range(len(subs))
            ]
            it += len(subs)
            statuses = search.runner.run(
                [(sv, nm.model) for sv, nm in zip(solvers, models, strict=True)]
            )
            for x, nm, solver, status in zip(subs, models, solvers, statuses, strict=True):
                budget.charge(solver.deterministic_time + params.deterministic_per_subproblem)
                outcomes[solver.status_name(status)] += 1
                outcomes[x.kind] += 1
                if self.accept(x, nm, solver, status):
                    outcomes[f"improved, {x.kind}"] += 1
                    search.write_log(
                        f"lns {it:5d} {budget.elapsed():8.2f}s pwo {inc.value():.3f} "
                        f"(nodes {len(x.nodes)}, free jobs {len(x.jobs)}, {x.kind}, "
                        f"{solver.status_name(status)})"
                    )
                    search.report(inc)
                    last_report = budget.elapsed()
            n_nodes, max_free = self.adapt(
                n_nodes, max_free, all(status == cp_model.OPTIMAL for status in statuses)
            )
            if budget.elapsed() - last_report > 1.0:
                search.report(inc)
                last_report = budget.elapsed()
        search.write_log(
            f"lns: {it} subproblems in {budget.elapsed():.1f}s ({dict(outcomes)}), "
            f"model building {search.build_seconds:.1f}s; stopped by {self.stopped_by()}"
        )

    def stopped_by(self) -> str:
        """What ended the loop, for its log line."""
        budget = self.search.budget
        if budget.interrupted:
            return "Ctrl-C"
        if budget.stopped_by is not None:
            return str(budget.stopped_by)
        if budget.units_spent(self.search.bound_reserve):
            return "deterministic budget (a rerun repeats this run)"
        return "time limit"

    def adapt(self, n_nodes: int, max_free: int, all_optimal: bool) -> tuple[int, int]:
        """Grow the neighbourhood when it was solved to optimality, shrink it when not."""
        lo_nodes, hi_nodes = self.params.lns_nodes_range
        lo_free, hi_free = self.params.lns_free_jobs_range
        step = self.params.lns_free_jobs_step
        if all_optimal:
            return min(n_nodes + 1, hi_nodes), min(max_free + step, hi_free)
        return max(lo_nodes, n_nodes - 1), max(lo_free, max_free - step)
