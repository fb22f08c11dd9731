"""Every Python example in README.md and docs/ runs as written, from the repository root: a
file's blocks run in order in one namespace (a later block uses what an earlier one made), in a
scratch folder that sees the repository's instances/ (the examples write their files there)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(doc: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)


WITH_EXAMPLES = [d for d in DOCS if python_blocks(d)]


def test_the_docs_have_python_examples() -> None:
    assert {d.name for d in WITH_EXAMPLES} >= {"README.md", "generator.md"}


@pytest.mark.parametrize("doc", WITH_EXAMPLES, ids=[d.name for d in WITH_EXAMPLES])
def test_python_examples_run_as_written(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "instances").symlink_to(ROOT / "instances")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    for k, block in enumerate(python_blocks(doc)):
        code = compile(block, f"{doc.name} python block {k}", "exec")
        exec(code, namespace)  # the documentation's own examples
    assert os.listdir(tmp_path)  # the examples wrote their files here, not into the checkout
