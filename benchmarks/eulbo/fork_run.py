r"""Continue a stored SVGP run under another method's settings and a larger budget.

A BO check of a change that only acts late in a run (for example the subset fit's
budget above ``lbfgs_max_n`` points) need not replay the shared beginning: this
copies one run of a runner output folder (its rows, and its resume file with the
carried model and trust region) into a new folder under the name of another
registered method, with that method's ``EULBOOptions``, and the runner's
``--resume`` then continues it to the new budget. Fork the unchanged method too
(``--as`` its own name), so that both arms continue from the same state through the
same pipeline.

The method's class, utility, trust region and kernel must be those of the stored
run (only the optimizer settings change); the resume file must hold every stored
row of the run (a run that ended cleanly). ``fork.json`` in the new folder records
the source and the settings replaced.

Usage:
    PYTHONPATH=. python benchmarks/eulbo/fork_run.py SRC_DIR --method M --seed S \
        --as NEW_METHOD --budget B --output OUT
    PYTHONPATH=. botorch-ext compare --methods NEW_METHOD --seeds S --budget B \
        ...the stored run's other settings... --resume --output OUT
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fork(
    source: str | os.PathLike[str],
    method: str,
    seed: int,
    new_method: str,
    budget: int,
    output: str | os.PathLike[str],
) -> dict:
    r"""Write the fork of ``source``'s run of ``method`` and ``seed`` to ``output``.

    Returns:
        What ``fork.json`` records.

    Raises:
        ValueError: If the folder, run or state does not allow a fork (naming it).
    """
    import torch

    from botorch_ext.runner.checkpoint import state_path
    from botorch_ext.runner.methods import get_method

    src, out = Path(source), Path(output)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"--output {str(out)!r} exists and is not empty")
    config = json.loads((src / "config.json").read_text())
    with open(src / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = [r for r in reader if r["method"] == method and int(r["seed"]) == seed]
    if not rows:
        raise ValueError(f"no rows of method {method!r}, seed {seed} in {str(src)!r}")
    if budget <= len(rows):
        raise ValueError(f"--budget {budget} is not above the {len(rows)} stored rows")
    saved = torch.load(state_path(src, method, seed), weights_only=False)
    if int(saved["X"].shape[0]) != len(rows):
        raise ValueError(
            f"the state holds {saved['X'].shape[0]} rows, the run {len(rows)}: "
            "fork a run that ended cleanly"
        )
    run = saved["method"]
    new = get_method(new_method).new_run()
    for name in ("utility", "turbo", "kernel", "preset", "model_kwargs"):
        if getattr(new, name, None) != getattr(run, name, None):
            raise ValueError(
                f"--as {new_method!r} differs from {method!r} in {name!r}; "
                "only the optimizer settings may change"
            )
    replaced = new.base_options != run.base_options
    run.base_options = new.base_options
    key = json.loads(saved["key"])
    key.update(method=new_method, budget=budget)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "method": new_method})
    config.update(methods=[new_method], seeds=[seed], budget=budget)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    saved.update(method=run, key=json.dumps(key, sort_keys=True))
    path = state_path(out, new_method, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(saved, path)
    record = {
        "source": str(src),
        "method": method,
        "seed": seed,
        "rows": len(rows),
        "as": new_method,
        "budget": budget,
        "options_replaced": replaced,
        "options": repr(new.base_options),
    }
    (out / "fork.json").write_text(json.dumps(record, indent=2))
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", help="the stored run's output folder")
    parser.add_argument("--method", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--as", dest="new_method", required=True)
    parser.add_argument("--budget", type=int, required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        record = fork(
            args.source,
            args.method,
            args.seed,
            args.new_method,
            args.budget,
            args.output,
        )
    except ValueError as e:
        parser.error(str(e))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
