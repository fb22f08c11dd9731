"""Every documented example runs as written from the repository root, its files written into a
scratch folder (which sees the repository's instances/, tests/ and src/ as the root does).

- Python: each ```python block of README.md and docs/ runs alone, in a fresh namespace.
- Console: each `$ horizon-opt ...` line of a ```console block runs in order, a document's
  commands sharing one scratch folder (a later command reads what an earlier one wrote); where
  the block shows output, the command prints it (timings and sizes aside; `...` stands for any
  lines). Long solves (cpsat, the replay, a benchmark, a live cycle) are skipped, each with its
  reason, and so is a command that needs a file only a skipped command writes.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from horizon_opt.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SEEN = ("instances", "tests", "src")  # what the examples read, as from the root
QUICK = 2  # seconds: the Python examples' time limits, capped (they show no figures)


def where(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


# -- Python ----------------------------------------------------------------------------------


def python_blocks() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"```python\n(.*?)```", text, re.S):
            out.append((f"{where(doc)}:{text[: m.start()].count(chr(10)) + 1}", m.group(1)))
    return out


PYTHON = python_blocks()


def scratch(tmp: Path) -> Path:
    for name in SEEN:
        (tmp / name).symlink_to(ROOT / name)
    return tmp


WRITTEN: set[str] = set()  # what the examples wrote, as paths from the root


def written(folder: Path) -> set[str]:
    return {p.name + "/" * p.is_dir() for p in folder.iterdir() if p.name not in SEEN}


def test_the_docs_have_python_examples() -> None:
    assert {w.split(":")[0] for w, _ in PYTHON} >= {"README.md", "docs/generator.md"}


@pytest.mark.parametrize(("at", "block"), PYTHON, ids=[w for w, _ in PYTHON])
def test_a_python_example_runs_alone(
    at: str, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(scratch(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    quick = re.sub(r"time_limit=\d+(\.\d+)?", f"time_limit={QUICK}", block)
    exec(compile(quick, at, "exec"), {"__name__": "__doc_example__"})  # the docs' own code
    WRITTEN.update(written(tmp_path))


# -- console ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    doc: str
    line: int
    argv: tuple[str, ...]
    head: int | None  # `| head -N`
    shown: tuple[str, ...]  # the output the block shows (empty: none shown)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def console_commands(doc: Path) -> list[Command]:
    out: list[Command] = []
    text = doc.read_text()
    for m in re.finditer(r"```console\n(.*?)```", text, re.S):
        first = text[: m.start()].count("\n") + 2
        lines = m.group(1).splitlines()
        k = 0
        while k < len(lines):
            if not lines[k].startswith("$ horizon-opt "):
                k += 1
                continue
            at, command = first + k, lines[k][2:]
            while command.rstrip().endswith("\\"):
                k += 1
                command = command.rstrip()[:-1] + " " + lines[k].strip()
            k += 1
            shown = []
            while k < len(lines) and not lines[k].startswith("$ "):
                shown.append(lines[k].rstrip())
                k += 1
            command = command.split("  #")[0].strip()  # a trailing comment
            head = None
            if (piped := re.search(r"\|\s*head -(?:n )?(\d+)$", command)) is not None:
                head, command = int(piped.group(1)), command[: piped.start()].strip()
            argv = tuple(shlex.split(command)[1:])
            out.append(Command(where(doc), at, argv, head, tuple(shown)))
    return out


COMMANDS = [c for doc in DOCS for c in console_commands(doc)]
SYNOPSIS = re.compile(r"[A-Z]{3,}|\[|\||^-$")  # INSTANCE.yaml, [--opt], a|b: a synopsis
LONG = {
    "simulate": "the closed-loop replay re-plans many times",
    "bench": "a benchmark suite",
    "run": "a live re-planning cycle (cpsat, a state folder)",
    "compare": "compare runs cpsat",
    "replan": "replan runs cpsat",
}
QUICK_SOLVERS = {"fifo", "fifo-elastic", "greedy", "backfill", "backfill-static"}
OUTPUTS = {"-o", "--output", "--out", "--output-dir"}


def skip_reason(c: Command, folder: Path) -> str | None:
    if any(SYNOPSIS.search(a) for a in c.argv):
        return "a synopsis, not a command"
    if c.argv[0] in LONG:
        return f"long: {LONG[c.argv[0]]}"
    if c.argv[0] in ("solve", "whatif") and "--prices" not in c.argv:
        solver = c.argv[c.argv.index("--solver") + 1] if "--solver" in c.argv else "cpsat"
        if solver not in QUICK_SOLVERS:
            return f"long: a {solver} solve"
    for before, arg in zip(("", *c.argv), c.argv, strict=False):
        if before in OUTPUTS or before == ">" or arg.startswith("-"):
            continue
        if re.search(r"\.(json|yaml|csv)$", arg) and not (folder / arg).exists():
            return f"needs {arg}, which only a skipped command writes"
    return None


def masked(line: str) -> str:
    """A line without what varies from run to run: times taken, file sizes, the clock."""
    line = re.sub(r"\d+(\.\d+)? ?(s|MB)\b", "<t>", line.rstrip())
    if re.match(r"\s*(solve time|wall time)", line):
        return line.split()[0]
    return line


def agrees(shown: tuple[str, ...], printed: list[str]) -> bool:
    """The printed lines are the shown ones; where the block has a `...` line (lines left out),
    the shown lines are among the printed ones, in order."""
    want = [masked(line) for line in shown if line.strip() != "..."]
    got = [masked(line) for line in printed]
    if len(want) == len(shown):
        return want == got
    rest = iter(got)
    return all(any(line == g for g in rest) for line in want)


FOLDERS: dict[str, Path] = {}


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """One scratch folder per document, shared by its commands in order."""
    doc: str = request.node.callspec.params["command"].doc
    if doc not in FOLDERS:
        FOLDERS[doc] = scratch(tmp_path_factory.mktemp(doc.replace("/", "-")))
    return FOLDERS[doc]


def test_the_docs_have_quick_commands_to_run() -> None:
    quick = [c for c in COMMANDS if c.argv[0] in ("validate", "check", "explain", "diff")]
    assert len({c.doc for c in quick}) >= 1 and len(quick) >= 6


@pytest.mark.parametrize("command", COMMANDS, ids=[c.id for c in COMMANDS])
def test_a_documented_command_runs_as_shown(
    command: Command, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (reason := skip_reason(command, folder)) is not None:
        pytest.skip(reason)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("COLUMNS", "200")
    argv, into = list(command.argv), None
    if ">" in argv:  # a shell redirect: standard output into a file
        argv, into = argv[: argv.index(">")], argv[argv.index(">") + 1]
    result = CliRunner().invoke(app, argv)
    if into is not None:
        (folder / into).write_text(result.stdout)
    WRITTEN.update(written(folder))
    printed = result.output.splitlines()[: command.head]
    failing = any(line.startswith("error:") for line in command.shown)
    assert (result.exit_code != 0) == failing, result.output
    if command.shown:
        shown = "\n".join(command.shown)
        assert agrees(command.shown, printed), f"shown:\n{shown}\nprinted:\n{result.output}"


def test_what_the_examples_write_at_the_root_is_ignored_by_git() -> None:
    """Run after the examples above: every file or folder they wrote, had they run in the
    checkout, would be ignored (.gitignore), not left as untracked files."""
    if not WRITTEN:
        pytest.skip("run with the examples above")
    check = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        input="\n".join(sorted(WRITTEN)),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if check.returncode == 128:
        pytest.skip(f"git check-ignore failed: {check.stderr.strip()}")
    assert sorted(WRITTEN - set(check.stdout.split())) == []
