"""`import csv`: a plain table, one job a row, for every queue that is not Slurm or Kueue.

The columns are the instance file's job fields (FORMAT.md), so a spreadsheet export maps one to
one:

| column | required | meaning |
| --- | --- | --- |
| `id` | yes | job id |
| `gpus` | yes | GPUs of the gang |
| `duration` | yes | run time: slots (`12`) or with a unit (`90m`, `6h`, `2d`) |
| `priority` | no (1) | > 0 |
| `kind` | no (`other`) | training, batch_inference, quantization, evaluation, other |
| `pools` | no (all) | allowed pools, separated by spaces or `;` |
| `release`, `deadline` | no | slot, or ISO time |
| `after` | no | ids of jobs it runs after, separated by spaces or `;` |
| `team` | no | its team: a name of the cluster file's `teams`, or a Slurm account one of them lists in `accounts` |
| `start`, `end`, `nodes` | no | a running job (start before the snapshot) or a held start: its start, expected end, and nodes (host names from the cluster file's `node_names`, or `<pool>-<i>` such as `h100-0`; the instance names a node by its host name when it has one); then `pools` names its pool |

Columns the table has beyond these are noted once and ignored; an empty cell is an absent
field. A value the instance file would refuse is refused with its row and column.
"""

from __future__ import annotations

import csv
import io
import os
import re
from datetime import datetime, timedelta
from pathlib import Path

from horizon_opt.errors import InputError, InstanceError, Problem, in_item
from horizon_opt.importers.clock import Clock
from horizon_opt.importers.cluster import ClusterFile, instance_document
from horizon_opt.importers.draft import JobDraft
from horizon_opt.importers.result import Imported, Note, gpu_indices
from horizon_opt.io import read_input
from horizon_opt.model.instance import duration_minutes
from horizon_opt.times import iso, parse_time

REQUIRED = ("id", "gpus", "duration")
OPTIONAL = (
    "priority",
    "kind",
    "pools",
    "release",
    "deadline",
    "after",
    "team",
    "start",
    "end",
    "nodes",
)
_SPLIT = re.compile(r"[\s;]+")


def _words(cell: str) -> list[str]:
    return [w for w in _SPLIT.split(cell.strip()) if w]


def _time(cell: str) -> int | str:
    """A slot (digits) or a time as written."""
    text = cell.strip()
    return int(text) if text.isascii() and text.isdigit() else text


def _end(row: dict[str, str], start: int | str, clock: Clock) -> datetime | None:
    """A placed job's expected end as a time (its `end`, else start + duration), when the cells
    say it plainly; None leaves the compiler to judge them."""
    at = _time(row["end"]) if row.get("end") else None
    if isinstance(at, str):
        return parse_time(at)
    begin = clock.at(start) if isinstance(start, int) else parse_time(start)
    if begin is None:
        return None
    if isinstance(at, int):
        return clock.at(at)
    length = _time(row["duration"])
    span = length * clock.minutes if isinstance(length, int) else duration_minutes(length)
    return None if span is None else begin + timedelta(minutes=span)


def _number(cell: str, row: int, column: str, file: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise InputError(
            [f"{file}: row {row}: {column}: expected a number, got {cell!r}"]
        ) from None
    return int(value) if value.is_integer() else value


def read_table(path: str | os.PathLike[str]) -> tuple[list[dict[str, str]], list[str]]:
    """The rows (column -> cell) and the header of a job table; InputError names the file."""
    file = Path(path)
    text = read_input(file)
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = [h.strip() for h in reader.fieldnames or []]
        rows = [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in reader]
    except csv.Error as exc:
        raise InputError([f"{file}: not a CSV table: {exc}"]) from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError([f"{file}: missing column(s) {', '.join(missing)} (header: {header})"])
    return rows, header


class _Grid:
    """What placing a running row needs: the cluster's nodes (by every name a row may use) and
    the horizon's clock."""

    def __init__(self, cluster: ClusterFile, snapshot: datetime) -> None:
        self.aliases = cluster.node_aliases()  # a host name or <pool>-<i> -> instance node name
        self.node_pools = cluster.node_pools()  # instance node name -> its pool
        self.per_node = {n: p.gpus_per_node for n, p in self.node_pools.items()}
        self.clock = Clock(cluster, snapshot)


def _row_job(row: dict[str, str], r: int, file: str, cluster: ClusterFile) -> JobDraft:
    """A row's job fields, as the instance file has them."""
    job: JobDraft = {"id": row["id"]}
    job["gpus"] = _number(row["gpus"], r, "gpus", file)
    job["duration"] = _time(row["duration"])
    job["priority"] = _number(row["priority"], r, "priority", file) if row.get("priority") else 1
    if row.get("kind"):
        job["kind"] = row["kind"]
    if row.get("pools"):
        job["pools"] = _words(row["pools"])
    if row.get("release"):
        job["release"] = _time(row["release"])
    if row.get("deadline"):
        job["deadline"] = _time(row["deadline"])
    if row.get("after"):
        job["after"] = _words(row["after"])
    if row.get("team"):  # an unknown name stays as written: the instance refuses it by row
        job["team"] = cluster.team_of(row["team"], "accounts") or row["team"]
    return job


def _place(
    job: JobDraft, row: dict[str, str], r: int, file: str, grid: _Grid, notes: list[Note]
) -> dict[str, int]:
    """A running row's `placed` (without its GPU indices) into `job`: its pool, start and end,
    a start before the horizon moved to it and an end after it cut there (noted); returns the
    GPUs it holds on each node."""
    nodes = [grid.aliases.get(n, n) for n in _words(row.get("nodes", ""))]
    unknown = [n for n in nodes if n not in grid.per_node]
    if not row.get("start") or not nodes or unknown:
        why = (
            f"unknown node(s) {', '.join(unknown)}"
            if unknown
            else "a placed job needs both start and nodes"
        )
        raise InputError([f"{file}: row {r}: nodes: {why}"])
    pool = grid.node_pools[nodes[0]].name
    gpus = job["gpus"]
    share = gpus // len(nodes) if isinstance(gpus, int) else 0
    start = _time(row["start"])
    clock = grid.clock
    if isinstance(start, str) and (when := parse_time(start)) is not None and when < clock.start:
        notes.append(
            Note(row["id"], "start", f"{start} is before the horizon: placed from {clock.time(0)}")
        )
        start = clock.time(0)
    job["placed"] = {"pool": pool, "start": start}
    end = _end(row, start, clock)
    if end is not None and end > clock.end and not clock.open_end:
        notes.append(
            Note(row["id"], "end", f"{iso(end)} is after the horizon: placed to end with it")
        )
        job["placed"]["end"] = iso(clock.end)
    elif row.get("end"):
        job["placed"]["end"] = _time(row["end"])
    return {n: share for n in nodes}


def import_table(
    path: str | os.PathLike[str],
    cluster: ClusterFile,
    *,
    name: str | None = None,
    snapshot: datetime,
) -> Imported:
    """The jobs of a CSV table around the cluster, as of `snapshot` (its `now`)."""
    file = str(path)
    rows, header = read_table(path)
    notes = [
        Note("", f"column {c!r}", "not a job field: ignored")
        for c in header
        if c not in REQUIRED + OPTIONAL
    ]
    grid = _Grid(cluster, snapshot)
    jobs: list[JobDraft] = []
    running: list[tuple[str, dict[str, int]]] = []
    for r, row in enumerate(rows, start=2):
        job = _row_job(row, r, file, cluster)
        if row.get("start") or row.get("nodes"):
            running.append((row["id"], _place(job, row, r, file, grid, notes)))
        jobs.append(job)
    indices, index_notes = gpu_indices(running, {}, grid.per_node)
    notes += index_notes
    for job in jobs:
        if "placed" in job:
            job["placed"]["gpus"] = indices[job["id"]]
    document = instance_document(cluster, name or Path(path).stem, snapshot, jobs)
    imported = Imported(document, tuple(notes), cluster.folder)
    try:
        imported.compile()
    except InstanceError as exc:
        raise InputError([_row_problem(file, p, rows) for p in exc.details]) from None
    return imported


def _row_problem(file: str, problem: str | Problem, rows: list[dict[str, str]]) -> str:
    """A compile problem said against the table's row and column, where it is a job's."""
    found = in_item(problem, "jobs")
    if found is None:
        return f"{file}: {problem}"
    k, inside, message = found
    column = inside.split(".")[0].split("[")[0] or "row"
    return f"{file}: row {k + 2} ({rows[k]['id']}): {column}: {message}"
