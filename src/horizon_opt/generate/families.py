"""The family registry and `generate`, the one entry point that seeds every draw.

Every random draw of an instance comes from one `numpy.random.default_rng(seed)`, in a fixed
order, so the same (family, size, seed) always gives the identical instance.
"""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from horizon_opt.generate.aliases import InstanceData, Rng
from horizon_opt.generate.deadline import deadline
from horizon_opt.generate.enterprise import enterprise
from horizon_opt.generate.errors import GeneratorError
from horizon_opt.generate.hetero import hetero
from horizon_opt.generate.sizes import SIZES, Size
from horizon_opt.generate.teams import enterprise_teams, trace_teams
from horizon_opt.generate.trace import TRACE_ATTRIBUTION, trace


class FamilyFn(Protocol):
    """A family: instance data for a name, a size and a seeded generator (`traces`: `trace` only)."""

    def __call__(
        self, name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
    ) -> InstanceData: ...


FAMILIES: dict[str, FamilyFn] = {
    "enterprise": enterprise,
    "hetero": hetero,
    "deadline": deadline,
    "trace": trace,
    "enterprise-teams": enterprise_teams,
    "trace-teams": trace_teams,
}

# Comment lines written at the top of an instance file of the family (attribution of sources).
NOTES: dict[str, str] = {"trace": TRACE_ATTRIBUTION, "trace-teams": TRACE_ATTRIBUTION}


def generate(
    family: str, size: str, seed: int, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Instance data for (family, size, seed), named `<family>-<size>-s<seed>`: a plain dict
    following FORMAT.md.

    `traces` is the folder of the trace CSVs (family `trace` only; see `find_traces`)."""
    if family not in FAMILIES:
        raise GeneratorError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise GeneratorError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    if seed < 0:
        raise GeneratorError(f"seed must be 0 or more, got {seed}")
    rng = np.random.default_rng(seed)
    return FAMILIES[family](f"{family}-{size}-s{seed}", SIZES[size], rng, traces=traces)
