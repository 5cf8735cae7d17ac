r"""The method protocol: runs return their batch with its timings and diagnostics."""

import dataclasses
import warnings
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner import svgp
from botorch_ext.runner.loop import RunConfig, run_bo
from botorch_ext.runner.methods import (
    METHOD_SUMMARIES,
    METHODS,
    get_method,
    register_method,
)
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.protocol import (
    METHOD_FLAGS,
    FunctionMethod,
    Method,
    Proposal,
    Run,
)
from botorch_ext.runner.schema import (
    FIXED_COLUMNS,
    SCHEMA,
    Row,
    build_row,
    columns,
    diagnostic_fields,
    parse_row,
)
from tests.eulbo.helpers import options_with

SHORT_SVGP_FIT = options_with(max_steps=40, check_every=10)
FAST = MethodOptions(num_restarts=1, raw_samples=8, num_inducing_points=4)

#: The header of every results.csv since schema version 3 (must not change).
HEADER_V3 = (
    "problem,dim,method,seed,n_evals,iteration,batch_position,value,status,error,"
    "best_value,regret,seconds,fit_seconds,acq_seconds,eval_seconds,init,"
    "outcome_transform,model_noise,model_lengthscales,model_elbo,model_utility,"
    "model_fit_steps,model_angular_weights,model_warp"
)


def _forget(name):
    # A registration made by a test: its method and its line in the listing.
    METHODS.pop(name, None)
    METHOD_SUMMARIES.pop(name, None)


def _data(n=8, d=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=gen, dtype=torch.double)
    Y = -((X - 0.4) ** 2).sum(-1, keepdim=True)
    bounds = torch.stack([torch.zeros(d), torch.ones(d)]).double()
    return X, Y, bounds


class TestProtocol(BotorchTestCase):
    def test_every_method_has_the_protocol(self):
        for name, method in METHODS.items():
            self.assertIsInstance(method, Method, name)
            for flag in METHOD_FLAGS:
                self.assertIsInstance(getattr(method, flag), bool, (name, flag))
            self.assertIsInstance(method.new_run(), Run, name)

    def test_runs_return_their_timings_and_diagnostics(self):
        X, Y, bounds = _data()
        with mock.patch.object(svgp, "EULBOOptions", SHORT_SVGP_FIT):
            for name in ("qlogei", "bock", "turbo", "elbo-svgp", "eulbo-ei"):
                method = get_method(name)
                before = dict(vars(method))
                proposal = method.new_run().propose(X, Y, bounds, 1, 0, FAST)
                self.assertIsInstance(proposal, Proposal, name)
                self.assertEqual(proposal.candidates.shape, torch.Size([1, 3]), name)
                self.assertGreater(proposal.fit_seconds, 0.0, name)
                self.assertIn("lengthscales", proposal.diagnostics, name)
                # Nothing is written onto the shared, registered method.
                self.assertEqual(vars(method).keys(), before.keys(), name)
                for attribute in ("timings", "diagnostics"):
                    self.assertFalse(hasattr(method, attribute), (name, attribute))
        # A model-free method reports no fit and no diagnostics.
        proposal = get_method("sobol").new_run().propose(X, Y, bounds, 2, 0, FAST)
        self.assertEqual((proposal.fit_seconds, proposal.diagnostics), (0.0, {}))

    def test_two_runs_of_one_method_share_no_state(self):
        X, Y, bounds = _data()
        with mock.patch.object(svgp, "EULBOOptions", SHORT_SVGP_FIT):
            for name in ("turbo", "turbo-elbo-svgp", "elbo-svgp"):
                method = get_method(name)
                self.assertTrue(method.carries_state, name)
                a, b = method.new_run(), method.new_run()
                self.assertIsNot(a, b)
                first = a.propose(X, Y, bounds, 1, 0, FAST)
                # a's state does not reach b: b's first proposal is a's first.
                a.propose(torch.cat([X, first.candidates]), Y.new_zeros(9, 1),
                          bounds, 1, 0, FAST)  # fmt: skip
                again = b.propose(X, Y, bounds, 1, 0, FAST)
                self.assertTrue(torch.equal(first.candidates, again.candidates), name)
                for held in ("state", "previous"):  # trust region, model
                    if getattr(a, held, None) is not None:
                        self.assertIsNot(getattr(a, held), getattr(b, held), name)
        # A stateless method's runs are fresh too (or the method itself).
        self.assertFalse(get_method("qlogei").carries_state)

    def test_the_loop_writes_each_proposals_timings_and_diagnostics(self):
        config = RunConfig("branin", "qlogei", budget=6, n_init=4, q=1, options=FAST)
        rows = run_bo(config)
        for row in rows[4:]:
            self.assertGreater(row["fit_seconds"], 0.0)
            self.assertNotEqual(row["model_lengthscales"], "")
        seen = []

        class Fixed:
            model_based, sequential, gaussian_posterior = True, False, False
            standardizes_outcomes, carries_state = False, False

            def new_run(self):
                return self

            def propose(self, train_X, train_Y, bounds, q, seed, options):
                seen.append(train_X.shape[0])
                return Proposal(bounds[:1].expand(q, -1), 1.5, {"noise": 0.25})

        self.addCleanup(_forget, "fixed")
        register_method("fixed", Fixed())
        rows = run_bo(RunConfig("branin", "fixed", budget=6, n_init=4))
        self.assertEqual(seen, [4, 5])
        for row in rows[4:]:
            self.assertEqual((row["fit_seconds"], row["model_noise"]), (1.5, 0.25))
            self.assertGreaterEqual(row["acq_seconds"], 0.0)

    def test_function_methods_and_objects_without_flags(self):
        def corner(train_X, train_Y, bounds, q, seed, options):
            return bounds[:1].expand(q, -1)

        corner.sequential = True  # the former way to flag a function
        method = FunctionMethod(corner)
        self.assertIs(method.new_run(), method)
        X, Y, bounds = _data()
        proposal = method.new_run().propose(X, Y, bounds, 2, 0, FAST)
        self.assertTrue(torch.equal(proposal.candidates, bounds[:1].expand(2, -1)))
        self.addCleanup(_forget, "corner")
        self.assertTrue(register_method("corner", corner).sequential)

        class NoFlags:
            def new_run(self):
                return self

        with self.assertRaisesRegex(ValueError, "lacks the flags model_based"):
            register_method("no-flags", NoFlags())
        self.assertNotIn("no-flags", METHODS)


class TestGlobalRandomStream(BotorchTestCase):
    def test_a_proposal_leaves_the_callers_stream_and_ignores_it(self):
        # Each proposal seeds torch's global stream from the run's seed and the
        # data (so a resumed run repeats it) and restores the caller's on exit.
        X, Y, bounds = _data(n=10)
        for name in ("qlogei", "turbo", "elbo-svgp-authors", "eulbo-ei-authors"):
            with self.subTest(method=name):
                candidates = []
                for caller_seed in (1, 2):
                    torch.manual_seed(caller_seed)
                    before = torch.get_rng_state()
                    run = get_method(name).new_run()
                    proposal = run.propose(X, Y, bounds, 1, 0, FAST)
                    self.assertTrue(torch.equal(torch.get_rng_state(), before))
                    candidates.append(proposal.candidates)
                self.assertTrue(torch.equal(candidates[0], candidates[1]))


class TestRow(BotorchTestCase):
    def _fields(self, **changes):
        fields = dict(
            problem="branin", dim=2, method="random", seed=0, n_evals=1,
            iteration=0, batch_position=0, value=1.5, status="ok", error="",
            best_value=1.5, regret=1.1, seconds=0.1, fit_seconds=0.0,
            acq_seconds=0.0, eval_seconds=0.01, init="sobol",
            outcome_transform="standardize",
        )  # fmt: skip
        return fields | changes

    def test_the_columns_are_the_rows_fields_and_do_not_change(self):
        self.assertEqual(",".join(FIXED_COLUMNS), HEADER_V3)
        names = [f.name for f in dataclasses.fields(Row)]
        self.assertEqual(names, [*FIXED_COLUMNS, "point"])
        self.assertEqual([c.name for c in SCHEMA], list(FIXED_COLUMNS))
        self.assertEqual(columns(2)[-2:], ("x0", "x1"))
        types = {c.name: c.type for c in SCHEMA}
        self.assertEqual(types["dim"], int)
        self.assertEqual(types["value"], float)
        self.assertEqual(types["model_fit_steps"], int)
        self.assertEqual(types["model_lengthscales"], str)

    def test_a_row_round_trips_through_its_dict_and_the_file(self):
        row = Row(**self._fields(), point=(0.25, 0.75))
        as_dict = row.to_dict()
        self.assertEqual(tuple(as_dict), columns(2))
        self.assertEqual(as_dict["model_noise"], "")  # no diagnostics: empty
        self.assertEqual(Row.from_dict(as_dict), row)
        as_text = {k: str(v) for k, v in as_dict.items()}
        self.assertEqual(Row.from_dict(parse_row(as_text)), row)
        built = build_row([0.25, 0.75], **self._fields(), **diagnostic_fields(None))
        self.assertEqual(built, as_dict)
        with self.assertRaisesRegex(ValueError, "expected dim=2"):
            Row(**self._fields(), point=(0.5,))
        with self.assertRaisesRegex(ValueError, "missing \\['init'"):
            fields = self._fields()
            del fields["init"]
            build_row([0.1, 0.2], **fields)

    def test_rows_of_a_file_before_the_status_column_read(self):
        old = {k: str(v) for k, v in self._fields().items()}
        old |= diagnostic_fields(None)
        del old["status"], old["error"]
        row = Row.from_dict(parse_row(old | {"x0": "0.1", "x1": "0.2"}))
        self.assertEqual((row.status, row.error), ("ok", ""))


class TestDeprecatedAliases(BotorchTestCase):
    def test_moved_names_warn_and_resolve(self):
        from botorch_ext.runner import (
            fitting,
            kernels,
            metadata,
            methods,
            options,
            protocol,
            results,
            schema,
            signals,
        )

        for module, name, home in (
            (results, "parse_row", schema),
            (results, "redact", metadata),
            (results, "holding_interrupts", signals),
            (methods, "fit_model", fitting),
            (methods, "KERNELS", kernels),
            (methods, "MethodOptions", options),
            (methods, "Method", protocol),
            (options, "Method", protocol),
        ):
            with self.assertWarnsRegex(
                DeprecationWarning, f"moved to .*{name}"
            ) as caught:
                self.assertIs(getattr(module, name), getattr(home, name))
            # Attributed to the line asking for the name, so that Python's
            # default filters show it to the user's own code.
            self.assertEqual(caught.filename, __file__, (module.__name__, name))
        with self.assertWarnsRegex(DeprecationWarning, "standardizes_outcomes"):
            svgp_methods = methods.SVGP_METHODS
        self.assertIn("elbo-svgp", svgp_methods)
        self.assertNotIn("qlogei", svgp_methods)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with self.assertRaises(AttributeError):
                _ = results.no_such_name
