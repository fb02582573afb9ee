"""No import cycles among the project's modules: every `import` and `from ... import` (module level and inside
functions alike, as both run; `if TYPE_CHECKING:` blocks excluded, as they never run) is an edge, and the
graph's strongly connected components must be single modules. The layering isa <- codegen <- jitgemm holds:
no module of isa/ imports codegen or jitgemm's user layer, and none of codegen/ imports the user layer."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"jitgemm": REPO / "jitgemm", "jitgemm.isa": REPO / "isa", "jitgemm.codegen": REPO / "codegen"}


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg, folder in ROOTS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = path
    return mods


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                   ast.unparse(node.test) for stmt in node.body for n in ast.walk(stmt)}
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else node.module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            edges[mod].update(t for t in targets if t in mods and t != mod)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def test_the_graph_is_read():
    edges = _edges(_modules())
    assert "jitgemm.codegen.gemm_plan" in edges["jitgemm.codegen.gemm_asm"]
    assert "jitgemm.suppliers" in edges["jitgemm.selector"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_cycles():
    cycles = _cycles(_edges(_modules()))
    assert not cycles, [sorted(c) for c in cycles]


def test_instruction_objects_print_without_the_printer():
    """AsmInstruction and its operands spell themselves (the printer only lays out listings): the value module
    imports neither the printer nor the decoder, nor the forms that would lead back to it."""
    edges = _edges(_modules())
    reach, todo = set(), ["jitgemm.isa.instruction"]
    while todo:
        for t in edges[todo.pop()] - reach:
            reach.add(t)
            todo.append(t)
    assert not reach & {"jitgemm.isa.printer", "jitgemm.isa.decoder", "jitgemm.isa.forms"}, sorted(reach)


def test_layers_import_downwards_only():
    edges = _edges(_modules())
    user = {m for m in edges if m.startswith("jitgemm.") and not m.startswith(("jitgemm.isa", "jitgemm.codegen"))}
    for mod, targets in edges.items():
        if mod.startswith("jitgemm.isa"):
            assert not {t for t in targets if not t.startswith("jitgemm.isa") and t != "jitgemm"}, mod
        if mod.startswith("jitgemm.codegen"):
            assert not targets & user, (mod, targets & user)
