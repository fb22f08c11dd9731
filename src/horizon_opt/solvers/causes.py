"""Cause codes: why a job is late or not in a plan, as one of a fixed set, like a scheduler's
reason codes but read off the whole plan (`diagnosis` decides which one holds). The plan file's
`unscheduled[].code`, `explain`, the CSV export and the report all use these codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from horizon_opt.solvers.grid import Fit


class Code(StrEnum):
    """Cause codes, in the order they are tested."""

    NO_FITTING_POOL = "no-fitting-pool"
    DEADLINE_IMPOSSIBLE = "deadline-impossible"
    PREDECESSOR_UNPLANNED = "predecessor-unplanned"
    PREDECESSOR_LATE = "predecessor-late"
    INFERENCE_RESERVED = "inference-reserved"
    TEAM_LIMIT = "team-limit"
    ROOM_UNUSED = "room-unused"
    QUOTA_BORROWED = "quota-borrowed-by"
    OTHERS_QUOTA = "others-quota"
    LOWER_VALUE_WORK = "lower-value-work"
    HIGHER_VALUE_WORK = "higher-value-work"


MEANING: Mapping[Code, str] = {
    Code.NO_FITTING_POOL: "no allowed pool can hold its gang for its run time at any time in "
    "the horizon, even with no other batch work",
    Code.DEADLINE_IMPOSSIBLE: "even alone on the cluster (inference and outages only) it cannot "
    "end by its deadline or the horizon's end",
    Code.PREDECESSOR_UNPLANNED: "a job it runs after is not planned",
    Code.PREDECESSOR_LATE: "a job it runs after ends too late for it to end in time",
    Code.INFERENCE_RESERVED: "the plan's inference reservation (how many replicas, on which "
    "nodes) takes the room that the forecast requirement, placed to suit it, would leave it "
    "with every other planned job where it is",
    Code.TEAM_LIMIT: "its nodes have room as the plan stands, but its team's jobs hold the "
    "team's limit on the pool there",
    Code.ROOM_UNUSED: "it fits as the plan stands; the solver did not place it there (its "
    "rule, or its time limit)",
    Code.QUOTA_BORROWED: "it would fit within its team's quota if other teams gave back the "
    "GPUs they hold above their own quotas",
    Code.OTHERS_QUOTA: "it would fit by moving only work worth less than it, but that work "
    "runs within other teams' quotas while its own team would hold more than its quota",
    Code.LOWER_VALUE_WORK: "it would fit by moving only work worth less than it",
    Code.HIGHER_VALUE_WORK: "work worth at least as much as it holds every window where it "
    "could end in time",
}


@dataclass(frozen=True)
class Cause:
    code: Code
    sentence: str
    window: Fit | None = None  # the window the sentence speaks of
    holders: tuple[int, ...] = ()  # the plan's jobs holding that window, most valuable first
