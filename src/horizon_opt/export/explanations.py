"""`explain`'s records as text for people, CSV for spreadsheets (one row per job: the predicted
start of every job in one table) and JSON for scripts."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence

from horizon_opt.analysis.explain import JobExplanation
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

CSV_COLUMNS = (
    "job",
    "status",
    "priority",
    "value",
    "pool",
    "start_slot",
    "end_slot",
    "start_time",
    "end_time",
    "deadline_slot",
    "earliest_alone_slot",
    "earliest_alone_pool",
    "waits_h",
    "cause_code",
    "reason",
    "insert_slot",
    "insert_pool",
    "insert_moves",
    "priority_needed",
    "window_slot",
    "window_pool",
    "window_moves",
    "no_priority",
)


def _opt(value: object) -> str:
    return "" if value is None else str(value)


def _num(value: float | None) -> str:
    if value is None:
        return ""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def explanations_csv(instance: Instance, records: Sequence[JobExplanation]) -> str:
    """One row per job; moves are job ids separated by spaces."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    h = instance.hours_per_slot
    for r in records:
        writer.writerow(
            [
                r.job,
                r.status,
                _num(r.priority),
                _num(r.value),
                _opt(r.pool),
                _opt(r.start),
                _opt(r.end),
                _opt(r.start_time),
                _opt(r.end_time),
                _opt(r.deadline),
                _opt(r.earliest_alone),
                _opt(r.earliest_alone_pool),
                "" if r.waits is None else _num(r.waits * h),
                _opt(r.code),
                _opt(r.reason),
                _opt(r.insert_at),
                _opt(r.insert_pool),
                " ".join(r.insert_moves),
                _num(r.priority_needed),
                _opt(r.window_start),
                _opt(r.window_pool),
                " ".join(r.window_moves),
                _opt(r.no_priority),
            ]
        )
    return buf.getvalue()


Promised = Mapping[str, Mapping[str, str]]  # job -> its promise: start, p50, p90, made (ISO)


def explanations_json(
    plan: Plan, records: Sequence[JobExplanation], promised: Promised | None = None
) -> str:
    """Every job's answer; with `promised` (a promise ledger's), each job's `promise` too
    (null when it holds none)."""
    jobs = []
    for r in records:
        row = dataclasses.asdict(r) | {"waits": r.waits}
        if promised is not None:
            row["promise"] = promised.get(r.job)
        jobs.append(row)
    data = {"instance": plan.instance, "solver": plan.solver, "jobs": jobs}
    return json.dumps(data, indent=1) + "\n"


def _names(ids: Sequence[str], limit: int = 4) -> str:
    more = len(ids) - limit
    return ", ".join(ids[:limit]) + (f" and {more} more" if more > 0 else "")


def _when(instance: Instance, slot: int | None) -> str:
    if slot is None:
        return "-"
    at = instance.slot_time(slot)
    return str(slot) if at is None else f"{slot} ({at:%a %H:%M})"


_WAITS = ("predecessor-unplanned", "predecessor-late")  # its own priority is not the lever


def _together(instance: Instance, r: JobExplanation) -> str:
    """What the work in its way is worth together against the job: a sum, not a threshold (a
    plan that maximizes pwo may move that work elsewhere rather than out, so no priority that
    such a plan "needs" follows from it; docs/design.md, Explanations)."""
    total = sum(instance.jobs[instance.job_index[m]].value for m in r.window_moves)
    than = "less" if total <= r.value else "more"
    return f"together that work is worth {total:,.0f}, {than} than its {r.value:,.0f}"


def what_it_takes(instance: Instance, r: JobExplanation) -> list[str]:
    """The lines that say what it would take to plan a late or unplanned job in time."""
    lines = []
    if r.no_priority is not None and r.code in _WAITS:
        lines.append(r.no_priority)
    elif r.no_priority is not None:
        lines.append(f"no priority is enough: {r.no_priority}")
    relaid = " (the inference replicas placed to suit it)" if r.inference_moved else ""
    if r.priority_needed is not None:
        where = f"slot {_when(instance, r.window_start)} on {r.window_pool}{relaid}"
        ahead = f", ahead of {_names(r.window_moves)}" if r.window_moves else ""
        if r.priority_needed == 0:
            lines.append(f"it fits at {where} as the plan stands")
        elif r.priority_needed < r.priority:
            lines.append(
                f"it already outranks each job at {where}{ahead}, one by one (priority above "
                f"{r.priority_needed:.3g} would do; it has {r.priority:g}); "
                + _together(instance, r)
            )
        else:
            lines.append(
                f"with priority above {r.priority_needed:.3g} (now {r.priority:g}) it would "
                f"outrank each job at {where}{ahead}, one by one: a comparison of values, not a "
                "promise of any solver (greedy and fifo order by their own rules; a plan that "
                "maximizes pwo may move that work elsewhere, or keep it); " + _together(instance, r)
            )
    if r.insert_at is not None and r.priority_needed != 0:
        moving = f", moving {_names(r.insert_moves)}" if r.insert_moves else ""
        lines.append(
            f"moving only lower-value work, it could start at slot "
            f"{_when(instance, r.insert_at)} on {r.insert_pool}{moving}{relaid}"
        )
    elif r.code is not None and r.no_priority is None and r.insert_at is None:
        lines.append("moving only lower-value work: no window ends in time")
    return lines


def format_explanations(
    instance: Instance,
    plan: Plan,
    records: Sequence[JobExplanation],
    promised: Promised | None = None,
) -> str:
    """A table of every job (status, planned start, earliest start alone, cause), then, for each
    late or unplanned job, its reason and what it would take; then the promises with their
    intervals, when given."""
    counts = Counter(r.status for r in records)
    head = (
        f"plan {plan.solver} for {plan.instance}: "
        + ", ".join(f"{n} {status}" for status, n in counts.items())
        + f" (slots of {instance.slot_minutes} min)"
    )
    rows = [("job", "status", "pool", "start", "end", "alone", "waits", "cause")]
    for r in records:
        rows.append(
            (
                r.job,
                r.status,
                r.pool or "-",
                _opt(r.start) or "-",
                _opt(r.end) or "-",
                _opt(r.earliest_alone) or "-",
                _opt(r.waits) or "-",
                r.code or "",
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    right = {3, 4, 5, 6}
    table = [
        "  ".join(
            cell.rjust(widths[c]) if c in right else cell.ljust(widths[c])
            for c, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]
    out = [head, "", *table]
    for r in records:
        if r.code is None:
            continue
        out += ["", f"{r.job} ({r.status}, {r.code}): {r.reason}"]
        out += [f"  {line}" for line in what_it_takes(instance, r)]
    told = [(r.job, promised[r.job]) for r in records if promised and r.job in promised]
    if told:
        out += ["", "promised starts, with the P50 and P90 learned from earlier promises:"]
        out += [f"  {job}: {_promise(row)}" for job, row in told]
    return "\n".join(out) + "\n"


def _promise(row: Mapping[str, str]) -> str:
    return f"{row['start']} (P50 {row['p50']}, P90 {row['p90']}; told {row['made']})"


def format_one(instance: Instance, r: JobExplanation, promised: Promised | None = None) -> str:
    """One job's answer, as a short block (with its promise, when `promised` holds one)."""
    lines = [f"{r.job}: {r.status}, priority {r.priority:g}, value {r.value:,.0f}"]
    if promised and r.job in promised:
        lines.append(f"  promised: {_promise(promised[r.job])}")
    if r.start is not None:
        lines.append(
            f"  planned: slot {_when(instance, r.start)} to {_when(instance, r.end)} on {r.pool}"
        )
    if r.deadline is not None:
        lines.append(f"  deadline: slot {_when(instance, r.deadline)}")
    if r.status not in ("running", "reserved"):
        alone = (
            "never (no allowed pool holds it)"
            if r.earliest_alone is None
            else f"slot {_when(instance, r.earliest_alone)} on {r.earliest_alone_pool}"
        )
        lines.append(f"  earliest start alone on the cluster: {alone}")
    if r.code is not None:
        lines.append(f"  cause: {r.code}: {r.reason}")
        lines += [f"  {line}" for line in what_it_takes(instance, r)]
    return "\n".join(lines) + "\n"
