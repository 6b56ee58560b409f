"""Every extension point works from outside the package: a throw-away plugin module registers a
benchmark, a model backend, a test kind, a selector and a mutation engine, and the installed CLI
(`CODEA1_PLUGINS`) runs `avg` and `bon` with them. Expected values are derived by hand below."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PLUGIN = textwrap.dedent('''
    """A throw-away plugin: one file, registering one of each kind."""
    import ast
    import hashlib
    from pathlib import Path

    from codea1_eval.benchmarks.base import BENCHMARKS, Benchmark, Problem
    from codea1_eval.judging import FAIL, PASS, TEST_KINDS, GroundTruth, TestKind, Verdict
    from codea1_eval.metrics.mutation import MUTATORS, Mutant
    from codea1_eval.models.base import Completion
    from codea1_eval.models.spec import register_backend
    from codea1_eval.sandbox import RETURNED, Program
    from codea1_eval.scaling.selectors import SELECTORS, Selector

    import numpy as np


    class ReturnsTheReferenceValue(TestKind):
        """main() must return what the reference's main() returns."""

        name = "main-value"

        def reference_program(self, problem):
            return Program(problem.reference, "main", calls=[()], time_limits=[10.0])

        def ground_truth(self, problem, oracle, result):
            call = result.calls[0]
            ok = result.status == "ok" and call.status == RETURNED
            return GroundTruth([call.value], [call.duration], ok, None if ok else call.error or result.error)

        def candidate_program(self, problem, truth, code, timeout_scale=1.0, oracle=None):
            return Program(code, "main", calls=[()], time_limits=[10.0 * timeout_scale])

        def verdict(self, oracle, problem, truth, result):
            call = result.calls[0]
            status = PASS if call.status == RETURNED and call.value == truth.outputs[0] else FAIL
            return Verdict(status, status, [status], result.status, call.error)


    def load_toy(data_dir=None):
        here = Path(__file__)
        problems = [Problem("toy/0", "Return 42.", "main", "def main():\\n    return 6 * 7\\n", test_kind="main-value"),
                    Problem("toy/1", "Return abab.", "main", "def main():\\n    return 'ab' * 2\\n",
                            test_kind="main-value")]
        return Benchmark("toy", "humaneval", problems, str(here), hashlib.sha256(here.read_bytes()).hexdigest())


    ANSWER = "```python\\ndef main():\\n    return 42\\n```\\n```python\\nassert main() == 42\\n```\\n"


    class Echo:
        """Answers every request, coder's or tester's, with ANSWER."""

        max_requests_per_call = None

        def __init__(self, argument):
            self.identity = f"echo:{argument}"

        def generate(self, requests, progress=None, on_result=None):
            results = []
            for index, request in enumerate(requests):
                completions = [Completion(ANSWER, "stop", None, None) for _ in range(request.params.n)]
                if on_result is not None:
                    on_result(index, completions)
                if progress is not None:
                    progress(request.params.n)
                results.append(completions)
            return results


    def returns_none(source):
        """One mutant: every return value replaced by None."""
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Return):
                node.value = ast.Constant(None)
        return [Mutant("returns-none#0", "returns-none", ast.unparse(tree))]


    def least_passed(evidence):
        """The candidate passing the fewest generated tests (ties: lowest index)."""
        probabilities = np.zeros(evidence.passed.shape[0])
        probabilities[int(np.argmin(evidence.passed.sum(axis=1)))] = 1.0
        return probabilities


    TEST_KINDS.register("main-value", ReturnsTheReferenceValue(), help=ReturnsTheReferenceValue.__doc__)
    BENCHMARKS.register("toy", load_toy, help="two main() tasks")
    register_backend("echo", Echo, usage="echo:NAME", help="answers ANSWER")
    MUTATORS.register("returns-none", returns_none, help=returns_none.__doc__)
    SELECTORS.register("least-passed", Selector(least_passed), help=least_passed.__doc__)
''')


def _cli(tmp_path, *args):
    env = {**os.environ, "CODEA1_PLUGINS": "toy_plugin", "PYTHONPATH": str(tmp_path),
           "CODEA1_GENERATION_CACHE": "off"}
    return subprocess.run([sys.executable, "-m", "codea1_eval", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)


def test_a_plugin_registers_one_of_each_and_the_cli_uses_them(tmp_path):
    (tmp_path / "toy_plugin.py").write_text(PLUGIN)

    # avg: the echo coder writes main() returning 42; the reference of toy/0 returns 42 (pass), toy/1's
    # returns "abab" (fail): pass@1 = avg@1 = 50 over 2 tasks, both references pass (gt 100).
    result = _cli(tmp_path, "avg", "--coder", "echo:x", "--benchmark", "toy", "-n", "1", "--out", "avg")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "avg" / "metrics.json").read_text())
    assert (metrics["pass@1"], metrics["avg@1"], metrics["gt_pass_rate"], metrics["n_tasks"]) == (50.0, 50.0, 100.0, 2)

    # bon on toy/0: candidates are the reference (returns 42) and its one returns-none mutant (returns
    # None); the echo tester's test `assert main() == 42` passes the reference only. most-passed picks
    # the reference (correct: 100), least-passed the mutant (0), the oracle 100, random 50.
    result = _cli(tmp_path, "bon", "--coder", "mutants", "--mutator", "returns-none", "--tester", "echo:y",
                  "--benchmark", "toy", "--limit", "1", "-M", "2", "-N", "1", "--selector", "most-passed",
                  "--selector", "least-passed", "--selector", "oracle", "--selector", "random", "--out", "bon")
    assert result.returncode == 0, result.stderr[-3000:]
    accuracy = json.loads((tmp_path / "bon" / "metrics.json").read_text())["accuracy"]
    assert accuracy == {"most-passed": 100.0, "least-passed": 0.0, "oracle": 100.0, "random": 50.0}


def test_a_plugin_that_fails_to_import_is_one_line(tmp_path):
    (tmp_path / "toy_plugin.py").write_text("raise RuntimeError('broken on purpose')\n")
    result = _cli(tmp_path, "avg", "--benchmark", "toy")
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: plugin 'toy_plugin' (toy_plugin) failed to load: "
                                     "RuntimeError: broken on purpose")
