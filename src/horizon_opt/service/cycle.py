"""One re-planning cycle: import the queue, re-plan from the last good plan, write the actions.

The cycle is what `horizon-opt run` does once (cron, a Kubernetes CronJob) or every `every`:

1. read the queue (a file, or a command's output such as `squeue --json`) and import it around
   the cluster file, as of the snapshot's time;
2. re-plan from the last good cycle's plan, moved onto the new horizon (the horizon rolls with
   the snapshot), holding its starts within `freeze` (and, with `keep_promises`, the starts
   people were told: `service.promises`); the first cycle plans from scratch;
3. check the plan with the independent checker, explain every job;
4. write the actions that make the scheduler follow the plan, only what changed since the last
   applied state (`horizon_opt.actions`), and run them with `apply`;
5. commit the cycle to the state folder, status.json and metrics.prom.

A failed import, solve or check keeps the last good plan in force and says why; the cycle's
status and metrics record the failure.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from horizon_opt.actions import Actions, read_desired
from horizon_opt.actions.core import is_running
from horizon_opt.analysis.explain import explain
from horizon_opt.errors import InputError, InstanceError
from horizon_opt.export.explanations import explanations_json
from horizon_opt.importers import ClusterFile, read_cluster
from horizon_opt.importers.result import Imported, note_lines
from horizon_opt.loop.replan import replan, with_held_promises
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import move_demand_csvs, parse_spec, read_demand_csv
from horizon_opt.params import LOOP
from horizon_opt.plans.check import check
from horizon_opt.plans.plan import Plan
from horizon_opt.service.apply import Applied, apply_actions
from horizon_opt.service.config import RunConfig
from horizon_opt.service.context import Context, CycleFailed
from horizon_opt.service.folder import StateFolder
from horizon_opt.service.metrics import plan_metrics, status_metrics
from horizon_opt.service.promises import (
    PROMISES,
    promised_slots,
    promises_json,
    read_promises,
    updated,
)
from horizon_opt.service.rebase import rebased
from horizon_opt.service.registry import SCHEDULERS
from horizon_opt.service.settings import Source
from horizon_opt.service.shortfall import capped, required_now
from horizon_opt.service.slurm_read import SlurmRead
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.times import iso, parse_time


@dataclass(frozen=True)
class Cycle:
    ok: bool
    when: datetime
    folder: Path | None = None  # the cycle's folder in the state folder (a good cycle)
    plan: Plan | None = None
    actions: Actions | None = None
    applied: int = 0  # actions run (`apply`)
    failed: int = 0  # actions that failed (`apply`; the first failure stops the rest)
    running: int = 0  # jobs running at the snapshot (placed before `now`)
    lines: tuple[str, ...] = ()  # what a person reads: notes, warnings, the summary
    error: str | None = None


def run_cycle(config: RunConfig, *, apply: bool = False, now: datetime | None = None) -> Cycle:
    """One cycle with the state folder's lock held (`folder.Busy` when another run holds it).
    `now`: the snapshot's time when the queue does not say it (default: the clock)."""
    folder = StateFolder(config.state)
    with folder.locked():
        when = datetime.now(UTC).replace(microsecond=0)
        lines: list[str] = []
        try:
            good = _plan_cycle(config, folder, when, now, lines, apply)
        except CycleFailed as exc:
            return _failed(folder, config, when, exc, lines)
        done = Applied(0, 0, None)
        if apply:
            guard = SCHEDULERS[config.scheduler].guard
            check_action = None if guard is None else guard(good.context)
            done = apply_actions(folder, good.actions, _runner(config), check_action)
            lines += [f"warning: {line}" for line in done.skipped]
        apply_error = done.error
        cycle = Cycle(
            ok=apply_error is None,
            when=when,
            folder=good.folder,
            plan=good.plan,
            actions=good.actions,
            applied=done.done,
            failed=done.failed,
            running=good.running,
            lines=tuple(lines),
            error=apply_error,
        )
        _finish(folder, config, cycle, good.metrics)
        return cycle


@dataclass(frozen=True)
class _Good:
    folder: Path
    plan: Plan
    actions: Actions
    metrics: str
    running: int
    context: Context


def _plan_cycle(
    config: RunConfig,
    folder: StateFolder,
    when: datetime,
    now: datetime | None,
    lines: list[str],
    apply: bool = False,
) -> _Good:
    payloads = {"queue": _read(config.queue, "queue", config.command_timeout)}
    if config.history is not None:
        try:
            payloads["history"] = _read(config.history, "history", config.command_timeout)
        except CycleFailed as exc:  # the history is optional: run times from the limits
            lines.append(f"warning: the history was not read ({exc}): planned without it")
    cluster = _cluster(config)
    ctx = _context(config, cluster, lines)
    read = _read_back(config, ctx, payloads["queue"], folder)
    document, instance, required = _state(config, ctx, payloads, now, read)
    if instance.start is None:
        raise CycleFailed("import", ["the instance has no horizon.start: actions need times"])
    promises = read_promises(folder.last_cycle(), lines)
    plan = _replan(config, folder, _holding(config, instance, promises.starts()), lines)
    violations = check(instance, plan)
    if violations:
        raise CycleFailed("check", [f"the plan is invalid: {violations[0]}"])
    actions = _actions(config, ctx, instance, plan, folder, read, document)
    lines += [f"note: {n}" for n in actions.notes]
    metrics = plan_metrics(
        instance, plan, actions.by_kind(), required, None if read is None else read.drift
    )
    told = updated(instance, plan, promises)
    files = {
        "queue.txt": payloads["queue"],
        "instance.yaml": yaml.safe_dump(document, sort_keys=False, allow_unicode=True),
        "plan.json": plan.to_json(),
        "explain.json": explanations_json(plan, explain(instance, plan), told.intervals()),
        "actions.sh": actions.to_script(applying=apply),
        "actions.json": actions.to_json(),
        "plan.prom": metrics,
        PROMISES: promises_json(told),
        "cycle.json": json.dumps(
            {
                "horizon_start": iso(instance.start),
                "slot_minutes": instance.slot_minutes,
                "snapshot": document["now"],
                "solver": plan.solver,
            },
            indent=2,
        ),
    }
    if "history" in payloads:
        files["history.txt"] = payloads["history"]
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    running = sum(is_running(instance, j) for j in instance.jobs)
    cycle = folder.commit_cycle(stamp, files, config.keep)
    return _Good(cycle, plan, actions, metrics, running, ctx)


# -- reading and importing -------------------------------------------------------------------


def _read(source: Source, what: str, timeout: float) -> str:
    """The payload's text: the file, or the command's standard output."""
    if source.file is not None:
        try:
            return source.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CycleFailed(what, [f"cannot read {source.file}: {exc}"]) from None
    assert source.command is not None
    return run_command(source.command, what, timeout)


def run_command(argv: list[str], what: str, timeout: float) -> str:
    """A command's standard output; CycleFailed (with the end of its stderr) when it cannot run,
    times out or exits non-zero."""
    shown = " ".join(argv)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise CycleFailed(what, [f"{shown}: command not found"]) from None
    except subprocess.TimeoutExpired:
        raise CycleFailed(what, [f"{shown}: no answer within {timeout:g} s"]) from None
    except OSError as exc:
        raise CycleFailed(what, [f"{shown}: {exc}"]) from None
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise CycleFailed(what, [f"{shown}: exit {done.returncode}: {' / '.join(tail)}"])
    return done.stdout


def _runner(config: RunConfig) -> Callable[[list[str], str], str]:
    def run(argv: list[str], what: str) -> str:
        return run_command(argv, what, config.command_timeout)

    return run


def _context(config: RunConfig, cluster: ClusterFile | None, lines: list[str]) -> Context:
    """The cycle as the scheduler's steps see it (service/registry.py)."""
    return Context(
        section=config.section,
        cluster=cluster,
        run=_runner(config),
        read=lambda source, what: _read(source, what, config.command_timeout),
        parse=_parsed,
        every_minutes=config.minutes("every"),
        default_duration=config.default_duration,
        queue_command=config.queue.command is not None,
        lines=lines,
    )


def _read_back(
    config: RunConfig, ctx: Context, queue: str, folder: StateFolder
) -> SlurmRead | None:
    """What the scheduler holds besides the queue, when it reads any back."""
    read_back = SCHEDULERS[config.scheduler].read_back
    if read_back is None:
        return None
    try:
        return read_back(ctx, queue, folder)
    except InputError as exc:
        raise CycleFailed("read back", exc.problems) from None


def _parsed(text: str, what: str) -> Any:
    try:
        return json.loads(text) if text.lstrip().startswith(("{", "[")) else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CycleFailed(what, [f"not JSON or YAML: {exc}"]) from None


def _cluster(config: RunConfig) -> ClusterFile | None:
    """The cluster file, read once a cycle (the import and the Kueue flavors both need it)."""
    if config.cluster is None:
        return None
    try:
        return read_cluster(config.cluster)
    except InputError as exc:
        raise CycleFailed("import", exc.problems) from None


def _state(
    config: RunConfig,
    ctx: Context,
    payloads: dict[str, str],
    now: datetime | None,
    read: SlurmRead | None = None,
) -> tuple[dict[str, Any], Instance, dict[str, int] | None]:
    """The cluster's state as an instance document (demand CSV paths made absolute, so the
    cycle's copy reads the same series), the compiled instance, and when the forecast's demand
    had to be cut to what fits, the GPUs each service requires now before the cut."""
    if config.queue.format == "instance":
        assert config.queue.file is not None  # the config allows a file only
        document, base = _parsed(payloads["queue"], "queue"), config.queue.file.parent
        if not isinstance(document, dict):
            raise CycleFailed("queue", [f"{config.queue.file}: not an instance file"])
    else:
        assert ctx.cluster is not None  # the config requires it for a scheduler payload
        imported = _import(config, ctx, payloads, now, read)
        ctx.lines.extend(f"note: {line}" for line in note_lines(imported.notes))
        document, base = imported.document, ctx.cluster.folder
    document = move_demand_csvs(document, base)  # the cycle's copy reads the same series
    try:
        spec = parse_spec(document)
        demands = read_demand_csv(spec, base)
        try:
            return document, compile_instance(spec, demands), None
        except InstanceError:
            pass  # demand that the free GPUs cannot hold is planned with what fits (`capped`),
            # which raises any other problem again
        instance, short = capped(document, demands)
        ctx.lines.extend(f"warning: {line}" for line in short)
        return document, instance, required_now(document, demands, instance.now)
    except (InputError, InstanceError) as exc:
        raise CycleFailed("import", exc.problems) from None


def _import(
    config: RunConfig,
    ctx: Context,
    payloads: dict[str, str],
    now: datetime | None,
    read: SlurmRead | None,
) -> Imported:
    """The queue imported around the cluster file by the scheduler's own step. The services
    are put in after the import: their demand is the cycle's to fit beside the running jobs
    (`shortfall`), not a reason to refuse the state."""
    assert ctx.cluster is not None  # the config requires it for a scheduler payload
    try:
        queue = _parsed(payloads["queue"], "queue")
        history = payloads.get("history")
        imported = SCHEDULERS[config.scheduler].import_queue(
            ctx, queue, None if history is None else _parsed(history, "history"), now, read
        )
    except InputError as exc:
        raise CycleFailed("import", exc.problems) from None
    services = [s.model_dump(mode="json", exclude_defaults=True) for s in ctx.cluster.services]
    return replace(imported, document={**imported.document, "services": services})


# -- planning --------------------------------------------------------------------------------


def _holding(config: RunConfig, instance: Instance, promises: dict[str, datetime]) -> Instance:
    """The instance with the ledger's promises held, when the configuration asks for it."""
    if not config.keep_promises:
        return instance
    starts = promised_slots(instance, promises)
    return with_held_promises(instance, starts, config.keep_promises)


def _replan(config: RunConfig, folder: StateFolder, instance: Instance, lines: list[str]) -> Plan:
    options = SolveOptions(
        time_limit=config.time_limit, workers=config.workers, seed=config.seed, params=LOOP
    )
    previous = _previous(folder, instance, lines)
    freeze = -(-config.minutes("freeze") // instance.slot_minutes)
    try:
        if previous is None:
            return solve(instance, config.solver, options)
        result = replan(
            instance,
            previous,
            config.solver,
            options,
            freeze_slots=freeze,
            stability=config.stability,
        )
    except (InputError, InstanceError) as exc:
        raise CycleFailed("solve", exc.problems) from None
    lines += [f"warning: {line}" for line in result.not_held]
    return result.plan


def _previous(folder: StateFolder, instance: Instance, lines: list[str]) -> Plan | None:
    """The last good cycle's plan on this cycle's horizon, or None (with a warning when there
    was one that cannot be used)."""
    last = folder.last_cycle()
    if last is None:
        return None
    try:
        meta = json.loads((last / "cycle.json").read_text(encoding="utf-8"))
        plan = Plan.read(last / "plan.json")
        start = parse_time(str(meta["horizon_start"]))
        minutes = int(meta["slot_minutes"])
    except (OSError, ValueError, KeyError, TypeError, InputError) as exc:
        lines.append(
            f"warning: the last cycle's plan in {last} is unreadable ({exc}): planning afresh"
        )
        return None
    assert instance.start is not None
    moved = None if start is None else rebased(plan, start, minutes, instance)
    if moved is None:
        lines.append(
            f"warning: the last cycle's plan ({last.name}) is on another time grid: planning afresh"
        )
    return moved


# -- actions ---------------------------------------------------------------------------------


def _actions(
    config: RunConfig,
    ctx: Context,
    instance: Instance,
    plan: Plan,
    folder: StateFolder,
    read: SlurmRead | None,
    document: dict[str, Any],
) -> Actions:
    text = folder.applied()
    try:
        applied = None if text is None else read_desired(text, str(folder.root / "applied.json"))
        make = SCHEDULERS[config.scheduler].actions
        return make(ctx, instance, plan, applied, read, document)
    except InputError as exc:
        raise CycleFailed("actions", exc.problems) from None


# -- status ----------------------------------------------------------------------------------


def _failed(
    folder: StateFolder, config: RunConfig, when: datetime, exc: CycleFailed, lines: list[str]
) -> Cycle:
    cycle = Cycle(ok=False, when=when, lines=tuple(lines), error=str(exc))
    last = folder.last_cycle()
    plan_prom = ""
    if last is not None and (last / "plan.prom").exists():
        plan_prom = (last / "plan.prom").read_text(encoding="utf-8")
    _finish(folder, config, cycle, plan_prom)
    return cycle


def _finish(folder: StateFolder, config: RunConfig, cycle: Cycle, plan_prom: str) -> None:
    """status.json and metrics.prom for this cycle, good or failed."""
    last_success: datetime | None = cycle.when
    if not cycle.ok:  # a failed apply is no success either
        last_success = parse_time(str(folder.status().get("last_success", "")))
    in_force = folder.last_cycle()
    record = {
        "time": iso(cycle.when),
        "ok": cycle.ok,
        "error": cycle.error,
        "cycle": None if cycle.folder is None else cycle.folder.name,
        "plan_in_force": None if in_force is None else in_force.name,
        "last_success": None if last_success is None else iso(last_success),
        "actions": None if cycle.actions is None else len(cycle.actions.actions),
        "applied": cycle.applied,
        "failed": cycle.failed,
    }
    folder.write("status.json", json.dumps(record, indent=2) + "\n")
    status = status_metrics(cycle.when, cycle.ok, last_success, cycle.applied, cycle.failed)
    folder.write("metrics.prom", status + plan_prom)
