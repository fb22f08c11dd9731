"""What every step of the cpsat pipeline shares: the instance and options, the budget, the
inference layout in use, the best proven bound so far, the search log and progress reports."""

from __future__ import annotations

import threading
import time
from typing import IO

import numpy as np

from horizon_opt.inference import Layout, elastic_layout
from horizon_opt.instance import Instance, earliest_starts
from horizon_opt.solvers.cpsat.budget import Budget
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.cpsat.model import NodeModel, Subproblem, value_scale
from horizon_opt.solvers.cpsat.runner import Runner
from horizon_opt.solvers.options import Progress, SolveOptions


class Search:
    def __init__(self, instance: Instance, options: SolveOptions, log: IO[str] | None) -> None:
        self.inst = instance
        self.opt = options
        self.params = options.params
        self.log = log
        self.budget = Budget(options.time_limit, options.workers == 1, self.params)
        self.runner = Runner(self.budget, self.write_log if log is not None else None)
        self.rng = np.random.default_rng(options.seed)
        self.scale = value_scale(instance)
        self.layout: Layout = elastic_layout(instance)  # the plan's inference layout
        self.est = earliest_starts(instance)
        self.build_seconds = 0.0
        self.bound: float | None = None  # the best proven bound so far
        self.bound_reserve = self.params.bound_share  # of the time limit, kept after the search
        self.lns_workers = options.workers  # one less while a worker tightens the bound
        self.background: threading.Thread | None = None  # that worker
        self.background_bound: float | None = None  # and its result

    def write_log(self, line: str) -> None:
        if self.log is not None:
            self.log.write(line + "\n")
            self.log.flush()

    def report(self, inc: Incumbent) -> None:
        if self.opt.on_progress is not None:
            self.opt.on_progress(Progress(self.budget.elapsed(), inc.value(), self.bound))

    def lower_bound_to(self, value: float) -> None:
        self.bound = value if self.bound is None else min(self.bound, value)

    def take_background_bound(self) -> None:
        """The background MIP's bound, as soon as its thread is done: the search stops when the
        plan reaches it."""
        found = self.background_bound
        if self.background is not None and not self.background.is_alive() and found is not None:
            self.lower_bound_to(found)

    def proven(self, inc: Incumbent) -> bool:
        """The incumbent's pwo reaches the best proven bound so far."""
        self.take_background_bound()
        return self.bound is not None and inc.value() >= self.bound - 1e-6 * max(1.0, self.bound)

    def only_bound_time_left(self) -> bool:
        """The budget is spent, but for what is kept to tighten the bound at the end."""
        return self.budget.out_of_time(reserve=self.bound_reserve)

    def build(self, sub: Subproblem) -> NodeModel:
        started = time.perf_counter()
        nm = NodeModel(self.inst, sub, self.scale)
        self.build_seconds += time.perf_counter() - started
        return nm
