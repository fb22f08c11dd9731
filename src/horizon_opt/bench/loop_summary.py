"""summary.md of a closed-loop suite: what each policy realized per family and world, against
the base policy (the suite's `loop.base`, else the registry's loop baseline) and against the top
rung of the ladder, and the ladder itself.

Every figure is a median over the runs of a family and world kind (its instances and world
seeds); a ratio is taken per run first (both policies replayed in the same drawn world), then
its median. Failed runs are left out (see Failures)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from horizon_opt.bench import roles
from horizon_opt.bench.rows import LoopRow
from horizon_opt.bench.suite import Suite
from horizon_opt.bench.summary import failures, figure, machine
from horizon_opt.plans.comparison_table import markdown_table
from horizon_opt.simulate.policy import learning_settings, policy

Run = dict[str, LoopRow]  # one closed-loop run's good rows, by policy
Group = tuple[str, str]  # (family, world kind)


def runs_by_group(rows: Sequence[LoopRow]) -> dict[Group, list[Run]]:
    """The good rows of each run, runs grouped by (family, world), in order of appearance."""
    runs: dict[tuple[str, str, int], Run] = {}
    groups: dict[Group, list[Run]] = {}
    for r in rows:
        key = (r.instance, r.world, r.seed)
        if key not in runs:
            runs[key] = {}
            groups.setdefault((r.family, r.world), []).append(runs[key])
        if r.ok:
            runs[key][r.policy] = r
    return groups


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def ratios(
    runs: Sequence[Run],
    policy: str,
    base: str,
    value: Callable[[LoopRow], float | None] = lambda row: row.realized_pwo,
) -> list[float]:
    """Per run: the policy's realized pwo (or another `value`) over the base's (runs where both
    replayed and the base has it above 0; rows written before a figure existed leave it out)."""
    out = []
    for r in runs:
        if policy not in r or base not in r:
            continue
        mine, theirs = value(r[policy]), value(r[base])
        if mine is not None and theirs is not None and theirs > 0:
            out.append(mine / theirs)
    return out


def spread(ratios: Sequence[float]) -> str:
    """`median / worst, above in k of n` of per-run ratios to a peer, as percentages."""
    if not ratios:
        return "-"
    above = sum(x > 1 for x in ratios)
    return (
        f"{100 * (statistics.median(ratios) - 1):+.1f}% / {100 * (min(ratios) - 1):+.1f}%, "
        f"{above} of {len(ratios)}"
    )


def top_shares(rows: Sequence[LoopRow], top: str) -> dict[Group, dict[str, float | None]]:
    """Per (family, world) and policy: the median share of the top rung's realized pwo."""
    policies = policy_order(rows)
    return {
        group: {p: median(ratios(runs, p, top)) for p in policies}
        for group, runs in runs_by_group(rows).items()
    }


def policy_order(rows: Sequence[LoopRow], suite: Suite | None = None) -> list[str]:
    """The ladder order: the suite's policies, else the order of appearance."""
    if suite is not None and suite.spec.loop is not None:
        return list(suite.spec.loop.policies)
    return list(dict.fromkeys(r.policy for r in rows))


def top_of(rows: Sequence[LoopRow], suite: Suite | None = None) -> str:
    """The top rung: the suite's, else the last policy."""
    if suite is not None and suite.spec.loop is not None:
        return suite.spec.loop.top_rung
    order = policy_order(rows)
    return order[-1] if order else "-"


def base_of(suite: Suite | None = None) -> str:
    """The policy `vs` compares with: the suite's, else the registry's loop baseline."""
    if suite is not None and suite.spec.loop is not None:
        return suite.spec.loop.reference
    return roles.loop_baseline()


def _fmt(value: float | None, spec: str, scale: float = 1.0, unit: str = "") -> str:
    return "-" if value is None else f"{format(scale * value, spec)}{unit}"


def _promised(value: Callable[[LoopRow], float | None]) -> Callable[[LoopRow], float | None]:
    """A promise figure, none for a run that made no promise in its window."""
    return lambda r: None if r.promised == 0 else value(r)


def _med(
    runs: Sequence[Run], policy: str, value: Callable[[LoopRow], float | None]
) -> float | None:
    """The median of a figure over the runs that have it (rows written before a figure existed
    leave it empty)."""
    values = [value(r[policy]) for r in runs if policy in r]
    return median([float(v) for v in values if v is not None])


def _sum(rows: Sequence[LoopRow], value: Callable[[LoopRow], float | None]) -> float | None:
    """The total of a figure over the rows that have it (None when none has)."""
    values = [v for v in (value(r) for r in rows) if v is not None]
    return float(sum(values)) if values else None


def policy_table(rows: Sequence[LoopRow], top: str, order: Sequence[str], base: str) -> str:
    """Per family, world and policy: medians of realized pwo, of the per-run ratios to the base
    policy (and in the measured window: median, worst, and in how many runs above it) and to
    the top rung, SLO shortfall, preemptions, GPU-hours lost, the error of starts
    promised 2 h or more ahead (of their P50 too, and the share started by their P90), the
    starved jobs of all runs, and plan time."""
    lines: list[list[str]] = []
    for (family, world), runs in runs_by_group(rows).items():
        for p in order:
            done = [r for r in runs if p in r]
            if not done:
                continue
            vs_base = median(ratios(runs, p, base))
            plan_max = max(figure(r[p].max_solver_seconds) for r in done)
            lines.append(
                [
                    family,
                    world,
                    p,
                    str(len(done)),
                    _fmt(_med(runs, p, lambda r: r.realized_pwo), ",.0f"),
                    _fmt(None if vs_base is None else vs_base - 1, "+.1f", 100, "%"),
                    spread(ratios(runs, p, base, lambda r: r.window_pwo)),
                    _fmt(median(ratios(runs, p, top)), ".1f", 100, "%"),
                    _fmt(_med(runs, p, lambda r: r.slo_short_share), ".2f", 100, "%"),
                    _fmt(_med(runs, p, lambda r: r.preemptions), "g"),
                    _fmt(_med(runs, p, lambda r: r.lost_gpu_hours), ",.0f"),
                    _fmt(_med(runs, p, _promised(lambda r: r.promise_error_hours)), ".1f"),
                    _fmt(_med(runs, p, _promised(lambda r: r.promise_p50_error_hours)), ".1f"),
                    _fmt(
                        _med(runs, p, _promised(lambda r: r.promise_p90_coverage)), ".0f", 100, "%"
                    ),
                    _fmt(_sum([r[p] for r in done], lambda r: r.starved), "g"),
                    f"{_fmt(_med(runs, p, lambda r: r.solver_seconds), '.1f')} / {plan_max:.1f}",
                ]
            )
    header = ["family", "world", "policy", "runs", "realized pwo", f"vs {base}"]
    header += [f"window vs {base} (median / worst, runs above)"]
    header += [f"share of {top}", "SLO short", "preemptions", "GPU-h lost", "promise error h"]
    header += ["P50 error h", "P90 coverage", "starved (all runs)"]
    return markdown_table([*header, "plan s (total / max one)"], lines) + "\n"


def ladder_table(rows: Sequence[LoopRow], top: str, order: Sequence[str]) -> str:
    """The ladder: a row per policy in ladder order, a column per (family, world), each cell the
    median share of the top rung's realized pwo."""
    shares = top_shares(rows, top)
    header = ["policy", *(f"{family} / {world}" for family, world in shares)]
    lines = [[p, *(_fmt(s.get(p), ".1f", 100, "%") for s in shares.values())] for p in order]
    return markdown_table(header, lines) + "\n"


def _settings(suite: Suite | None) -> list[str]:
    """The header lines on how the suite replays (when the suite file is at hand)."""
    if suite is None or suite.spec.loop is None:
        return []
    loop = suite.spec.loop
    durations = (loop.replan_every, loop.freeze)
    every, freeze = (f"{v:g} min" if isinstance(v, float | int) else v for v in durations)
    noise = f"; the synthetic world's noise {loop.noise}" if "synthetic" in loop.worlds else ""
    chosen = [
        policy(name, 1, 0, keep_promises=loop.keep_promises, deadline_odds=loop.deadline_odds)
        for name in loop.policies
    ]
    held = learning_settings(chosen, loop.keep_promises)
    held = held if any(p.keep_promises for p in chosen) else ", promises held at 0" + held
    return [
        f"- suite: `{suite.path}`",
        f"- re-plan every {every}, freeze {freeze}, stability {loop.stability:g}{held}{noise}",
    ]


def summarize_loop(
    rows: Sequence[LoopRow],
    *,
    suite: Suite | None = None,
    top: str | None = None,
    jobs: int | None = None,
    seconds: float | None = None,
) -> str:
    """The markdown summary of a closed-loop results table; `top` defaults to the suite's top
    rung, else the last policy."""
    order = policy_order(rows, suite)
    top = top if top is not None else top_of(rows, suite)
    base = base_of(suite)
    instances = {r.instance for r in rows}
    worlds = list(dict.fromkeys(r.world for r in rows))
    runs = {(r.instance, r.world, r.seed) for r in rows}
    seeds = sorted({r.seed for r in rows})
    limits = sorted({r.time_limit for r in rows})
    workers = sorted({r.workers for r in rows})
    head = [f"# Closed-loop benchmark summary{f': {suite.spec.name}' if suite else ''}", ""]
    head += _settings(suite)
    head += [
        f"- {len(runs)} runs (instance x world x world seed: {len(instances)} instances, worlds "
        f"{', '.join(worlds)}, seeds {', '.join(map(str, seeds))}) of {len(order)} policies "
        f"({', '.join(order)})" + (f"; runs at once (--jobs): {jobs}" if jobs else ""),
        f"- time limit per plan of an anytime solver ({roles.anytime()}), s: "
        f"{', '.join(f'{x:g}' for x in limits)}; {roles.anytime()} workers "
        f"{', '.join(map(str, workers))}",
        f"- machine: {machine()}",
        f"- written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f", whole run {seconds / 60:.1f} min" if seconds is not None else ""),
        "- a run replays every policy in the same drawn world; figures are medians over the "
        f"runs of a family and world; vs {base} and share of {top} are realized pwo over "
        "theirs in the same run, then the median; runs that failed are left out (see Failures)",
        "",
        f"## The ladder: share of {top}'s realized pwo",
        "",
        ladder_table(rows, top, order),
        "## Policies by family and world",
        "",
        policy_table(rows, top, order, base),
    ]
    none = "None: every run replayed every policy (each plan it executed passes `check`)."
    head += failures(
        rows, ("instance", "world", "seed"), lambda r: (r.instance, r.world, r.seed), none
    )
    return "\n".join(head) + "\n"
