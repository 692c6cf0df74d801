"""Lesson 01's widget: the weighted sum of two values, and its explorer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha.widgets import WeightedSumExplorer, weighted_sum_readout

V = np.array([[2.0, 0.0], [0.0, 4.0]])
unit = st.floats(min_value=0.0, max_value=1.0)


def test_lesson_example_reads_out_1_5_and_1():
    out = weighted_sum_readout(V, 0.75)
    np.testing.assert_allclose(out["weights"], [0.75, 0.25])
    np.testing.assert_allclose(out["readout"], [1.5, 1.0])


@given(unit)
def test_weights_are_non_negative_and_sum_to_one(w):
    weights = weighted_sum_readout(V, w)["weights"]
    assert np.all(weights >= 0)
    assert weights.sum() == pytest.approx(1.0)


@given(unit)
def test_readout_lies_on_the_segment_at_the_weight(w):
    readout = weighted_sum_readout(V, w)["readout"]
    np.testing.assert_allclose(readout, V[1] + w * (V[0] - V[1]), atol=1e-12)


def test_weight_one_reads_out_the_first_value_and_zero_the_second():
    np.testing.assert_array_equal(weighted_sum_readout(V, 1.0)["readout"], V[0])
    np.testing.assert_array_equal(weighted_sum_readout(V, 0.0)["readout"], V[1])


def test_values_of_any_width_are_accepted():
    out = weighted_sum_readout([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], 0.5)
    np.testing.assert_allclose(out["readout"], [2.0, 2.0, 2.0])


@pytest.mark.parametrize("w", [-0.01, 1.01, float("nan")])
def test_weight_outside_unit_interval_is_refused(w):
    with pytest.raises(ValueError, match=r"w_first must be in \[0, 1\]"):
        weighted_sum_readout(V, w)


@pytest.mark.parametrize("values", [[1.0, 2.0], [[1.0], [2.0], [3.0]]])
def test_values_that_are_not_two_vectors_are_refused(values):
    with pytest.raises(ValueError, match=r"shape \(2, d\)"):
        weighted_sum_readout(values, 0.5)


def test_non_finite_values_are_refused():
    with pytest.raises(ValueError, match="finite"):
        weighted_sum_readout([[np.inf, 0.0], [0.0, 4.0]], 0.5)


# -- the explorer -------------------------------------------------------------

@pytest.fixture
def explorer():
    return WeightedSumExplorer()


def test_explorer_starts_at_the_lesson_example(explorer):
    assert explorer.slider.value == 0.75
    np.testing.assert_allclose(explorer.state["readout"], [1.5, 1.0])


def test_moving_the_slider_moves_the_readout(explorer):
    explorer.slider.value = 0.25
    np.testing.assert_allclose(explorer.state["weights"], [0.25, 0.75])
    np.testing.assert_allclose(explorer.state["readout"], [0.5, 3.0])


def test_the_red_point_is_drawn_at_the_readout(explorer):
    explorer.slider.value = 0.4
    np.testing.assert_allclose(np.ravel(explorer.point.get_data()), explorer.state["readout"])


def test_the_arrows_add_up_tip_to_tail_to_the_readout(explorer):
    explorer.slider.value = 0.6
    first, second = explorer.first_arrow, explorer.second_arrow
    np.testing.assert_allclose(first.xyann, [0.0, 0.0])
    np.testing.assert_allclose(first.xy, 0.6 * V[0])
    np.testing.assert_allclose(second.xyann, first.xy)
    np.testing.assert_allclose(second.xy, explorer.state["readout"])


def test_moving_the_slider_redraws_the_image(explorer):
    before = explorer.image.value
    explorer.slider.value = 0.1
    assert explorer.image.value != before
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert len(explorer.redraw_seconds) == 2


def test_picture_is_large_enough_to_read(explorer):
    png = bytes(explorer.image.value)
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (400, 400)


def test_summary_states_weights_and_readout(explorer):
    assert explorer.summary() == "WeightedSumExplorer: weights [0.75, 0.25] read out [1.50, 1.00]"


def test_display_bundle_has_png_fallback_and_summary_text(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == explorer.summary()
    assert bundle["image/png"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_explorer_refuses_values_it_cannot_draw():
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        WeightedSumExplorer(values=[[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])


def test_explorer_refuses_a_starting_weight_outside_unit_interval():
    with pytest.raises(ValueError, match=r"w_first must be in \[0, 1\]"):
        WeightedSumExplorer(w_first=1.5)
