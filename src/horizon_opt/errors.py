"""Errors that reach users: each carries one line per problem, starting with its field path."""

from __future__ import annotations

from collections.abc import Sequence


class InputError(ValueError):
    """Bad input file. The CLI prints `problems` one per line and exits with code 2."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class InstanceError(InputError):
    """The instance file is invalid."""


class PlanError(InputError):
    """The plan file cannot be read (an invalid but well-formed plan is the checker's business)."""


class BoundWarning(UserWarning):
    """A bound failed the check against the plan it bounds (it is below the plan's pwo), so it
    was dropped: the plan stands, with no bound. The CLI prints it as `warning: ...`."""
