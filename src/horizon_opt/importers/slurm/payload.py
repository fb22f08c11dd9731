"""What a Slurm payload is and which version of its API wrote it: squeue or sacct, and their
data_parser (Kueue's Workload apiVersion: schedulers/kueue.py).

An `sacct --json` file given as the queue used to read as an empty queue, and a queue given as
the history as a history of nothing: both looked like success. The kind is read from what the
payload says of itself (`meta.command`, data_parser v0.0.40 and later) or, failing that, from
its jobs' shape (`job_state` for squeue; `state` and `time` objects for sacct).
"""

from __future__ import annotations

import re
from typing import Any

from horizon_opt.errors import InputError

PARSERS = (38, 42)  # data_parser versions v0.0.38 to v0.0.42 are documented (docs/import.md)
_VERSION = re.compile(r"v0\.0\.(\d+)")


def slurm_kind(payload: Any) -> str | None:
    """`squeue`, `sacct`, or None when the payload does not say (no jobs, no command)."""
    if not isinstance(payload, dict):
        return None
    meta = payload.get("meta")
    command = meta.get("command") if isinstance(meta, dict) else None
    if isinstance(command, list) and command and command[0] in ("squeue", "sacct"):
        return str(command[0])
    jobs = payload.get("jobs")
    first = jobs[0] if isinstance(jobs, list) and jobs else None
    if not isinstance(first, dict):
        return None
    if "job_state" in first:
        return "squeue"
    if isinstance(first.get("state"), dict) and isinstance(first.get("time"), dict):
        return "sacct"
    return None


def parser_version(payload: Any) -> int | None:
    """The data_parser minor version (41 for v0.0.41), from `meta.plugin`, when it says."""
    meta = payload.get("meta") if isinstance(payload, dict) else None
    plugin = meta.get("plugin") if isinstance(meta, dict) else None
    if not isinstance(plugin, dict):
        return None
    for key in ("data_parser", "type"):
        found = _VERSION.search(str(plugin.get(key, "")))
        if found:
            return int(found.group(1))
    return None


def check_slurm(payload: Any, expected: str, source: str) -> str | None:
    """Refuse a payload of the other kind (InputError naming both); return a note when its
    data_parser version is outside the documented range, else None."""
    kind = slurm_kind(payload)
    if kind is not None and kind != expected:
        raise InputError(
            [
                f"{source}: expected the output of `{expected} --json`, found the output of "
                f"`{kind} --json`"
            ]
        )
    version = parser_version(payload)
    low, high = PARSERS
    if version is not None and not low <= version <= high:
        return (
            f"data_parser v0.0.{version} is outside the documented v0.0.{low} to v0.0.{high}: "
            "read as the nearest documented shape; check the result"
        )
    return None
