"""Capacity prices against re-solves: does the node price predict what one more node changes?

For each instance and pool: the node price (`horizon_opt.analysis.prices`, from the time-indexed LP's
duals) against (a) the change of the LP bound when the instance gets one more node of that pool,
always up (the LP re-solved); (b) the same with only the runs the base LP has (the capacity
grows, no run is added): what the price prices, so it must be at least that; and (c) the change
of the pwo of re-solved plans: cpsat (one worker, seed 0: deterministic up to its time limit)
and greedy, base against +1 node.

    .venv/bin/python benchmarks/prices.py --time-limit 30

Writes a markdown table and a summary (median ratio of predicted to re-solved change, and how
often the prices order a pair of pools of one instance as the re-solves do), by default to
bench-results/prices.md (not committed; `--out benchmarks/results/prices.md` rewrites the
committed one).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from itertools import combinations
from pathlib import Path
from typing import Any

import horizon_opt as ho
from horizon_opt.analysis.prices import capacity_prices
from horizon_opt.analysis.whatif import Change, changed_instance
from horizon_opt.model.instance import Instance
from horizon_opt.params import SearchParams
from horizon_opt.relaxation import build_columns, pool_free_gpus, solve_lp, whole_free_nodes
from horizon_opt.relaxation.master import column_generation

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = ROOT / "bench-results" / "prices.md"
INSTANCES = [
    "demo",
    "enterprise-small-s0",
    "hetero-small-s0",
    "deadline-small-s0",
    "enterprise-medium-s0",
]
LP_SECONDS = 60.0  # every LP here converges well within this


def instance_path(name: str) -> Path:
    direct = ROOT / "instances" / f"{name}.yaml"
    return direct if direct.exists() else ROOT / "instances" / "bench" / f"{name}.yaml"


def one_more_node(instance: Instance, pool: int) -> Instance:
    """The instance with one more node (always up) in `pool`."""
    return changed_instance(instance, [Change("add", instance.pools[pool].name, nodes=1)])


def same_runs_bound(base: Instance, more: Instance) -> float:
    """The LP bound of `more` with only the runs of `base`: the capacity grows, no run is added."""
    cols = build_columns(base)
    cols = dataclasses.replace(cols, free=pool_free_gpus(more), whole=whole_free_nodes(more))
    deadline = time.perf_counter() + LP_SECONDS
    lp = column_generation(cols, deadline, None, None, SearchParams().initial_runs)
    assert lp.converged, f"the LP of {more.name} with the base runs did not converge"
    return lp.bound


def measure(instance: Instance, time_limit: float) -> dict[str, Any]:
    """LP bound, and cpsat's and greedy's pwo, of one instance."""
    lp = solve_lp(instance, time.perf_counter() + LP_SECONDS).lp
    out: dict[str, Any] = {"lp": lp.bound, "lp_converged": lp.converged}
    for solver in ("cpsat", "greedy"):
        plan = ho.solve(instance, solver, ho.SolveOptions(time_limit=time_limit, workers=1, seed=0))
        assert not ho.check(instance, plan), f"{solver} plan of {instance.name} is invalid"
        out[solver] = plan.objective
    return out


def run(name: str, time_limit: float) -> list[dict[str, Any]]:
    base = ho.load_instance(instance_path(name))
    prices = capacity_prices(base, LP_SECONDS)
    assert prices.converged, f"the LP of {name} did not converge in {LP_SECONDS} s"
    before = measure(base, time_limit)
    rows = []
    for p, pool in enumerate(base.pools):
        more = one_more_node(base, p)
        after = measure(more, time_limit)
        row = {
            "instance": name,
            "pool": pool.name,
            "nodes": pool.nodes,
            "predicted": float(prices.node_total[p]),
            "unpriced_jobs": prices.unpriced_jobs[p],
            "lp_delta": after["lp"] - before["lp"],
            "lp_converged": before["lp_converged"] and after["lp_converged"],
            "same_runs_delta": same_runs_bound(base, more) - before["lp"],
            "cpsat_delta": after["cpsat"] - before["cpsat"],
            "greedy_delta": after["greedy"] - before["greedy"],
            "base_lp": before["lp"],
            "base_cpsat": before["cpsat"],
        }
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def ratio(predicted: float, actual: float) -> float | None:
    return predicted / actual if actual > 1e-6 else None


def show_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def rank_agreement(rows: list[dict[str, Any]], key: str) -> tuple[int, int]:
    """Pairs of pools of one instance that the price orders as `key` does, and all pairs."""
    alike = total = 0
    by_instance: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_instance.setdefault(r["instance"], []).append(r)
    for group in by_instance.values():
        for a, b in combinations(group, 2):
            total += 1
            alike += (a["predicted"] - b["predicted"]) * (a[key] - b[key]) > 0
    return alike, total


def median_ratio(rows: list[dict[str, Any]], key: str) -> str:
    values = [v for r in rows if (v := ratio(r["predicted"], r[key])) is not None]
    return f"{statistics.median(values):.2f} (of {len(values)})" if values else "-"


def report(rows: list[dict[str, Any]], time_limit: float, seconds: float) -> str:
    lines = [
        f"Node price (LP duals) against re-solves with one more node of the pool: LP bound "
        f"re-solved; cpsat ({time_limit:g} s, 1 worker, seed 0) and greedy plans re-solved. "
        f"Ratio: predicted / re-solved change. {seconds / 60:.1f} minutes in all.",
        "",
        "| instance | pool (nodes) | predicted | jobs with new runs | LP bound change, same runs "
        "| ratio | LP bound change | ratio | cpsat pwo change | ratio | greedy pwo change |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['instance']} | {r['pool']} ({r['nodes']}) | +{r['predicted']:,.0f} | "
            f"{r['unpriced_jobs']} | {r['same_runs_delta']:+,.0f} | "
            f"{show_ratio(ratio(r['predicted'], r['same_runs_delta']))} | {r['lp_delta']:+,.0f} | "
            f"{show_ratio(ratio(r['predicted'], r['lp_delta']))} | {r['cpsat_delta']:+,.0f} | "
            f"{show_ratio(ratio(r['predicted'], r['cpsat_delta']))} | {r['greedy_delta']:+,.0f} |"
        )
    priced = [r for r in rows if not r["unpriced_jobs"]]
    held = sum(r["same_runs_delta"] <= r["predicted"] + 1e-6 * max(1.0, r["base_lp"]) for r in rows)
    lines += [
        "",
        f"- The price is at least the LP bound's change with the same runs in {held} of "
        f"{len(rows)} rows (the certificate says it must be); median ratio "
        f"{median_ratio(rows, 'same_runs_delta')}.",
        f"- Median ratio to the LP bound's change: {median_ratio(rows, 'lp_delta')} over all "
        f"rows; {median_ratio(priced, 'lp_delta')} where the extra node gives no job new runs.",
        f"- Median ratio to cpsat's pwo change: {median_ratio(rows, 'cpsat_delta')} over all "
        f"rows; {median_ratio(priced, 'cpsat_delta')} where no job gets new runs.",
    ]
    for key, what in (("lp_delta", "LP bound"), ("cpsat_delta", "cpsat pwo")):
        alike, total = rank_agreement(rows, key)
        lines.append(
            f"- Pairs of pools of one instance ordered alike by the price and the {what} change: "
            f"{alike} of {total}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per cpsat solve")
    ap.add_argument("--instances", nargs="+", default=INSTANCES)
    ap.add_argument("--out", "--output", dest="output", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args()
    started = time.perf_counter()
    rows = [row for name in a.instances for row in run(name, a.time_limit)]
    text = report(rows, a.time_limit, time.perf_counter() - started)
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
