"""Per-head attention maps as a grid: one row per layer, one column per head."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def head_grid(maps, labels, *, titles=None, cell=2.3, cmap="viridis", layers_across=False,
              fontsize=8, colorbar=True):
    """Draw every head's attention map over a token string.

    ``maps``: a list with, per layer, an ``(H, T, T)`` array or a ``(1, H, T, T)``
    tensor (as :meth:`mha.induction.AttentionOnly.attention_maps` returns; the
    batch axis of size 1 is dropped), or one ``(L, H, T, T)`` array.
    ``labels``: ``T`` strings (the tokens), used as ticks on both axes: query
    ``i`` down, key ``j`` across. Cells above the diagonal that hold exactly 0
    (the causal mask) are drawn in grey. Colours run from 0 to 1 in every
    panel, so panels compare. ``titles``: ``(L, H)`` nested strings, default
    ``"layer l, head h"``.

    ``layers_across=True`` puts the layers side by side (one row per head),
    which suits a model with one head per layer. ``fontsize`` sets the token
    labels (points; at the default 8 a letter is about 11 px tall at 100 dpi);
    ``colorbar=True`` adds one colour bar, 0 to 1, for every panel, at the right.

    Returns ``(fig, axes, images)``: ``axes`` and ``images`` are ``(L, H)``
    object arrays; ``images[l, h].get_array()`` holds the weights drawn.
    Refuses maps whose last two axes are not ``(T, T)`` with ``T = len(labels)``.
    """
    layers = [_as_heads(m) for m in maps]  # a list of layers, or (L, H, T, T) row by row
    if not layers:
        raise ValueError("head_grid needs at least one layer of maps.")
    t = len(labels)
    n_layers, n_heads = len(layers), max(m.shape[0] for m in layers)
    for layer, m in enumerate(layers):
        if m.shape[1:] != (t, t):
            raise ValueError(f"layer {layer}: maps must be (H, T, T) with T = len(labels) = {t}; "
                             f"got shape {m.shape}.")
    rows, cols = (n_heads, n_layers) if layers_across else (n_layers, n_heads)
    bar = 0.9 if colorbar else 0.0  # inches kept free at the right for the colour bar
    size = (cell * cols + 0.8 + bar, cell * rows + 0.6)
    fig, grid = plt.subplots(rows, cols, figsize=size, squeeze=False)
    axes = grid.T if layers_across else grid  # always indexed [layer, head]
    images = np.empty((n_layers, n_heads), dtype=object)
    colormap = plt.get_cmap(cmap).with_extremes(bad="0.85")
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    for layer, m in enumerate(layers):
        for head in range(n_heads):
            ax = axes[layer, head]
            if head >= m.shape[0]:
                ax.set_axis_off()
                continue
            w = m[head]
            shown = np.ma.masked_where(future & (w == 0), w)
            images[layer, head] = ax.imshow(shown, cmap=colormap, vmin=0.0, vmax=1.0)
            ax.set_xticks(range(t), labels, fontsize=fontsize)
            ax.set_yticks(range(t), labels, fontsize=fontsize)
            ax.xaxis.tick_top()
            ax.tick_params(length=0, pad=1)
            title = titles[layer][head] if titles is not None else f"layer {layer}, head {head}"
            ax.set_title(title, fontsize=fontsize + 1, pad=fontsize + 6)
    axes[0, 0].set_ylabel("query i", fontsize=fontsize + 1)
    # Fixed margins, not tight_layout: that would draw the whole grid once more.
    right = 1 - (0.2 + bar) / size[0]
    fig.subplots_adjust(left=0.8 / size[0], right=right, bottom=0.2 / size[1],
                        top=1 - 0.6 / size[1], wspace=0.35, hspace=0.5)
    if colorbar:
        drawn = next(im for im in images.flat if im is not None)
        cax = fig.add_axes((right + 0.25 / size[0], 0.2 / size[1], 0.15 / size[0],
                            1 - 0.8 / size[1]))
        fig.colorbar(drawn, cax=cax).set_label("weight (grey: masked future)",
                                               fontsize=fontsize + 1)
        cax.tick_params(labelsize=fontsize)
    return fig, axes, images


def _as_heads(m) -> np.ndarray:
    m = m.detach().cpu().numpy() if hasattr(m, "detach") else np.asarray(m)
    if m.ndim == 4 and m.shape[0] == 1:
        m = m[0]
    if m.ndim != 3:
        raise ValueError("each layer's maps must be (H, T, T) or (1, H, T, T); "
                         f"got shape {m.shape}.")
    return m.astype(float)
