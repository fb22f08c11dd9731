"""What changed between two plans of one instance: jobs added, dropped and moved, and the change
in pwo, utilization and jobs on time.

Two solvers' plans, a plan and its re-plan, or a plan before and after a what-if change all
answer "what would be different" the same way. "Moved" is the re-plan churn's definition
(`churn.job_move`: another start or another pool); a job with the same start and pool on other
nodes or GPUs is not a move but "relocated", told apart from the unchanged.
Both plans are assumed to list each job at most once; with an instance, to be valid for it
(`check.ensure_valid` says so, naming the plan, before a command diffs).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from horizon_opt.model.instance import Instance
from horizon_opt.plans.churn import Move, job_move
from horizon_opt.plans.metrics import evaluate, on_time
from horizon_opt.plans.plan import Assignment, Plan
from horizon_opt.times import parse_time

WIDTH = 100  # job lists wrap at this many characters

ChangeKind = Literal["added", "dropped", "moved"]


@dataclass(frozen=True)
class Delta:
    """One figure of plan A and of plan B."""

    a: float
    b: float

    @property
    def change(self) -> float:
        return self.b - self.a

    @property
    def relative(self) -> float | None:
        """The change as a share of A's figure; None when A's is not positive."""
        return None if self.a <= 0 else (self.b - self.a) / self.a

    def to_json(self) -> dict[str, float | None]:
        return {"a": self.a, "b": self.b, "change": self.change, "relative": self.relative}


@dataclass(frozen=True)
class JobChange:
    """A job whose assignment differs: added (no old side), dropped (no new side) or moved."""

    job: str
    old_pool: str | None
    old_start: int | None
    old_end: int | None
    new_pool: str | None
    new_start: int | None
    new_end: int | None
    shift_hours: float | None = None  # moved jobs, when the slot length is known

    @property
    def kind(self) -> ChangeKind:
        if self.old_start is None:
            return "added"
        return "dropped" if self.new_start is None else "moved"

    @property
    def shift_slots(self) -> int | None:
        """Slots the start moved by (positive: later); None unless moved."""
        if self.old_start is None or self.new_start is None:
            return None
        return self.new_start - self.old_start

    @classmethod
    def of_move(cls, move: Move, hours_per_slot: float | None) -> JobChange:
        shift = move.shift
        hours = None if shift is None or hours_per_slot is None else shift * hours_per_slot
        return cls(
            move.job,
            move.old_pool,
            move.old_start,
            move.old_end,
            move.new_pool,
            move.new_start,
            move.new_end,
            hours,
        )

    @classmethod
    def added(cls, a: Assignment) -> JobChange:
        return cls(a.job, None, None, None, a.pool, a.start, a.end)

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "change": self.kind,
            "old_pool": self.old_pool,
            "old_start": self.old_start,
            "old_end": self.old_end,
            "new_pool": self.new_pool,
            "new_start": self.new_start,
            "new_end": self.new_end,
            "shift_slots": self.shift_slots,
            "shift_hours": self.shift_hours,
        }


@dataclass(frozen=True)
class PlanDiff:
    """Plan B against plan A. The on-time lists need the instance's deadlines: None without it."""

    a_instance: str
    b_instance: str
    a_solver: str
    b_solver: str
    hours_per_slot: float | None  # None when neither an instance nor the plans' times give it
    added: tuple[JobChange, ...]  # assigned in B, not in A; by new start
    dropped: tuple[JobChange, ...]  # assigned in A, not in B; by old start
    moved: tuple[JobChange, ...]  # another start or pool in B; by old start
    relocated: tuple[str, ...]  # same start and pool, other nodes or GPUs; in job order
    unchanged: int  # assigned in both, same start, pool, nodes and GPUs
    pwo: Delta
    utilization: Delta
    on_time: Delta  # jobs on time (`completed`)
    newly_on_time: tuple[str, ...] | None  # on time in B, not in A (late or not run there)
    no_longer_on_time: tuple[str, ...] | None  # on time in A, not in B (late or not run there)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data with the same keys whatever the plans hold (null where unknown)."""
        return {
            "a": {"instance": self.a_instance, "solver": self.a_solver},
            "b": {"instance": self.b_instance, "solver": self.b_solver},
            "hours_per_slot": self.hours_per_slot,
            "pwo": self.pwo.to_json(),
            "utilization": self.utilization.to_json(),
            "on_time": self.on_time.to_json(),
            "added": [c.to_json() for c in self.added],
            "dropped": [c.to_json() for c in self.dropped],
            "moved": [c.to_json() for c in self.moved],
            "relocated": list(self.relocated),
            "unchanged": self.unchanged,
            "newly_on_time": None if self.newly_on_time is None else list(self.newly_on_time),
            "no_longer_on_time": (
                None if self.no_longer_on_time is None else list(self.no_longer_on_time)
            ),
        }


def plan_diff(
    a: Plan, b: Plan, instance: Instance | None = None, *, b_instance: Instance | None = None
) -> PlanDiff:
    """Plan `b` against plan `a`.

    With `instance`, the figures are recomputed from the plans (`evaluate`) and the deadlines
    say which jobs are newly on time; `b_instance` is B's instance when it is not A's (a what-if
    on the same jobs). Without an instance only the plans speak: their own metrics, and the
    slot length when their assignments carry times.
    """
    b_inst = b_instance or instance
    if instance is None or b_inst is None:
        hours = _slot_hours((a, b))
        metrics_a, metrics_b = a.metrics, b.metrics
    else:
        hours = instance.hours_per_slot
        metrics_a, metrics_b = evaluate(instance, a), evaluate(b_inst, b)
    old = {x.job: x for x in a.assignments}
    new = {x.job: x for x in b.assignments}
    order = _job_order(instance, a, b)
    moves = [m for x in old.values() if (m := job_move(x, new.get(x.job))) is not None]
    moves.sort(key=lambda m: (m.old_start, order[m.job]))
    changes = [JobChange.of_move(m, hours) for m in moves]
    added = sorted(
        (JobChange.added(x) for x in new.values() if x.job not in old),
        key=lambda c: (c.new_start, order[c.job]),
    )
    moved = {m.job for m in moves}
    relocated = sorted(
        (j for j, x in old.items() if j in new and j not in moved and _gpus(x) != _gpus(new[j])),
        key=order.__getitem__,
    )
    newly: tuple[str, ...] | None = None
    no_longer: tuple[str, ...] | None = None
    if instance is not None:
        early = _on_time_jobs(instance, old)
        later = _on_time_jobs(instance, new)
        newly = tuple(sorted(later - early, key=order.__getitem__))
        no_longer = tuple(sorted(early - later, key=order.__getitem__))
    return PlanDiff(
        a_instance=a.instance,
        b_instance=b.instance,
        a_solver=a.solver,
        b_solver=b.solver,
        hours_per_slot=hours,
        added=tuple(added),
        dropped=tuple(c for c in changes if c.kind == "dropped"),
        moved=tuple(c for c in changes if c.kind == "moved"),
        relocated=tuple(relocated),
        unchanged=len(old.keys() & new.keys())
        - sum(c.kind == "moved" for c in changes)
        - len(relocated),
        pwo=Delta(metrics_a.pwo, metrics_b.pwo),
        utilization=Delta(metrics_a.utilization, metrics_b.utilization),
        on_time=Delta(metrics_a.completed, metrics_b.completed),
        newly_on_time=newly,
        no_longer_on_time=no_longer,
    )


def _gpus(a: Assignment) -> dict[str, list[int]]:
    """Where an assignment runs: its nodes and their GPU indices, in order."""
    return {node: sorted(gpus) for node, gpus in a.gpus.items()}


def jobs_line(d: PlanDiff) -> str:
    """How many jobs each change kind holds, the unchanged last."""
    return (
        f"jobs: {len(d.added)} added, {len(d.dropped)} dropped, {len(d.moved)} moved, "
        f"{len(d.relocated)} on other nodes or GPUs, {d.unchanged} unchanged"
    )


def _on_time_jobs(instance: Instance, assigned: Mapping[str, Assignment]) -> set[str]:
    return {job for job, x in assigned.items() if on_time(instance, job, x.end)}


def _job_order(instance: Instance | None, a: Plan, b: Plan) -> dict[str, int]:
    """Ties are listed in the instance's job order, else in the order the plans list jobs."""
    order = dict(instance.job_index) if instance is not None else {}
    for x in [*a.assignments, *b.assignments]:
        order.setdefault(x.job, len(order))
    return order


def _slot_hours(plans: Sequence[Plan]) -> float | None:
    """Hours per slot read from the first assignment that carries its start and end times."""
    for plan in plans:
        for x in plan.assignments:
            if x.start_time is None or x.end_time is None or x.end <= x.start:
                continue
            start, end = parse_time(x.start_time), parse_time(x.end_time)
            if start is None or end is None:  # not ISO
                continue
            return (end - start).total_seconds() / 3600 / (x.end - x.start)
    return None


# -- text --------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """Aligned columns, a rule under the header. `align` has an `l` or `r` per column; by
    default the first column is left-aligned and the others right-aligned."""
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if side == "l" else cell.rjust(w)
            for cell, w, side in zip(r, widths, align, strict=True)
        ).rstrip()
        for r in [header, *rows]
    ]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return lines


def _percent(share: float | None) -> str:
    return "" if share is None else f" ({100 * share:+.1f}%)"


def figure_rows(d: PlanDiff) -> list[list[str]]:
    """pwo, utilization and jobs on time: A, B and B - A (relative in brackets)."""
    pwo, util, done = d.pwo, d.utilization, d.on_time
    return [
        ["pwo", f"{pwo.a:,.1f}", f"{pwo.b:,.1f}", f"{pwo.change:+,.1f}{_percent(pwo.relative)}"],
        [
            "utilization",
            f"{100 * util.a:.1f}%",
            f"{100 * util.b:.1f}%",
            f"{100 * util.change:+.1f} pp{_percent(util.relative)}",
        ],
        ["jobs on time", f"{done.a:.0f}", f"{done.b:.0f}", f"{done.change:+.0f}"],
    ]


def _runs(title: str, changes: Sequence[JobChange], old: bool) -> list[str]:
    if not changes:
        return []
    rows = [
        [c.job, str(c.old_pool), str(c.old_start), str(c.old_end)]
        if old
        else [c.job, str(c.new_pool), str(c.new_start), str(c.new_end)]
        for c in changes
    ]
    return ["", f"{title} ({len(changes)}):", *table(["job", "pool", "start", "end"], rows, "llrr")]


def _moves(d: PlanDiff) -> list[str]:
    if not d.moved:
        return []
    rows = [
        [
            c.job,
            str(c.old_pool),
            str(c.old_start),
            str(c.new_pool),
            str(c.new_start),
            f"{c.shift_slots:+d}",
            "-" if c.shift_hours is None else f"{c.shift_hours:+.2f}",
        ]
        for c in d.moved
    ]
    header = ["job", "old pool", "start", "new pool", "start", "shift", "shift (h)"]
    return ["", f"moved ({len(d.moved)}):", *table(header, rows, align="llrlrrr")]


def _relocated(d: PlanDiff) -> list[str]:
    """The jobs that kept their start and pool but run on other nodes or GPUs."""
    if not d.relocated:
        return []
    text = f"on other nodes or GPUs, same start and pool ({len(d.relocated)}): "
    text += ", ".join(d.relocated)
    return ["", *textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)]


def job_lists(d: PlanDiff) -> list[str]:
    """The jobs newly on time and no longer on time, wrapped (nothing without deadlines)."""
    lines: list[str] = []
    for title, jobs in (
        ("newly on time", d.newly_on_time),
        ("no longer on time, late or not run", d.no_longer_on_time),
    ):
        if jobs is not None:
            text = f"{title} ({len(jobs)}): {', '.join(jobs) if jobs else '-'}"
            lines += textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    return lines


def format_diff(d: PlanDiff, labels: tuple[str, str] = ("A", "B")) -> str:
    """The terminal view: which plan is which, the figures side by side, the jobs that changed."""
    a, b = labels
    lines = [
        f"A: {a} ({d.a_solver} plan of {d.a_instance})",
        f"B: {b} ({d.b_solver} plan of {d.b_instance})",
        "",
        *table(["", "A", "B", "B - A"], figure_rows(d)),
        "",
        jobs_line(d),
        *_runs("added", d.added, old=False),
        *_runs("dropped", d.dropped, old=True),
        *_moves(d),
        *_relocated(d),
    ]
    on_time = job_lists(d)
    return "\n".join([*lines, *([""] if on_time else []), *on_time])
