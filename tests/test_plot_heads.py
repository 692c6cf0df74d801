"""Specification of mha.plot.head_grid (lesson 06): one panel per (layer, head), the
weights drawn as given, the tokens as ticks, the causal future in grey."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from mha.plot import head_grid  # noqa: E402

LABELS = list("ABCD")


def causal_maps(n_layers=2, n_heads=3, t=4, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.random((n_layers, n_heads, t, t)) * np.tril(np.ones((t, t)))
    return w / w.sum(-1, keepdims=True)  # (L, H, T, T), rows sum to 1, zero above the diagonal


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_one_panel_per_layer_and_head():
    fig, axes, images = head_grid(causal_maps(), LABELS)
    assert axes.shape == images.shape == (2, 3)
    assert len(fig.axes) == 6 + 1  # and the colour bar


def test_each_panel_draws_its_heads_weights():
    maps = causal_maps()
    _, _, images = head_grid(maps, LABELS)
    for layer in range(2):
        for head in range(3):
            np.testing.assert_allclose(images[layer, head].get_array().filled(np.nan)[
                np.tril_indices(4)], maps[layer, head][np.tril_indices(4)])


def test_the_causal_future_is_masked_and_drawn_grey():
    _, _, images = head_grid(causal_maps(), LABELS)
    drawn = images[0, 0].get_array()
    assert drawn.mask[np.triu_indices(4, k=1)].all() and not drawn.mask[np.tril_indices(4)].any()
    assert images[0, 0].cmap.get_bad()[:3] == pytest.approx((0.85, 0.85, 0.85))


def test_tokens_label_both_axes():
    _, axes, _ = head_grid(causal_maps(), LABELS)
    ax = axes[1, 2]
    assert [t.get_text() for t in ax.get_xticklabels()] == LABELS
    assert [t.get_text() for t in ax.get_yticklabels()] == LABELS


def test_colours_run_from_zero_to_one_in_every_panel():
    _, _, images = head_grid(causal_maps(), LABELS)
    assert all(im.get_clim() == (0.0, 1.0) for im in images.flat)


def test_default_titles_name_layer_and_head_and_custom_titles_replace_them():
    _, axes, _ = head_grid(causal_maps(1, 2), LABELS)
    assert axes[0, 1].get_title() == "layer 0, head 1"
    _, axes, _ = head_grid(causal_maps(1, 2), LABELS, titles=[["prev", "other"]])
    assert axes[0, 0].get_title() == "prev"


def test_a_list_of_batched_tensors_is_accepted_as_the_model_returns_it():
    maps = [torch.from_numpy(m[None]).float() for m in causal_maps()]  # per layer (1, H, T, T)
    _, _, images = head_grid(maps, LABELS)
    assert images.shape == (2, 3)


def test_layers_across_puts_layers_side_by_side_but_keeps_layer_head_indexing():
    maps = causal_maps(n_layers=2, n_heads=1)
    fig, axes, images = head_grid(maps, LABELS, layers_across=True)
    assert axes.shape == (2, 1)
    left, right = axes[0, 0].get_position(), axes[1, 0].get_position()
    assert left.x0 < right.x0 and left.y0 == pytest.approx(right.y0)
    np.testing.assert_allclose(images[1, 0].get_array()[3], maps[1, 0][3])


def test_refuses_maps_whose_length_is_not_the_number_of_labels():
    with pytest.raises(ValueError, match="T = len\\(labels\\) = 3"):
        head_grid(causal_maps(), list("ABC"))


def test_refuses_maps_that_are_not_per_head():
    with pytest.raises(ValueError, match="\\(H, T, T\\)"):
        head_grid([np.zeros((4, 4))], LABELS)


def test_one_colour_bar_from_zero_to_one_at_the_right():
    fig, axes, images = head_grid([np.full((2, 3, 3), 0.5)], list("abc"))
    bars = [ax for ax in fig.axes if ax not in set(axes.flat)]
    assert len(bars) == 1 and bars[0].get_ylim() == (0.0, 1.0)
    assert bars[0].get_position().x0 > max(ax.get_position().x1 for ax in axes.flat)
    plt.close(fig)


def test_token_labels_are_readable_by_default():
    fig, axes, _ = head_grid([np.full((1, 3, 3), 0.5)], list("abc"))
    assert all(label.get_fontsize() >= 8 for label in axes[0, 0].get_xticklabels())
    plt.close(fig)
