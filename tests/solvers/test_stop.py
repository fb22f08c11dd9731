"""Stop criteria (`solvers/stop.py`): what each says of a progress report, and cpsat stopping
on them with a valid plan.

The instance is `layout` with the full model off (the path of larger instances: LP, guided
starts, LNS): its start plan is worth 12 against a bound of 24 that the search never closes,
so the search runs until its budget unless a criterion stops it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_placed import STATE
from test_solvers import INSTANCES, build

import horizon_opt as ho
from horizon_opt.params import SearchParams
from horizon_opt.solvers import fifo
from horizon_opt.solvers.residual import placed_value, solve_around_placed
from horizon_opt.solvers.stop import ElapsedAtLeast

LNS_ONLY = SearchParams(full_model_max_intervals=0)


def progress(objective: float, bound: float | None, stalled: float = 0.0) -> ho.Progress:
    return ho.Progress(elapsed=1.0, objective=objective, bound=bound, stalled=stalled)


def test_gap_below_needs_a_proven_bound() -> None:
    gap = ho.GapBelow(0.1)
    assert gap(progress(95.0, None)) is None
    assert gap(progress(85.0, 100.0)) is None
    assert gap(progress(90.0, 100.0)) is gap
    assert ho.GapBelow(1.0)(progress(0.0, 100.0)) is not None


def test_no_improvement_reads_the_stall() -> None:
    wait = ho.NoImprovement(30.0)
    assert wait(progress(1.0, None, stalled=29.9)) is None
    assert wait(progress(1.0, None, stalled=30.0)) is wait


def test_elapsed_at_least_reads_the_budget_used() -> None:
    ends = ElapsedAtLeast(2.0)
    assert ends(ho.Progress(elapsed=1.9, objective=1.0, bound=None)) is None
    assert ends(ho.Progress(elapsed=2.0, objective=1.0, bound=None)) is ends


def test_any_of_names_the_first_criterion_that_says_stop() -> None:
    gap, wait = ho.GapBelow(0.01), ho.NoImprovement(5.0)
    both = ho.AnyOf(gap, wait)
    assert both(progress(50.0, 100.0, stalled=1.0)) is None
    assert both(progress(50.0, 100.0, stalled=6.0)) is wait
    assert both(progress(99.5, 100.0, stalled=6.0)) is gap


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ho.GapBelow(-0.1), "share must be from 0 to 1"),
        (lambda: ho.GapBelow(float("nan")), "share must be from 0 to 1"),
        (lambda: ho.NoImprovement(0.0), "seconds must be positive"),
        (lambda: ho.NoImprovement(float("inf")), "seconds must be positive"),
        (lambda: ElapsedAtLeast(0.0), "seconds must be positive"),
        (lambda: ho.AnyOf(), "at least one criterion"),
    ],
)
def test_bad_criteria_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def solved(stop: ho.StopCriterion | None, log: Path) -> tuple[ho.Plan, list[object], str]:
    """cpsat on `layout` (LNS path, one worker), checked; its runs and its search log."""
    inst = build(INSTANCES["layout"])
    plan = ho.solve(
        inst, "cpsat", time_limit=2.0, workers=1, seed=0, log=log, params=LNS_ONLY, stop=stop
    )
    assert ho.check(inst, plan) == []
    assert plan.objective == pytest.approx(ho.evaluate(inst, plan).pwo)
    runs = [(a.job, a.pool, a.start, sorted(a.gpus)) for a in plan.assignments]
    return plan, runs, log.read_text()


def test_gap_below_one_stops_at_the_first_plan_with_a_bound(tmp_path: Path) -> None:
    plan, _, log = solved(ho.GapBelow(1.0), tmp_path / "search.log")
    assert "search stopped by GapBelow(share=1.0)" in log
    assert "pool-guided" not in log and "lns" not in log  # no step after the bound
    assert plan.bound is not None and plan.gap is not None and plan.status == "feasible"


def subproblems(log: str) -> str:
    """The LNS's count of subproblems, from its summary line in the search log."""
    (line,) = [line for line in log.splitlines() if line.startswith("lns:")]
    return line.split(" in ")[0]


def test_a_huge_no_improvement_never_stops_before_time(tmp_path: Path) -> None:
    _, runs, log = solved(None, tmp_path / "plain.log")
    _, waited_runs, waited_log = solved(ho.NoImprovement(1e9), tmp_path / "waited.log")
    assert waited_runs == runs
    assert subproblems(waited_log) == subproblems(log)
    assert "stopped by deterministic budget" in waited_log
    assert "search stopped by" not in waited_log


def test_no_improvement_counts_deterministic_seconds_with_one_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = ho.NoImprovement(0.1)
    _, runs, log = solved(stop, tmp_path / "idle.log")
    assert "search stopped by NoImprovement(seconds=0.1)" in log
    assert subproblems(log) != subproblems(solved(None, tmp_path / "plain.log")[2])  # (sooner)
    # A loaded machine (every clock reading 50 ms after the last) stops at the same step.
    real, now = time.perf_counter, [time.perf_counter()]

    def slow() -> float:
        now[0] = max(now[0] + 0.05, real())
        return now[0]

    monkeypatch.setattr(time, "perf_counter", slow)
    _, busy_runs, busy_log = solved(stop, tmp_path / "busy.log")
    assert busy_runs == runs
    assert subproblems(busy_log) == subproblems(log)


def test_with_placed_jobs_the_criterion_judges_the_whole_plan() -> None:
    inst = build(STATE)
    offset = placed_value(inst)
    assert offset > 0
    whole_gap = 10.0 / (20.0 + offset)  # residual: pwo 10 of a bound 20, a gap of 0.5
    gap = ho.GapBelow((whole_gap + 0.5) / 2)
    seen: list[object] = []

    def run(residual: ho.Instance, options: ho.SolveOptions) -> ho.Plan:
        assert options.stop is not None
        seen.append(options.stop(progress(10.0, 20.0)))
        return fifo.solve(residual, options)

    plan = solve_around_placed(run, inst, ho.SolveOptions(workers=1, stop=gap))
    assert seen == [gap]
    assert ho.check(inst, plan) == []
