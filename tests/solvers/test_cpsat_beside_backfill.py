"""With quotas cpsat searches within them (`quotas.py`), which forgoes borrowing that backfill,
the baseline, gains from: backfill's reclaimed plan is one of its fallbacks, so cpsat is never
below it. enterprise-teams-small-s0 is an instance where the search alone was."""

from __future__ import annotations

import pytest

import horizon_opt as ho
from horizon_opt.generate import generate
from horizon_opt.model.load import parse_spec


@pytest.mark.parametrize("family", ["enterprise-teams", "trace-teams"])
def test_cpsat_is_at_least_backfill_on_a_teams_instance(family: str) -> None:
    inst = ho.compile_instance(parse_spec(generate(family, "small", 0)))
    options = {"time_limit": 3.0, "workers": 1, "seed": 0}
    base = ho.solve(inst, "backfill", **options)
    plan = ho.solve(inst, "cpsat", **options)
    assert ho.check(inst, plan) == []
    assert plan.objective >= base.objective - 1e-9
