"""Specifications of the lesson 02 pictures in mha.plot: each draws what it claims."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha  # noqa: E402
from mha.plot import heatmap, naive_vs_stable, scores_to_weights  # noqa: E402
from mha.plot.words import outline_cell  # noqa: E402

SCORES = np.array([[1.0, 0.0, -1.0], [2.0, 2.0, 0.0]])  # (Tq=2, Tk=3)
SHIFTS = np.arange(-1000.0, 1001.0)  # (2001,), step 1


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# -- scores_to_weights ---------------------------------------------------------

def test_scores_to_weights_draws_the_scores_on_the_left():
    drawn = scores_to_weights(SCORES)
    np.testing.assert_array_equal(drawn["scores"].get_array(), SCORES)
    assert drawn["scores"].axes is drawn["axes"][0]


def test_scores_to_weights_draws_the_row_softmax_on_the_right():
    drawn = scores_to_weights(SCORES)
    np.testing.assert_allclose(drawn["weights"].get_array(), mha.softmax(SCORES, axis=-1))
    assert drawn["weights"].axes is drawn["axes"][1]


def test_scores_to_weights_uses_a_fixed_zero_to_one_scale_for_the_weights():
    drawn = scores_to_weights(SCORES)
    assert drawn["weights"].get_clim() == (0.0, 1.0)


def test_scores_to_weights_writes_one_row_sum_per_query():
    drawn = scores_to_weights(SCORES)
    assert [t.get_text().strip() for t in drawn["row sums"]] == ["row sum 1.00"] * 2


def test_scores_to_weights_labels_queries_down_and_keys_across():
    ax_s, ax_a = scores_to_weights(SCORES)["axes"]
    for ax in (ax_s, ax_a):
        assert ax.get_ylabel() == "query i"
        assert ax.get_xlabel() == "key j"


def test_scores_to_weights_accepts_a_rectangular_cross_attention_matrix():
    scores = np.arange(10.0).reshape(2, 5)  # (Tq=2, Tk=5)
    drawn = scores_to_weights(scores)
    assert drawn["weights"].get_array().shape == (2, 5)


def test_scores_to_weights_gives_a_masked_score_weight_zero_and_greys_it():
    scores = np.array([[0.0, -np.inf], [1.0, 0.0]])
    drawn = scores_to_weights(scores)
    assert drawn["weights"].get_array()[0, 1] == 0.0
    assert np.ma.getmaskarray(drawn["scores"].get_array())[0, 1]


def test_scores_to_weights_draws_into_given_axes():
    _, axes = plt.subplots(1, 2)
    drawn = scores_to_weights(SCORES, axes)
    assert tuple(drawn["axes"]) == tuple(axes)


def test_scores_to_weights_refuses_a_matrix_that_is_not_two_dimensional():
    with pytest.raises(ValueError, match=r"2-D \(Tq, Tk\)"):
        scores_to_weights(np.zeros((2, 2, 2)))


def test_scores_to_weights_refuses_a_fully_masked_row():
    with pytest.raises(ValueError, match="fully masked row"):
        scores_to_weights(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))


# -- naive_vs_stable -----------------------------------------------------------

def test_naive_vs_stable_stable_curve_is_flat_at_the_unshifted_weight():
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS)
    expected = np.exp(1.0) / (np.exp(1.0) + 1.0)
    np.testing.assert_allclose(artists["stable"].get_ydata(), expected, rtol=1e-12)


def test_naive_vs_stable_naive_curve_matches_where_nothing_overflows():
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS)
    middle = np.abs(SHIFTS) <= 700
    np.testing.assert_allclose(artists["naive"].get_ydata()[middle],
                               artists["stable"].get_ydata()[middle], rtol=1e-12)


def test_naive_vs_stable_naive_curve_is_nan_once_exp_overflows_float64():
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS)
    naive = artists["naive"].get_ydata()
    overflows = SHIFTS + 1.0 > np.log(np.finfo(np.float64).max)  # exp(c + 1) is inf
    assert np.all(np.isnan(naive[overflows]))
    assert not np.any(np.isnan(naive[(SHIFTS > 0) & ~overflows]))


def test_naive_vs_stable_breaks_much_earlier_in_float32():
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS, dtype=np.float32)
    naive = artists["naive"].get_ydata()
    assert np.isnan(naive[SHIFTS == 100.0]).all()
    assert not np.isnan(naive[SHIFTS == 80.0]).any()


def test_naive_vs_stable_shades_the_nan_shifts_red():
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS)
    right = artists["nan spans"][-1]
    assert right.get_x() + right.get_width() == SHIFTS[-1]
    assert 708.0 < right.get_x() < 709.0  # between the last good and the first NaN shift


def test_naive_vs_stable_shades_finite_but_wrong_shifts_orange():
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS)
    (span,) = artists["wrong spans"]
    inside = (SHIFTS > span.get_x()) & (SHIFTS < span.get_x() + span.get_width())
    naive, stable = artists["naive"].get_ydata(), artists["stable"].get_ydata()
    assert np.all(np.isfinite(naive[inside]))
    ulps = 100 * np.finfo(np.float64).eps
    assert np.all(np.abs(naive[inside] - stable[inside]) > ulps * stable[inside])


def test_naive_vs_stable_refuses_logits_that_are_not_one_dimensional():
    with pytest.raises(ValueError, match="1-D logits"):
        naive_vs_stable([[1.0, 0.0]], SHIFTS)


def test_naive_vs_stable_refuses_non_finite_logits():
    with pytest.raises(ValueError, match="finite 1-D logits"):
        naive_vs_stable([1.0, np.nan], SHIFTS)


def test_naive_vs_stable_refuses_shifts_that_do_not_increase():
    with pytest.raises(ValueError, match="increasing"):
        naive_vs_stable([1.0, 0.0], SHIFTS[::-1])


def test_naive_vs_stable_refuses_an_index_outside_the_logits():
    with pytest.raises(ValueError, match="outside the 2 logits"):
        naive_vs_stable([1.0, 0.0], SHIFTS, index=2)


# -- outline_cell (the boxed S[2, 3]) ------------------------------------------

def test_outline_cell_boxes_row_i_and_column_j_of_the_heatmap():
    ax, _ = heatmap(np.zeros((4, 4)))
    box = outline_cell(ax, 2, 3)
    assert box.get_xy() == (2.5, 1.5)  # x runs across the columns (keys), y down the rows
    assert box in ax.patches


def test_outline_cell_is_one_cell_wide_and_high_and_not_filled():
    ax, _ = heatmap(np.zeros((4, 4)))
    box = outline_cell(ax, 0, 1)
    assert (box.get_width(), box.get_height()) == (1, 1)
    assert not box.get_fill()


def test_naive_vs_stable_draws_the_ranges_lesson_02_states():
    """NaN for c >= 709 and c <= -747, finite but wrong for -746 <= c <= -715 (step 1:
    each shaded run reaches halfway to its neighbours)."""
    _, artists = naive_vs_stable([1.0, 0.0], SHIFTS)
    (wrong,) = artists["wrong spans"]
    left, right = artists["nan spans"]
    assert (wrong.get_x(), wrong.get_x() + wrong.get_width()) == (-746.5, -714.5)
    assert (left.get_x(), left.get_x() + left.get_width()) == (-1000.0, -746.5)
    assert (right.get_x(), right.get_x() + right.get_width()) == (708.5, 1000.0)
