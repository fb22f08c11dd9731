"""The cpsat solver: warm start, proven bound, exact model when small, LP-guided LNS.

1. Incumbent: the best of the fifo plan, the greedy plan and a user hint, re-checked against
   the elastic reservation (so the result is never worse than any of them).
2. The time-indexed LP (`mipbound.py`) is solved first: its certified bound is known from then
   on, and its solution guides the search. On small instances HiGHS's MIP tightens it at once.
3. When the full node-level model is small enough, CP-SAT solves it: first with the inference
   layout fixed (quick), then with the replicas decided too (exact, so it can prove optimality).
   Each stops once its plan reaches the proven bound or its bound proves the plan's pwo.
4. Otherwise, a list scheduling of the LP's jobs (`guide.py`), improved by squeaky-wheel passes,
   becomes the incumbent when it is better, and with the time left, a large-neighbourhood
   search: free the jobs of a few nodes of one pool in a time window (plus waiting jobs, drawn
   by value and LP share), fix everything else, and re-solve that subproblem exactly with a
   short limit; keep it when it is no worse.
   Passes of ejection moves (`eject.py`) run before it and every EJECT_EVERY of the budget.
5. The bound is tightened (HiGHS's MIP on the same relaxation) when the model is small enough:
   by one worker during the search, or at the end (`plan_tightening`).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np
from ortools.sat.python import cp_model

from horizon_opt.inference import Layout, elastic_layout
from horizon_opt.instance import Instance, Pool
from horizon_opt.plan import Plan, Status
from horizon_opt.solvers import fifo, greedy
from horizon_opt.solvers.assemble import Placement, build_plan, drop_idle_late
from horizon_opt.solvers.cpsat.bound import earliest_starts, proven_bound
from horizon_opt.solvers.cpsat.eject import Ejector
from horizon_opt.solvers.cpsat.guide import (
    ListRule,
    LpGuide,
    gang_reservation,
    guided_placements,
    lp_guide,
    squeaky_wheel,
)
from horizon_opt.solvers.cpsat.incumbent import Incumbent, placements_from_plan
from horizon_opt.solvers.cpsat.mipbound import Relaxation, mip_fits, solve_lp, tighten
from horizon_opt.solvers.cpsat.model import NodeModel, Subproblem, value_scale, value_units
from horizon_opt.solvers.listsched import inherited_ranks, priority_large_first
from horizon_opt.solvers.options import Progress, SolveOptions

FULL_MODEL_MAX_INTERVALS = 4_000  # above this, LNS only: the full model stalls on medium instances
FULL_MODEL_SHARE = 0.5  # of the time limit, when the instance is not proven optimal first
LP_SHARE = 0.3  # of the time limit at most for the LP before the search (medium 1 s, xl 51 s)
BOUND_SHARE = 0.1  # of the time limit kept to tighten the bound after the search, or not
# (see `plan_tightening`): with 2+ workers, one tightens it during the search when HiGHS's MIP
# fits (medium: its dual bound ends 0.2-3% below the LP in 60 s).
AROUND_WAITING_SHARE = 0.5  # of the LNS neighbourhoods cut around a waiting job (else random)
# Time limit of one LNS subproblem (deterministic units: times DETERMINISTIC_PER_SECOND). On
# enterprise large, 60 s runs ended at 483.9k / 483.4k / 482.0k / 476.9k with 0.2 / 0.4 / 1 / 2 s:
# the neighbourhood sizes adapt to what solves in time, and many quick steps beat fewer big ones.
SUBPROBLEM_SECONDS = 0.4
# On small instances (full model), HiGHS's MIP on the LP's model first gets this share of the
# time left, at most SMALL_BOUND_SECONDS: it proves many small plans optimal within a second, and
# when it does not finish, the rest of the search tightens it again (see `plan_tightening`).
SMALL_BOUND_SHARE = 0.25
SMALL_BOUND_SECONDS = 2.0
# Of the budget at most, for squeaky-wheel passes over the LP-guided list scheduling (guide.py).
SQUEAKY_SHARE = 0.1
EJECT_EVERY = 0.2  # of the time limit: LNS time between two rounds of ejection moves (eject.py)
# With workers=1 the search budgets CP-SAT deterministic time, so runs repeat exactly. One unit
# took 3-7 s of wall time on the 2-core reference machine (model building included, more on
# larger instances); the budget is set so that the search usually ends before the time limit.
# The wall clock still stops it at the time limit: then a rerun may differ (large instances).
DETERMINISTIC_PER_SECOND = 0.15
# Each LNS subproblem is also charged this much (its Python side: choosing, building, applying),
# so that many tiny subproblems use up the budget too, before the wall clock stops them.
DETERMINISTIC_PER_SUBPROBLEM = 0.005
# ...and each squeaky-wheel pass this much per job (a pass over 1,500 jobs takes about 0.06 s).
DETERMINISTIC_PER_PASS_AND_JOB = 1e-5


def unscheduled_reason(
    instance: Instance, j: int, placed: dict[int, Placement], earliest: int
) -> str:
    job = instance.jobs[j]
    missing = [instance.jobs[q].id for q in job.after if q not in placed]
    if missing:
        return f"runs after {', '.join(missing)}, which is not scheduled"
    latest = job.latest_end(instance.slots)
    until = (
        "its deadline"
        if job.deadline is not None and latest < instance.slots
        else "the end of the horizon"
    )
    if all(latest - earliest < d for d in job.durations.values()):
        return f"cannot end by {until} (slot {latest}) even on an idle cluster: earliest start is slot {earliest}"
    return f"no room before {until} (slot {latest}) next to inference and the jobs this plan runs"


class _Stopper:
    """Ctrl-C stops the running CP-SAT search and the LNS loop; the best plan is kept."""

    def __init__(self) -> None:
        self.stopped = False
        self.active = False
        self.solvers: list[cp_model.CpSolver] = []

    def __call__(self, signum: int, frame: object) -> None:
        self.stopped = True
        for solver in list(self.solvers):
            solver.stop_search()

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Stopper]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self)
        self.active = True
        try:
            yield self
        finally:
            self.active = False
            signal.signal(signal.SIGINT, previous)

    def run(
        self,
        jobs: list[tuple[cp_model.CpSolver, cp_model.CpModel]],
        callback: cp_model.CpSolverSolutionCallback | None = None,
    ) -> list[Any]:
        """Solve each (solver, model) pair, all at once, each in its own thread (`callback`, for
        a single pair, sees its solutions).

        Threads also keep the main thread free to take Ctrl-C and stop the searches at once
        (Python runs signal handlers only between bytecodes, never inside a native call).
        """
        if len(jobs) == 1 and not self.active:
            return [jobs[0][0].solve(jobs[0][1], callback)]
        results: list[Any] = [None] * len(jobs)

        def work(i: int) -> None:
            results[i] = jobs[i][0].solve(jobs[i][1], callback)

        self.solvers = [solver for solver, _ in jobs]
        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(jobs))]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.1)
        self.solvers = []
        return results


class _OnSolution(cp_model.CpSolverSolutionCallback):
    """Passes each solution's objective value to a function."""

    def __init__(self, on_solution: Callable[[float], None]) -> None:
        super().__init__()
        self.on_solution = on_solution

    def on_solution_callback(self) -> None:
        self.on_solution(self.objective_value)


class CpsatSearch:
    def __init__(self, instance: Instance, options: SolveOptions, log: IO[str] | None) -> None:
        self.inst = instance
        self.opt = options
        self.log = log
        self.started = time.perf_counter()
        self.deadline = self.started + options.time_limit
        self.deterministic = options.workers == 1
        # (the LP before the search takes wall time, up to LP_SHARE of it)
        self.det_budget = options.time_limit * DETERMINISTIC_PER_SECOND * (1 - LP_SHARE)
        self.det_used = 0.0
        self.rng = np.random.default_rng(options.seed)
        self.scale = value_scale(instance)
        self.layout: Layout = elastic_layout(instance)
        self.est = earliest_starts(instance)
        self.stopper = _Stopper()
        self.build_seconds = 0.0
        self.bound: float | None = None  # the best proven bound so far, for progress reports
        self.bound_reserve = BOUND_SHARE  # of the time limit, kept after the search
        self.lns_workers = options.workers
        self.background: threading.Thread | None = None
        self.background_bound: float | None = None
        self.ejector: Ejector | None = None

    # -- helpers -------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def out_of_time(self, reserve: float = 0.0) -> bool:
        """True when the budget, less `reserve` (a share of the time limit), is spent."""
        if self.stopper.stopped:
            return True
        if self.deterministic and self.det_used >= self.det_budget * (1 - reserve):
            return True
        return time.perf_counter() >= self.deadline - reserve * self.opt.time_limit

    def spent(self) -> float:
        """The share of the budget used so far (deterministic units with one worker)."""
        if self.deterministic:
            return self.det_used / max(self.det_budget, 1e-9)
        return self.elapsed() / self.opt.time_limit

    def remaining(self, reserve: float = 0.0) -> float:
        """Budget left for CP-SAT (deterministic units with one worker, else seconds)."""
        if self.deterministic:
            return max(0.0, self.det_budget * (1 - reserve) - self.det_used)
        return max(0.0, self.deadline - reserve * self.opt.time_limit - time.perf_counter())

    def write_log(self, line: str) -> None:
        if self.log is not None:
            self.log.write(line + "\n")
            self.log.flush()

    def report(self, inc: Incumbent) -> None:
        if self.opt.on_progress is not None:
            self.opt.on_progress(Progress(self.elapsed(), inc.value(), self.bound))

    def build(self, sub: Subproblem) -> NodeModel:
        started = time.perf_counter()
        nm = NodeModel(self.inst, sub, self.scale)
        self.build_seconds += time.perf_counter() - started
        return nm

    def make_solver(
        self, limit: float, seed: int, workers: int, log_search: bool = False
    ) -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        params = solver.parameters
        params.num_workers = workers
        params.random_seed = seed
        if self.deterministic:
            params.max_deterministic_time = max(limit, 0.01)
        else:
            params.max_time_in_seconds = max(limit, 0.01)
        if log_search and self.log is not None:
            params.log_search_progress = True
            params.log_to_stdout = False
            solver.log_callback = self.write_log
        params.catch_sigint_signal = False  # Ctrl-C is ours: it keeps the best plan (see _Stopper)
        return solver

    def run_solver(
        self,
        nm: NodeModel,
        limit: float,
        seed: int,
        log_search: bool = False,
        stop_at_units: int | None = None,
    ) -> tuple[Any, cp_model.CpSolver]:
        """Solve. With `stop_at_units` (the value units of the best plan known), stop as soon as
        CP-SAT's bound proves that no plan is worth more, or a solution reaches the proven bound
        known so far: the rest would only settle the end-time tie-break."""
        solver = self.make_solver(limit, seed, self.opt.workers, log_search)
        callback = None
        if stop_at_units is not None:
            best = stop_at_units
            target = math.inf if self.bound is None else self.bound * self.scale - 1e-6

            def on_bound(bound: float) -> None:
                if nm.units_bound(bound) <= best:
                    solver.stop_search()

            def on_solution(objective: float) -> None:
                nonlocal best
                best = max(best, nm.units_of(objective))
                if best >= target:
                    solver.stop_search()

            solver.best_bound_callback = on_bound
            callback = _OnSolution(on_solution)
        (status,) = self.stopper.run([(solver, nm.model)], callback)
        self.det_used += solver.deterministic_time
        return status, solver

    # -- phases --------------------------------------------------------------------------------

    def initial(self) -> Incumbent:
        candidates = [fifo.solve(self.inst), greedy.solve(self.inst)]
        if self.opt.hint is not None:
            candidates.append(self.opt.hint)
        best: Incumbent | None = None
        for plan in candidates:
            inc = Incumbent(
                self.inst, self.layout.free, placements_from_plan(self.inst, plan, self.layout.free)
            )
            self.write_log(f"start candidate {plan.solver}: pwo {inc.value():.3f}")
            if best is None or inc.value() > best.value() + 1e-9:
                best = inc
        assert best is not None
        return best

    def full_subproblem(self, inc: Incumbent, decide_layout: bool) -> Subproblem:
        jobs = [j.index for j in self.inst.jobs]
        return Subproblem(
            jobs=jobs,
            nodes=list(range(self.inst.num_nodes)),
            residual=(self.inst.capacity if decide_layout else self.layout.free).astype(np.int64),
            earliest={j: self.est[j] for j in jobs},
            latest_end=dict.fromkeys(jobs, self.inst.slots),
            hint=dict(inc.placements),
            inference_hint=self.layout if decide_layout else None,
        )

    def full_model_size(self) -> int:
        return sum(self.inst.pools[p].nodes for j in self.inst.jobs for p in j.durations)

    def solve_full(
        self, inc: Incumbent, limit: float, decide_layout: bool
    ) -> tuple[bool, float | None]:
        """Solve the whole model; returns (proven optimal, proven bound on pwo).

        With `decide_layout`, inference replicas are variables too: the model is exact, and a
        better plan brings its own layout for the rest of the search. Without, they stay where
        the current layout puts them, and "optimal" holds only for that layout.
        """
        nm = self.build(self.full_subproblem(inc, decide_layout))
        # Stop once the bound proves the incumbent's pwo optimal: the rest would only prove
        # the end-time tie-break, which can take the whole limit.
        units = sum(
            value_units(p.earned(self.inst), self.scale)
            for p in inc.placements.values()
            if p.earned(self.inst) > 0  # (value_units is at least 1: late jobs count 0 here)
        )
        status, solver = self.run_solver(
            nm, limit, self.opt.seed, log_search=True, stop_at_units=units
        )
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            found = nm.extract(solver)
            if sum(p.earned(self.inst) for p in found.values()) >= inc.value() - 1e-9:
                if decide_layout:
                    self.layout = nm.extract_layout(solver)
                inc.rebase(self.layout.free, found)
        if status == cp_model.INFEASIBLE or status == cp_model.MODEL_INVALID:
            raise RuntimeError(f"internal error: full model status {solver.status_name(status)}")
        if status == cp_model.UNKNOWN:
            return False, None
        bound = nm.value_bound(solver) / self.scale
        return status == cp_model.OPTIMAL or inc.value() >= bound - 1e-9 * max(1.0, bound), bound

    def bound_deadline(self) -> float:
        """The bound gets the time left, at least a second (or a tenth of the limit)."""
        now = time.perf_counter()
        return now + max(1.0, self.deadline - now, 0.1 * self.opt.time_limit)

    def proven_bound(self, relaxation: Relaxation | None) -> float:
        """A bound valid for every plan: the LP's (solved before, or now), then tightened."""
        if self.background is not None:
            self.background.join(max(0.0, self.deadline - time.perf_counter()) + 5.0)
            assert relaxation is not None
            tightened = self.background_bound
            value = (
                relaxation.lp.bound if tightened is None else min(tightened, relaxation.lp.bound)
            )
            self.write_log(f"proven bound {value:.3f} (tightened during the search)")
            return value
        deadline = self.bound_deadline()
        if relaxation is None:
            found = proven_bound(self.inst, deadline - time.perf_counter(), self.write_log)
        else:
            found = tighten(relaxation, deadline, self.write_log)
        self.write_log(f"proven bound {found.value:.3f} ({found.method}, {found.seconds:.2f}s)")
        return found.value

    def take_background_bound(self) -> None:
        """The background MIP's bound, as soon as its thread is done: the search stops when the
        plan reaches it (enterprise small s0: proven at 8.4 s instead of at the 10 s limit)."""
        found = self.background_bound
        if self.background is not None and not self.background.is_alive() and found is not None:
            self.bound = found if self.bound is None else min(self.bound, found)

    def plan_tightening(self, relaxation: Relaxation) -> None:
        """Decide when the bound gets tightened (`mipbound.tighten`), if at all.

        - LP stopped early: column generation resumes at the end (BOUND_SHARE kept for it).
        - LP converged, model too large for HiGHS's MIP: not at all, no time kept.
        - LP converged, MIP fits, 2+ workers and no need to repeat exactly: one worker runs it
          during the whole search (HiGHS releases the GIL). On Ctrl-C that daemon thread is not
          waited for: it ends at the deadline.
        - Otherwise: at the end, in the BOUND_SHARE kept for it.
        """
        if relaxation.lp.converged and not mip_fits(relaxation.cols):
            self.bound_reserve = 0.0
            return
        if not relaxation.lp.converged or self.opt.workers < 2 or self.deterministic:
            return

        def work() -> None:
            self.background_bound = tighten(relaxation, self.deadline, self.write_log).value

        self.bound_reserve = 0.0
        self.lns_workers = self.opt.workers - 1
        self.background = threading.Thread(target=work, daemon=True)
        self.background.start()

    def relaxation(self) -> Relaxation:
        """The time-indexed LP, within LP_SHARE of the time limit."""
        deadline = min(self.deadline, self.started + LP_SHARE * self.opt.time_limit)
        return solve_lp(self.inst, max(deadline, time.perf_counter() + 0.5), self.write_log)

    def guided_start(self, inc: Incumbent, guide: LpGuide) -> None:
        """Take the LP-guided list scheduling, improved by squeaky-wheel passes (at most
        SQUEAKY_SHARE of the budget), when it beats the incumbent."""

        def candidate(layout: Layout, label: str) -> tuple[float, ListRule, list[Placement]]:
            started = time.perf_counter()
            rule, placements = guided_placements(self.inst, layout, guide)
            value = sum(p.earned(self.inst) for p in placements)
            self.write_log(
                f"start candidate LP-guided{label} ({rule.name}): pwo {value:.3f} "
                f"({time.perf_counter() - started:.2f}s)"
            )
            return value, rule, placements

        layout = self.layout
        found, rule, placements = candidate(layout, "")
        # The same with inference packed around the nodes the LP's whole-node gangs would use.
        around = elastic_layout(self.inst, around=gang_reservation(self.inst, guide, rule.ranks))
        found2, rule2, placements2 = candidate(around, ", inference around the LP's gangs")
        if found2 > found + 1e-9:
            found, rule, placements, layout = found2, rule2, placements2, around
        until = self.spent() + SQUEAKY_SHARE
        per_pass = DETERMINISTIC_PER_PASS_AND_JOB * len(self.inst.jobs)
        last_report = time.perf_counter()

        def stop() -> bool:
            nonlocal last_report
            self.det_used += per_pass
            if time.perf_counter() - last_report > 1.0:  # live progress keeps its clock going
                self.report(inc)
                last_report = time.perf_counter()
            return self.out_of_time(reserve=self.bound_reserve) or self.spent() >= until

        started = time.perf_counter()
        value, placements, passes = squeaky_wheel(
            self.inst, layout, guide, rule, placements, self.rng, stop
        )
        self.write_log(
            f"start candidate squeaky wheel: pwo {value:.3f} ({passes} passes, "
            f"{time.perf_counter() - started:.2f}s)"
        )
        if value > inc.value() + 1e-9:  # (value >= found: the passes start from that plan)
            self.layout = layout  # the plan's inference layout from now on
            inc.rebase(layout.free, {p.job: p for p in placements})

    # -- the search --------------------------------------------------------------------------

    def run(self, inc: Incumbent) -> float | None:
        """Improve `inc` within the budget; returns a proven bound on pwo (None on Ctrl-C)."""
        small = self.full_model_size() <= FULL_MODEL_MAX_INTERVALS
        relaxation: Relaxation | None = None
        tightened = False  # the bound already had its MIP, and nothing is left to tighten it
        if not self.out_of_time():
            relaxation = self.relaxation()
            self.bound = relaxation.lp.bound
            if small and not self.deterministic:
                # Tighten now (HiGHS's MIP is quick here): the full models below stop as soon
                # as their plan reaches the bound. (Not with one worker: a MIP stopped by the
                # clock would make the plan depend on the machine's speed.)
                now = time.perf_counter()
                left = max(0.0, self.deadline - now)
                deadline = now + min(SMALL_BOUND_SHARE * left, SMALL_BOUND_SECONDS)
                self.bound = tighten(relaxation, deadline, self.write_log).value
                self.bound_reserve = 0.0
                tightened = True
            self.report(inc)
        # The full model, first with the inference layout fixed (quick; its optimum holds for
        # that layout only), then exact, with the layout decided too: it can prove optimality.
        for decide_layout in (False, True) if small else ():
            if self.proven(inc) or self.out_of_time():
                break
            limit = self.remaining() * FULL_MODEL_SHARE
            optimal, full_bound = self.solve_full(inc, limit, decide_layout)
            layout = "decided" if decide_layout else "fixed"
            self.write_log(
                f"full model (inference layout {layout}): optimal {optimal}, "
                f"bound {full_bound}, pwo {inc.value():.3f}"
            )
            if decide_layout and full_bound is not None:
                self.bound = full_bound if self.bound is None else min(self.bound, full_bound)
        if relaxation is not None and not self.proven(inc) and not self.out_of_time():
            self.plan_tightening(relaxation)
            guide = lp_guide(relaxation)
            if guide is not None and not self.out_of_time():
                self.guided_start(inc, guide)
                self.report(inc)
            self.lns(inc, guide)
        if self.stopper.stopped:
            return None
        if not tightened or self.background is not None:
            found = self.proven_bound(relaxation)
            self.bound = found if self.bound is None else min(found, self.bound)
        self.report(inc)
        return self.bound

    def proven(self, inc: Incumbent) -> bool:
        """The incumbent's pwo reaches the best proven bound so far."""
        self.take_background_bound()
        return self.bound is not None and inc.value() >= self.bound - 1e-6 * max(1.0, self.bound)

    def eject(self, inc: Incumbent, guide: LpGuide | None) -> None:
        """Passes of ejection moves, most valuable waiting jobs first, while they gain."""
        if self.ejector is None:
            ranks = inherited_ranks(self.inst, priority_large_first)
            self.ejector = Ejector(inc, ranks)
        weights = np.array([j.value for j in self.inst.jobs])
        if guide is not None:
            weights *= 0.1 + guide.share

        def stop() -> bool:
            self.det_used += DETERMINISTIC_PER_SUBPROBLEM
            return self.out_of_time(reserve=self.bound_reserve)

        while not self.out_of_time(reserve=self.bound_reserve):
            result = self.ejector.run_pass(weights, stop)
            self.write_log(
                f"eject {self.elapsed():8.2f}s pwo {inc.value():.3f} ({result.tries} tries, "
                f"{result.hits} hits, +{result.gained:.3f})"
            )
            self.report(inc)
            if not result.hits:
                break

    def neighbourhood(
        self,
        inc: Incumbent,
        n_nodes: int,
        width: int,
        max_free: int,
        guide: LpGuide | None = None,
        avoid: Subproblem | None = None,
    ) -> Subproblem | None:
        """Free the jobs on a few nodes of one pool in a time window, plus waiting jobs.

        Half the time the window is random; the other half it is cut around one waiting job
        (drawn by value and LP share) on the nodes with the most room there, wide enough for
        its whole run: a long gang never fits a window shorter than itself.

        With `avoid`, the result shares no node, no job and no dependency with that subproblem,
        so both can be solved at once and both results applied.
        """
        inst = self.inst
        S = inst.slots
        avoid_nodes: set[int] = set(avoid.nodes) if avoid else set()
        avoid_jobs: set[int] = set()
        if avoid is not None:
            for j in avoid.jobs:
                avoid_jobs.add(j)
                avoid_jobs.update(inst.jobs[j].after)
                avoid_jobs.update(self.inst.successors[j])
        open_nodes = [[n for n in p.node_range if n not in avoid_nodes] for p in inst.pools]
        waiting = [
            j.index
            for j in inst.jobs
            if j.index not in inc.placements
            and j.index not in avoid_jobs
            and all(q in inc.placements for q in j.after)
        ]
        weights = np.array([inst.jobs[j].value for j in waiting], dtype=float)
        if guide is not None and waiting:
            weights *= 0.1 + guide.share[waiting]
        target = None
        if waiting and weights.sum() > 0 and self.rng.random() < AROUND_WAITING_SHARE:
            target = self.target_window(
                inc,
                waiting[int(self.rng.choice(len(waiting), p=weights / weights.sum()))],
                open_nodes,
                n_nodes,
                guide,
            )
        if target is not None:
            pool, chosen, a, b, seed_jobs = target
        else:
            sizes = np.array([len(nodes) for nodes in open_nodes], dtype=float)
            if sizes.sum() == 0:
                return None
            pool = inst.pools[int(self.rng.choice(len(inst.pools), p=sizes / sizes.sum()))]
            pool_nodes = np.array(open_nodes[pool.index])
            a = int(self.rng.integers(0, max(1, S - width + 1)))
            b = min(S, a + width)
            # Nodes drawn by the GPU-slots left idle in the window (plus one, so all can come).
            idle = (inc.free - inc.used)[pool_nodes, a:b].sum(axis=1) + 1.0
            chosen = set(
                int(n)
                for n in self.rng.choice(
                    pool_nodes,
                    size=min(n_nodes, len(pool_nodes)),
                    replace=False,
                    p=idle / idle.sum(),
                )
            )
            seed_jobs = []
        free_jobs: list[int] = []
        for j, p in inc.placements.items():
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
        self.rng.shuffle(free_jobs)
        free_jobs = seed_jobs + free_jobs[: max(0, max_free - len(seed_jobs))]
        # Waiting jobs that could run on this pool in the window, drawn by value (and LP share).
        fits = [
            i
            for i, j in enumerate(waiting)
            if j not in seed_jobs
            and pool.index in inst.jobs[j].durations
            and self.est[j] < b
            and (inst.jobs[j].latest_end(S) > a or self.inst.successors[j])
        ]
        room = min(len(fits), max(4, max_free - len(free_jobs)))
        if room and weights[fits].sum() > 0:
            w = weights[fits]
            picks = self.rng.choice(
                len(fits), size=min(room, int((w > 0).sum())), replace=False, p=w / w.sum()
            )
            free_jobs += [waiting[fits[int(i)]] for i in picks]
        if not free_jobs:
            return None
        free_set = set(free_jobs)
        nodes = sorted(chosen)
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
            lo = job.release
            for q in job.after:
                if q not in free_set:
                    lo = max(lo, inc.placements[q].end(inst))
            hi = S
            for s in self.inst.successors[j]:
                if s not in free_set and s in inc.placements:
                    hi = min(hi, inc.placements[s].start)
                    must.add(j)
            earliest[j] = lo
            latest[j] = hi
        kind = "window" if target is None else "around a waiting job"
        return Subproblem(free_jobs, nodes, residual, earliest, latest, must, dict(released), kind)

    def target_window(
        self,
        inc: Incumbent,
        j: int,
        open_nodes: list[list[int]],
        n_nodes: int,
        guide: LpGuide | None,
    ) -> tuple[Pool, set[int], int, int, list[int]] | None:
        """A window for waiting job j: a pool it may use, around the LP's start when known,
        on the nodes of that pool with the most GPU-slots free there."""
        inst = self.inst
        job = inst.jobs[j]
        pools = [
            p
            for p in job.durations
            if len(open_nodes[p]) >= job.gangs[p].nodes
        ]
        if not pools:
            return None
        p = (
            guide.pool[j]
            if guide is not None and guide.pool.get(j) in pools
            else int(self.rng.choice(pools))
        )
        pool = inst.pools[p]
        d = job.durations[p]
        lo, hi = self.est[j], job.latest_end(inst.slots)
        if hi - lo < d:
            hi = inst.slots  # runs late for a successor, if at all
        if hi - lo < d:
            return None
        centre = guide.start.get(j) if guide is not None else None
        if centre is None:
            centre = int(self.rng.integers(lo, hi - d + 1))
        margin = int(self.rng.integers(1, max(2, d)))
        a, b = max(lo, centre - margin), min(hi, centre + d + margin)
        nodes = np.array(open_nodes[p])
        room = (inc.free - inc.used)[nodes, a:b].sum(axis=1) + self.rng.random(len(nodes))
        k = max(n_nodes, job.gangs[p].nodes)
        chosen = set(int(n) for n in nodes[np.argsort(-room)[:k]])
        return pool, chosen, a, b, [j]

    def accept(
        self, inc: Incumbent, sub: Subproblem, nm: NodeModel, solver: cp_model.CpSolver, status: Any
    ) -> bool:
        """Apply a subproblem's solution when it is no worse; True when pwo went up."""
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return False
        found = nm.extract(solver)
        before = sum(p.earned(self.inst) for p in sub.hint.values())
        after = sum(p.earned(self.inst) for p in found.values())
        ends_before = sum(p.end(self.inst) for p in sub.hint.values())
        ends_after = sum(p.end(self.inst) for p in found.values())
        improved = after > before + 1e-9
        if improved or (after >= before - 1e-9 and ends_after <= ends_before):
            inc.replace(sub.jobs, found)
        return improved

    def lns(self, inc: Incumbent, guide: LpGuide | None) -> None:
        n_nodes = 4
        width = max(4, self.inst.slots // 4)
        max_free = 30
        sub_limit = SUBPROBLEM_SECONDS * (DETERMINISTIC_PER_SECOND if self.deterministic else 1.0)
        it = 0
        last_report = 0.0
        outcomes: Counter[str] = Counter()
        # With two or more workers and no need to repeat exactly, two disjoint subproblems are
        # solved at once, each with half the workers: small subproblems gain little from a
        # second worker, and twice as many of them are tried.
        pairs = self.lns_workers >= 2 and not self.deterministic
        next_eject = self.spent()
        while not self.out_of_time(reserve=self.bound_reserve) and not self.proven(inc):
            if self.spent() >= next_eject:
                self.eject(inc, guide)
                next_eject = self.spent() + EJECT_EVERY
                continue
            sub = self.neighbourhood(inc, n_nodes, width, max_free, guide)
            if sub is None:
                width = min(self.inst.slots, width * 2)
                continue
            subs = [sub]
            if pairs:
                other = self.neighbourhood(inc, n_nodes, width, max_free, guide, avoid=sub)
                if other is not None:
                    subs.append(other)
            models = [self.build(x) for x in subs]
            limit = min(sub_limit, self.remaining(reserve=self.bound_reserve))
            workers = max(1, self.lns_workers // len(subs))
            solvers = [
                self.make_solver(limit, self.opt.seed + it + k, workers) for k in range(len(subs))
            ]
            it += len(subs)
            statuses = self.stopper.run(
                [(sv, nm.model) for sv, nm in zip(solvers, models, strict=True)]
            )
            for x, nm, solver, status in zip(subs, models, solvers, statuses, strict=True):
                self.det_used += solver.deterministic_time + DETERMINISTIC_PER_SUBPROBLEM
                outcomes[solver.status_name(status)] += 1
                outcomes[x.kind] += 1
                improved = self.accept(inc, x, nm, solver, status)
                if improved:
                    outcomes[f"improved, {x.kind}"] += 1
                    self.write_log(
                        f"lns {it:5d} {self.elapsed():8.2f}s pwo {inc.value():.3f} "
                        f"(nodes {len(x.nodes)}, free jobs {len(x.jobs)}, {x.kind}, "
                        f"{solver.status_name(status)})"
                    )
                    self.report(inc)
                    last_report = self.elapsed()
            # Adapt: grow the neighbourhood when it is solved to optimality, shrink when not.
            if all(status == cp_model.OPTIMAL for status in statuses):
                n_nodes = min(n_nodes + 1, 64)
                max_free = min(max_free + 4, 120)
            else:
                n_nodes = max(2, n_nodes - 1)
                max_free = max(10, max_free - 4)
            if self.elapsed() - last_report > 1.0:
                self.report(inc)
                last_report = self.elapsed()
        if self.stopper.stopped:
            why = "Ctrl-C"
        elif self.deterministic and self.det_used >= self.det_budget * (1 - self.bound_reserve):
            why = "deterministic budget (a rerun repeats this run)"
        else:
            why = "time limit"
        self.write_log(
            f"lns: {it} subproblems in {self.elapsed():.1f}s ({dict(outcomes)}), "
            f"model building {self.build_seconds:.1f}s; stopped by {why}"
        )


def solve(instance: Instance, options: SolveOptions | None = None) -> Plan:
    options = options or SolveOptions()
    log = open(options.log, "w") if options.log is not None else None  # noqa: SIM115
    try:
        search = CpsatSearch(instance, options, log)
        with search.stopper.installed():
            inc = search.initial()
            search.report(inc)
            bound = search.run(inc)
        inc.replace(
            list(inc.placements),
            {p.job: p for p in drop_idle_late(instance, list(inc.placements.values()))},
        )
        value = inc.value()
        proven = bound is not None and value >= bound - 1e-6 * max(1.0, bound)
        status: Status = "optimal" if proven else "feasible"
        reasons = {
            j.index: unscheduled_reason(instance, j.index, inc.placements, search.est[j.index])
            for j in instance.jobs
            if j.index not in inc.placements
        }
        return build_plan(
            instance,
            "cpsat",
            list(inc.placements.values()),
            search.layout,
            reasons,
            started=search.started,
            status=status,
            bound=value if proven else bound,
            build_seconds=round(search.build_seconds, 3),
        )
    finally:
        if log is not None:
            log.close()
