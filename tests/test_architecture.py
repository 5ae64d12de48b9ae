"""The package's layers run one way (issue 17): read every module's imports with ``ast``.

Layers, lowest first: a module may import its own layer and lower ones, never a higher one,
not even lazily inside a function. Higher layers reach lower ones through
:mod:`flexman.model.engine` slots that :mod:`flexman.wiring` fills.
"""
from __future__ import annotations

import ast
import collections
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "src" / "flexman"

LAYERS = {
    "lazy": 0, "outputs": 0, "version": 0, "extras": 0,
    "model": 1,
    "trajectory": 2, "discretize": 2,
    "dynamics": 3,
    "symbolic": 4,
    "codegen": 5,
    "simulate": 6, "analysis": 6, "control": 6, "sensors": 6, "closure": 6, "sweeps": 6, "planning": 6,
    "viz": 7,
}
TOP = 8  # the package itself, wiring, the command line, examples, literature, oracles


def _modules():
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _imports(module, path):
    """(target module, imported name, line) for every flexman import of one module."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "flexman":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                yield (full if full in MODULES else target), alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "flexman":
                    yield alias.name, None, node.lineno


def _layer(module):
    parts = module.split(".")
    return LAYERS.get(parts[1], TOP) if len(parts) > 1 else TOP


GRAPH = {m: list(_imports(m, p)) for m, p in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module):
    upward = [f"{module}:{line} imports {target} (layer {_layer(target)} > {_layer(module)})"
              for target, _, line in GRAPH[module] if _layer(target) > _layer(module)]
    assert not upward, "\n".join(upward)


def test_no_underscore_name_across_modules():
    found = [f"{m}:{line} imports {name} from {target}"
             for m, edges in GRAPH.items() for target, name, line in edges
             if name and name.startswith("_") and not name.startswith("__") and target != m]
    assert not found, "\n".join(found)


def test_production_never_imports_the_oracles():
    found = [f"{m}:{line} imports {target}" for m, edges in GRAPH.items()
             if not m.startswith("flexman.oracles") and not m.startswith("flexman.literature")
             for target, _, line in edges if target.startswith("flexman.oracles")]
    assert not found, "\n".join(found)


def test_no_import_cycle_between_modules():
    """Module-level and lazy imports together form a graph without cycles (a package's
    ``__init__`` re-exporting its own modules is not a cycle)."""
    edges = collections.defaultdict(set)
    for m, targets in GRAPH.items():
        for target, _, _ in targets:
            if target != m and target in MODULES and not m.startswith(target + "."):
                edges[m].add(target)
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(MODULES):
        if node not in state:
            visit(node)
    assert not cycles, "\n".join(cycles)


def test_sources_cite_no_document_outside_the_repository():
    repo = ROOT.parents[1]
    files = [p for top in ("src", "tests", "bench", "docs", "examples") for p in (repo / top).rglob("*")
             if p.suffix in (".py", ".md", ".yaml", ".toml", ".json") and p.name != "test_architecture.py"]
    found = [str(p.relative_to(repo)) for p in files + [repo / "README.md"]
             if "DESIGN.md" in p.read_text(errors="replace") or "../shared" in p.read_text(errors="replace")]
    assert not found, found


def test_no_public_name_of_a_package_is_replaced_by_one_of_its_modules():
    """A package's public name that is also the name of one of its modules is replaced by the
    module when that module is first imported (as a sibling may, later): so
    ``fm.analysis.reduction_convergence(...)`` stopped being the function after a first use of
    ``fm.analysis.convergence(quantity="reduction")``. Such a name is safe only when the module is
    imported with the package and the name defined after it (``fm.simulate``)."""
    import importlib
    import sys
    import types

    clashes = []
    for init in sorted(ROOT.rglob("__init__.py")):
        package = ".".join(("flexman",) + init.parent.relative_to(ROOT).parts)
        modules = {p.stem for p in init.parent.glob("*.py")} | {p.name for p in init.parent.iterdir()
                                                                 if (p / "__init__.py").exists()}
        pkg = importlib.import_module(package)
        for name in sorted(set(getattr(pkg, "__all__", ())) & modules):
            if f"{package}.{name}" not in sys.modules or isinstance(getattr(pkg, name), types.ModuleType):
                clashes.append(f"{package}.{name}")
    assert not clashes, f"rename the modules of these public names: {clashes}"
