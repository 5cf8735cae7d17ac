import csv
import dataclasses
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from unittest import mock

import distributed
import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner.backends import dask as dask_backend
from botorch_ext.runner.compare import run_grid
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.problems import Problem
from botorch_ext.runner.results import read_results
from tests.test_cli import _main

ROOT = Path(__file__).resolve().parents[2]
#: The issue's cheap grid: Branin, a model-free and a model-based method.
GRID = (["random", "sobol", "qlogei"], [0, 1])
BASE = RunConfig(
    "branin",
    "random",
    budget=5,
    n_init=3,
    q=1,
    options=MethodOptions(num_restarts=2, raw_samples=16),
)
#: ``compare``'s arguments for ``BASE``, less the grid's and the backend's.
COMPARE = ["compare", "--problem", "branin", "--budget", "5", "--n-init", "3",
           "--num-restarts", "2", "--raw-samples", "16"]  # fmt: skip
# A failsafe only: the stop reaches the blocked evaluation within moments.
FAILSAFE_S = 300


def _cli(argv):
    code, _, err = _main(argv)
    return code, err


def _key(row):
    return (row["method"], row["seed"], row["n_evals"])


def _without_times(rows):
    return [
        {k: v for k, v in r.items() if not k.endswith("seconds")}
        for r in sorted(rows, key=_key)
    ]


@functools.cache
def _in_process_rows(methods=tuple(GRID[0]), seeds=tuple(GRID[1])):
    # The processes backend's rows (it gives the same rows with any number of
    # workers: tests/runner/test_compare.py), computed here without spawning.
    threads = torch.get_num_threads()
    try:
        return tuple(run_grid(BASE, methods, seeds, workers=1, threads=1))
    finally:
        torch.set_num_threads(threads)


class TestDaskBackend(BotorchTestCase):
    def test_local_cluster_gives_the_processes_rows_streamed(self):
        events = []
        rows = run_grid(
            BASE, *GRID, workers=2, backend="dask",
            on_row=lambda r: events.append(("row", r["method"], r["seed"])),
            on_run_done=lambda c: events.append(("done", c.method, c.seed)),
        )  # fmt: skip
        self.assertEqual(_without_times(rows), _without_times(_in_process_rows()))
        # Every run's rows reach the caller one by one, all before its "done".
        for method in GRID[0]:
            for seed in GRID[1]:
                mine = [e for e in events if e[1:] == (method, seed)]
                expected = [("row", method, seed)] * 5 + [("done", method, seed)]
                self.assertEqual(mine, expected)

    def test_local_cluster_saves_the_method_states(self):
        base = dataclasses.replace(BASE, method="turbo")
        with tempfile.TemporaryDirectory() as tmp:
            run_grid(base, ["turbo"], [0, 1], workers=2, backend="dask",
                     state_dir=tmp)  # fmt: skip
            names = sorted(p.name for p in (Path(tmp) / "state").iterdir())
        self.assertEqual(names, ["turbo-s0.pt", "turbo-s1.pt"])

    def test_bad_backend_arguments(self):
        with self.assertRaisesRegex(ValueError, "unknown backend 'x'; choose from"):
            run_grid(BASE, ["random"], [0], backend="x")
        with self.assertRaisesRegex(ValueError, "scheduler 'tcp://h:1' needs"):
            run_grid(BASE, ["random"], [0], scheduler="tcp://h:1")
        with (
            mock.patch.object(dask_backend, "CONNECT_TIMEOUT", "1s"),
            self.assertRaisesRegex(ValueError, "cannot reach the Dask scheduler"),
        ):
            run_grid(
                BASE, ["random"], [0], backend="dask", scheduler="tcp://127.0.0.1:9"
            )
        # On the command line the error names the flag.
        with (
            mock.patch.object(dask_backend, "CONNECT_TIMEOUT", "1s"),
            tempfile.TemporaryDirectory() as tmp,
        ):
            code, err = _cli([*COMPARE, "--methods", "random", "--seeds", "0",
                              "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9",
                              "--output", tmp])  # fmt: skip
        self.assertEqual(code, 2, err)
        self.assertIn("given by --scheduler (", err)


class TestSchedulerByHand(BotorchTestCase):
    r"""``compare --backend dask --scheduler ADDRESS`` against a ``dask scheduler``
    and a ``dask worker`` started as separate processes on 127.0.0.1."""

    def setUp(self):
        super().setUp()
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), env.get("PYTHONPATH")) if p
        )
        file = str(self.tmp / "scheduler.json")
        self.processes = []
        for module, args in (
            ("dask_scheduler", ["--host", "127.0.0.1", "--port", "0"]),
            ("dask_worker", ["--scheduler-file", file, "--nworkers", "2"]),
        ):
            command = [sys.executable, "-m", f"distributed.cli.{module}", *args,
                       "--no-dashboard", "--scheduler-file", file]  # fmt: skip
            if module == "dask_worker":
                command = command[:-2] + ["--nthreads", "1"]
            log = open(self.tmp / f"{module}.log", "w")
            self.addCleanup(log.close)
            process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
            self.processes.append(process)
            self.addCleanup(self._stop, process)
            if module == "dask_scheduler":
                self.address = self._wait_for_address(Path(file))

    def _wait_for_address(self, file: Path) -> str:
        for _ in range(600):  # the file appears once the scheduler listens
            if file.exists() and file.read_text().strip():
                return json.loads(file.read_text())["address"]
            time.sleep(0.1)
        self.fail(f"no scheduler: {(self.tmp / 'dask_scheduler.log').read_text()}")

    def _stop(self, process):
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _compare(self, *extra):
        code, err = _cli([*COMPARE, "--methods", ",".join(GRID[0]), "--seeds", "0,1",
                          "--backend", "dask", "--scheduler", self.address,
                          "--output", str(self.tmp / "out"), *extra])  # fmt: skip
        self.assertEqual(code, 0, err)

    def test_compare_on_a_scheduler_started_by_hand_and_resume(self):
        self._compare()
        path = self.tmp / "out" / "results.csv"
        expected = _without_times(_in_process_rows())
        self.assertEqual(_without_times(read_results(path).rows), expected)
        config = json.loads((self.tmp / "out" / "config.json").read_text())
        self.assertEqual(config["backend"], "dask")
        self.assertEqual(config["scheduler"], self.address)
        # Cut the grid (keep the header and 7 rows: one run whole, one partial)
        # and resume it on the same cluster: the same rows as uncut.
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:8]))
        self._compare("--resume")
        with open(path) as f:
            self.assertEqual(len(list(csv.DictReader(f))), 30)
        self.assertEqual(_without_times(read_results(path).rows), expected)


class TestCooperativeStop(BotorchTestCase):
    r"""Ctrl-C in ``compare --backend dask --scheduler ADDRESS``: the tasks running
    on the cluster stop at their next proposal or evaluation, and the client
    writes their rows before it exits.

    The cluster runs its two workers as threads of this process, so the test can
    see every evaluation and hold one in progress while the client is interrupted
    by a real SIGINT. The grid has one model-based run: model-based methods seed
    torch's global generator, which threads of one process share.
    """

    methods, seeds = ("random", "sobol", "qlogei"), (0,)

    def setUp(self):
        super().setUp()
        # Before any patch below.
        self.expected = _without_times(_in_process_rows(self.methods, self.seeds))
        threads = torch.get_num_threads()
        self.addCleanup(torch.set_num_threads, threads)  # tasks set it here
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.out = Path(tmp.name) / "out"
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        self.addCleanup(cluster.close)
        self.address = cluster.scheduler_address

    def test_ctrl_c_keeps_the_rows_of_running_tasks_and_resume_finishes(self):
        evaluated = []  # every value computed, by any worker thread
        held = []  # the value evaluated while the client was interrupted
        lock = threading.Lock()
        stop_set, drained_after_stop = threading.Event(), threading.Event()
        evaluate, set_event = Problem.__call__, distributed.Event.set
        get_rows = distributed.Queue.get

        def logged(problem, U):
            values = evaluate(problem, U)
            with lock:
                hold = U.shape[0] == 1 and not held  # the first proposal's point
                if hold:
                    held.append(values.item())
            if hold:
                # Ctrl-C while this evaluation is in progress; it ends only once
                # the client has asked the tasks to stop and then taken rows
                # off the queue, so its row reaches the CSV only if the client
                # goes on draining until the running tasks have returned.
                os.kill(os.getpid(), signal.SIGINT)
                drained_after_stop.wait(FAILSAFE_S)
            with lock:
                evaluated.extend(values.tolist())
            return values

        def observed_set(event):
            set_event(event)
            stop_set.set()

        def observed_get(queue, *args, **kwargs):
            # Only the client takes rows off the queue.
            if stop_set.is_set():
                drained_after_stop.set()
            return get_rows(queue, *args, **kwargs)

        argv = [*COMPARE, "--methods", ",".join(self.methods), "--seeds", "0",
                "--backend", "dask", "--scheduler", self.address,
                "--output", str(self.out)]  # fmt: skip
        with (
            mock.patch.object(Problem, "__call__", logged),
            mock.patch.object(distributed.Event, "set", observed_set),
            mock.patch.object(distributed.Queue, "get", observed_get),
        ):
            code, err = _cli(argv)
            self.assertEqual(code, 130, err)
            self.assertIn("interrupted: the rows evaluated so far are in", err)
            config = json.loads((self.out / "config.json").read_text())
            self.assertEqual(config["status"], "interrupted")
            rows = read_results(self.out / "results.csv").rows
            # Every evaluated row is in the CSV, the one held during the
            # interrupt included, and the grid was cut.
            self.assertEqual(Counter(r["value"] for r in rows), Counter(evaluated))
            self.assertLess(len(rows), len(self.expected))
            (row,) = [r for r in rows if r["value"] == held[0]]
            self.assertEqual(row["n_evals"], 4)
            # Its run stopped at its next proposal: no row after the held one.
            mine = [
                r
                for r in rows
                if (r["method"], r["seed"]) == (row["method"], row["seed"])
            ]
            self.assertEqual(sorted(r["n_evals"] for r in mine), [1, 2, 3, 4])
            # --resume finishes the grid with the rows of an uncut grid,
            # evaluating nothing twice.
            code, err = _cli([*argv, "--resume"])
        self.assertEqual(code, 0, err)
        rows = read_results(self.out / "results.csv").rows
        self.assertEqual(_without_times(rows), self.expected)
        self.assertEqual(Counter(r["value"] for r in rows), Counter(evaluated))
