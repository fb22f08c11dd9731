"""Run-time prediction (`simulate/predict.py`) and the `-predict` policies that plan with it.

Hand lists of observations and hand-sized replays; each docstring works out the numbers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Spec, build
from test_simulate import world
from test_simulate_ladder import audit_holds, starts

import horizon_opt as ho
from horizon_opt.errors import InputError
from horizon_opt.simulate import Noise, draw_world, policy, replay
from horizon_opt.simulate.predict import Predictor, predicted_spec, quantile, slots
from horizon_opt.solvers import SolveOptions

FAST = SolveOptions(time_limit=1.0, workers=1, seed=0)


def taught(q: float = 0.5) -> Predictor:
    """Five training runs that held 2, 4, 6, 8 and 10 slots of an estimate of 10 (shares 0.2 to
    1.0) and two evaluation runs that held 1 and 3 of 10."""
    p = Predictor(q=q)
    for held in (2, 4, 6, 8, 10):
        p.observe("training", held, 10)
    for held in (1, 3):
        p.observe("evaluation", held, 10)
    return p


def test_quantile_is_the_nearest_rank() -> None:
    """Of 5 sorted shares, q 0.5 takes the ceil(2.5) = 3rd, q 0.7 the ceil(3.5) = 4th; of 10,
    q 0.7 the 7th (0.7 * 10 in floating point is just above 7, which must not round to 8); of
    none, the estimate itself (1)."""
    five = [0.2, 0.4, 0.6, 0.8, 1.0]
    assert (quantile(five, 0.5), quantile(five, 0.7)) == (0.6, 0.8)
    assert quantile([k / 10 for k in range(1, 11)], 0.7) == 0.7
    assert quantile([], 0.5) == 1.0


def test_groups_fall_back_to_all_kinds_then_to_the_estimate() -> None:
    """Training has 5 runs, enough: median 0.6 (q 0.7: 0.8). Evaluation has 2, too few: it
    falls back to all 7 runs (0.1 0.2 0.3 0.4 0.6 0.8 1.0), median the ceil(3.5) = 4th, 0.4;
    so does quantization, which has none. A predictor with no runs predicts the estimate."""
    p = taught()
    assert p.share("training") == 0.6
    assert taught(0.7).share("training") == 0.8
    assert p.share("evaluation") == p.share("quantization") == 0.4
    assert Predictor().share("training") == 1.0
    four = Predictor()
    for held in (1, 2, 3, 4):
        four.observe("training", held, 4)
    assert four.share("training") == 1.0  # 4 runs of every kind: still too few


def test_predicted_slots_round_up_within_the_limit() -> None:
    """0.4 of 7 slots is 2.8: 3 slots; 0.01 of 3 is at least 1 slot; a share above 1 (never
    observed: no run outlasts its limit) would still be capped at the estimate."""
    assert (slots(0.4, 7), slots(0.01, 3), slots(1.5, 4), slots(0.5, 8)) == (3, 1, 4, 4)


def test_a_running_job_is_conditioned_on_the_time_it_has_run() -> None:
    """Training shares 0.2 0.4 0.6 0.8 1.0; a job with estimate 10 started at slot 0.
    At t 1 (elapsed 0.1) all 5 exceed it: median 0.6, end 6. At t 5 (elapsed 0.5) 0.6 0.8 1.0
    do: the ceil(1.5) = 2nd, 0.8, end 8. At t 6, exactly 0.6 has run: that run no longer
    exceeds it, so 0.8 1.0 remain: the 1st, end 8. At t 8: only 1.0, its limit 10. Evaluation
    (all 7 runs) started at 2 with estimate 5, at t 4 (elapsed 0.4): 0.6 0.8 1.0, median 0.8,
    4 slots: end 6. With no runs at all the end is the limit."""
    p = taught()
    ends = [p.end("training", 10, 0, t) for t in (1, 5, 6, 8)]
    assert ends == [6, 8, 8, 10]
    assert p.end("evaluation", 5, 2, 4) == 6
    assert Predictor().end("training", 10, 0, 1) == 10


def test_a_job_that_outlives_every_run_is_predicted_its_limit() -> None:
    """Five runs of 0.2 to 0.6 of their estimate; a job of estimate 10 that has run 7 slots
    (0.7) has outlived them all: nothing is known beyond, so its limit, slot 10."""
    p = Predictor()
    for held in (2, 3, 4, 5, 6):
        p.observe("training", held, 10)
    assert p.end("training", 10, 0, 7) == 10


# TWO: pool a (8 GPUs) for the probes, pool b (4 GPUs) for `long` and `next`; 12 slots of 1 h.
TWO: Spec = {
    "name": "two",
    "horizon": {"slots": 12, "slot_minutes": 60},
    "pools": [
        {"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8},
        {"name": "b", "gpu_type": "B", "nodes": 1, "gpus_per_node": 4},
    ],
    "jobs": [
        *(
            {"id": f"probe{k}", "kind": "training", "priority": 1, "gpus": 1, "duration": 4}
            | {"pools": ["a"]}
            for k in range(5)
        ),
        {"id": "long", "kind": "training", "priority": 2, "gpus": 4, "duration": 8}
        | {"pools": ["b"]},
        {"id": "next", "kind": "training", "priority": 1, "gpus": 4, "duration": 2}
        | {"pools": ["b"]},
    ],
}


def test_predicted_spec_scales_every_duration_but_on_limited_pools() -> None:
    """With training's median share 0.6, `long` (8 slots) is planned for ceil(4.8) = 5, `next`
    (2) for ceil(1.2) = 2, each probe (4) for ceil(2.4) = 3; on a limited pool (b, index 1),
    the estimates stay."""
    inst = build(TWO)
    durations = {j.id: j.duration for j in predicted_spec(inst, taught()).jobs}
    assert durations["long"] == {"b": 5} and durations["next"] == {"b": 2}
    assert durations["probe0"] == {"a": 3}
    limited = {j.id: j.duration for j in predicted_spec(inst, taught(), {1}).jobs}
    assert limited["long"] == {"b": 8} and limited["probe0"] == {"a": 3}


def test_predicted_ends_start_the_next_job_earlier() -> None:
    """The 5 probes (estimate 4) really run half of it, slots 0-2; `long` (estimate 8) really
    runs half, 0-4. greedy re-plans every 3 slots, freeze 0, and holds its promises between.
    Plain: at 0 and again at 3 it sees `long` until 8 and promises `next` slot 8; the fill at 4
    (long ended) holds that promise; the re-plan at 6 starts `next` at 6.
    -predict: at 2 the probes end: 5 training runs, share 0.5. At 3 `long` has run 3/8 =
    0.375 of its estimate; every run exceeds it, median 0.5, so it ends at 0 + 4: `next` is
    promised slot 4, and starts there when `long` ends."""
    inst = build(TWO)
    w = world(inst, {f"probe{k}": 0.5 for k in range(5)} | {"long": 0.5})
    plain = replay(inst, w, policy("greedy", 3, 0), FAST)
    predicted = replay(inst, w, policy("greedy-predict", 3, 0), FAST)
    assert starts(plain)["next"] == 6
    assert starts(predicted)["next"] == 4
    audit_holds(inst, predicted)


# TAIL: one node of 8 GPUs, 8 slots of 1 h. Five 1-GPU probes (estimate 4) and `tail`, the
# whole node for an estimate of 8, released at slot 2: its limit ends at 10, past the horizon.
TAIL: Spec = {
    "name": "tail",
    "horizon": {"slots": 8, "slot_minutes": 60},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        *(
            {"id": f"probe{k}", "kind": "training", "priority": 1, "gpus": 1, "duration": 4}
            for k in range(5)
        ),
        {"id": "tail", "kind": "training", "priority": 1, "gpus": 8, "duration": 8}
        | {"release": 2},
    ],
}


@pytest.mark.parametrize(("share", "pwo"), [(0.25, 20.0 + 64.0), (1.0, 20.0)])
def test_predict_bets_on_a_job_whose_limit_passes_the_horizon(share: float, pwo: float) -> None:
    """The probes run 0.25 of 4: slot 0-1, 5 training runs of share 0.25 (pwo 5 * 1 * 4 = 20).
    backfill never starts `tail` (2 + 8 > 8). backfill-predict plans it for ceil(0.25 * 8) = 2
    slots and starts it at 2. If it really runs 0.25 of its limit it ends at 4, on time:
    + 1 * 8 * 8 = 64. If it runs its limit, the horizon stops it at 8, having earned nothing,
    and the audit logs that run until 8: it still holds."""
    inst = build(TAIL)
    w = world(inst, {f"probe{k}": 0.25 for k in range(5)} | {"tail": share})
    plain = replay(inst, w, policy("backfill", 2, 0), FAST)
    predicted = replay(inst, w, policy("backfill-predict", 2, 0), FAST)
    assert plain.realized_pwo == 20.0 and "tail" not in starts(plain)
    assert predicted.realized_pwo == pwo and starts(predicted)["tail"] == 2
    audit_holds(inst, predicted)
    assert predicted.audit is not None
    assert max(run.end for run in predicted.audit.runs) == (4 if share < 1 else 8)


def test_no_limit_runs_into_an_outage() -> None:
    """TAIL on 10 slots, `tail` with an estimate of 5, and the node down at slots 6-7. The
    probes teach share 0.25 by slot 1, so `tail` is predicted ceil(1.25) = 2 slots; but by its
    limit it would run into the outage from any start in 2-5, and past the horizon from 6-7:
    while the outage is ahead, the planner keeps the limit and `tail` waits. At slot 8, the
    outage over, it is planned for its 2 predicted slots and starts; it really runs
    ceil(0.25 * 5) = 2 slots, 8-10, on time: pwo 20 + 1 * 8 * 5 = 60."""
    spec = {
        **TAIL,
        "horizon": {"slots": 10, "slot_minutes": 60},
        "outages": [{"node": "a-0", "start": 6, "end": 8}],
        "jobs": [*TAIL["jobs"][:5], TAIL["jobs"][5] | {"duration": 5}],
    }
    inst = build(spec)
    w = world(inst, {j.id: 0.25 for j in inst.jobs})
    r = replay(inst, w, policy("backfill-predict", 2, 0), FAST)
    assert starts(r)["tail"] == 8 and r.realized_pwo == 60.0
    audit_holds(inst, r)


def test_predict_policy_names() -> None:
    """-predict is a suffix of its own: it takes any solver, and no other suffix with it."""
    p = policy("cpsat-predict", 4, 2)
    assert (p.solver, p.every, p.predicts_runtimes, p.knows_runtimes) == ("cpsat", 4, True, False)
    assert policy("backfill-predict", 4, 2).online
    assert not policy("cpsat-runtimes", 4, 2).predicts_runtimes
    for bad in ("cpsat-predict-runtimes", "cpsat-runtimes-predict", "cpsat-predict-oracle"):
        with pytest.raises(InputError):
            policy(bad, 4, 2)


@pytest.mark.parametrize("name", ["backfill-predict", "greedy-predict"])
def test_audit_of_predict_on_the_demo_in_a_drawn_world(name: str) -> None:
    """In a drawn world with early ends, failures and demand error, every plan of a -predict
    replay passes `check` (the engine raises otherwise) and its audit recomputes its figures."""
    demo = ho.load_instance(Path(__file__).parents[1] / "instances" / "demo.yaml")
    w = draw_world(demo, Noise(early=0.6, fail=0.2, demand=0.3), seed=1)
    r = replay(demo, w, policy(name, 8, 4), SolveOptions(time_limit=0.5, workers=1))
    audit_holds(demo, r)
