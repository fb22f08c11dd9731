"""Reading a queue export: JSON within the size and encoding limits of every input file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.io import read_input


def read_json(path: str | os.PathLike[str], what: str) -> Any:
    """Parsed JSON of a file (`what` says what it should hold, e.g. "squeue --json output");
    an unreadable file, text that is not UTF-8 or too large, or bad JSON raises InputError
    naming the file. NaN and Infinity are not JSON and are refused too."""
    file = Path(path)
    text = read_input(file)

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            [f"{file}: not valid JSON ({what}): {exc.msg} at line {exc.lineno} column {exc.colno}"]
        ) from None
    except RecursionError:
        raise InputError([f"{file}: not valid JSON ({what}): nested too deeply"]) from None
    except ValueError as exc:
        raise InputError([f"{file}: not valid JSON ({what}): {exc}"]) from None
