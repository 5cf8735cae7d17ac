r"""Execute every tutorial notebook's code, in smoke-test mode, as CI does.

Code cells are concatenated and run in a fresh interpreter with ``SMOKE_TEST=1``
and a non-interactive matplotlib backend; IPython magics (``%...``) are dropped,
so no Jupyter kernel is needed.
"""

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

TUTORIALS = sorted((Path(__file__).resolve().parents[1] / "tutorials").glob("*.ipynb"))


def notebook_source(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines.extend(line for line in source.splitlines() if not line.startswith("%"))
        lines.append("")
    return "\n".join(lines)


class TestTutorials(unittest.TestCase):
    def test_there_are_tutorials(self):
        self.assertGreater(len(TUTORIALS), 0)

    def test_tutorials_run_in_smoke_test_mode(self):
        for path in TUTORIALS:
            with self.subTest(notebook=path.name):
                env = dict(os.environ, SMOKE_TEST="1", MPLBACKEND="Agg")
                result = subprocess.run(
                    [sys.executable, "-c", notebook_source(path)],
                    cwd=path.parent,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=False,
                )
                self.assertEqual(result.returncode, 0, result.stderr[-3000:])
