"""Specs of the shared matrix and gradient pictures: they draw what they claim."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha  # noqa: E402
from mha.plot import gradient_heatmaps, heatmap, score_slopes, weights_vs_scale  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts_by_cell(ax):
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
            for t in ax.texts}


# -- heatmap ----------------------------------------------------------------------

def test_heatmap_draws_the_matrix_values():
    m = np.array([[0.1, 0.9], [0.5, 0.5]])
    _, image = heatmap(m)
    np.testing.assert_array_equal(image.get_array(), m)


def test_heatmap_puts_queries_down_and_keys_across():
    ax, _ = heatmap(np.zeros((2, 3)))
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("query i", "key j")
    assert len(ax.get_xticks()) == 3 and len(ax.get_yticks()) == 2


def test_heatmap_writes_each_value_in_its_cell():
    ax, _ = heatmap(np.array([[0.25, 0.75]]))
    assert texts_by_cell(ax) == {(0, 0): "0.25", (0, 1): "0.75"}


def test_heatmap_labels_masked_scores_minus_inf_and_greys_them_out():
    ax, image = heatmap(np.array([[1.0, -np.inf]]))
    assert texts_by_cell(ax)[(0, 1)] == "-inf"
    assert np.ma.getmaskarray(image.get_array())[0, 1]


def test_heatmap_picks_label_colours_readable_on_the_cell():
    ax, _ = heatmap(np.array([[-1.0, 0.0, 1.0]]), cmap="RdBu_r")
    colours = [t.get_color() for t in sorted(ax.texts, key=lambda t: t.get_position()[0])]
    assert colours == ["white", "black", "white"]  # dark ends, pale middle


def test_heatmap_refuses_a_matrix_that_is_not_2d():
    with pytest.raises(ValueError, match="2-D"):
        heatmap(np.zeros((2, 2, 2)))


# -- gradient_heatmaps --------------------------------------------------------------

def test_gradient_heatmaps_draws_one_panel_per_matrix():
    a = mha.softmax(np.array([[0.0, 1.0], [2.0, 0.0]]))
    d = np.array([[0.1, -0.1], [-0.2, 0.2]])
    fig, axes, images = gradient_heatmaps([("A", a), ("dS", d)])
    assert len(axes) == len(images) == 2
    np.testing.assert_array_equal(images[1].get_array(), d)


def test_gradient_heatmaps_centres_signed_matrices_on_zero():
    _, _, images = gradient_heatmaps([("dS", np.array([[0.3, -0.1]]))])
    assert images[0].norm.vmin == -images[0].norm.vmax == -0.3


def test_gradient_heatmaps_hatches_every_blocked_cell_on_every_panel():
    mask = mha.causal_mask(3)
    _, axes, _ = gradient_heatmaps([("A", np.eye(3)), ("dA", -np.eye(3))], mask=mask)
    for ax in axes:
        hatched = [p for p in ax.patches if p.get_hatch()]
        assert len(hatched) == mask.sum()


def test_gradient_heatmaps_refuses_matrices_of_different_shapes():
    with pytest.raises(ValueError, match="one shape"):
        gradient_heatmaps([("a", np.zeros((2, 2))), ("b", np.zeros((2, 3)))])


# -- score_slopes -------------------------------------------------------------------

def first_weight(s):
    return mha.softmax(s)[0]


def test_score_slopes_draws_the_tangent_with_the_given_slope():
    s = np.zeros(2)
    g = mha.softmax_backward(mha.softmax(s), np.array([1.0, 0.0]))  # (0.25, -0.25)
    _, _, _, tangents = score_slopes(first_weight, s, g)
    for line, slope in zip(tangents, g, strict=True):
        x, y = line.get_data()
        assert (y[1] - y[0]) / (x[1] - x[0]) == pytest.approx(slope)


def test_score_slopes_curve_is_the_loss_along_one_score():
    s = np.zeros(2)
    _, _, curves, _ = score_slopes(first_weight, s, np.zeros(2), span=1.0)
    x, y = curves[1].get_data()
    np.testing.assert_allclose(y, [first_weight(np.array([0.0, xi])) for xi in x])


def test_score_slopes_refuses_a_gradient_of_another_shape():
    with pytest.raises(ValueError, match="one shape"):
        score_slopes(first_weight, np.zeros(2), np.zeros(3))


# -- weights_vs_scale (lesson 03's softmax curve) --------------------------------------

def softmax_curve(n_scales=7):
    scales = np.geomspace(0.1, 100, n_scales)
    z = np.array([0.5, -1.0, 1.5])
    return scales, mha.softmax(scales[:, None] * z)  # (S, 3)


def test_weights_vs_scale_draws_one_curve_per_key():
    scales, weights = softmax_curve()
    _, lines = weights_vs_scale(scales, weights)
    assert len(lines) == 3
    for j, line in enumerate(lines):
        np.testing.assert_allclose(line.get_ydata(), weights[:, j])


def test_weights_vs_scale_draws_the_winning_key_thick():
    scales, weights = softmax_curve()
    _, lines = weights_vs_scale(scales, weights)
    assert lines[2].get_linewidth() > lines[0].get_linewidth()  # z = 1.5 wins at large c


def test_weights_vs_scale_refuses_rows_that_are_not_probabilities():
    scales, weights = softmax_curve()
    with pytest.raises(ValueError, match="softmax output"):
        weights_vs_scale(scales, weights * 2)


def test_weights_vs_scale_refuses_a_scale_count_that_does_not_match():
    scales, weights = softmax_curve()
    with pytest.raises(ValueError, match=r"\(S, n\)"):
        weights_vs_scale(scales[:-1], weights)


def test_weights_vs_scale_on_a_linear_axis_starts_at_scale_zero():
    scales = np.linspace(0, 6, 13)
    weights = mha.softmax(scales[:, None] * np.array([0.5, -1.0, 1.5]))
    ax, _ = weights_vs_scale(scales, weights, log=False)
    assert ax.get_xscale() == "linear" and ax.get_xlim() == (0.0, 6.0)


def test_weights_vs_scale_refuses_scale_zero_on_a_log_axis():
    scales = np.linspace(0, 6, 13)
    weights = mha.softmax(scales[:, None] * np.array([0.5, -1.0, 1.5]))
    with pytest.raises(ValueError, match="log=False"):
        weights_vs_scale(scales, weights)


# -- jacobian_norm_vs_scale (lesson 03's gradient size) ---------------------------------

def test_jacobian_norm_plot_on_linear_axes_starts_at_zero_and_shows_the_peak():
    from mha.plot import jacobian_norm_vs_scale

    ax, artists = jacobian_norm_vs_scale([0.0, 1.0, 2.0], [0.125, 0.344, 0.2], log=False)
    assert ax.get_xscale() == ax.get_yscale() == "linear"
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 0.344
    np.testing.assert_allclose(artists["curve"].get_ydata(), [0.125, 0.344, 0.2])


def test_jacobian_norm_plot_draws_each_level_as_a_horizontal_line():
    from mha.plot import jacobian_norm_vs_scale

    _, artists = jacobian_norm_vs_scale([0.0, 1.0], [0.125, 0.3], levels={"1/8": 0.125},
                                        log=False)
    np.testing.assert_allclose(artists["1/8"].get_ydata(), [0.125, 0.125])


def test_jacobian_norm_plot_keeps_log_axes_for_the_far_range():
    from mha.plot import jacobian_norm_vs_scale

    ax, _ = jacobian_norm_vs_scale([1.0, 10.0, 100.0], [0.3, 1e-3, 1e-28])
    assert ax.get_xscale() == ax.get_yscale() == "log"


# -- heatmap_row (lesson 04: two pictures of the leak on one scale) -------------------

def test_heatmap_row_puts_every_panel_on_one_colour_scale():
    from mha.plot import heatmap_row

    drawn = heatmap_row([("a", np.array([[0.0, 0.2]])), ("b", np.array([[0.5, 1.0]]))],
                        colorbar_label="size")
    assert [im.get_clim() for im in drawn["images"]] == [(0.0, 1.0), (0.0, 1.0)]


def test_heatmap_row_draws_one_colour_bar_with_its_label():
    from mha.plot import heatmap_row

    drawn = heatmap_row([("a", np.eye(2)), ("b", np.zeros((2, 2)))], colorbar_label="moved by")
    assert drawn["colorbar"].ax.get_ylabel() == "moved by"
    assert drawn["colorbar"].mappable.get_clim() == (0.0, 1.0)


def test_heatmap_row_scale_ignores_nan_and_takes_given_bounds():
    from mha.plot import heatmap_row

    drawn = heatmap_row([("a", np.array([[np.nan, 0.4]]))], colorbar_label="w", vmin=0, vmax=1)
    assert drawn["images"][0].get_clim() == (0.0, 1.0)
    assert np.ma.is_masked(drawn["images"][0].get_array()[0, 0])


def test_heatmap_row_refuses_a_matrix_that_is_not_2d():
    from mha.plot import heatmap_row

    with pytest.raises(ValueError, match="2-D"):
        heatmap_row([("a", np.zeros(3))], colorbar_label="w")


def test_gradient_heatmaps_gives_each_panel_its_own_colour_bar():
    _, _, images = gradient_heatmaps([("A", np.eye(2)), ("dS", -np.eye(2))])
    assert [im.colorbar.mappable for im in images] == images
    assert images[1].colorbar.vmin == -1.0 and images[1].colorbar.vmax == 1.0
