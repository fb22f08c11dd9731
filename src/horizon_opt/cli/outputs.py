"""Where a command will write, checked before it does any work: a bad path costs a message, not
a five-minute solve, and no output replaces an input, a folder, a device or another output.

Files are replaced atomically (`io.write_atomic`, folders created as needed), so what matters is
the folder they land in. A search log is streamed instead (opened once and written as the search
goes), so it may also be a device or a FIFO (`--log /dev/stderr`) but its folder must exist.
`-` means standard output where a command says so; `/dev/null` takes any output and keeps nothing.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from horizon_opt.errors import InputError

STDOUT = "-"

Kind = Literal["file", "stream", "folder"]
Inputs = Sequence[tuple[str, Path | None]]  # (what it is, path): "the instance file", ...
Given = list[tuple[str, Path]]  # the inputs that were given


@dataclass(frozen=True)
class Output:
    """One place a command writes; `option` names it in messages. `kind`: "file" is replaced
    atomically, "stream" is written in place as the work goes, "folder" receives `files`."""

    option: str
    path: Path
    kind: Kind = "file"
    stdout: bool = False  # `-` means standard output
    files: tuple[str, ...] = ()


def is_stdout(path: Path) -> bool:
    """`-`: standard output, for the commands that offer it."""
    return str(path) == STDOUT


def check_outputs(outputs: Sequence[Output], inputs: Inputs = ()) -> None:
    """Raise InputError, one line per problem starting with the option, when an output cannot be
    written, or would replace an input, a folder, a device or another output of the command."""
    given = [(what, p) for what, p in inputs if p is not None]
    given += [linked for what, p in given for linked in _demand_csvs(what, p)]
    written: dict[str, str] = {}
    problems: list[str] = []
    for out in outputs:
        problems += _problems(out, given, written)
    if problems:
        raise InputError(problems)


@contextmanager
def writing(option: str, path: Path) -> Iterator[None]:
    """A write that fails although it was checked (disk full, a race): InputError naming the
    option instead of a traceback."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError([f"{option}: cannot write {str(path)!r}: {reason}"]) from None


_CSV = re.compile(r"""\bcsv:\s*['"]?([^'",}\s]+)""")
_PEEK_BYTES = 128 * 1024 * 1024  # the instance file's own size limit


def _demand_csvs(what: str, path: Path) -> Given:
    """The demand CSVs a YAML input names (`demand: {csv: ...}`, relative to its folder): an
    output must not replace them either. A scan of the text, not a parse: an input that cannot
    be read is the command's to report."""
    if path.suffix.lower() not in (".yaml", ".yml"):
        return []
    try:
        if path.stat().st_size > _PEEK_BYTES:
            return []
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [
        (f"a demand CSV that {what} reads ({name})", path.parent / name)
        for name in dict.fromkeys(_CSV.findall(text))
    ]


def _problems(out: Output, inputs: Given, written: dict[str, str]) -> list[str]:
    if is_stdout(out.path):
        if out.stdout:
            return []
        return [
            f"{out.option}: '-' (standard output) is not supported here; "
            "write ./- for a file named -"
        ]
    if out.kind != "folder":
        problem = _file_problem(out.option, out.path, out.kind, inputs, written)
        return [] if problem is None else [f"{out.option}: {problem}"]
    reason = _folder_problem(out.path)
    if reason is not None:
        return [f"{out.option}: {reason}"]
    problems = [
        _file_problem(out.option, out.path / name, "file", inputs, written) for name in out.files
    ]
    return [f"{out.option}: {p}" for p in problems if p is not None]


def _file_problem(
    option: str, path: Path, kind: Kind, inputs: Given, written: dict[str, str]
) -> str | None:
    """Why `option` cannot write `path` (without the option), or None; records it in `written`."""
    shown = repr(str(path))
    try:
        mode: int | None = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None  # a missing file, or a path under a file (found below)
    except OSError as exc:
        return f"cannot write {shown}: {exc.strerror}"
    if mode is not None:
        if stat.S_ISDIR(mode):
            return f"{shown} is a folder; give a file name"
        if os.path.samefile(path, os.devnull):
            return None
        if not stat.S_ISREG(mode) and not (
            kind == "stream" and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode))
        ):
            return (
                f"{shown} is not a regular file (a device, FIFO or socket); refusing to replace it"
            )
    for what, other in inputs:
        if _same(path, other):
            return f"{shown} is {what}; refusing to overwrite an input"
    real = os.path.realpath(path)
    if real in written:
        return f"{shown} is also written by {written[real]}"
    written[real] = option
    if mode is not None and not stat.S_ISREG(mode):
        return None  # a device or FIFO that a stream writes into: no folder involved
    if kind == "stream" and mode is not None and not os.access(path, os.W_OK):
        return f"cannot write {shown}: permission denied"
    reason = _folder_problem(Path(real).parent, create=kind == "file")
    return None if reason is None else f"cannot write {shown}: {reason}"


def _folder_problem(folder: Path, create: bool = True) -> str | None:
    """Why files cannot be written into `folder` (created when missing if `create`), or None."""
    probe = folder
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{str(probe)!r} is not a folder"
    if probe != folder and not create:
        return f"no folder {str(folder)!r}"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"folder {str(probe)!r} is not writable"
    return None


def _same(path: Path, other: Path) -> bool:
    """The same file: by inode when both exist (links, `..`), else by resolved path."""
    try:
        return os.path.samefile(path, other)
    except OSError:
        return path.resolve() == other.resolve()
