"""No import cycles among the project's modules: every `import` and `from ... import` (module level and inside
functions alike, as both run; `if TYPE_CHECKING:` blocks excluded, as they never run) is an edge, and the
graph's strongly connected components must be single modules. The layers of ARCHITECTURE.md hold (`LAYERS`,
read from its table): util <- isa <- codegen <- jitgemm and isa <- emu <- jitgemm; emu reads code objects
(codegen.codeobj's reader and launch ABI) but never imports a generator or the API."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"jitgemm": REPO / "jitgemm", "jitgemm.util": REPO / "util", "jitgemm.isa": REPO / "isa",
         "jitgemm.codegen": REPO / "codegen"}


def _layer_table() -> tuple[dict[str, tuple[str, tuple[str, ...]]], dict[str, set[str]]]:
    """The layer table of ARCHITECTURE.md (the rows between its `<!-- layers` and `<!-- /layers -->` markers):
    layer -> (module prefix, the layers it may import), and the single modules a layer may import beyond them.
    One source for the map people read and the rule this test enforces."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    body = text[text.index("<!-- layers"):text.index("<!-- /layers -->")]
    layers: dict[str, tuple[str, tuple[str, ...]]] = {}
    exceptions: dict[str, set[str]] = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].startswith("`"):
            continue
        name, prefix = cells[0], cells[1].strip("`")
        allowed = [a.strip().strip("`") for a in cells[2].split(",") if a.strip()]
        layers[name] = (prefix, tuple(a for a in allowed if "." not in a))
        exceptions[name] = {a for a in allowed if "." in a}
    return layers, exceptions


LAYERS, EXCEPTIONS = _layer_table()


def layer_of(module: str) -> str | None:
    for name, (prefix, _) in LAYERS.items():
        if module == prefix or module.startswith(prefix if prefix.endswith(".") else prefix + "."):
            return name
    return None


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
    assert not reach & {"jitgemm.isa.disasm.printer", "jitgemm.isa.disasm.decoder", "jitgemm.isa.spec.forms"}, \
        sorted(reach)


def test_the_layer_table_is_read():
    assert list(LAYERS) == ["util", "isa", "codegen", "emu", "jitgemm"], LAYERS
    assert LAYERS["emu"][1] == ("isa", "util") and "jitgemm.codegen.codeobj.reader" in EXCEPTIONS["emu"]
    assert LAYERS["util"][1] == ()


def test_every_module_has_a_layer():
    assert not [m for m in _modules() if m != "jitgemm" and layer_of(m) is None]
    assert layer_of("jitgemm.emu.strict") == "emu" and layer_of("jitgemm.isa.hazards") == "isa"
    assert layer_of("jitgemm.codegen.codeobj.reader") == "codegen" and layer_of("jitgemm.selector") == "jitgemm"


def test_layers_import_downwards_only():
    """Every edge goes to the importer's own layer, a layer below it, an allowed exception, or the package root."""
    bad = []
    for mod, targets in _edges(_modules()).items():
        layer = layer_of(mod)
        if layer is None:
            continue
        allowed = {layer, *LAYERS[layer][1]}
        for t in sorted(targets):
            if t == "jitgemm" or layer_of(t) in allowed or t in EXCEPTIONS.get(layer, ()):
                continue
            bad.append(f"{mod} ({layer}) imports {t} ({layer_of(t)})")
    assert not bad, "\n".join(bad)


def test_the_emulator_reaches_no_generator():
    """Transitively too: what emu imports (the code-object reader included) never leads to a generator, the
    emitter or the API."""
    edges = _edges(_modules())
    reach, todo = set(), [m for m in edges if layer_of(m) == "emu"]
    while todo:
        for t in edges[todo.pop()] - reach:
            reach.add(t)
            todo.append(t)
    bad = {m for m in reach if layer_of(m) == "jitgemm" or (layer_of(m) == "codegen" and
                                                             not m.startswith("jitgemm.codegen.codeobj"))}
    assert not bad, sorted(bad)
