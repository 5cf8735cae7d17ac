r"""The final table of ``qES`` against BoTorch's entropy searches.

Reads the folders of ``benchmarks/reparam_acq/qes_grid.sh``
(``DIR/PROBLEM-qQ/METHOD/results.csv``) and of
``benchmarks/reparam_acq/qes_variants.py`` (``DIR/PROBLEM-qQ/VARIANT/seedS.csv``)
and prints, per problem and q, for each method over the seeds that every method
finished: the best value after the budget (mean ± standard error),
the mean rank, the number of runs within ``--within`` of the optimum (in regret),
the mean acquisition seconds per iteration, and paired differences (mean ±
standard error over shared seeds; negative = the first method is better, as the
problems are minimized).

Usage:
    python benchmarks/reparam_acq/qes_summary.py benchmarks/reparam_acq/results/qes \
        --pairs qes:qmes,qes:gibbon --within 0.12
"""

from __future__ import annotations

import argparse
import glob
import os

import numpy as np
import pandas as pd


def _load(root: str) -> dict[str, dict[str, pd.DataFrame]]:
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for config in sorted(os.listdir(root)):
        folder = os.path.join(root, config)
        if not os.path.isdir(folder) or "-q" not in config:
            continue
        for method in sorted(os.listdir(folder)):
            path = os.path.join(folder, method)
            files = glob.glob(os.path.join(path, "results.csv")) or sorted(
                glob.glob(os.path.join(path, "seed*.csv"))
            )
            if not files:
                continue
            frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
            out.setdefault(config, {})[method] = frame
    return out


def _per_seed(frame: pd.DataFrame, budget: int) -> pd.DataFrame:
    done = frame.groupby("seed").filter(lambda g: len(g) >= budget)
    done = done[done["n_evals"] <= budget]
    best = done.groupby("seed")["regret"].min().rename("regret")
    best_value = done.groupby("seed")["best_value"].min().rename("best")
    first = done.drop_duplicates(["seed", "iteration"])
    first = first[first["iteration"] > 0]
    acq = first.groupby("seed")["acq_seconds"].mean().rename("acq")
    return pd.concat([best, best_value, acq], axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--pairs", default="qes:qmes,qes:gibbon")
    parser.add_argument("--within", type=float, default=0.12)
    parser.add_argument("--methods", default=None, help="comma-separated subset")
    args = parser.parse_args()
    grids: dict[str, dict[str, pd.DataFrame]] = {}
    for root in args.roots:
        for config, methods in _load(root).items():
            grids.setdefault(config, {}).update(methods)
    for config, methods in grids.items():
        if args.methods:
            keep = args.methods.split(",")
            methods = {k: v for k, v in methods.items() if k in keep}
        tables = {k: _per_seed(v, args.budget) for k, v in methods.items()}
        tables = {k: v for k, v in tables.items() if len(v) > 0}
        if not tables:
            continue
        # Methods with the most finished seeds share them (ranks among those);
        # a method still running is shown on its own seeds, marked.
        most = max(len(t) for t in tables.values())
        full = {k: t for k, t in tables.items() if len(t) == most}
        seeds = sorted(set.intersection(*(set(t.index) for t in full.values())))
        if not seeds:
            continue
        regret = pd.DataFrame({k: t.loc[seeds, "regret"] for k, t in full.items()})
        ranks = regret.rank(axis=1).mean()
        print(f"\n{config}: {len(seeds)} shared seeds {seeds}, budget {args.budget}")
        print(
            "| method | best after budget (mean ± s.e.) | mean rank | runs within "
            f"{args.within} | acquisition s / iteration |"
        )
        print("|---|---|---|---|---|")
        for k, t in tables.items():
            own = seeds if k in full else sorted(t.index)
            best = t.loc[own, "best"]
            se = best.std(ddof=1) / np.sqrt(len(best)) if len(best) > 1 else 0.0
            within = int((t.loc[own, "regret"] <= args.within).sum())
            rank = f"{ranks[k]:.2f}" if k in full else f"- (seeds {own})"
            print(
                f"| `{k}` | {best.mean():.3f} ± {se:.3f} | {rank} | "
                f"{within} / {len(own)} | {t.loc[own, 'acq'].mean():.2f} |"
            )
        for pair in args.pairs.split(","):
            a, b = pair.split(":")
            if a in tables and b in tables:
                shared = sorted(set(tables[a].index) & set(tables[b].index))
                diff = tables[a].loc[shared, "best"] - tables[b].loc[shared, "best"]
                se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else 0.0
                wins = int((diff < 0).sum())
                print(
                    f"paired {a} - {b}: {diff.mean():+.3f} ± {se:.3f} "
                    f"({a} better on {wins} of {len(diff)})"
                )


if __name__ == "__main__":
    main()
