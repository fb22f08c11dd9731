"""The `horizon-opt` command: thin typer commands over the library; bad input exits 2, cleanly."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.check import check, ensure_valid
from horizon_opt.compare import compare_plans, format_comparison
from horizon_opt.diff import format_diff, plan_diff
from horizon_opt.errors import InputError
from horizon_opt.explain import explain
from horizon_opt.export.charts import save_figure
from horizon_opt.export.explanations import (
    explanations_csv,
    explanations_json,
    format_explanations,
    format_one,
)
from horizon_opt.forecast import (
    History,
    SeasonalQuantile,
    backtest,
    demand_csv_text,
    demand_for,
    headroom_for,
    patch_instance,
    read_history,
    summarize,
    to_datetime,
)
from horizon_opt.importers import Imported, read_cluster
from horizon_opt.importers.kueue import import_kueue, read_workloads
from horizon_opt.importers.result import count_line, note_lines
from horizon_opt.importers.slurm import import_slurm
from horizon_opt.importers.source import read_json
from horizon_opt.importers.table import import_table
from horizon_opt.instance import Instance, duration_minutes
from horizon_opt.io import load_instance, write_atomic
from horizon_opt.metrics import evaluate
from horizon_opt.outputs import Output, check_outputs, is_stdout, writing
from horizon_opt.plan import Plan
from horizon_opt.prices import capacity_prices, format_prices, prices_to_json
from horizon_opt.replan import DEFAULT_FREEZE_MINUTES, MAX_STABILITY, replan
from horizon_opt.simulate import Noise, policy, simulate
from horizon_opt.simulate.audit import audit_files, write_audit
from horizon_opt.simulate.report import format_table, plot_realized, to_csv
from horizon_opt.simulate.world_file import write_world
from horizon_opt.simulate.worlds import replay_world
from horizon_opt.solvers import SOLVERS, Progress, SolveOptions, solve
from horizon_opt.solvers.options import MAX_SEED, default_workers
from horizon_opt.spec import InstanceSpec
from horizon_opt.times import parse_time
from horizon_opt.validate import validate
from horizon_opt.version import __version__
from horizon_opt.whatif import (
    METAVAR,
    Change,
    ChangeKind,
    format_what_if,
    parse_change,
    solve_what_if,
    what_if_instances,
    what_if_json,
)

app = typer.Typer(
    help=(
        "Plan GPU allocation for a cluster over a time horizon: real-time inference keeps its "
        "forecast capacity slot by slot, batch jobs (training, batch inference, quantization, "
        "evaluation) fill the rest by value. Instance and plan formats: see FORMAT.md."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"horizon-opt {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """horizon-opt: constraint-aware GPU allocation planner."""


@contextmanager
def _input_errors() -> Iterator[None]:
    """Bad input: one line per problem on stderr, exit code 2, no traceback."""
    try:
        yield
    except InputError as exc:
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(2) from None


def _file_name(value: str) -> Path:
    """An output name as given: an empty one would otherwise mean the current folder."""
    if not value:
        raise typer.BadParameter("empty file name")
    return Path(value)


InstanceArg = Annotated[
    Path, typer.Argument(help="Instance file (YAML, see FORMAT.md).", show_default=False)
]
TimeLimit = Annotated[float, typer.Option("--time-limit", "-t", help="Seconds for cpsat.", min=0.1)]
Workers = Annotated[
    int,
    typer.Option(
        help="CP-SAT search workers (default: the CPUs available to this process, at most 8).",
        min=1,
        show_default=False,
    ),
]
DEFAULT_WORKERS = default_workers()
Seed = Annotated[
    int,
    typer.Option(help="Random seed; with --workers 1 runs are repeatable.", min=0, max=MAX_SEED),
]
Log = Annotated[
    Path | None,
    typer.Option(
        help="Write the CP-SAT search log to this file (streamed: a device such as /dev/stderr "
        "works too; its folder must exist).",
        parser=_file_name,
    ),
]
Hint = Annotated[Path | None, typer.Option(help="Start cpsat from this plan file.")]
Stability = Annotated[
    float,
    typer.Option(
        help="Price of a promise beyond the freeze window, times its job's value: cpsat keeps a "
        "promised start unless moving gains more (0: no price).",
        min=0.0,
        max=MAX_STABILITY,
    ),
]
SOLVER_LIST = "\n\n".join(f"{s.name}: {s.description}" for s in SOLVERS.values())


def _progress_printer() -> Callable[[Progress], None] | None:
    """Live progress on a terminal only; nothing when output is piped or logged."""
    if not sys.stderr.isatty():
        return None

    def show(p: Progress) -> None:
        bound = "-" if p.bound is None else f"{p.bound:,.1f}"
        gap = "-" if p.gap is None else f"{100 * p.gap:.2f}%"
        sys.stderr.write(
            f"\r  {p.elapsed:7.1f}s  pwo {p.objective:,.1f}  bound {bound}  gap {gap}   "
        )
        sys.stderr.flush()

    return show


def _log_outputs(log: Path | None) -> list[Output]:
    return [] if log is None else [Output("--log", log, kind="stream")]


def _solve_inputs(instance: Path, hint: Path | None) -> list[tuple[str, Path | None]]:
    return [("the instance file", instance), ("the --hint plan", hint)]


MAX_WARNINGS = 10


def _warn(instance_file: Path, inst: Instance) -> None:
    """The instance's warnings on stderr before a solve, at most MAX_WARNINGS of them: a solve
    can run for minutes, and `validate` is there to list them all."""
    found = validate(inst)
    for warning in found[:MAX_WARNINGS]:
        typer.echo(f"warning: {warning}", err=True)
    if len(found) > MAX_WARNINGS:
        more = len(found) - MAX_WARNINGS
        typer.echo(
            f"... and {more} more warning{'s' if more > 1 else ''} "
            f"(horizon-opt validate {instance_file} lists them all)",
            err=True,
        )


def _options(
    time_limit: float, workers: int, seed: int, log: Path | None, hint: Path | None
) -> SolveOptions:
    return SolveOptions(
        time_limit=time_limit,
        workers=workers,
        seed=seed,
        log=log,
        hint=Plan.read(hint) if hint is not None else None,
        on_progress=_progress_printer(),
    )


def _summary(plan: Plan) -> str:
    m = plan.metrics
    total = len(plan.assignments) + len(plan.unscheduled)
    lines = [
        f"{plan.solver} on {plan.instance}: {plan.status}",
        f"  pwo (priority-weighted output)  {plan.objective:,.2f}",
    ]
    if plan.bound is not None and plan.gap is not None:
        lines.append(f"  proven bound / gap              {plan.bound:,.2f} / {100 * plan.gap:.2f}%")
    lines += [
        f"  utilization                     {100 * m.utilization:.1f}%",
        f"  jobs on time                    {m.completed} of {total}"
        + (f" ({m.late} more scheduled late)" if m.late else ""),
        f"  mean wait                       {m.mean_wait_hours:.2f} h",
        f"  reserved idle GPU-hours         {m.reserved_idle_gpu_hours:,.1f}",
        f"  wall time                       {plan.wall_seconds:.2f} s",
    ]
    return "\n".join(lines)


PlanOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="Where to write the plan (JSON); - writes it to standard output and the summary "
        "to stderr.",
        parser=_file_name,
    ),
]


def _check_solver(solver: str) -> None:
    if solver not in SOLVERS:
        raise InputError(
            [f"--solver: unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}"]
        )


def _write_plan(plan: Plan, output: Path, summary: str) -> None:
    """The plan to its file (or standard output, the summary then going to stderr)."""
    to_stdout = is_stdout(output)
    if sys.stderr.isatty():
        sys.stderr.write("\n")  # ends the live progress line
    if to_stdout:
        typer.echo(plan.to_json(), nl=False)
    else:
        with _input_errors(), writing("--output", output):
            plan.write(output)
    typer.echo(summary, err=to_stdout)
    typer.echo(f"  plan written to {'standard output' if to_stdout else output}", err=to_stdout)


@app.command("solve")
def solve_cmd(
    instance: InstanceArg,
    output: PlanOutput,
    solver: Annotated[str, typer.Option(help=f"One of:\n\n{SOLVER_LIST}")] = "cpsat",
    time_limit: TimeLimit = 60.0,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    log: Log = None,
    hint: Hint = None,
) -> None:
    """Plan one instance with one solver and write the plan file."""
    with _input_errors():
        _check_solver(solver)
        check_outputs(
            [Output("--output", output, stdout=True), *_log_outputs(log)],
            _solve_inputs(instance, hint),
        )
        inst = load_instance(instance)
        _warn(instance, inst)
        plan = solve(inst, solver, _options(time_limit, workers, seed, log, hint))
    _write_plan(plan, output, _summary(plan))


def _time_option(value: str, inst: Instance, option: str) -> int:
    """A time option as slots: a duration with a unit (2h, 90m) rounds up; a number is slots."""
    text = value.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    minutes = duration_minutes(text)
    if minutes is None:
        raise InputError([f"{option}: not a duration: {value!r} (use slots or e.g. 90m, 2h)"])
    return math.ceil(minutes / inst.slot_minutes - 1e-9)


def _churn_lines(plan: Plan) -> list[str]:
    c = plan.churn
    if c is None:
        return []
    return [
        f"  promises compared / held        {c.compared} / {c.held}",
        f"  moved (later)                   {c.moved} ({c.later}), {c.moved_gpu_hours:,.1f} "
        f"GPU-hours, shift mean {c.mean_shift_hours:.2f} h, max {c.max_shift_hours:.2f} h",
        f"  dropped / promises broken       {c.dropped} / {c.broken}",
        f"  newly planned                   {c.new}",
    ]


@app.command("replan")
def replan_cmd(
    instance: Annotated[
        Path,
        typer.Argument(
            help="The cluster's state: an instance with `now`, running jobs `placed`, finished "
            "jobs left out (FORMAT.md).",
            show_default=False,
        ),
    ],
    previous: Annotated[
        Path, typer.Option(help="The plan being replaced (its near starts are held).")
    ],
    output: PlanOutput,
    solver: Annotated[str, typer.Option(help=f"One of:\n\n{SOLVER_LIST}")] = "cpsat",
    freeze: Annotated[
        str,
        typer.Option(
            help="Hold the previous plan's starts within this long after now (e.g. 2h, 90m, or "
            "slots); 0 holds none."
        ),
    ] = f"{DEFAULT_FREEZE_MINUTES // 60}h",
    stability: Stability = 0.0,
    time_limit: TimeLimit = 20.0,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    log: Log = None,
) -> None:
    """Plan again from the cluster's state at `now`, starting from the previous plan; report
    what moved (churn)."""
    with _input_errors():
        _check_solver(solver)
        check_outputs(
            [Output("--output", output, stdout=True), *_log_outputs(log)],
            [("the instance file", instance), ("the --previous plan", previous)],
        )
        inst = load_instance(instance)
        before = Plan.read(previous)
        slots = _time_option(freeze, inst, "--freeze")
        _warn(instance, inst)
        if before.instance != inst.name:
            typer.echo(
                f"warning: the previous plan is for instance {before.instance!r}, "
                f"not {inst.name!r}",
                err=True,
            )
        result = replan(
            inst,
            before,
            solver,
            _options(time_limit, workers, seed, log, previous),
            freeze_slots=slots,
            stability=stability,
        )
    for line in result.not_held:
        typer.echo(f"warning: {line}", err=True)
    plan = result.plan
    _write_plan(plan, output, "\n".join([_summary(plan), *_churn_lines(plan)]))


@app.command("simulate")
def simulate_cmd(
    instance: InstanceArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Output folder (results.csv, summary.md, realized.png, world.yaml, and per "
            "policy POLICY.actual.yaml and POLICY.ran.json: what really ran).",
            parser=_file_name,
        ),
    ],
    policies: Annotated[
        str,
        typer.Option(
            "--policy",
            help="Comma-separated: solvers (fifo and backfill online, greedy and cpsat "
            "re-planning), or <solver>-open for a solver's one plan executed open loop; "
            "-runtimes, -arrivals, -oracle: told the actual run times, every arrival, or both; "
            "-predict: bets on the jobs whose limits cannot end in time; @EVERY/FREEZE after a "
            "re-planning one: its own cadence (cpsat@30m/0).",
        ),
    ] = "fifo,backfill,greedy,cpsat,cpsat-open",
    replan_every: Annotated[
        str, typer.Option(help="Time between full re-plans of greedy and cpsat (e.g. 2h).")
    ] = "2h",
    freeze: Annotated[
        str, typer.Option(help="Each re-plan holds the previous plan's starts this far ahead.")
    ] = f"{DEFAULT_FREEZE_MINUTES // 60}h",
    stability: Stability = 0.0,
    noise: Annotated[
        str,
        typer.Option(
            help="The synthetic world: early=SHARE,fail=SHARE,demand=SIGMA (see "
            "docs/simulate.md); none for the planners' own estimates."
        ),
    ] = str(Noise()),
    world_kind: Annotated[
        str,
        typer.Option(
            "--world",
            help="The drawn world: synthetic (--noise) or trace (run times, failures and "
            "cancellations shaped by real traces).",
        ),
    ] = "synthetic",
    actual: Annotated[
        Path | None,
        typer.Option(
            help="Replay this world file (FORMAT.md, World file) instead of drawing one.",
        ),
    ] = None,
    seed: Seed = 0,
    time_limit: Annotated[
        float, typer.Option("--time-limit", "-t", help="Seconds per cpsat plan.", min=0.1)
    ] = 20.0,
    workers: Workers = DEFAULT_WORKERS,
    charts: Annotated[bool, typer.Option(help="Write realized.png.")] = True,
) -> None:
    """Replay policies over the horizon against an actual world (jobs end early or fail,
    demand strays from the forecast): what each policy really realizes."""
    with _input_errors():
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
        world_noise = Noise.parse(noise)
        every = max(1, _time_option(replan_every, inst, "--replan-every"))
        hold = _time_option(freeze, inst, "--freeze")
        chosen = [
            policy(name, every, hold, stability, slot_minutes=inst.slot_minutes) for name in names
        ]
        if not chosen:
            raise InputError(["--policy: name at least one policy"])
        if inst.now or inst.placed:
            raise InputError(
                [
                    f"{instance}: simulate replays a horizon from an empty cluster: leave out `now` "
                    "and `placed`"
                ]
            )
        _warn(instance, inst)
        world, drawn = replay_world(inst, world_kind, seed, world_noise, actual)
    options = SolveOptions(time_limit=time_limit, workers=workers, seed=seed)
    replays = []
    for p in chosen:
        typer.echo(f"replaying {p.name} ...", err=True)
        replays.extend(simulate(inst, [p], world, options))
    table = format_table(replays)
    summary = (
        f"# {inst.name}: closed-loop replay\n\nworld: {drawn}; re-plan every "
        f"{replan_every}, freeze {freeze}, cpsat {time_limit:g} s per plan\n\n{table}\n"
    )
    with _input_errors(), writing("--out", out):
        write_atomic(out / "results.csv", to_csv(replays))
        write_atomic(out / "summary.md", summary)
        write_world(out / "world.yaml", inst, world)
        for r in replays:
            assert r.audit is not None  # every replay logs what ran
            write_audit(out, inst, r.audit, r.policy)
        if charts:
            save_figure(plot_realized(inst, replays), out / "realized.png")
    typer.echo(summary)
    shared = [f for f in files if f not in audits]
    typer.echo(f"written: {', '.join(str(out / f) for f in shared)}")
    audit = out / "POLICY"
    typer.echo(
        f"what really ran, per policy: {audit}.actual.yaml and {audit}.ran.json (check them)"
    )


@app.command("check")
def check_cmd(
    instance: InstanceArg,
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN", help="Plan file (JSON).")],
) -> None:
    """Check a plan against FORMAT.md's validity rules: exit 0 when valid, 1 with the violations."""
    with _input_errors():
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
    violations = check(inst, plan)
    if violations.other_instance is not None:
        typer.echo(f"warning: {violations.other_instance}")
    if violations:
        for v in violations:
            typer.echo(str(v))
        typer.echo(f"INVALID: {violations.total} violation(s)")
        raise typer.Exit(1)
    pwo = evaluate(inst, plan).pwo
    typer.echo(
        f"VALID: {len(plan.assignments)} jobs assigned, {len(plan.unscheduled)} unscheduled, pwo {pwo:,.2f}"
    )
    if abs(pwo - plan.objective) > 1e-6 * max(1.0, abs(pwo)):
        typer.echo(
            f"warning: the plan reports objective {plan.objective:,.2f}, recomputed pwo is {pwo:,.2f}"
        )


@app.command("validate")
def validate_cmd(
    instance: InstanceArg,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when there is any warning (for CI).")
    ] = False,
) -> None:
    """Check an instance without solving: errors exit 2, warnings (valid, but probably not what
    you meant) are listed and exit 0, or 1 with --strict."""
    with _input_errors():
        inst = load_instance(instance)
    warnings = validate(inst)
    for warning in warnings:
        typer.echo(f"warning: {warning}")
    count = f"{len(warnings)} warning{'' if len(warnings) == 1 else 's'}"
    verdict = "FAILED (--strict)" if strict and warnings else "OK"
    typer.echo(
        f"{verdict}: {len(inst.jobs)} jobs, {inst.num_nodes} nodes, {inst.slots} slots; {count}"
    )
    if strict and warnings:
        raise typer.Exit(1)


@app.command("compare")
def compare_cmd(
    instance: InstanceArg,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the plans (default: named after the instance).", parser=_file_name
        ),
    ] = None,
    solvers: Annotated[
        str,
        typer.Option(
            help=f"Comma-separated solvers, the first is the reference; any of:\n\n{SOLVER_LIST}"
        ),
    ] = "fifo,greedy,cpsat",
    time_limit: TimeLimit = 60.0,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    log: Log = None,
    hint: Hint = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report", help="Write report.html (charts, tables) into the folder."
        ),
    ] = True,
) -> None:
    """Run several solvers on one instance and print their results side by side."""
    names = [s.strip() for s in solvers.split(",") if s.strip()]
    with _input_errors():
        unknown = [s for s in names if s not in SOLVERS]
        if unknown or not names:
            raise InputError(
                [f"--solvers: unknown solver(s) {unknown}; choose from {', '.join(SOLVERS)}"]
            )
        folder = output_dir if output_dir is not None else Path(f"{instance.stem}-plans")
        files = (
            *dict.fromkeys(f"{name}.json" for name in names),
            *(["report.html"] if report else []),
        )
        check_outputs(
            [Output("--output-dir", folder, kind="folder", files=files), *_log_outputs(log)],
            _solve_inputs(instance, hint),
        )
        inst = load_instance(instance)
        _warn(instance, inst)
        options = _options(time_limit, workers, seed, log, hint)
    plans = compare_plans(inst, names, options)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    with _input_errors(), writing("--output-dir", folder):
        for plan in plans:
            plan.write(folder / f"{plan.solver}.json")
    typer.echo(format_comparison(inst, plans))
    typer.echo(f"\nplans written to {folder}/")
    if report:
        from horizon_opt.export import write_report

        with _input_errors(), writing("--output-dir", folder):
            path = write_report(inst, plans, folder / "report.html")
        typer.echo(f"report written to {path}")


FORMATS = ("text", "json")
Format = Annotated[
    str, typer.Option("--format", "-f", help="text (a table) or json (for scripts).")
]


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InputError([f"--format: unknown format {fmt!r}; choose one of {', '.join(FORMATS)}"])


def _json(data: object) -> str:
    return json.dumps(data, indent=1, allow_nan=False)


@app.command("diff")
def diff_cmd(
    plan_a: Annotated[
        Path, typer.Argument(metavar="A", help="The plan to compare against (JSON).")
    ],
    plan_b: Annotated[Path, typer.Argument(metavar="B", help="The other plan (JSON).")],
    instance: Annotated[
        Path | None,
        typer.Option(
            "--instance",
            "-i",
            help="The plans' instance: both are checked against it, figures are recomputed, "
            "and deadlines say which jobs are newly on time.",
            show_default=False,
        ),
    ] = None,
    fmt: Format = "text",
) -> None:
    """What changed from plan A to plan B: jobs added, dropped and moved; pwo, utilization and
    jobs on time."""
    with _input_errors():
        _check_format(fmt)
        a, b = Plan.read(plan_a), Plan.read(plan_b)
        inst = None if instance is None else load_instance(instance)
        if inst is not None:
            ensure_valid(inst, a, str(plan_a))
            ensure_valid(inst, b, str(plan_b))
    if a.instance != b.instance:
        typer.echo(
            f"warning: {plan_a} is a plan of {a.instance!r}, {plan_b} of {b.instance!r}", err=True
        )
    result = plan_diff(a, b, inst)
    if fmt == "json":
        typer.echo(_json(result.to_json()))
    else:
        typer.echo(format_diff(result, (str(plan_a), str(plan_b))))


def _changes(kind: ChangeKind, texts: list[str] | None) -> list[Change]:
    return [parse_change(text, kind) for text in texts or ()]


def _change_option(kind: ChangeKind, what: str) -> object:
    return typer.Option(
        f"--{kind}",
        metavar=METAVAR[kind],
        help=f"{what}. Repeat for more.",
        show_default=False,
    )


@app.command("whatif")
def whatif_cmd(
    instance: InstanceArg,
    solver: Annotated[
        str | None,
        typer.Option(
            help=f"Plans both instances (needed with a change); one of:\n\n{SOLVER_LIST}",
            show_default=False,
        ),
    ] = None,
    add: Annotated[
        list[str] | None,
        _change_option("add", "N more nodes in pool POOL, named on from its last (h100=2)"),
    ] = None,
    remove: Annotated[
        list[str] | None,
        _change_option("remove", "N fewer nodes in pool POOL, from its last (h100=2)"),
    ] = None,
    outage: Annotated[
        list[str] | None,
        _change_option(
            "outage",
            "NODE is also down from FROM to TO: slots (h100-3:10-20), or ISO times when the "
            "horizon has a start",
        ),
    ] = None,
    demand: Annotated[
        list[str] | None,
        _change_option("demand", "SERVICE's forecast demand times FACTOR (chat*1.2)"),
    ] = None,
    time_limit: Annotated[
        float, typer.Option("--time-limit", "-t", help="Seconds per cpsat plan.", min=0.1)
    ] = 20.0,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    fmt: Format = "text",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the changed instance's plan here (JSON).",
            show_default=False,
            parser=_file_name,
        ),
    ] = None,
    prices: Annotated[
        bool,
        typer.Option(
            "--prices",
            help="Also print capacity prices: what one more GPU or node of each pool adds to "
            "the relaxation's bound (from its duals), and when; alone, no solver is needed.",
        ),
    ] = False,
) -> None:
    """What if the cluster changed: plan the instance as written and as changed (more or fewer
    nodes, an outage, scaled demand) with one solver, and compare the plans; `--prices` says
    what one more node of each pool is worth."""
    with _input_errors():
        _check_format(fmt)
        check_outputs(
            [] if output is None else [Output("--output", output)],
            [("the instance file", instance)],
        )
        changes = [
            *_changes("add", add),
            *_changes("remove", remove),
            *_changes("outage", outage),
            *_changes("demand", demand),
        ]
        if not changes and not prices:
            raise InputError(
                ["give at least one change (--add, --remove, --outage, --demand) or --prices"]
            )
        if changes and solver is None:
            raise InputError(["--solver: needed to plan the changed instance"])
        if not changes and output is not None:
            raise InputError(["--output: there is no changed instance to plan"])
        if solver is not None:
            _check_solver(solver)
        if changes:
            before, after = what_if_instances(instance, changes)
        else:
            before = load_instance(instance)
        _warn(instance, before)
        options = _options(time_limit, workers, seed, None, None)
    priced = capacity_prices(before, PRICES_SECONDS) if prices else None
    if not changes:
        assert priced is not None
        if fmt == "json":
            typer.echo(_json(prices_to_json(before, priced)))
        else:
            typer.echo(format_prices(before, priced).rstrip("\n"))
        return
    assert solver is not None
    result = solve_what_if(before, after, changes, solver, options)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if output is not None:
        with _input_errors(), writing("--output", output):
            result.changed.write(output)
    if fmt == "json":
        data = what_if_json(result)
        if priced is not None:
            data["prices"] = prices_to_json(before, priced)
        typer.echo(_json(data))
    else:
        typer.echo(format_what_if(result))
        if priced is not None:
            typer.echo("\n" + format_prices(before, priced).rstrip("\n"))
    if output is not None:
        typer.echo(f"plan of the changed instance written to {output}", err=fmt == "json")


EXPLAIN_FORMATS = ("text", "json", "csv")
PRICES_SECONDS = 30.0  # time for the LP behind capacity prices (it converges in seconds)


@app.command("explain")
def explain_cmd(
    instance: InstanceArg,
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN", help="A plan of the instance (JSON).")
    ],
    job: Annotated[
        str | None, typer.Option("--job", "-j", help="Only this job.", show_default=False)
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="text (for people), json (for scripts) or csv (one row per job: every job's "
            "predicted start in one table).",
        ),
    ] = "text",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write here instead of the terminal.",
            show_default=False,
            parser=_file_name,
        ),
    ] = None,
) -> None:
    """When each job starts, its earliest start alone on the cluster, and for a late or unplanned
    job: why (its cause code) and what it would take (a start by moving only lower-value work,
    the priority that would outrank the work in its way)."""
    with _input_errors():
        if fmt not in EXPLAIN_FORMATS:
            raise InputError(
                [f"--format: unknown format {fmt!r}; choose one of {', '.join(EXPLAIN_FORMATS)}"]
            )
        check_outputs(
            [] if output is None else [Output("--output", output, stdout=True)],
            [("the instance file", instance), ("the plan file", plan_file)],
        )
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
        records = explain(inst, plan, job, source=str(plan_file))
    if fmt == "json":
        text = explanations_json(plan, records)
    elif fmt == "csv":
        text = explanations_csv(inst, records)
    elif job is not None:
        text = format_one(inst, records[0])
    else:
        text = format_explanations(inst, plan, records)
    if output is None or is_stdout(output):
        typer.echo(text, nl=False)
        return
    with _input_errors(), writing("--output", output):
        write_atomic(output, text)
    typer.echo(f"written: {output}", err=True)


EXPORT_FORMATS = ("csv", "gantt", "utilization")


@app.command("export")
def export_cmd(
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN", help="Plan file (JSON).", show_default=False)
    ],
    instance: Annotated[
        Path,
        typer.Option(
            "--instance", "-i", help="The plan's instance file (YAML).", show_default=False
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="csv, gantt or utilization (charts: PNG or SVG by -o).",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="File to write (.csv, .png or .svg). CSV also writes FILE-inference.csv beside "
            "it; -o - writes only the assignments table, to standard output.",
            show_default=False,
            parser=_file_name,
        ),
    ],
) -> None:
    """Export a plan: CSV tables (assignments + inference blocks), a Gantt or a utilization chart."""
    from horizon_opt.export import ensure_plan_fits, inference_path, write_chart, write_csv
    from horizon_opt.export.csv import assignments_csv

    to_stdout = fmt == "csv" and is_stdout(output)
    with _input_errors():
        if fmt not in EXPORT_FORMATS:
            raise InputError(
                [f"--format: unknown format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}"]
            )
        wanted = (".csv",) if fmt == "csv" else (".png", ".svg")
        if output.suffix.lower() not in wanted and not to_stdout:
            raise InputError(
                [
                    f"--output: {fmt} needs a file name ending in {' or '.join(wanted)}, "
                    f"got {output.name!r}"
                ]
            )
        outputs = [Output("--output", output, stdout=to_stdout)]
        if fmt == "csv" and not to_stdout:
            outputs.append(Output("--output", inference_path(output)))
        check_outputs(
            outputs,
            [("the plan file (PLAN)", plan_file), ("the instance file (--instance)", instance)],
        )
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
        ensure_plan_fits(inst, plan, source=str(plan_file))
        with writing("--output", output):
            if to_stdout:
                sys.stdout.write(assignments_csv(inst, plan))
                message = (
                    f"wrote {len(plan.assignments)} assignments to standard output "
                    "(the inference table needs -o FILE.csv)"
                )
            elif fmt == "csv":
                first, second = write_csv(inst, plan, output)
                message = (
                    f"wrote {first} ({len(plan.assignments)} assignments) and "
                    f"{second} ({len(plan.inference)} inference blocks)"
                )
            else:
                path = (
                    write_chart(inst, plan, "gantt", output)
                    if fmt == "gantt"
                    else write_chart(inst, plan, "utilization", output)
                )
                what = "Gantt" if fmt == "gantt" else "utilization"
                message = f"wrote {path} ({what} chart of the {plan.solver} plan for {inst.name})"
    typer.echo(message, err=to_stdout)


@app.command("report")
def report_cmd(
    instance: InstanceArg,
    plan_files: Annotated[
        list[Path],
        typer.Argument(
            metavar="PLAN",
            help="Plan files (JSON); the first is the reference.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Where to write the report (HTML).", parser=_file_name),
    ] = Path("report.html"),
    prices: Annotated[
        bool,
        typer.Option(
            "--prices",
            help="Add a heatmap of capacity prices (what one more node of each pool adds to "
            "the relaxation's bound, per slot); solves the LP, seconds on large instances.",
        ),
    ] = False,
) -> None:
    """Write one self-contained HTML report: instance, plans side by side, charts, why jobs
    wait, waits."""
    from horizon_opt.export import ensure_plan_fits, write_report

    with _input_errors():
        check_outputs(
            [Output("--output", output)],
            [("the instance file", instance), *(("a plan file (PLAN)", f) for f in plan_files)],
        )
        inst = load_instance(instance)
        plans = [Plan.read(f) for f in plan_files]
        for f, plan in zip(plan_files, plans, strict=True):
            ensure_plan_fits(inst, plan, source=str(f))
        solvers = [p.solver for p in plans]
        stems = [f.stem for f in plan_files]
        if len(set(solvers)) == len(solvers):
            labels = solvers
        elif len(set(stems)) == len(stems):
            labels = stems
        else:
            labels = [f"{s} ({f})" for s, f in zip(solvers, plan_files, strict=True)]
        priced = capacity_prices(inst, PRICES_SECONDS) if prices else None
        with writing("--output", output):
            path = write_report(inst, plans, output, labels=labels, prices=priced)
    size = path.stat().st_size
    typer.echo(f"report written to {path} ({len(plans)} plan(s), {size / 1e6:.1f} MB)")


BACKTEST_QUANTILES = (0.9, 0.95, 0.99)


def _backtest_lines(history: History, params: SeasonalQuantile, rps: float) -> list[str]:
    """Coverage and over-reservation of day-ahead forecasts over the history, per quantile."""
    head = f"{'quantile':>8}  {'coverage':>8}  {'over':>6}  {'under':>6}  {'h for 95%':>9}"
    lines = ["backtest: day-ahead from each midnight of the history, fit on what came before", head]
    for q in sorted({*BACKTEST_QUANTILES, params.quantile}):
        rows = backtest(history, replace(params, quantile=q), rps_per_replica=rps)
        if not rows:
            return ["backtest: the history is too short (a week and a day at least)"]
        s = summarize(rows)
        h = headroom_for(rows, 0.95)
        lines.append(
            f"{'p' + format(100 * q, 'g'):>8}  {s.coverage:>8.1%}  {s.over:>6.1%}  "
            f"{s.under:>6.1%}  {h:>9.1%}"
        )
    lines.append(
        "coverage: share of slots whose demand stayed within the reservation; over / under: "
        "replica-hours reserved in vain / short, per replica-hour used; h for 95%: the headroom "
        "that would have covered 95% (in-sample)"
    )
    return lines


@app.command("forecast")
def forecast_cmd(
    history_file: Annotated[
        Path,
        typer.Argument(
            metavar="HISTORY.csv",
            help="Request rate (or replicas) over time: a timestamp column (ISO or epoch "
            "seconds) and a value column.",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The demand CSV to write (time, replicas), or with --patch the patched "
            "instance; - for stdout.",
            parser=_file_name,
        ),
    ],
    rps_per_replica: Annotated[
        float,
        typer.Option(
            help="Requests per second one replica serves (1 when the history counts replicas).",
            min=1e-9,
        ),
    ] = 1.0,
    quantile: Annotated[
        float, typer.Option(help="Which quantile of past demand to reserve.", min=0.5, max=0.999)
    ] = 0.95,
    seasonality: Annotated[str, typer.Option(help="day or week.")] = "day",
    window_days: Annotated[float, typer.Option(help="Days of history to use.", min=1)] = 28.0,
    start: Annotated[
        str | None,
        typer.Option(
            help="First slot's time, ISO-8601 (default: the history's end).", show_default=False
        ),
    ] = None,
    slots: Annotated[int, typer.Option(help="Slots to forecast.", min=1)] = 24,
    slot_minutes: Annotated[int, typer.Option(help="Slot length in minutes.", min=1)] = 60,
    time_column: Annotated[str | None, typer.Option(show_default=False)] = None,
    value_column: Annotated[str | None, typer.Option(show_default=False)] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            help="Keep only rows with COLUMN=VALUE (repeat for more).", show_default=False
        ),
    ] = None,
    column: Annotated[str, typer.Option(help="The demand CSV's value column.")] = "replicas",
    patch: Annotated[
        Path | None,
        typer.Option(
            help="An instance file whose --service demand to replace (inline); its horizon "
            "gives the start, slots and slot length.",
            show_default=False,
        ),
    ] = None,
    service: Annotated[str | None, typer.Option(show_default=False)] = None,
    run_backtest: Annotated[
        bool,
        typer.Option(
            "--backtest",
            help="Also print coverage and over-reservation of p90/p95/p99 on the history.",
        ),
    ] = False,
) -> None:
    """Forecast a service's replica demand per slot from its history (the seasonal quantile of
    the same time of day, or of week), for a demand CSV or an instance."""
    with _input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            [("the history file", history_file), *([] if patch is None else [("--patch", patch)])],
        )
        if (patch is None) != (service is None):
            raise InputError(["--patch and --service go together"])
        filters = {}
        for item in where or []:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise InputError([f"--where: expected COLUMN=VALUE, got {item!r}"])
            filters[key] = value
        history = read_history(history_file, time_column, value_column, where=filters or None)
        if patch is not None:
            horizon = load_instance(patch)
            if horizon.start is None:
                raise InputError([f"--patch: {patch} has no horizon.start to forecast from"])
            first, slots, slot_minutes = horizon.start, horizon.slots, horizon.slot_minutes
        elif (given := _snapshot(start)) is not None:
            first = given
        else:  # the next slot boundary after the history
            step = slot_minutes * 60
            first = to_datetime(-(-history.end // step) * step)
        if seasonality not in ("day", "week"):
            raise InputError([f"--seasonality: day or week, got {seasonality!r}"])
        try:
            params = SeasonalQuantile(
                quantile,
                "week" if seasonality == "week" else "day",
                window_days,
                slot_minutes,
            )
            values = demand_for(history, first, slots, rps_per_replica, params)
        except ValueError as exc:
            raise InputError([f"forecast: {exc}"]) from None
    if run_backtest:
        for line in _backtest_lines(history, params, rps_per_replica):
            typer.echo(line, err=True)
    typer.echo(
        f"forecast: {slots} slots of {slot_minutes} min from {first:%Y-%m-%d %H:%M} UTC, "
        f"p{100 * quantile:g} of {history_file.name}: mean {float(values.mean()):.2f}, "
        f"peak {float(values.max()):.2f} replicas",
        err=True,
    )
    if patch is not None:
        assert service is not None
        with _input_errors():
            text = patch_instance(patch, service, values)
    else:
        text = demand_csv_text(first, slot_minutes, values, column)
    if is_stdout(output):
        typer.echo(text, nl=False)
        return
    with _input_errors(), writing("--output", output):
        write_atomic(output, text)
    typer.echo(f"written: {output}", err=True)


import_app = typer.Typer(
    help="Turn a scheduler's queue and a cluster file into an instance file (FORMAT.md); "
    "what could not be mapped is listed, a note per job and field.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")

ClusterOption = Annotated[
    Path,
    typer.Option(
        "--cluster",
        "-c",
        help="The cluster file: pools (with their partitions, host names, flavors), services, "
        "outages, horizon (docs/import.md).",
        show_default=False,
    ),
]
ImportOutput = Annotated[
    Path,
    typer.Option(
        "--output", "-o", help="The instance file to write (YAML; - for stdout).", parser=_file_name
    ),
]
Snapshot = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="The time of the snapshot, ISO-8601; it becomes the instance's `now`. Slurm's own "
        "`last_update` wins over it (a difference is noted); default: the time of the import.",
        show_default=False,
    ),
]

NotesShown = Annotated[
    str,
    typer.Option(
        "--notes",
        help="summary: one line per cause, with how many jobs it affected and a few of them "
        "(an array's tasks share one line); all: every note.",
        callback=lambda value: _one_of(value, "--notes", ("summary", "all")),
    ),
]


def _one_of(value: str, option: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise typer.BadParameter(f"use {' or '.join(choices)}, got {value!r}", param_hint=option)
    return value


def _snapshot(text: str | None) -> datetime | None:
    if text is None:
        return None
    when = parse_time(text)
    if when is None:
        raise InputError([f"--now: not an ISO-8601 time: {text!r}"])
    return when


def _write_imported(imported: Imported, output: Path, notes: str) -> None:
    """Notes on stderr (`notes`: "summary", one line per cause, or "all"), the instance
    (checked to compile) to `output`."""
    with _input_errors():
        instance = imported.compile()
    lines = [str(n) for n in imported.notes] if notes == "all" else note_lines(imported.notes)
    for line in lines:
        typer.echo(f"note: {line}", err=True)
    typer.echo(count_line(imported.notes, len(instance.jobs)), err=True)
    if is_stdout(output):
        typer.echo(imported.to_yaml(), nl=False)
        return
    with _input_errors(), writing("--output", output):
        write_atomic(output, imported.to_yaml())
    typer.echo(f"instance written to {output}", err=True)


@import_app.command("csv")
def import_csv_cmd(
    table: Annotated[
        Path, typer.Argument(metavar="JOBS.csv", help="One job a row (docs/import.md).")
    ],
    cluster: ClusterOption,
    output: ImportOutput,
    now: Snapshot = None,
    notes: NotesShown = "summary",
) -> None:
    """A plain job table: the columns are the instance file's job fields."""
    with _input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            [("the job table", table), ("the cluster file", cluster)],
        )
        imported = import_table(
            table,
            read_cluster(cluster),
            snapshot=_snapshot(now) or datetime.now(UTC),
        )
    _write_imported(imported, output, notes)


@import_app.command("slurm")
def import_slurm_cmd(
    squeue: Annotated[
        Path, typer.Argument(metavar="SQUEUE.json", help="The output of `squeue --json`.")
    ],
    cluster: ClusterOption,
    output: ImportOutput,
    sacct: Annotated[
        Path | None,
        typer.Option(
            help="The output of `sacct --json` (finished jobs): better run-time estimates, and "
            "which dependencies are met.",
            show_default=False,
        ),
    ] = None,
    now: Snapshot = None,
    default_duration: Annotated[
        str,
        typer.Option(
            help="Run time of a job with no time limit (INFINITE) and no completed runs in "
            "--sacct to estimate it from; noted per job."
        ),
    ] = "4h",
    notes: NotesShown = "summary",
) -> None:
    """Slurm's queue: pending jobs to plan, running jobs placed on their nodes."""
    inputs = [("the squeue file", squeue), ("the cluster file", cluster)]
    with _input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            inputs + ([] if sacct is None else [("the sacct file", sacct)]),
        )
        imported = import_slurm(
            read_json(squeue, "squeue --json output"),
            read_cluster(cluster),
            sacct=None if sacct is None else read_json(sacct, "sacct --json output"),
            name=squeue.stem,
            snapshot=_snapshot(now),
            squeue_source=str(squeue),
            sacct_source=str(sacct),
            default_duration=default_duration,
        )
    _write_imported(imported, output, notes)


@import_app.command("kueue")
def import_kueue_cmd(
    workloads: Annotated[
        Path,
        typer.Argument(
            metavar="WORKLOADS",
            help="The output of `kubectl get workloads -A -o json` (or `-o yaml`): a List, "
            "one Workload, or several YAML documents.",
        ),
    ],
    cluster: ClusterOption,
    output: ImportOutput,
    now: Snapshot = None,
    default_duration: Annotated[
        str,
        typer.Option(
            help="Run time of a workload that states none (no horizon-opt/duration annotation, "
            "maximumExecutionTimeSeconds or activeDeadlineSeconds); noted per job."
        ),
    ] = "4h",
    notes: NotesShown = "summary",
) -> None:
    """Kueue Workloads: pending ones to plan, admitted ones running on their flavor's pool."""
    with _input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            [("the workloads file", workloads), ("the cluster file", cluster)],
        )
        imported = import_kueue(
            read_workloads(workloads),
            read_cluster(cluster),
            name=workloads.stem,
            snapshot=_snapshot(now),
            default_duration=default_duration,
            source=str(workloads),
        )
    _write_imported(imported, output, notes)


@app.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the instance format (for editor validation of YAML files)."""
    typer.echo(json.dumps(InstanceSpec.model_json_schema(), indent=2))


@app.command("generate")
def generate_cmd(
    family: Annotated[
        str,
        typer.Argument(
            metavar="FAMILY", help="enterprise, hetero, deadline or trace.", show_default=False
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Where to write the instance (YAML).",
            show_default=False,
            parser=_file_name,
        ),
    ],
    size: Annotated[str, typer.Option(help="small, medium, large or xl.")] = "small",
    seed: Annotated[
        int, typer.Option(help="Random seed, 0 or more: the same seed writes the same file.", min=0)
    ] = 0,
    traces: Annotated[
        Path | None,
        typer.Option(
            help="Folder of the trace CSVs (family trace). Default: $HORIZON_OPT_TRACES, "
            "else the copies that ship with horizon-opt.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write a seeded benchmark instance of a family and size (same seed, same file)."""
    from horizon_opt.generate import GeneratorError, generate_file

    with _input_errors():
        check_outputs([Output("--output", output)])
        try:
            with writing("--output", output):
                data = generate_file(family, size, seed, output, traces=traces)
        except GeneratorError as exc:
            raise InputError([str(exc)]) from None
    nodes = sum(p["nodes"] for p in data["pools"])
    typer.echo(
        f"{data['name']}: {len(data['jobs'])} jobs, {nodes} nodes, "
        f"{data['horizon']['slots']} slots, {len(data['services'])} services; written to {output}"
    )


@app.command("bench", epilog=f"Solvers a suite may name:\n\n{SOLVER_LIST}")
def bench_cmd(
    suite_file: Annotated[
        Path,
        typer.Argument(
            metavar="SUITE",
            help="Suite file (YAML): instances, solvers, time limits; see docs/bench.md.",
            show_default=False,
        ),
    ],
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Runs at once, each in its own process.", min=1)
    ] = 2,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output folder. Default: results/<suite name> beside the suite file.",
            show_default=False,
            parser=_file_name,
        ),
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            help="Run only the instances whose name contains this text.", show_default=False
        ),
    ] = None,
    traces: Annotated[
        Path | None,
        typer.Option(
            help="Folder of the trace CSVs, for generated trace instances.", show_default=False
        ),
    ] = None,
    charts: Annotated[bool, typer.Option(help="Write the PNG charts.")] = True,
    summary_only: Annotated[
        bool,
        typer.Option(help="Rewrite summary.md and the charts from OUT/results.csv; run nothing."),
    ] = False,
    engine: Annotated[
        str,
        typer.Option(
            help="Where runs happen: local (a process pool on this machine) or ray (a Ray "
            "cluster; needs the ray extra of horizon-opt, see docs/bench.md)."
        ),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            help="With --engine ray: the cluster, auto (the one this machine belongs to) or "
            "ray://HOST:10001. Default: start a local Ray instance.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run every (instance, solver) pair of a suite in guarded worker processes; write
    results.csv, summary.md, the plans and charts. Exit 1 when a run failed or a plan is invalid."""
    from horizon_opt import bench

    with _input_errors():
        bench.check_engine(engine, address)
        suite = bench.load_suite(suite_file)
        folder = out if out is not None else suite_file.parent / "results" / suite_file.stem
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
