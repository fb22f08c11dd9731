"""No module of the package imports a module that imports it back, directly or through others,
and no module imports from a layer above its own (docs/design.md, "Module map").

Every import counts: at the top, inside functions, and under `TYPE_CHECKING`. A cycle makes the
import order matter and hides which module depends on which.
"""

from __future__ import annotations

import ast
from pathlib import Path

import horizon_opt

ROOT = Path(horizon_opt.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import mod` depends on pkg.mod when that is a module
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names
                ]
            graph[name].update(t for t in targets if t in paths and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_function_local_imports() -> None:
    # the registry imports cpsat (and so ortools) only inside the function that runs it
    registry = import_graph()["horizon_opt.solvers.registry"]
    assert any(t.startswith("horizon_opt.solvers.cpsat") for t in registry)


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The layers, lowest first (docs/design.md); everything else is an application on top of them.
LAYERS = (
    (
        "horizon_opt.errors",
        "horizon_opt.io",
        "horizon_opt.times",
        "horizon_opt.params",
        "horizon_opt.version",
    ),
    ("horizon_opt.model",),
    ("horizon_opt.plans",),
    ("horizon_opt.solvers", "horizon_opt.relaxation"),
    ("horizon_opt.analysis", "horizon_opt.loop"),
)


def layer(module: str) -> int:
    for k, packages in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in packages):
            return k
    return len(LAYERS)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    graph = import_graph()
    upward = [
        f"{m} -> {t}"
        for m, targets in sorted(graph.items())
        if m != "horizon_opt"  # the public API gathers every layer
        for t in sorted(targets)
        if layer(t) > layer(m) or t == "horizon_opt"
    ]
    assert upward == []
    assert layer("horizon_opt.plans.plan") < layer("horizon_opt.solvers.cpsat.solver")
