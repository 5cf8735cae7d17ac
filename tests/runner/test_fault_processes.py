r"""Faults with real processes: a SIGKILLed Dask worker and a killed local worker
process (the run continues from its rows: no duplicate row, no point evaluated
twice), a lost Dask scheduler (the grid stops with its rows; a resume on a new
scheduler finishes it), and a TLS-only scheduler (a round trip with credentials
made here; a plain-TCP client refused; ``config.json`` records no credentials).

Faults are planted in ``tests.runner.faulty:branin`` through environment
variables, which every process of a grid inherits; each evaluated point is
logged to a file by whichever process evaluated it.
"""

import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from unittest import mock

import dask
import distributed
from botorch.utils.testing import BotorchTestCase
from distributed.security import Security

from botorch_ext.runner.compare import run_grid
from botorch_ext.runner.loop import RunConfig
from botorch_ext.runner.options import MethodOptions
from botorch_ext.runner.results import read_results
from tests.test_cli import _main

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = "tests.runner.faulty:branin"
BASE = RunConfig(PROBLEM, "sobol", budget=9, n_init=4,
                 options=MethodOptions(num_restarts=2, raw_samples=16))  # fmt: skip
# One model-free run and one model-based run.
GRID = (["sobol", "qlogei"], [0])


def _key(row):
    return (row["method"], row["seed"], row["n_evals"])


def _without_times(rows):
    return [
        {k: v for k, v in r.items() if not k.endswith("seconds")}
        for r in sorted(rows, key=_key)
    ]


@functools.cache
def _uncut():
    with mock.patch.dict(os.environ, {"FAULTY_LOG": os.devnull}):
        return _without_times(run_grid(BASE, *GRID, threads=1))


class FaultCase(BotorchTestCase):
    def setUp(self):
        super().setUp()
        self.expected = _uncut()
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.log = self.tmp / "evaluations.log"
        self.faults = {
            "FAULTY_LOG": str(self.log),
            "FAULTY_MARKER": str(self.tmp / "marker"),
        }
        patch = mock.patch.dict(os.environ, self.faults)
        patch.start()
        self.addCleanup(patch.stop)

    def evaluated(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

    def assert_no_duplicates(self, rows):
        keys = Counter(_key(r) for r in rows)
        self.assertEqual([k for k, n in keys.items() if n > 1], [])

    def start(self, module, *args, env=None):
        env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), env.get("PYTHONPATH")) if p
        )
        name = f"{module}-{len(list(self.tmp.glob('*.out')))}"
        out = open(self.tmp / f"{name}.out", "w")
        self.addCleanup(out.close)
        command = [sys.executable, "-m", f"distributed.cli.{module}", *args]
        process = subprocess.Popen(command, env=env, stdout=out, stderr=out)
        self.addCleanup(self.stop, process)
        return process

    def stop(self, process):
        if process.poll() is None:
            process.kill()
        process.wait()

    def scheduler(self, *args):
        file = self.tmp / f"scheduler-{time.monotonic_ns()}.json"
        process = self.start(
            "dask_scheduler", "--host", "127.0.0.1", "--port", "0",
            "--no-dashboard", "--scheduler-file", str(file), *args,
        )  # fmt: skip
        for _ in range(1200):  # the file appears once the scheduler listens
            if file.exists() and file.read_text().strip():
                return process, json.loads(file.read_text())["address"], file
            self.assertIsNone(process.poll(), "the scheduler exited")
            time.sleep(0.1)
        self.fail("no scheduler")

    def worker(self, file, *args, env=None):
        return self.start(
            "dask_worker", "--scheduler-file", str(file), "--nthreads", "1",
            "--no-nanny", "--no-dashboard", *args, env=env,
        )  # fmt: skip


class TestKilledWorkers(FaultCase):
    def test_killed_worker_process_continues_its_run(self):
        # Model-free runs: the pool's start-up is the cost here.
        methods = ["sobol", "random"]
        with mock.patch.dict(os.environ, {"FAULTY_LOG": os.devnull}):
            expected = _without_times(run_grid(BASE, methods, [0]))
        os.environ["FAULTY_KILL_AT"] = "6"
        rows, notes = [], []
        run_grid(BASE, methods, [0], workers=2, threads=1, on_row=rows.append,
                 log=notes.append)  # fmt: skip
        self.assertTrue(any("a worker process died" in n for n in notes), notes)
        self.assert_no_duplicates(rows)
        self.assertEqual(_without_times(rows), expected)
        # One evaluation per row: nothing evaluated twice (the two runs share
        # their initial design, so points repeat across runs).
        self.assertEqual(len(self.evaluated()), len(expected))

    def test_sigterm_stops_compare_as_ctrl_c_does_and_leaves_no_worker(self):
        # A worker process sends SIGTERM to the grid's process (the CLI) while it
        # evaluates: the CLI takes Ctrl-C's path, and its workers are stopped.
        out = self.tmp / "out"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "FAULTY_KILL_AT": "6",
               "FAULTY_KILL_PID": "parent", "FAULTY_KILL_SIGNAL": "TERM"}  # fmt: skip
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), env.get("PYTHONPATH")) if p
        )
        argv = ["compare", "--problem", PROBLEM, "--methods", "sobol,random",
                "--seeds", "0", "--budget", "12", "--n-init", "4", "--workers", "2",
                "--output", str(out)]  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "botorch_ext", *argv],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        self.assertEqual(done.returncode, 143, done.stderr)
        self.assertIn("terminated (SIGTERM): the rows evaluated so far", done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        config = json.loads((out / "config.json").read_text())
        self.assertEqual(config["status"], "interrupted")
        # No worker outlived the CLI: nothing is evaluated after it exited.
        logged = len(self.evaluated())
        time.sleep(3)
        self.assertEqual(len(self.evaluated()), logged)
        rows = read_results(out / "results.csv").rows
        self.assertLess(len(rows), 24)
        self.assert_no_duplicates(rows)
        self.assertEqual(len(rows), logged)  # every evaluated point has its row
        # Resumed without the fault, the grid ends as an uncut one.
        env.pop("FAULTY_KILL_AT")
        resumed = subprocess.run(
            [sys.executable, "-m", "botorch_ext", *argv, "--resume"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        rows = read_results(out / "results.csv").rows
        self.assertEqual(len(rows), 24)
        self.assert_no_duplicates(rows)

    def test_sigkilled_dask_worker_no_duplicate_and_nothing_evaluated_twice(self):
        _, address, file = self.scheduler()
        for _ in range(2):
            self.worker(file, env={"FAULTY_KILL_AT": "6"})
        client = distributed.Client(address, timeout="60s")
        self.addCleanup(client.close)
        client.wait_for_workers(2, timeout=120)
        rows, notes = [], []
        run_grid(BASE, *GRID, backend="dask", scheduler=address, threads=1,
                 on_row=rows.append, log=notes.append)  # fmt: skip
        self.assertTrue((self.tmp / "marker").exists())  # a worker was killed
        self.assertEqual(len(client.scheduler_info()["workers"]), 1)
        self.assertTrue(any("started again" in n for n in notes), notes)
        self.assert_no_duplicates(rows)
        self.assertEqual(_without_times(rows), self.expected)
        # One evaluation per row: nothing evaluated twice (the two runs share
        # their initial design, so points repeat across runs).
        self.assertEqual(len(self.evaluated()), len(self.expected))


class TestSchedulerLost(FaultCase):
    def test_lost_scheduler_stops_with_rows_and_resume_on_a_new_one_finishes(self):
        scheduler, address, file = self.scheduler()
        faults = {"FAULTY_KILL_AT": "6", "FAULTY_KILL_PID": str(scheduler.pid)}
        worker = self.worker(file, env=faults)
        out = self.tmp / "out"
        argv = ["compare", "--problem", PROBLEM, "--methods", ",".join(GRID[0]),
                "--seeds", "0", "--budget", "9", "--n-init", "4",
                "--num-restarts", "2", "--raw-samples", "16", "--backend", "dask",
                "--output", str(out)]  # fmt: skip
        code, _, err = _main([*argv, "--scheduler", address])
        self.assertEqual(code, 1, err)
        self.assertIn("lost the Dask scheduler", err)
        self.assertIn("--resume", err.strip().splitlines()[-1])
        self.assertIsNotNone(scheduler.poll())  # it was killed
        kept = read_results(out / "results.csv").rows
        self.assertLess(len(kept), len(self.expected))
        self.assert_no_duplicates(kept)
        self.stop(worker)
        # A new scheduler at another address: the resume finishes the grid.
        _, address, file = self.scheduler()
        self.worker(file)
        code, _, err = _main([*argv, "--scheduler", address, "--resume"])
        self.assertEqual(code, 0, err)
        rows = read_results(out / "results.csv").rows
        self.assert_no_duplicates(rows)
        self.assertEqual(_without_times(rows), self.expected)


class TestTls(FaultCase):
    def setUp(self):
        super().setUp()
        security = Security.temporary()
        self.security = security
        self.files = {}
        for name in ("tls_ca_file", "tls_scheduler_cert", "tls_scheduler_key"):
            path = self.tmp / f"{name}.pem"
            path.write_text(getattr(security, name))
            self.files[name] = str(path)
        tls = ["--tls-ca-file", self.files["tls_ca_file"],
               "--tls-cert", self.files["tls_scheduler_cert"],
               "--tls-key", self.files["tls_scheduler_key"]]  # fmt: skip
        _, self.address, file = self.scheduler("--protocol", "tls", *tls)
        self.worker(file, *tls)

    def test_tls_round_trip_and_plain_tcp_refused(self):
        self.assertTrue(self.address.startswith("tls://127.0.0.1:"))
        plain = self.address.replace("tls://", "tcp://")
        with self.assertRaises((OSError, TimeoutError)):
            distributed.Client(plain, timeout="5s")
        rows = run_grid(BASE, ["sobol"], [0], backend="dask",
                        scheduler=self.address, security=self.security)  # fmt: skip
        expected = [r for r in self.expected if r["method"] == "sobol"]
        self.assertEqual(_without_times(rows), expected)

    def test_cli_takes_tls_from_dask_config_and_records_no_credentials(self):
        env = {
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": self.files["tls_ca_file"],
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": self.files[
                "tls_scheduler_cert"
            ],
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": self.files["tls_scheduler_key"],
        }
        out = self.tmp / "out"
        argv = ["compare", "--problem", PROBLEM, "--methods", "sobol", "--seeds",
                "0", "--budget", "9", "--n-init", "4", "--backend", "dask",
                "--scheduler", self.address, "--output", str(out)]  # fmt: skip
        with mock.patch.dict(os.environ, env):
            dask.config.refresh()
            self.addCleanup(dask.config.refresh)
            code, _, err = _main(argv)
        self.assertEqual(code, 0, err)
        text = (out / "config.json").read_text()
        for secret in (*self.files.values(), self.security.tls_scheduler_key):
            self.assertNotIn(secret, text)
        self.assertNotIn("BEGIN", text)
        self.assertEqual(json.loads(text)["scheduler"], self.address)


class TestEmbeddedCluster(BotorchTestCase):
    def test_embedded_cluster_listens_on_loopback_only(self):
        made = []
        real = distributed.LocalCluster

        def spy(*args, **kwargs):
            cluster = real(*args, **kwargs)
            made.append(cluster)
            return cluster

        base = RunConfig("branin", "sobol", budget=4, n_init=3)
        with mock.patch.object(distributed, "LocalCluster", spy):
            rows = run_grid(base, ["sobol"], [0], backend="dask", workers=1)
        self.assertEqual(len(rows), 4)
        (cluster,) = made
        self.assertTrue(cluster.scheduler_address.startswith("tcp://127.0.0.1:"))
