"""What an importer returns: the instance file's content, and a note for everything it could not
map (a job is never dropped silently: it is imported with what was known, or left out with a
note that says why)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import move_demand_csvs, parse_spec, read_demand_csv


@dataclass(frozen=True)
class Note:
    """One thing the importer could not map: the job (as the source names it; empty for the
    whole payload), the source's field, and what was done instead."""

    job: str
    field: str
    problem: str
    # What notes of several jobs have in common when their problems differ in detail (each
    # job's own TRES string, say): they are summed up under it; empty: under the problem
    cause: str = dataclasses.field(default="", compare=False)

    def __str__(self) -> str:
        where = f"{self.job}: {self.field}" if self.job else self.field
        return f"{where}: {self.problem}"


@dataclass(frozen=True)
class Imported:
    document: dict[str, Any]  # the instance file's content (FORMAT.md)
    notes: tuple[Note, ...]
    folder: Path = Path(".")  # the cluster file's: its demand CSV paths start here

    def compile(self) -> Instance:
        """The instance; InstanceError names the field when the document is not one."""
        return compile_document(self.document, self.folder)

    def to_yaml(self, beside: Path | None = None) -> str:
        """The instance file's text; with `beside` (the folder it is written to), demand CSV
        paths are rewritten to be relative to it, so the file reads the cluster file's CSV."""
        document = (
            self.document
            if beside is None
            else move_demand_csvs(self.document, self.folder, beside)
        )
        return yaml.safe_dump(
            document, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None
        )


def compile_document(document: dict[str, Any], folder: Path) -> Instance:
    """Compile an instance document whose demand CSV paths are relative to `folder`."""
    spec = parse_spec(document)
    return compile_instance(spec, read_demand_csv(spec, folder))


def gpu_indices(
    running: Sequence[tuple[str, Mapping[str, int]]],
    known: Mapping[str, Mapping[str, Sequence[int]]],
    gpus_per_node: Mapping[str, int],
) -> tuple[dict[str, dict[str, list[int]]], list[Note]]:
    """GPU indices for running jobs: `known` ones as the source gives them, the others the
    lowest indices that no other running job holds on that node.

    `running`: (job id, {node: GPUs it holds there}) in the source's order; `known`: job id ->
    {node: indices} when the source says; `gpus_per_node`: per node. A node that runs out of
    indices gets a note and the job none there (the compiler then refuses the instance, naming
    the job: two running jobs cannot share a GPU).
    """
    taken: dict[str, set[int]] = {}
    for nodes in known.values():
        for node, idx in nodes.items():
            taken.setdefault(node, set()).update(idx)
    out: dict[str, dict[str, list[int]]] = {}
    notes: list[Note] = []
    for job, counts in running:
        if job in known:
            out[job] = {node: sorted(idx) for node, idx in known[job].items()}
            continue
        out[job] = {}
        for node, count in counts.items():
            used = taken.setdefault(node, set())
            free = [i for i in range(gpus_per_node[node]) if i not in used][:count]
            if len(free) < count:
                notes.append(Note(job, "gpus", f"node {node} has no {count} free GPU indices left"))
            used.update(free)
            out[job][node] = free
    return out, notes


def count_line(notes: Iterable[Note], jobs: int) -> str:
    """The summary an importer prints after its notes."""
    notes = list(notes)
    affected = len({n.job for n in notes if n.job})
    return (
        f"{jobs} jobs imported; {len(notes)} note(s) on {affected} job(s) about what could not "
        "be mapped as is"
    )


EXAMPLES = 3  # job ids a summary line names before "and N more"


def some_jobs(jobs: Sequence[str]) -> str:
    """`N jobs: a, b, c and M more`: how many, and the first few ids."""
    named = ", ".join(jobs[:EXAMPLES])
    more = f" and {len(jobs) - EXAMPLES:,} more" if len(jobs) > EXAMPLES else ""
    return f"{len(jobs):,} job{'s' if len(jobs) != 1 else ''}: {named}{more}"


def note_lines(notes: Iterable[Note]) -> list[str]:
    """One line per cause: the notes that say the same thing (field and problem, or cause) of
    several jobs, such as every task of an array, become one line with the count and a few job
    ids; a cause of one job stays its note. Lines keep the order of each cause's first note."""
    groups: dict[tuple[str, str], list[Note]] = {}
    for note in notes:
        groups.setdefault((note.field, note.cause or note.problem), []).append(note)
    lines = []
    for (where, problem), group in groups.items():
        jobs = list(dict.fromkeys(n.job for n in group if n.job))
        if len(jobs) < 2:  # one job's note (said once, however often it was noted)
            lines.append(str(group[0]))
            continue
        lines.append(f"{where}: {problem} ({some_jobs(jobs)})")
    return lines
