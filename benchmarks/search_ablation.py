"""cpsat's search parameters on and off: paired, repeatable solves of the same instances.

Each variant changes some of `SearchParams` (`name=value,...`; `base` changes none) and solves
every instance with one worker on CP-SAT's deterministic budget (`repeatable`), so two variants
differ by their parameters, not by the machine's load. Every plan goes through the checker.
Reports each variant's pwo against the base per instance, the median, and the median gap to
the proven bound. `--workers 2` (and `--seeds`) measures the parallel search instead, on the
wall clock: then run one job at a time.

    .venv/bin/python benchmarks/search_ablation.py --jobs 2 \\
        --variant short:subproblem_seconds=0.2 --variant long:subproblem_seconds=0.8 \\
        --out benchmarks/results/search_ablation.md
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import horizon_opt as ho
from horizon_opt.params import SearchParams

HERE = Path(__file__).resolve().parent
INSTANCES = tuple(f"instances/bench/enterprise-medium-s{s}.yaml" for s in range(3))


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """`label:name=value,...` -> (label, changed parameters), each value of its field's type."""
    label, _, changes = text.partition(":")
    default = SearchParams()
    kinds = {f.name: type(getattr(default, f.name)) for f in fields(SearchParams)}
    changed: dict[str, Any] = {}
    for item in filter(None, changes.split(",")):
        name, _, value = item.partition("=")
        if name not in kinds:
            raise SystemExit(f"--variant {text}: unknown parameter {name!r}")
        kind = kinds[name]
        changed[name] = value.lower() in ("1", "true", "on") if kind is bool else kind(value)
    return label, changed


def solve(
    path: str, changed: dict[str, Any], seconds: float, workers: int, seed: int
) -> tuple[float, float | None]:
    """(pwo, bound) of one cpsat solve with the parameters changed (repeatable on one worker)."""
    inst = ho.load_instance(HERE.parent / path)
    options = ho.SolveOptions(
        time_limit=seconds,
        workers=workers,
        seed=seed,
        repeatable=workers == 1,
        params=replace(SearchParams(), **changed),
    )
    plan = ho.solve(inst, "cpsat", options)
    if ho.check(inst, plan):
        raise SystemExit(f"{path}: invalid plan with {changed}")
    return plan.objective, plan.bound


def report(
    rows: dict[str, list[tuple[float, float | None]]],
    names: list[str],
    seconds: float,
    workers: int,
    command: str,
) -> str:
    base = rows["base"]
    lines = [
        "# cpsat search parameters, paired",
        "",
        f"From `{command}`.",
        "",
        f"cpsat, {workers} worker(s), {seconds:g} s"
        + (", repeatable" if workers == 1 else "")
        + "; pwo against `base` (the defaults).",
        "",
        "| variant | median | median gap | " + " | ".join(names) + " |",
        "| --- | ---: | ---: |" + " ---: |" * len(names),
    ]
    for label, values in rows.items():
        pct = [100 * (v[0] / b[0] - 1) for v, b in zip(values, base, strict=True)]
        cells = " | ".join(f"{v[0]:,.1f} ({p:+.2f}%)" for v, p in zip(values, pct, strict=True))
        gaps = [100 * (bound - pwo) / bound for pwo, bound in values if bound]
        gap = f"{statistics.median(gaps):.1f}%" if len(gaps) == len(values) else "-"
        lines.append(f"| {label} | {statistics.median(pct):+.2f}% | {gap} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", action="append", default=[], help="label:name=value,...")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--instances", nargs="+", default=list(INSTANCES), help="paths from the root")
    ap.add_argument("--workers", type=int, default=1, help="CP-SAT workers (1: repeatable)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="solver seeds")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    variants: list[tuple[str, dict[str, Any]]] = [("base", {})]
    variants += [parse_variant(v) for v in args.variant]
    runs = [(path, seed) for path in args.instances for seed in args.seeds]
    tasks = [(label, changed, run) for label, changed in variants for run in runs]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = list(
            pool.map(
                solve,
                [t[2][0] for t in tasks],
                [t[1] for t in tasks],
                [args.seconds] * len(tasks),
                [args.workers] * len(tasks),
                [t[2][1] for t in tasks],
            )
        )
    rows: dict[str, list[tuple[float, float | None]]] = {}
    for (label, _, _), result in zip(tasks, done, strict=True):
        rows.setdefault(label, []).append(result)
    command = ".venv/bin/python benchmarks/search_ablation.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    names = [f"{Path(path).stem} s{seed}" for path, seed in runs]
    text = report(rows, names, args.seconds, args.workers, command)
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
