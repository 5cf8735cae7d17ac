r"""The import paths of 0.1.0 keep working for one release, with a warning."""

import importlib
import warnings

from botorch.utils.testing import BotorchTestCase

import botorch_ext
import botorch_ext.eulbo as eulbo
from botorch_ext.eulbo.objective import eulbo as eulbo_function

#: old module -> names of 0.1.0 that moved to botorch_ext.eulbo.
MOVED = {
    "botorch_ext.models": (
        "EULBOModel",
        "EULBOOptions",
        "ELBOFitOptions",
        "AdamOptions",
        "StoppingOptions",
        "WarmStartOptions",
        "UtilityOptions",
        "JointOptions",
        "ELBO_SCALES",
    ),
    "botorch_ext.optim": ("fit_elbo", "optimize_eulbo"),
    "botorch_ext.acquisition": (
        "expected_log_soft_improvement",
        "gauss_hermite_normal",
        "mc_log_soft_improvement",
    ),
}


class TestDeprecatedPaths(BotorchTestCase):
    def test_old_paths_warn_and_give_the_new_objects(self):
        for module_name, names in MOVED.items():
            module = importlib.import_module(module_name)
            for name in names:
                with self.subTest(name=f"{module_name}.{name}"):
                    with self.assertWarnsRegex(
                        DeprecationWarning, f"botorch_ext.eulbo.{name}"
                    ):
                        old = getattr(module, name)
                    self.assertIs(old, getattr(eulbo, name))
        with self.assertWarns(DeprecationWarning):
            from botorch_ext.optim import eulbo as old_eulbo
        self.assertIs(old_eulbo, eulbo_function)

    def test_unknown_names_still_raise_attribute_error(self):
        for module_name in MOVED:
            module = importlib.import_module(module_name)
            with self.assertRaises(AttributeError):
                module.no_such_name  # noqa: B018

    def test_the_top_level_and_the_new_home_do_not_warn(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            for name in ("EULBO", "EULBOModel", "EULBOOptions", "fit_elbo"):
                self.assertIs(getattr(botorch_ext, name), getattr(eulbo, name))
            from botorch_ext.optim import TurboState  # noqa: F401
