"""The package's shape, read from its source with ``ast`` (nothing of it is imported):

(a) no module over 400 lines, no function over 80 (``def`` to its last line); (b) no private
name (``_x``) taken from another module of the package; (c) no import cycle among modules,
counting the imports inside functions too (only ``if TYPE_CHECKING:`` blocks are left out),
and every import inside a function of one of the package's own modules justified by a heavy
library its target pulls in; (d) the layers point one way.

Each failure lists every offender as ``path:line``, so one run shows the whole list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "pytest_kreplica"
ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400
MAX_FUNCTION_LINES = 80
#: third-party libraries too heavy to import at plugin start (seconds, or a JVM, or a daemon)
HEAVY = {"pyspark", "kafka", "docker", "matplotlib", "pyarrow", "pandas", "numpy", "py4j"}
#: ... plus those the plugin module itself must not load either (test_plugin.py
#: ``test_plugin_import_stays_light``): a lazy import of a module that pulls one in is needed
LAZY = HEAVY | {"yaml", "psutil", "allpairspy", "hypothesis"}


@dataclass(frozen=True)
class Import:
    target: str  # a module of the package, or a third-party top-level name
    line: int
    names: tuple[str, ...] = ()  # for ``from target import names``


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    top: list[Import] = field(default_factory=list)  # run when the module is imported
    inner: list[Import] = field(default_factory=list)  # inside a function body
    private_uses: list[tuple[int, str]] = field(default_factory=list)
    functions: list[tuple[int, str, int]] = field(default_factory=list)  # line, name, lines

    @property
    def rel(self) -> str:
        return str(self.path.relative_to(ROOT))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(body: list[ast.stmt], in_function: bool) -> Iterator[tuple[ast.AST, bool]]:
    """Every node with whether it runs inside a function; ``if TYPE_CHECKING:`` bodies never
    run, so they are left out."""
    for node in body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.orelse, in_function)
            continue
        yield node, in_function
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                          | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _walk([child], inner)
            else:
                for sub in ast.walk(child):
                    yield sub, inner or isinstance(sub, ast.Lambda)


@cache
def modules() -> dict[str, Module]:
    found = {_module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}
    result = {}
    for name, path in found.items():
        text = path.read_text(encoding="utf-8")
        mod = Module(name, path, len(text.splitlines()), functions=function_lengths(text))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        bound: dict[str, str] = {}  # local name -> package module it refers to
        for node, in_function in _walk(ast.parse(text).body, False):
            imports: list[Import] = []
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _resolve(alias.name, found)
                    imports.append(Import(target, node.lineno))
                    if alias.asname and target in found:
                        bound[alias.asname] = target
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in found:  # ``from pkg import submodule``
                        imports.append(Import(sub, node.lineno))
                        bound[alias.asname or alias.name] = sub
                    else:
                        imports.append(Import(_resolve(base, found), node.lineno,
                                              (alias.name,)))
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in bound and _private(node.attr)
                  and bound[node.value.id] != name):
                mod.private_uses.append((node.lineno, f"{bound[node.value.id]}.{node.attr}"))
            (mod.inner if in_function else mod.top).extend(imports)
        for imp in mod.top + mod.inner:
            for imported in imp.names:
                if imp.target in found and imp.target != name and _private(imported):
                    mod.private_uses.append((imp.line, f"{imp.target}.{imported}"))
        result[name] = mod
    return result


def function_lengths(text: str) -> list[tuple[int, str, int]]:
    """(line, qualified name, lines from ``def`` to its last line) of every function, nested
    ones and methods included."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualified = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append((child.lineno, qualified,
                                  child.end_lineno - child.lineno + 1))
                visit(child, qualified + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return found


def _resolve(dotted: str, found: dict[str, Path]) -> str:
    """The package module an import runs (the longest known prefix), or the third-party
    top-level name."""
    if dotted != PACKAGE and not dotted.startswith(PACKAGE + "."):
        return dotted.split(".")[0]
    parts = dotted.split(".")
    while parts and ".".join(parts) not in found:
        parts.pop()
    return ".".join(parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def graph(include_inner: bool = False) -> dict[str, set[str]]:
    mods = modules()
    return {name: {i.target for i in (m.top + m.inner if include_inner else m.top)
                   if i.target in mods and i.target != name}
            for name, m in mods.items()}


def closure(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


@cache
def heavy_modules(libraries: frozenset[str] = frozenset(HEAVY)) -> dict[str, str]:
    """Package module -> the library of ``libraries`` its module-level imports pull in."""
    mods, edges = modules(), graph()
    heavy = {}
    for name in mods:
        for reached in {name} | closure(name, edges):
            libs = {i.target for i in mods[reached].top} & libraries
            if libs:
                heavy[name] = f"{sorted(libs)[0]} (via {reached})"
                break
    return heavy


def _where(mod: Module, line: int) -> str:
    return f"{mod.rel}:{line}"


# ------------------------------------------------------------------------------ (a)
def test_no_module_over_400_lines():
    long = [f"{m.rel}: {m.lines} lines" for m in modules().values() if m.lines > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def test_no_function_over_80_lines():
    """A longer function is a list of steps waiting to be named: split it into them."""
    long = [f"{_where(m, line)}: {qualified} has {n} lines" for m in modules().values()
            for line, qualified, n in m.functions if n > MAX_FUNCTION_LINES]
    assert not long, (f"functions over {MAX_FUNCTION_LINES} lines (def to last line):\n"
                      + "\n".join(sorted(long)))


# ------------------------------------------------------------------------------ (b)
def test_no_private_name_from_another_module():
    uses = {f"{_where(m, line)}: {what}" for m in modules().values()
            for line, what in m.private_uses}
    assert not uses, ("private names used across modules (make them public where shared, "
                      "or move them):\n" + "\n".join(sorted(uses)))


# ------------------------------------------------------------------------------ (c)
def test_no_import_cycle():
    """An import inside a function only postpones a cycle to the first call: it counts too.
    A cycle is broken by moving the shared piece into a module both import, or by passing
    a value or callable down instead of importing up."""
    found = cycles(graph(include_inner=True))
    assert not found, "import cycles (in-function imports included):\n" + "\n".join(
        f"{' <-> '.join(c)}\n    {'; '.join(cycle_edges(c))}" for c in found)


def cycle_edges(component: list[str]) -> list[str]:
    """The imports (``path:line -> module``) that close a cycle's component, so a failure
    shows where to cut."""
    mods, inside = modules(), set(component)
    return sorted({f"{_where(mods[n], i.line)} -> {i.target}"
                   f"{' (in a function)' if i in mods[n].inner else ''}"
                   for n in component for i in mods[n].top + mods[n].inner
                   if i.target in inside and i.target != n})


def test_in_function_imports_of_own_modules_are_needed():
    """An import inside a function is for a target that pulls in a heavy library (``LAZY``);
    any other is a module-level import waiting to be moved (a cycle is no reason: it is one
    either way)."""
    mods, heavy = modules(), heavy_modules(frozenset(LAZY))
    needless = set()
    for mod in mods.values():
        for imp in mod.inner:
            if imp.target not in mods or imp.target == mod.name or imp.target in heavy:
                continue
            if imp.target == PACKAGE:
                continue  # the package root is lazy by design
            needless.add(f"{_where(mod, imp.line)}: {imp.target}")
    assert not needless, ("in-function imports of light package modules (import them at module "
                          "level):\n" + "\n".join(sorted(needless)))


def test_the_checker_sees_cycles_private_names_and_long_functions():
    """The helpers above can fail: a planted two-module cycle, a private import and an
    81-line function are found; an import under ``if TYPE_CHECKING:`` is not an edge."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert _private("_options") and not _private("__version__") and not _private("options")
    body = "".join(f"    x{i} = {i}\n" for i in range(79))
    planted = f"class C:\n    def m(self):\n        def inner():\n            pass\n" \
              f"def f():\n{body}    return x0\n"
    assert function_lengths(planted) == [(2, "C.m", 3), (3, "C.m.inner", 2), (5, "f", 81)]
    walked = [(n.names[0].name, inner) for n, inner in _walk(ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
        "def f():\n    import b\n").body, False) if isinstance(n, ast.Import)]
    assert walked == [("b", True)]


# ------------------------------------------------------------------------------ (d)
FOUNDATION = ("errors", "history", "history_parts", "waits", "once", "yaml_strict")
#: package (or foundation module) -> packages it must never import, even inside a function
FORBIDDEN = {
    **{f: ("cluster", "matrix", "faults", "workloads", "scenarios", "validation", "report",
           "results", "plugin", "cli") for f in FOUNDATION},
    "cluster": ("matrix", "faults", "workloads", "scenarios", "validation", "report", "results",
                "plugin", "cli"),
    "validation": ("faults", "workloads", "scenarios", "results", "plugin", "cli"),
    "faults": ("workloads", "scenarios", "results", "plugin", "cli"),
    "matrix": ("faults", "workloads", "validation", "report", "results", "plugin", "cli"),
    "report": ("workloads", "scenarios", "results", "plugin", "cli"),
    # the results store sits above the report (it reads verdict.json) and below the plugin
    "results": ("cluster", "faults", "workloads", "scenarios", "plugin", "cli"),
    # what produces and reads during a case: below the runner that drives it
    "workloads": ("scenarios", "validation", "report", "results", "plugin", "cli"),
    "scenarios": ("results", "plugin", "cli"),
}


#: registries a lower layer may read: vocabularies, import-light (the matrix checks failure
#: names against FAILURES and clients against CLIENTS, the loss evidence asks a failure
#: whether it moves leadership)
SHARED_REGISTRIES = (f"{PACKAGE}.faults.registry", f"{PACKAGE}.faults.failure",
                     f"{PACKAGE}.workloads")


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_point_one_way(layer):
    wrong = set()
    for mod in modules().values():
        if _layer(mod.name) != layer:
            continue
        for imp in mod.top + mod.inner:
            if imp.target in SHARED_REGISTRIES:
                continue
            if _layer(imp.target) in FORBIDDEN[layer] and imp.target.startswith(PACKAGE):
                wrong.add(f"{_where(mod, imp.line)}: {imp.target}")
    assert not wrong, f"{layer} imports a layer above it:\n" + "\n".join(sorted(wrong))


#: the backend folders of cluster/: each builds on the top of cluster/, kafka/, admin/ and the
#: facility registry, never on another backend
BACKEND_FOLDERS = ("process", "docker", "external")


def _backend_folder(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 3 and parts[1] == "cluster" and parts[2] in BACKEND_FOLDERS:
        return parts[2]
    return None


def test_backends_do_not_import_each_other():
    mods = modules()
    assert {b for n in mods if (b := _backend_folder(n))} == set(BACKEND_FOLDERS)
    wrong = sorted(f"{_where(mod, imp.line)}: {imp.target}" for mod in mods.values()
                   if (own := _backend_folder(mod.name)) for imp in mod.top + mod.inner
                   if _backend_folder(imp.target) not in (None, own))
    assert not wrong, "a backend imports another backend's folder:\n" + "\n".join(wrong)


ENGINE = f"{PACKAGE}.validation.engine"


def test_the_spark_engine_imports_no_verdict():
    """validation/engine/ is the Spark the verdict runs on: it must not import the checker,
    the verifier or the verdict modules beside it (they import it)."""
    mods = modules()
    assert any(n.startswith(ENGINE + ".") for n in mods), "no validation/engine/ modules"
    wrong = sorted(f"{_where(mod, imp.line)}: {imp.target}" for mod in mods.values()
                   if mod.name.startswith(ENGINE) for imp in mod.top + mod.inner
                   if imp.target.startswith(f"{PACKAGE}.validation")
                   and not imp.target.startswith(ENGINE))
    assert not wrong, "the Spark engine imports the verdict:\n" + "\n".join(wrong)


@pytest.mark.parametrize("light", [f"{PACKAGE}.matrix", f"{PACKAGE}.plugin",
                                   f"{PACKAGE}.scenarios", f"{PACKAGE}.workloads",
                                   f"{PACKAGE}.cluster"])
def test_light_entry_points_import_nothing_heavy(light):
    """The plugin (imported at every pytest start) and what it reads at collection (matrix,
    the scenario and backend registries) load no heavy library at import, nor the few the
    plugin's own import avoids (``LAZY``)."""
    mods, edges, heavy = modules(), graph(), heavy_modules(frozenset(LAZY))
    reached = {light} | closure(light, edges)
    if light.endswith(".matrix"):  # all of the matrix package, not just its __init__
        reached |= {n for n in mods if n.startswith(light + ".")}
    bad = sorted(f"{mods[n].rel} pulls in {heavy[n]}" for n in reached if n in heavy)
    assert not bad, f"{light} must stay light:\n" + "\n".join(bad)


def test_package_root_imports_no_module_at_import():
    root = modules()[PACKAGE]
    own = [f"{_where(root, i.line)}: {i.target}" for i in root.top
           if i.target.startswith(PACKAGE)]
    assert not own, "pytest_kreplica/__init__.py must load its names lazily:\n" + "\n".join(own)


def test_test_file_names_are_unique_outside_packages():
    """Test folders without ``__init__.py`` import their modules by basename: two files of
    one name there break the collection of the whole suite (it happened at a merge)."""
    tests = Path(__file__).resolve().parents[1]
    seen: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        if not (path.parent / "__init__.py").exists():
            seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test files sharing a name outside packages: {clashes}"
