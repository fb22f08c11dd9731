"""SearchParams: every tuning value is read by the code, and an override reaches the search."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from test_solvers import INSTANCES, build

import horizon_opt as ho
from horizon_opt.params import SearchParams

SRC = Path(ho.__file__).parent


def test_every_parameter_is_read_somewhere() -> None:
    code = "".join(p.read_text() for p in SRC.rglob("*.py") if p.name != "params.py")
    unused = [
        f.name for f in dataclasses.fields(SearchParams) if not re.search(rf"\.{f.name}\b", code)
    ]
    assert unused == []


def test_params_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SearchParams().lns_nodes = 8  # type: ignore[misc]


def test_an_override_reaches_the_search(tmp_path: Path) -> None:
    # Without the full model (nor its packing of the pool-level runs), a tiny instance goes
    # through the LP, the guided start and the LNS; with it, the packing proves the optimum.
    inst = build(INSTANCES["layout"])
    log = tmp_path / "search.log"
    params = SearchParams(full_model_max_intervals=0)
    plan = ho.solve(inst, "cpsat", time_limit=2.0, workers=1, seed=0, log=log, params=params)
    assert ho.check(inst, plan) == []
    assert "full model" not in log.read_text()
    assert "packed with the replicas decided" not in log.read_text()
    assert "lns:" in log.read_text()
    ho.solve(inst, "cpsat", time_limit=2.0, workers=1, seed=0, log=log)
    assert "packed with the replicas decided: pwo 24.000" in log.read_text()
