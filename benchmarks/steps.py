"""Where the time goes as the cluster grows: each step of the pipeline, timed alone, small to xxl.

One enterprise instance per size (seed 0), each step timed on its own in this process: reading
the instance file (parse, validate, compile), the inference layout, fifo's and greedy's list
schedules (the window search; greedy's again with the numpy search), the cause codes of greedy's
plan, assembling the plan file, the independent checker, the plan's JSON, the LP's columns and
the LP itself (column generation, with cpsat's share of the size's time limit), cpsat's
ejection moves (milliseconds per try, on greedy's plan, at most 200 tries), and greedy's whole
solve (the plan's wall_seconds).

The last column compares each step's growth from xl to xxl with that of jobs x slots (2x: 4x
the jobs, half the slots) and of jobs x nodes (16x): a step linear in jobs x slots grows about
2x.

    .venv/bin/python benchmarks/steps.py

Writes a markdown table (default: bench-results/steps.md, not committed; `--out
benchmarks/results/steps.md` rewrites the committed one). About 10 minutes.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import horizon_opt as ho
from horizon_opt.generate import generate, write_instance
from horizon_opt.params import SearchParams
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.relaxation import solve_lp
from horizon_opt.relaxation.columns import build_columns
from horizon_opt.solvers import grid
from horizon_opt.solvers.assemble import build_plan
from horizon_opt.solvers.cpsat.eject import Ejector
from horizon_opt.solvers.cpsat.incumbent import Incumbent
from horizon_opt.solvers.diagnosis import unscheduled_causes
from horizon_opt.solvers.fifo import fifo_placements
from horizon_opt.solvers.greedy import greedy_placements
from horizon_opt.solvers.listsched import inherited_ranks, priority_large_first
from horizon_opt.solvers.window import COMPILED_FROM, first_window_numpy, search

ROOT = Path(__file__).resolve().parent.parent
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = ROOT / "bench-results" / "steps.md"
SIZES = ["small", "medium", "large", "xl", "xxl"]
TIME_LIMITS = {"small": 20, "medium": 60, "large": 120, "xl": 300, "xxl": 600}  # suite-scale.yaml
EJECT_TRIES = 200


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _eject_ms(inst: ho.Instance, placements: list[Any], layout: Any) -> float:
    """Milliseconds per ejection try, over at most EJECT_TRIES tries of one pass."""
    inc = Incumbent(inst, layout.free, {p.job: p for p in placements})
    params = SearchParams()
    ranks = inherited_ranks(inst, priority_large_first)
    ejector = Ejector(inc, ranks, params.eject_candidates, params.eject_max_cost_ratio)
    weights = np.array([j.value for j in inst.jobs])
    seen = [0]

    def stop() -> bool:
        seen[0] += 1
        return seen[0] > EJECT_TRIES

    seconds, result = _timed(lambda: ejector.run_pass(weights, stop))
    return 1000 * seconds / max(result.tries, 1)


def _steps(size: str, folder: Path) -> dict[str, float]:
    path = folder / f"enterprise-{size}-s0.yaml"
    write_instance(generate("enterprise", size, 0), path)
    out: dict[str, float] = {}
    out["read"], inst = _timed(lambda: ho.load_instance(path))
    out["layout"], layout = _timed(lambda: elastic_layout(inst))
    out["fifo"], _ = _timed(lambda: fifo_placements(inst, layout))
    out["greedy"], placements = _timed(lambda: greedy_placements(inst, layout))
    # The same list schedules with the numpy window search (what runs without the `fast` extra).
    grid.search = lambda cells: first_window_numpy
    try:
        out["greedy, numpy search"], _ = _timed(lambda: greedy_placements(inst, layout))
    finally:
        grid.search = search
    out["causes"], causes = _timed(lambda: unscheduled_causes(inst, placements, layout))
    started = time.perf_counter()
    out["assemble"], plan = _timed(
        lambda: build_plan(inst, "greedy", placements, layout, causes, started=started)
    )
    out["check"], violations = _timed(lambda: ho.check(inst, plan))
    if violations:
        raise SystemExit(f"greedy's plan of {inst.name} fails the checker")
    out["plan json"], _ = _timed(plan.to_json)
    out["lp columns"], _ = _timed(lambda: build_columns(inst))
    lp_seconds = SearchParams().lp_share * TIME_LIMITS[size]
    out["lp"], _ = _timed(lambda: solve_lp(inst, time.perf_counter() + lp_seconds))
    out["eject ms/try"] = _eject_ms(inst, placements, layout)
    out["greedy solve"] = ho.solve(inst, "greedy").wall_seconds  # layout to plan, all in
    out["jobs"], out["slots"], out["nodes"] = len(inst.jobs), inst.slots, len(inst.node_names)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=SIZES, choices=SIZES)
    parser.add_argument("--out", "--output", dest="output", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Numba loaded and the compiled search built (or read from its cache) before any timing.
        search(COMPILED_FROM)(np.zeros((2, 4), np.int16)[:, :2], 0, 1, 2, 1, 1, True)
        for size in args.sizes:
            rows[size] = _steps(size, Path(tmp))
            print(size, {k: round(v, 3) for k, v in rows[size].items()}, flush=True)
    steps = [k for k in rows[args.sizes[0]] if k not in ("jobs", "slots", "nodes")]
    head = ["step (seconds)", *args.sizes]
    growth = "xl" in rows and "xxl" in rows
    if growth:
        head.append("xxl / xl")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for key in ("jobs", "slots", "nodes"):
        lines.append(f"| {key} | " + " | ".join(f"{rows[s][key]:,.0f}" for s in args.sizes))
        lines[-1] += f" | {rows['xxl'][key] / rows['xl'][key]:.2f} |" if growth else " |"
    for step in steps:
        cells = [f"{rows[s][step]:.3f}" for s in args.sizes]
        ratio = f" | {rows['xxl'][step] / max(rows['xl'][step], 1e-9):.1f}" if growth else ""
        lines.append(f"| {step} | " + " | ".join(cells) + ratio + " |")
    compiled = search(COMPILED_FROM).__module__.endswith("jit")
    window = f"compiled (numba) from {COMPILED_FROM:,} grid cells" if compiled else "numpy"
    text = (
        "# Pipeline steps, small to xxl\n\n"
        "`.venv/bin/python benchmarks/steps.py`: one enterprise instance per size (seed 0), each "
        f"step timed alone in one process; window search: {window}. `xxl / xl`: how much the "
        "step grew from xl to xxl (jobs x slots grew 2x, jobs x nodes 16x).\n\n"
        + "\n".join(lines)
        + "\n"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"written: {args.output}")


if __name__ == "__main__":
    main()
