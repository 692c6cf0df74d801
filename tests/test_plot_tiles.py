"""Specification of mha.plot.tile_grid: the tiles of tiled attention, drawn as computed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mha  # noqa: E402
from mha.plot import tile_grid  # noqa: E402
from mha.plot.tiles import COMPUTED, COMPUTED_BLOCKED, SKIPPED_TILE  # noqa: E402
from mha.tiled import SKIPPED, tile_plan  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_causal_grid_leaves_the_tiles_above_the_diagonal_white():
    drawn = tile_grid(8, 8, 2, 2, is_causal=True)
    states = np.asarray(drawn["image"].get_array())
    above = np.arange(8)[:, None] // 2 < np.arange(8)[None, :] // 2  # the tile is above
    assert (states[above] == SKIPPED_TILE).all()
    assert (states[~above] != SKIPPED_TILE).all()


def test_causal_grid_marks_the_future_inside_diagonal_tiles_as_computed_then_blocked():
    states = np.asarray(tile_grid(8, 8, 2, 2, is_causal=True)["image"].get_array())
    assert (states[np.arange(0, 8, 2), np.arange(1, 8, 2)] == COMPUTED_BLOCKED).all()
    assert (states[np.tril(np.ones((8, 8), dtype=bool))] == COMPUTED).all()


def test_grid_returns_the_plan_the_tiled_attention_follows():
    mask = mha.causal_mask(12, window=3)
    drawn = tile_grid(12, 12, 4, 4, mask=mask)
    np.testing.assert_array_equal(drawn["plan"], tile_plan(12, 12, 4, 4, mask=mask))
    assert (drawn["plan"] == SKIPPED).sum() == 3 + 1  # above the band, and far below it


def test_grid_draws_one_line_per_tile_border():
    ax = tile_grid(6, 10, 3, 4)["ax"]
    horizontal = {line.get_ydata()[0] for line in ax.lines if line.get_ydata()[0] ==
                  line.get_ydata()[1] and line.get_xdata()[0] != line.get_xdata()[1]}
    assert {-0.5, 2.5, 5.5} <= horizontal


def test_grid_refuses_a_mask_of_another_shape():
    with pytest.raises(ValueError, match=r"one \(Tq, Tk\) = \(4, 4\) boolean mask"):
        tile_grid(4, 4, 2, 2, mask=np.zeros((4, 5), bool))


def test_mask_legend_takes_the_shades_mask_grid_draws():
    from matplotlib.colors import to_rgba

    from mha.plot import mask_grid
    from mha.plot.tiles import mask_legend

    ax, image = mask_grid(mha.causal_mask(4), labels=None)
    legend = mask_legend(image)
    assert [t.get_text() for t in legend.get_texts()] == ["blocked (True): weight 0",
                                                          "allowed (False)"]
    blocked_patch, allowed_patch = legend.get_patches()
    assert to_rgba(blocked_patch.get_facecolor()) == to_rgba(image.cmap(image.norm(1)))
    assert to_rgba(allowed_patch.get_facecolor()) == to_rgba(image.cmap(image.norm(0)))
    assert blocked_patch.get_facecolor() != allowed_patch.get_facecolor()
