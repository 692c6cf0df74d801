"""Specification of mha.scaling: why attention scores are divided by sqrt(d_k)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mha import softmax, softmax_backward, softmax_jacobian
from mha.scaling import (
    dot_product_variance,
    jacobian_norm,
    jacobian_norm_curve,
    sample_head,
    scaling_state,
    scores_at_width,
    unit_variance_scores,
)

WIDTHS = [4, 16, 64, 256]


# -- variance of q . k ----------------------------------------------------------

def test_variance_of_the_dot_product_is_about_d_k():
    sample = dot_product_variance(WIDTHS, 20_000, np.random.default_rng(1))
    # relative standard error of a variance from n samples is about sqrt(3.5 / n) <= 1.4 %
    np.testing.assert_allclose(sample.raw / sample.d_k, 1.0, rtol=0.06)


def test_variance_after_dividing_by_sqrt_d_k_is_about_one():
    sample = dot_product_variance(WIDTHS, 20_000, np.random.default_rng(2))
    np.testing.assert_allclose(sample.scaled, 1.0, rtol=0.06)


def test_scaled_variance_is_raw_variance_over_d_k():
    sample = dot_product_variance(WIDTHS, 500, np.random.default_rng(3))
    np.testing.assert_allclose(sample.scaled, sample.raw / sample.d_k, rtol=1e-12)


def test_variance_sample_is_reproducible_from_the_seed():
    a = dot_product_variance([8, 32], 100, np.random.default_rng(4))
    b = dot_product_variance([8, 32], 100, np.random.default_rng(4))
    np.testing.assert_array_equal(a.raw, b.raw)


def test_variance_sample_keeps_the_widths_in_order():
    sample = dot_product_variance([32, 4, 8], 10, np.random.default_rng(0))
    assert sample.d_k.tolist() == [32, 4, 8]


@pytest.mark.parametrize("bad", [0, -4, 2.5, True, float("nan"), float("inf"), "4"])
def test_variance_refuses_a_width_that_is_not_a_positive_integer(bad):
    with pytest.raises(ValueError, match="positive integer"):
        dot_product_variance([4, bad], 10, np.random.default_rng(0))


@pytest.mark.parametrize("bad", [1, 0, 2.5, True, "10", float("nan"), float("inf")])
def test_variance_refuses_fewer_than_two_pairs(bad):
    with pytest.raises(ValueError, match="n_pairs"):
        dot_product_variance([4], bad, np.random.default_rng(0))


# -- the softmax Jacobian -------------------------------------------------------

def test_jacobian_of_two_equal_weights():
    np.testing.assert_allclose(softmax_jacobian([0.5, 0.5]), [[0.25, -0.25], [-0.25, 0.25]])


probability_rows = arrays(np.float64, st.integers(2, 6),
                          elements=st.floats(-5, 5, allow_nan=False)).map(softmax)


@given(probability_rows)
def test_jacobian_rows_sum_to_zero(p):
    np.testing.assert_allclose(softmax_jacobian(p).sum(axis=1), 0.0, atol=1e-12)


@given(probability_rows, st.data())
def test_jacobian_times_upstream_is_softmax_backward(p, data):
    g = data.draw(arrays(np.float64, p.shape, elements=st.floats(-3, 3, allow_nan=False)))
    np.testing.assert_allclose(softmax_jacobian(p) @ g, softmax_backward(p, g), atol=1e-12)


@given(probability_rows, st.data())
def test_jacobian_norm_bounds_the_gradient_on_the_scores(p, data):
    g = data.draw(arrays(np.float64, p.shape, elements=st.floats(-3, 3, allow_nan=False)))
    assert np.linalg.norm(softmax_backward(p, g)) <= jacobian_norm(p) * np.linalg.norm(g) + 1e-12


def test_jacobian_keeps_its_tiny_entries_when_a_weight_rounds_to_one():
    p = softmax(np.array([40.0, 0.0]))  # p[0] is 1.0 in float64, p[1] = e^-40
    assert p[0] == 1.0
    assert softmax_jacobian(p)[0, 0] == pytest.approx(np.exp(-40), rel=1e-9, abs=0)
    assert jacobian_norm(p) == pytest.approx(2 * np.exp(-40), rel=1e-9, abs=0)


def test_jacobian_refuses_scores_instead_of_probabilities():
    with pytest.raises(ValueError, match="not the logits"):
        softmax_jacobian([8.0, -8.0])


def test_jacobian_norm_refuses_a_matrix_of_rows():
    with pytest.raises(ValueError, match="one row"):
        jacobian_norm(np.full((2, 2), 0.5))


@pytest.mark.parametrize("a", [0.5, 0.881, 0.99])
def test_jacobian_norm_of_two_weights_is_2a_times_1_minus_a(a):
    assert jacobian_norm([a, 1 - a]) == pytest.approx(2 * a * (1 - a))


@pytest.mark.parametrize("n", [2, 5, 8])
def test_jacobian_norm_of_n_equal_weights_is_one_over_n(n):
    assert jacobian_norm(np.full(n, 1 / n)) == pytest.approx(1 / n)


def test_jacobian_norm_of_a_one_hot_row_is_zero():
    assert jacobian_norm([0.0, 1.0, 0.0]) == 0.0


def test_jacobian_norm_falls_toward_zero_as_the_scores_grow():
    z = np.array([1.5, 0.3, -0.2, -1.6])
    norms = jacobian_norm_curve(z, [1, 4, 16, 64])
    assert np.all(np.diff(norms) < 0)
    assert norms[-1] < 1e-20


def test_jacobian_norm_at_scale_zero_is_that_of_uniform_weights():
    assert jacobian_norm_curve([3.0, -1.0, 0.5, 2.0], [0.0])[0] == pytest.approx(0.25)


def test_jacobian_norm_curve_refuses_a_negative_scale():
    with pytest.raises(ValueError, match=">= 0"):
        jacobian_norm_curve([1.0, 0.0], [1.0, -1.0])


# -- scores of a head of width d_k -----------------------------------------------

def test_fixed_score_vector_has_mean_zero_and_unit_variance():
    z = unit_variance_scores(8, seed=0)
    assert z.mean() == pytest.approx(0.0, abs=1e-12)
    assert z.var() == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [1, 2.5, True, "8", float("nan")])
def test_fixed_score_vector_refuses_fewer_than_two_keys(bad):
    with pytest.raises(ValueError, match="n_keys"):
        unit_variance_scores(bad)


Q, K = sample_head(n_keys=8, max_width=1024, seed=0)


def test_sampled_head_is_reproducible_from_the_seed():
    q, k = sample_head(8, 1024, seed=0)
    np.testing.assert_array_equal(q, Q)
    np.testing.assert_array_equal(k, K)
    assert not np.array_equal(sample_head(8, 1024, seed=1)[0], Q)


def test_sampled_head_has_one_query_and_n_keys_of_the_full_width():
    assert Q.shape == (1024,) and K.shape == (8, 1024)


def test_raw_scores_are_dot_products_of_the_first_d_k_features():
    np.testing.assert_allclose(scores_at_width(Q, K, 64, divide=False), K[:, :64] @ Q[:64])


def test_divided_scores_are_the_raw_scores_over_sqrt_d_k():
    np.testing.assert_allclose(scores_at_width(Q, K, 256, divide=True),
                               scores_at_width(Q, K, 256, divide=False) / 16)


def test_divided_scores_are_sampled_afresh_at_each_width():
    """The division is not an identity on a fixed vector: each width is its own sample."""
    assert not np.allclose(scores_at_width(Q, K, 64, True), scores_at_width(Q, K, 256, True))


@pytest.mark.parametrize("d_k", [4, 64, 1024])
def test_spread_of_raw_scores_is_about_sqrt_d_k_over_many_samples(d_k):
    spread = np.std([scores_at_width(*sample_head(8, d_k, seed), d_k, divide=False)
                     for seed in range(300)])
    assert spread / np.sqrt(d_k) == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("d_k", [4, 64, 1024])
def test_spread_of_divided_scores_is_about_one_over_many_samples(d_k):
    spread = np.std([scores_at_width(*sample_head(8, d_k, seed), d_k, divide=True)
                     for seed in range(300)])
    assert spread == pytest.approx(1.0, abs=0.1)


def test_undivided_weights_sharpen_as_d_k_grows():
    largest = [scaling_state(Q, K, d, divide=False)["largest_weight"] for d in (4, 64, 1024)]
    assert largest[0] < largest[1] < largest[2]


def test_undivided_gradient_shrinks_as_d_k_grows():
    norms = [scaling_state(Q, K, d, divide=False)["jacobian_norm"] for d in (4, 64, 1024)]
    assert norms[0] > norms[1] > norms[2]


def test_divided_gradient_stays_away_from_zero_at_every_width():
    norms = [scaling_state(Q, K, d, divide=True)["jacobian_norm"] for d in 2 ** np.arange(2, 11)]
    assert min(norms) > 0.15


def test_state_weights_are_the_softmax_of_the_state_scores():
    state = scaling_state(Q, K, 16, divide=False)
    np.testing.assert_allclose(state["weights"], softmax(state["scores"]))


@pytest.mark.parametrize("bad", [0, 3.5, -8])
def test_scores_at_width_refuse_a_bad_width(bad):
    with pytest.raises(ValueError, match="positive integer"):
        scores_at_width(Q, K, bad, divide=True)


def test_scores_at_width_refuse_a_width_beyond_the_sample():
    with pytest.raises(ValueError, match="exceeds the 1024 features"):
        scores_at_width(Q, K, 2048, divide=True)


def test_scores_at_width_refuse_keys_of_another_width():
    with pytest.raises(ValueError, match="same W"):
        scores_at_width(Q, K[:, :512], 64, divide=True)


@pytest.mark.parametrize("bad", [1, 0, 2.5])
def test_sampled_head_refuses_fewer_than_two_keys(bad):
    with pytest.raises(ValueError, match="n_keys"):
        sample_head(bad)


# -- the lesson's pictures (mha.plot, lesson 03 section) ---------------------------

@pytest.fixture
def plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_variance_plot_draws_the_measured_points(plt):
    from mha.plot import variance_vs_width

    sample = dot_product_variance([4, 16], 50, np.random.default_rng(0))
    _, lines = variance_vs_width(sample.d_k, sample.raw, sample.scaled)
    np.testing.assert_allclose(lines["raw"].get_xydata(), np.c_[sample.d_k, sample.raw])
    np.testing.assert_allclose(lines["d_k line"].get_ydata(), [4, 16])


def test_variance_plot_refuses_arrays_of_different_lengths(plt):
    from mha.plot import variance_vs_width

    with pytest.raises(ValueError, match="one length"):
        variance_vs_width([4, 8], [4.0], [1.0, 1.0])


def test_weight_bars_heights_are_the_weights(plt):
    from mha.plot import weight_bars

    _, bars = weight_bars({"a": [0.7, 0.3], "b": [0.5, 0.5]})
    assert [b.get_height() for b in bars["a"]] == [0.7, 0.3]


def test_weight_bars_refuse_rows_of_different_lengths(plt):
    from mha.plot import weight_bars

    with pytest.raises(ValueError, match="one length"):
        weight_bars({"a": [0.5, 0.5], "b": [1.0]})


def test_jacobian_plot_marks_the_given_points(plt):
    from mha.plot import jacobian_norm_vs_scale

    _, artists = jacobian_norm_vs_scale([1.0, 2.0, 4.0], [0.3, 0.2, 0.01],
                                        marks={"c=2": (2.0, 0.2)})
    assert artists["c=2"].get_xydata().tolist() == [[2.0, 0.2]]


def test_jacobian_plot_refuses_scales_out_of_order(plt):
    from mha.plot import jacobian_norm_vs_scale

    with pytest.raises(ValueError, match="increasing"):
        jacobian_norm_vs_scale([2.0, 1.0], [0.1, 0.2])


def test_jacobian_norm_curve_takes_several_rows_and_matches_one_row_at_a_time():
    rows = np.array([unit_variance_scores(8, seed=s) for s in range(3)])
    scales = [0.0, 1.0, 8.0]
    together = jacobian_norm_curve(rows, scales)
    assert together.shape == (3, 3)
    for row, curve in zip(rows, together, strict=True):
        np.testing.assert_allclose(curve, jacobian_norm_curve(row, scales), rtol=1e-12)


def test_jacobian_norms_by_width_gives_one_row_per_seed_and_refuses_a_bad_width():
    from mha.scaling import jacobian_norms_by_width

    norms = jacobian_norms_by_width([0, 1], [4, 16], divide=True)
    assert norms.shape == (2, 2) and np.all(norms > 0)
    with pytest.raises(ValueError, match="positive integer"):
        jacobian_norms_by_width([0], [0], divide=False)
