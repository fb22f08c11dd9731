"""Slurm's strings: hostlists, ranges, GRES/TRES GPU counts, per-node GPU detail, dependencies.

Pure parsers of the text fields squeue and sacct write, apart from the payloads' structure
(`importers/slurm/reader.py`), so that each can be tested on its own; each raises ValueError
naming what it could not read.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from horizon_opt.model.spec import MAX_NODES, show


def expand_ranges(text: str, limit: int = MAX_NODES) -> list[str]:
    """`"01-03,7"` -> `["01", "02", "03", "7"]`; a range keeps the width of its first bound
    (Slurm's zero padding), `"0-15:4"` steps. ValueError when it is not such a list or holds
    more than `limit` items."""
    out: list[str] = []
    for item in text.split(","):
        item = item.strip()
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?", item)
        if m is None:
            raise ValueError(f"not a number or a range: {show(item)}")
        lo, hi, step = m.group(1), m.group(2), m.group(3)
        if len(lo) > 18 or len(hi or "") > 18:
            raise ValueError(f"number too large in {show(item)}")
        if hi is None:
            out.append(lo)
        else:
            a, b, k = int(lo), int(hi), int(step or 1)
            if b < a or k < 1:
                raise ValueError(f"empty range {show(item)}")
            if len(out) + (b - a) // k + 1 > limit:
                raise ValueError(f"more than {limit:,} items")
            out.extend(f"{i:0{len(lo)}d}" for i in range(a, b + 1, k))
        if len(out) > limit:
            raise ValueError(f"more than {limit:,} items")
    return out


def _split_top(text: str) -> list[str]:
    """Split at the commas that are outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise ValueError("nested brackets")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("']' without '['")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError("'[' without ']'")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def expand_hostlist(text: str, limit: int = MAX_NODES) -> list[str]:
    """A Slurm hostlist as host names, in order: `"gpu-h100-[01-02,05],cpu-1"` ->
    `gpu-h100-01, gpu-h100-02, gpu-h100-05, cpu-1`; several bracket groups multiply
    (`"r[1-2]n[1-2]"` -> `r1n1, r1n2, r2n1, r2n2`). ValueError when it is not one."""
    hosts: list[str] = []
    for piece in _split_top(text):
        options: list[list[str]] = []
        for part in re.split(r"(\[[^\[\]]*\])", piece):
            if part.startswith("["):
                options.append(expand_ranges(part[1:-1], limit))
            elif part:
                options.append([part])
        size = math.prod(len(o) for o in options)
        if len(hosts) + size > limit:
            raise ValueError(f"more than {limit:,} hosts")
        hosts.extend("".join(p) for p in itertools.product(*options))
    return hosts


@dataclass(frozen=True)
class Gpus:
    """GPUs named by a GRES/TRES string: how many, and the GPU types it names."""

    count: int
    types: frozenset[str] = frozenset()


def parse_gpus(text: str) -> Gpus | None:
    """The GPUs of a TRES/GRES list, None when it names none.

    Items are separated by commas; a GPU item is `gres/gpu`, `gres:gpu` or `gpu`, then an
    optional type and count after `:` or `=`: `gres/gpu:8`, `gres/gpu=8`, `gres/gpu:h100:4`,
    `gres/gpu:h100=4` (TRES strings), `gpu:8`, `gres/gpu` (one). A TRES string that lists both
    the total (`gres/gpu=8`) and the typed counts (`gres/gpu:h100=8`) counts the total once;
    typed counts alone add up. ValueError when a GPU item is not one of these forms.
    """
    untyped: list[int] = []
    typed: list[tuple[str, int]] = []
    for raw in text.split(","):
        item = raw.strip()
        m = re.fullmatch(r"(?:gres[/:])?gpu(?:[:=](.*))?", item)
        if m is None:
            continue
        tokens = re.split(r"[:=]", m.group(1)) if m.group(1) is not None else []
        count = 1
        if tokens and re.fullmatch(r"[0-9]{1,12}", tokens[-1]):
            count = int(tokens.pop())
        if len(tokens) > 1 or (tokens and not re.fullmatch(r"[A-Za-z0-9_.\-]+", tokens[0])):
            raise ValueError(f"not a GPU count: {show(item)}")
        if tokens:
            typed.append((tokens[0], count))
        else:
            untyped.append(count)
    if not untyped and not typed:
        return None
    total = sum(untyped) if untyped else sum(c for _, c in typed)
    return Gpus(total, frozenset(t for t, _ in typed))


@dataclass(frozen=True)
class NodeGpus:
    """One node's entry of `gres_detail`: GPUs held, their indices when Slurm says."""

    count: int
    indices: tuple[int, ...] | None
    types: frozenset[str] = frozenset()


def parse_gres_detail(text: str) -> NodeGpus:
    """One entry of a running job's `gres_detail` (one per allocated node):
    `gpu:h100:4(IDX:0-3)`, `gpu:2(IDX:0,2)`, `gpu(CNT:4)`, `gpu:h100:4(IDX:0-3),nic:1(IDX:0)`;
    a node without GPUs has count 0. ValueError when its GPU item is not one of these forms."""
    count, indices, types, known = 0, [], set(), True
    matched = False
    for m in re.finditer(r"([^,()]+)\(([^)]*)\)", text):
        matched = True
        parts = m.group(1).strip().split(":")
        if parts[0] != "gpu":
            continue
        n: int | None = None
        if len(parts) > 1 and re.fullmatch(r"[0-9]{1,12}", parts[-1]):
            n = int(parts.pop())
        if len(parts) > 2:
            raise ValueError(f"not a GPU entry: {show(text)}")
        if len(parts) == 2:
            types.add(parts[1])
        inner = m.group(2).strip()
        if inner.startswith("IDX:"):
            body = inner[4:].strip()
            idx = [] if body in ("", "N/A") else [int(i) for i in expand_ranges(body, 1_024)]
            indices += idx
            count += n if n is not None else len(idx)
        elif inner.startswith("CNT:") and inner[4:].strip().isdigit():
            known = False
            count += int(inner[4:].strip())
        else:
            raise ValueError(f"not a GPU entry: {show(text)}")
    if not matched:
        plain = parse_gpus(text)
        return NodeGpus(0, None) if plain is None else NodeGpus(plain.count, None, plain.types)
    ok = known and len(indices) == count and len(set(indices)) == count
    return NodeGpus(count, tuple(sorted(indices)) if ok else None, frozenset(types))


@dataclass(frozen=True)
class Dependency:
    """One item of a job's `dependency`: its type, the job it names (`"12"`, `"12_3"`,
    `"12_*"`; empty for singleton), the state Slurm gives it, and a `+minutes` delay."""

    kind: str
    target: str
    state: str = "unfulfilled"
    delay: int = 0


def parse_dependency(text: str) -> tuple[list[Dependency], bool]:
    """A job's `dependency` as Slurm shows it (`afterok:12(unfulfilled),afterany:13_*`, and as
    submitted: `afterok:12:13?singleton`): its items and whether they are alternatives (`?`:
    any one suffices) rather than all required (`,`). ValueError when an item is not
    `type[:job[+minutes]]...[(state)]`."""
    text = text.strip()
    if text in ("", "(null)"):
        return [], False
    either = "?" in text
    out: list[Dependency] = []
    for item in re.split(r"[,?]", text):
        item = item.strip()
        if not item:
            continue
        m = re.fullmatch(r"([a-z_]+)((?::[^:()]+)*)(?:\(([a-z]+)\))?", item)
        if m is None:
            raise ValueError(f"not a dependency: {show(item)}")
        kind, targets, state = m.group(1), m.group(2), m.group(3) or "unfulfilled"
        if not targets:
            out.append(Dependency(kind, "", state))
            continue
        for target in targets[1:].split(":"):
            t = re.fullmatch(r"([0-9]+(?:_(?:[0-9]+|\*))?)(?:\+([0-9]+))?", target.strip())
            if t is None:
                raise ValueError(f"not a job id in {show(item)}: {show(target)}")
            out.append(Dependency(kind, t.group(1), state, int(t.group(2) or 0)))
    return out, either
