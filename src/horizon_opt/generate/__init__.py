"""Seeded instance generator: benchmark families of realistic instances, at four sizes.

`generate(family, size, seed)` returns instance data as a plain dict that follows FORMAT.md, and
`generate_file` writes it as YAML; the same (family, size, seed) always gives the same file. What
each family models and how everything is drawn: docs/generator.md.
"""

from __future__ import annotations

from horizon_opt.generate.aliases import InstanceData
from horizon_opt.generate.errors import GeneratorError
from horizon_opt.generate.families import FAMILIES, NOTES, FamilyFn, generate
from horizon_opt.generate.files import generate_file, write_instance
from horizon_opt.generate.sizes import SIZES, PoolShape, Size
from horizon_opt.generate.trace import (
    TRACE_MODELS,
    TRACES_ENV,
    find_traces,
    load_trace_inference,
    load_trace_jobs,
)

__all__ = [
    "FAMILIES",
    "NOTES",
    "SIZES",
    "TRACES_ENV",
    "TRACE_MODELS",
    "FamilyFn",
    "GeneratorError",
    "InstanceData",
    "PoolShape",
    "Size",
    "find_traces",
    "generate",
    "generate_file",
    "load_trace_inference",
    "load_trace_jobs",
    "write_instance",
]
