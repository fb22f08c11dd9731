"""Kueue as horizon-opt knows it: the Workload API versions it was written from, and the
annotations it reads (what a user says of a workload) and writes (a workload it holds).

The importer reads all of them (importers/kueue/); the actions write `HELD_ANNOTATION`
(actions/kueue.py), which tells the importer that a deactivated workload is horizon-opt's to
release, not someone else's to leave out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "DEADLINE_ANNOTATION",
    "DURATION_ANNOTATION",
    "HELD_ANNOTATION",
    "KIND_ANNOTATION",
    "KUEUE_VERSIONS",
    "POOLS_ANNOTATION",
    "kueue_version_notes",
]

KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")  # docs/import.md

DURATION_ANNOTATION = "horizon-opt/duration"
DEADLINE_ANNOTATION = "horizon-opt/deadline"
POOLS_ANNOTATION = "horizon-opt/pools"
KIND_ANNOTATION = "horizon-opt/kind"
HELD_ANNOTATION = "horizon-opt/held"  # a pending workload horizon-opt deactivated until its start


def kueue_version_notes(items: Iterable[Any]) -> list[str]:
    """A note per apiVersion of the Workloads that the importer was not written from."""
    other = {
        str(item["apiVersion"])
        for item in items
        if isinstance(item, dict)
        and item.get("apiVersion", KUEUE_VERSIONS[0]) not in KUEUE_VERSIONS
    }
    return [
        f"{version} is outside the documented {' and '.join(KUEUE_VERSIONS)}: read with their "
        "field names; check the result"
        for version in sorted(other)
    ]
