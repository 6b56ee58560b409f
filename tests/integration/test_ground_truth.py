"""Every canonical solution passes through our engine (the harness' own ground-truth check)."""

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.judging import candidate_program, compute_ground_truth, ground_truth_pass_rate, judge
from codea1_eval.sandbox import Executor

pytestmark = pytest.mark.slow

SHARED_CORES_TIMEOUT_SCALE = 3.0
"""CI runs another test file beside this one on the same two cores, and the ground-truth times may
come from a quieter moment (they are cached), so evalplus' 4x-the-reference limit gets slack here:
HumanEval/139's plus inputs take up to 0.6 s each and went past 4x once under load. This test is
about values; the limits themselves are pinned in tests/unit."""


@pytest.mark.parametrize("name,count", [("humaneval", 164), ("humaneval+", 164), ("mbpp+", 378)])
def test_canonical_solutions_pass(name, count, data_dir):
    benchmark = load_benchmark(name, data_dir)
    executor = Executor()
    truth = compute_ground_truth(benchmark, executor)
    assert ground_truth_pass_rate(truth) == 100.0
    programs = [candidate_program(p, truth[p.task_id], p.reference, SHARED_CORES_TIMEOUT_SCALE)
                for p in benchmark.problems]
    verdicts = [judge(benchmark, p, truth[p.task_id], r)
                for p, r in zip(benchmark.problems, executor.map(programs))]
    failed = [p.task_id for p, v in zip(benchmark.problems, verdicts) if not v.passed]
    assert failed == []
    assert sum(v.passed for v in verdicts) == count
