"""What every step of the cpsat pipeline shares: the instance and options, the budget, the
inference layout in use, the best proven bound so far, the search log and progress (reported,
and judged by the stop criterion)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import IO

import numpy as np

from horizon_opt.model.instance import Instance, earliest_starts
from horizon_opt.plans.inference import Layout, elastic_layout
from horizon_opt.plans.tolerance import reaches, slack
from horizon_opt.relaxation.pool_model import PoolSolution
from horizon_opt.solvers.cpsat.budget import Budget
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.cpsat.model import NodeModel, Subproblem
from horizon_opt.solvers.cpsat.objective import end_rate, end_weights, value_scale
from horizon_opt.solvers.cpsat.runner import Runner
from horizon_opt.solvers.options import SolveOptions
from horizon_opt.solvers.progress import Progress


class Search:
    def __init__(
        self,
        instance: Instance,
        options: SolveOptions,
        log: IO[str] | None,
        bounds_for: Instance | None = None,
    ) -> None:
        self.inst = instance
        # The instance the relaxations bound: the one searched, or one with more room (the
        # instance as written, when the search runs within teams' quotas: `quotas.py`).
        self.bound_inst = instance if bounds_for is None else bounds_for
        self.opt = options
        self.params = options.params
        self.log = log
        self.log_lock = threading.Lock()  # (background solves write to it too)
        self.budget = Budget(
            options.time_limit,
            options.workers == 1,
            self.params,
            options.repeatable is not False,
            options.stop,
        )
        self.runner = Runner(self.budget, self.write_log if log is not None else None)
        self.rng = np.random.default_rng(options.seed)
        self.scale = value_scale(instance)
        self.end_weights = end_weights(instance, self.params.end_order)  # once per search
        self.end_rate = end_rate(instance, self.params.end_discount)
        self.layout: Layout = elastic_layout(instance)  # the plan's inference layout
        self.est = earliest_starts(instance)
        # With an open end every job can end in time: plans rank by when work ends.
        self.open_end = instance.written_slots is not None
        self.build_seconds = 0.0
        self.bound: float | None = None  # the best proven bound so far
        self.bound_source: str | None = None  # what proved it: lp, mip, pool-cpsat, node-cpsat
        self.bound_reserve = self.params.bound_share  # of the time limit, kept after the search
        self.lns_workers = options.workers  # one less while a worker tightens the bound
        self.background: threading.Thread | None = None  # that worker (the last one started)
        self.background_found: list[tuple[float, str]] = []  # its bounds, as they are proven
        self.stop_background: list[Callable[[], None]] = []  # stops its running solves
        self.pool_closed = False  # the pool-level model is solved: no relaxation proves less
        self.pool_solution: PoolSolution | None = None  # its solution, not yet tried
        self.best: float | None = None  # the best pwo seen...
        self.improved_at = 0.0  # ...first seen at this reading of the budget's clock

    def write_log(self, line: str) -> None:
        with self.log_lock:
            if self.log is not None:
                self.log.write(line + "\n")
                self.log.flush()

    def close_log(self) -> None:
        """No more lines: a background solve not waited for (Ctrl-C, the stop criterion) may
        outlive the log file."""
        with self.log_lock:
            self.log = None

    def track(self, inc: Incumbent) -> None:
        """The search proper begins (the relaxation has its bound): from now on the budget's
        checks ask the stop criterion about `inc`'s progress, and the stall clock starts now,
        so that the relaxation's time counts as no stall."""
        self.improved_at = self.budget.clock()
        self.budget.progress = lambda: self.progress(inc)

    def progress(self, inc: Incumbent) -> Progress:
        """`inc`'s progress; the first look at a better pwo restarts the stall clock, so each
        improvement is timed at the step that found it (a deterministic one when repeatable)."""
        value, now = inc.value(), self.budget.clock()
        if self.best is None or value > self.best + slack(self.best):
            self.best, self.improved_at = value, now
        return Progress(self.budget.elapsed(), value, self.bound, now - self.improved_at)

    def report(self, inc: Incumbent) -> None:
        if self.opt.on_progress is not None:
            self.opt.on_progress(self.progress(inc))

    def lower_bound_to(self, value: float, source: str) -> None:
        """Keep the lower bound, and the source that proved it (on a tie, the first)."""
        if self.bound is None or value < self.bound:
            self.bound, self.bound_source = value, source

    def take_background_bound(self) -> None:
        """The background worker's bounds, each as soon as it is proven: the search stops when
        the plan reaches one."""
        for value, source in list(self.background_found):
            self.lower_bound_to(value, source)

    def proven(self, inc: Incumbent) -> bool:
        """The incumbent's pwo reaches the best proven bound so far."""
        self.take_background_bound()
        return self.bound is not None and reaches(inc.value(), self.bound)

    def settled(self, inc: Incumbent) -> bool:
        """Nothing left to search for: the pwo is proven, and neither an open end nor an end
        rate leaves when work ends to improve, or there is no job to plan."""
        ends_count = self.open_end or self.end_rate > 0
        return self.proven(inc) and (not ends_count or not self.inst.jobs)

    def only_bound_time_left(self) -> bool:
        """The budget is spent, but for what is kept to tighten the bound at the end."""
        return self.budget.out_of_time(reserve=self.bound_reserve)

    def build(self, sub: Subproblem) -> NodeModel:
        started = time.perf_counter()
        nm = NodeModel(self.inst, sub, self.scale, self.end_weights, self.end_rate)
        self.build_seconds += time.perf_counter() - started
        return nm
