"""A job on its way into the instance file, typed: the fields of FORMAT.md's job that the
importers fill in, so Slurm's, Kueue's and the table's importer hand `instance_document` the
same thing.

A draft is the job as the instance file will hold it (a dict, in the order the importer fills
it in, which is the order the file shows). Its values are what the importer computed, or, for
the table, the cell as written (`int | str`), which the compiler then judges and the importer
says against its row.
"""

from __future__ import annotations

from typing import Required, TypedDict

__all__ = ["JobDraft", "PlacedDraft"]


class PlacedDraft(TypedDict, total=False):
    """A running job's (or a held start's) `placed`."""

    pool: Required[str]
    start: Required[int | str]  # a slot, or a time
    end: int | str
    gpus: dict[str, list[int]]  # node -> GPU indices it holds there


class JobDraft(TypedDict, total=False):
    """One job of the instance file."""

    id: Required[str]
    kind: str
    priority: float
    gpus: float  # a whole number, but a table's cell may say otherwise (the compiler judges)
    duration: int | str  # slots, or a duration (`90m`)
    pools: list[str]
    release: int | str  # a slot, or a time
    deadline: int | str
    after: list[str]
    placed: PlacedDraft
    team: str
