"""Cause codes in practice: what every solver's late and unplanned jobs are told, per code.

For each instance and solver: the plan (checked), the cause code of every late or unplanned job
(`horizon_opt.analysis.explain`), and how many of them are left without something to act on (neither
"no priority is enough" with its reason, nor a priority that would outrank the work in the way,
nor a start by moving only lower-value work). That count must be 0.

    .venv/bin/python benchmarks/causes.py --time-limit 20

Writes a markdown table (default: bench-results/causes.md, not committed; `--out
benchmarks/results/causes.md` rewrites the committed one).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import horizon_opt as ho
from horizon_opt.analysis.explain import explain
from horizon_opt.solvers import SOLVERS
from horizon_opt.solvers.causes import Code

ROOT = Path(__file__).resolve().parent.parent
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = ROOT / "bench-results" / "causes.md"
INSTANCES = ["instances/demo.yaml", "instances/bench/enterprise-medium-s0.yaml"]


def _row(path: str, solver: str, time_limit: float) -> list[str]:
    inst = ho.load_instance(ROOT / path)
    plan = ho.solve(inst, solver, time_limit=time_limit, workers=1)
    if ho.check(inst, plan):
        raise SystemExit(f"{solver} on {path}: the plan fails the checker")
    started = time.perf_counter()
    records = explain(inst, plan)
    seconds = time.perf_counter() - started
    waiting = [r for r in records if r.status in ("late", "not-planned")]
    codes = Counter(r.code for r in waiting)
    blank = sum(
        r.no_priority is None and r.priority_needed is None and r.insert_at is None for r in waiting
    )
    missing = sum(not (u.code and u.reason) for u in plan.unscheduled)
    return [
        inst.name,
        solver,
        str(sum(r.status == "not-planned" for r in waiting)),
        str(sum(r.status == "late" for r in waiting)),
        *(str(codes.get(code, 0)) for code in Code),
        str(missing),
        str(blank),
        f"{seconds:.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per cpsat plan")
    parser.add_argument("--instances", nargs="+", default=INSTANCES)
    parser.add_argument("--out", "--output", dest="output", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    head = [
        "instance",
        "solver",
        "unplanned",
        "late",
        *(str(code) for code in Code),
        "no code",
        "nothing to act on",
        "explain s",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for path in args.instances:
        for solver in SOLVERS:
            row = _row(path, solver, args.time_limit)
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    text = (
        "# Cause codes per solver\n\n"
        f"`.venv/bin/python benchmarks/causes.py --time-limit {args.time_limit:g}`: late and "
        "unplanned jobs per cause code; `no code`: unscheduled entries of the plan without a "
        "code or reason; `nothing to act on`: explain records with neither a reason no priority "
        "is enough, a priority threshold, nor a start by moving lower-value work.\n\n"
        + "\n".join(lines)
        + "\n"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"written: {args.output}")


if __name__ == "__main__":
    main()
