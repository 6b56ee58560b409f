import pytest
from matplotlib.image import imread

from codea1_eval.errors import UserError
from codea1_eval.scaling import ProblemMatrix, doubling_sizes, plot_curves, scaling_curves

SELECTORS = ["most-passed", "unique-tests", "codet", "majority", "random", "oracle"]


def problems():
    """Three hand-built problems with 4 candidates x 4 tests; outputs follow the pass rows."""
    rows = [
        # most-passed/codet pick candidate 1 (correct); majority's cluster {2, 3} is wrong
        ([[1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], [False, True, False, False]),
        # most-passed picks 0 (wrong); codet picks the {1, 2, 3} set, 3 x 2 > 1 x 4 (correct)
        ([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]], [False, True, True, True]),
        # nothing is correct
        ([[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], [False, False, False, False]),
    ]
    return [ProblemMatrix(f"p{i}", passed, correct, outputs=[[str(v) for v in row] for row in passed])
            for i, (passed, correct) in enumerate(rows)]


def by_name(curves):
    return {curve.selector: curve for curve in curves}


def test_doubling_sizes_end_at_the_limit():
    assert doubling_sizes(16) == (1, 2, 4, 8, 16)
    assert doubling_sizes(5) == (1, 2, 4, 5)
    assert doubling_sizes(2) == (1, 2)
    assert doubling_sizes(1) == (1,)


def test_full_size_points_are_exact_full_matrix_accuracies():
    curves = by_name(scaling_curves(problems(), SELECTORS, axis="candidates", resamples=200, seed=3))
    expected = {"most-passed": 100 / 3, "unique-tests": 100 / 3, "codet": 200 / 3, "majority": 100 / 3,
                "random": 100 * (1 / 4 + 3 / 4) / 3, "oracle": 200 / 3}
    for name, value in expected.items():
        curve = curves[name]
        assert curve.sizes == (1, 2, 4)
        assert curve.mean[-1] == pytest.approx(value)
        assert curve.low[-1] == pytest.approx(value) and curve.high[-1] == pytest.approx(value)


def test_one_candidate_makes_every_selector_equal_and_random_is_flat():
    curves = by_name(scaling_curves(problems(), SELECTORS, axis="candidates", resamples=200, seed=0))
    at_one = {name: curve.mean[0] for name, curve in curves.items()}
    assert len(set(at_one.values())) == 1  # all selectors saw the same single-candidate subsets
    for value in curves["random"].mean:  # the expected fraction correct of a subset is the fraction correct
        assert value == pytest.approx(100 / 3, abs=6)


def test_oracle_grows_with_candidates_and_bounds_every_selector():
    curves = by_name(scaling_curves(problems(), SELECTORS, axis="candidates", resamples=200, seed=1))
    oracle = curves["oracle"].mean
    # by hand, s candidates drawn without replacement: p0 (1 correct of 4) holds it with probability s/4, p1 (3 of 4)
    # 3/4 at s = 1 and always from s = 2, p2 never: (1/4 + 3/4) / 3, (1/2 + 1) / 3, (1 + 1) / 3. 200 resamples at
    # s = 1 and 2 put the mean within 1.2-1.5 points of that (one standard error)
    assert oracle == (pytest.approx(100 / 3, abs=5), pytest.approx(50, abs=5), pytest.approx(200 / 3))
    assert all(later >= earlier - 1e-9 for earlier, later in zip(oracle, oracle[1:]))
    for name in SELECTORS:
        assert all(o >= v - 1e-9 for o, v in zip(oracle, curves[name].mean)), name


def test_intervals_contain_the_mean_and_seeds_reproduce():
    first = scaling_curves(problems(), SELECTORS, axis="tests", resamples=200, seed=5)
    again = scaling_curves(problems(), SELECTORS, axis="tests", resamples=200, seed=5)
    assert first == again
    for curve in first:
        assert curve.sizes == (1, 2, 4)
        assert all(low - 1e-9 <= mean <= high + 1e-9 for low, mean, high in zip(curve.low, curve.mean, curve.high))
    tests = by_name(first)
    assert tests["random"].mean == pytest.approx((100 / 3,) * 3)  # tests don't change a uniform pick
    assert tests["random"].low == pytest.approx(tests["random"].high)
    assert tests["codet"].mean[-1] == pytest.approx(200 / 3)
    assert tests["codet"].low[0] < tests["codet"].high[0]  # one test of four: the pick varies


def test_problems_smaller_than_a_size_keep_all_their_candidates():
    small = ProblemMatrix("small", [[1], [0]], [False, True])
    curve, = scaling_curves(problems()[:1] + [small], ["most-passed"], sizes=[4], resamples=20)
    assert curve.mean == (50.0,)


def test_bad_arguments_are_refused():
    with pytest.raises(UserError, match="Did you mean 'codet'"):
        scaling_curves(problems(), ["codte"])
    with pytest.raises(ValueError, match="axis"):
        scaling_curves(problems(), ["codet"], axis="samples")


def test_plot_writes_a_png_with_both_panels(tmp_path):
    curves = (scaling_curves(problems(), ["codet", "random", "oracle"], axis="candidates", resamples=20)
              + scaling_curves(problems(), ["codet", "random", "oracle"], axis="tests", resamples=20))
    path = plot_curves(curves, tmp_path / "bon.png")
    assert path.stat().st_size > 0
    image = imread(path)
    assert image.shape == (400, 1100, 4)
    assert image[..., :3].std() > 0  # something was drawn
