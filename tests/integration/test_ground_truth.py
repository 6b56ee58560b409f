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

SLOW_REFERENCES = frozenset(f"Mbpp/{n}" for n in (599, 392, 603, 271, 123, 592, 255, 589, 389, 84, 300, 583, 630, 162))
"""MBPP+ tasks whose reference takes over 1 s on its inputs in all (measured on an idle machine: 147 of
the 151 s of all 378; Mbpp/599 alone 68 s, sums up to 10^8). Their ground-truth run must finish cleanly,
but judging them again as candidates would double this test's time in CI for a comparison of ints and
tuples; every other task of the three benchmarks is judged."""


@pytest.mark.parametrize("name,count,judged_count", [("humaneval", 164, 164), ("humaneval+", 164, 164),
                                                     ("mbpp+", 378, 364)])
def test_canonical_solutions_pass(name, count, judged_count, data_dir):
    benchmark = load_benchmark(name, data_dir)
    executor = Executor()
    truth = compute_ground_truth(benchmark, executor)
    assert len(truth) == count and ground_truth_pass_rate(truth) == 100.0
    judged = [p for p in benchmark.problems if p.task_id not in SLOW_REFERENCES]
    assert len(judged) == judged_count
    programs = [candidate_program(p, truth[p.task_id], p.reference, SHARED_CORES_TIMEOUT_SCALE) for p in judged]
    verdicts = [judge(benchmark, p, truth[p.task_id], r) for p, r in zip(judged, executor.map(programs))]
    failed = [p.task_id for p, v in zip(judged, verdicts) if not v.passed]
    assert failed == []
    assert sum(v.passed for v in verdicts) == len(judged)
