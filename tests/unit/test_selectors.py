import math

import numpy as np
import pytest

from codea1_eval.errors import UserError
from codea1_eval.scaling import SELECTORS, ProblemMatrix, accuracy, cure_stats, select

VISIBLE_SELECTORS = ["most-passed", "unique-tests", "codet", "majority", "random"]


def matrix(passed, correct=None, outputs=None, test_keys=None, task_id="t"):
    passed = np.asarray(passed, dtype=bool)
    correct = np.zeros(len(passed), dtype=bool) if correct is None else correct
    return ProblemMatrix(task_id, passed, correct, outputs=outputs, test_keys=test_keys)


def picked(problem, selector):
    probabilities = select(problem, selector)
    assert probabilities.sum() == pytest.approx(1.0)
    assert np.count_nonzero(probabilities) == 1, f"{selector} should be deterministic"
    return int(np.argmax(probabilities))


def random_problem(rng, task_id="r"):
    candidates, tests = rng.integers(1, 7), rng.integers(0, 6)
    passed = rng.random((candidates, tests)) < 0.5
    correct = rng.random(candidates) < 0.4
    outputs = rng.integers(0, 3, size=(candidates, tests)).tolist()
    return ProblemMatrix(task_id, passed, correct, outputs=outputs)


def test_most_passed_takes_argmax_and_lowest_index_on_ties():
    assert picked(matrix([[1, 1, 0], [1, 1, 1], [0, 1, 1], [1, 1, 1]]), "most-passed") == 1
    assert picked(matrix([[0, 1], [1, 0], [1, 0]]), "most-passed") == 0
    assert picked(matrix([[0, 0], [0, 0]]), "most-passed") == 0
    assert picked(matrix(np.zeros((3, 0))), "most-passed") == 0


def test_unique_tests_counts_each_distinct_test_once():
    # candidate 0 passes three copies of test "a" (raw 3, unique 1); candidate 1 passes "b" and "c"
    # (raw 2, unique 2); candidate 2 passes "a" and "b" (raw 4, unique 2: ties with 1, loses on index)
    keys = ("a", "a", "a", "b", "c")
    two = [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1]]
    assert picked(matrix(two, test_keys=keys), "most-passed") == 0
    assert picked(matrix(two, test_keys=keys), "unique-tests") == 1
    three = two + [[1, 1, 1, 1, 0]]
    assert picked(matrix(three, test_keys=keys), "most-passed") == 2
    assert picked(matrix(three, test_keys=keys), "unique-tests") == 1
    # without keys, tests with identical pass columns are the same test (here tests 0-2)
    by_columns = [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 1, 0]]
    assert picked(matrix(by_columns), "most-passed") == 0
    assert picked(matrix(by_columns), "unique-tests") == 1


def test_unique_tests_counts_a_repeated_test_passed_by_any_copy():
    # test "a" twice, then "b". Candidate 0 passes both copies of a: 1 distinct test (2 passed). Candidate 1 passes
    # the second copy of a, and b: 2 distinct if any copy counts, 1 if every copy or the first must pass (a tie,
    # which goes to candidate 0), 2 passed (most-passed ties too: candidate 0).
    problem = matrix([[1, 1, 0], [0, 1, 1]], test_keys=("a", "a", "b"))
    assert picked(problem, "unique-tests") == 1
    assert picked(problem, "most-passed") == 0


def test_codet_prefers_the_best_consensus_set_as_in_the_codet_paper():
    # candidate 0 overfits two wrong tests (4 passed, alone: 1 x 4 = 4); candidates 1-3 agree on
    # tests 0-1 (3 x 2 = 6); candidate 4 passes test 2 alone (1 x 1 = 1)
    passed = [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]]
    correct = [False, True, True, True, False]
    problem = matrix(passed, correct)
    assert picked(problem, "most-passed") == 0
    assert picked(problem, "codet") == 1
    assert accuracy(problem, "codet") == 1.0
    assert accuracy(problem, "most-passed") == 0.0


def test_codet_ties_go_to_the_set_holding_the_lowest_index():
    # {1} scores 1 x 4, {0, 2} score 2 x 2: tie -> the set holding candidate 0
    assert picked(matrix([[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0]]), "codet") == 0
    # {3} scores 1 x 4, {1, 2} score 2 x 2, {0} passes nothing: tie -> candidate 1
    assert picked(matrix([[0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]]), "codet") == 1
    assert picked(matrix([[0, 0], [0, 0]]), "codet") == 0


def test_majority_picks_the_largest_output_cluster():
    outputs = [["x", (1, 2)], ["a", (1, 2)], ["b", None], ["a", (1, 2)], ["a", (1, 2)]]
    problem = matrix(np.zeros((5, 2)), [False, True, False, True, True], outputs=outputs)
    assert picked(problem, "majority") == 1
    assert accuracy(problem, "majority") == 1.0


def test_majority_ties_go_to_the_cluster_holding_the_lowest_index():
    outputs = [["<error>"], [2], ["<error>"], [2], [3]]
    assert picked(matrix(np.ones((5, 1)), outputs=outputs), "majority") == 0
    outputs = [[3], [2], [1], [1], [2]]
    assert picked(matrix(np.ones((5, 1)), outputs=outputs), "majority") == 1


def test_majority_needs_outputs():
    with pytest.raises(UserError, match="outputs"):
        select(matrix([[1]]), "majority")


def test_random_is_the_fraction_of_correct_candidates():
    problem = matrix(np.ones((4, 2)), [True, False, False, True])
    assert np.allclose(select(problem, "random"), 0.25)
    assert accuracy(problem, "random") == pytest.approx(0.5)
    rng = np.random.default_rng(7)
    for _ in range(20):
        problem = random_problem(rng)
        assert accuracy(problem, "random") == pytest.approx(problem.correct.mean())


def test_oracle_is_any_correct_and_bounds_every_selector():
    problems = [matrix([[1, 1], [0, 0]], [False, True], outputs=[[1, 1], [1, 1]]),
                matrix([[1, 0]], [False], outputs=[[0, 0]])]
    rng = np.random.default_rng(0)
    problems += [random_problem(rng, f"r{i}") for i in range(200)]
    for problem in problems:
        best = accuracy(problem, "oracle")
        assert best == float(problem.correct.any())
        for name in VISIBLE_SELECTORS:
            assert accuracy(problem, name) <= best + 1e-12, (problem.task_id, name)


def test_selectors_never_see_the_ground_truth():
    problem = matrix([[1, 0], [0, 1], [0, 1]], [True, False, False], outputs=[[1, 0], [2, 0], [2, 0]])
    flipped = ProblemMatrix("t", problem.passed, ~problem.correct, outputs=problem.outputs)
    assert [SELECTORS.get(name).needs_truth for name in SELECTORS] == [name == "oracle" for name in SELECTORS]
    for name in VISIBLE_SELECTORS:
        assert np.array_equal(select(problem, name), select(flipped, name))


def test_unknown_selector_suggests_the_closest_name():
    with pytest.raises(UserError, match=r"unknown selector 'most-pased'.*Did you mean 'most-passed'"):
        select(matrix([[1]]), "most-pased")
    assert SELECTORS.names() == sorted(["codet", "majority", "most-passed", "oracle", "random", "unique-tests"])


def test_problem_matrix_validates_shapes_and_is_read_only():
    with pytest.raises(ValueError, match="correct"):
        ProblemMatrix("t", np.ones((2, 3)), [True])
    with pytest.raises(ValueError, match="passed"):
        ProblemMatrix("t", np.ones(3), [True, True, True])
    with pytest.raises(ValueError, match="outputs"):
        ProblemMatrix("t", np.ones((2, 2)), [True, False], outputs=[[1, 2]])
    with pytest.raises(ValueError, match="hashable"):
        ProblemMatrix("t", np.ones((1, 1)), [True], outputs=[[[1, 2]]])
    with pytest.raises(ValueError, match="test keys"):
        ProblemMatrix("t", np.ones((1, 2)), [True], test_keys=("a",))
    problem = ProblemMatrix("t", [[1, 0], [0, 1]], [1, 0], outputs=[[(1, 2), 3], [4, 5]], test_keys=("a", "b"))
    assert problem.outputs[0, 0] == (1, 2)
    with pytest.raises(ValueError):
        problem.passed[0, 0] = False
    sub = problem.subset(candidates=[1], tests=[1, 0])
    assert sub.passed.tolist() == [[True, False]]
    assert sub.correct.tolist() == [False]
    assert sub.outputs.tolist() == [[5, 4]]
    assert sub.test_keys == ("b", "a")


def test_cure_stats_hand_computed_example():
    # A: tests 0-1 accurate (both correct codes pass), test 2 not; wrong codes pass 1/4 accurate and
    # 1/2 inaccurate pairs. B: test 0 accurate, test 1 not; wrong codes pass 1/2 and 1/2. C (all correct):
    # test 0 accurate, test 1 not, no wrong pair. D (no correct code) is skipped.
    a = matrix([[1, 1, 0], [1, 1, 1], [1, 0, 0], [0, 0, 1]], [True, True, False, False], task_id="A")
    b = matrix([[1, 1], [1, 0], [0, 0]], [False, True, False], task_id="B")
    all_correct = matrix([[1, 0]], [True], task_id="C")
    none_correct = matrix([[1, 0]], [False], task_id="D")
    stats = cure_stats([a, b, all_correct, none_correct])
    assert (stats.problems, stats.skipped) == (3, 1)
    assert stats.p_u == pytest.approx(4 / 7)
    assert stats.p_01 == pytest.approx(2 / 6)
    assert stats.p_00 == pytest.approx(2 / 4)
    assert stats.mu == pytest.approx(4 / 7 * (1 - 1 / 3) - 3 / 7 * 0.5)


def test_cure_stats_without_inaccurate_tests_drops_the_p_00_term():
    stats = cure_stats([matrix([[1, 1], [1, 0]], [True, False])])
    assert stats.p_u == 1.0 and stats.p_01 == 0.5 and math.isnan(stats.p_00)
    assert stats.mu == pytest.approx(0.5)
    all_correct = cure_stats([matrix([[1]], [True])])  # counted in p_u; no wrong code to measure p_01
    assert all_correct.problems == 1 and all_correct.p_u == 1.0 and math.isnan(all_correct.mu)
    none_correct = cure_stats([matrix([[1]], [False])])
    assert none_correct.problems == 0 and none_correct.skipped == 1 and math.isnan(none_correct.mu)
