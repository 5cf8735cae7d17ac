import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path
from unittest import mock

import torch
from botorch.utils.testing import BotorchTestCase

from botorch_ext.runner import cli, methods
from botorch_ext.runner.protocol import FunctionMethod


def _main(argv):
    out, err = StringIO(), StringIO()
    threads = torch.get_num_threads()  # the CLI sets them for its process
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
        finally:
            torch.set_num_threads(threads)
    return code, out.getvalue(), err.getvalue()


class TestCLI(BotorchTestCase):
    def test_help_via_python_m(self):
        out = subprocess.run(
            [sys.executable, "-m", "botorch_ext", "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        for command in ("problems", "run", "compare", "demo"):
            self.assertIn(command, out.stdout)

    def test_problems(self):
        code, out, _ = _main(["problems"])
        self.assertEqual(code, 0)
        self.assertIn("rosenbrock", out)
        self.assertIn("-3.32237", out)

    def test_methods(self):
        from botorch_ext.runner.methods import METHOD_SUMMARIES

        code, out, _ = _main(["methods"])
        self.assertEqual(code, 0)
        lines = out.strip().splitlines()
        # One line per method, then the pointer to module:attribute.
        self.assertEqual(len(lines), len(METHOD_SUMMARIES) + 1)
        self.assertLessEqual(len(METHOD_SUMMARIES), 25)
        for line, (name, summary) in zip(lines, METHOD_SUMMARIES.items(), strict=False):
            self.assertEqual(line.split()[0], name)
            self.assertTrue(line.endswith(summary))
        self.assertIn("module:attribute", lines[-1])

    def test_unknown_method_points_to_the_listing(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["run", "--problem", "branin", "--method", "nope",
                    "--budget", "5", "--output", tmp]  # fmt: skip
            code, out, err = _main(argv)
        self.assertEqual(code, 2)
        self.assertIn("unknown method 'nope'; see `botorch-ext methods`", err)
        self.assertNotIn("qlogei", err)  # not every name
        self.assertEqual(len(err.strip().splitlines()), 1)

    def test_run_writes_results_and_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["run", "--problem", "branin", "--method", "random", "--budget", "7",
                    "--n-init", "3", "--q", "2", "--seed", "4", "--output", tmp,
                    "--init", "center"]  # fmt: skip
            code, out, _ = _main(argv)
            self.assertEqual(code, 0)
            with open(Path(tmp) / "results.csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 7)
            self.assertEqual(rows[-1]["method"], "random")
            self.assertEqual(rows[-1]["init"], "center")
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertEqual(config["seed"], 4)
            self.assertEqual(config["options"]["outcome_transform"], "standardize")
            self.assertEqual(config["options"]["initial_conditions"], "botorch")
            self.assertEqual(config["options"]["num_inducing_points"], 100)

    def test_run_a_botorch_test_function(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["run", "--problem", "botorch:StyblinskiTang", "--dim", "3",
                    "--method", "sobol", "--budget", "4", "--n-init", "3",
                    "--output", tmp]  # fmt: skip
            code, out, err = _main(argv)
            self.assertEqual(code, 0, err)
            with open(Path(tmp) / "results.csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual({r["problem"] for r in rows}, {"botorch:StyblinskiTang"})
            self.assertEqual({r["dim"] for r in rows}, {"3"})
            # Three coordinates per row (its default dimension is 2).
            x_columns = [c for c in rows[0] if c.startswith("x")]
            self.assertEqual(x_columns, ["x0", "x1", "x2"])
            for row in rows:
                point = [float(row[c]) for c in x_columns]
                self.assertTrue(all(0 <= u <= 1 for u in point), point)
            # Regret against BoTorch's optimum, -39.166166 per dimension.
            last = rows[-1]
            self.assertAlmostEqual(
                float(last["regret"]), float(last["best_value"]) + 3 * 39.166166
            )
            code, _, err = _main([*argv[:2], "botorch:Nope", *argv[3:]])
            self.assertEqual(code, 2)
            self.assertIn("unknown BoTorch test function 'Nope'", err)

    def test_run_bock_with_the_papers_initial_conditions(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["run", "--problem", "rosenbrock", "--dim", "3", "--method",
                    "bock", "--budget", "5", "--n-init", "4", "--output", tmp,
                    "--init", "center", "--outcome-transform", "bilog",
                    "--raw-samples", "16", "--num-restarts", "2",
                    "--initial-conditions", "bock"]  # fmt: skip
            code, _, err = _main(argv)
            self.assertEqual(code, 0, err)
            with open(Path(tmp) / "results.csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual([r["method"] for r in rows], ["bock"] * 5)
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertEqual(config["options"]["initial_conditions"], "bock")
            code, _, err = _main([*argv[:-1], "paper"])
            self.assertEqual(code, 2)
            self.assertIn("unknown initial conditions 'paper'", err)

    def test_compare_writes_table_and_plot(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["compare", "--problem", "branin", "--methods", "random,sobol",
                    "--seeds", "0,1", "--budget", "5", "--n-init", "3",
                    "--output", tmp]  # fmt: skip
            code, out, _ = _main(argv)
            self.assertEqual(code, 0)
            self.assertIn("| random | 2 | 5 |", out)
            self.assertIn("| sobol | 2 | 5 |", out)
            self.assertEqual((Path(tmp) / "regret.png").read_bytes()[:4], b"\x89PNG")
            with open(Path(tmp) / "results.csv") as f:
                self.assertEqual(len(list(csv.DictReader(f))), 20)

    def test_plot_and_summary_merge_stored_directories(self):
        with tempfile.TemporaryDirectory() as tmp:
            for seeds in ("0,1", "2"):
                argv = ["compare", "--problem", "branin", "--methods",
                        "random,sobol", "--seeds", seeds, "--budget", "6",
                        "--n-init", "4", "--q", "2", "--output",
                        str(Path(tmp) / seeds)]  # fmt: skip
                code, _, err = _main(argv)
                self.assertEqual(code, 0, err)
            dirs = [str(Path(tmp) / "0,1"), str(Path(tmp) / "2")]
            code, out, err = _main(["summary", *dirs])
            self.assertEqual(code, 0, err)
            self.assertIn("branin (dim 2): budget 6, n-init 4, q 2, outcome "
                          "transform standardize, 3 seeds", out)  # fmt: skip
            self.assertIn("| random | 3 | 6 |", out)
            self.assertIn("| sobol | 3 | 6 |", out)
            png = Path(tmp) / "merged.png"
            code, out, err = _main(["plot", *dirs, "--output", str(png),
                                    "--band", "quantiles"])  # fmt: skip
            self.assertEqual(code, 0, err)
            self.assertEqual(png.read_bytes()[:4], b"\x89PNG")
            for argv, message in (
                (["plot", *dirs, "--band", "x"], "argument --band: invalid choice"),
                (["plot", dirs[0], dirs[0]], "is given twice"),
                (["summary", tmp], "no results.csv in"),
            ):
                code, _, err = _main(argv)
                self.assertEqual(code, 2)
                self.assertIn(message, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_bad_input_is_one_line_with_exit_status_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            blocker = Path(tmp) / "file"
            blocker.write_text("")
            base = ["--budget", "8", "--n-init", "4"]
            cases = {
                "choose from branin": ["run", "--problem", "x", "--method", "random"],
                "unknown method 'x'; see `botorch-ext methods`": [
                    "run", "--problem", "branin", "--method", "x"
                ],
                "at least the initial design": [
                    "run", "--problem", "branin", "--method", "random", "--n-init", "9"
                ],
                "q must be >= 1": ["run", "--problem", "branin", "--method", "random",
                                   "--q", "0"],
                "num-inducing-points must be >= 1, got -3": [
                    "run", "--problem", "branin", "--method", "elbo-svgp",
                    "--num-inducing-points", "-3"
                ],
                "not writable": ["run", "--problem", "branin", "--method", "random",
                                 "--output", str(blocker / "sub")],
                "choose from standardize": [
                    "compare", "--problem", "branin", "--methods", "random",
                    "--outcome-transform", "x"
                ],
                "argument --backend: invalid choice: 'x'": [
                    "compare", "--problem", "branin", "--methods", "random",
                    "--backend", "x", "--output", str(Path(tmp) / "not-made")
                ],
                "argument --band: invalid choice: 'x'": [
                    "compare", "--problem", "branin", "--methods", "random",
                    "--band", "x", "--output", str(Path(tmp) / "not-made")
                ],
                "--scheduler needs --backend dask": [
                    "compare", "--problem", "branin", "--methods", "random",
                    "--scheduler", "tcp://127.0.0.1:8786"
                ],
            }  # fmt: skip
            for message, argv in cases.items():
                code, out, err = _main(argv[:1] + base + argv[1:])
                self.assertEqual(code, 2, message)
                self.assertIn(message, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertNotIn("Traceback", err)
            # Refused before the output directory is made.
            self.assertFalse((Path(tmp) / "not-made").exists())

    def test_bad_values_are_refused_before_any_evaluation(self):
        # Each bad value ends with one line naming its flag and the value, exit
        # status 2, before the problem is evaluated once: the problem of every
        # case but --problem's is a fault-free Branin that logs its evaluations.
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "evaluations.log"
            (tmp / "raising_on_import.py").write_text("raise RuntimeError('boom')\n")
            (tmp / "adir").mkdir()
            problem = "tests.runner.faulty:branin"
            run = ["run", "--problem", problem, "--method", "qlogei", "--budget",
                   "6", "--n-init", "3", "--output", str(tmp / "out")]  # fmt: skip
            compare = ["compare", "--problem", problem, "--methods", "random",
                       "--budget", "4", "--n-init", "3",
                       "--output", str(tmp / "out")]  # fmt: skip
            self.assertEqual(_main([*compare, "--seeds", "0"])[0], 0)  # to plot
            stored = tmp / "out"
            cases = [
                ([*run, "--raw-samples", "0"],
                 "argument --raw-samples: must be >= 1, got 0"),
                ([*run, "--raw-samples", "-5"],
                 "argument --raw-samples: must be >= 1, got -5"),
                ([*run, "--raw-samples", "2", "--num-restarts", "4"],
                 "argument --raw-samples: must be >= --num-restarts (4) with "
                 "--initial-conditions botorch, got 2"),
                ([*run, "--num-restarts", "0"],
                 "argument --num-restarts: must be >= 1, got 0"),
                ([*run, "--num-restarts", "x"],
                 "argument --num-restarts: expected an integer >= 1, got 'x'"),
                ([*run[:2], "raising_on_import:f", *run[3:]],
                 "argument --problem: problem 'raising_on_import:f': importing module "
                 "'raising_on_import' raised RuntimeError: boom"),
                ([*run[:4], "raising_on_import:m", *run[5:]],
                 "argument --method: method 'raising_on_import:m': importing module "
                 "'raising_on_import' raised RuntimeError: boom"),
                ([*run[:2], "nope", *run[3:]],
                 "argument --problem: unknown problem 'nope'"),
                ([*run[:2], "branin", *run[3:], "--dim", "3"],
                 "problem 'branin' has fixed dimension 2, got --dim 3"),
                ([*run[:2], "rosenbrock", *run[3:], "--dim", "1"],
                 "problem 'rosenbrock' needs --dim >= 2, got 1"),
                ([*run, "--threads", "0"], "argument --threads: must be >= 1, got 0"),
                ([*compare, "--seeds", "a,b"],
                 "argument --seeds: expected comma-separated integers, got 'a,b'"),
                ([*compare, "--seeds", ","],
                 "argument --seeds: expected comma-separated integers, got ','"),
                ([*compare, "--seeds", "0,1,0"],
                 "argument --seeds: seed 0 is given twice in '0,1,0'"),
                ([*compare[:4], "random,sobol,random", *compare[5:]],
                 "argument --methods: method 'random' is given twice in "
                 "'random,sobol,random'"),
                ([*compare[:4], "random,nope", *compare[5:]],
                 "argument --methods: unknown method 'nope'"),
                (["demo", "--workers", "0", "--output", str(tmp / "demo")],
                 "argument --workers: must be >= 1, got 0"),
                ([*compare, "--workers", "0"],
                 "argument --workers: must be >= 1, got 0"),
                ([*compare, "--backend", "dask", "--scheduler", "nonsense"],
                 "argument --scheduler: not a Dask scheduler address (missing port "
                 "number in address 'nonsense'), got 'nonsense'"),
                (["plot", str(stored), "--output", str(tmp / "nodir" / "x.png")],
                 f"argument --output: no directory {str(tmp / 'nodir')!r}"),
                (["plot", str(stored), "--output", str(tmp / "adir")],
                 f"argument --output: {str(tmp / 'adir')!r} is a directory"),
                (["plot", str(stored), "--output", str(tmp / "x.jpg")],
                 "argument --output: the plot is a PNG; give a path ending in .png, "
                 f"got {str(tmp / 'x.jpg')!r}"),
            ]  # fmt: skip
            with (
                mock.patch.object(sys, "path", [str(tmp), *sys.path]),
                mock.patch.dict(os.environ, {"FAULTY_LOG": str(log)}),
            ):
                for argv, message in cases:
                    with self.subTest(argv=argv):
                        full = argv if argv[0] == "plot" else [*argv, "--overwrite"]
                        code, _, err = _main(full)
                        self.assertEqual(code, 2, err)
                        self.assertIn(message, err)
                        self.assertEqual(len(err.strip().splitlines()), 1, err)
                        self.assertFalse(log.exists(), "an evaluation was spent")
                        self.assertNotIn("raising_on_import", sys.modules)
            self.assertEqual(sorted(p.name for p in tmp.iterdir()),
                             ["adir", "out", "raising_on_import.py"])  # fmt: skip

    def test_plot_writes_the_file_it_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["compare", "--problem", "branin", "--methods", "random",
                    "--seeds", "0", "--budget", "4", "--n-init", "3",
                    "--output", tmp]  # fmt: skip
            self.assertEqual(_main(argv)[0], 0)
            png = Path(tmp) / "Plot.PNG"
            code, out, err = _main(["plot", tmp, "--output", str(png)])
            self.assertEqual(code, 0, err)
            self.assertEqual(out.strip(), f"plot: {png}")
            self.assertEqual(png.read_bytes()[:4], b"\x89PNG")

    def test_interrupt_keeps_rows(self):
        calls = {"n": 0}

        def interrupted(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
            run = methods.METHODS["random"].new_run()
            return run.propose(*args, **kwargs).candidates

        with (
            tempfile.TemporaryDirectory() as tmp,
            mock.patch.dict(
                methods.METHODS, {"sobol": FunctionMethod(interrupted, False)}
            ),
        ):
            argv = ["run", "--problem", "branin", "--method", "sobol", "--budget", "9",
                    "--n-init", "3", "--output", tmp]  # fmt: skip
            code, _, err = _main(argv)
            self.assertEqual(code, 130)
            self.assertIn("interrupted", err)
            with open(Path(tmp) / "results.csv") as f:
                self.assertEqual(len(list(csv.DictReader(f))), 4)  # 3 initial + 1

    def test_sigterm_keeps_rows_and_exits_143(self):
        calls = {"n": 0}

        def terminated(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 2:
                os.kill(os.getpid(), signal.SIGTERM)
            run = methods.METHODS["random"].new_run()
            return run.propose(*args, **kwargs).candidates

        handler = signal.getsignal(signal.SIGTERM)
        with (
            tempfile.TemporaryDirectory() as tmp,
            mock.patch.dict(
                methods.METHODS, {"sobol": FunctionMethod(terminated, False)}
            ),
        ):
            argv = ["run", "--problem", "branin", "--method", "sobol", "--budget", "9",
                    "--n-init", "3", "--output", tmp]  # fmt: skip
            code, _, err = _main(argv)
            self.assertEqual(code, 143, err)
            self.assertIn("terminated (SIGTERM)", err)
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertEqual(config["status"], "interrupted")
            with open(Path(tmp) / "results.csv") as f:
                self.assertEqual(len(list(csv.DictReader(f))), 4)  # 3 initial + 1
        # The CLI puts the previous handler back.
        self.assertIs(signal.getsignal(signal.SIGTERM), handler)

    def test_interrupted_compare_keeps_rows_of_the_partial_run(self):
        calls = {"n": 0}

        def interrupted(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            run = methods.METHODS["random"].new_run()
            return run.propose(*args, **kwargs).candidates

        with (
            tempfile.TemporaryDirectory() as tmp,
            mock.patch.dict(
                methods.METHODS, {"sobol": FunctionMethod(interrupted, False)}
            ),
        ):
            argv = ["compare", "--problem", "branin", "--methods", "random,sobol",
                    "--seeds", "0", "--budget", "6", "--n-init", "3",
                    "--output", tmp]  # fmt: skip
            code, _, err = _main(argv)
            self.assertEqual(code, 130)
            with open(Path(tmp) / "results.csv") as f:
                rows = list(csv.DictReader(f))
            # The whole random run (6) and the sobol run up to the interrupt (3 + 2).
            self.assertEqual(
                [r["method"] for r in rows], ["random"] * 6 + ["sobol"] * 5
            )
            # The interrupted grid's plot, of the rows it kept.
            self.assertEqual((Path(tmp) / "regret.png").read_bytes()[:4], b"\x89PNG")

    def test_output_with_results_needs_resume_or_overwrite(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["run", "--problem", "branin", "--method", "random", "--budget", "7",
                    "--n-init", "3", "--output", tmp]  # fmt: skip
            self.assertEqual(_main(argv)[0], 0)
            before = (Path(tmp) / "results.csv").read_bytes()
            compare = ["compare", "--methods", "random", *argv[1:3], *argv[5:]]
            for command in (argv, compare):
                code, _, err = _main(command)
                self.assertEqual(code, 2)
                self.assertIn("already holds 7 result rows", err)
                self.assertIn("--resume", err)
                self.assertIn("--overwrite", err)
                self.assertNotIn("Traceback", err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertEqual((Path(tmp) / "results.csv").read_bytes(), before)
            code, _, err = _main([*argv, "--resume", "--overwrite"])
            self.assertEqual(code, 2)
            self.assertIn("not allowed with argument", err)
            code, _, _ = _main([*argv[:-4], "--n-init", "4", "--output", tmp,
                                "--overwrite"])  # fmt: skip
            self.assertEqual(code, 0)
            with open(Path(tmp) / "results.csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 7)  # a fresh file, not 14 rows
            self.assertEqual(rows[3]["iteration"], "0")  # the new n-init

    def test_resume_continues_a_cut_run_as_if_never_cut(self):
        calls = {"n": 0}
        sobol = methods.METHODS["sobol"]

        def cut(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            return sobol.new_run().propose(*args, **kwargs).candidates

        argv = ["run", "--problem", "branin", "--method", "sobol", "--budget", "9",
                "--n-init", "3", "--q", "2", "--seed", "5"]  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as ref:
            with mock.patch.dict(
                methods.METHODS, {"sobol": FunctionMethod(cut, False)}
            ):
                self.assertEqual(_main([*argv, "--output", tmp])[0], 130)
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertEqual(config["status"], "interrupted")
            self.assertIsNotNone(config["end_time"])
            code, _, err = _main([*argv, "--output", tmp, "--budget", "10",
                                  "--resume"])  # fmt: skip
            self.assertEqual(code, 2)
            self.assertIn("settings differ", err)
            self.assertIn("budget: 9 -> 10", err)
            with open(Path(tmp) / "results.csv") as f:
                self.assertEqual(len(list(csv.DictReader(f))), 7)  # 3 + 2 + 2
            self.assertEqual(_main([*argv, "--output", tmp, "--resume"])[0], 0)
            self.assertEqual(_main([*argv, "--output", ref])[0], 0)
            read = []
            for folder in (tmp, ref):
                with open(Path(folder) / "results.csv") as f:
                    read.append([
                        {k: v for k, v in r.items() if not k.endswith("seconds")}
                        for r in csv.DictReader(f)
                    ])  # fmt: skip
            self.assertEqual(read[0], read[1])
            self.assertEqual(len(read[0]), 9)
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertEqual(config["status"], "finished")
            self.assertEqual(len(config["resumed"]), 1)

    def test_resume_refuses_another_thread_count(self):
        # Results depend on the thread count: a run continued with another one
        # would not be the run it continues.
        with tempfile.TemporaryDirectory() as tmp:
            for command in (
                ["run", "--method", "random"],
                ["compare", "--methods", "random", "--seeds", "0"],
            ):
                argv = [*command, "--problem", "branin", "--budget", "4",
                        "--n-init", "3", "--output", tmp]  # fmt: skip
                code, _, err = _main([*argv, "--threads", "1", "--overwrite"])
                self.assertEqual(code, 0, err)
                before = (Path(tmp) / "results.csv").read_bytes()
                code, _, err = _main([*argv, "--threads", "2", "--resume"])
                self.assertEqual(code, 2, err)
                self.assertIn("the settings differ from the stored config.json "
                              "(threads: 1 -> 2)", err)  # fmt: skip
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertEqual((Path(tmp) / "results.csv").read_bytes(), before)
                code, _, err = _main([*argv, "--threads", "1", "--resume"])
                self.assertEqual(code, 0, err)

    def test_stateful_runs_save_their_method_state_for_resume(self):
        fast = ["--budget", "6", "--n-init", "4", "--num-restarts", "2",
                "--raw-samples", "16"]  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["run", "--problem", "branin", "--method", "turbo", "--seed", "3",
                    *fast, "--output", tmp]  # fmt: skip
            self.assertEqual(_main(argv)[0], 0)
            self.assertTrue((Path(tmp) / "state" / "turbo-s3.pt").is_file())
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["compare", "--problem", "branin", "--methods", "turbo,sobol",
                    "--seeds", "0", *fast, "--output", tmp]  # fmt: skip
            self.assertEqual(_main(argv)[0], 0)
            names = [p.name for p in (Path(tmp) / "state").iterdir()]
            self.assertEqual(names, ["turbo-s0.pt"])

    def test_compare_config_and_threads(self):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["compare", "--problem", "branin", "--methods", "random,sobol",
                    "--seeds", "0,1", "--budget", "4", "--n-init", "3",
                    "--threads", "2", "--output", tmp]  # fmt: skip
            code, _, err = _main(argv)
            self.assertEqual(code, 0, err)
            config = json.loads((Path(tmp) / "config.json").read_text())
            self.assertNotIn("method", config)
            self.assertNotIn("seed", config)
            self.assertEqual(config["methods"], ["random", "sobol"])
            self.assertEqual(config["seeds"], [0, 1])
            self.assertEqual(config["threads"], 2)
            self.assertEqual(config["torch_threads"], 2)
            self.assertEqual(config["schema_version"], 3)
            for key in ("versions", "git_revision", "host", "start_time", "end_time"):
                self.assertIn(key, config)
            code, _, err = _main([*argv[:-4], "--threads", "0", "--output", tmp])
            self.assertEqual(code, 2)
            self.assertIn("argument --threads: must be >= 1, got 0", err)

    def test_no_command_prints_help(self):
        code, out, _ = _main([])
        self.assertEqual(code, 0)
        self.assertIn("usage", out)
