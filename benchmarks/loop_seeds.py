"""Loop mechanisms on many draws of one instance's world: paired, repeatable replays.

Each variant (a policy, optionally with cpsat search parameters changed) is replayed in the
worlds of seeds 0..N-1 of one instance (`--world`: synthetic, trace or cluster), with solver
seeds 0..K-1 (`--solver-seeds`), beside its peer in the same world: backfill, or the better of
backfill and backfill-expect (`--peer best`, told no more than an -expect variant is). cpsat
plans with one worker, so every replay is repeatable (`SolveOptions.repeatable`) and two
variants differ by what they decide, not by the machine's load. Reports per variant the median,
mean and worst realized pwo (or pwo in the measured window, `--figure window`) against the
peer's, a distribution-free 95% interval of that median (order statistics; none below 6
pairs), on how many (world, solver seed) pairs it beats the peer, the median promise error
with its P50 error and P90 coverage, each variant against the first pair by pair, and per
pair. A difference whose interval spans zero is not one the draws can tell from noise.

A variant sets every policy option itself, so its results do not move with the CLI's
defaults: `cpsat-expect@event` plans without deadline odds or held promises, and `simulate`'s
`cpsat-expect@event` is the variant `cpsat-expect@event (deadline odds and keep promises 0.5)`.

    .venv/bin/python benchmarks/loop_seeds.py --jobs 2 --seeds 10 \\
        --out benchmarks/results/loop_seeds.md
"""

from __future__ import annotations

import argparse
import math
import shlex
import statistics
import sys
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

import horizon_opt as ho
from horizon_opt.model.compiler import compile_instance
from horizon_opt.params import LOOP
from horizon_opt.simulate.engine import replay
from horizon_opt.simulate.policy import policy
from horizon_opt.simulate.replay_figures import Replay
from horizon_opt.simulate.world import Noise
from horizon_opt.simulate.worlds import WORLDS, world_for

HERE = Path(__file__).resolve().parent


class Variant(NamedTuple):
    policy: str
    params: Mapping[str, object] = MappingProxyType(
        {}
    )  # cpsat search parameters changed from `LOOP`
    stability: float = 0.0  # the re-plans' stability weight
    keep: float = 0.0  # weight of a held promise
    at_peak: bool = False  # planners see every service's demand at its peak all day
    headroom: float = 0.0  # planners reserve inference this share above the forecast too
    due: float | None = None  # a deadline counts as met when this quantile of run times meets it
    odds: bool = False  # a deadline job is worth its odds of ending in time (deadline_odds)
    early: bool | None = None  # later planned starts that fit now start now; None: the default


VARIANTS: dict[str, Variant] = {
    "cpsat": Variant("cpsat"),
    "cpsat@event": Variant("cpsat@event"),
    "cpsat (no value order)": Variant("cpsat", {"end_order": "none"}),
    "cpsat@event (no value order)": Variant("cpsat@event", {"end_order": "none"}),
    "cpsat@event (no fill)": Variant("cpsat@event", {"fill_gaps": False}),
    "cpsat@event (stability 0.05)": Variant("cpsat@event", stability=0.05),
    "cpsat@event (stability 0.2)": Variant("cpsat@event", stability=0.2),
    **{
        f"cpsat@event (keep promises {w:g})": Variant("cpsat@event", keep=w)
        for w in (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
    },
    "backfill-expect": Variant("backfill-expect"),
    "cpsat-expect@event": Variant("cpsat-expect@event"),
    "cpsat-pack@event": Variant("cpsat-pack@event"),
    "cpsat-risk@event": Variant("cpsat-risk@event"),
    "cpsat-pack@event (keep promises 0.1)": Variant("cpsat-pack@event", keep=0.1),
    "cpsat-runtimes@event": Variant("cpsat-runtimes@event"),
    "cpsat-oracle": Variant("cpsat-oracle"),
    **{
        f"{name} ({label})": Variant(name, changed)
        for name in ("cpsat@event", "cpsat-pack@event")
        for label, changed in (
            ("no pool start", {"pool_start": "off"}),
            ("pool start when solved", {"pool_start": "solved"}),
            ("pool start from any solution", {"pool_start": "any"}),
        )
    },
    # Where cpsat-expect@event's edge over backfill-expect comes from: each takes one away.
    "cpsat-expect@event (no value order)": Variant("cpsat-expect@event", {"end_order": "none"}),
    "cpsat-expect@event (value order)": Variant("cpsat-expect@event", {"end_order": "value"}),
    "cpsat-expect@event (priority order)": Variant("cpsat-expect@event", {"end_order": "priority"}),
    "cpsat-expect@event (no fill)": Variant("cpsat-expect@event", {"fill_gaps": False}),
    "cpsat-expect@event (pool shift)": Variant("cpsat-expect@event", {"shift_pools": True}),
    "cpsat@event (pool shift)": Variant("cpsat@event", {"shift_pools": True}),
    "cpsat-expect@event (inference at its peak)": Variant("cpsat-expect@event", at_peak=True),
    **{
        f"cpsat-expect@event (keep promises {w:g})": Variant("cpsat-expect@event", keep=w)
        for w in (0.1, 0.5)
    },
    "cpsat-expect@event (freeze 1h)": Variant("cpsat-expect@event/1h"),
    **{
        f"cpsat-expect@event (deadlines at P{q * 100:g})": Variant("cpsat-expect@event", due=q)
        for q in (0.75, 0.9)
    },
    "cpsat-expect@event (keep promises 0.5 and deadlines at P90)": Variant(
        "cpsat-expect@event", keep=0.5, due=0.9
    ),
    "cpsat-expect@event (deadline odds)": Variant("cpsat-expect@event", odds=True),
    "cpsat-expect@event (deadline odds and keep promises 0.5)": Variant(
        "cpsat-expect@event", keep=0.5, odds=True
    ),
    "cpsat-risk@event (deadline odds)": Variant("cpsat-risk@event", odds=True),
    "cpsat-risk@event (deadline odds and keep promises 0.5)": Variant(
        "cpsat-risk@event", keep=0.5, odds=True
    ),
    **{
        f"cpsat-expect@event (end discount {d:g})": Variant(
            "cpsat-expect@event", {"end_discount": d}
        )
        for d in (0.005, 0.01, 0.02, 0.05, 0.1)
    },
    **{
        f"cpsat-expect@event (deadline odds and end discount {d:g})": Variant(
            "cpsat-expect@event", {"end_discount": d}, odds=True
        )
        for d in (0.005, 0.01, 0.02)
    },
    **{
        f"{name} (early starts)": Variant(name, early=True)
        for name in ("backfill", "backfill-expect", "cpsat@event", "cpsat-expect@event")
    },
    **{
        f"{name} (no early starts)": Variant(name, early=False)
        for name in ("cpsat", "cpsat@event", "cpsat-expect@event")
    },
    "backfill-expect (inference at its peak)": Variant("backfill-expect", at_peak=True),
    **{
        f"{name} (headroom {h:g})": Variant(name, headroom=h)
        for name in ("cpsat-expect@event", "backfill-expect")
        for h in (0.25, 0.5)
    },
    **{
        f"cpsat-expect@event (no value order, headroom {h:g})": Variant(
            "cpsat-expect@event", {"end_order": "none"}, headroom=h
        )
        for h in (0.25, 0.5)
    },
}


def at_peak(instance: ho.Instance) -> ho.Instance:
    """`instance` with each service's forecast at its peak in every slot: a planner that sees
    it reserves inference as FIFO schedulers do, so no batch work fills the troughs."""
    peaks = {s.index: [float(s.demand.max(initial=0))] * len(s.demand) for s in instance.services}
    return compile_instance(instance.spec, peaks)


PEERS = ("backfill", "backfill-expect")  # `--peer best` takes the better of these


def with_headroom(instance: ho.Instance, share: float) -> ho.Instance:
    """`instance` with each service's forecast raised by `share`, at most to its peak: planners
    reserve replicas for demand above the forecast, as an operator does against a forecast's
    error, and never more than at the peak (`at_peak`, the whole way)."""
    raised = {
        s.index: np.minimum(s.demand * (1 + share), s.demand.max(initial=0)).tolist()
        for s in instance.services
    }
    return compile_instance(instance.spec, raised)


def run(
    path: str, seed: int, solver_seed: int, seconds: float, labels: tuple[str, ...], world: str
) -> dict[str, float]:
    """Realized pwo (`LABEL`), pwo in the measured window (`LABEL w`), promise error (`LABEL h`)
    and starved jobs (`LABEL s`, `simulate.starvation`) of the peers and of each variant in the world of `seed`."""
    inst = ho.load_instance(HERE.parent / path)
    drawn = world_for(inst, world, seed, Noise())
    base = ho.SolveOptions(time_limit=seconds, workers=1, seed=solver_seed)
    every = freeze = -(-120 // inst.slot_minutes)  # the loop section's 2 h, for periodic ones
    row: dict[str, float] = {"seed": seed, "solver seed": solver_seed}
    for peer in PEERS:
        r = replay(inst, drawn, policy(peer, every, freeze), base)
        row.update(_figures(peer, r))
    for label in labels:
        v = VARIANTS[label]
        options = replace(base, params=replace(LOOP, **v.params))  # type: ignore[arg-type]
        p = policy(
            v.policy,
            every,
            freeze,
            v.stability,
            slot_minutes=inst.slot_minutes,
            keep_promises=v.keep,
            deadline_odds=v.odds,
        )
        p = replace(p, due_quantile=v.due) if v.due is not None else p
        p = replace(p, start_early=v.early) if v.early is not None else p
        seen = at_peak(inst) if v.at_peak else inst  # (the world stays the one drawn)
        seen = with_headroom(seen, v.headroom) if v.headroom else seen
        row.update(_figures(label, replay(seen, drawn, p, options)))
    return row


def _figures(label: str, r: Replay) -> dict[str, float]:
    return {
        label: r.realized_pwo,
        f"{label} w": r.window_pwo,
        f"{label} h": r.promise_error_hours,
        f"{label} p50": r.promise_p50_error_hours,
        f"{label} p90": r.promise_p90_coverage,
        f"{label} n": r.promised,
        f"{label} s": r.starved,
    }


def report(
    path: str,
    rows: list[dict[str, float]],
    labels: tuple[str, ...],
    args: argparse.Namespace,
    command: str,
) -> str:
    suffix = " w" if args.figure == "window" else ""
    peer_name = "the better of backfill and backfill-expect" if args.peer == "best" else "backfill"

    def peer(r: dict[str, float]) -> float:
        return (
            max(r[f"{p}{suffix}"] for p in PEERS) if args.peer == "best" else r[f"backfill{suffix}"]
        )

    pct = {k: [100.0 * (r[f"{k}{suffix}"] / peer(r) - 1.0) for r in rows] for k in labels}
    figure = "pwo in the measured window" if suffix else "realized pwo"
    lines = [
        f"# Loop mechanisms on {len(rows)} draws of `{Path(path).name}`'s world",
        "",
        f"From `{command}`.",
        "",
        f"cpsat one worker, {args.seconds:g} s per plan (repeatable); {args.world} world, "
        f"world seeds {args.first_seed}-{args.first_seed + args.seeds - 1} x solver seeds "
        f"{_seeds(args.solver_seeds)}; {figure} "
        f"against {peer_name} in the same world.",
        "",
        "| variant | median | median, 95% interval | mean | worst | pairs above the peer "
        "| promise error h | P50 error h | P90 coverage | starved jobs (all pairs) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in PEERS:
        lines.append(
            f"| {p} | | | | | | {_promises(rows, p)} | {sum(r[f'{p} s'] for r in rows):.0f} |"
        )
    for k in labels:
        v = pct[k]
        above = sum(x > 0 for x in v)
        interval = median_interval(v)
        span = "" if interval is None else f"{interval[0]:+.1f}% to {interval[1]:+.1f}%"
        lines.append(
            f"| {k} | {statistics.median(v):+.1f}% | {span} | {statistics.mean(v):+.1f}% | "
            f"{min(v):+.1f}% | {above} of {len(v)} | "
            f"{_promises(rows, k)} | {sum(r[f'{k} s'] for r in rows):.0f} |"
        )
    lines += paired(rows, labels, suffix)
    lines += ["", "| seed | solver seed | peer | " + " | ".join(labels) + " |"]
    lines += ["| ---: | ---: | ---: |" + " ---: |" * len(labels)]
    for i, r in enumerate(rows):
        cells = " | ".join(f"{r[f'{k}{suffix}']:,.0f} ({pct[k][i]:+.1f}%)" for k in labels)
        lines.append(f"| {r['seed']:.0f} | {r['solver seed']:.0f} | {peer(r):,.0f} | {cells} |")
    return "\n".join(lines) + "\n"


def paired(rows: list[dict[str, float]], labels: tuple[str, ...], suffix: str) -> list[str]:
    """Each variant against the first, pair by pair (the same world and solver seed): the median
    difference with its 95% interval, and in how many pairs it does better or worse. Two
    variants' medians against the peer can differ while their pairs say they are even."""
    if len(labels) < 2:
        return []
    first = labels[0]
    lines = [
        "",
        f"| variant | against {first}: median | median, 95% interval | better / worse / even |",
        "| --- | ---: | ---: | ---: |",
    ]
    for k in labels[1:]:
        d = [100.0 * (r[f"{k}{suffix}"] / r[f"{first}{suffix}"] - 1.0) for r in rows]
        interval = median_interval(d)
        span = "" if interval is None else f"{interval[0]:+.1f}% to {interval[1]:+.1f}%"
        counts = (sum(x > 0 for x in d), sum(x < 0 for x in d), sum(x == 0 for x in d))
        lines.append(
            f"| {k} | {statistics.median(d):+.1f}% | {span} | "
            f"{counts[0]} / {counts[1]} / {counts[2]} |"
        )
    return lines


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free interval that holds the median with at least `level` confidence:
    the k-th smallest and k-th largest value, k the largest with P(Binomial(n, 1/2) < k) at
    most (1 - level) / 2. None when no such k exists (fewer than 6 values at 95%)."""
    n, tail = len(values), (1.0 - level) / 2
    below, k = 0.0, 0
    while k < n // 2 and below + math.comb(n, k) / 2**n <= tail:
        below += math.comb(n, k) / 2**n
        k += 1
    if k == 0:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[n - k]


def _promises(rows: list[dict[str, float]], label: str) -> str:
    """Medians over the pairs: promise error, P50 error (hours), P90 coverage."""
    made = [r for r in rows if r[f"{label} n"]]  # pairs with promises in the window
    if not made:
        return "- | - | -"
    med = {k: statistics.median(r[f"{label} {k}"] for r in made) for k in ("h", "p50", "p90")}
    return f"{med['h']:.1f} | {med['p50']:.1f} | {100 * med['p90']:.0f}%"


def _seeds(n: int) -> str:
    return "0" if n == 1 else f"0-{n - 1}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instance", default="instances/demo.yaml", help="relative to the checkout")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seeds", type=int, default=10, help="how many world seeds")
    ap.add_argument("--first-seed", type=int, default=0, help="the first world seed")
    ap.add_argument("--solver-seeds", type=int, default=1, help="solver seeds 0..K-1")
    ap.add_argument("--world", choices=WORLDS, default="cluster")
    ap.add_argument("--figure", choices=("realized", "window"), default="realized")
    ap.add_argument("--peer", choices=("backfill", "best"), default="backfill")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated labels")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    labels = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in labels if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    pairs = [
        (w, k)
        for w in range(args.first_seed, args.first_seed + args.seeds)
        for k in range(args.solver_seeds)
    ]
    n = len(pairs)
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(
            pool.map(
                run,
                [args.instance] * n,
                [w for w, _ in pairs],
                [k for _, k in pairs],
                [args.seconds] * n,
                [labels] * n,
                [args.world] * n,
            )
        )
    command = ".venv/bin/python benchmarks/loop_seeds.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    text = report(args.instance, rows, labels, args, command)
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
