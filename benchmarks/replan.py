"""Re-planning speed: a 20 s re-plan from the previous plan against a 120 s cold solve.

For each instance: a cold cpsat plan of the whole horizon; the state at a quarter of the horizon
if that plan ran as planned (`state.state_at`); then on that state (a) `replan` from the plan,
20 s, no freeze, and (b) a cold cpsat solve, 120 s. Reported: the pwo the re-plan starts from
(its first incumbent) against what the previous plan still holds in the state, and both runs'
pwo and gap against the better of their two proven bounds.

    .venv/bin/python benchmarks/replan.py --instances enterprise-large-s0 deadline-large-s0

Writes bench-results/replan.md (not committed) unless `--out` names another file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import horizon_opt as ho
from horizon_opt.loop.replan import replan
from horizon_opt.loop.state import state_at
from horizon_opt.model.compiler import compile_instance
from horizon_opt.plans.metrics import evaluate
from horizon_opt.solvers import Progress

HERE = Path(__file__).resolve().parent
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = HERE.parent / "bench-results" / "replan.md"


def run(name: str, cold: float, warm: float, workers: int) -> dict[str, Any]:
    inst = ho.load_instance(HERE.parent / "instances" / "bench" / f"{name}.yaml")
    options = ho.SolveOptions(time_limit=cold, workers=workers, seed=0)
    first = ho.solve(inst, "cpsat", options)
    now = inst.slots // 4
    demands = {s.index: s.demand.tolist() for s in inst.services}
    state = compile_instance(state_at(inst.spec, first, now), demands)
    # What the previous plan still holds in the state: its assignments of the state's jobs.
    held = first.model_copy(
        update={
            "assignments": [a for a in first.assignments if a.job in state.job_index],
            "unscheduled": [],
        }
    )
    previous_value = evaluate(state, held).pwo
    seen: list[Progress] = []
    started = time.perf_counter()
    warm_plan = replan(
        state,
        first,
        "cpsat",
        ho.SolveOptions(time_limit=warm, workers=workers, seed=0, on_progress=seen.append),
        freeze_slots=0,
    ).plan
    warm_wall = time.perf_counter() - started
    cold_plan = ho.solve(state, "cpsat", ho.SolveOptions(time_limit=cold, workers=workers, seed=0))
    bound = min(b for b in (warm_plan.bound, cold_plan.bound) if b is not None)
    assert not ho.check(state, warm_plan) and not ho.check(state, cold_plan)
    return {
        "instance": name,
        "now": now,
        "previous_value": previous_value,
        "warm_first_pwo": seen[0].objective if seen else None,
        "warm_first_seconds": seen[0].elapsed if seen else None,
        "warm_pwo": warm_plan.objective,
        "warm_gap": (bound - warm_plan.objective) / bound,
        "warm_wall": warm_wall,
        "cold_pwo": cold_plan.objective,
        "cold_gap": (bound - cold_plan.objective) / bound,
        "cold_wall": cold_plan.wall_seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--instances", nargs="+", default=["enterprise-large-s0", "deadline-large-s0"])
    ap.add_argument("--cold", type=float, default=120.0)
    ap.add_argument("--warm", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args()
    rows = []
    for name in a.instances:
        row = run(name, a.cold, a.warm, a.workers)
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    lines = [
        f"Re-plan at a quarter of the horizon: {a.warm:g} s from the previous plan against a "
        f"{a.cold:g} s cold solve (cpsat, {a.workers} workers); gaps against the better bound.",
        "",
        "| instance | previous plan's value | re-plan's first incumbent (s) | re-plan pwo / gap "
        "| cold pwo / gap | gap difference |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        first = (
            "-"
            if r["warm_first_pwo"] is None
            else (f"{r['warm_first_pwo']:,.0f} ({r['warm_first_seconds']:.1f} s)")
        )
        lines.append(
            f"| {r['instance']} | {r['previous_value']:,.0f} | {first} | "
            f"{r['warm_pwo']:,.0f} / {100 * r['warm_gap']:.1f}% | "
            f"{r['cold_pwo']:,.0f} / {100 * r['cold_gap']:.1f}% | "
            f"{100 * (r['warm_gap'] - r['cold_gap']):+.1f} pp |"
        )
    text = "\n".join(lines) + "\n"
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
