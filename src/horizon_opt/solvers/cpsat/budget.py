"""The search's budget: the wall clock, and with one worker CP-SAT's deterministic time.

With one worker every step is charged in deterministic units (CP-SAT's own, plus a fixed charge
per Python-side step), so a rerun takes the same steps and gives the same plan, whatever the
machine's speed. The budget is then `repeatable` (`SolveOptions.repeatable` unless False): the
wall clock stops nothing, and the relaxation stops by its count of steps. Not repeatable (one
worker and `repeatable=False`): the wall clock also stops the search at the time limit. Ctrl-C
ends the budget, and so does the stop criterion (`SolveOptions.stop`), asked at every check.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from horizon_opt.params import SearchParams
from horizon_opt.solvers.progress import Progress
from horizon_opt.solvers.stop import StopCriterion


class Budget:
    def __init__(
        self,
        time_limit: float,
        deterministic: bool,
        params: SearchParams,
        repeatable: bool = False,
        stop: StopCriterion | None = None,
    ) -> None:
        self.started = time.perf_counter()
        self.time_limit = time_limit
        self.repeatable = deterministic and repeatable
        self.deadline = self.started + time_limit  # (the bound's work still keeps to it)
        self.deterministic = deterministic
        # (the LP before the search takes wall time, up to lp_share of it)
        self.per_second = params.deterministic_per_second
        self.units = time_limit * self.per_second * (1 - params.lp_share)
        self.used = 0.0
        self.interrupted = False  # set by Ctrl-C
        self.stop = stop
        self.progress: Callable[[], Progress] | None = None  # the search's, once it has a plan
        self.stopped_by: StopCriterion | None = None  # the criterion that ended the budget

    def clock(self) -> float:
        """Seconds of the budget used: a repeatable budget's are deterministic (its units at
        `deterministic_per_second`), so that a rerun reads the same at the same step."""
        if self.repeatable:
            return self.used / self.per_second
        return self.elapsed()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def charge(self, units: float) -> None:
        """Count deterministic units spent (ignored by the wall clock)."""
        self.used += units

    def units_spent(self, reserve: float = 0.0) -> bool:
        """With one worker: the deterministic budget, less `reserve` (a share), is used up."""
        return self.deterministic and self.used >= self.units * (1 - reserve)

    def out_of_time(self, reserve: float = 0.0) -> bool:
        """True when the budget, less `reserve` (a share of the time limit), is spent, or ended
        (Ctrl-C, the stop criterion)."""
        if self.interrupted or self.criterion_met() or self.units_spent(reserve):
            return True
        if self.repeatable:
            return False
        return time.perf_counter() >= self.deadline - reserve * self.time_limit

    def criterion_met(self) -> bool:
        """The stop criterion has said stop: it is asked the search's progress at each check
        until it does (every check of the budget, so one place decides for every step)."""
        if self.stopped_by is None and self.stop is not None and self.progress is not None:
            self.stopped_by = self.stop(self.progress())
        return self.stopped_by is not None

    def spent(self) -> float:
        """The share of the budget used so far (deterministic units with one worker)."""
        if self.deterministic:
            return self.used / max(self.units, 1e-9)
        return self.elapsed() / self.time_limit

    def lp_steps(self, params: SearchParams) -> int | None:
        """Column-generation steps the relaxation may take (None: until its wall deadline)."""
        if not self.repeatable:
            return None
        return max(1, math.ceil(params.lp_steps_per_second * params.lp_share * self.time_limit))

    def remaining(self, reserve: float = 0.0) -> float:
        """Budget left for CP-SAT (deterministic units with one worker, else seconds)."""
        if self.deterministic:
            return max(0.0, self.units * (1 - reserve) - self.used)
        return max(0.0, self.deadline - reserve * self.time_limit - time.perf_counter())

    def cpsat_limit(self, seconds: float) -> float:
        """A CP-SAT time limit of `seconds`, in the budget's units."""
        return seconds * (self.per_second if self.deterministic else 1.0)
