r"""Execute every tutorial notebook in smoke-test mode with nbclient, as CI does.

``SMOKE_TEST=1`` shrinks the notebooks' budgets (BoTorch's convention) and
matplotlib renders off-screen. The kernel is the ``python3`` kernel of the running
interpreter (ipykernel is in the ``test`` extra).
"""

import os
import unittest
from pathlib import Path
from unittest import mock

import nbformat
from nbclient import NotebookClient

TUTORIALS = sorted((Path(__file__).resolve().parents[1] / "tutorials").glob("*.ipynb"))


class TestTutorials(unittest.TestCase):
    def test_there_are_tutorials(self):
        self.assertGreater(len(TUTORIALS), 0)

    def test_tutorials_run_in_smoke_test_mode(self):
        env = {"SMOKE_TEST": "1", "MPLBACKEND": "Agg"}
        for path in TUTORIALS:
            with self.subTest(notebook=path.name), mock.patch.dict(os.environ, env):
                nb = nbformat.read(path, as_version=4)
                client = NotebookClient(
                    nb,
                    timeout=600,
                    kernel_name="python3",
                    resources={"metadata": {"path": str(path.parent)}},
                )
                client.execute()  # raises CellExecutionError on any failing cell
                images = [
                    out
                    for cell in nb.cells
                    if cell.cell_type == "code"
                    for out in cell.get("outputs", [])
                    if "image/png" in out.get("data", {})
                ]
                self.assertGreater(len(images), 0, "the notebook should plot")
