"""Hooks of the docs site (mkdocs.yml): the repository's benchmark results as a page.

benchmarks/README.md lives beside the benchmarks, outside docs/, so the guides' links to it
(`../benchmarks/README.md`) and the API pages' mentions of it pointed at nothing on the site.
It is published as the page `benchmarks.md` (its links to the guides made relative to the
site), and those links and mentions lead there. Its links to other repository files (results,
scripts) stay as they are: valid where the docs are read on the repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from griffe import Docstring, Extension
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent
PAGE = "benchmarks.md"
GUIDE_LINK = re.compile(r"\]\(\.\./benchmarks/README\.md(#[^)]*)?\)")
TO_DOCS = re.compile(r"\]\(\.\./docs/([^)]*)\)")
MENTION = re.compile(r"(?<![/\w\"'>])benchmarks/README\.md\b")


def on_files(files: Files, config: Any) -> Files:
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    text = TO_DOCS.sub(r"](\1)", text)
    text = text.replace("](results/)", "](results/README.md)")
    text = text.replace("](results/", "](../benchmarks/results/")  # repository files, as above
    files.append(File.generated(config, PAGE, content=text))
    return files


def _up(page: Any) -> str:
    return "../" * page.file.src_uri.count("/")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    up = _up(page)
    return GUIDE_LINK.sub(lambda m: f"]({up}{PAGE}{m.group(1) or ''})", markdown)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Docstrings name benchmarks/README.md as text: on the API pages it becomes a link."""
    if not page.file.src_uri.startswith("api/"):
        return html
    href = "../" * (page.url.count("/")) + "benchmarks/"
    return MENTION.sub(f'<a href="{href}">benchmarks/README.md</a>', html)


class CommentDocstrings(Extension):
    """A griffe extension (mkdocs.yml, mkdocstrings' `extensions`): a class field without a
    docstring takes the comment that describes it in the source, on its own line
    (`workers: int = 2  # CP-SAT search workers`) or the comment lines just above it, so the
    API pages give each field of a dataclass its meaning."""

    def on_attribute_instance(self, *, node: Any, attr: Any, agent: Any, **kwargs: Any) -> None:
        if attr.docstring is not None or not attr.parent.is_class or attr.lineno is None:
            return
        try:
            lines = Path(attr.filepath).read_text(encoding="utf-8").splitlines()
        except (OSError, TypeError):
            return
        k = attr.lineno - 1
        if k >= len(lines):
            return
        text = _own_comment(lines, k) or _comment_above(lines, k)
        if text:
            attr.docstring = Docstring(text, parent=attr)


def _is_comment(line: str) -> bool:
    return line.strip().startswith("# ")


def _own_comment(lines: list[str], k: int) -> str:
    """The comment on line `k`, with the comment lines that continue it: those after it when
    the line after them has a comment of its own (else they describe that line)."""
    same = lines[k].partition("  # ")[2].strip()
    if not same:
        return ""
    end = k + 1
    while end < len(lines) and _is_comment(lines[end]):
        end += 1
    if end > k + 1 and end < len(lines) and "  # " in lines[end]:
        same += " " + " ".join(line.strip()[2:] for line in lines[k + 1 : end])
    return same


def _comment_above(lines: list[str], k: int) -> str:
    above: list[str] = []
    while k > 0 and _is_comment(lines[k - 1]):
        above.insert(0, lines[k - 1].strip()[2:])
        k -= 1
    return " ".join(above)
