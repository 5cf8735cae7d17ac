r"""How the thread count affects a small model: ``fit_elbo`` with 1 and 2 threads.

The model is the getting-started page's: ``EULBOModel`` on 20 points in 2-D
(``train_X = torch.rand(20, 2, dtype=torch.double)``, ``train_Y = -((train_X -
0.3) ** 2).sum(-1, keepdim=True)``), fitted by ``fit_elbo`` with the default
options (L-BFGS on the collapsed bound). Each fit runs in a fresh process with
``OMP_NUM_THREADS`` set to the thread count (torch reads it at start-up), and the
thread counts alternate (1, 2, 1, 2, ...) so that both see the same background
load. Each row records the fit's wall time, the per-datum ELBO, the L-BFGS
iterations and the share of the machine's CPU that other processes used during
the fit (``OtherCPU``).

Usage::

    python benchmarks/threads/fit_elbo_threads.py --repeats 5 \
        --output benchmarks/threads/results/fit_elbo_threads.csv
    python benchmarks/threads/fit_elbo_threads.py --summary \
        benchmarks/threads/results/fit_elbo_threads.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def fit_once(seed: int) -> dict:
    """One fit in this process (its thread count is the process's)."""
    import torch
    from common import OtherCPU

    from botorch_ext.eulbo import EULBOModel, fit_elbo

    torch.manual_seed(seed)
    train_X = torch.rand(20, 2, dtype=torch.double)
    train_Y = -((train_X - 0.3) ** 2).sum(-1, keepdim=True)
    svgp = EULBOModel(train_X, train_Y)
    with OtherCPU() as other:
        start = time.perf_counter()
        elbo = fit_elbo(svgp)
        seconds = time.perf_counter() - start
    return {
        "torch_threads": torch.get_num_threads(),
        "seed": seed,
        "fit_seconds": round(seconds, 3),
        "elbo_per_datum": elbo,
        "lbfgs_steps": svgp.last_fit.get("steps", ""),
        "other_cpu_share": round(other.share, 3),
    }


def run(repeats: int, threads: list[int], output: str) -> list[dict]:
    from common import environment, write_csv

    print(environment())
    command = " ".join(["python", os.path.relpath(__file__), *sys.argv[1:]])
    rows = []
    for repeat in range(repeats):
        for n_threads in threads:
            env = dict(os.environ, OMP_NUM_THREADS=str(n_threads))
            out = subprocess.run(
                [sys.executable, __file__, "--worker", str(repeat)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            row = {"repeat": repeat, "OMP_NUM_THREADS": n_threads}
            row |= json.loads(out.strip().splitlines()[-1])
            row["command"] = command
            rows.append(row)
            print(
                f"repeat {repeat}, {n_threads} thread(s): {row['fit_seconds']:.2f} s, "
                f"other processes {100 * row['other_cpu_share']:.0f}% of the CPU"
            )
    write_csv(output, rows)
    print(f"wrote {output}")
    return rows


def summary(rows: list[dict]) -> str:
    """Median (min-max) fit time and other processes' CPU share per thread count."""
    lines = [
        "| threads | fits | fit s, median (min-max) | other processes' CPU, median |",
        "|---|---|---|---|",
    ]
    for n in sorted({int(r["OMP_NUM_THREADS"]) for r in rows}):
        sel = [r for r in rows if int(r["OMP_NUM_THREADS"]) == n]
        secs = [float(r["fit_seconds"]) for r in sel]
        other = statistics.median(float(r["other_cpu_share"]) for r in sel)
        lines.append(
            f"| {n} | {len(sel)} | {statistics.median(secs):.1f} "
            f"({min(secs):.1f}-{max(secs):.1f}) | {100 * other:.0f}% |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,2", help="comma-separated counts")
    parser.add_argument(
        "--output",
        default=os.path.join(HERE, "results", "fit_elbo_threads.csv"),
    )
    parser.add_argument("--summary", metavar="CSV", help="print the table of a CSV")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(fit_once(args.worker)))
        return
    if args.summary:
        with open(args.summary, newline="") as fh:
            print(summary(list(csv.DictReader(fh))))
        return
    threads = [int(t) for t in args.threads.split(",")]
    print(summary(run(args.repeats, threads, args.output)))


if __name__ == "__main__":
    main()
