"""The one error the generator raises, so callers (the CLI, `bench`) can report it as bad input."""

from __future__ import annotations


class GeneratorError(ValueError):
    """A generator request that cannot be met: unknown family or size, missing trace files."""
