"""A proven upper bound on pwo: the time-indexed relaxation, solved as far as time allows.

Every valid plan maps to a feasible point of the relaxation with the same pwo (`columns.py`), so
its optimum bounds pwo. The LP is solved by column generation (`master.py`) and certified by weak
duality at every step (`certificate.py`), so the bound holds wherever the time limit stops it.
A first LP has one row per dependency; when it converges, a second with rows at a few times per
dependency starts from its columns (slower, and a little tighter). On models small enough,
HiGHS's MIP dual bound on the same model (`mip.py`) then lowers it with the time left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from horizon_opt.model.instance import Instance
from horizon_opt.params import SearchParams
from horizon_opt.relaxation.columns import Columns, build_columns, with_dependency_rows
from horizon_opt.relaxation.master import LpResult, column_generation
from horizon_opt.relaxation.mip import mip_dual_bound, mip_fits


@dataclass(frozen=True)
class Bound:
    value: float
    seconds: float
    method: str  # "time-indexed LP", "time-indexed LP (stopped early)" or "time-indexed MIP"


@dataclass(frozen=True)
class Relaxation:
    """The time-indexed LP of an instance, solved as far as its time allowed.

    `lp.x` (over `lp.columns`) is the master's last primal solution: the solver uses it to
    guide its search (`guide.py`); only `lp.bound` is a proven bound.
    """

    cols: Columns
    lp: LpResult
    seconds: float


def solve_lp(
    instance: Instance,
    deadline: float,
    log: Callable[[str], None] | None = None,
    params: SearchParams | None = None,
    max_steps: int | None = None,
) -> Relaxation:
    """The LP with one row per dependency (every successor run needs a predecessor run that ends
    by the successor's latest start), by column generation until converged, `deadline` or
    `max_steps` master solves."""
    params = params or SearchParams()
    started = time.perf_counter()
    cols = build_columns(instance)
    lp = column_generation(cols, deadline, log, None, params.initial_runs, max_steps)
    if log is not None:
        log(
            f"time-indexed LP: bound {lp.bound:.3f}, {len(cols.job)} columns, {lp.iterations} "
            f"steps, {'converged' if lp.converged else 'stopped early'} "
            f"({time.perf_counter() - started:.2f}s)"
        )
    return Relaxation(cols, lp, time.perf_counter() - started)


def tighten(
    relaxation: Relaxation,
    deadline: float,
    log: Callable[[str], None] | None = None,
    params: SearchParams | None = None,
) -> Bound:
    """The LP's bound, lowered with the time left before `deadline`:

    - when the LP stopped early: column generation resumes from its columns;
    - when it converged and the model is small enough for the MIP: first the LP with rows at
      more of each successor's start times, started from the first LP's columns (slower, and a
      little tighter), then HiGHS's MIP dual bound on it.
    When the LP converged on a model too large for the MIP, nothing is tried: there the finer
    rows alone gain too little for their time.
    Every step only lowers the bound; whatever step the deadline stops, the bound is valid.
    """
    params = params or SearchParams()
    started = time.perf_counter()
    cols, lp = relaxation.cols, relaxation.lp

    def say(line: str) -> None:
        if log is not None:
            log(f"{line} ({time.perf_counter() - started:.2f}s)")

    def result(value: float, method: str) -> Bound:
        seconds = relaxation.seconds + time.perf_counter() - started
        return Bound(value, seconds, method)

    if not lp.converged:
        more = column_generation(cols, deadline, log, lp.columns, params.initial_runs)
        say(f"time-indexed LP, resumed: bound {more.bound:.3f}")
        value = min(lp.bound, more.bound)
        return result(value, "time-indexed LP" + ("" if more.converged else " (stopped early)"))
    value, method = lp.bound, "time-indexed LP"
    if not mip_fits(cols, params):
        return result(value, method)
    if cols.pairs and deadline - started >= 0.5 * relaxation.seconds:
        # (started from the first LP's columns, the second takes less time than the first
        # did; with less than half of that left, it is skipped)
        per_dep = max(params.dependency_rows_min, params.dependency_rows_max // len(cols.pairs))
        finer = with_dependency_rows(cols, per_dep)
        if finer.deps.rows > cols.deps.rows:
            second = column_generation(finer, deadline, log, lp.columns, params.initial_runs)
            say(f"time-indexed LP, {finer.deps.rows} dependency rows: bound {second.bound:.3f}")
            value = min(value, second.bound)
            if second.converged:
                cols = finer
    # (with less time, HiGHS would not finish its presolve and root LP: no dual bound)
    enough = 0.05 + params.mip_seconds_per_entry * float(cols.dur.sum())
    if deadline - time.perf_counter() >= enough:
        mip = mip_dual_bound(cols, deadline, params.mip_max_seconds)
        say(f"time-indexed MIP: dual bound {mip}")
        if mip is not None and mip < value:
            value, method = mip, "time-indexed MIP"
    return result(value, method)


def proven_bound(
    instance: Instance,
    time_limit: float,
    log: Callable[[str], None] | None = None,
    params: SearchParams | None = None,
) -> Bound:
    """A proven upper bound on pwo for every valid plan, within about `time_limit` seconds:
    `solve_lp`, then `tighten` with the time left. `log` gets one line per column-generation
    step and a summary."""
    deadline = time.perf_counter() + max(0.0, time_limit)
    return tighten(solve_lp(instance, deadline, log, params), deadline, log, params)
