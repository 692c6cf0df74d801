"""Lesson 01's widget: a query's scores, weights and read-out, and its explorer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha.widgets import WeightedSumExplorer
from mha.widgets.weighted_sum import (
    likely_next_steps,
    query_from_polar,
    slider_steps,
    weighted_sum_readout,
)

K = np.array([[1.0, 0.0], [0.0, 1.0]])
V = np.array([[2.0, 0.0], [0.0, 4.0]])
angles = st.floats(min_value=-180.0, max_value=180.0)
lengths = st.floats(min_value=0.0, max_value=6.0)


# -- query_from_polar ---------------------------------------------------------

def test_angle_zero_points_along_feature_0_and_ninety_along_feature_1():
    np.testing.assert_allclose(query_from_polar(0.0, 2.0), [2.0, 0.0])
    np.testing.assert_allclose(query_from_polar(90.0, 2.0), [0.0, 2.0], atol=1e-15)


@given(angles, lengths)
def test_the_query_has_the_length_asked_for(angle, length):
    assert np.linalg.norm(query_from_polar(angle, length)) == pytest.approx(length, abs=1e-12)


@pytest.mark.parametrize("length", [-0.1, float("inf"), float("nan")])
def test_a_negative_or_non_finite_length_is_refused(length):
    with pytest.raises(ValueError, match="length must be a finite number >= 0"):
        query_from_polar(0.0, length)


def test_a_non_finite_angle_is_refused():
    with pytest.raises(ValueError, match="angle must be a finite number"):
        query_from_polar(float("nan"), 1.0)


# -- weighted_sum_readout -----------------------------------------------------

def test_the_lesson_query_ln3_reads_out_1_5_and_1():
    out = weighted_sum_readout([math.log(3.0), 0.0], K, V)
    np.testing.assert_allclose(out["scores"], [math.log(3.0), 0.0])
    np.testing.assert_allclose(out["weights"], [0.75, 0.25])
    np.testing.assert_allclose(out["readout"], [1.5, 1.0])


def test_scores_are_raw_dot_products_times_the_scale():
    out = weighted_sum_readout([1.0, 2.0], [[3.0, 1.0], [0.0, -1.0]], V, scale=0.5)
    np.testing.assert_allclose(out["scores"], [2.5, -1.0])


@given(angles, lengths)
def test_weights_are_non_negative_and_sum_to_one(angle, length):
    weights = weighted_sum_readout(query_from_polar(angle, length), K, V)["weights"]
    assert np.all(weights >= 0)
    assert weights.sum() == pytest.approx(1.0)


@given(angles, lengths)
def test_readout_of_two_values_lies_on_their_segment(angle, length):
    r = weighted_sum_readout(query_from_polar(angle, length), K, V)["readout"]
    assert r[0] / 2 + r[1] / 4 == pytest.approx(1.0)  # the line through [2, 0] and [0, 4]
    assert np.all(r >= -1e-12) and np.all(r <= V.max(axis=0) + 1e-12)


def test_a_zero_query_weights_every_key_equally():
    out = weighted_sum_readout([0.0, 0.0], K, V)
    np.testing.assert_allclose(out["weights"], [0.5, 0.5])
    np.testing.assert_allclose(out["readout"], [1.0, 2.0])


def test_a_long_query_puts_nearly_all_weight_on_its_largest_score():
    out = weighted_sum_readout(query_from_polar(-30.0, 6.0), K, V)
    assert out["weights"][0] > 0.99
    np.testing.assert_allclose(out["readout"], V[0], atol=0.05)


def test_the_largest_raw_dot_product_wins_not_the_most_similar_direction():
    out = weighted_sum_readout([1.0, 0.0], [[1.0, 0.0], [3.0, 3.0]], V)
    assert out["weights"].argmax() == 1


def test_values_of_any_width_are_accepted():
    out = weighted_sum_readout([0.0, 0.0], K, [[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    np.testing.assert_allclose(out["readout"], [2.0, 2.0, 2.0])


def test_keys_and_values_with_different_counts_are_refused():
    with pytest.raises(ValueError, match="same number Tk"):
        weighted_sum_readout([1.0, 0.0], K, V[:1])


def test_a_query_narrower_than_the_keys_is_refused():
    with pytest.raises(ValueError, match=r"as wide as each key \(d_k=2\)"):
        weighted_sum_readout([1.0], K, V)


def test_arrays_of_the_wrong_rank_are_refused():
    with pytest.raises(ValueError, match=r"query \(d_k,\), keys \(Tk, d_k\)"):
        weighted_sum_readout([[1.0, 0.0]], K, V)


def test_non_finite_entries_are_refused():
    with pytest.raises(ValueError, match="finite"):
        weighted_sum_readout([1.0, 0.0], K, [[np.inf, 0.0], [0.0, 4.0]])


@pytest.mark.parametrize("scale", [-1.0, float("nan")])
def test_a_negative_or_non_finite_scale_is_refused(scale):
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        weighted_sum_readout([1.0, 0.0], K, V, scale=scale)


# -- the explorer -------------------------------------------------------------

@pytest.fixture
def explorer():
    return WeightedSumExplorer()


def test_explorer_starts_at_the_lesson_query_ln3(explorer):
    assert explorer.angle_slider.value == 0.0
    assert explorer.length_slider.value == pytest.approx(math.log(3.0))
    np.testing.assert_allclose(explorer.state["weights"], [0.75, 0.25])
    np.testing.assert_allclose(explorer.state["readout"], [1.5, 1.0])


def test_turning_the_query_to_45_degrees_splits_the_weight_evenly(explorer):
    explorer.angle_slider.value = 45.0
    np.testing.assert_allclose(explorer.state["weights"], [0.5, 0.5])
    np.testing.assert_allclose(explorer.state["readout"], [1.0, 2.0])


def test_lengthening_the_query_pushes_the_readout_toward_the_best_value(explorer):
    before = explorer.state["readout"]
    explorer.length_slider.value = explorer.length_slider.max
    after = explorer.state["readout"]
    assert np.linalg.norm(after - V[0]) < np.linalg.norm(before - V[0])
    assert explorer.state["weights"][0] > 0.99


def test_the_state_is_the_plain_function_of_the_controls(explorer):
    explorer.angle_slider.value, explorer.length_slider.value = 120.0, 2.5
    expected = weighted_sum_readout(query_from_polar(120.0, 2.5), K, V)
    for name in ("query", "scores", "weights", "readout"):
        np.testing.assert_allclose(explorer.state[name], expected[name])


def test_the_red_point_is_drawn_at_the_readout(explorer):
    explorer.angle_slider.value = -60.0
    np.testing.assert_allclose(np.ravel(explorer.point.get_data()), explorer.state["readout"])


def test_the_arrow_is_drawn_from_the_origin_to_the_query(explorer):
    explorer.length_slider.value = 3.0
    np.testing.assert_allclose(explorer.query_arrow.xyann, [0.0, 0.0])
    np.testing.assert_allclose(explorer.query_arrow.xy, explorer.state["query"])


def test_the_bars_are_the_weights_and_their_labels_the_scores(explorer):
    explorer.angle_slider.value = 30.0
    heights = [bar.get_height() for bar in explorer.bars]
    np.testing.assert_allclose(heights, explorer.state["weights"])
    labels = [text.get_text() for text in explorer.score_texts]
    assert labels == [f"score {s:.2f}" for s in explorer.state["scores"]]


def test_moving_a_slider_redraws_the_image(explorer):
    before = explorer.image.value
    explorer.angle_slider.value = 90.0
    assert explorer.image.value != before
    assert explorer.png.startswith(b"\x89PNG")
    assert len(explorer.redraw_seconds) == 2


def test_picture_is_large_enough_to_read(explorer):
    png = explorer.png
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (900, 380) == explorer.image_size


def test_picture_is_shown_at_its_natural_width_never_stretched(explorer):
    assert explorer.image.layout.width == "900px"
    assert explorer.image.layout.max_width == "100%"


def test_sliders_are_wide_enough_to_drag_by_the_degree(explorer):
    # The default slider (about 120 px of track) turned the query 85 degrees in a 30 px drag.
    for slider in (explorer.angle_slider, explorer.length_slider):
        assert int(slider.layout.width.removesuffix("px")) >= 500


def test_the_query_arrow_is_drawn_over_the_keys_not_under_them(explorer):
    # At the default query [ln 3, 0] the arrow runs along k0: drawn after the keys (an
    # animated artist, pasted on the static background), it stays visible.
    assert explorer.query_arrow in explorer.animated_artists()
    import io

    from PIL import Image
    pixels = np.asarray(Image.open(io.BytesIO(explorer.png)).convert("RGB"))
    ax = explorer.ax_keys
    x, y = ax.transData.transform((0.5, 0.0))  # halfway along k0, on the query's shaft
    row, col = int(round(pixels.shape[0] - y)), int(round(x))
    r, g, b = pixels[row - 1:row + 2, col - 1:col + 2].reshape(-1, 3).mean(axis=0)
    assert r > 150 and g < 110 and b < 110, (r, g, b)  # red, not the keys' blue


def test_a_redraw_draws_only_the_moving_artists_and_matches_a_full_draw(explorer):
    explorer.angle_slider.value, explorer.length_slider.value = 35.0, 3.0
    fresh = WeightedSumExplorer(angle=35.0, length=3.0)
    assert explorer.png == fresh.png


def test_a_redraw_is_fast(explorer):
    import time
    start = time.process_time()
    for angle in range(-90, 90, 5):
        explorer.angle_slider.value = float(angle)
    per_redraw = (time.process_time() - start) / 36
    assert per_redraw < 0.05, per_redraw  # about 14 ms of CPU here; a full draw took 100 ms


def test_summary_states_query_scores_weights_and_readout(explorer):
    assert explorer.summary() == ("WeightedSumExplorer: query [1.10, 0.00]: scores [1.10, 0.00] "
                                  "weights [0.75, 0.25] read out [1.50, 1.00]")


def test_summary_never_shows_minus_zero(explorer):
    explorer.angle_slider.value = -180.0
    assert "-0.00" not in explorer.summary()


def test_display_bundle_has_png_fallback_and_summary_text(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == explorer.summary()
    assert bundle["image/png"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_explorer_draws_three_keys_and_values_as_a_triangle():
    e = WeightedSumExplorer(keys=[[1, 0], [0, 1], [-1, -1]], values=[[2, 0], [0, 4], [0, 0]])
    assert len(e.bars) == 3
    np.testing.assert_allclose(e.state["weights"].sum(), 1.0)


def test_explorer_refuses_values_it_cannot_draw():
    with pytest.raises(ValueError, match=r"shapes \(Tk, 2\) with Tk = 2 or 3"):
        WeightedSumExplorer(values=[[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])


def test_explorer_refuses_a_starting_length_outside_the_slider():
    with pytest.raises(ValueError, match=r"length must be in \[0, 5\.9924\]"):
        WeightedSumExplorer(length=7.0)


def test_explorer_refuses_a_starting_angle_outside_the_slider():
    with pytest.raises(ValueError, match=r"angle must be in \[-180, 180\]"):
        WeightedSumExplorer(angle=200.0)


def test_the_starting_length_ln_3_lies_on_the_slider_grid():
    """A browser snaps the value to min + k * step and syncs it back: off the grid, the
    lesson's 0.75 / 0.25 would become 0.7503 / 0.2497 as soon as the widget renders."""
    slider = WeightedSumExplorer().length_slider
    steps = (slider.value - slider.min) / slider.step
    assert abs(steps - round(steps)) < 1e-9


def test_the_end_of_the_length_slider_lies_on_its_grid():
    """A browser sends back only min + k * step: an end between two grid points is out of reach."""
    slider = WeightedSumExplorer().length_slider
    steps = (slider.max - slider.min) / slider.step
    assert abs(steps - round(steps)) < 1e-9
    assert round(slider.max, 2) == 5.99


def test_the_key_rings_are_drawn_over_the_query_arrow(explorer):
    # The default query runs along k0 and its arrow covered k0's ring: the rings are animated
    # artists drawn after the arrow.
    moving = explorer.animated_artists()
    assert all(moving.index(ring) > moving.index(explorer.query_arrow)
               for ring in explorer.key_rings)


def test_the_angle_is_drawn_as_an_arc_with_its_number(explorer):
    explorer.angle_slider.value = -30.0
    x, y = explorer.angle_arc.get_data()
    angles = np.degrees(np.arctan2(y, x))
    np.testing.assert_allclose([angles[0], angles[-1]], [0.0, -30.0], atol=1e-9)
    assert explorer.angle_text.get_text() == "-30\N{DEGREE SIGN}"


def test_a_dotted_circle_marks_the_keys_length_one(explorer):
    circles = [line for line in explorer.ax_keys.lines if line.get_linestyle() == ":"]
    assert len(circles) == 1
    x, y = circles[0].get_data()
    np.testing.assert_allclose(np.hypot(x, y), 1.0)


# -- drawing the next picture before it is asked for (issue 19) ------------------------------

STEP = WeightedSumExplorer.LENGTH_STEP


def test_slider_steps_name_a_position_on_the_sliders_grid():
    assert slider_steps(-180.0, 0.0) == (0, 0)
    assert slider_steps(180.0, WeightedSumExplorer.MAX_LENGTH) == (72, 60)
    assert slider_steps(45.0, math.log(3.0)) == (45, 11)  # ln 3 is step 11


def test_slider_steps_accept_a_browsers_rounding_of_a_step():
    assert slider_steps(5.0, 11 * STEP + 2e-16) == slider_steps(5.0, 11 * STEP - 2e-16) == (37, 11)


def test_slider_steps_are_none_off_the_grid():
    assert slider_steps(42.0, 1.0) is None
    assert slider_steps(185.0, 0.0) is None


def test_the_next_steps_are_one_step_of_either_slider_either_way():
    assert likely_next_steps((36, 11)) == [(37, 11), (35, 11), (36, 12), (36, 10)]


def test_the_next_steps_continue_the_last_move_first():
    assert likely_next_steps((36, 11), moved=(1, 0))[:3] == [(37, 11), (38, 11), (35, 11)]
    assert likely_next_steps((36, 11), moved=(0, -1))[:3] == [(36, 10), (36, 9), (36, 12)]


def test_the_next_steps_stay_within_the_sliders_ranges():
    assert likely_next_steps((72, 60), moved=(1, 0)) == [(71, 60), (72, 59)]


def wait_and_count_renders(e):
    e.wait_for_prefetch()
    renders = []
    render = e._render_png
    e._render_png = lambda: renders.append(1) or render()
    return renders


def test_after_a_redraw_the_neighbouring_pictures_are_drawn_ahead(explorer):
    explorer.angle_slider.value = 35.0
    assert explorer.wait_for_prefetch()
    for key in [(40.0, 11 * STEP), (30.0, 11 * STEP), (35.0, 12 * STEP), (35.0, 10 * STEP)]:
        assert key in explorer._pictures, key


def test_one_more_step_shows_a_picture_drawn_ahead_without_rendering(explorer):
    explorer.angle_slider.value = 35.0
    renders = wait_and_count_renders(explorer)
    explorer.angle_slider.value = 40.0
    explorer.wait_for_prefetch()
    explorer.length_slider.value = explorer.length_slider.value + STEP  # as a browser rounds it
    assert renders == []
    assert explorer.caption.value.startswith("query [0.92, 0.77]")  # 1.2 * [cos 40, sin 40]


def test_a_picture_drawn_ahead_is_the_picture_drawn_when_asked_for(explorer):
    explorer.angle_slider.value = 35.0
    explorer.wait_for_prefetch()
    explorer.angle_slider.value = 40.0
    asked = WeightedSumExplorer(angle=40.0)
    assert explorer.png == asked.png


def test_drawing_ahead_leaves_the_shown_figure_alone(explorer):
    explorer.angle_slider.value = -60.0
    explorer.wait_for_prefetch()
    np.testing.assert_allclose(np.ravel(explorer.point.get_data()), explorer.state["readout"])
    assert explorer.angle_text.get_text() == "-60\N{DEGREE SIGN}"


def test_the_picture_cache_is_bounded_and_keeps_the_recent_pictures(explorer):
    explorer.cached_pictures, explorer.prefetch_pause = 6, 0.0
    for angle in range(-90, 91, 5):
        explorer.angle_slider.value = float(angle)
        explorer.wait_for_prefetch()
        assert len(explorer._pictures) <= 6
    assert explorer.picture_key() in explorer._pictures
    assert (-90.0, explorer.picture_key()[1]) not in explorer._pictures


def test_the_further_neighbours_wait_for_a_pause_in_the_redraws(explorer):
    # While keys are pressed, drawing all four neighbours competed with the redraws for the
    # CPU: the first (the move continued) is drawn at once, the others after a pause.
    import time

    explorer.wait_for_prefetch()
    explorer.prefetch_pause = 3.0
    explorer.angle_slider.value = 35.0
    deadline = time.monotonic() + 2.5
    while (40.0, 11 * STEP) not in explorer._pictures and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (40.0, 11 * STEP) in explorer._pictures
    assert (35.0, 12 * STEP) not in explorer._pictures
    assert explorer.wait_for_prefetch()
    assert (35.0, 12 * STEP) in explorer._pictures


def test_when_the_most_likely_neighbour_is_drawn_already_the_others_wait_for_a_pause(explorer):
    # Going back over angles seen before, the move continued is in the cache: drawing the
    # length's neighbours at once slowed those redraws (median 63-72 ms in the browser, against
    # 37-54 ms without them).
    import time

    for angle in (30.0, 40.0):  # 30 and 25 (30's neighbour) drawn, and 40
        explorer.angle_slider.value = angle
        explorer.wait_for_prefetch()
    explorer.prefetch_pause = 3.0
    explorer.angle_slider.value = 35.0  # moving down: 30 comes first, then 25, 40, ...
    time.sleep(0.5)
    assert (35.0, 12 * STEP) not in explorer._pictures
    assert explorer.wait_for_prefetch()
    assert (35.0, 12 * STEP) in explorer._pictures
