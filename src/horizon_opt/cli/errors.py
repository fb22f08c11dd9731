"""Bad input, wherever it is found, becomes error lines on stderr and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from horizon_opt.errors import InputError


@contextmanager
def input_errors() -> Iterator[None]:
    """Bad input: one line per problem on stderr, exit code 2, no traceback."""
    try:
        yield
    except InputError as exc:
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(2) from None
