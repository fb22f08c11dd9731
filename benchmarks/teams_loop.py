"""Teams in the loop: does each team get its quota share of what really ran?

Replays backfill and cpsat@event in the worlds of seeds 0..N-1 (`--world`, by default the
cluster world) of an instance with teams (one worker, repeatable), and reads each team's realized GPU-hours from the plan of what
ran (`simulate.audit`). A team has enough work when its jobs' GPU-hours (at their fastest pool)
reach its quota share of the GPU-hours all teams ran; such a team meets the issue's target when
its realized share is at least 90% of its quota share (a team may hold more: it borrows what the
others leave idle). The guarantee itself (FORMAT.md, rule 9) is read from what ran, at pool
level: per team, the (job, pool, slot) triples at which a ready job that fits within its team's
quota left on the pool waited while the pool's free GPUs (its up nodes' less the batch jobs and
replicas that ran) were too few but would not have been with the other teams' GPUs above their
quotas (`kept out`: the guarantee broken as it ran), were too few even so (`full`: the pool is
held within quotas, or by inference), or were enough (`idle`: the plan chose to wait, or the
job did not fit on the nodes). Also reports
realized pwo against backfill's and the preemptions that gave a team's quota back (reclaims,
`simulate.quota_reclaim`).

    .venv/bin/python benchmarks/teams_loop.py --seeds 10 --jobs 2 \\
        --out benchmarks/results/teams_loop.md
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import horizon_opt as ho
from horizon_opt.model.teams import quota_profile
from horizon_opt.params import LOOP
from horizon_opt.simulate.audit import Audit, actual_spec, ran_plan
from horizon_opt.simulate.engine import replay
from horizon_opt.simulate.policy import policy
from horizon_opt.simulate.world import Noise
from horizon_opt.simulate.worlds import WORLDS, world_for

HERE = Path(__file__).resolve().parent
POLICIES = ("backfill", "cpsat@event")
TARGET = 0.9  # realized share over quota share, for a team with enough work


def waits_within_quota(inst: ho.Instance, audit: Audit) -> dict[str, tuple[int, int, int]]:
    """Per team, (kept out, full, idle) job-pool-slot triples of ready jobs that fit within its
    quota left and wait (see the module docstring)."""
    S, P, T = inst.slots, len(inst.pools), len(inst.teams)
    used, free = np.zeros((T, P, S), dtype=np.int64), np.zeros((P, S), dtype=np.int64)
    for n in range(inst.num_nodes):
        free[inst.node_pool[n]] += inst.capacity[n]
    for s, ran in zip(inst.services, audit.replicas, strict=True):
        free[s.pool] -= ran.sum(axis=0) * s.gpus_per_replica
    running = np.zeros((len(inst.jobs), S), dtype=bool)
    last: dict[int, int] = {}
    done: dict[int, int] = {}
    for run in audit.runs:
        job = inst.jobs[inst.job_index[run.job]]
        p = inst.pool_index[run.pool]
        if job.team is not None:
            used[job.team, p, run.start : run.end] += job.gpus
        free[p, run.start : run.end] -= job.gpus
        running[job.index, run.start : run.end] = True
        last[job.index] = max(last.get(job.index, 0), run.start)
        if run.outcome == "completed":
            done[job.index] = run.end
    quota = quota_profile(inst.teams, P)
    above = np.maximum(used - quota[:, :, None], 0)
    out = {team.name: [0, 0, 0] for team in inst.teams}
    for job in inst.jobs:
        if job.team is None:
            continue
        ready = max([job.release, *(done.get(q, S) for q in job.after)])
        for t in range(ready, last.get(job.index, S)):
            for p, d in job.durations.items():
                if running[job.index, t] or t + d > S:
                    continue
                if used[job.team, p, t] + job.gpus > quota[job.team, p]:
                    continue
                others = int(above[:, p, t].sum() - above[job.team, p, t])
                kind = 2 if free[p, t] >= job.gpus else int(free[p, t] + others < job.gpus)
                out[inst.teams[job.team].name][kind] += 1
    return {name: (kept, full, idle) for name, (kept, full, idle) in out.items()}


def run(path: str, seed: int, seconds: float, kind: str) -> list[dict[str, Any]]:
    """One row per policy and team in the world of kind `kind` and seed `seed`."""
    inst = ho.load_instance(HERE.parent / path)
    world = world_for(inst, kind, seed, Noise())
    options = ho.SolveOptions(time_limit=seconds, workers=1, seed=0, params=LOOP)
    every = freeze = -(-120 // inst.slot_minutes)
    work: dict[str, float] = defaultdict(float)
    for job in inst.jobs:
        if job.team is not None:
            work[inst.teams[job.team].name] += job.work_hours
    rows = []
    for name in POLICIES:
        r = replay(
            inst, world, policy(name, every, freeze, slot_minutes=inst.slot_minutes), options
        )
        assert r.audit is not None
        actual = ho.compile_instance(actual_spec(inst, r.audit, name))
        teams = ran_plan(actual, inst, r.audit, name).metrics.teams
        ran = sum(f.gpu_hours for f in teams.values())
        waits = waits_within_quota(inst, r.audit)
        for team, f in teams.items():
            rows.append(
                {
                    "seed": seed,
                    "policy": name,
                    "pwo": r.realized_pwo,
                    "window": r.window_pwo,
                    "preemptions": r.preemptions,
                    "starved": r.starved,
                    "reclaims": r.reclaims,
                    "team": team,
                    "share": f.share,
                    "quota_share": f.quota_share,
                    "enough": work[team] >= f.quota_share * ran,
                    "reclaimed": r.reclaimed_by_team.get(team, 0),
                    "waits": waits[team],
                }
            )
    return rows


def _met(row: dict[str, Any]) -> bool:
    return bool(row["share"] >= TARGET * row["quota_share"])


def report(path: str, rows: list[dict[str, Any]], seconds: float, kind: str, command: str) -> str:
    seeds = sorted({r["seed"] for r in rows})
    lines = [
        f"# Teams in the loop: `{Path(path).name}`, {len(seeds)} worlds",
        "",
        f"From `{command}`.",
        "",
        f"cpsat one worker, {seconds:g} s per plan (repeatable); {_world(kind)}. "
        f"A team with enough work meets the target when its realized share of GPU-hours is at "
        f"least {TARGET:.0%} of its quota share.",
        "",
        "| policy | teams with enough work meeting the target | waits within quota: kept out / "
        "full / idle | realized pwo vs backfill (median) | window pwo vs backfill (median) "
        "| preemptions (for quota), all seeds | starved jobs, all seeds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = {r["seed"]: r for r in rows if r["policy"] == "backfill"}
    for name in POLICIES:
        mine = [r for r in rows if r["policy"] == name]
        enough = [r for r in mine if r["enough"]]
        per_seed = {r["seed"]: r for r in mine}
        gains = _median_gain(per_seed, base, seeds, "pwo")
        window = _median_gain(per_seed, base, seeds, "window")
        starved = sum(per_seed[s]["starved"] for s in seeds)
        pre = sum(per_seed[s]["preemptions"] for s in seeds)
        rec = sum(per_seed[s]["reclaims"] for s in seeds)
        waits = " / ".join(str(sum(r["waits"][k] for r in mine)) for k in range(3))
        lines.append(
            f"| {name} | {sum(map(_met, enough))} of {len(enough)} | {waits} | "
            f"{gains:+.1f}% | {window:+.1f}% | {pre} ({rec}) | {starved} |"
        )
    lines += [
        "",
        "| seed | policy | realized pwo | team | share | quota share | enough work | met "
        "| waits within quota: kept out / full / idle | reclaimed runs |",
        "| ---: | --- | ---: | --- | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for r in sorted(rows, key=lambda r: (r["seed"], POLICIES.index(r["policy"]))):
        met = ("yes" if _met(r) else "no") if r["enough"] else "-"
        lines.append(
            f"| {r['seed']} | {r['policy']} | {r['pwo']:,.0f} | {r['team']} | "
            f"{100 * r['share']:.1f}% | {100 * r['quota_share']:.1f}% | "
            f"{'yes' if r['enough'] else 'no'} | {met} | {' / '.join(map(str, r['waits']))} | "
            f"{r['reclaimed']} |"
        )
    return "\n".join(lines) + "\n"


def _median_gain(
    rows: dict[int, dict[str, Any]], base: dict[int, dict[str, Any]], seeds: list[int], key: str
) -> float:
    """The median over `seeds` of `rows`' figure `key` against `base`'s, in percent."""
    gains = sorted(100 * (rows[s][key] / base[s][key] - 1) for s in seeds)
    return gains[len(gains) // 2]


def _world(kind: str) -> str:
    return f"synthetic world ({Noise()})" if kind == "synthetic" else f"{kind} world"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instance", default="instances/teams.yaml", help="relative to the checkout")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--world", choices=WORLDS, default="cluster")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n = args.seeds
    with ProcessPoolExecutor(args.jobs) as pool:
        parts = pool.map(run, [args.instance] * n, range(n), [args.seconds] * n, [args.world] * n)
        rows = [row for part in parts for row in part]
    command = ".venv/bin/python benchmarks/teams_loop.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    text = report(args.instance, rows, args.seconds, args.world, command)
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
