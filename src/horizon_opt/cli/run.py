"""Commands that run plans and solvers many times: simulate (a closed-loop replay) and bench
(a suite of runs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.cli.errors import input_errors
from horizon_opt.cli.options import (
    DeadlineOdds,
    EarlyStarts,
    EndDiscount,
    InstanceArg,
    KeepPromises,
    PlanTimeLimit,
    Stability,
    file_name,
    time_option,
)
from horizon_opt.cli.outputs import Output, check_outputs, writing
from horizon_opt.cli.solving import warn
from horizon_opt.errors import InputError
from horizon_opt.export.charts import save_figure
from horizon_opt.io import write_atomic
from horizon_opt.loop.replan import DEFAULT_FREEZE_MINUTES
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import load_instance
from horizon_opt.params import LOOP
from horizon_opt.simulate import Noise, Replay, World, policy, simulate
from horizon_opt.simulate.audit import audit_files, write_audit
from horizon_opt.simulate.engine import require_empty_cluster
from horizon_opt.simulate.policy import Policy, learning_settings
from horizon_opt.simulate.report import (
    format_table,
    plot_realized,
    starved_lines,
    team_table,
    to_csv,
)
from horizon_opt.simulate.window import Window
from horizon_opt.simulate.world_file import write_world
from horizon_opt.simulate.worlds import replay_world, world_noise_for
from horizon_opt.solvers import SolveOptions
from horizon_opt.solvers.options import MAX_SEED, PER_PLAN_SECONDS

SimulateOut = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Output folder (results.csv, summary.md, realized.png, world.yaml, and per "
        "policy POLICY.actual.yaml and POLICY.ran.json: what really ran).",
        parser=file_name,
    ),
]
Policies = Annotated[
    str,
    typer.Option(
        "--policy",
        help="Comma-separated: solvers (fifo and backfill online, greedy and cpsat "
        "re-planning), or <solver>-open for a solver's one plan executed open loop; "
        "-runtimes, -arrivals, -oracle: told the actual run times, every arrival, or both; "
        "-predict: bets on the jobs whose limits cannot end in time; -expect: plans on run "
        "times learned so far; -pack: the same without bets; @EVERY/FREEZE or @event after a re-planning one: its own cadence "
        "(cpsat@30m/0, cpsat@event).",
    ),
]
ReplayWorkers = Annotated[
    int,
    typer.Option(
        "--workers",
        help="CP-SAT search workers per plan; with 1 (the default) every plan, and so the "
        "replay, is repeatable under any load (it may then take longer than its time limits).",
        min=1,
    ),
]
ReplanEvery = Annotated[
    str, typer.Option(help="Time between full re-plans of greedy and cpsat (e.g. 2h).")
]
Freeze = Annotated[
    str, typer.Option(help="Each re-plan holds the previous plan's starts this far ahead.")
]
DEFAULT_NOISE = str(Noise())
NoiseOption = Annotated[
    str | None,
    typer.Option(
        help="The synthetic world's noise: early=SHARE,fail=SHARE,demand=SIGMA (see "
        f"docs/simulate.md; default {DEFAULT_NOISE}); none for the planners' own estimates. "
        "Only with --world synthetic (or, for demand, trace).",
        show_default=False,
    ),
]
WorldKind = Annotated[
    str | None,
    typer.Option(
        "--world",
        help="The drawn world: cluster (limits users give, failures by gang size, demand "
        "errors of a real LLM service; docs/simulate.md), trace (run times, failures and "
        "cancellations shaped by real traces) or synthetic (--noise, for regression). "
        "Default: cluster.",
        show_default=False,
    ),
]
Actual = Annotated[
    Path | None,
    typer.Option(
        help="Replay this world file (FORMAT.md, World file) instead of drawing one.",
    ),
]
RealizedChart = Annotated[bool, typer.Option(help="Write realized.png.")]
WorldSeed = Annotated[
    int,
    typer.Option(
        "--seed",
        help="The drawn world's seed (the world of seed N is the same for every policy).",
        min=0,
        max=MAX_SEED,
    ),
]
SolverSeed = Annotated[
    int,
    typer.Option(
        "--solver-seed",
        help="cpsat's seed in every plan, apart from the world's: compare policies over world "
        "seeds and solver seeds, as benchmarks/loop_seeds.py does.",
        min=0,
        max=MAX_SEED,
    ),
]
WindowOption = Annotated[
    str,
    typer.Option(
        "--window",
        help="The measured window, A-B in hours from the horizon's start, or middle (its middle "
        "half): the window figures count only what ran inside it (docs/simulate.md).",
    ),
]


def _write_replays(
    out: Path, inst: Instance, world: World, replays: list[Replay], heading: str, charts: bool
) -> str:
    """Every file of a replay into the --out folder; returns the summary: `heading` and the
    tables (by team too, from the plans of what ran, when the instance has teams)."""
    with input_errors(), writing("--out", out):
        ran = {}
        for r in replays:
            assert r.audit is not None  # every replay logs what ran
            ran[r.policy] = write_audit(out, inst, r.audit, r.policy)
        summary = f"{heading}{format_table(replays)}\n\n"
        summary += f"{starved_lines(replays, inst.hours_per_slot)}\n"
        if inst.teams:
            summary += f"\nby team, as it really ran:\n\n{team_table(ran, replays)}\n"
        write_atomic(out / "results.csv", to_csv(replays))
        write_atomic(out / "summary.md", summary)
        write_world(out / "world.yaml", inst, world)
        if charts:
            save_figure(plot_realized(inst, replays), out / "realized.png")
    return summary


def simulate_cmd(
    instance: InstanceArg,
    out: SimulateOut,
    policies: Policies = "fifo,backfill,greedy,cpsat,cpsat-open",
    replan_every: ReplanEvery = "2h",
    freeze: Freeze = f"{DEFAULT_FREEZE_MINUTES // 60}h",
    stability: Stability = 0.0,
    keep_promises: KeepPromises = None,
    deadline_odds: DeadlineOdds = True,
    end_discount: EndDiscount = 0.0,
    early_starts: EarlyStarts = None,
    noise: NoiseOption = None,
    world_kind: WorldKind = None,
    actual: Actual = None,
    seed: WorldSeed = 0,
    solver_seed: SolverSeed = 0,
    time_limit: PlanTimeLimit = PER_PLAN_SECONDS,
    workers: ReplayWorkers = 1,
    charts: RealizedChart = True,
    window: WindowOption = "middle",
) -> None:
    """Replay policies over the horizon against an actual world (jobs end early or fail,
    demand strays from the forecast): what each policy really realizes, over the whole horizon
    and in a measured window away from its ends."""
    with input_errors():
        names = [name.strip() for name in policies.split(",") if name.strip()]
        audits = [f for name in names for f in audit_files(name)]
        files = (
            "results.csv",
            "summary.md",
            "world.yaml",
            *(("realized.png",) if charts else ()),
            *audits,
        )
        check_outputs(
            [Output("--out", out, kind="folder", files=files)],
            [("the instance file", instance), ("--actual", actual)],
        )
        inst = load_instance(instance)
        if actual is not None and noise is not None:
            raise InputError(["--noise: a world file replaces the drawn world; leave out --noise"])
        world_noise = world_noise_for(world_kind, noise)
        every = time_option(replan_every, inst, "--replan-every")
        if every < 1:
            raise InputError([f"--replan-every: must be more than 0, got {replan_every!r}"])
        hold = time_option(freeze, inst, "--freeze")
        chosen = [
            policy(
                name,
                every,
                hold,
                stability,
                slot_minutes=inst.slot_minutes,
                keep_promises=keep_promises,
                deadline_odds=deadline_odds,
                start_early=early_starts,
            )
            for name in names
        ]
        if not chosen:
            raise InputError(["--policy: name at least one policy"])
        require_empty_cluster(inst, str(instance))
        warn(instance, inst)
        world, drawn = replay_world(inst, world_kind, seed, world_noise, actual)
        measured = Window.parse(window, inst.slots, inst.slot_minutes)
    params = replace(LOOP, end_discount=end_discount)
    options = SolveOptions(time_limit=time_limit, workers=workers, seed=solver_seed, params=params)
    replays = []
    for p in chosen:
        typer.echo(f"replaying {p.name} ...", err=True)
        replays.extend(simulate(inst, [p], world, options, window=measured))
    settings = _settings(chosen, keep_promises, end_discount, early_starts)
    h = inst.hours_per_slot
    heading = (
        f"# {inst.name}: closed-loop replay\n\nworld: {drawn}; re-plan every "
        f"{replan_every}, freeze {freeze}, cpsat {time_limit:g} s per plan, seed {solver_seed}{settings}; "
        f"window {measured.start * h:g}-{measured.end * h:g} h\n\n"
    )
    summary = _write_replays(out, inst, world, replays, heading, charts)
    _echo_written(summary, out, [f for f in files if f not in audits])


def _settings(
    chosen: list[Policy], keep_promises: float | None, end_discount: float, early: bool | None
) -> str:
    """The replay's settings beyond the defaults, for its heading."""
    settings = learning_settings(chosen, keep_promises)
    settings += f", end discount {end_discount:g}" if end_discount else ""
    if early is not None:
        settings += f", early starts {'on' if early else 'off'}"
    return settings


def _echo_written(summary: str, out: Path, shared: list[str]) -> None:
    """The replay's summary, then where its files went."""
    typer.echo(summary)
    typer.echo(f"written: {', '.join(str(out / f) for f in shared)}")
    audit = out / "POLICY"
    typer.echo(
        f"what really ran, per policy: {audit}.actual.yaml and {audit}.ran.json (check them)"
    )


SuiteArg = Annotated[
    Path,
    typer.Argument(
        metavar="SUITE",
        help="Suite file (YAML): instances, solvers, time limits; see docs/bench.md.",
        show_default=False,
    ),
]
Jobs = Annotated[
    int, typer.Option("--jobs", "-j", help="Runs at once, each in its own process.", min=1)
]
BenchOut = Annotated[
    Path | None,
    typer.Option(
        help="Output folder. Default: bench-results/<suite file name> in the current "
        "folder (ignored by git: a run leaves the committed results alone).",
        show_default=False,
        parser=file_name,
    ),
]
Only = Annotated[
    str | None,
    typer.Option(help="Run only the instances whose name contains this text.", show_default=False),
]
Traces = Annotated[
    Path | None,
    typer.Option(
        help="Folder of the trace CSVs, for generated trace instances.", show_default=False
    ),
]
Charts = Annotated[bool, typer.Option(help="Write the PNG charts.")]
DEFAULT_BENCH_OUT = Path("bench-results")  # where `bench` writes without --out: not committed
SummaryOnly = Annotated[
    bool,
    typer.Option(help="Rewrite summary.md and the charts from OUT/results.csv; run nothing."),
]
Engine = Annotated[
    str,
    typer.Option(
        help="Where runs happen: local (a process pool on this machine) or ray (a Ray "
        "cluster; needs the ray extra of horizon-opt, see docs/bench.md)."
    ),
]
Address = Annotated[
    str | None,
    typer.Option(
        help="With --engine ray: the cluster, auto (the one this machine belongs to) or "
        "ray://HOST:10001. Default: start a local Ray instance.",
        show_default=False,
    ),
]


def bench_cmd(
    suite_file: SuiteArg,
    jobs: Jobs = 2,
    out: BenchOut = None,
    only: Only = None,
    traces: Traces = None,
    charts: Charts = True,
    summary_only: SummaryOnly = False,
    engine: Engine = "local",
    address: Address = None,
) -> None:
    """Run every (instance, solver) pair of a suite in guarded worker processes; write
    results.csv, summary.md, the plans and charts. Exit 1 when a run failed or a plan is invalid."""
    from horizon_opt import bench

    with input_errors():
        bench.check_engine(engine, address)
        suite = bench.load_suite(suite_file)
        folder = out if out is not None else DEFAULT_BENCH_OUT / suite_file.stem
        check_outputs(
            [Output("--out", folder, kind="folder", files=("results.csv", "summary.md"))],
            [("the suite file", suite_file)],
        )
        if summary_only:
            results = folder / "results.csv"
            if not results.is_file():
                raise InputError([f"--summary-only: no {results}; run the suite first"])
            rows = bench.read_csv(results)
            files = bench.write_reports(rows, folder, suite=suite, charts=charts)
        else:
            try:
                result = bench.run_suite(
                    suite,
                    folder,
                    jobs=jobs,
                    traces=traces,
                    only=only,
                    charts=charts,
                    engine=engine,
                    address=address,
                )
            except bench.Interrupted as stop:
                done = len(stop.result.rows)
                typer.echo(f"interrupted: {done} finished run(s) written to {folder}/", err=True)
                raise typer.Exit(130) from None
            rows, files = result.rows, result.files
    typer.echo((folder / "summary.md").read_text())
    plans = folder / "plans"  # a closed-loop suite writes none
    written = [*map(str, files), *([f"{plans}/"] if plans.is_dir() else [])]
    typer.echo("written: " + ", ".join(written))
    if not all(bench.ok(r) for r in rows):
        raise typer.Exit(1)
