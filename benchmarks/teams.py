"""Teams benchmark: what teams (their limits and quotas) cost, and how fair each plan is.

Every instance of the team families (`enterprise-teams`, `trace-teams`) is the base family's
instance with teams added, so each solver plans it twice: with the teams, and with `teams` and
every job's `team` removed. Every plan with teams goes through the checker (limits are rule 8);
the plan without teams is checked against the instance with teams too, which says whether the
teams bind there (its violations of rules 8 and 9: limits and quotas). cpsat runs on one worker and stops on CP-SAT's
deterministic budget (`repeatable`), so a rerun gives the same plans under any load.

    .venv/bin/python benchmarks/teams.py --size medium --seeds 0 1 2 --jobs 2

Results: `bench-results/teams.md` (and `.csv`; not committed) unless `--out` says otherwise
(`--out benchmarks/results/teams.md` rewrites the committed ones).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "bench-results" / "teams.md"
FAMILIES = ("enterprise-teams", "trace-teams")
SOLVERS = ("backfill", "greedy", "cpsat")
TIME_LIMITS = {"small": 10.0, "medium": 60.0, "large": 120.0}

CHILD = r"""
import json, sys
import horizon_opt as ho
teams, plain, solver, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
with_teams, without = ho.load_instance(teams), ho.load_instance(plain)
options = dict(time_limit=limit, workers=1, seed=0, repeatable=True)
kept = ho.solve(with_teams, solver, **options)
free = ho.solve(without, solver, **options)
broken = [v for v in ho.check(with_teams, free.model_copy(update={"instance": with_teams.name}))
          if v.rule in (8, 9)]
m = ho.evaluate(with_teams, kept)
print(json.dumps({
    "pwo_teams": m.pwo, "pwo_free": free.objective,
    "violations": len(ho.check(with_teams, kept)),
    "binding": len(broken) > 0,
    "fairness_teams": m.team_fairness,
    "fairness_free": ho.evaluate(with_teams, free).team_fairness,
    "borrowed_gpu_hours": sum(f.borrowed_gpu_hours for f in m.teams.values()),
    "kept_out_slots": sum(f.kept_out_slots for f in m.teams.values()),
}))
"""

FIELDS = [
    "instance",
    "solver",
    "time_limit",
    "pwo_free",
    "pwo_teams",
    "cost",
    "binding",
    "violations",
    "fairness_free",
    "fairness_teams",
    "borrowed_gpu_hours",
    "kept_out_slots",
]


def run(teams: Path, plain: Path, solver: str, limit: float) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(teams), str(plain), solver, str(limit)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def write_pair(family: str, size: str, seed: int, folder: Path) -> tuple[Path, Path]:
    """The instance with teams, and the same without them (same name, so plans compare)."""
    from horizon_opt.generate import generate, write_instance

    data = generate(family, size, seed)
    plain = {k: v for k, v in data.items() if k != "teams"}
    plain["jobs"] = [{k: v for k, v in j.items() if k != "team"} for j in data["jobs"]]
    teams_path, plain_path = folder / f"{data['name']}.yaml", folder / f"{data['name']}-free.yaml"
    write_instance(data, teams_path)
    write_instance(plain, plain_path)
    return teams_path, plain_path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="medium", choices=list(TIME_LIMITS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel")
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    limit = TIME_LIMITS[args.size]
    with tempfile.TemporaryDirectory() as tmp:
        tasks = []
        for family in FAMILIES:
            for seed in args.seeds:
                teams, plain = write_pair(family, args.size, seed, Path(tmp))
                tasks += [(teams, plain, solver) for solver in args.solvers]
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda t: run(t[0], t[1], t[2], limit), tasks))
    rows = []
    for (teams, _, solver), result in zip(tasks, results, strict=True):
        free, kept = float(result["pwo_free"]), float(result["pwo_teams"])  # type: ignore[arg-type]
        cost = (free - kept) / free if free > 0 else 0.0
        rows.append({"instance": teams.stem, "solver": solver, "time_limit": limit, **result})
        rows[-1]["cost"] = cost
        print(f"{teams.stem:28s} {solver:8s} free {free:>10,.1f} teams {kept:>10,.1f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.with_suffix(".csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    args.out.write_text(summarize(rows, args))
    print(args.out.read_text())


def _fair(value: object) -> str:
    return "-" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]


def summarize(rows: list[dict[str, object]], args: argparse.Namespace) -> str:
    seeds = " ".join(str(s) for s in args.seeds)
    solvers = "" if args.solvers == list(SOLVERS) else f" --solvers {' '.join(args.solvers)}"
    lines = [
        f"# What teams cost ({args.size}, {rows[0]['time_limit']:.0f} s, one worker, repeatable)",
        "",
        f"`.venv/bin/python benchmarks/teams.py --size {args.size} --seeds {seeds} "
        f"--jobs {args.jobs}{solvers}`. pwo without teams and with them; cost = the share of pwo lost; "
        "binding = the plan without teams breaks a limit or keeps a job out of its quota; violations = the checker's count on "
        "the plan with teams (rule 8 included); fairness = Jain's index of share over quota "
        "share; borrowed = GPU-hours held above quotas, all teams; kept out = (pool, slot) "
        "pairs at which a team's waiting job within its quota was kept out by others' "
        "borrowing, all teams (FORMAT.md, kept_out_slots).",
        "",
        "| instance | solver | pwo without | pwo with | cost | binding | violations | "
        "fairness without | fairness with | borrowed GPU-h | kept out |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['instance']} | {r['solver']} | {float(r['pwo_free']):,.1f} | "  # type: ignore[arg-type]
            f"{float(r['pwo_teams']):,.1f} | {100 * float(r['cost']):.1f}% | "  # type: ignore[arg-type]
            f"{'yes' if r['binding'] else 'no'} | {r['violations']} | "
            f"{_fair(r['fairness_free'])} | {_fair(r['fairness_teams'])} | "
            f"{float(r['borrowed_gpu_hours']):,.0f} | {r['kept_out_slots']} |"  # type: ignore[arg-type]
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
