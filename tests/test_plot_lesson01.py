"""Lesson 01's picture: values with their convex hull, and the read-outs on top.

The mask grid of lesson 00 is tested with the mask widgets (test_widgets_masks.py).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from mha.plot import convex_hull_2d, hull_picture
from mha.plot.words import word_maps

TRIANGLE = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 3.0]])


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def signed_area(corners):
    x, y = corners[:, 0], corners[:, 1]
    return 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)


# -- convex_hull_2d -------------------------------------------------------------

def test_hull_of_a_square_with_an_inside_point_is_the_four_corners():
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]], dtype=float)
    corners = convex_hull_2d(square)
    assert {tuple(c) for c in corners} == {(0, 0), (1, 0), (1, 1), (0, 1)}


def test_hull_corners_run_counter_clockwise():
    assert signed_area(convex_hull_2d(TRIANGLE)) == pytest.approx(6.0)


def test_hull_of_collinear_points_is_the_two_end_points():
    corners = convex_hull_2d([[0, 0], [1, 1], [2, 2]])
    assert {tuple(c) for c in corners} == {(0, 0), (2, 2)}


def test_hull_refuses_points_that_are_not_2d():
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        convex_hull_2d(np.zeros((4, 3)))


# -- hull_picture ---------------------------------------------------------------

def test_hull_picture_shades_the_triangle_of_the_values():
    artists = hull_picture(TRIANGLE, {"read-outs": TRIANGLE.mean(axis=0)})
    corners = artists["hull"].get_xy()
    assert {tuple(c) for c in corners} == {tuple(c) for c in TRIANGLE}


def test_hull_picture_draws_each_readout_group_where_given():
    inside = np.array([[1.0, 1.0], [0.5, 0.5]])
    outside = np.array([[5.0, 5.0]])
    artists = hull_picture(TRIANGLE, {"inside": inside, "outside": outside})
    np.testing.assert_array_equal(artists["inside"].get_offsets(), inside)
    np.testing.assert_array_equal(artists["outside"].get_offsets(), outside)
    labels = artists["ax"].get_legend_handles_labels()[1]
    assert "inside" in labels and "outside" in labels


def test_hull_picture_of_two_values_is_their_segment():
    artists = hull_picture([[2.0, 0.0], [0.0, 4.0]], {"read-out": [1.5, 1.0]})
    assert {tuple(c) for c in artists["hull"].get_xy()} == {(2.0, 0.0), (0.0, 4.0)}


def test_hull_picture_refuses_readouts_that_are_not_a_dict():
    with pytest.raises(TypeError, match="dict"):
        hull_picture(TRIANGLE, np.zeros((2, 2)))


def test_hull_picture_refuses_a_wrong_number_of_names():
    with pytest.raises(ValueError, match="names"):
        hull_picture(TRIANGLE, {"r": [0.0, 0.0]}, value_names=["a", "b"])


def test_hull_picture_names_the_values_from_v0_as_the_code_counts():
    artists = hull_picture(TRIANGLE, {"r": [1.0, 1.0]})
    names = [t.get_text() for t in artists["ax"].texts]
    assert names == ["v0", "v1", "v2"]


# -- word_maps ------------------------------------------------------------------

WORDS = ["my", "cat", "chased"]


def test_word_maps_draws_each_panel_as_given():
    first, second = np.full((3, 3), 1 / 3), np.eye(3)
    drawn = word_maps([("average", first), ("own rows", second)], WORDS)
    np.testing.assert_array_equal(drawn["images"][0].get_array(), first)
    np.testing.assert_array_equal(drawn["images"][1].get_array(), second)


def test_word_maps_labels_both_axes_with_the_words():
    (ax,) = word_maps([("map", np.eye(3))], WORDS)["axes"]
    assert [t.get_text() for t in ax.get_yticklabels()] == WORDS
    assert [t.get_text() for t in ax.get_xticklabels()] == WORDS
    assert ax.get_ylabel() == "word that reads" and ax.get_xlabel() == "word it reads"


def test_word_maps_puts_every_panel_on_the_zero_to_one_scale_of_a_weight():
    drawn = word_maps([("a", np.eye(3) * 0.5), ("b", np.eye(3))], WORDS)
    assert [image.get_clim() for image in drawn["images"]] == [(0.0, 1.0), (0.0, 1.0)]


def test_word_maps_refuses_a_map_that_is_not_one_row_and_column_per_word():
    with pytest.raises(ValueError, match=r"\(T, T\) with T = 3 words"):
        word_maps([("map", np.eye(2))], WORDS)


def test_word_maps_refuses_an_empty_list_of_panels():
    with pytest.raises(ValueError, match="at least one"):
        word_maps([], WORDS)
