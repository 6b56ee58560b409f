"""The ``ult`` protocol against the tools the Code-A1 authors' ULT harness runs: real pytest, pytest-cov
and cosmic-ray on their task directories (``codea1_eval/metrics/ult_peer.py``).

For 30 ULT-Lite tasks, five rounds per task of hand-written shapes built on the task's first example
call (``!=``, ``<``, ``in``, ``len(...) == n``, assignment then assert, ``pytest.raises``, a repeated
round, no assert, prose around code, unparseable code, imports inside and outside the test, a
module-level import that fails collection, a print), the example's own expected value as one of them.
Each task's rounds are formatted (``format_rounds``) and, for k = 5 (and k = 1 on ten tasks), written
as their ``task_<i>`` directory; the real ``pytest test.py --cov=<dir> --cov-branch
--cov-report=json`` runs there, its summary line read with their regex. Our sandboxed run of the same
files must give the same passed, failed and error counts and the same covered lines, statements,
covered branches and branches, task by task. (SmolLM2's real replies get the same comparison in
``test_mul.py``, on the run that test makes.) Functions that draw random numbers are left out: their
coverage changes between runs in both tools.

On three tasks whose five tests all pass (and without ``while`` loops, whose endless mutants wait out
the 10 s in both tools), an evenly spaced sample of cosmic-ray mutants of ``mod.py`` runs through the
real ``cosmic-ray init`` / ``exec`` (their configuration: ``pytest test.py``, 10 s) and ``cr-report``;
every mutant's survival and the surviving count must equal ours.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codea1_eval.asserts.ult_format import format_rounds, ult_reference_module, ult_test_module
from codea1_eval.metrics.cosmic_ray_engine import cosmic_ray_mutants, run_cosmic_ray_session
from codea1_eval.metrics.ult_peer import our_counts, their_pytest, write_task_dir
from codea1_eval.metrics.ult_pytest import MUTANT_TIME_LIMIT_S, PYTEST_TIME_LIMIT_S, mutants_program, pytest_program, pytest_runs
from codea1_eval.sandbox import RETURNED, Executor, Program

pytestmark = pytest.mark.slow

N_TASKS = 30
KS = (1, 5)
K1_TASKS = 10  # k = 1 runs on the first ten tasks, k = 5 on all
MUTATION_TASKS = 3
MUTANTS_PER_TASK = 5
# (task_id, k) -> why our counts legitimately differ from pytest's. None so far.
KNOWN_DIFFERENCES: dict[tuple[str, int], str] = {}

GROUPS = [
    ("true", "not_equal", "print", "import_inside", "true"),  # all pass (with a repeated round): mutation
    ("prose", "less_than", "length", "unparseable", "no_assert"),
    ("membership", "assign_then_assert", "raises", "import_outside", "collection_error"),
]


def _shapes(f: str, call: str, expected: str, true: str) -> dict[str, str]:
    block = "```python\n{}\n```"
    return {
        "true": block.format(f"def test_{f}():\n    assert {call} == {true}"),
        "not_equal": block.format(f"def test_{f}():\n    assert {call} != 'never returned'"),
        "print": block.format(f"def test_{f}():\n    print({call})\n    assert {call} == {true}"),
        "import_inside": block.format(f"def test_{f}():\n    import math\n"
                                      f"    assert math.isfinite(1.0) and {call} == {true}"),
        "prose": f"Sure! Here is a test for `{f}`:\n\n" + block.format(f"def test_{f}():\n    assert {call} == "
                                                                       f"{expected}") + "\n\nIt checks the example.",
        "less_than": block.format(f"def test_{f}():\n    assert {call} < 0"),
        "length": block.format(f"def test_{f}():\n    assert len(repr({call})) == {len(true)}\n"
                               f"    assert {call} == {true}"),
        "unparseable": block.format(f"def test_{f}(:\n    assert {call} == {true}"),
        "no_assert": "I cannot write a test for this function.",
        "membership": block.format(f"def test_{f}():\n    assert {call} in [{expected}]"),
        "assign_then_assert": block.format(f"def test_{f}():\n    r = {call}\n    assert r == {true}"),
        "raises": block.format(f"def test_{f}():\n    with pytest.raises(TypeError):\n        {f}(None)\n"
                               f"    assert True"),
        "import_outside": block.format(f"import collections\n\ndef test_{f}():\n"
                                       f"    assert collections.Counter([{call}])"),
        "collection_error": block.format(f"import a_module_that_is_not_installed\n\ndef check():\n"
                                         f"    assert {call} == {true}"),
    }


def _example(task: dict) -> tuple[str, str] | None:
    """The call and expected value of the task's first ``assert f(...) == x`` example."""
    try:
        node = ast.parse(task["test_list"][0]).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq) and isinstance(node.test.left, ast.Call)
            and getattr(node.test.left.func, "id", None) == task["func_name"]):
        return None
    return ast.unparse(node.test.left), ast.unparse(node.test.comparators[0])


_VALUE = """
def _codea1_value(module, call):
    namespace = {"__name__": "mod"}
    exec(module, namespace)
    return repr(eval(call, namespace))
"""


def _true_values(tasks: list[dict], calls: list[str], executor: Executor) -> list[str | None]:
    """``repr`` of each call's value on the reference (one worker for all), when it reads back as a literal."""
    result = executor.run(Program(_VALUE, "_codea1_value", calls=[(ult_reference_module(t["code"]), call)
                                                                  for t, call in zip(tasks, calls)],
                                  time_limits=[10.0] * len(calls)))
    values = []
    for call in result.calls:
        text = call.value if call.status == RETURNED else None
        try:
            values.append(text if text is not None and ast.literal_eval(text) == ast.literal_eval(text) else None)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            values.append(None)
    return values


@pytest.fixture(scope="module")
def peer(data_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ult-peer")
    raw = json.loads((Path(data_dir) / "ult" / "ULT_Lite.jsonl").read_text())
    executor = Executor(parallel=2)
    # functions drawing random numbers are left out: their coverage changes from run to run in both tools
    candidates = [(task, example) for task in raw
                  if "random" not in task["code"] and (example := _example(task))][:2 * N_TASKS]
    trues = _true_values([task for task, _ in candidates], [example[0] for _, example in candidates], executor)
    chosen = [(task, example, true) for (task, example), true in zip(candidates, trues) if true is not None][:N_TASKS]
    assert len(chosen) == N_TASKS
    tasks = []
    for index, (task, (call, expected), true) in enumerate(chosen):
        shapes = _shapes(task["func_name"], call, expected, true)
        replies = [shapes[name] for name in GROUPS[index % len(GROUPS)]]
        tests = format_rounds(replies, task["func_name"])
        tasks.append({"task_id": str(task["task_id"]), "module": ult_reference_module(task["code"]), "tests": tests,
                      "ks": KS if index < K1_TASKS else (5,)})
    runs = iter(pytest_runs(executor.run(pytest_program([(t["module"], ult_test_module(t["tests"][:k]))
                                                         for t in tasks for k in t["ks"]], True, PYTEST_TIME_LIMIT_S))))
    for task in tasks:
        task["ours"] = {k: next(runs) for k in task["ks"]}
    jobs = [(task, k) for task in tasks for k in task["ks"]]

    def theirs(job):
        task, k = job
        folder = write_task_dir(tmp / f"k{k}" / f"task_{task['task_id']}", task["module"], task["tests"][:k])
        return their_pytest(folder, tmp / "scratch" / f"k{k}" / task["task_id"])

    with ThreadPoolExecutor(2) as pool:
        for (task, k), result in zip(jobs, pool.map(theirs, jobs)):
            task.setdefault("theirs", {})[k] = result
    return {"tasks": tasks, "tmp": tmp, "executor": executor}


@pytest.mark.parametrize("k", KS)
def test_passed_failed_and_coverage_equal_pytest_cov(peer, k):
    differences = {}
    tasks = [task for task in peer["tasks"] if k in task["ks"]]
    assert len(tasks) == (K1_TASKS if k == 1 else N_TASKS)
    for task in tasks:
        ours, theirs = our_counts(task["ours"][k]), task["theirs"][k]
        if (task["task_id"], k) in KNOWN_DIFFERENCES:
            continue
        if any(ours[key] != theirs[key] for key in ("passed", "failed", "error", "coverage")):
            differences[task["task_id"]] = (ours, theirs, task["tests"][:k])
    assert differences == {}


def test_the_shapes_reach_every_outcome(peer):
    """Not vacuous: passes, failures, collection errors and coverage below 100%."""
    fives = [task["theirs"][5] for task in peer["tasks"]]
    assert sum(r["passed"] for r in fives) >= 40 and sum(r["failed"] for r in fives) >= 25
    assert sum(r["error"] for r in fives) >= 5  # the collection_error group
    assert any(r["coverage"][0] < r["coverage"][1] for r in fives)


def _cr_report_surviving(workdir: Path) -> int:
    report = subprocess.run([sys.executable, "-c", "from cosmic_ray.tools.report import report; report()",
                             "session.sqlite", "--show-pending"],
                            cwd=workdir, capture_output=True, text=True, timeout=120)
    found = re.search(r"surviving mutants:\s*(\d+)\s*\(", report.stdout)
    assert found, report.stdout + report.stderr
    return int(found.group(1))


def test_mutant_survival_equals_cosmic_ray(peer):
    # tasks without loops that a mutant could make endless (each such mutant waits out the 10 s in both tools)
    eligible = [t for t in peer["tasks"] if t["ours"][5].all_passed and "while" not in t["module"]][:MUTATION_TASKS]
    assert len(eligible) == MUTATION_TASKS

    def compare(task: dict) -> tuple[dict, dict, int]:
        mutants = cosmic_ray_mutants(task["module"])
        sample = mutants[::max(1, len(mutants) // MUTANTS_PER_TASK)][:MUTANTS_PER_TASK]
        result = peer["executor"].run(mutants_program([m.source for m in sample], ult_test_module(task["tests"]),
                                                      MUTANT_TIME_LIMIT_S))
        ours = {m.mutant_id: run.exit_ok for m, run in zip(sample, pytest_runs(result))}
        workdir = write_task_dir(peer["tmp"] / "mutation" / f"task_{task['task_id']}", task["module"], task["tests"])
        outcomes = run_cosmic_ray_session(workdir, "mod.py", f"{sys.executable} -m pytest test.py", 10.0,
                                          only={m.mutant_id for m in sample})
        return ours, {key: outcome == "survived" for key, outcome in outcomes.items()}, _cr_report_surviving(workdir)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(compare, eligible))
    for task, (ours, theirs, reported) in zip(eligible, results):
        assert theirs == ours, task["task_id"]
        assert reported == sum(ours.values()), task["task_id"]
    assert sum(len(ours) for ours, _, _ in results) == MUTATION_TASKS * MUTANTS_PER_TASK
    survived = sum(sum(ours.values()) for ours, _, _ in results)
    assert 0 < survived < MUTATION_TASKS * MUTANTS_PER_TASK, survived  # both verdicts occur
