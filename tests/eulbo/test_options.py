r"""``EULBOOptions``: groups, pinned defaults, the deprecated flat names, validation."""

from __future__ import annotations

import dataclasses
import warnings

from botorch.utils.testing import BotorchTestCase

from botorch_ext.eulbo import (
    AdamOptions,
    ELBOFitOptions,
    EULBOOptions,
    JointOptions,
    StoppingOptions,
    UtilityOptions,
    WarmStartOptions,
)
from botorch_ext.eulbo.options import FLAT_FIELDS, GROUPS, options_from_flat

# The documented defaults, group by group (the paper's where it states them).
DEFAULTS = {
    "elbo": ELBOFitOptions(optimizer="auto", lbfgs_max_iter=500),
    "adam": AdamOptions(lr_w=0.01, lr_x=0.001, batch_size=32, grad_clip=2.0),
    "stopping": StoppingOptions(
        convergence="steps",
        max_steps=1000,
        check_every=25,
        check_size=1024,
        tol=1e-3,
        patience=4,
        max_epochs=30,
    ),
    "warm_start": WarmStartOptions(num_restarts=10, raw_samples=256),
    "utility": UtilityOptions(
        num_mc_samples=64, num_fantasies=32, num_quadrature_points=20
    ),
    "joint": JointOptions(
        optimizer="lbfgs", parameters="all", max_iter=100, alternation="step"
    ),
}


def _quiet(test):
    r"""Run ``test`` with the flat names' DeprecationWarning ignored."""

    def run(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            test(self)

    run.__name__ = test.__name__
    return run


class TestEULBOOptions(BotorchTestCase):
    def test_pinned_defaults(self):
        options = EULBOOptions()
        for group, expected in DEFAULTS.items():
            self.assertEqual(getattr(options, group), expected, group)
        self.assertEqual(options.lbfgs_max_n, 2000)
        self.assertEqual(set(GROUPS), set(DEFAULTS))
        # Every field of EULBOOptions is a group or lbfgs_max_n.
        names = {f.name for f in dataclasses.fields(EULBOOptions)}
        self.assertEqual(names, set(GROUPS) | {"lbfgs_max_n"})
        # Small groups: none holds more than seven settings.
        for group_class in GROUPS.values():
            self.assertLessEqual(len(dataclasses.fields(group_class)), 7)

    def test_turbo_preset(self):
        # Pinned: the documented bounded searches, every other setting default.
        opts = EULBOOptions.turbo()
        self.assertEqual(opts.warm_start.max_iter, 50)
        self.assertEqual(opts.elbo.lbfgs_max_iter, 100)
        self.assertEqual(opts.elbo.subset_max_iter, 10)
        self.assertEqual(opts.joint.max_iter, 50)
        self.assertEqual(opts.lbfgs_max_n, 2000)
        default = EULBOOptions()
        expected = default.replace(
            warm_start=dataclasses.replace(default.warm_start, max_iter=50),
            elbo=dataclasses.replace(
                default.elbo, lbfgs_max_iter=100, subset_max_iter=10
            ),
            joint=dataclasses.replace(default.joint, max_iter=50),
        )
        self.assertEqual(opts, expected)
        opts.validate()
        changed = EULBOOptions.turbo(joint=JointOptions(max_iter=7))
        self.assertEqual((changed.joint.max_iter, changed.warm_start.max_iter), (7, 50))

    def test_the_flat_names_are_deprecated(self):
        for call in (
            lambda: EULBOOptions.from_flat(max_steps=5),
            lambda: EULBOOptions().flat(),
            lambda: EULBOOptions().replace(max_steps=5),
        ):
            with self.assertWarnsRegex(DeprecationWarning, "flat setting names"):
                call()
        # The grouped form warns about nothing; stored data read quietly.
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            adam = AdamOptions(lr_x=0.01)
            self.assertEqual(EULBOOptions().replace(adam=adam).adam, adam)
            self.assertEqual(options_from_flat({"max_steps": 5}).stopping.max_steps, 5)
            EULBOOptions.table1(joint=JointOptions(optimizer="lbfgs"))

    @_quiet
    def test_every_flat_name_sets_its_own_setting(self):
        # A distinct value per flat name lands where FLAT_FIELDS says, changes
        # nothing else, and reads back under the same name.
        default = EULBOOptions().flat()
        self.assertEqual(set(default), set(FLAT_FIELDS))
        # Every setting of every group has exactly one flat name.
        nested = {(None, "lbfgs_max_n")} | {
            (group, f.name)
            for group, group_class in GROUPS.items()
            for f in dataclasses.fields(group_class)
        }
        self.assertEqual(set(FLAT_FIELDS.values()), nested)
        for name, (group, key) in FLAT_FIELDS.items():
            value = ("variational",) if name == "joint_parameters" else object()
            options = EULBOOptions.from_flat(**{name: value})
            holder = options if group is None else getattr(options, group)
            self.assertIs(getattr(holder, key), value, name)
            flat = options.flat()
            self.assertIs(flat.pop(name), value)
            self.assertEqual(flat, {k: v for k, v in default.items() if k != name})
        # The old names of renamed settings.
        options = EULBOOptions.from_flat(
            elbo_optimizer="adam",
            lbfgs_max_iter=7,
            joint_optimizer="adam",
            joint_parameters="variational",
            joint_max_iter=3,
            lbfgs_max_n=11,
        )
        self.assertEqual(options.elbo, ELBOFitOptions("adam", 7))
        # The subset's budget came last: the earlier positions keep their fields.
        elbo = ELBOFitOptions("adam", 7, 4)
        self.assertEqual((elbo.epochs, elbo.subset_max_iter), (4, None))
        self.assertEqual(options.joint, JointOptions("adam", "variational", 3))
        self.assertEqual(options.lbfgs_max_n, 11)

    @_quiet
    def test_replace_copies(self):
        base = EULBOOptions()
        changed = base.replace(max_steps=5, num_restarts=2, lbfgs_max_n=9)
        self.assertEqual(base, EULBOOptions())
        self.assertEqual(changed.stopping.max_steps, 5)
        self.assertEqual(changed.warm_start.num_restarts, 2)
        self.assertEqual(changed.lbfgs_max_n, 9)
        self.assertEqual(changed.adam, base.adam)
        self.assertEqual(base.replace(), base)
        with self.assertRaisesRegex(TypeError, r"\['lr_z'\]"):
            base.replace(lr_z=0.1)
        # Groups by name (a TypeError before 0.2.0).
        adam = AdamOptions(lr_w=0.5)
        self.assertEqual(base.replace(adam=adam), dataclasses.replace(base, adam=adam))
        with self.assertRaisesRegex(TypeError, r"\['optimizer'\]"):
            EULBOOptions.from_flat(optimizer="adam")  # a nested name, not a flat one

    @_quiet
    def test_table1(self):
        options = EULBOOptions.table1(num_restarts=5, patience=2)
        self.assertEqual(
            options.stopping,
            dataclasses.replace(
                DEFAULTS["stopping"],
                convergence="epochs",
                max_epochs=30,
                patience=2,
                tol=0.0,
            ),
        )
        self.assertEqual(options.elbo.optimizer, "adam")
        self.assertEqual(options.joint.optimizer, "adam")
        self.assertEqual(options.warm_start.num_restarts, 5)
        self.assertEqual(EULBOOptions.table1().stopping.patience, 3)

    @_quiet
    def test_validate_names_the_setting(self):
        EULBOOptions().validate()
        EULBOOptions.table1().validate()
        bad = {
            "elbo_optimizer": ("sgd", "`elbo.optimizer`.*'sgd'"),
            "lbfgs_max_iter": (0, "`elbo.lbfgs_max_iter`.*0"),
            "lbfgs_max_n": (-1, "`lbfgs_max_n`.*-1"),
            "lr_w": (0.0, "`adam.lr_w`"),
            "lr_x": (float("nan"), "`adam.lr_x`"),
            "grad_clip": (-2.0, "`adam.grad_clip`"),
            "batch_size": (1.5, "`adam.batch_size`.*1.5"),
            "convergence": ("never", "`stopping.convergence`.*'never'"),
            "tol": (-1.0, "`stopping.tol`"),
            "max_steps": (0, "`stopping.max_steps`"),
            "check_every": (0, "`stopping.check_every`"),
            "check_size": (0, "`stopping.check_size`"),
            "patience": (True, "`stopping.patience`"),
            "max_epochs": (0, "`stopping.max_epochs`"),
            "num_restarts": (0, "`warm_start.num_restarts`"),
            "raw_samples": (0, "`warm_start.raw_samples`"),
            "num_mc_samples": (0, "`utility.num_mc_samples`"),
            "num_fantasies": (0, "`utility.num_fantasies`"),
            "num_quadrature_points": (0, "`utility.num_quadrature_points`"),
            "joint_optimizer": ("sgd", "`joint.optimizer`.*'sgd'"),
            "joint_parameters": ("Z", "`joint.parameters`.*'Z'"),
            "joint_max_iter": (0, "`joint.max_iter`"),
            "elbo_epochs": (0, "`elbo.epochs`.*0"),
            "subset_max_iter": (0, "`elbo.subset_max_iter`.*0"),
            "acquisition": ("qucb", "`warm_start.acquisition`.*'qucb'"),
            "joint_retries": (-1, "`joint.retries`.*-1"),
            "alternation": ("round", "`joint.alternation`.*'round'"),
            "resample_zero": ("no", "`warm_start.resample_zero`.*'no'"),
            "max_iter": (0, "`warm_start.max_iter`.*0"),
        }
        self.assertEqual(set(bad), set(FLAT_FIELDS))
        for name, (value, pattern) in bad.items():
            with self.subTest(name=name), self.assertRaisesRegex(ValueError, pattern):
                EULBOOptions.from_flat(**{name: value}).validate()
        # A group given as something else (a dict of its settings, say).
        with self.assertRaisesRegex(ValueError, "`joint` must be a JointOptions"):
            EULBOOptions(joint={"optimizer": "adam"}).validate()  # type: ignore[arg-type]
