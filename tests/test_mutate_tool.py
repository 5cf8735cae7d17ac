r"""The mutation-check script ``tools/mutate.py``: text replacement and the copy."""

import tempfile
import unittest
from pathlib import Path

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def _load_tool():
    return load_script("tools/mutate.py")


class TestMutateTool(unittest.TestCase):
    def setUp(self):
        self.tool = _load_tool()
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / "source.py"

    def tearDown(self):
        self.tmp.cleanup()

    def test_replaces_exactly_the_chosen_occurrence(self):
        self.path.write_text("a = x.sqrt()\nb = x.sqrt()\nc = y\n")
        self.tool.apply_mutation(self.path, "c = y", "c = -y", None)
        self.assertEqual(self.path.read_text(), "a = x.sqrt()\nb = x.sqrt()\nc = -y\n")
        self.tool.apply_mutation(self.path, "x.sqrt()", "x", 2)
        self.assertEqual(self.path.read_text(), "a = x.sqrt()\nb = x\nc = -y\n")

    def test_ambiguous_or_missing_text_is_refused(self):
        self.path.write_text("a = x.sqrt()\nb = x.sqrt()\n")
        with self.assertRaisesRegex(ValueError, "occurs 2 times"):
            self.tool.apply_mutation(self.path, "x.sqrt()", "x", None)
        with self.assertRaisesRegex(ValueError, "does not occur"):
            self.tool.apply_mutation(self.path, "z", "x", None)
        with self.assertRaisesRegex(ValueError, "--occurrence 3"):
            self.tool.apply_mutation(self.path, "x.sqrt()", "x", 3)
        # Nothing was written by the refused calls.
        self.assertEqual(self.path.read_text(), "a = x.sqrt()\nb = x.sqrt()\n")

    def test_copy_holds_the_working_tree_and_leaves_it_alone(self):
        dest = Path(self.tmp.name) / "copy"
        self.tool.copy_tree(ROOT, dest)
        for rel in ("botorch_ext/eulbo/model.py", "tools/mutate.py", "pyproject.toml"):
            self.assertEqual((dest / rel).read_bytes(), (ROOT / rel).read_bytes())
        self.assertFalse((dest / ".git").exists())
        target = dest / "botorch_ext" / "validation.py"
        # A real copy, not a link: writing to it must not reach the working tree.
        self.assertFalse(target.samefile(ROOT / "botorch_ext" / "validation.py"))
        before = (ROOT / "botorch_ext" / "validation.py").read_text()
        self.tool.apply_mutation(target, "def ", "def  ", 1)
        self.assertEqual((ROOT / "botorch_ext" / "validation.py").read_text(), before)
        self.assertNotEqual(target.read_text(), before)


if __name__ == "__main__":
    unittest.main()
