import json

import pytest

from codea1_eval.metrics import TaskOutcome, mul, mutation_score_at_k, mul_metrics, suite_pass_at_k
from codea1_eval.metrics.kill_matrix import KillMatrix

T, F = True, False

# A: test 2 fails on the reference, so its kill of m1 does not count; m3 has no verdict.
# B: two tests only (fewer than k = 5), the first fails.  C: crashed (no tests), mutants all survive.
# D: five passing tests.  E: five passing tests but no mutants (no score, left out of mut@k).
OUTCOMES = [
    TaskOutcome("A", (T, T, F, T, T), ((0,), (2,), (3, 4), None, ())),
    TaskOutcome("B", (F, T), ((0,), (1,))),
    TaskOutcome("C", (), ((), ())),
    TaskOutcome("D", (T, T, T, T, T), ((4,), (0, 1), ())),
    TaskOutcome("E", (T, T, T, T, T)),
]


def test_per_task_scores():
    a, b, c, d, e = OUTCOMES
    assert [a.passed_at(k) for k in (1, 2, 5)] == [1, 2, 4]
    assert [b.passed_at(k) for k in (1, 2, 5)] == [0, 1, 1]
    assert [a.mutation_score(k) for k in (1, 2, 5)] == [25.0, 25.0, 50.0]
    assert [b.mutation_score(k) for k in (1, 2, 5)] == [0.0, 50.0, 50.0]
    assert c.mutation_score(5) == 0.0 and e.mutation_score(5) is None
    assert d.mutation_score(5) == pytest.approx(200 / 3)
    assert [a.all_pass_at(k) for k in (1, 2, 5)] == [True, True, False]
    assert not b.all_pass_at(5) and not c.all_pass_at(1) and e.all_pass_at(5)


def test_pass_at_k_counts_missing_tests_as_failures():
    assert suite_pass_at_k(OUTCOMES, 1) == pytest.approx(100 * 3 / 5)
    assert suite_pass_at_k(OUTCOMES, 2) == pytest.approx(100 * 7 / 10)
    assert suite_pass_at_k(OUTCOMES, 5) == pytest.approx(100 * 15 / 25)


def test_mut_at_k_plain_and_conditional():
    assert mutation_score_at_k(OUTCOMES, 1) == pytest.approx((25 + 0 + 0 + 100 / 3) / 4)
    assert mutation_score_at_k(OUTCOMES, 2) == pytest.approx((25 + 50 + 0 + 100 / 3) / 4)
    assert mutation_score_at_k(OUTCOMES, 5) == pytest.approx((50 + 50 + 0 + 200 / 3) / 4)
    assert mutation_score_at_k(OUTCOMES, 1, conditional=True) == pytest.approx((25 + 100 / 3) / 2)
    assert mutation_score_at_k(OUTCOMES, 5, conditional=True) == pytest.approx(200 / 3)


def test_conditional_intersects_the_fixed_sample_and_can_condition_on_another_k():
    sample = {"B", "D", "E", "not-a-task"}
    assert mutation_score_at_k(OUTCOMES, 1, conditional=True, sample_ids=sample) == pytest.approx(100 / 3)
    assert mutation_score_at_k(OUTCOMES, 5, conditional=True, sample_ids={"A", "B"}) is None
    assert mutation_score_at_k(OUTCOMES, 1, conditional=True, condition_k=5) == pytest.approx(100 / 3)
    assert mutation_score_at_k(OUTCOMES, 1, sample_ids={"A"}) == mutation_score_at_k(OUTCOMES, 1)


def test_mul_matches_the_paper():
    assert round(mul(30.86, 49.56), 2) == 15.29
    assert mul(30.0, None) is None


def test_mul_metrics_dict():
    metrics = mul_metrics(OUTCOMES, sample_ids={"B", "D", "E"})
    assert metrics["n_tasks"] == 5
    assert metrics["pass@5"] == pytest.approx(60.0)
    assert metrics["mut@5"] == pytest.approx(500 / 12)
    assert metrics["mul@5"] == pytest.approx(25.0)
    assert metrics["mut@5_conditional"] == pytest.approx(200 / 3)
    assert metrics["mul@5_conditional"] == pytest.approx(40.0)
    assert metrics["mul@1"] == pytest.approx(60 * (25 + 100 / 3) / 4 / 100)
    assert (metrics["n_tasks_mut@5"], metrics["n_tasks_conditional@5"], metrics["n_tasks_conditional@1"]) == (4, 1, 1)
    for k in (1, 2, 5):
        for name in (f"pass@{k}", f"mut@{k}", f"mut@{k}_conditional", f"mul@{k}", f"mul@{k}_conditional"):
            low, high = metrics["ci95"][name]
            assert low <= metrics[name] + 1e-9 and metrics[name] <= high + 1e-9
    assert metrics["ci95"]["mut@5_conditional"] == pytest.approx([200 / 3, 200 / 3])
    json.dumps(metrics)


def test_metrics_without_a_conditional_task_are_none():
    metrics = mul_metrics(OUTCOMES, ks=(5,), sample_ids={"A"})
    assert metrics["mut@5_conditional"] is None and metrics["mul@5_conditional"] is None
    assert metrics["ci95"]["mul@5_conditional"] is None and metrics["n_tasks_conditional@5"] == 0


def test_joint_bootstrap_of_identical_tasks_is_a_point():
    outcome = TaskOutcome("X", (T, F), ((0,), (1,)))
    metrics = mul_metrics([outcome] * 4, ks=(2,))
    assert metrics["mul@2"] == pytest.approx(25.0)
    assert metrics["ci95"]["mul@2"] == pytest.approx([25.0, 25.0])


def test_bad_inputs():
    with pytest.raises(ValueError):
        suite_pass_at_k(OUTCOMES, 0)
    with pytest.raises(ValueError):
        mul_metrics([])


def test_round_trip_and_kill_matrix():
    for outcome in OUTCOMES:
        assert TaskOutcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome
    matrix = KillMatrix(["m0", "m1", "m2"], [["pass", "fail"], ["pass", "pass"], ["timeout", "pass"]],
                        ["ok", "ok", "sandbox_error"])
    outcome = TaskOutcome.from_kill_matrix("Y", [T, F, F, T], matrix, columns=[0, 3])
    assert outcome.mutant_killers == ((3,), (), None)
    assert outcome.mutation_score(4) == 50.0 and outcome.mutation_score(3) == 0.0
    assert TaskOutcome.from_kill_matrix("Y", [T, T], matrix).mutant_killers == ((1,), (), None)
