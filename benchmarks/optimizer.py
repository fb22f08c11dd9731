"""Optimizer benchmark: fifo, greedy and cpsat on seeded enterprise instances of each size.

Every run happens in its own process, so peak memory (ru_maxrss) is per run. Every plan goes
through the independent checker. Results: a CSV of raw rows and a markdown table of medians, in
bench-results/ (not committed) unless `--out benchmarks/results/optimizer.csv` says otherwise.

    .venv/bin/python benchmarks/optimizer.py --sizes small medium large xl --seeds 0 1 2

Time limits per size follow the optimizer issue (small 10 s, medium 60 s, large 120 s,
xl 300 s); `--time-limit` overrides them all.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "bench-results" / "optimizer.csv"
TIME_LIMITS = {"small": 10.0, "medium": 60.0, "large": 120.0, "xl": 300.0}

CHILD = r"""
import json, resource, sys, time
import horizon_opt as ho
path, solver, limit, workers, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
inst = ho.load_instance(path)
t = time.perf_counter()
plan = ho.solve(inst, solver, time_limit=limit, workers=workers, seed=seed)
wall = time.perf_counter() - t
m = ho.evaluate(inst, plan)
print(json.dumps({
    "pwo": m.pwo, "utilization": m.utilization, "completed": m.completed,
    "bound": plan.bound, "gap": plan.gap, "bound_source": plan.bound_source, "status": plan.status,
    "wall_seconds": wall, "build_seconds": plan.build_seconds,
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "valid": not ho.check(inst, plan),
    "objective_matches": abs(plan.objective - m.pwo) <= 1e-6 * max(1.0, m.pwo),
}))
"""

FIELDS = [
    "instance",
    "size",
    "seed",
    "solver",
    "time_limit",
    "pwo",
    "utilization",
    "completed",
    "bound",
    "gap",
    "bound_source",
    "status",
    "wall_seconds",
    "build_seconds",
    "peak_mib",
    "valid",
    "objective_matches",
]


def run(path: Path, solver: str, limit: float, workers: int, seed: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), solver, str(limit), str(workers), str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", nargs="+", default=["small", "medium"], choices=list(TIME_LIMITS)
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--time-limit", type=float, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    from horizon_opt.generate import generate, write_instance

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            limit = args.time_limit or TIME_LIMITS[size]
            for seed in args.seeds:
                path = Path(tmp) / f"enterprise-{size}-s{seed}.yaml"
                write_instance(generate("enterprise", size, seed), path)
                for solver in ("fifo", "greedy", "cpsat"):
                    row = run(path, solver, limit, args.workers, seed)
                    row.update(
                        instance=path.stem, size=size, seed=seed, solver=solver, time_limit=limit
                    )
                    rows.append(row)
                    print(
                        f"{path.stem:28s} {solver:7s} pwo {row['pwo']:>12,.1f} "
                        f"gap {'-' if row['gap'] is None else format(row['gap'], '.2%'):>7s} "
                        f"wall {row['wall_seconds']:7.1f}s peak {row['peak_mib']:6.0f} MiB valid {row['valid']}",
                        flush=True,
                    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    summary = summarize(rows, args.workers)
    args.out.with_suffix(".md").write_text(summary)
    print(summary)


def summarize(rows: list[dict[str, object]], workers: int) -> str:
    """Medians over seeds: cpsat vs greedy and fifo, gap, time, memory."""
    lines = [
        f"Machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
        f"cpsat workers {workers}; medians over seeds.",
        "",
        "| size | seeds | time limit (s) | fifo pwo | greedy pwo | cpsat pwo | cpsat vs greedy | cpsat vs fifo | util. fifo / greedy / cpsat | gap | bound from | greedy s | cpsat build s | cpsat peak MiB | all valid |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    sizes = list(dict.fromkeys(str(r["size"]) for r in rows))
    for size in sizes:
        by = {
            s: [r for r in rows if r["size"] == size and r["solver"] == s]
            for s in ("fifo", "greedy", "cpsat")
        }

        def med(solver: str, key: str, by: dict[str, list[dict[str, object]]] = by) -> float:
            return statistics.median(float(str(r[key])) for r in by[solver])

        vs_greedy = statistics.median(
            float(str(c["pwo"])) / float(str(g["pwo"])) - 1
            for c, g in zip(by["cpsat"], by["greedy"], strict=True)
        )
        vs_fifo = statistics.median(
            float(str(c["pwo"])) / max(float(str(f["pwo"])), 1e-9) - 1
            for c, f in zip(by["cpsat"], by["fifo"], strict=True)
        )
        gaps = [float(str(r["gap"])) for r in by["cpsat"] if r["gap"] is not None]
        sources = ", ".join(sorted({str(r["bound_source"]) for r in by["cpsat"]}))
        lines.append(
            f"| {size} | {len(by['cpsat'])} | {by['cpsat'][0]['time_limit']:.0f} | {med('fifo', 'pwo'):,.0f} | "
            f"{med('greedy', 'pwo'):,.0f} | {med('cpsat', 'pwo'):,.0f} | {vs_greedy:+.1%} | {vs_fifo:+.0%} | "
            f"{med('fifo', 'utilization'):.1%} / {med('greedy', 'utilization'):.1%} / {med('cpsat', 'utilization'):.1%} | "
            f"{statistics.median(gaps):.1%} | {sources} | {med('greedy', 'wall_seconds'):.2f} | {med('cpsat', 'build_seconds'):.2f} | "
            f"{max(float(r['peak_mib']) for r in by['cpsat']):.0f} | {all(r['valid'] for r in rows if r['size'] == size)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
