"""CP-SAT runs: solver parameters, threads, early stops, and Ctrl-C that keeps the best plan."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ortools.sat.python import cp_model

from horizon_opt.solvers.cpsat.budget import Budget
from horizon_opt.solvers.cpsat.model import NodeModel


class _OnSolution(cp_model.CpSolverSolutionCallback):
    """Passes each solution's objective value to a function."""

    def __init__(self, on_solution: Callable[[float], None]) -> None:
        super().__init__()
        self.on_solution = on_solution

    def on_solution_callback(self) -> None:
        self.on_solution(self.objective_value)


def _pass_on(previous: Any, signum: int, frame: object) -> None:
    """Tell a caller's own Ctrl-C handler too (cpsat with quotas: it skips its later stage);
    never Python's default, which would raise KeyboardInterrupt and lose the plan."""
    if callable(previous) and previous is not signal.default_int_handler:
        previous(signum, frame)


class Runner:
    """Runs CP-SAT models within a budget. Ctrl-C stops the running searches and ends the budget,
    so the search loop stops too and the best plan so far is kept."""

    def __init__(self, budget: Budget, log: Callable[[str], None] | None = None) -> None:
        self.budget = budget
        self.log = log
        self.active = False
        self.solvers: list[cp_model.CpSolver] = []
        self.previous: Any = None  # the Ctrl-C handler before the search's

    def __call__(self, signum: int, frame: object) -> None:
        self.budget.interrupted = True
        for solver in list(self.solvers):
            solver.stop_search()
        _pass_on(self.previous, signum, frame)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Runner]:
        """Take Ctrl-C while the search runs (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        self.previous = signal.signal(signal.SIGINT, self)
        self.active = True
        try:
            yield self
        finally:
            self.active = False
            signal.signal(signal.SIGINT, self.previous)

    def solver(
        self, limit: float, seed: int, workers: int, log_search: bool = False
    ) -> cp_model.CpSolver:
        """A CP-SAT solver limited to `limit` budget units (deterministic with one worker)."""
        solver = cp_model.CpSolver()
        params = solver.parameters
        params.num_workers = workers
        params.random_seed = seed
        if self.budget.deterministic:
            params.max_deterministic_time = max(limit, 0.01)
        else:
            params.max_time_in_seconds = max(limit, 0.01)
        if log_search and self.log is not None:
            params.log_search_progress = True
            params.log_to_stdout = False
            solver.log_callback = self.log
        params.catch_sigint_signal = False  # Ctrl-C is ours: it keeps the best plan
        return solver

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

    def solve_until_proven(
        self,
        nm: NodeModel,
        limit: float,
        seed: int,
        workers: int,
        best_units: int,
        target_units: float,
    ) -> tuple[Any, cp_model.CpSolver]:
        """Solve, with its search log, and stop as soon as CP-SAT's bound proves that no plan
        beats `best_units` (the value units of the best plan known), or a solution reaches
        `target_units` (the proven bound known so far): the rest would only settle the end-time
        tie-break."""
        solver = self.solver(limit, seed, workers, log_search=True)
        best = best_units
        weighing = nm.weighing
        # (with an end rate, a plan of no more units may still rank above: no early stop)
        stops = weighing.ties_only

        def on_bound(bound: float) -> None:
            if stops and weighing.units_bound(bound) <= best:
                solver.stop_search()

        def on_solution(objective: float) -> None:
            nonlocal best
            best = max(best, weighing.units_of(objective))
            if stops and best >= target_units:
                solver.stop_search()

        solver.best_bound_callback = on_bound
        (status,) = self.run([(solver, nm.model)], _OnSolution(on_solution))
        self.budget.charge(solver.deterministic_time)
        return status, solver
