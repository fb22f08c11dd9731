"""With one worker, cpsat's plan does not depend on the machine's load: every stage stops on
deterministic work (CP-SAT's deterministic time, the LP's count of column-generation steps),
never on the wall clock, unless `SolveOptions.repeatable` is False.

A loaded machine is played by a clock that runs fast: every reading is 50 ms after the last.
A stage that stops on the wall clock then stops at once (with the time limit used up by a few
readings), and the plan is the start plan; one that stops on deterministic work does the same
work as on an idle machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from test_solvers import INSTANCES, build

import horizon_opt as ho
from horizon_opt.params import SearchParams

ONE = ho.SolveOptions(time_limit=1.0, workers=1, seed=0)
LNS_ONLY = SearchParams(full_model_max_intervals=0)  # the path of larger instances


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A machine so loaded that every reading of the clock is 50 ms after the last."""
    real = time.perf_counter
    now = [real()]

    def slow() -> float:
        now[0] = max(now[0] + 0.05, real())
        return now[0]

    monkeypatch.setattr(time, "perf_counter", slow)
    yield


def planned(instance: ho.Instance, options: ho.SolveOptions) -> tuple[ho.Plan, list[object]]:
    plan = ho.solve(instance, "cpsat", options)
    assert ho.check(instance, plan) == []
    return plan, [(a.job, a.pool, a.start, sorted(a.gpus)) for a in plan.assignments]


@pytest.mark.parametrize("name", ["layout", "replicas-in-the-way"])
@pytest.mark.parametrize("params", [SearchParams(), LNS_ONLY], ids=["small", "lns"])
def test_one_worker_plans_the_same_under_load(
    name: str, params: SearchParams, request: pytest.FixtureRequest
) -> None:
    inst = build(INSTANCES[name])
    options = ho.SolveOptions(time_limit=1.0, workers=1, seed=0, params=params)
    idle, idle_runs = planned(inst, options)
    if params == SearchParams():  # (the full model finds more than the start plan)
        assert idle.objective > ho.solve(inst, "greedy").objective
    request.getfixturevalue("loaded")
    busy, busy_runs = planned(inst, options)
    assert busy_runs == idle_runs
    assert busy.objective == idle.objective


def test_the_wall_clock_stops_one_worker_only_when_asked(loaded: None) -> None:
    # repeatable=False: the old behaviour, the wall clock stops the search; on the "loaded"
    # machine nothing beyond the start plan is found.
    inst = build(INSTANCES["layout"])
    greedy = ho.solve(inst, "greedy").objective
    clocked, _ = planned(inst, ho.SolveOptions(time_limit=1.0, workers=1, seed=0, repeatable=False))
    assert clocked.objective == greedy
    default, _ = planned(inst, ONE)
    assert default.objective > greedy


def test_repeatable_follows_the_workers_unless_set() -> None:
    assert ho.SolveOptions(workers=1).repeatable is None  # repeatable: one worker
    with pytest.raises(ValueError, match="repeatable needs one worker"):
        ho.SolveOptions(workers=2, repeatable=True)
    ho.SolveOptions(workers=2)  # (None with two workers: the wall clock, as before)
