import math

import torch
from botorch.test_functions import Branin, Hartmann
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.problems import PROBLEMS, get_problem


class TestProblems(BotorchTestCase):
    def test_optimum_at_known_optimizer(self):
        for name in PROBLEMS:
            dims = [None] if PROBLEMS[name].fixed_dim else [6, 7, 20, 21]
            for dim in dims:
                problem = get_problem(name, dim)
                value = problem(problem.optimizer.double().unsqueeze(0)).item()
                self.assertAlmostEqual(value, problem.optimal_value, places=5)
                # The optimum is a minimum: random points are no better.
                rand = problem(torch.rand(256, problem.dim, dtype=torch.double))
                self.assertTrue((rand >= problem.optimal_value - 1e-6).all())

    def test_bock_definitions_at_the_centre(self):
        centre = lambda d: torch.full((1, d), 0.5, dtype=torch.double)  # x = 0
        for d in (2, 5, 20, 100):
            self.assertAlmostEqual(
                get_problem("rosenbrock", d)(centre(d)).item(), 8608.36, places=2
            )
        # Repeated Branin at x = 0 is Branin at z = (2.5, 7.5) for every pair.
        branin_centre = Branin()(torch.tensor([[2.5, 7.5]], dtype=torch.double)).item()
        for d in (2, 20, 21):
            self.assertAlmostEqual(
                get_problem("repeated-branin", d)(centre(d)).item(), branin_centre
            )
        hartmann_centre = Hartmann(dim=6)(centre(6)).item()
        self.assertAlmostEqual(
            get_problem("repeated-hartmann6", 20)(centre(20)).item(), hartmann_centre
        )
        # Levy at x = 0 (z = 0): w = 0.75, a closed form per the standard definition.
        w = 0.75
        d = 20
        levy0 = (
            math.sin(math.pi * w) ** 2
            + (d - 1) * (w - 1) ** 2 * (1 + 10 * math.sin(math.pi * w + 1) ** 2)
            + (w - 1) ** 2 * (1 + math.sin(2 * math.pi * w) ** 2)
        )
        self.assertAlmostEqual(get_problem("levy", d)(centre(d)).item(), levy0)

    def test_repeated_problems_ignore_leftover_coordinates(self):
        U = torch.rand(4, 21, dtype=torch.double)
        U2 = U.clone()
        U2[:, -1] = torch.rand(4, dtype=torch.double)
        for name in ("repeated-branin", "repeated-hartmann6"):
            problem = get_problem(name, 21)
            self.assertAllClose(problem(U), problem(U2))

    def test_rosenbrock_matches_the_scaled_sum(self):
        U = torch.rand(3, 5, dtype=torch.double)
        z = 7.5 * (2 * U - 1) + 2.5
        total = (100 * (z[:, 1:] - z[:, :-1] ** 2) ** 2 + (1 - z[:, :-1]) ** 2).sum(-1)
        expected = total * 50000 / ((90**2 + 9**2) * 4)
        self.assertAllClose(get_problem("rosenbrock", 5)(U), expected)

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "unknown problem 'nope'; choose from"):
            get_problem("nope")
        with self.assertRaisesRegex(ValueError, "fixed dimension 2"):
            get_problem("branin", 3)
        with self.assertRaisesRegex(ValueError, "dim >= 6"):
            get_problem("repeated-hartmann6", 5)
        problem = get_problem("levy", 3)
        with self.assertRaisesRegex(ValueError, "3 columns"):
            problem(torch.rand(2, 4))
        with self.assertRaisesRegex(ValueError, r"\[0, 1\]"):
            problem(torch.full((1, 3), 1.5))
        with self.assertRaisesRegex(ValueError, "no NaN"):
            problem(torch.tensor([[0.5, float("nan"), 0.5]]))
