r"""Sphinx configuration of the botorch_ext documentation.

Build (warnings are errors, as in CI)::

    pip install -e ".[docs]"
    sphinx-build -W -n -b html docs docs/_build/html

Intersphinx links to Python, torch, BoTorch and GPyTorch when their inventories can
be fetched. Each mapping has a second location, ``offline.inv`` (an empty
inventory shipped here), so an offline build (CI reaches PyPI only) loads that one
instead of failing with a warning: the build passes with ``-W`` either way, and
only the links to those projects are missing offline. Set
``BOTORCH_EXT_DOCS_OFFLINE=1`` to skip the network attempt altogether.

The tutorials are rendered from ``../tutorials/*.ipynb`` with their stored outputs
(myst-nb, no execution at build time); they are copied into ``docs/tutorials/``
(ignored by git) when the build starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import botorch_ext  # noqa: E402

project = "botorch_ext"
author = "botorch_ext developers"
copyright = "botorch_ext developers"
release = botorch_ext.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "README.md"]
templates_path = ["_templates"]

# -- API reference -------------------------------------------------------------
# autosummary walks the package (api/index.rst, :recursive:) and writes one page
# per module into api/_generated (ignored by git), so modules added or moved by a
# refactor appear without editing these pages. Each module page documents the
# members defined in that module (:ignore-module-all: in the template), so a class
# re-exported by its package is documented once, on its module's page.
autosummary_generate = True


def _shadowed_modules() -> list[str]:
    """Modules hidden by a same-named attribute of their package.

    ``botorch_ext.sgmcmc.mamba`` is both a module and, in its package, the function
    ``mamba``; autosummary resolves the name to the function, so the module page
    (``MambaResult``, ``MambaRound``, ``round_budgets``) would not be written. The
    ``function.rst`` template renders these names as modules.
    """
    import importlib
    import inspect
    import pkgutil

    shadowed = []
    for info in pkgutil.walk_packages(botorch_ext.__path__, "botorch_ext."):
        package_name, _, attribute = info.name.rpartition(".")
        package = importlib.import_module(package_name)
        value = getattr(package, attribute, None)
        if value is not None and not inspect.ismodule(value):
            shadowed.append(info.name)
    return shadowed


autosummary_context = {"shadowed_modules": _shadowed_modules()}
autosummary_imported_members = False
autodoc_member_order = "bysource"
# The constructors' Args are in the __init__ docstrings (as in BoTorch): render the
# class docstring and __init__'s together, so the API pages show them.
autoclass_content = "both"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_default_options = {"show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# Each module's docstring defines the citations ([Key]_) it uses, so a paper cited
# by several modules is defined on several pages; docutils reports those as
# duplicate citations, which are harmless here.
suppress_warnings = ["ref.citation"]

# -- Cross-references -------------------------------------------------------------
# nitpicky: every reference must resolve (with -W, a dead link fails the build).
# The names below are not this package's: offline (BOTORCH_EXT_DOCS_OFFLINE=1, CI)
# there is no inventory to resolve them against, and several are written without
# their module in upstream signatures and docstrings. Of botorch_ext's names only
# one private marker is ignored (below); fix any other broken reference instead.
nitpicky = True
nitpick_ignore_regex = [
    # torch, BoTorch, GPyTorch, linear_operator, Ax and NumPy, fully qualified.
    (r"py:.*", r"(torch|botorch|gpytorch|linear_operator|ax|numpy)\..*"),
    # The Python standard library, fully qualified (typing, collections.abc, ...).
    (r"py:.*", r"(collections|os|pathlib|argparse|pickle|typing)\..*"),
    # The same third-party and standard-library names, as signatures and docstrings
    # write them without their module.
    (
        r"py:.*",
        r"Tensor|Model|SingleTaskGP|PosteriorTransform|MCSampler|"
        r"MCAcquisitionObjective|OutcomeTransform|InputTransform|Kernel|Prior|"
        r"Interval|Module|Mean|Likelihood|GaussianLikelihood|InducingPointAllocator|"
        r"UnsupportedError|UserInputError|"
        r"_DefaultType|Path",
    ),
]
# botorch_ext.kernels.cylindrical's private marker for "the documented default
# prior" (DEFAULT), named in BOCKKernel's signature; its meaning is in the
# Args.
nitpick_ignore = [("py:class", "_Default")]
# Private helpers named in public signatures: the runner's streaming backend's
# type variable, the acquisition methods' settings record; and Dask's Client, whose
# docs have no inventory here.
nitpick_ignore += [
    ("py:class", "botorch_ext.runner.backends.streaming._Future"),
    ("py:class", "_Spec"),
    ("py:class", "Client"),
]

# -- Intersphinx -----------------------------------------------------------------
_OFFLINE_INV = str(DOCS / "offline.inv")
_ONLINE = os.environ.get("BOTORCH_EXT_DOCS_OFFLINE", "") in ("", "0")


_LOCATIONS = (None, _OFFLINE_INV) if _ONLINE else (_OFFLINE_INV,)
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", _LOCATIONS),
    "torch": ("https://docs.pytorch.org/docs/stable", _LOCATIONS),
    "botorch": ("https://botorch.readthedocs.io/en/stable", _LOCATIONS),
    "gpytorch": ("https://docs.gpytorch.ai/en/stable", _LOCATIONS),
}
intersphinx_timeout = 5

# -- Notebooks (myst-nb) -----------------------------------------------------------
nb_execution_mode = "off"  # the tutorials are rendered with their stored outputs
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# -- HTML ------------------------------------------------------------------------
html_theme = "furo"
html_title = f"botorch_ext {release}"


def _copy_tutorials(app) -> None:
    target = DOCS / "tutorials"
    target.mkdir(exist_ok=True)
    for stale in target.glob("*.ipynb"):
        stale.unlink()
    for notebook in sorted((ROOT / "tutorials").glob("*.ipynb")):
        shutil.copy2(notebook, target / notebook.name)


def setup(app):
    app.connect("builder-inited", _copy_tutorials)
