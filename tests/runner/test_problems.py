import math

import numpy as np
import scipy.interpolate as si
import torch
from botorch.test_functions import Ackley, Branin, Cosine8, Hartmann, StyblinskiTang
from botorch.test_functions.synthetic import SyntheticTestFunction
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.problems import (
    PROBLEMS,
    botorch_function_names,
    get_problem,
)


class ShiftedSphere(SyntheticTestFunction):
    r"""A user's test function for ``module:callable`` (min 1 at x = 2)."""

    _optimal_value = 1.0

    def __init__(self, dim: int = 3, **kwargs) -> None:
        self.dim = dim
        self.continuous_inds = list(range(dim))
        self._bounds = [(-1.0, 4.0)] * dim
        self._optimizers = [(2.0,) * dim]
        super().__init__(**kwargs)

    def _evaluate_true(self, X):
        return 1.0 + ((X - 2.0) ** 2).sum(-1)


def negated_sphere(dim: int = 2) -> ShiftedSphere:
    r"""A factory returning a maximization problem (``negate=True``)."""
    return ShiftedSphere(dim=dim, negate=True)


def not_a_test_function(dim: int = 2):
    return lambda X: X.sum(-1)


class TestProblems(BotorchTestCase):
    def test_optimum_at_known_optimizer(self):
        # The rover's optimal_value is a lower bound its best known point misses.
        gap = {"rover": 1e-3}
        for name in PROBLEMS:
            dims = [None] if PROBLEMS[name].fixed_dim else [6, 7, 20, 21]
            for dim in dims:
                problem = get_problem(name, dim)
                value = problem(problem.optimizer.double().unsqueeze(0)).item()
                if name in gap:
                    self.assertGreaterEqual(value, problem.optimal_value)
                    self.assertLess(value, problem.optimal_value + gap[name])
                else:
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
        with self.assertRaisesRegex(ValueError, "fixed dimension 60"):
            get_problem("rover", 59)
        with self.assertRaisesRegex(ValueError, "dim >= 6"):
            get_problem("repeated-hartmann6", 5)
        problem = get_problem("levy", 3)
        with self.assertRaisesRegex(ValueError, "3 columns"):
            problem(torch.rand(2, 4))
        with self.assertRaisesRegex(ValueError, r"\[0, 1\]"):
            problem(torch.full((1, 3), 1.5))
        with self.assertRaisesRegex(ValueError, "no NaN"):
            problem(torch.tensor([[0.5, float("nan"), 0.5]]))


class TestBotorchAndUserProblems(BotorchTestCase):
    def _native(self, U, fn):
        lower, upper = fn.bounds
        return lower + U * (upper - lower)

    def test_botorch_name_maps_the_unit_cube_onto_botorchs_bounds(self):
        torch.manual_seed(0)
        cases = [
            ("botorch:Branin", None, Branin(), 1.0),
            ("botorch:Ackley", 5, Ackley(dim=5), 1.0),
            ("botorch:StyblinskiTang", 3, StyblinskiTang(dim=3), 1.0),
            # BoTorch maximizes Cosine8: the runner minimizes its negation.
            ("botorch:Cosine8", None, Cosine8(), -1.0),
        ]
        for spec, dim, fn, sign in cases:
            problem = get_problem(spec, dim)
            self.assertEqual(problem.name, spec)
            self.assertEqual(problem.dim, fn.dim)
            U = torch.rand(16, fn.dim, dtype=torch.double)
            self.assertAllClose(problem(U), sign * fn(self._native(U, fn)))
            self.assertEqual(problem.optimal_value, sign * fn.optimal_value)
            # BoTorch's optimizer, mapped to the cube, attains the optimum.
            at_opt = problem(problem.optimizer.unsqueeze(0)).item()
            self.assertAlmostEqual(at_opt, problem.optimal_value, places=4)
        self.assertEqual(get_problem("botorch:Hartmann").dim, 6)  # its default

    def test_module_callable(self):
        spec = f"{__name__}:ShiftedSphere"
        problem = get_problem(spec, dim=4)
        self.assertEqual((problem.dim, problem.optimal_value), (4, 1.0))
        self.assertAllClose(problem.optimizer, torch.full((4,), 0.6).double())
        U = torch.rand(5, 4, dtype=torch.double)
        self.assertAllClose(problem(U), ShiftedSphere(4)(-1.0 + 5.0 * U))
        # A factory of a negated (maximization) function is negated back.
        flipped = get_problem(f"{__name__}:negated_sphere")
        self.assertEqual((flipped.dim, flipped.optimal_value), (2, 1.0))
        self.assertAllClose(flipped(U[:, :2]), ShiftedSphere(2)(-1.0 + 5.0 * U[:, :2]))

    def test_bad_names(self):
        self.assertIn("Ackley", botorch_function_names())
        self.assertNotIn("AckleyMixed", botorch_function_names())  # discrete
        self.assertNotIn("PressureVessel", botorch_function_names())  # constrained
        bad = {
            "botorch:Nope": "unknown BoTorch test function 'Nope'.*choose from Ackley",
            "botorch:PressureVessel": "unknown BoTorch test function",
            "no_such_module_xyz:f": "cannot import module 'no_such_module_xyz'",
            f"{__name__}:missing": "has no 'missing'",
            f"{__name__}:not_a_test_function": "expected a botorch "
            "SyntheticTestFunction",
            "botorch:": "must be botorch:NAME or module:callable",
        }
        for spec, message in bad.items():
            with self.assertRaisesRegex(ValueError, message):
                get_problem(spec)
        with self.assertRaisesRegex(ValueError, "'botorch:Branin' has fixed dim"):
            get_problem("botorch:Branin", 3)
        with self.assertRaisesRegex(ValueError, "'botorch:Hartmann' with dim=5"):
            get_problem("botorch:Hartmann", 5)


# The rover spec, written out again for independent hand computations.
ROVER_START = (0.05, 0.05)
ROVER_GOAL = (0.95, 0.95)
ROVER_STEP_RANGE = (-1 / 30, 1 / 15)  # each native coordinate
ROVER_CENTRES = [
    (0.2 * i, 0.2 * j) for i in range(6) for j in range(6) if 0 < i + j < 10
]
ROVER_HALF_SIDE = 0.04


def rover_density(x: float, y: float) -> float:
    outside = not (0 <= x < 1 and 0 <= y < 1)
    in_box = any(
        cx - ROVER_HALF_SIDE <= x < cx + ROVER_HALF_SIDE
        and cy - ROVER_HALF_SIDE <= y < cy + ROVER_HALF_SIDE
        for cx, cy in ROVER_CENTRES
    )
    return 0.05 + 20.0 * (outside or in_box)


def rover_value_along(points: np.ndarray) -> float:
    r"""-reward of a trajectory given by its 1000 sampled points."""
    density = [rover_density(x, y) for x, y in points]
    total = 0.0
    for j in range(len(points) - 1):
        length = math.dist(points[j], points[j + 1])
        total += length * 0.5 * (density[j] + density[j + 1])
    miss = abs(points[-1][0] - ROVER_GOAL[0]) + abs(points[-1][1] - ROVER_GOAL[1])
    return total + 100.0 * miss - 5.0


def rover_unit(step: tuple[float, float]) -> torch.Tensor:
    r"""The point of [0, 1]^60 whose 30 native steps all equal ``step``."""
    lo, hi = ROVER_STEP_RANGE
    u = [(s - lo) / (hi - lo) for s in step]
    return torch.tensor(u, dtype=torch.double).repeat(30)


def rover_straight_value(step: tuple[float, float]) -> float:
    r"""-reward of 30 equal steps: the spline is then the straight segment."""
    t = np.linspace(0.0, 1.0, 1000)[:, None]
    end = np.array(ROVER_START) + 30 * np.array(step)
    return rover_value_along(np.array(ROVER_START) + t * (end - ROVER_START))


class TestRover(BotorchTestCase):
    def setUp(self):
        super().setUp()
        self.problem = get_problem("rover")

    def test_registry_entry(self):
        p = self.problem
        self.assertEqual((p.name, p.dim, p.sense), ("rover", 60, "minimize"))
        self.assertEqual(get_problem("rover", 60).dim, 60)
        self.assertEqual(p.domain, "[-1/30, 1/15]^60")
        self.assertEqual(p.optimizer.shape, torch.Size([60]))
        self.assertTrue(((p.optimizer >= 0) & (p.optimizer <= 1)).all())
        # The bound: path length >= |goal - start|_2, cost density >= 0.05.
        bound = -5.0 + 0.05 * 0.9 * math.sqrt(2)
        self.assertAlmostEqual(p.optimal_value, bound, places=12)

    def test_shapes_batches_and_dtype(self):
        U = torch.rand(2, 3, 60, dtype=torch.double)
        values = self.problem(U)
        self.assertEqual(values.shape, torch.Size([2, 3]))
        self.assertAllClose(values.reshape(-1), self.problem(U.reshape(6, 60)))
        one_by_one = torch.cat([self.problem(u.unsqueeze(0)) for u in U[0]])
        self.assertAllClose(values[0], one_by_one)
        self.assertEqual(self.problem(U[0].float()).dtype, torch.float32)
        self.assertEqual(self.problem(U[0, :1]).shape, torch.Size([1]))
        with self.assertRaisesRegex(ValueError, "60 columns"):
            self.problem(torch.rand(1, 59))

    def test_straight_paths_against_hand_computation(self):
        # Closed form: along y = 0.05 from x = 0.05 to 0.95 no obstacle is hit
        # (the nearest row of squares ends at y = 0.04), so the cost is
        # 0.05 * 0.9 for the length plus 100 * 0.9 for missing the goal.
        U = rover_unit((0.03, 0.0)).unsqueeze(0)
        self.assertAlmostEqual(self.problem(U).item(), 0.045 + 90.0 - 5.0, places=9)
        # The diagonal from the start to the goal: no goal penalty, but it crosses
        # the squares at (0.2, 0.2), ..., (0.8, 0.8), each over 0.08 * sqrt(2).
        U = rover_unit((0.03, 0.03)).unsqueeze(0)
        value = self.problem(U).item()
        self.assertAlmostEqual(value, rover_straight_value((0.03, 0.03)), places=9)
        continuous = 0.05 * 0.9 * math.sqrt(2) + 4 * 20 * 0.08 * math.sqrt(2) - 5
        segment = 0.9 * math.sqrt(2) / 999  # the sampling blurs each square's edge
        self.assertAlmostEqual(value, continuous, delta=4 * 20 * segment)
        self.assertGreater(value, 4.0)  # the collisions cost about 9
        # Falling short of the goal: the end (0.65, 0.65) misses it by 0.6 in L1.
        U = rover_unit((0.02, 0.02)).unsqueeze(0)
        value = self.problem(U).item()
        self.assertAlmostEqual(value, rover_straight_value((0.02, 0.02)), places=9)
        self.assertGreater(value, 60.0)

    def test_unit_cube_maps_to_the_step_range(self):
        # u = 0 and u = 1 are the smallest and largest steps, -1/30 and 1/15:
        # the rover then leaves [0, 1)^2, where every point costs as a collision.
        for corner in (0.0, 1.0):
            step = ROVER_STEP_RANGE[int(corner)]
            U = torch.full((1, 60), corner, dtype=torch.double)
            expected = rover_straight_value((step, step))
            self.assertAlmostEqual(self.problem(U).item(), expected, places=9)
        # Mixed: the largest x step and the smallest y step.
        U = rover_unit(ROVER_STEP_RANGE[::-1]).unsqueeze(0)
        self.assertAllClose(U[0, :2], torch.tensor([1.0, 0.0], dtype=torch.double))
        expected = rover_straight_value(ROVER_STEP_RANGE[::-1])
        self.assertAlmostEqual(self.problem(U).item(), expected, places=9)
        # u = 1/3 is a zero step: the rover stays at the start (length 0).
        U = torch.full((1, 60), 1 / 3, dtype=torch.double)
        self.assertAlmostEqual(self.problem(U).item(), 100 * 1.8 - 5.0, places=9)

    def test_reference_path_avoids_obstacles_and_meets_the_goal(self):
        opt = self.problem.optimizer.double()
        lo, hi = ROVER_STEP_RANGE
        steps = (lo + opt * (hi - lo)).reshape(30, 2)
        end = torch.tensor(ROVER_START, dtype=torch.double) + steps.sum(0)
        self.assertAllClose(end, torch.tensor(ROVER_GOAL, dtype=torch.double))
        # Its value is 0.05 times its length: within a few thousandths of the
        # shortest collision-free path past the corners (0.24, 0.16), (0.84, 0.76).
        shortest = 2 * math.hypot(0.19, 0.11) + 0.6 * math.sqrt(2)
        value = self.problem(opt.unsqueeze(0)).item()
        self.assertGreater(value, -5 + 0.05 * shortest)
        self.assertLess(value, -5 + 0.05 * (shortest + 0.005))
        # The straight diagonal is far worse (its collisions cost about 9).
        straight = self.problem(rover_unit((0.03, 0.03)).unsqueeze(0)).item()
        self.assertGreater(straight, value + 8.5)

    def test_spline_matches_fitpack(self):
        # The trajectory is FITPACK's interpolating cubic (splprep, k=3, s=0)
        # through the start and its running sums with the steps.
        U = torch.rand(3, 60, dtype=torch.double)
        U[2, 10:14] = 1 / 3  # two zero steps: repeated control points are merged
        lo, hi = ROVER_STEP_RANGE
        for u, value in zip(U, self.problem(U), strict=True):
            steps = (lo + u.numpy() * (hi - lo)).reshape(30, 2)
            points = np.vstack([ROVER_START, ROVER_START + np.cumsum(steps, 0)])
            points = points[np.r_[True, (np.diff(points, axis=0) != 0).any(1)]]
            tck, _ = si.splprep(points.T, k=3, s=0)
            path = np.stack(si.splev(np.linspace(0, 1, 1000), tck), axis=-1)
            self.assertAlmostEqual(value.item(), rover_value_along(path), places=8)

    def test_repeated_control_points_are_merged(self):
        # A zero step only repeats a control point: putting it first or last
        # leaves the same 30 distinct points, hence the same trajectory.
        U = torch.rand(1, 60, dtype=torch.double)
        first = torch.cat([torch.full((1, 2), 1 / 3, dtype=torch.double), U[:, 2:]], 1)
        last = torch.cat([U[:, 2:], torch.full((1, 2), 1 / 3, dtype=torch.double)], 1)
        self.assertAllClose(self.problem(first), self.problem(last))
        self.assertTrue(self.problem(first).isfinite().all())

    def test_no_value_below_the_bound(self):
        bound = self.problem.optimal_value
        U = torch.rand(1000, 60, dtype=torch.double)
        self.assertTrue((self.problem(U) >= bound).all())
        # Near the reference path, where values come close to the bound.
        opt = self.problem.optimizer.double()
        near = (opt + 0.01 * torch.randn(500, 60, dtype=torch.double)).clamp(0, 1)
        values = self.problem(near)
        self.assertTrue((values >= bound).all())
        self.assertLess(values.min().item(), 0.0)  # some of them do come close
