"""Reading input files as UTF-8 text within their limits, YAML, pydantic problems in FORMAT.md's
notation, and writing any output atomically. Shared by every layer: it imports no other module of
the package but `errors`."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from horizon_opt.errors import InputError, Problem

MAX_FILE_BYTES = 128 * 2**20  # an instance file, a demand CSV file, any other input


def validation_located(exc: ValidationError) -> list[Problem]:
    """One problem per pydantic error, located by pydantic's own error location."""
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        problems.append(Problem.of(err["loc"], msg))
    return problems


def validation_problems(exc: ValidationError) -> list[str]:
    """One line per pydantic error, with the field path in FORMAT.md's notation."""
    return [str(p) for p in validation_located(exc)]


def read_text(file: Path) -> str:
    """A text file's content: UTF-8, with or without the byte-order mark Excel writes.

    Raises OSError when it cannot be read, and ValueError (a message to show after the file's
    name) when it is not UTF-8 text or is larger than MAX_FILE_BYTES (no more is read).
    """
    with file.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // 2**20} MiB, the most horizon-opt reads")
    not_text = "not UTF-8 text (save it as UTF-8)"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(not_text) from None
    if "\0" in text:  # UTF-16 of ASCII text decodes as UTF-8, with a NUL every other byte
        raise ValueError(not_text)
    return text


# libyaml's parser when PyYAML has it: the same data, but it refuses nesting over 1,000 levels
# at once, where the pure-Python one spends seconds per thousand levels before it overflows the
# stack (RecursionError, caught below for it).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_input(path: str | os.PathLike[str], error: type[InputError] = InputError) -> str:
    """The text of an input file; an unreadable file, or one that is not UTF-8 or too large,
    raises `error` naming the file."""
    file = Path(path)
    try:
        return read_text(file)
    except OSError as exc:
        raise error([f"{file}: cannot read: {exc.strerror}"]) from None
    except ValueError as exc:
        raise error([f"{file}: {exc}"]) from None


def read_yaml(
    path: str | os.PathLike[str], error: type[InputError] = InputError, loader: Any = None
) -> Any:
    """Parsed YAML of a file; an unreadable file or bad YAML raises `error` naming the file.
    `loader`: a stricter YAML loader (e.g. one that refuses a key named twice); default the
    fastest safe one."""
    file = Path(path)
    text = read_input(file, error)
    try:
        return yaml.load(text, Loader=loader or _YAML_LOADER)
    except RecursionError:
        raise error([f"{file}: not valid YAML: nested too deeply"]) from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:  # ValueError: e.g. month 13
        raise error([f"{file}: not valid YAML: {exc}"]) from None


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write a file so that readers see the old content or the new, never half of it.

    A symbolic link is followed: the file it points to is replaced, the link stays. `/dev/null`
    takes the data and keeps nothing; any other existing file that is not a regular file (a
    folder, a device, a FIFO) raises OSError instead of being replaced by a regular file. On any
    error the temporary file is removed.
    """
    import errno  # only for the refusals below

    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if os.path.samefile(target, os.devnull):
            return
        raise FileExistsError(errno.EEXIST, "not a regular file; refusing to replace it", str(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fh.fileno(), 0o666 & ~umask)  # mkstemp creates 0600: the usual mode
            fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
