"""An end discount (`SearchParams.end_discount`): pwo traded against when valuable work ends.

One 8-GPU node, 1-hour slots, an open end. `big` (8 GPUs, 4 slots, priority 10, no deadline)
is worth 10 x 32 = 320; `due` (8 GPUs, 4 slots, priority 1, deadline slot 4) is worth 32 and
ends on time only if it runs first. The end weights by value are 1000 for `big` and 100 for
`due`; the end rate is discount x 320 / 1000 pwo per weighted slot.

- Discount 0: pwo first, `due` at 0 and `big` at 4 (pwo 352).
- Discount 0.05 (rate 0.016): `due` first scores 352 - 0.016 x (100 x 4 + 1000 x 8) = 217.6;
  `big` first, `due` left out, 320 - 0.016 x 1000 x 4 = 256: `big` first (pwo 320).
- Discount 0.01 (rate 0.0032): 352 - 26.9 = 325.1 against 320 - 12.8 = 307.2: `due` first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_solvers import build
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.params import SearchParams

TWO = {
    "name": "discount",
    "horizon": {"slots": 12, "slot_minutes": 60, "open_end": True},
    "pools": [{"name": "p", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8}],
    "jobs": [
        {"id": "big", "priority": 10, "gpus": 8, "duration": 4},
        {"id": "due", "priority": 1, "gpus": 8, "duration": 4, "deadline": 4},
    ],
}


@pytest.mark.parametrize(
    ("discount", "first", "pwo"), [(0.0, "due", 352), (0.05, "big", 320), (0.01, "due", 352)]
)
def test_a_discount_starts_valuable_work_sooner_at_its_price_in_pwo(
    discount: float, first: str, pwo: float
) -> None:
    inst = build(TWO)
    params = SearchParams(end_discount=discount)
    plan = ho.solve(inst, "cpsat", time_limit=2.0, workers=1, seed=0, params=params)
    assert ho.check(inst, plan) == []
    starts = {a.job: a.start for a in plan.assignments}
    assert starts[first] == 0
    assert plan.objective == pytest.approx(pwo)
    assert plan.bound is not None and plan.bound >= 352 - 1e-9  # still a bound on pwo


@pytest.mark.parametrize(("discount", "first"), [(0.0, "due"), (0.05, "big")])
def test_cli_simulate_replans_with_an_end_discount(
    tmp_path: Path, discount: float, first: str
) -> None:
    """`simulate --end-discount` reaches the re-plans: in a world as planned, the first plan's
    order is the one above, and the summary says which discount."""
    path = tmp_path / "discount.yaml"
    path.write_text(yaml.safe_dump(TWO, sort_keys=False))
    out = tmp_path / "out"
    args = ["simulate", str(path), "-o", str(out), "--policy", "cpsat@event", "-t", "1"]
    args += ["--world", "synthetic", "--noise", "none", "--no-charts"]
    args += ["--end-discount", str(discount)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ran = json.loads((out / "cpsat@event.ran.json").read_text())
    assert {a["job"]: a["start"] for a in ran["assignments"]}[first] == 0
    said = "end discount 0.05" in (out / "summary.md").read_text()
    assert said == (discount > 0)


def test_cli_simulate_refuses_a_discount_out_of_range(tmp_path: Path) -> None:
    path = tmp_path / "discount.yaml"
    path.write_text(yaml.safe_dump(TWO, sort_keys=False))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["simulate", str(path), "-o", str(out), "--end-discount", "-1"]
    )
    assert result.exit_code == 2
    assert "--end-discount" in result.output and "Traceback" not in result.output
    assert not out.exists()
