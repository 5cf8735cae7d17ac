r"""Structure checks: one-way imports, no private names imported across modules.

Every module of ``botorch_ext`` is parsed with ``ast``. Every import counts: at
module level, inside functions and under ``TYPE_CHECKING``. Relative imports are
resolved, and ``from botorch_ext.x import y`` is an import of the submodule
``botorch_ext.x.y`` where that is a module, else of ``botorch_ext.x``.
"""

from __future__ import annotations

import ast
import tempfile
import unittest
from pathlib import Path

import botorch_ext

PACKAGE_DIR = Path(botorch_ext.__file__).parent
PACKAGE = "botorch_ext"

#: Import cycles inside ``botorch_ext.runner`` that are being removed elsewhere;
#: each entry is the sorted tuple of the modules on the cycle. To be emptied.


def package_modules() -> dict[str, Path]:
    r"""Map every module name of the package to its file."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _resolve_base(name: str, path: Path, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports_of(name: str, path: Path, modules: dict[str, Path]):
    r"""Yield ``(imported module, imported name or None)`` of every import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_base(name, path, node)
            if base is None or base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    yield sub, None
                else:
                    yield base, alias.name


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    r"""Edges between package modules (self-imports left out)."""
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _ in imports_of(name, path, modules):
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    r"""The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
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
                out.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _is_private(imported: str | None) -> bool:
    if imported is None or not imported.startswith("_"):
        return False
    return not (imported.startswith("__") and imported.endswith("__"))


def private_imports(modules: dict[str, Path]) -> list[str]:
    r"""``module: from target import _name`` for every private name imported."""
    found = []
    for name, path in modules.items():
        for target, imported in imports_of(name, path, modules):
            if _is_private(imported) and target != name:
                found.append(f"{name}: from {target} import {imported}")
    return found


class TestStructure(unittest.TestCase):
    def test_the_helpers_find_a_cycle_and_a_private_import(self):
        graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
        self.assertEqual(find_cycles(graph), [("a", "b", "c")])
        self.assertEqual(find_cycles({"a": {"b"}, "b": set()}), [])

    def test_the_helpers_read_private_relative_and_nested_imports(self):
        with tempfile.TemporaryDirectory() as tmp:
            pkg = Path(tmp) / "botorch_ext" / "sub"
            pkg.mkdir(parents=True)
            (pkg / "__init__.py").write_text("")
            (pkg / "b.py").write_text("_hidden = 1\nVISIBLE = 2\n")
            (pkg / "a.py").write_text(
                "from typing import TYPE_CHECKING\n"
                "from botorch_ext.sub.b import VISIBLE, __doc__\n"
                "if TYPE_CHECKING:\n"
                "    from . import c\n"
                "def f():\n"
                "    from .b import _hidden\n"
            )
            (pkg / "c.py").write_text("def g():\n    import botorch_ext.sub.a\n")
            modules = {f"botorch_ext.sub.{n}": pkg / f"{n}.py" for n in ("a", "b", "c")}
            modules["botorch_ext.sub"] = pkg / "__init__.py"
            self.assertEqual(
                private_imports(modules),
                ["botorch_ext.sub.a: from botorch_ext.sub.b import _hidden"],
            )
            graph = import_graph(modules)
            self.assertEqual(
                graph["botorch_ext.sub.a"], {"botorch_ext.sub.b", "botorch_ext.sub.c"}
            )
            self.assertEqual(
                find_cycles(graph), [("botorch_ext.sub.a", "botorch_ext.sub.c")]
            )

    def test_imports_inside_functions_and_type_checking_count(self):
        modules = package_modules()
        path = PACKAGE_DIR / "acquisition" / "soft_kg.py"
        name = "botorch_ext.acquisition.soft_kg"
        targets = {t for t, _ in imports_of(name, path, modules)}
        # Only inside its module-level __getattr__ there.
        self.assertIn("botorch_ext.deprecation", targets)

    def test_the_eulbo_model_imports_none_of_its_fits(self):
        # The model holds data, state and posterior; the objective, options,
        # fits and joint phases take it as an argument and are never imported
        # by it (no callbacks). It imports how it starts (state) and its
        # posterior's arithmetic (predictive); state imports the inducing-point
        # allocators (inducing); these import no other EULBO module.
        graph = import_graph(package_modules())
        own = {t for t in graph["botorch_ext.eulbo.model"] if "eulbo" in t}
        self.assertEqual(
            own, {"botorch_ext.eulbo.state", "botorch_ext.eulbo.predictive"}
        )
        below = {"state": {"botorch_ext.eulbo.inducing"}, "predictive": set()}
        below["inducing"] = set()
        for lower, allowed in below.items():
            imported = graph[f"botorch_ext.eulbo.{lower}"]
            self.assertEqual({t for t in imported if "eulbo" in t}, allowed)

    def test_the_eulbo_lives_in_its_home(self):
        # Nothing below the EULBO's home (models/, optim/, acquisition/) imports
        # it: the old paths are deprecated aliases resolved by name at run time.
        graph = import_graph(package_modules())
        bad = [
            f"{a} -> {b}"
            for a, targets in graph.items()
            for b in targets
            if a.split(".")[1:2] in (["models"], ["optim"], ["acquisition"])
            and b.startswith("botorch_ext.eulbo")
        ]
        self.assertEqual(bad, [])

    def test_no_import_cycle(self):
        cycles = find_cycles(import_graph(package_modules()))
        self.assertEqual(cycles, [], f"import cycles: {cycles}")

    def test_models_do_not_import_optim(self):
        graph = import_graph(package_modules())
        bad = [
            f"{a} -> {b}"
            for a, targets in graph.items()
            for b in targets
            if a.startswith("botorch_ext.models") and b.startswith("botorch_ext.optim")
        ]
        self.assertEqual(bad, [])

    def test_acquisition_does_not_import_models(self):
        graph = import_graph(package_modules())
        bad = [
            f"{a} -> {b}"
            for a, targets in graph.items()
            for b in targets
            if a.startswith("botorch_ext.acquisition")
            and b.startswith("botorch_ext.models")
        ]
        self.assertEqual(bad, [])

    def test_no_private_name_imported_across_modules(self):
        self.assertEqual(private_imports(package_modules()), [])
