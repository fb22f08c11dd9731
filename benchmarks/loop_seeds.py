"""Loop mechanisms on many draws of one instance's world: paired, repeatable replays.

Each variant (a policy, optionally with cpsat search parameters changed) is replayed in the
synthetic worlds of seeds 0..N-1 of one instance, beside backfill in the same world; cpsat plans
with one worker, so every replay is repeatable (`SolveOptions.repeatable`) and two variants
differ by what they decide, not by the machine's load. Reports per variant the median, mean and
worst realized pwo against backfill's, how many seeds it beats backfill on, the median promise
error (docs/simulate.md), and per seed.

    .venv/bin/python benchmarks/loop_seeds.py --jobs 2 --seeds 10 \\
        --out benchmarks/results/loop_seeds.md
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import horizon_opt as ho
from horizon_opt.params import LOOP
from horizon_opt.simulate.engine import replay
from horizon_opt.simulate.policy import policy
from horizon_opt.simulate.world import Noise, draw_world

HERE = Path(__file__).resolve().parent
# label -> (policy, cpsat search parameters changed from the defaults, stability weight, weight
# of a held promise)
VARIANTS: dict[str, tuple[str, dict[str, object], float, float]] = {
    "cpsat@event": ("cpsat@event", {}, 0.0, 0.0),
    "cpsat@event (no fill)": ("cpsat@event", {"fill_gaps": False}, 0.0, 0.0),
    "cpsat@event (stability 0.05)": ("cpsat@event", {}, 0.05, 0.0),
    "cpsat@event (stability 0.2)": ("cpsat@event", {}, 0.2, 0.0),
    **{
        f"cpsat@event (keep promises {w:g})": ("cpsat@event", {}, 0.0, w)
        for w in (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
    },
    "backfill-expect": ("backfill-expect", {}, 0.0, 0.0),
    "cpsat-expect@event": ("cpsat-expect@event", {}, 0.0, 0.0),
    "cpsat-pack@event": ("cpsat-pack@event", {}, 0.0, 0.0),
    "cpsat-pack@event (keep promises 0.1)": ("cpsat-pack@event", {}, 0.0, 0.1),
    "cpsat-runtimes@event": ("cpsat-runtimes@event", {}, 0.0, 0.0),
    **{
        f"{name} ({label})": (name, changed, 0.0, 0.0)
        for name in ("cpsat@event", "cpsat-pack@event")
        for label, changed in (
            ("no pool start", {"pool_start": "off"}),
            ("pool start when solved", {"pool_start": "solved"}),
            ("pool start from any solution", {"pool_start": "any"}),
        )
    },
}


def run(path: str, seed: int, seconds: float, labels: tuple[str, ...]) -> dict[str, float]:
    """Realized pwo (`LABEL`) and promise error (`LABEL h`) of backfill and of each variant in
    the world of `seed`."""
    inst = ho.load_instance(HERE.parent / path)
    world = draw_world(inst, Noise(), seed)
    base = ho.SolveOptions(time_limit=seconds, workers=1, seed=0)
    every = freeze = -(-120 // inst.slot_minutes)  # the loop section's 2 h, for periodic ones
    r = replay(inst, world, policy("backfill", every, freeze), base)
    row = {"backfill": r.realized_pwo, "backfill h": r.promise_error_hours}
    for label in labels:
        name, changed, stability, keep = VARIANTS[label]
        options = replace(base, params=replace(LOOP, **changed))  # type: ignore[arg-type]
        p = policy(
            name, every, freeze, stability, slot_minutes=inst.slot_minutes, keep_promises=keep
        )
        r = replay(inst, world, p, options)
        row[label], row[f"{label} h"] = r.realized_pwo, r.promise_error_hours
    return row


def report(
    path: str, rows: list[dict[str, float]], labels: tuple[str, ...], seconds: float, command: str
) -> str:
    pct = {k: [100.0 * (r[k] / r["backfill"] - 1.0) for r in rows] for k in labels}
    lines = [
        f"# Loop mechanisms on {len(rows)} draws of `{Path(path).name}`'s world",
        "",
        f"From `{command}`.",
        "",
        f"cpsat one worker, {seconds:g} s per plan (repeatable); synthetic world "
        f"({Noise()}), seeds 0-{len(rows) - 1}; realized pwo against backfill's in "
        "the same world.",
        "",
        "| variant | median | mean | worst | seeds above backfill | promise error h (median) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| backfill | | | | | {statistics.median(r['backfill h'] for r in rows):.1f} |",
    ]
    for k in labels:
        v = pct[k]
        above = sum(x > 0 for x in v)
        lines.append(
            f"| {k} | {statistics.median(v):+.1f}% | {statistics.mean(v):+.1f}% | "
            f"{min(v):+.1f}% | {above} of {len(v)} | "
            f"{statistics.median(r[f'{k} h'] for r in rows):.1f} |"
        )
    lines += ["", "| seed | backfill | " + " | ".join(labels) + " |"]
    lines += ["| ---: | ---: |" + " ---: |" * len(labels)]
    for seed, r in enumerate(rows):
        cells = " | ".join(f"{r[k]:,.0f} ({pct[k][seed]:+.1f}%)" for k in labels)
        lines.append(f"| {seed} | {r['backfill']:,.0f} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instance", default="instances/demo.yaml", help="relative to the checkout")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated labels")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    labels = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in labels if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    seeds = list(range(args.seeds))
    n = len(seeds)
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(run, [args.instance] * n, seeds, [args.seconds] * n, [labels] * n))
    command = ".venv/bin/python benchmarks/loop_seeds.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    text = report(args.instance, rows, labels, args.seconds, command)
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
