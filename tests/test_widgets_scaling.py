"""Specification of the lesson-03 ScalingExplorer, driven as a learner drives it:
set a control's value, read explorer.state and the caption."""

from __future__ import annotations

import numpy as np
import pytest

from mha.scaling import sample_head, scores_at_width
from mha.widgets import ScalingExplorer


@pytest.fixture(scope="module")
def explorer():
    return ScalingExplorer()


@pytest.fixture(autouse=True)
def restore_defaults(explorer):
    yield
    explorer.d_k_slider.value = 64
    explorer.divide_box.value = True


def test_d_k_steps_are_powers_of_two_from_4_to_1024(explorer):
    assert list(explorer.d_k_slider.options) == [4, 8, 16, 32, 64, 128, 256, 512, 1024]


def test_default_sample_is_one_query_and_eight_keys_seeded_with_0(explorer):
    q, k = sample_head(8, 1024, seed=0)
    np.testing.assert_array_equal(explorer.q, q)
    np.testing.assert_array_equal(explorer.k, k)


def test_another_seed_draws_another_sample():
    assert not np.array_equal(ScalingExplorer(seed=1).q, ScalingExplorer().q)


def test_default_is_d_k_64_divided(explorer):
    assert explorer.state["d_k"] == 64
    assert explorer.state["divide"] is True


def test_moving_the_slider_changes_the_state_d_k(explorer):
    explorer.d_k_slider.value = 256
    assert explorer.state["d_k"] == 256


def test_unticking_the_box_uses_raw_dot_products_of_the_first_d_k_features(explorer):
    explorer.divide_box.value = False
    np.testing.assert_allclose(explorer.state["scores"], explorer.k[:, :64] @ explorer.q[:64])


def test_ticked_box_divides_the_same_dot_products_by_sqrt_d_k(explorer):
    explorer.d_k_slider.value = 256
    np.testing.assert_allclose(explorer.state["scores"],
                               scores_at_width(explorer.q, explorer.k, 256, divide=False) / 16)


def test_divided_weights_are_measured_at_each_width_not_copied(explorer):
    first = explorer.state["weights"].copy()
    explorer.d_k_slider.value = 1024
    assert not np.allclose(explorer.state["weights"], first)


def test_divided_largest_weight_stays_far_from_one_at_every_d_k(explorer):
    largest = []
    for d_k in explorer.D_K_OPTIONS:
        explorer.d_k_slider.value = d_k
        largest.append(explorer.state["largest_weight"])
    assert max(largest) < 0.7


def test_without_division_the_largest_weight_grows_with_d_k(explorer):
    explorer.divide_box.value = False
    largest = []
    for d_k in (4, 64, 1024):
        explorer.d_k_slider.value = d_k
        largest.append(explorer.state["largest_weight"])
    assert largest[0] < largest[1] < largest[2]
    assert largest[2] > 0.999


def test_without_division_the_gradient_vanishes_at_large_d_k(explorer):
    explorer.divide_box.value = False
    explorer.d_k_slider.value = 1024
    assert explorer.state["jacobian_norm"] < 1e-6


def test_bars_show_the_state_weights(explorer):
    explorer.divide_box.value = False
    explorer.d_k_slider.value = 16
    heights = [bar.get_height() for bar in explorer.bars]
    np.testing.assert_allclose(heights, explorer.state["weights"])


def test_marker_sits_at_the_current_setting(explorer):
    explorer.divide_box.value = False
    explorer.d_k_slider.value = 32
    x, y = explorer.dot.get_xydata()[0]
    assert (x, y) == pytest.approx((32, explorer.state["jacobian_norm"]))


def test_caption_states_largest_weight_and_gradient_size(explorer):
    explorer.divide_box.value = False
    explorer.d_k_slider.value = 1024
    caption = explorer.caption.value
    assert f"largest weight {explorer.state['largest_weight']:.3f}" in caption
    assert f"{explorer.state['jacobian_norm']:.2g}" in caption


def test_summary_is_the_default_caption(explorer):
    assert explorer.summary() == (
        "ScalingExplorer: d_k=64, divided: largest weight 0.423, "
        "gradient size (Jacobian norm) 0.3"
    )


def test_a_change_redraws_the_image(explorer):
    before = explorer.image.value
    explorer.divide_box.value = False
    assert explorer.image.value != before


def test_redraw_keeps_the_same_axes_and_artists(explorer):
    axes, bars, dot = list(explorer.figure.axes), list(explorer.bars), explorer.dot
    explorer.d_k_slider.value = 8
    explorer.divide_box.value = False
    assert explorer.figure.axes == axes
    assert list(explorer.bars) == bars and explorer.dot is dot


def test_gradient_curves_are_the_state_norms_at_each_width(explorer):
    for divide in (False, True):
        explorer.divide_box.value = divide
        for d_k, drawn in zip(explorer.D_K_OPTIONS, explorer.curves[divide], strict=True):
            explorer.d_k_slider.value = d_k
            assert drawn == pytest.approx(max(explorer.state["jacobian_norm"], explorer.FLOOR))


def test_every_gradient_size_of_the_default_sample_is_drawn_above_the_floor(explorer):
    """No point of the stored picture is lifted to the axis floor: the undivided norm at
    d_k = 1024 (about 4e-16) is drawn at its value, not at the floor."""
    drawn = np.concatenate([explorer.curves[False], explorer.curves[True]])
    assert drawn.min() > explorer.FLOOR
    assert explorer.ax_grad.get_ylim()[0] < explorer.FLOOR


@pytest.mark.parametrize(("d_k", "divide"), [(4, False), (64, True), (1024, False)])
def test_state_is_the_scaling_state_of_its_sample(explorer, d_k, divide):
    from mha.scaling import scaling_state

    explorer.divide_box.value = divide
    explorer.d_k_slider.value = d_k
    expected = scaling_state(explorer.q, explorer.k, d_k, divide)
    assert explorer.state["largest_weight"] == expected["largest_weight"]
    assert explorer.state["jacobian_norm"] == expected["jacobian_norm"]


def test_refuses_a_d_k_that_is_not_a_slider_step():
    with pytest.raises(ValueError, match="d_k must be one of"):
        ScalingExplorer(d_k=100)


def test_dashed_curves_are_the_median_over_other_samples(explorer):
    from mha import scaling

    seeds = range(1, explorer.N_SAMPLES + 1)
    for divide in (False, True):
        norms = scaling.jacobian_norms_by_width(seeds, explorer.D_K_OPTIONS, divide)
        np.testing.assert_allclose(explorer.medians[divide],
                                   np.maximum(np.median(norms, axis=0), explorer.FLOOR))
    # the typical sample: undivided, the gradient falls by orders of magnitude; divided, it stays
    assert explorer.medians[False][-1] < 1e-3 * explorer.medians[False][0]
    assert explorer.medians[True].min() > 0.2


def test_jacobian_norms_by_width_row_is_what_the_explorer_draws_for_that_seed(explorer):
    from mha import scaling

    row = scaling.jacobian_norms_by_width([0], explorer.D_K_OPTIONS, False)[0]
    np.testing.assert_allclose(np.maximum(row, explorer.FLOOR), explorer.curves[False])


def test_each_curve_has_its_own_legend_label_saying_divided_or_not(explorer):
    labels = [line.get_label() for line in explorer.ax_grad.get_lines()]
    assert labels[:4] == ["this sample, not divided", "this sample, divided",
                          f"median of {explorer.N_SAMPLES} samples, not divided",
                          f"median of {explorer.N_SAMPLES} samples, divided"]
    assert len(set(labels)) == len(labels)


def test_the_sample_curves_are_drawn_thin_over_the_thick_median_curves(explorer):
    # divided, the median runs along the sample's curve: neither may hide the other
    sample, median = explorer.ax_grad.get_lines()[1], explorer.ax_grad.get_lines()[3]
    assert sample.get_zorder() > median.get_zorder()
    assert sample.get_linewidth() < median.get_linewidth()
    assert median.get_linestyle() == "--" and sample.get_color() != median.get_color()


def test_a_d_k_seen_before_is_shown_again_without_drawing():
    from mha.widgets import ScalingExplorer

    explorer = ScalingExplorer(d_k=64)
    first = explorer.png
    draws = []
    render = explorer._render_png
    explorer._render_png = lambda: draws.append(1) or render()
    explorer.d_k_slider.value = 4
    explorer.d_k_slider.value = 64
    assert len(draws) == 1 and explorer.png == first
