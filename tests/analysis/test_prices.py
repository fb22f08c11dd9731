"""Capacity prices (`horizon_opt.analysis.prices`): the LP's duals as the pwo of one more GPU or node.

The prices must be positive where a pool's capacity binds and 0 where it has slack, and, for the
runs the LP already has, an upper estimate of how much the LP bound rises with one more node.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_bound import ORDER, WHOLE_NODES
from test_solvers import PRIORITY

import horizon_opt as ho
from horizon_opt.analysis.prices import capacity_prices, format_prices, prices_to_json
from horizon_opt.analysis.whatif import Change, changed_instance
from horizon_opt.export.charts import new_figure, plot_prices
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.relaxation import solve_lp

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-6

# 3 one-hour slots. Pool p: one 8-GPU node; pool q: one 8-GPU node. On p only, three 3-GPU jobs
# of one slot that must end by slot 1 (so they can only run at slot 0), values 3 GPUs x 1 h x
# priority: hi 9, mid 6, lo 3. 8 GPUs hold hi, mid and 2/3 of lo: 9 + 6 + 2/3 x 3 = 17 on p,
# and `small` on q (2 GPUs x 1 h x 1 = 2): the LP's bound is 19. lo is fractional, so its
# reduced cost 3 - 3 y = 0 gives the unique dual y[p, 0] = 1 pwo per GPU: one more GPU at slot 0
# (+1/3 of lo) adds 1; one more node adds G y = 8 at most (it adds 1, the rest of lo). Slots 1-2
# of p, and pool q (6 GPUs to spare), have slack: price 0. No gang takes a whole node, so the
# node rows' duals are 0.
BINDING: dict[str, Any] = {
    "name": "binding",
    "horizon": {"slots": 3, "slot_minutes": 60},
    "pools": [
        {"name": "p", "gpu_type": "P", "nodes": 1, "gpus_per_node": 8},
        {"name": "q", "gpu_type": "Q", "nodes": 1, "gpus_per_node": 8},
    ],
    "jobs": [
        {"id": "hi", "priority": 3, "gpus": 3, "duration": {"p": 1}, "deadline": 1},
        {"id": "mid", "priority": 2, "gpus": 3, "duration": {"p": 1}, "deadline": 1},
        {"id": "lo", "priority": 1, "gpus": 3, "duration": {"p": 1}, "deadline": 1},
        {"id": "small", "priority": 1, "gpus": 2, "duration": {"q": 1}},
    ],
}

# Two 4-GPU nodes, a service holding 2 GPUs at every slot: 6 GPUs free, so the 8-GPU gang
# (value 8 x 1 h x 1 = 8) fits nowhere and the LP has no run of it. Nothing else binds: every
# price is 0. One more node leaves 10 GPUs free and the gang runs: the bound rises by 8, which
# no dual prices, so `unpriced_jobs` counts the gang.
TOO_BIG: dict[str, Any] = {
    "name": "too-big",
    "horizon": {"slots": 2, "slot_minutes": 60},
    "pools": [{"name": "p", "gpu_type": "P", "nodes": 2, "gpus_per_node": 4}],
    "services": [{"name": "s", "pool": "p", "gpus_per_replica": 2, "demand": [1, 1]}],
    "jobs": [{"id": "gang", "priority": 1, "gpus": 8, "duration": 1}],
}


def build(data: dict[str, Any]) -> Instance:
    return compile_instance(parse_spec(copy.deepcopy(data)))


def one_more_node(instance: Instance, pool: int) -> Instance:
    """The instance with one more node (always up) in `pool`."""
    return changed_instance(instance, [Change("add", instance.pools[pool].name, nodes=1)])


def lp_bound(instance: Instance, seconds: float) -> float:
    relaxation = solve_lp(instance, time.perf_counter() + seconds)
    assert relaxation.lp.converged
    return relaxation.lp.bound


def test_binding_pool_has_a_price_and_slack_has_none() -> None:
    prices = capacity_prices(build(BINDING), 10.0)
    assert prices.converged and prices.pools == ("p", "q")
    assert prices.bound == pytest.approx(19.0, abs=TOL)
    np.testing.assert_allclose(prices.gpu, [[1, 0, 0], [0, 0, 0]], atol=TOL)
    np.testing.assert_allclose(prices.node, [[8, 0, 0], [0, 0, 0]], atol=TOL)
    np.testing.assert_allclose(prices.gpu_total, [1, 0], atol=TOL)
    np.testing.assert_allclose(prices.node_total, [8, 0], atol=TOL)
    assert prices.unpriced_jobs == (0, 0)


def test_one_more_gpu_is_priced_exactly_when_the_dual_is_unique() -> None:
    # One more GPU of p for the whole horizon (a 9-GPU node) is priced gpu_total[p] = 1: at
    # slot 0 it lets lo run whole (+1/3 x 3 = 1), at slots 1-2 p has slack. Bound 19 + 1 = 20.
    prices = capacity_prices(build(BINDING), 10.0)
    data = copy.deepcopy(BINDING)
    data["pools"][0]["gpus_per_node"] = 9
    assert lp_bound(build(data), 10.0) == pytest.approx(19.0 + prices.gpu_total[0], abs=TOL)


# With a positive price and no new runs: BINDING; demo's a100 pool; test_solvers' PRIORITY and
# test_bound's ORDER (one node, the capacity binds); test_bound's WHOLE_NODES (the price is the
# whole-node row's: one more node runs the second gang).
@pytest.mark.parametrize("name", ["binding", "demo", "priority", "order", "whole-nodes"])
def test_node_price_is_an_upper_estimate_of_the_bound_change(name: str) -> None:
    """bound(+1 node) <= bound + node price, for every pool whose extra node adds no new runs
    (for fixed duals the certificate is linear in the capacity; the LP optimum is below it)."""
    hand = {"binding": BINDING, "priority": PRIORITY, "order": ORDER, "whole-nodes": WHOLE_NODES}
    if name == "demo":
        instance = ho.load_instance(ROOT / "instances" / "demo.yaml")
    else:
        instance = build(hand[name])
    prices = capacity_prices(instance, 20.0)
    assert prices.converged
    checked = 0
    for p in range(len(instance.pools)):
        if prices.unpriced_jobs[p]:
            continue
        more = lp_bound(one_more_node(instance, p), 20.0)
        assert more <= prices.bound + prices.node_total[p] + TOL * max(1.0, prices.bound)
        checked += 1
    assert checked and prices.node_total.max() > 0


def test_runs_that_only_fit_with_the_new_node_are_counted_not_priced() -> None:
    instance = build(TOO_BIG)
    prices = capacity_prices(instance, 10.0)
    assert prices.bound == pytest.approx(0.0, abs=TOL)
    np.testing.assert_allclose(prices.node_total, [0.0], atol=TOL)
    assert prices.unpriced_jobs == (1,)
    assert lp_bound(one_more_node(instance, 0), 10.0) == pytest.approx(8.0, abs=TOL)
    assert "1 job runs that do not fit now" in format_prices(instance, prices)


def test_prices_from_an_lp_stopped_at_once_say_so() -> None:
    instance = ho.load_instance(ROOT / "instances" / "demo.yaml")
    prices = capacity_prices(instance, 0.0)
    assert not prices.converged
    assert np.all(prices.gpu >= 0) and np.all(prices.node >= 0)
    assert "stopped at its time limit" in format_prices(instance, prices)


def test_format_and_json_name_every_pool() -> None:
    instance = ho.load_instance(ROOT / "instances" / "demo.yaml")
    prices = capacity_prices(instance, 20.0)
    text = format_prices(instance, prices)
    for pool in instance.pools:
        assert f"\n{pool.name} " in text
    top = instance.pools[int(np.argmax(prices.node_total))].name
    assert f"One more {top} node is worth about +" in text
    data = json.loads(json.dumps(prices_to_json(instance, prices)))
    assert [p["name"] for p in data["pools"]] == [p.name for p in instance.pools]
    assert data["pools"][0]["node_total"] == pytest.approx(float(prices.node_total[0]))
    assert len(data["pools"][0]["node"]) == instance.slots


def test_format_without_binding_capacity() -> None:
    instance = build({**BINDING, "jobs": BINDING["jobs"][3:]})
    text = format_prices(instance, capacity_prices(instance, 10.0))
    assert "No pool's capacity binds" in text and "\nq " in text


def test_plot_prices_draws_into_a_new_or_given_axes() -> None:
    from matplotlib.axes import Axes

    instance = ho.load_instance(ROOT / "instances" / "demo.yaml")
    prices = capacity_prices(instance, 20.0)
    own = plot_prices(instance, prices)
    assert isinstance(own, Axes)
    assert own.get_yticklabels()[0].get_text().startswith("h100")
    given = new_figure(8, 3).add_subplot(1, 1, 1)
    assert plot_prices(build(BINDING), capacity_prices(build(BINDING), 10.0), ax=given) is given
