"""Commands that make input files: import (slurm, kueue, csv), forecast, generate, schema."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.cli.errors import input_errors
from horizon_opt.cli.options import Snapshot, file_name, finite, one_of, snapshot
from horizon_opt.cli.outputs import Output, check_outputs, is_stdout, writing
from horizon_opt.errors import InputError
from horizon_opt.forecast import (
    History,
    SeasonalQuantile,
    backtest,
    demand_csv_text,
    demand_for,
    forecast_horizon,
    headroom_for,
    history_gap_warning,
    patch_instance,
    read_history,
    seasonality_of,
    summarize,
)
from horizon_opt.generate import FAMILIES, SIZES
from horizon_opt.importers import Imported, read_cluster
from horizon_opt.importers.kueue import (
    import_kueue,
    read_clusterqueues,
    read_localqueues,
    read_workloads,
)
from horizon_opt.importers.result import count_line, note_lines
from horizon_opt.importers.slurm import import_slurm
from horizon_opt.importers.source import read_json
from horizon_opt.importers.table import import_table
from horizon_opt.io import write_atomic
from horizon_opt.model.load import load_instance
from horizon_opt.model.spec import InstanceSpec

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


HistoryArg = Annotated[
    Path,
    typer.Argument(
        metavar="HISTORY.csv",
        help="Request rate (or replicas) over time: a timestamp column (ISO or epoch "
        "seconds) and a value column.",
    ),
]
ForecastOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="The demand CSV to write (time, replicas), or with --patch the patched "
        "instance; - for stdout.",
        parser=file_name,
    ),
]
RpsPerReplica = Annotated[
    float,
    typer.Option(
        help="Requests per second one replica serves (1 when the history counts replicas).",
        min=1e-9,
        callback=finite,
    ),
]
Quantile = Annotated[
    float, typer.Option(help="Which quantile of past demand to reserve.", min=0.5, max=0.999)
]
Seasonality = Annotated[str, typer.Option(help="day or week.")]
WindowDays = Annotated[float, typer.Option(help="Days of history to use.", min=1, callback=finite)]
Start = Annotated[
    str | None,
    typer.Option(
        help="First slot's time, ISO-8601 (default: the history's end).", show_default=False
    ),
]
Slots = Annotated[int, typer.Option(help="Slots to forecast.", min=1)]
SlotMinutes = Annotated[int, typer.Option(help="Slot length in minutes.", min=1)]
Name = Annotated[str | None, typer.Option(show_default=False)]
Where = Annotated[
    list[str] | None,
    typer.Option(help="Keep only rows with COLUMN=VALUE (repeat for more).", show_default=False),
]
DemandColumn = Annotated[str, typer.Option(help="The demand CSV's value column.")]
Patch = Annotated[
    Path | None,
    typer.Option(
        help="An instance file whose --service demand to replace (inline); its horizon "
        "gives the start, slots and slot length.",
        show_default=False,
    ),
]
RunBacktest = Annotated[
    bool,
    typer.Option(
        "--backtest",
        help="Also print coverage and over-reservation of p90/p95/p99 on the history.",
    ),
]


def _where(items: list[str] | None) -> dict[str, str]:
    """--where COLUMN=VALUE, each."""
    filters = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError([f"--where: expected COLUMN=VALUE, got {item!r}"])
        filters[key] = value
    return filters


def _horizon(
    patch: Path | None, start: str | None, history: History, slots: int, slot_minutes: int
) -> tuple[datetime, int, int]:
    """`forecast_horizon` from the options: --patch's instance, else --start."""
    if patch is None:
        return forecast_horizon(history, None, snapshot(start), slots, slot_minutes)
    try:
        return forecast_horizon(history, load_instance(patch), None, slots, slot_minutes)
    except InputError as exc:
        raise InputError([f"--patch: {patch}: {p}" for p in exc.problems]) from None


def forecast_cmd(
    history_file: HistoryArg,
    output: ForecastOutput,
    rps_per_replica: RpsPerReplica = 1.0,
    quantile: Quantile = 0.95,
    seasonality: Seasonality = "day",
    window_days: WindowDays = 28.0,
    start: Start = None,
    slots: Slots = 24,
    slot_minutes: SlotMinutes = 60,
    time_column: Name = None,
    value_column: Name = None,
    where: Where = None,
    column: DemandColumn = "replicas",
    patch: Patch = None,
    service: Name = None,
    run_backtest: RunBacktest = False,
) -> None:
    """Forecast a service's replica demand per slot from its history (the seasonal quantile of
    the same time of day, or of week), for a demand CSV or an instance."""
    with input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            [("the history file", history_file), *([] if patch is None else [("--patch", patch)])],
        )
        if (patch is None) != (service is None):
            raise InputError(["--patch and --service go together"])
        filters = _where(where)
        history = read_history(history_file, time_column, value_column, where=filters or None)
        first, slots, slot_minutes = _horizon(patch, start, history, slots, slot_minutes)
        season = seasonality_of(seasonality)
        try:
            params = SeasonalQuantile(quantile, season, window_days, slot_minutes)
            values = demand_for(history, first, slots, rps_per_replica, params)
        except ValueError as exc:
            raise InputError([f"forecast: {exc}"]) from None
    warning = history_gap_warning(history, first, season)
    if warning is not None:
        typer.echo(f"warning: {warning}", err=True)
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
        with input_errors():
            text = patch_instance(patch, service, values)
    else:
        text = demand_csv_text(first, slot_minutes, values, column)
    if is_stdout(output):
        typer.echo(text, nl=False)
        return
    with input_errors(), writing("--output", output):
        write_atomic(output, text)
    typer.echo(f"written: {output}", err=True)


IMPORT_HELP = (
    "Turn a scheduler's queue and a cluster file into an instance file (FORMAT.md); "
    "what could not be mapped is listed, a note per job and field."
)

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
        "--output", "-o", help="The instance file to write (YAML; - for stdout).", parser=file_name
    ),
]
NotesShown = Annotated[
    str,
    typer.Option(
        "--notes",
        help="summary: one line per cause, with how many jobs it affected and a few of them "
        "(an array's tasks share one line); all: every note.",
        callback=lambda value: one_of(value, "--notes", ("summary", "all")),
    ),
]


def _write_imported(imported: Imported, output: Path, notes: str) -> None:
    """Notes on stderr (`notes`: "summary", one line per cause, or "all"), the instance
    (checked to compile) to `output`."""
    with input_errors():
        instance = imported.compile()
    lines = [str(n) for n in imported.notes] if notes == "all" else note_lines(imported.notes)
    for line in lines:
        typer.echo(f"note: {line}", err=True)
    typer.echo(count_line(imported.notes, len(instance.jobs)), err=True)
    if is_stdout(output):
        typer.echo(imported.to_yaml(), nl=False)
        return
    with input_errors(), writing("--output", output):
        write_atomic(output, imported.to_yaml(beside=output.parent))
    typer.echo(f"instance written to {output}", err=True)


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
    with input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            [("the job table", table), ("the cluster file", cluster)],
        )
        imported = import_table(
            table,
            read_cluster(cluster),
            snapshot=snapshot(now) or datetime.now(UTC),
        )
    _write_imported(imported, output, notes)


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
    with input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            inputs + ([] if sacct is None else [("the sacct file", sacct)]),
        )
        imported = import_slurm(
            read_json(squeue, "squeue --json output"),
            read_cluster(cluster),
            sacct=None if sacct is None else read_json(sacct, "sacct --json output"),
            name=squeue.stem,
            snapshot=snapshot(now),
            squeue_source=str(squeue),
            sacct_source=str(sacct),
            default_duration=default_duration,
        )
    _write_imported(imported, output, notes)


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
    localqueues: Annotated[
        Path | None,
        typer.Option(
            help="The output of `kubectl get localqueues -A -o yaml` (or `-o json`): the "
            "ClusterQueue, and so the team, of a workload not admitted yet.",
            show_default=False,
        ),
    ] = None,
    clusterqueues: Annotated[
        Path | None,
        typer.Option(
            help="The output of `kubectl get clusterqueues -o yaml` (or `-o json`): each "
            "ClusterQueue is a team, with its GPU quota and limit per pool, unless the cluster "
            "file's teams define it.",
            show_default=False,
        ),
    ] = None,
    notes: NotesShown = "summary",
) -> None:
    """Kueue Workloads: pending ones to plan, admitted ones running on their flavor's pool."""
    with input_errors():
        check_outputs(
            [Output("--output", output, stdout=True)],
            [
                ("the workloads file", workloads),
                ("the cluster file", cluster),
                ("the localqueues file", localqueues),
                ("the clusterqueues file", clusterqueues),
            ],
        )
        imported = import_kueue(
            read_workloads(workloads),
            read_cluster(cluster),
            name=workloads.stem,
            snapshot=snapshot(now),
            default_duration=default_duration,
            source=str(workloads),
            localqueues=None if localqueues is None else read_localqueues(localqueues),
            clusterqueues=None if clusterqueues is None else read_clusterqueues(clusterqueues),
            localqueues_source=str(localqueues),
            clusterqueues_source=str(clusterqueues),
        )
    _write_imported(imported, output, notes)


def schema_cmd() -> None:
    """Print the JSON Schema of the instance format (for editor validation of YAML files)."""
    typer.echo(json.dumps(InstanceSpec.model_json_schema(), indent=2))


def _choices_text(names: Iterable[str]) -> str:
    """`a, b or c`: the choices an option's help lists, from the registry the code reads."""
    *head, last = names
    return f"{', '.join(head)} or {last}" if head else last


def generate_cmd(
    family: Annotated[
        str,
        typer.Argument(metavar="FAMILY", help=f"{_choices_text(FAMILIES)}.", show_default=False),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Where to write the instance (YAML).",
            show_default=False,
            parser=file_name,
        ),
    ],
    size: Annotated[str, typer.Option(help=f"{_choices_text(SIZES)}.")] = "small",
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

    with input_errors():
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
