r"""Plant one bug in a copy of the repository and see whether a test catches it.

A mutation check: copy the working tree (the files git tracks or would track, with
their uncommitted changes) into a temporary directory, replace one piece of text
in one source file there, run a pytest target on the copy, and report

* ``KILLED``: the target failed (or did not even import), so the test sees the bug;
* ``SURVIVED``: the target passed with the bug in place, so the tests are blind to
  it;
* ``TIMEOUT``: the target ran past ``--timeout`` seconds (usually a kill, but look).

The working tree itself is never modified, so an interrupted run leaves nothing to
restore and other checkouts are not disturbed. By default the unmutated copy is
run first: a target that already fails proves nothing (``--no-baseline`` skips it).

Example:
    >>> # python tools/mutate.py botorch_ext/eulbo/utilities.py \
    >>> #     --old "f.variance.clamp_min(0).sqrt().squeeze(-1)" \
    >>> #     --new "f.variance.clamp_min(0).squeeze(-1)" \
    >>> #     -- tests/eulbo/test_utilities.py -k ExpectedLogUtility
    >>> # ... KILLED

The exit status is 0 for ``KILLED``/``TIMEOUT``, 1 for ``SURVIVED`` and 2 for a
usage error (the text not found exactly once), a failing baseline or a pytest
error other than failed tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _tracked_files(repo: Path) -> list[str]:
    r"""Files git tracks or would track (untracked but not ignored), relative.

    Outside a git checkout (e.g. in a copy made by this script) every file but
    byte-code caches.
    """
    proc = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=repo,
        capture_output=True,
    )
    if proc.returncode != 0 or not (repo / ".git").exists():
        return [
            str(p.relative_to(repo))
            for p in repo.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    names = proc.stdout.decode().split("\0")
    return [p for p in names if p and (repo / p).is_file()]


def copy_tree(repo: Path, dest: Path) -> None:
    r"""Copy the working tree's files (as they are on disk) into ``dest``."""
    for rel in _tracked_files(repo):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, target)


def apply_mutation(path: Path, old: str, new: str, occurrence: int | None) -> None:
    r"""Replace ``old`` by ``new`` in ``path``.

    Args:
        path: The file to change.
        old: Text to replace; it must occur exactly once unless ``occurrence``
            picks one of several.
        new: Replacement text.
        occurrence: 1-based index of the occurrence to replace, or None.

    Raises:
        ValueError: If ``old`` does not occur (or occurs more than once and no
            ``occurrence`` is given, or fewer than ``occurrence`` times).
    """
    text = path.read_text()
    count = text.count(old)
    if count == 0:
        raise ValueError(f"the text to replace does not occur in {path.name}")
    if occurrence is None:
        if count > 1:
            raise ValueError(
                f"the text to replace occurs {count} times in {path.name}; pass "
                "--occurrence N or a longer, unique piece of text"
            )
        occurrence = 1
    if not 1 <= occurrence <= count:
        raise ValueError(f"--occurrence {occurrence} but the text occurs {count} times")
    start = -1
    for _ in range(occurrence):
        start = text.index(old, start + 1)
    path.write_text(text[:start] + new + text[start + len(old) :])


def run_pytest(root: Path, pytest_args: list[str], timeout: float | None) -> str:
    r"""Run pytest in ``root`` on the copy's package; return the outcome's name."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    # The copy's package, not an installed or editable one, must be imported.
    check = subprocess.run(
        [sys.executable, "-c", "import botorch_ext; print(botorch_ext.__file__)"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if check.returncode == 0 and not check.stdout.strip().startswith(str(root)):
        raise RuntimeError(f"botorch_ext imported from {check.stdout.strip()}")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    try:
        proc = subprocess.run(
            cmd + pytest_args,
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "TIMEOUT"
    lines = proc.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    summary = lines[-1] if lines else proc.stderr.strip()[-300:]
    print(f"  pytest exit status {proc.returncode}: {summary}")
    for line in failed:
        print(f"    {line}")
    if proc.returncode == 0:
        return "PASSED"
    # 1: tests failed; 2: collection error (the mutant does not import).
    return "FAILED" if proc.returncode in (1, 2) else f"ERROR({proc.returncode})"


def main(argv: list[str] | None = None) -> int:
    r"""Command-line entry point; see the module docstring."""
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_args = argv[:split], argv[split + 1 :]
    else:
        pytest_args = []
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="source file, relative to the repository root")
    parser.add_argument("--old", required=True, help="text to replace")
    parser.add_argument("--new", required=True, help="replacement text")
    parser.add_argument("--occurrence", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=None, help="seconds")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the unmutated run"
    )
    args = parser.parse_args(argv)
    if not pytest_args:
        parser.error("give the pytest target after `--`")
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        root = Path(tmp)
        copy_tree(REPO, root)
        target = root / args.file
        if not target.is_file():
            parser.error(f"{args.file} is not a file of the working tree")
        if not args.no_baseline:
            print("baseline (unmutated):")
            if run_pytest(root, pytest_args, args.timeout) != "PASSED":
                print("BASELINE FAILS: fix the target before judging mutants")
                return 2
        try:
            apply_mutation(target, args.old, args.new, args.occurrence)
        except ValueError as err:
            parser.error(str(err))
        print(f"mutant: {args.file}: {args.old!r} -> {args.new!r}")
        start = time.monotonic()
        outcome = run_pytest(root, pytest_args, args.timeout)
        seconds = time.monotonic() - start
    verdict = {"FAILED": "KILLED", "PASSED": "SURVIVED"}.get(outcome, outcome)
    print(f"{verdict} ({seconds:.0f} s)")
    if verdict in ("KILLED", "TIMEOUT"):
        return 0
    return 1 if verdict == "SURVIVED" else 2


if __name__ == "__main__":
    sys.exit(main())
