"""Per-sample verdicts of our engine vs `evalplus.evaluate` itself on the same samples file.

Samples: real SmolLM2 generations (extracted as `avg` does) plus mutated canonical solutions, for
all 164 HumanEval+ tasks (evalplus insists on every task), plus canonical solutions that count their
calls (in a global, or in a file in their folder) and go wrong after as many as the longer input list
has: right where each list runs in a process and a folder of its own, as evalplus runs them, wrong
where the plus inputs inherit the base inputs' state; one that logs its calls with ``open``, which
evalplus' reliability_guard sets to None; one that imports numpy; one whose first call of each list
catches its time-out with ``except Exception`` and then takes 0.9 s more, past our per-call grace, to return
the right answer (evalplus' TimeoutException is an Exception, and only the list's cap bounds the call: both
lists pass); one whose first call replaces the SIGALRM handler and whose second runs 1.2 s against its 1 s
limit (evalplus installs its handler for each input: that call times out, though it would return within our
per-call hard deadline); two that nest 967 and 968 calls (evalplus' process has Python's recursion limit, 1000,
less its own frames: the first passes, the second fails). Known, explained disagreement:
evalplus 0.3.1 never counts a HumanEval/32 (find_zero) input as passed (its special oracle
`continue`s before marking the input done), so every HumanEval/32 sample fails there.
"""

import json
import os
import subprocess
import sys

import pytest

from codea1_eval.commands.avg import AvgConfig, run_avg
from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.extract import build_program, extract_code
from codea1_eval.metrics.mutation import ast_mutants
from codea1_eval.models import GenerationRequest, SamplingParams, load_backend
from codea1_eval.prompts import code_messages

pytestmark = pytest.mark.slow

GENERATED_TASKS = 8
SAMPLES_PER_TASK = 2
MUTANTS_PER_TASK = 1
NESTS_CALLS = """


def _depth(n):
    return 0 if n == 0 else 1 + _depth(n - 1)


_correct = {entry_point}


def {entry_point}(*args):
    _depth(DEPTH)
    return _correct(*args)
"""
STATEFUL = ("""

_calls_made = [0]
_correct = {entry_point}


def {entry_point}(*args):
    _calls_made[0] += 1
    return _correct(*args) if _calls_made[0] <= {limit} else None
""", """

import os as _os

_correct = {entry_point}


def {entry_point}(*args):
    calls_made = _os.open("calls_made", _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND)
    _os.write(calls_made, b"+")
    _os.close(calls_made)
    return _correct(*args) if _os.stat("calls_made").st_size <= {limit} else None
""", """

_correct = {entry_point}


def {entry_point}(*args):
    print(*args, file=open("calls_made", "a"))
    return _correct(*args)
""", """

import numpy as _np

_correct = {entry_point}


def {entry_point}(*args):
    return _correct(*args) if _np.int64(1) else None
""", """

import time as _time

_first_call = [True]
_correct = {entry_point}


def {entry_point}(*args):
    if _first_call[0]:
        _first_call[0] = False
        try:
            while True:
                pass
        except Exception:
            end = _time.monotonic() + 0.9
            while _time.monotonic() < end:
                pass
    return _correct(*args)
""", """

import signal as _signal
import time as _time

_calls_made = [0]
_correct = {entry_point}


def {entry_point}(*args):
    _calls_made[0] += 1
    if _calls_made[0] == 1:
        _signal.signal(_signal.SIGALRM, lambda signum, frame: None)
    elif _calls_made[0] == 2:
        end = _time.monotonic() + 1.2
        while _time.monotonic() < end:
            pass
    return _correct(*args)
""") + tuple(NESTS_CALLS.replace("DEPTH", depth) for depth in ("966", "967"))
STATEFUL_VERDICTS = [(True, True), (True, True), (False, False), (True, True), (True, True), (False, False),
                     (True, True), (False, False)]
STATEFUL_TASKS = len(STATEFUL)  # the first tasks, whose references do not call themselves by name
EXPLAINED = {"HumanEval/32": "evalplus 0.3.1 find_zero oracle never marks an input as passed"}


@pytest.fixture(scope="module")
def samples_file(tmp_path_factory, data_dir):
    benchmark = load_benchmark("humaneval+", data_dir)
    backend = load_backend("smollm2", {"batch_size": GENERATED_TASKS * SAMPLES_PER_TASK}, cache=None)  # one batch
    requests = [GenerationRequest(code_messages(p.question), params=SamplingParams(
        n=SAMPLES_PER_TASK, temperature=0.8, top_p=0.95, max_tokens=192, seed=7))
        for p in benchmark.problems[:GENERATED_TASKS]]
    records = []
    for problem, completions in zip(benchmark.problems, backend.generate(requests)):
        for completion in completions:
            records.append({"task_id": problem.task_id,
                            "solution": build_program(problem.prompt, extract_code(completion.text)[0])})
    for problem in benchmark.problems:
        mutants = list(ast_mutants(problem.reference, limit=MUTANTS_PER_TASK, seed=1)) or [problem.reference]
        records += [{"task_id": problem.task_id, "solution": m} for m in mutants]
    for task, problem in enumerate(benchmark.problems[:STATEFUL_TASKS]):
        limit = max(problem.n_base, len(problem.inputs) - problem.n_base)
        stateful = STATEFUL[task].format(entry_point=problem.entry_point, limit=limit)
        records.append({"task_id": problem.task_id, "solution": problem.reference + stateful})
    path = tmp_path_factory.mktemp("peer") / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _evalplus_verdicts(samples_file, data_dir):
    env = {**os.environ, "HUMANEVAL_OVERRIDE_PATH": str(data_dir / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl")}
    subprocess.run([sys.executable, "-m", "evalplus.evaluate", "--dataset", "humaneval",
                    "--samples", str(samples_file), "--parallel", "2"],
                   env=env, check=True, capture_output=True, timeout=1800)
    results = json.loads(samples_file.with_name("samples_eval_results.json").read_text())["eval"]
    return {(task_id, i): (r["base_status"] == "pass", r["plus_status"] == "pass")
            for task_id, rows in results.items() for i, r in enumerate(rows)}


def test_verdicts_agree_with_evalplus(samples_file, data_dir, tmp_path):
    theirs = _evalplus_verdicts(samples_file, data_dir)
    metrics = run_avg(AvgConfig(benchmark="humaneval+", samples=samples_file, out=tmp_path / "ours"))
    ours, counters = {}, {}
    for line in (tmp_path / "ours" / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        index = counters.get(row["task_id"], 0)
        counters[row["task_id"]] = index + 1
        ours[(row["task_id"], index)] = (row["base_status"] == "pass", row["plus_status"] == "pass")
    assert set(ours) == set(theirs)
    assert len(ours) == GENERATED_TASKS * SAMPLES_PER_TASK + 164 + STATEFUL_TASKS and metrics["n_samples"] == len(ours)
    stateful = [(f"HumanEval/{task}", SAMPLES_PER_TASK + MUTANTS_PER_TASK) for task in range(STATEFUL_TASKS)]
    assert [theirs[key] for key in stateful] == [ours[key] for key in stateful] == STATEFUL_VERDICTS
    disagreements = sorted(key for key in ours if ours[key] != theirs[key])
    for key in disagreements:
        print(f"disagreement {key}: ours={ours[key]} evalplus={theirs[key]} "
              f"({EXPLAINED.get(key[0], 'UNEXPLAINED')})")
    agreement = 1 - len(disagreements) / len(ours)
    print(f"agreement: {agreement:.4%} on {len(ours)} samples")
    assert agreement >= 0.995
    assert {task for task, _ in disagreements} <= set(EXPLAINED)
    for key in disagreements:
        assert theirs[key] == (False, False) and ours[key] != (False, False)
