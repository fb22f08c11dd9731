"""Every kind of policy replayed on small instances: does any replay stop on an invalid plan?

A replay checks every plan it executes and stops with an internal error on the first that
breaks a rule, so a policy that runs through every world of this sweep has made no such plan
there. Each (instance, world seed) replays every policy of `--policies` in the cluster world of
that seed, as `horizon-opt simulate` does with its defaults (re-plan every 2 h, freeze 2 h), cpsat
with one worker at `--seconds` per plan. A replay that stops is reported with its error and the
sweep goes on; the exit code is 1 when one did. The table lists each replay's realized pwo,
which says nothing about the policies (the plans are short); it is a robustness check.

    .venv/bin/python benchmarks/policy_sweep.py --jobs 2 --out benchmarks/results/policy_sweep.md
"""

from __future__ import annotations

import argparse
import shlex
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from horizon_opt.loop.replan import DEFAULT_FREEZE_MINUTES
from horizon_opt.model.load import load_instance
from horizon_opt.params import LOOP
from horizon_opt.simulate.engine import replay
from horizon_opt.simulate.policy import policy
from horizon_opt.simulate.worlds import world_for
from horizon_opt.solvers import SolveOptions

ROOT = Path(__file__).resolve().parents[1]
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed results unless told to.
DEFAULT_OUT = ROOT / "bench-results" / "policy_sweep.md"
POLICIES = (
    "fifo,backfill,backfill-value,backfill-expect,backfill-risk,backfill-pack,backfill-predict,"
    "greedy,greedy-expect,greedy-risk,greedy-pack,greedy-predict,greedy@event,greedy-open,"
    "cpsat,cpsat-expect,cpsat-risk,cpsat-pack,cpsat-predict,cpsat@event,cpsat-expect@event,"
    "cpsat-risk@event,cpsat-pack@event,cpsat-expect@30m/0,cpsat-runtimes,cpsat-arrivals,"
    "cpsat-oracle,cpsat-open"
)
INSTANCES = (
    "instances/demo.yaml:0,1,2",
    "instances/teams.yaml:0,1,2",
    "instances/bench/enterprise-small-s0.yaml:0",
    "instances/bench/deadline-small-s0.yaml:0",
    "instances/bench/trace-small-s0.yaml:0",
    "instances/bench/hetero-small-s0.yaml:0",
)
Row = tuple[str, int, str, str]  # instance, world seed, policy, realized pwo or the error


def sweep(path: str, seed: int, seconds: float, names: tuple[str, ...]) -> list[Row]:
    """Replay every policy of `names` on `path` in the cluster world of `seed`."""
    inst = load_instance(ROOT / path)
    world = world_for(inst, "cluster", seed)
    options = SolveOptions(time_limit=seconds, workers=1, seed=0, params=LOOP)
    slots = -(-DEFAULT_FREEZE_MINUTES // inst.slot_minutes)  # 2 h: the CLI's cadence and freeze
    rows = []
    for name in names:
        chosen = policy(name, slots, slots, slot_minutes=inst.slot_minutes)
        try:
            got = f"{replay(inst, world, chosen, options).realized_pwo:,.0f}"
        except Exception as exc:  # (any failure is what the sweep looks for)
            got = f"**stopped**: {type(exc).__name__}: {exc}"
        rows.append((Path(path).stem, seed, name, got))
    return rows


def report(rows: list[Row], command: str) -> str:
    stopped = [r for r in rows if r[3].startswith("**stopped**")]
    lines = [
        "# Every policy on small instances: replays that stop on an invalid plan",
        "",
        f"From `{command}`.",
        "",
        f"{len(rows)} replays (cluster world), {len(stopped)} stopped.",
        "",
        "| instance | world seed | policy | realized pwo, or why the replay stopped |",
        "| --- | ---: | --- | --- |",
    ]
    lines += [f"| {i} | {s} | {p} | {got} |" for i, s, p, got in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", nargs="+", default=INSTANCES, help="PATH:SEED,SEED,...")
    ap.add_argument("--policies", default=POLICIES, help="comma-separated policy names")
    ap.add_argument("--seconds", type=float, default=0.3, help="per cpsat plan")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    names = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    tasks = [
        (path, int(seed))
        for item in args.instances
        for path, seeds in [item.rsplit(":", 1)]
        for seed in seeds.split(",")
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = pool.map(
            sweep,
            [t[0] for t in tasks],
            [t[1] for t in tasks],
            [args.seconds] * len(tasks),
            [names] * len(tasks),
        )
        rows = [row for part in done for row in part]
    command = ".venv/bin/python benchmarks/policy_sweep.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    text = report(rows, command)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    sys.exit(1 if any(r[3].startswith("**stopped**") for r in rows) else 0)


if __name__ == "__main__":
    main()
