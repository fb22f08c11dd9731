"""Closed-loop benchmark: every policy replayed on the same actual world, per instance.

Each instance runs in its own process (all its policies in the same world, drawn with the
instance's seed). Results: a CSV of raw rows and a markdown table of medians over the seeds.

    .venv/bin/python benchmarks/closed_loop.py --families enterprise deadline trace --seeds 0 1 2

Defaults follow the operational-loop issue: medium instances, re-plan every 2 h, freeze 2 h,
the default noise (`horizon-opt simulate --help`); `--time-limit` is cpsat's per plan.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import horizon_opt as ho
from horizon_opt.simulate import Noise, Policy, draw_world, policy, simulate
from horizon_opt.simulate.report import rows

HERE = Path(__file__).resolve().parent
POLICIES = [
    "fifo",
    "backfill",
    "backfill-static",
    "greedy",
    "cpsat",
    "cpsat-stable",
    "backfill-open",
    "cpsat-open",
]
STABLE = "-stable"  # a periodic policy re-planning with the stability weight


def _policy(name: str, every: int, freeze: int, stability: float) -> Policy:
    if name.endswith(STABLE):
        return replace(policy(name.removesuffix(STABLE), every, freeze, stability), name=name)
    return policy(name, every, freeze)


def _run(
    args: tuple[str, int, list[str], float, float, float, float, int, str],
) -> list[dict[str, Any]]:
    path, seed, names, limit, every_h, freeze_h, stability, workers, noise = args
    inst = ho.load_instance(path)
    every = max(1, round(every_h * 60 / inst.slot_minutes))
    freeze = round(freeze_h * 60 / inst.slot_minutes)
    world = draw_world(inst, Noise.parse(noise), seed)
    options = ho.SolveOptions(time_limit=limit, workers=workers, seed=seed)
    policies = [_policy(n, every, freeze, stability) for n in names]
    replays = simulate(inst, policies, world, options)
    out = rows(replays)
    for row in out:
        row.update(instance=inst.name, seed=seed)
    print(f"done {inst.name}", file=sys.stderr, flush=True)
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:+.1f}%"


def _number(text: str) -> Any:
    """A CSV cell as written by `rows`: a number where it reads as one."""
    try:
        return float(text) if text not in ("", "None") else None
    except ValueError:
        return text


def summarize(table: list[dict[str, Any]]) -> str:
    """Medians over seeds, per family: realized pwo relative to online fifo and backfill, the
    share of cpsat's open-loop gain over backfill that survived, SLO shortfall, preemptions,
    churn and plan time."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in table:
        family = str(row["instance"]).split("-")[0]
        by.setdefault((family, str(row["policy"])), []).append(row)
    families = list(dict.fromkeys(f for f, _ in by))
    out = [
        "| family | policy | realized pwo | vs fifo | vs backfill | utilization | SLO short | "
        "preemptions | moved / re-plan | plan s (max) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in families:
        for name in dict.fromkeys(p for f, p in by if f == family):
            rs = by[(family, name)]
            med = {
                k: _median([float(r[k]) for r in rs if r.get(k) not in (None, "")])
                for k in (
                    "realized_pwo",
                    "vs_fifo",
                    "vs_backfill",
                    "realized_utilization",
                    "slo_short_share",
                    "preemptions",
                    "mean_moved",
                    "max_solver_seconds",
                )
            }
            out.append(
                f"| {family} | {name} | {med['realized_pwo']:,.0f} | {_pct(med['vs_fifo'])} | "
                f"{_pct(med['vs_backfill'])} | {100 * med['realized_utilization']:.1f}% | "
                f"{100 * med['slo_short_share']:.2f}% | {med['preemptions']:.0f} | "
                f"{med['mean_moved']:.1f} | {med['max_solver_seconds']:.1f} |"
            )
    gains = []
    for family in families:
        shares = []
        for seed in sorted({r["seed"] for r in table}):
            pick = {
                str(r["policy"]): r
                for r in table
                if r["seed"] == seed and str(r["instance"]).startswith(family)
            }
            try:
                planned = (
                    pick["cpsat-open"]["planned_pwo"] / pick["backfill-open"]["planned_pwo"] - 1
                )
                realized = pick["cpsat"]["realized_pwo"] / pick["backfill"]["realized_pwo"] - 1
            except (KeyError, TypeError, ZeroDivisionError):
                continue
            shares.append(f"planned {100 * planned:+.1f}%, realized {100 * realized:+.1f}%")
        if shares:
            gains.append(f"- {family}: cpsat over backfill per seed: " + "; ".join(shares))
    return "\n".join([*out, "", *gains]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--families", nargs="+", default=["enterprise", "deadline", "trace"])
    ap.add_argument("--size", default="medium")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--replan-every-hours", type=float, default=2.0)
    ap.add_argument("--freeze-hours", type=float, default=2.0)
    ap.add_argument(
        "--stability", type=float, default=0.05, help="weight of the *-stable policies' re-plans"
    )
    ap.add_argument("--noise", default=str(Noise()))
    ap.add_argument("--jobs", type=int, default=2, help="instances at once")
    ap.add_argument("--workers", type=int, default=1, help="CP-SAT workers per instance")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "closed-loop")
    ap.add_argument(
        "--summary-only", action="store_true", help="rewrite summary.md from OUT/results.csv"
    )
    a = ap.parse_args()
    if a.summary_only:
        with open(a.out / "results.csv", newline="") as f:
            table = [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]
        text = (a.out / "summary.md").read_text().split("\n\n", 1)[0] + "\n\n" + summarize(table)
        (a.out / "summary.md").write_text(text)
        print(text)
        return
    tasks = [
        (
            str(HERE.parent / "instances" / "bench" / f"{family}-{a.size}-s{seed}.yaml"),
            seed,
            a.policies,
            a.time_limit,
            a.replan_every_hours,
            a.freeze_hours,
            a.stability,
            a.workers,
            a.noise,
        )
        for family in a.families
        for seed in a.seeds
    ]
    with ProcessPoolExecutor(a.jobs) as pool:
        table = [row for result in pool.map(_run, tasks) for row in result]
    a.out.mkdir(parents=True, exist_ok=True)
    names = list(dict.fromkeys(k for row in table for k in row))
    with open(a.out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(table)
    header = (
        f"Closed loop: {a.size} instances, seeds {a.seeds}, re-plan every "
        f"{a.replan_every_hours:g} h, freeze {a.freeze_hours:g} h, stability {a.stability:g} "
        f"(*-stable), cpsat {a.time_limit:g} s per plan ({a.workers} worker(s)), noise "
        f"{a.noise}\n\n"
    )
    text = header + summarize(table)
    (a.out / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
