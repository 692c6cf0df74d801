"""Specifications of lesson 04's mask explorer and its plain functions.

The explorer is driven as a learner drives it: set a control's ``.value``,
read ``explorer.state``.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha import masks, plot  # noqa: E402
from mha.widgets import MaskExplorer, mask_before_vs_after, mask_preset  # noqa: E402

# -- plain functions --------------------------------------------------------


def test_causal_preset_is_the_causal_mask():
    np.testing.assert_array_equal(mask_preset("causal"), masks.causal_mask(5))


def test_padding_preset_blocks_the_last_two_keys_for_every_query():
    m = mask_preset("padding")
    assert np.all(m[:, 3:]) and not np.any(m[:, :3])


def test_causal_plus_padding_preset_is_their_union():
    expected = mask_preset("causal") | mask_preset("padding")
    np.testing.assert_array_equal(mask_preset("causal + padding"), expected)


def test_mask_preset_refuses_custom_and_unknown_names():
    for name in ("custom", "diagonal"):
        with pytest.raises(ValueError, match="unknown mask preset"):
            mask_preset(name)


def test_mask_preset_refuses_padding_every_key():
    with pytest.raises(ValueError, match="one key must stay"):
        mask_preset("padding", t=5, n_padded=5)


def test_mask_before_softmax_gives_one_zero_for_two_equal_scores():
    out = mask_before_vs_after(np.zeros((1, 2)), np.array([[False, True]]))
    np.testing.assert_array_equal(out["before"], [[1.0, 0.0]])


def test_zero_after_softmax_gives_half_zero_for_two_equal_scores():
    out = mask_before_vs_after(np.zeros((1, 2)), np.array([[False, True]]))
    np.testing.assert_array_equal(out["after"], [[0.5, 0.0]])
    np.testing.assert_array_equal(out["after_row_sums"], [0.5])


def test_mask_before_vs_after_refuses_a_fully_masked_row():
    with pytest.raises(ValueError, match="fully masked row"):
        mask_before_vs_after(np.zeros((2, 2)), np.array([[False, True], [True, True]]))


# -- the explorer -----------------------------------------------------------


@pytest.fixture
def explorer():
    return MaskExplorer()


def test_default_is_causal_and_shows_the_causal_mask(explorer):
    assert explorer.state["preset"] == "causal"
    np.testing.assert_array_equal(explorer.state["mask"], masks.causal_mask(5))


def test_mask_before_softmax_rows_sum_to_one_for_every_preset(explorer):
    for name in ("causal", "padding", "causal + padding"):
        explorer.preset.value = name
        np.testing.assert_allclose(explorer.state["before_row_sums"], 1.0)


def test_zero_after_softmax_rows_sum_to_less_than_one_where_something_is_blocked(explorer):
    explorer.preset.value = "causal + padding"
    assert np.all(explorer.state["after_row_sums"] < 1.0)


def test_blocked_cells_get_weight_zero_in_both_variants(explorer):
    explorer.preset.value = "causal + padding"
    m = explorer.state["mask"]
    assert np.all(explorer.state["before"][m] == 0) and np.all(explorer.state["after"][m] == 0)


def test_choosing_a_preset_sets_the_grid(explorer):
    explorer.preset.value = "padding"
    np.testing.assert_array_equal(explorer.grid(), mask_preset("padding"))


def test_clicking_a_cell_blocks_it_and_switches_to_custom(explorer):
    explorer.cells[4][0].value = True
    assert explorer.state["mask"][4, 0]
    assert explorer.state["preset"] == "custom"
    assert explorer.state["before"][4, 0] == 0


def test_choosing_custom_keeps_the_grid(explorer):
    explorer.preset.value = "padding"
    explorer.preset.value = "custom"
    np.testing.assert_array_equal(explorer.grid(), mask_preset("padding"))


def test_a_click_that_blocks_a_whole_row_is_refused_and_reverted(explorer):
    explorer.cells[0][0].value = True  # query 0 could only read key 0
    assert not explorer.grid()[0, 0]
    assert "refused" in explorer.state["refused"] and "query 0" in explorer.state["refused"]
    assert "refused" in explorer.caption.value


def test_the_refusal_clears_on_the_next_accepted_change(explorer):
    explorer.cells[0][0].value = True
    explorer.cells[3][1].value = True
    assert explorer.state["refused"] is None


def test_blocked_buttons_read_minus_inf(explorer):
    assert explorer.cells[0][1].description == "-inf" and explorer.cells[1][0].description == "0"


def test_the_shown_heatmaps_are_the_computed_weights(explorer):
    explorer.preset.value = "causal + padding"
    shown = explorer.images[1].get_array()
    np.testing.assert_allclose(shown.filled(0.0), explorer.state["after"])
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), explorer.state["mask"])


def test_summary_gives_each_variants_row_sums(explorer):
    text = explorer.summary()
    assert text.startswith("MaskExplorer: causal: row sums, mask before softmax [1.00 1.00")
    assert "zero after softmax [0.19 " in text


def test_redraw_updates_the_image(explorer):
    before = explorer.image.value
    explorer.preset.value = "padding"
    assert explorer.image.value != before


def test_explorer_refuses_an_unknown_preset():
    with pytest.raises(ValueError, match="preset must be one of"):
        MaskExplorer(preset="custom")


# -- mask_grid picture ------------------------------------------------------


def test_mask_grid_draws_blocked_as_one():
    ax, image = plot.mask_grid(masks.causal_mask(3))
    np.testing.assert_array_equal(image.get_array(), masks.causal_mask(3).astype(int))
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("-inf") == 3 and texts.count("0") == 6
    matplotlib.pyplot.close(ax.figure)


def test_mask_grid_with_bool_labels_writes_true_in_blocked_cells():
    ax, _ = plot.mask_grid(masks.causal_mask(3), labels="bool")
    texts = {(t.get_position()[1], t.get_position()[0]): t.get_text() for t in ax.texts}
    assert texts[(0, 1)] == "True"  # query 0 may not read key 1
    assert texts[(1, 0)] == "False"
    assert len(texts) == 9


def test_mask_grid_puts_queries_down_and_keys_across():
    ax, _ = plot.mask_grid(masks.causal_mask(2))
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("query i", "key j")


def test_mask_grid_refuses_a_non_boolean_mask():
    with pytest.raises(TypeError, match=r"boolean mask \(True = blocked\)"):
        plot.mask_grid(np.zeros((2, 2)))


def test_mask_grid_refuses_a_mask_that_is_not_2d():
    with pytest.raises(ValueError, match=r"2-D \(Tq, Tk\)"):
        plot.mask_grid(np.zeros((1, 2, 2), dtype=bool))


def test_mask_grid_refuses_unknown_labels():
    with pytest.raises(ValueError, match="labels must be"):
        plot.mask_grid(np.zeros((2, 2), dtype=bool), labels="numbers")


def test_blocked_cells_have_one_colour_in_mask_grid_heatmap_and_explorer():
    from matplotlib.colors import to_rgba

    from mha.plot.matrices import BLOCKED_GREY
    from mha.widgets import MaskExplorer

    grey = to_rgba(BLOCKED_GREY)
    _, grid = plot.mask_grid(masks.causal_mask(3))
    _, heat = plot.heatmap(np.where(masks.causal_mask(3), -np.inf, 0.0))
    explorer = MaskExplorer()
    assert to_rgba(grid.cmap(grid.norm(1))) == grey  # a blocked cell of the grid
    assert to_rgba(heat.cmap.get_bad()) == grey  # a -inf cell of a heatmap
    assert all(to_rgba(image.cmap.get_bad()) == grey for image in explorer.images)
    assert to_rgba(grid.cmap(grid.norm(0))) != grey  # allowed cells differ
    matplotlib.pyplot.close("all")
