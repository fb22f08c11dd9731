"""A replay decision's state: the spec round trip against `snapshot.instance_at`.

For each instance, greedy plans it; at eight slots spread over the horizon the state is what
that plan leaves if it ran as planned (ended jobs out, running jobs placed). Each state is built
both ways, as `simulate`'s replay would ask for it: the round trip rebuilds the spec
(`without_jobs`, `with_placed`) and compiles it; `instance_at` takes the kept job indices and the
running placements in compiled terms. Each build is timed as the best of a few repeats (the
machine is shared), and the table gives the median over the states. Both builds are checked
equal before they are timed.

    .venv/bin/python benchmarks/state.py

Writes a markdown table (default: bench-results/state.md, not committed; `--out
benchmarks/results/state.md` rewrites the committed one). Under a minute.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import horizon_opt as ho
from horizon_opt.loop.snapshot import Running, instance_at
from horizon_opt.loop.state import placed_spec, with_placed, without_jobs
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.spec import PlacedSpec

ROOT = Path(__file__).resolve().parent.parent
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = ROOT / "bench-results" / "state.md"
INSTANCES = ["enterprise-medium-s0", "enterprise-large-s0"]
STATES = 8
REPEATS = 5


def _best_ms(fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def _states(inst: ho.Instance, plan: ho.Plan) -> list[tuple[int, set[int], dict[int, PlacedSpec]]]:
    """(now, kept job indices, running placements) along the plan."""
    ends = {inst.job_index[a.job]: a.end for a in plan.assignments}
    out = []
    for k in range(1, STATES + 1):
        now = k * inst.slots // (STATES + 1)
        keep = {j.index for j in inst.jobs if ends.get(j.index, inst.slots + 1) > now}
        running = {
            inst.job_index[a.job]: placed_spec(a) for a in plan.assignments if a.start < now < a.end
        }
        out.append((now, keep, running))
    return out


def _row(name: str) -> dict[str, Any]:
    inst = ho.load_instance(ROOT / "instances" / "bench" / f"{name}.yaml")
    plan = ho.solve(inst, "greedy")
    demands = {s.index: s.demand.tolist() for s in inst.services}
    slow_ms, fast_ms, kept, placed = [], [], [], []
    for now, keep, running in _states(inst, plan):

        def slow(now: int = now, keep: set[int] = keep, running: Any = running) -> ho.Instance:
            left_out = {j.id for j in inst.jobs if j.index not in keep}
            by_id = {inst.jobs[j].id: p for j, p in running.items()}
            spec = with_placed(without_jobs(inst.spec, left_out), by_id, now)
            return compile_instance(spec, demands)

        def fast(now: int = now, keep: set[int] = keep, running: Any = running) -> ho.Instance:
            compiled = {
                j: Running(
                    inst.pool_index[p.pool],
                    p.start,
                    {inst.node_index[n]: tuple(g) for n, g in p.gpus.items()},
                )
                for j, p in running.items()
            }
            return instance_at(inst, now, keep, compiled)

        a, b = slow(), fast()
        if a.jobs != b.jobs or a.spec != b.spec:
            raise SystemExit(f"{name} at slot {now}: the two states differ")
        slow_ms.append(_best_ms(slow))
        fast_ms.append(_best_ms(fast))
        kept.append(len(keep))
        placed.append(len(running))
    return {
        "instance": name,
        "jobs": len(inst.jobs),
        "kept": f"{min(kept)}-{max(kept)}",
        "running": f"{min(placed)}-{max(placed)}",
        "round trip ms": statistics.median(slow_ms),
        "fast ms": statistics.median(fast_ms),
        "ratio": statistics.median(s / f for s, f in zip(slow_ms, fast_ms, strict=True)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rows = [_row(name) for name in INSTANCES]
    lines = [
        "# A replay decision's state: spec round trip vs `instance_at`",
        "",
        "Produced by `.venv/bin/python benchmarks/state.py`: greedy's plan of each instance, the "
        f"state it leaves at {STATES} slots spread over the horizon, each state built both ways "
        f"(best of {REPEATS} repeats), the median over the states (ratio: median of the "
        "per-state ratios). Kept and running: jobs in the states, least to most.",
        "",
        "| instance | jobs | kept | running | round trip ms | fast ms | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['instance']} | {r['jobs']} | {r['kept']} | {r['running']} "
            f"| {r['round trip ms']:.2f} | {r['fast ms']:.2f} | {r['ratio']:.1f}x |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
