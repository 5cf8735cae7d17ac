r"""Cross-check and time the ``rover`` problem of ``botorch_ext.runner.problems``.

1. Re-evaluates the rover at random points of the unit cube with a separate,
   loop-based NumPy/SciPy evaluation (FITPACK's ``splprep(k=3, s=0)`` for the
   spline, a per-point obstacle test, the trapezoidal rule) and prints the
   largest difference from the vectorized torch version.
2. Prints the value at the problem's reference optimizer, the lower bound and
   the best of the random points.
3. Times 1000 evaluations, as one batch and one at a time.

Run with ``OMP_NUM_THREADS=1 python benchmarks/rover_check.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.interpolate as si
import torch

from botorch_ext.runner.problems import get_problem


def numpy_rover_value(u: np.ndarray, side: float = 0.08) -> float:
    r"""-reward of the rover at one point ``u`` of ``[0, 1]^60``, computed plainly."""
    lower, upper = -1.0 / 30.0, 1.0 / 15.0
    steps = (lower + u * (upper - lower)).reshape(30, 2)
    start, goal = np.array([0.05, 0.05]), np.array([0.95, 0.95])
    points = np.vstack([start, start + np.cumsum(steps, axis=0)])
    # Drop a point that repeats its predecessor (FITPACK needs distinct u).
    keep = np.r_[True, np.any(points[1:] != points[:-1], axis=1)]
    points = points[keep]
    tck, _ = si.splprep(points.T, k=3, s=0)
    path = np.vstack(si.splev(np.linspace(0.0, 1.0, 1000), tck)).T
    marks = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    centres = [(a, b) for a in marks for b in marks][1:-1]

    def density(p: np.ndarray) -> float:
        blocked = not (0.0 <= p[0] < 1.0 and 0.0 <= p[1] < 1.0)
        for cx, cy in centres:
            inside_x = cx - side / 2 <= p[0] < cx + side / 2
            inside_y = cy - side / 2 <= p[1] < cy + side / 2
            blocked = blocked or (inside_x and inside_y)
        return 0.05 + 20.0 * blocked

    dens = np.array([density(p) for p in path])
    lengths = np.linalg.norm(np.diff(path, axis=0), axis=1)
    cost = np.sum(lengths * 0.5 * (dens[1:] + dens[:-1]))
    cost += 100.0 * np.abs(path[-1] - goal).sum()
    return cost - 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-check", type=int, default=200)
    parser.add_argument("--n-time", type=int, default=1000)
    args = parser.parse_args()

    problem = get_problem("rover")
    gen = torch.Generator().manual_seed(0)
    U = torch.rand(args.n_check, 60, generator=gen, dtype=torch.double)
    # Points near the reference path too (they mostly avoid the obstacles), and
    # one with repeated control points (a step of exactly zero at u = 1/3).
    near = (problem.optimizer + 0.02 * torch.randn(50, 60, generator=gen)).clamp(0, 1)
    repeat = problem.optimizer.clone()
    repeat[10:14] = 1.0 / 3.0
    U = torch.cat([U, near, repeat.unsqueeze(0), problem.optimizer.unsqueeze(0)])
    ours = problem(U).numpy()
    ref = np.array([numpy_rover_value(u) for u in U.numpy()])
    diff = np.abs(ours - ref)
    print(f"points checked: {len(U)}; max |torch - numpy/scipy| = {diff.max():.3e}")
    print(
        f"values: random min {ours[: args.n_check].min():.4f}, "
        f"median {np.median(ours[: args.n_check]):.4f}; "
        f"near the reference min {ours[args.n_check : -2].min():.6f}"
    )
    print(
        f"reference optimizer: {ours[-1]:.6f}; lower bound "
        f"{problem.optimal_value:.6f}; repeated-point variant {ours[-2]:.6f}"
    )

    Ut = torch.rand(args.n_time, 60, generator=gen, dtype=torch.double)
    problem(Ut[:10])  # warm-up
    t0 = time.perf_counter()
    problem(Ut)
    batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    for u in Ut:
        problem(u.unsqueeze(0))
    looped = time.perf_counter() - t0
    print(
        f"{args.n_time} evaluations: {batched:.3f} s as one batch, "
        f"{looped:.3f} s one at a time ({1e3 * looped / args.n_time:.2f} ms each)"
    )


if __name__ == "__main__":
    main()
