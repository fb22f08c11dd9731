"""What cpsat's left-shift (solvers/compact.py) is worth: the same solver with it on and off.

One shot: each instance solved with the left-shift on and off (cpsat, one worker, the time
limit below), pwo and mean wait. In the loop: the same instances replayed (docs/simulate.md)
with cpsat re-planning every 2 h and holding the next 2 h (the loop section's cadence), with
the left-shift on and off, in the synthetic and the trace world of the instance's seed;
realized pwo against backfill's in the same world.

    .venv/bin/python benchmarks/left_shift.py --jobs 2 --out benchmarks/results/left_shift.md
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import horizon_opt as ho
from horizon_opt.params import SearchParams
from horizon_opt.simulate.engine import replay
from horizon_opt.simulate.policy import policy
from horizon_opt.simulate.world import Noise
from horizon_opt.simulate.worlds import world_for

HERE = Path(__file__).resolve().parent
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = HERE.parent / "bench-results" / "left_shift.md"
FAMILIES = ("enterprise", "deadline", "trace")
LOOP = ("cpsat",)


def _options(seconds: float, on: bool) -> ho.SolveOptions:
    return ho.SolveOptions(
        time_limit=seconds, workers=1, seed=0, params=SearchParams(left_shift=on)
    )


def one_shot(name: str, seconds: float) -> dict[str, Any]:
    inst = ho.load_instance(HERE.parent / "instances" / "bench" / f"{name}.yaml")
    row: dict[str, Any] = {"instance": name}
    for on in (False, True):
        plan = ho.solve(inst, "cpsat", _options(seconds, on))
        assert not ho.check(inst, plan)
        row[f"pwo_{on}"] = plan.objective
        row[f"wait_{on}"] = plan.metrics.mean_wait_hours
    return row


def loop(name: str, world: str, seconds: float) -> dict[str, Any]:
    inst = ho.load_instance(HERE.parent / "instances" / "bench" / f"{name}.yaml")
    seed = int(name.rsplit("-s", 1)[1])
    actual = world_for(inst, world, seed, Noise())
    every, freeze = -(-120 // inst.slot_minutes), -(-120 // inst.slot_minutes)
    row: dict[str, Any] = {"instance": name, "world": world}
    base = replay(inst, actual, policy("backfill", every, freeze), _options(seconds, True))
    row["backfill"] = base.realized_pwo
    for name_ in LOOP:
        p = policy(name_, every, freeze, slot_minutes=inst.slot_minutes)
        for on in (False, True):
            r = replay(inst, actual, p, _options(seconds, on))
            row[f"{name_}_{on}"] = r.realized_pwo
    return row


def _pct(a: float, b: float) -> float:
    return 100.0 * (a / b - 1.0) if b else 0.0


def report(shots: list[dict[str, Any]], loops: list[dict[str, Any]], seconds: float) -> str:
    lines = [
        "# cpsat's left-shift, on and off",
        "",
        "From `.venv/bin/python benchmarks/left_shift.py --jobs 2` (cpsat one worker, "
        f"{seconds:g} s per plan; medium instances, seeds 0-2).",
        "",
        "## One shot",
        "",
        "| instance | pwo off | pwo on | mean wait off (h) | mean wait on (h) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in shots:
        lines.append(
            f"| {r['instance']} | {r['pwo_False']:,.0f} | {r['pwo_True']:,.0f} | "
            f"{r['wait_False']:.2f} | {r['wait_True']:.2f} |"
        )
    lines += ["", "## In the loop: realized pwo against backfill's, median of the runs", ""]
    lines += ["| world | policy | off | on | runs on > off |", "| --- | --- | ---: | ---: | ---: |"]
    for world in ("synthetic", "trace"):
        rows = [r for r in loops if r["world"] == world]
        for p in LOOP:
            off = [_pct(r[f"{p}_False"], r["backfill"]) for r in rows]
            on = [_pct(r[f"{p}_True"], r["backfill"]) for r in rows]
            better = sum(r[f"{p}_True"] > r[f"{p}_False"] for r in rows)
            lines.append(
                f"| {world} | {p} | {statistics.median(off):+.1f}% | "
                f"{statistics.median(on):+.1f}% | {better} of {len(rows)} |"
            )
    lines += ["", "Per run (realized pwo):", ""]
    lines += [
        "| instance | world | backfill | "
        + " | ".join(f"{p} {s}" for p in LOOP for s in ("off", "on"))
        + " |"
    ]
    lines += ["| --- | --- | ---: |" + " ---: |" * (2 * len(LOOP))]
    for r in loops:
        cells = " | ".join(f"{r[f'{p}_{on}']:,.0f}" for p in LOOP for on in (False, True))
        lines.append(f"| {r['instance']} | {r['world']} | {r['backfill']:,.0f} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    names = [f"{f}-medium-s{s}" for f in FAMILIES for s in args.seeds]
    with ProcessPoolExecutor(args.jobs) as pool:
        shots = list(pool.map(one_shot, names, [args.seconds] * len(names)))
        cases = [(n, w) for n in names for w in ("synthetic", "trace")]
        loops = list(
            pool.map(
                loop, [c[0] for c in cases], [c[1] for c in cases], [args.seconds] * len(cases)
            )
        )
    text = report(shots, loops, args.seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
