"""The pool-level model's solution, placed on nodes (`starts.pool_start`).

The model's runs are a pool-level plan worth what the model says it is. The cpsat solver places
them by list scheduling; where they pack, the plan is worth as much, and a solved pool-level
model proves it optimal without any further search.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_bound import LATE_PREDECESSOR, ORDER, WHOLE_NODES
from test_lns import GANGS, LNS_ONLY, as_plan
from test_pool_bound import LIMITS, SOLO, SPLIT
from test_solvers import CHAIN, LAYOUT, REPLICAS_IN_THE_WAY, TROUGH, build
from typer.testing import CliRunner

import horizon_opt as ho
import horizon_opt.cli.run as run_module
import horizon_opt.solvers.cpsat.exact as exact
from horizon_opt.cli import app
from horizon_opt.model.instance import Instance
from horizon_opt.params import LOOP, SearchParams
from horizon_opt.relaxation.pool_model import PoolBound, PoolSolution, fitting_starts, pool_bound
from horizon_opt.solvers.cpsat.bounding import pool_done
from horizon_opt.solvers.cpsat.guide import solution_guide
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.cpsat.lns import Lns
from horizon_opt.solvers.cpsat.search import Search
from horizon_opt.solvers.cpsat.starts import guided_start, pool_start
from horizon_opt.solvers.options import SolveOptions


def runs_value(inst: Instance, runs: dict[int, tuple[int, int]]) -> float:
    """What a pool-level plan earns: each run's job value when it ends by the deadline."""
    return sum(
        inst.jobs[j].value
        for j, (p, s) in runs.items()
        if s + inst.jobs[j].durations[p] <= inst.windows[j].latest_end
    )


def solution_of(inst: Instance) -> PoolSolution:
    found = pool_bound(inst, LIMITS)
    assert found.solution is not None
    return found.solution


@pytest.mark.parametrize(
    "data",
    [TROUGH, WHOLE_NODES, LATE_PREDECESSOR, ORDER, CHAIN, LAYOUT, SPLIT, SOLO, GANGS],
    ids=lambda x: x["name"],
)
def test_the_runs_are_a_solution_worth_the_optimum(data: dict[str, Any]) -> None:
    inst = build(data)
    found = pool_bound(inst, LIMITS)
    assert found.optimal and found.solution is not None
    runs = found.solution.runs
    assert runs_value(inst, runs) == pytest.approx(found.value)
    assert found.solution.value == pytest.approx(found.value)
    starts = fitting_starts(inst)
    assert all(s in starts[j, p] for j, (p, s) in runs.items())


def test_the_runs_by_hand() -> None:
    # the 8-GPU gang fits only at slots 2-3, between the two inference peaks, on pool 0
    assert solution_of(build(TROUGH)).runs == {0: (0, 2)}
    # both gangs run, each at the one start its window allows
    assert solution_of(build(GANGS)).runs == {0: (0, 1), 1: (0, 2)}


def test_solution_guide() -> None:
    guide = solution_guide(build(GANGS), {1: (0, 2)})
    assert guide.share.tolist() == [0.0, 1.0]
    assert (guide.start, guide.pool) == ({1: 2}, {1: 0})
    assert guide.selected(1) and not guide.selected(0)


def empty_search(
    inst: Instance, params: SearchParams | None = None, time_limit: float = 5.0
) -> tuple[Search, Incumbent]:
    """A one-worker search on `inst` with an empty incumbent."""
    params = params or SearchParams()
    options = SolveOptions(time_limit=time_limit, workers=1, seed=0, params=params)
    search = Search(inst, options, None)
    return search, Incumbent(inst, search.layout.free, {})


def test_pool_start_places_the_runs() -> None:
    """From an empty plan: the model's two gangs (4 x 2 + 4 x 3 = 20) pack once inference goes
    around them, so the incumbent takes them and the runs are used up."""
    inst = build(GANGS)
    search, inc = empty_search(inst)
    search.pool_solution = solution_of(inst)
    pool_start(search, inc)
    assert inc.value() == pytest.approx(20.0)
    assert search.pool_solution is None


def test_a_solution_worth_no_more_is_not_tried() -> None:
    """GANGS' runs, said to be worth 0, are not tried against an empty incumbent (worth 0)."""
    inst = build(GANGS)
    search, inc = empty_search(inst)
    search.pool_solution = PoolSolution(solution_of(inst).runs, 0.0)
    pool_start(search, inc)
    assert inc.value() == 0.0 and search.pool_solution is None


def test_pool_start_places_what_packs() -> None:
    """SPLIT's pool-level runs (3 + 3 + 2 GPUs, worth 8) do not pack on two 4-GPU nodes: the
    list scheduling places the two 3-GPU jobs (6, the node-level optimum) and the 2-GPU job
    finds no node; trying the runs again changes nothing."""
    inst = build(SPLIT)
    search, inc = empty_search(inst)
    solution = solution_of(inst)
    search.pool_solution = solution
    pool_start(search, inc)
    assert inc.value() == pytest.approx(6.0)
    search.pool_solution = solution
    pool_start(search, inc)
    assert inc.value() == pytest.approx(6.0)


def test_cpsat_starts_from_the_packed_runs(tmp_path: Path) -> None:
    """Without the full model and with one worker, the pool-level model runs at once and its
    runs are placed before the LP-guided start: the plan (20) is proven optimal at once."""
    inst = build(GANGS)
    log = tmp_path / "search.log"
    plan = ho.solve(inst, "cpsat", time_limit=4.0, workers=1, seed=0, params=LNS_ONLY, log=log)
    assert plan.status == "optimal" and plan.objective == pytest.approx(20.0)
    assert ho.check(inst, plan) == []
    lines = [x for x in log.read_text().splitlines() if x.startswith("start candidate pool-")]
    assert any("pwo 20.000" in x for x in lines)
    assert not any("LP-guided" in x for x in log.read_text().splitlines())


def test_pack_runs_decides_the_replicas() -> None:
    """Beside the stacked replicas, the list scheduling places 22 of the runs' 30 (all but
    "pair"); `pack_runs` moves the replicas and places all 30, valid with its layout."""
    inst = build(REPLICAS_IN_THE_WAY)
    search, inc = empty_search(inst)
    solution = solution_of(inst)
    assert solution.value == pytest.approx(30.0)
    guided_start(search, inc, solution_guide(inst, solution.runs))
    assert inc.value() == pytest.approx(22.0)
    assert exact.pack_runs(search, inc, solution.runs, 5.0)
    assert inc.value() == pytest.approx(30.0)
    placements = list(inc.placements.values())
    assert ho.check(inst, as_plan(inst, search.layout, placements)) == []
    assert not exact.pack_runs(search, inc, solution.runs, 5.0)  # no better: nothing changes


def test_cpsat_packs_a_solved_models_runs(tmp_path: Path) -> None:
    """In the solver, a solved pool-level model's runs that the list scheduling does not pack
    go to `pack_runs` before the full model: the plan is proven optimal from them."""
    inst = build(REPLICAS_IN_THE_WAY)
    log = tmp_path / "search.log"
    plan = ho.solve(inst, "cpsat", time_limit=4.0, workers=1, seed=0, log=log)
    assert plan.status == "optimal" and plan.objective == pytest.approx(30.0)
    assert ho.check(inst, plan) == []
    assert "pool-level runs packed with the replicas decided: pwo 30.000" in log.read_text()


@pytest.mark.parametrize(("runs", "value"), [(True, 20.0), (False, 12.0)])
def test_the_search_takes_runs_that_arrive_later(runs: bool, value: float) -> None:
    """With 2+ workers the pool-level model answers during the search: the LNS places its runs
    when they arrive. Its own windows keep the stacked inference layout, on which only one of
    GANGS' gangs fits (12); the runs bring the layout around both (20)."""
    inst = build(GANGS)
    search, inc = empty_search(inst, LNS_ONLY, time_limit=1.0)
    search.pool_solution = solution_of(inst) if runs else None
    Lns(search, inc, None).run()
    assert inc.value() == pytest.approx(value)
    assert search.pool_solution is None


@pytest.mark.parametrize(
    ("use", "optimal", "taken"),
    [
        ("solved", True, True),
        ("solved", False, False),  # a stopped model's solution: a heuristic plan, unmeasured
        ("any", False, True),
        ("off", True, False),
    ],
)
def test_which_solutions_the_search_gets(use: str, optimal: bool, taken: bool) -> None:
    inst = build(GANGS)
    search, _ = empty_search(inst, SearchParams(pool_start=use))  # type: ignore[arg-type]
    solution = solution_of(inst)
    pool_done(search, PoolBound(20.0, optimal, 0.1, 0.01, solution))
    assert (search.pool_solution is solution) == taken


def test_loop_plans_go_without_the_pool_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`simulate` replays with `params.LOOP`, which places no pool-level solution."""
    seen: list[SolveOptions] = []
    real = run_module.simulate

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "simulate", spy)
    path = tmp_path / "gangs.yaml"
    path.write_text(yaml.safe_dump(GANGS, sort_keys=False))
    args = ["simulate", str(path), "-o", str(tmp_path / "out"), "-t", "1", "--no-charts"]
    result = CliRunner().invoke(app, [*args, "--policy", "cpsat@event"])
    assert result.exit_code == 0, result.output
    assert seen and all(options.params == LOOP for options in seen)
    assert LOOP.pool_start == "off" and SearchParams().pool_start == "solved"
