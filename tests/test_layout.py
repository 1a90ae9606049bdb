"""The package's layout is its architecture: the sub-packages import each
other in one direction only (docs/design.md, "Where things are").

Every import statement of the package is read from the source (also those
inside functions), so the test needs no MLIR and sees imports that run late.
"""
from __future__ import annotations

import ast
import pathlib
from collections import defaultdict

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "numba_mlir_gpu"
PACKAGE = ROOT.name

# What each sub-package may import besides itself and the private modules
# at the top (_libs, _mlir). The core of the lowering is below the rules,
# the parallel machinery and the targets; the compiler puts them together;
# the Numba side calls the compiler.
ALLOWED = {
    "runtime": set(),
    "lowering": set(),
    "parallel": {"lowering"},
    "rules": {"lowering", "parallel"},
    "targets": {"lowering", "parallel", "runtime"},
    "compiler": {"lowering", "parallel", "rules", "targets", "runtime"},
    "frontend": {"compiler", "lowering", "targets", "runtime"},
    "testing": {"frontend", "lowering", "api", ""},      # "": the package itself
    "aot": {"api", "compiler", "frontend", "runtime"},
    "ufuncs": {"api", "frontend", "targets", "runtime"},
}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """module -> the package modules it imports (a `from X import name` of a
    submodule `name` counts as an import of X.name)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    found: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules
                           else source for alias in node.names]
            else:
                continue
            found[name].update(t for t in targets if t.split(".")[0] == PACKAGE and t != name)
    return found


def _part(module: str) -> str:
    """The sub-package (or top-level module) a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


IMPORTS = _imports()


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, targets in IMPORTS.items():
        for target in targets:
            if _part(module) != _part(target) and _part(target) not in ("", "_libs", "_mlir",
                                                                        "_version"):
                edges[_part(module)].add(_part(target))
    return edges


def find_cycle(edges: dict[str, set[str]]):
    """A cycle of `edges` as a list of nodes (first = last), or None."""
    state: dict[str, str] = {}

    def visit(node, path):
        state[node] = "open"
        for succ in sorted(edges.get(node, ())):
            if state.get(succ) == "open":
                return path[path.index(succ):] + [succ]
            if succ not in state:
                cycle = visit(succ, path + [succ])
                if cycle:
                    return cycle
        state[node] = "done"
        return None
    for node in sorted(edges):
        if node not in state:
            cycle = visit(node, [node])
            if cycle:
                return cycle
    return None


def test_no_cycle_between_subpackages():
    cycle = find_cycle(_edges())
    assert cycle is None, "import cycle between sub-packages: " + " -> ".join(cycle)


def test_the_cycle_check_finds_cycles():
    assert find_cycle({"lowering": {"rules"}, "rules": {"parallel"},
                       "parallel": {"lowering"}}) == ["lowering", "rules", "parallel", "lowering"]
    assert find_cycle({"rules": {"lowering"}, "lowering": set()}) is None


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_subpackage_imports_only_what_is_below_it(part):
    wrong = {(module, target) for module, targets in IMPORTS.items() if _part(module) == part
             for target in targets
             if _part(target) not in ALLOWED[part] | {part, "_libs", "_mlir", "_version"}}
    assert not wrong, f"{part} imports outside {sorted(ALLOWED[part])}: {sorted(wrong)}"


def test_rule_modules_do_not_import_each_other():
    rules = f"{PACKAGE}.rules"
    wrong = {(module, target) for module, targets in IMPORTS.items()
             if module.startswith(rules + ".") for target in targets
             if target.startswith(rules)}
    assert not wrong, f"rules reach other rules through the registries, not imports: {wrong}"


def test_every_rule_module_is_registered_by_the_rules_package():
    rules = f"{PACKAGE}.rules"
    modules = {_module_name(p) for p in (ROOT / "rules").glob("*.py") if p.name != "__init__.py"}
    assert modules <= IMPORTS[rules], f"not imported by rules/__init__.py: {modules - IMPORTS[rules]}"


def test_the_lowering_core_imports_no_rules():
    """Checked apart from ALLOWED so that its message names the rule: the
    core finds rules in the registries."""
    wrong = {(m, t) for m, ts in IMPORTS.items() if _part(m) == "lowering" for t in ts
             if _part(t) in ("rules", "parallel", "targets")}
    assert not wrong, wrong
