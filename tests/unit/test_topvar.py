import pytest

from codea1_eval.train.topvar import population_std, topvar_select


def test_population_std():
    assert population_std([1, 0, 0, 1]) == pytest.approx(0.5)
    assert population_std([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.0)  # ddof = 0, not 2.138 (ddof = 1)
    assert population_std([3.0]) == 0.0
    assert population_std([]) == 0.0


def test_population_std_is_order_independent():
    assert population_std([0.1, 0.2, 0.7]) == population_std([0.7, 0.1, 0.2])


def test_topvar_keeps_highest_std():
    test_rewards = [
        [0.5, 0.5, 0.5],   # std 0
        [0.0, 1.0, 0.0],   # std 0.4714
        [0.0, 1.0, 1.0],   # std 0.4714 (same multiset spread as code 1)
        [0.0, 1.0],        # std 0.5
        [0.2, 0.4, 0.2],   # std 0.0943
    ]
    assert topvar_select(test_rewards) == [3]
    assert topvar_select(test_rewards, keep=2) == [1, 3]
    assert topvar_select(test_rewards, keep=3) == [1, 2, 3]
    assert topvar_select(test_rewards, keep=4) == [1, 2, 3, 4]


def test_topvar_ties_go_to_lowest_index():
    test_rewards = [[0.2, 0.2], [1.0, 0.0], [0.0, 1.0], [0.6, 0.4]]  # codes 1 and 2 tie at std 0.5
    assert topvar_select(test_rewards, keep=1) == [1]
    assert topvar_select([[0.0, 0.0]] * 3, keep=2) == [0, 1]


def test_topvar_keep_at_least_count_returns_all():
    assert topvar_select([[0.0, 1.0], [0.0, 0.0]], keep=2) == [0, 1]
    assert topvar_select([[0.0, 1.0], [0.0, 0.0]], keep=5) == [0, 1]
    assert topvar_select([], keep=1) == []
    assert topvar_select([[1.0]], keep=0) == []
    with pytest.raises(ValueError):
        topvar_select([[1.0]], keep=-1)
