r"""Checks that documentation pages state what the code and the recorded files say."""

import ast
import csv
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
import unittest
import warnings
from pathlib import Path

import botorch_ext
from botorch_ext.eulbo.options import options_from_flat
from botorch_ext.runner.schema import FIXED_COLUMNS
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def _bibtex(path: Path) -> dict[str, dict[str, str]]:
    """BibTeX key -> fields (``entrytype`` included) of a page's bibtex blocks."""
    entries = {}
    for block in re.findall(r"```bibtex\n(.*?)```", path.read_text(), flags=re.S):
        kind, key = re.match(r"@(\w+)\{([^,]+),", block).groups()
        fields = dict(re.findall(r"^\s*(\w+)\s*=\s*\{(.*)\},?$", block, flags=re.M))
        entries[key] = {"entrytype": kind, **fields}
    return entries


def _plain(text: str) -> str:
    return " ".join(text.replace("{", "").replace("}", "").split()).lower()


def _public_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(botorch_ext.__path__, "botorch_ext.")
        if not info.name.endswith("__main__")
    ]


def _documented_assignments(module) -> set[str]:
    """Module-level names assigned under a ``#:`` comment or with a docstring after."""
    source = inspect.getsource(module)
    lines = source.splitlines()
    tree = ast.parse(source)
    names = set()
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        comment = lines[node.lineno - 2].strip().startswith("#:")
        following = tree.body[i + 1] if i + 1 < len(tree.body) else None
        docstring = (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        )
        if comment or docstring:
            names.update(targets)
    return names


def _load_docs_conf():
    spec = importlib.util.spec_from_file_location(
        "_botorch_ext_docs_conf", DOCS / "conf.py"
    )
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


class TestRunnerGuide(unittest.TestCase):
    def test_column_table_lists_the_schema_columns_in_file_order(self):
        text = (DOCS / "runner.md").read_text()
        table = text.split("| column | type | meaning |\n|---|---|---|\n", 1)[1]
        table = table.split("\n\n", 1)[0]
        listed = []
        for row in table.splitlines():
            listed += re.findall(r"`([^`]+)`", row.split("|")[1])
        fixed = [name for name in listed if not re.fullmatch(r"x(\d+|\{d-1\})", name)]
        self.assertEqual(fixed, list(FIXED_COLUMNS))
        self.assertEqual(listed[len(fixed) :], ["x0", "x{d-1}"])

    def test_own_method_example_resolves_as_the_page_says(self):
        import tempfile

        from botorch_ext.runner import methods

        (block,) = [
            b for b in _python_blocks(DOCS / "runner.md") if "class LowerCorner" in b
        ]
        spec = re.search(
            r"`--methods (my_methods:\w+)`", (DOCS / "runner.md").read_text()
        )
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "my_methods.py").write_text(block)
            sys.path.insert(0, tmp)
            try:
                names = ("lower-corner", spec.group(1), "my_methods:LowerCorner")
                method = methods.get_method(spec.group(1))
                self.assertIs(method, methods.METHODS["lower-corner"])
                # The class itself is refused with a message, not run.
                with self.assertRaisesRegex(ValueError, "is the class LowerCorner"):
                    methods.get_method("my_methods:LowerCorner")
            finally:
                sys.path.remove(tmp)
                sys.modules.pop("my_methods", None)
                for name in names:
                    methods.METHODS.pop(name, None)


class TestGettingStartedPage(unittest.TestCase):
    def test_the_python_blocks_run_as_written(self):
        # The BoTorch loop first, then the kernel, model and sampler it introduces.
        loop, components = _python_blocks(DOCS / "getting-started.md")[:2]
        namespace: dict = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(loop, "getting-started.md", "exec"), namespace)
            exec(compile(components, "getting-started.md", "exec"), namespace)
        d = namespace["train_X"].shape[-1]
        self.assertEqual(namespace["X_next"].shape, (1, d))
        self.assertEqual(namespace["fb"].batch_shape, (16,))


class TestCitingPage(unittest.TestCase):
    PAPER_PAGES = {
        "wilson2017reparameterization": "reparameterized",
        "oh2018bock": "bock",
        "maus2024approximation": "eulbo",
        "coullon2023efficient": "sgmcmc",
    }

    def test_each_paper_entry_names_the_authors_title_and_year_of_its_page(self):
        entries = _bibtex(DOCS / "citing.md")
        for key, page in self.PAPER_PAGES.items():
            with self.subTest(key=key):
                text = (DOCS / "papers" / f"{page}.md").read_text()
                byline = re.search(r"^\*(.+?)\*$", text, flags=re.M | re.S).group(1)
                authors, year, title = re.fullmatch(
                    r"(.+?) \((\d{4})\), (.+?)\.", " ".join(byline.split())
                ).groups()
                surnames = [
                    a.split(",")[0] for a in entries[key]["author"].split(" and ")
                ]
                self.assertEqual(authors.split(", "), surnames)
                self.assertEqual(entries[key]["year"], year)
                self.assertEqual(_plain(entries[key]["title"]), _plain(title))

    def test_package_entry_names_the_package_version(self):
        version = re.search(
            r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), flags=re.M
        ).group(1)
        entries = _bibtex(DOCS / "citing.md")
        self.assertEqual(set(entries), {*self.PAPER_PAGES, "botorch_ext"})
        self.assertEqual(entries["botorch_ext"]["version"], version)

    def test_pages_are_in_the_toctree_and_linked_from_the_readme(self):
        index = (DOCS / "index.md").read_text()
        self.assertRegex(index, r"\nmigration\n")
        self.assertRegex(index, r"\nciting\n")
        self.assertIn("(docs/citing.md)", (ROOT / "README.md").read_text())


class TestMigrationPage(unittest.TestCase):
    def test_the_eulbo_settings_moved_from_the_model(self):
        import torch

        before, after = _python_blocks(DOCS / "migration.md")[:2]
        train_X = torch.rand(12, 2, dtype=torch.double)
        train_Y = train_X.sum(-1, keepdim=True)
        bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
        names = {"train_X": train_X, "train_Y": train_Y, "bounds": bounds, "y": 3.0}
        with self.assertRaisesRegex(TypeError, "EULBO\\(elbo_scale"):
            exec(compile(before, "migration.md", "exec"), dict(names))
        namespace = dict(names)
        exec(compile(after, "migration.md", "exec"), namespace)
        self.assertEqual(namespace["candidates"].shape, torch.Size([1, 2]))
        model = namespace["model"]
        self.assertEqual(model.last_optimization["optimizer"], "adam-epochs")

    def test_before_code_fails_and_after_code_builds_the_same_options(self):
        before, grouped, flat, adam_fit, *_ = _python_blocks(DOCS / "migration.md")[2:]
        with self.assertRaises(TypeError):
            exec(compile(before, "migration.md", "exec"), {})
        call = next(
            node
            for node in ast.walk(ast.parse(before))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "EULBOOptions"
        )
        settings = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
        self.assertIn("joint_optimizer", settings)
        namespaces = []
        for code in (grouped, flat):
            namespace: dict = {}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(compile(code, "migration.md", "exec"), namespace)
            namespaces.append(namespace)
            deprecated = [w for w in caught if w.category is DeprecationWarning]
            self.assertEqual(bool(deprecated), code is flat)
        self.assertEqual(namespaces[0]["options"], options_from_flat(settings))
        expected = options_from_flat(settings | {"lr_x": 0.01})
        self.assertEqual(namespaces[1]["options"], expected)
        for namespace in namespaces:
            self.assertEqual(namespace["optimizer"], settings["joint_optimizer"])
        namespace = {}
        exec(compile(adam_fit, "migration.md", "exec"), namespace)
        self.assertEqual(
            namespace["options"], options_from_flat({"elbo_optimizer": "adam"})
        )

    def test_the_kernel_rename_block_runs_without_a_warning(self):
        code = _python_blocks(DOCS / "migration.md")[-1]
        namespace: dict = {}
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            exec(compile(code, "migration.md", "exec"), namespace)
        from botorch_ext.kernels import BOCKKernel

        self.assertIsInstance(namespace["kernel"], BOCKKernel)

    def test_former_model_methods_are_functions_of_eulbo(self):
        code = _python_blocks(DOCS / "migration.md")[6]
        imports = [n for n in ast.parse(code).body if isinstance(n, ast.ImportFrom)]
        self.assertEqual(len(imports), 2)
        for node in imports:
            module = importlib.import_module(node.module)
            for alias in node.names:
                self.assertTrue(callable(getattr(module, alias.name)))
                self.assertRegex(code, rf"model\.{alias.name}\(")


class TestApiReference(unittest.TestCase):
    def test_every_public_name_has_documentation_autodoc_renders(self):
        modules = {name: importlib.import_module(name) for name in _public_modules()}
        documented = {
            name: _documented_assignments(module) for name, module in modules.items()
        }
        for name, module in modules.items():
            for public in getattr(module, "__all__", ()):
                obj = getattr(module, public)
                with self.subTest(module=name, name=public):
                    if inspect.isclass(obj) or inspect.isfunction(obj):
                        # autodoc's :members: skips members without a docstring.
                        self.assertTrue(inspect.getdoc(obj))
                        self.assertIn(obj.__module__, modules)
                    else:
                        # Data are documented by a #: comment where they are defined.
                        self.assertTrue(
                            any(public in names for names in documented.values()),
                        )

    def test_modules_hidden_by_a_same_named_attribute_get_their_page(self):
        hidden = []
        for name in _public_modules():
            package, _, attribute = name.rpartition(".")
            value = getattr(sys.modules[package], attribute, None)
            if value is not None and not inspect.ismodule(value):
                hidden.append(name)
        self.assertIn("botorch_ext.sgmcmc.mamba", hidden)
        conf = _load_docs_conf()
        self.assertEqual(conf.autosummary_context["shadowed_modules"], hidden)
        template = (DOCS / "_templates" / "autosummary" / "function.rst").read_text()
        self.assertIn("{% if fullname in shadowed_modules", template)
        self.assertIn(".. automodule:: {{ fullname }}", template)


class TestThreadsSection(unittest.TestCase):
    RESULTS = ROOT / "benchmarks" / "threads" / "results" / "fit_elbo_threads.csv"

    def test_quoted_table_is_the_summary_of_the_recorded_rows(self):
        script = load_script("benchmarks/threads/fit_elbo_threads.py")
        with open(self.RESULTS, newline="") as fh:
            rows = list(csv.DictReader(fh))
        table = script.summary(rows)
        text = (DOCS / "getting-started.md").read_text()
        section = text.split("\n## Threads\n", 1)[1].split("\n## ", 1)[0]
        self.assertIn(table, section)
        self.assertEqual({r["OMP_NUM_THREADS"] for r in rows}, {"1", "2"})
        # The rows' own command is the one the page gives.
        (command,) = {r["command"] for r in rows}
        self.assertIn(f"```bash\n{command}\n```", section)
        self.assertIn("torch.set_num_threads(1)", section)
        self.assertIn("OMP_NUM_THREADS=1", section)
