"""What if the cluster changed: more or fewer nodes in a pool, an extra outage, a service's
demand scaled, a team's limit on a pool set. The same solver plans the instance as written and as changed, with the same
options, and the two plans are compared (`diff.plan_diff`): what capacity buys, in pwo and in
the jobs that become, or stop being, on time.

Changes are made to the instance as written (`InstanceSpec`) and compiled again by the same
compiler as every instance file, so a change can never produce an instance that a file could
not: the checks, names and time forms are the file's. Demand CSV files stay relative to the
instance file's folder.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from horizon_opt.errors import InputError, InstanceError
from horizon_opt.io import read_yaml
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec, read_demand_csv
from horizon_opt.model.spec import (
    MAX_DEMAND,
    MAX_JOB_GPUS,
    MAX_NODES,
    DemandCsv,
    InstanceSpec,
    OutageSpec,
    PoolSpec,
    default_node_name,
    show,
)
from horizon_opt.plans.check import check
from horizon_opt.plans.comparison_table import Column, compare_columns, to_text
from horizon_opt.plans.diff import PlanDiff, job_lists, jobs_line, plan_diff
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Plan, Status
from horizon_opt.plans.tolerance import reaches
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.solvers.assemble import stamp
from horizon_opt.times import parse_time

ChangeKind = Literal["add", "remove", "outage", "demand", "limit"]
# (the order they apply in)
KINDS: tuple[ChangeKind, ...] = ("add", "remove", "outage", "demand", "limit")
OPTION: dict[ChangeKind, str] = {k: f"--{k}" for k in KINDS}
METAVAR: dict[ChangeKind, str] = {
    "add": "POOL=N",
    "remove": "POOL=N",
    "outage": "NODE:FROM-TO",
    "demand": "SERVICE*FACTOR",
    "limit": "TEAM:POOL=N",
}
FORM: dict[ChangeKind, str] = {
    "add": "POOL=N, e.g. h100=2",
    "remove": "POOL=N, e.g. h100=2",
    "outage": "NODE:FROM-TO, e.g. h100-3:10-20 (slots, or ISO times when the horizon has a start)",
    "demand": "SERVICE*FACTOR, e.g. chat*1.2",
    "limit": "TEAM:POOL=N, e.g. product:h100=16",
}
_MAX_DIGITS = 12  # longer numbers are refused before int() (a time is within 10**10 slots)


@dataclass(frozen=True)
class Change:
    """One change to the cluster: `nodes` more (add) or fewer (remove) nodes in pool `target`,
    node `target` down in [start, end) (outage), service `target`'s demand times `factor`, or
    team `target` (`TEAM:POOL`) limited to `gpus` GPUs on that pool (limit)."""

    kind: ChangeKind
    target: str
    nodes: int = 0
    start: int | str = 0  # a slot, or an ISO time (as an instance file's time fields)
    end: int | str = 0
    factor: float = 1.0
    gpus: int = 0

    def __str__(self) -> str:
        """The change as its command-line option."""
        value = {
            "add": f"{self.target}={self.nodes}",
            "remove": f"{self.target}={self.nodes}",
            "outage": f"{self.target}:{self.start}-{self.end}",
            "demand": f"{self.target}*{self.factor:g}",
            "limit": f"{self.target}={self.gpus}",
        }[self.kind]
        return f"{OPTION[self.kind]} {value}"


def parse_change(text: str, kind: ChangeKind) -> Change:
    """A change as written on the command line (`FORM` shows each kind); InputError names the
    option and what is wrong. Names are looked up later, by `apply_changes`."""
    written = (
        text if len(text) <= 60 and text.isprintable() and text.strip() == text else show(text)
    )
    option = f"{OPTION[kind]} {written}"

    def bad(problem: str) -> InputError:
        return InputError([f"{option}: {problem}"])

    if kind in ("add", "remove"):
        pool, sep, count = text.rpartition("=")
        if not sep or not pool.strip():
            raise bad(f"expected {FORM[kind]}")
        count = count.strip()
        if not (count.isascii() and count.isdigit()) or not count.strip("0"):
            raise bad(f"N must be a positive integer, got {show(count)}")
        if len(count) > _MAX_DIGITS or int(count) > MAX_NODES:
            raise bad(f"N must be at most {MAX_NODES:,}, the most nodes horizon-opt plans")
        return Change(kind, pool.strip(), nodes=int(count))
    if kind == "limit":
        return _parse_limit(text, bad)
    if kind == "outage":
        node, sep, span = text.partition(":")
        if not sep or not node.strip() or not span.strip():
            raise bad(f"expected {FORM[kind]}")
        start, end = _span(span.strip(), bad)
        if isinstance(start, int) and isinstance(end, int) and start >= end:
            raise bad(f"FROM must be before TO, got {start}-{end}")
        return Change(kind, node.strip(), start=start, end=end)
    service, sep, number = text.rpartition("*")
    if not sep or not service.strip():
        raise bad(f"expected {FORM[kind]}")
    try:
        factor = float(number)
    except ValueError:
        raise bad(f"FACTOR must be a number, got {show(number)}") from None
    if not math.isfinite(factor) or factor <= 0:
        raise bad(f"FACTOR must be a finite number above 0, got {show(number)}")
    return Change(kind, service.strip(), factor=factor)


def _parse_limit(text: str, bad: Callable[[str], InputError]) -> Change:
    target, sep, count = text.rpartition("=")
    team, colon, pool = target.partition(":")
    if not sep or not colon or not team.strip() or not pool.strip():
        raise bad(f"expected {FORM['limit']}")
    count = count.strip()
    if not (count.isascii() and count.isdigit()) or len(count) > _MAX_DIGITS:
        raise bad(f"N must be a whole number of GPUs, got {show(count)}")
    if int(count) > MAX_JOB_GPUS:
        raise bad(f"N must be at most {MAX_JOB_GPUS:,}")
    return Change("limit", f"{team.strip()}:{pool.strip()}", gpus=int(count))


def check_what_if(
    changes: Sequence[Change], solver: str | None, prices: bool, writes_plan: bool
) -> None:
    """Which what-if requests make sense: at least one change, or capacity prices; a solver
    when there is a change to plan; a plan to write only of a changed instance. InputError
    names the option."""
    if not changes and not prices:
        options = ", ".join(OPTION[k] for k in KINDS)
        raise InputError([f"give at least one change ({options}) or --prices"])
    if changes and solver is None:
        raise InputError(["--solver: needed to plan the changed instance"])
    if not changes and writes_plan:
        raise InputError(["--output: there is no changed instance to plan"])


def _span(text: str, bad: Callable[[str], InputError]) -> tuple[int | str, int | str]:
    """FROM-TO: ISO times hold `-` too, so the split is the one `-` with a time on each side."""
    splits = [
        (first, second)
        for m in re.finditer("-", text)
        if (first := _time(text[: m.start()])) is not None
        and (second := _time(text[m.end() :])) is not None
    ]
    if len(splits) != 1:
        why = "ambiguous" if splits else "not two times"
        raise bad(f"FROM-TO is {why}: give slots (10-20) or ISO times (2026-12-01T10:00Z-...)")
    return splits[0]


def _time(text: str) -> int | str | None:
    """A slot index or an ISO time, as an instance file's time fields take them, else None."""
    text = text.strip()
    if text.isascii() and text.isdigit():
        return int(text) if len(text) <= _MAX_DIGITS else None
    return text if parse_time(text) is not None else None


def apply_changes(
    spec: InstanceSpec, changes: Sequence[Change], base: Path | None = None
) -> InstanceSpec:
    """The spec with `changes` made, in the order of `KINDS` (nodes added, nodes removed,
    outages on the nodes then there, demand). A scaled CSV demand is read relative to `base` (the instance
    file's folder; default the current one) and written inline. InputError names the option
    of a change that names nothing in the instance or cannot be made."""
    ordered = sorted(changes, key=lambda c: KINDS.index(c.kind))
    for change in ordered:
        spec = _apply(spec, change, base or Path())
    return spec


def _apply(spec: InstanceSpec, change: Change, base: Path) -> InstanceSpec:
    if change.kind in ("add", "remove"):
        return _resize(spec, change)
    if change.kind == "outage":
        return _outage(spec, change)
    if change.kind == "limit":
        return _limit(spec, change)
    return _scale(spec, change, base)


def _limit(spec: InstanceSpec, change: Change) -> InstanceSpec:
    """The team's limit on the pool set to `gpus`; never below its quota there."""
    team_name, _, pool = change.target.partition(":")
    teams = list(spec.teams)
    k = next((i for i, t in enumerate(teams) if t.name == team_name), None)
    if k is None:
        known = _names(t.name for t in teams) if teams else "none defined"
        raise _bad(change, f"unknown team {team_name!r} (teams: {known})")
    if pool not in {p.name for p in spec.pools}:
        raise _bad(change, f"unknown pool {pool!r} (pools: {_names(p.name for p in spec.pools)})")
    quota = teams[k].quota.get(pool, 0)
    if change.gpus < quota:
        raise _bad(change, f"below the quota of team {team_name!r}: {quota} GPUs on {pool}")
    limit = {**teams[k].limit, pool: change.gpus}
    teams[k] = teams[k].model_copy(update={"limit": limit})
    return spec.model_copy(update={"teams": teams})


def _bad(change: Change, problem: str) -> InputError:
    return InputError([f"{change}: {problem}"])


def _resize(spec: InstanceSpec, change: Change) -> InstanceSpec:
    """More nodes take the next names (`<pool>-<i>`, in a pool with `node_names` too); fewer
    go from the top, unless a node named in the instance (an outage, a placed job) would go
    with them."""
    pools = list(spec.pools)
    k = next((i for i, p in enumerate(pools) if p.name == change.target), None)
    if k is None:
        names = _names(p.name for p in pools)
        raise _bad(change, f"unknown pool {change.target!r} (pools: {names})")
    pool = pools[k]
    if change.kind == "add":
        nodes = pool.nodes + change.nodes
        if nodes > MAX_NODES:
            raise _bad(
                change, f"pool {pool.name!r} would have {nodes:,} nodes, above {MAX_NODES:,}"
            )
        given = pool.node_names
        renamed = None if given is None else [*given, *_added_names(spec, k, nodes, change)]
    else:
        nodes = pool.nodes - change.nodes
        if nodes < 1:
            raise _bad(
                change, f"would leave pool {pool.name!r} with no nodes (it has {pool.nodes})"
            )
        renamed = pool.node_names[:nodes] if pool.node_names is not None else None
        gone = set(pool.names()[nodes:])
        for i, o in enumerate(spec.outages):
            if o.node in gone:
                raise _bad(change, f"would remove {o.node}, which outages[{i}] names")
        for i, j in enumerate(spec.jobs):
            held = sorted(gone & set(j.placed.gpus)) if j.placed is not None else []
            if held:
                raise _bad(
                    change, f"would remove {held[0]}, where placed job {j.id!r} (jobs[{i}]) runs"
                )
    update: dict[str, Any] = {"nodes": nodes}
    if renamed is not None:
        update["node_names"] = renamed
    pools[k] = pool.model_copy(update=update)
    return spec.model_copy(update={"pools": pools})


def _added_names(spec: InstanceSpec, k: int, nodes: int, change: Change) -> list[str]:
    """Names of the nodes added to pool `k`, which names its nodes: a new node has no host name
    yet, so it takes `<pool>-<i>`; refused when another node already has that name."""
    pool = spec.pools[k]
    new = [default_node_name(pool.name, i) for i in range(pool.nodes, nodes)]
    taken = {name for p in spec.pools for name in p.names()}
    clash = next((name for name in new if name in taken), None)
    if clash is not None:
        raise _bad(
            change,
            f"a node added to pool {pool.name!r} is named {clash} (<pool>-<i>), which is "
            "already the name of another node: rename that node in node_names",
        )
    return new


def _outage(spec: InstanceSpec, change: Change) -> InstanceSpec:
    nodes = {name for p in spec.pools for name in p.names()}
    if change.target not in nodes:
        ranges = ", ".join(map(_node_range, spec.pools))
        raise _bad(change, f"unknown node {change.target!r} (nodes: {ranges})")
    if spec.horizon.start is None and (
        isinstance(change.start, str) or isinstance(change.end, str)
    ):
        raise _bad(change, "ISO times need horizon.start in the instance; give slots instead")
    outage = OutageSpec(node=change.target, start=change.start, end=change.end)
    return spec.model_copy(update={"outages": [*spec.outages, outage]})


def _scale(spec: InstanceSpec, change: Change, base: Path) -> InstanceSpec:
    """The service's demand times the factor, inline (a CSV series is read first)."""
    k = next((i for i, s in enumerate(spec.services) if s.name == change.target), None)
    if k is None:
        names = _names(s.name for s in spec.services)
        raise _bad(change, f"unknown service {change.target!r} (services: {names})")
    service = spec.services[k]
    demand = service.demand
    values = read_demand_csv(spec, base)[k] if isinstance(demand, DemandCsv) else demand
    scaled = [v * change.factor for v in values]
    if max(scaled, default=0.0) > MAX_DEMAND:
        raise _bad(
            change, f"demand would exceed {MAX_DEMAND:,.0f} replicas per slot, the most allowed"
        )
    services = list(spec.services)
    services[k] = service.model_copy(update={"demand": scaled})
    return spec.model_copy(update={"services": services})


def _node_range(pool: PoolSpec) -> str:
    names = pool.names()
    given = f" ({pool.name}'s node_names)" if pool.node_names is not None else ""
    return f"{names[0]}..{names[-1]}{given}"


def _names(names: Iterable[str]) -> str:
    return ", ".join(names) or "none"


def compile_changed(
    spec: InstanceSpec, changes: Sequence[Change], base: Path | None = None
) -> Instance:
    """The changed instance, compiled. A problem that the changes cause (an outage that ends
    before it starts, demand that no longer fits, a gang wider than its pool) is reported
    against the option, or against all of them when no one option is to blame."""
    folder = base or Path()
    changed = apply_changes(spec, changes, folder)
    outages = [c for c in changes if c.kind == "outage"]
    first = len(changed.outages) - len(outages)  # the changes' outages come last

    def of_outage(problem: str) -> str | None:
        """A problem of an outage that a change added, said against its option."""
        m = re.match(r"outages\[(\d+)\]\.?(\S*): (.*)", problem, re.DOTALL)
        if m is None or int(m.group(1)) < first:
            return None
        field = f"{m.group(2)}: " if m.group(2) else ""
        return f"{outages[int(m.group(1)) - first]}: {field}{m.group(3)}"

    try:
        instance = compile_instance(changed, read_demand_csv(changed, folder))
    except InstanceError as exc:
        every = ", ".join(map(str, changes))
        raise InputError([of_outage(p) or f"with {every}: {p}" for p in exc.problems]) from None
    # An outage wholly outside the horizon is only a warning in a file; here it is a mistake.
    useless = [w for w in map(of_outage, instance.warnings) if w is not None]
    if useless:
        raise InputError(useless)
    return instance


def changed_instance(instance: Instance, changes: Sequence[Change]) -> Instance:
    """A compiled instance with `changes` made (its demand series, read already, go inline: as
    written, without an open end's extension)."""
    written = instance.written_slots or instance.slots
    services = [
        s.model_copy(update={"demand": instance.services[k].demand[:written].tolist()})
        for k, s in enumerate(instance.spec.services)
    ]
    return compile_changed(instance.spec.model_copy(update={"services": services}), changes)


def what_if_instances(
    source: str | os.PathLike[str] | InstanceSpec,
    changes: Sequence[Change],
    base: Path | None = None,
) -> tuple[Instance, Instance]:
    """(instance as written, instance changed) from an instance file, or from a spec whose CSV
    demand files are relative to `base`."""
    if isinstance(source, InstanceSpec):
        spec, folder = source, base or Path()
    else:
        file = Path(source)
        spec, folder = parse_spec(read_yaml(file, InstanceError)), file.parent
    before = compile_instance(spec, read_demand_csv(spec, folder))
    return before, compile_changed(spec, changes, folder)


@dataclass(frozen=True)
class WhatIf:
    """The plans of the instance as written (`base`) and as changed, and how they differ."""

    base: Plan
    changed: Plan
    changes: tuple[Change, ...]
    diff: PlanDiff
    base_instance: Instance
    changed_instance: Instance
    kept_base: bool = False  # the plan as written beat the changed solve there (`solve_what_if`)


def solve_what_if(
    before: Instance,
    after: Instance,
    changes: Sequence[Change],
    solver: str,
    options: SolveOptions | None = None,
) -> WhatIf:
    """Plan both instances with `solver` and the same options, and compare the plans. The
    changed solve starts from the plan as written (`hint`, cpsat); where that plan is still
    valid and worth more than the changed solve's, it is the changed plan (`kept_base`): a
    change that takes nothing away, such as added capacity, never shows a loss."""
    options = options or SolveOptions()
    base = _checked(before, solve(before, solver, options), "the instance as written")
    hinted = options if options.hint is not None else replace(options, hint=base)
    changed = _checked(after, solve(after, solver, hinted), "the changed instance")
    kept_base = False
    if not check(after, base) and evaluate(after, base).pwo > changed.objective + 1e-9:
        changed, kept_base = _as_changed(after, base, changed), True
    diff = plan_diff(base, changed, before, b_instance=after)
    return WhatIf(base, changed, tuple(changes), diff, before, after, kept_base)


def _checked(instance: Instance, plan: Plan, what: str) -> Plan:
    violations = check(instance, plan)
    if violations:
        raise RuntimeError(
            f"internal error: the {plan.solver} plan of {what} is invalid: {violations[0]}"
        )
    return plan


def _as_changed(after: Instance, base: Plan, changed: Plan) -> Plan:
    """The plan as written, as a plan of the changed instance, with the changed solve's bound
    (it bounds every plan of that instance)."""
    value = evaluate(after, base).pwo
    bound = changed.bound
    status: Status = "heuristic"
    if bound is not None:
        status = "optimal" if reaches(value, bound) else "feasible"
    draft = base.model_copy(update={"status": status, "churn": None})
    return stamp(
        after,
        draft,
        started=time.perf_counter() - changed.wall_seconds,
        bound=bound,
        bound_source=changed.bound_source,
        build_seconds=changed.build_seconds,
    )


def what_if(
    source: str | os.PathLike[str] | InstanceSpec,
    changes: Sequence[Change],
    solver: str = "greedy",
    options: SolveOptions | None = None,
    base: Path | None = None,
) -> WhatIf:
    """Plan an instance as written and with `changes`, with the same solver and options."""
    before, after = what_if_instances(source, changes, base)
    return solve_what_if(before, after, changes, solver, options)


def format_what_if(w: WhatIf) -> str:
    """The terminal view: the changes, both plans side by side (compare's table), the jobs that
    became or stopped being on time, and how many jobs the change moved."""
    columns = [
        Column(label, p, p.metrics) for label, p in (("base", w.base), ("changed", w.changed))
    ]
    d = w.diff
    return "\n".join(
        [
            f"{w.base_instance.name}, {w.base.solver}: what if {', '.join(map(str, w.changes))}",
            "",
            to_text(compare_columns(w.changed_instance, columns)),
            "",
            *job_lists(d),
            f"{jobs_line(d)} (--format json lists them)",
            *(
                [
                    f"note: {w.base.solver}'s plan of the changed instance was worth less than "
                    "the plan as written, which is still valid there: that one is shown"
                ]
                if w.kept_base
                else []
            ),
        ]
    )


def _summary(plan: Plan, instance: Instance) -> dict[str, Any]:
    m = plan.metrics
    return {
        "nodes": instance.num_nodes,
        "status": plan.status,
        "pwo": m.pwo,
        "utilization": m.utilization,
        "on_time": m.completed,
        "scheduled": m.scheduled,
        "late": m.late,
        "bound": plan.bound,
        "gap": plan.gap,
        "wall_seconds": plan.wall_seconds,
    }


def what_if_json(w: WhatIf) -> dict[str, Any]:
    """Plain JSON data, the same keys on every run: the plans' figures and their diff."""
    return {
        "instance": w.base_instance.name,
        "solver": w.base.solver,
        "changes": [str(c) for c in w.changes],
        "base": _summary(w.base, w.base_instance),
        "changed": _summary(w.changed, w.changed_instance),
        "kept_base": w.kept_base,
        "diff": w.diff.to_json(),
    }
