"""Matrices drawn as grids: scores, weights, masks, gradients (query i down, key j across)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

# One colour for "blocked / no weight" in every picture of a mask: the masked (-inf) cells of
# a heatmap, the blocked cells of a mask_grid and of the mask explorer's weights.
BLOCKED_GREY = "0.85"


def heatmap(matrix, ax=None, *, row_label="query i", col_label="key j", title=None,
            fmt=".2f", cmap="viridis", vmin=None, vmax=None, annotate=True,
            row_ticks=None, col_ticks=None):
    """Draw a 2-D matrix, rows = queries (down), columns = keys (across).

    ``matrix (Tq, Tk)``; ``-inf`` entries (masked scores) are drawn in grey
    and annotated ``-inf``. Returns ``(ax, image)``; ``image.get_array()``
    holds the values drawn, for assertions.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D (Tq, Tk) matrix; got shape {m.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * m.shape[1] + 1.8, 0.5 * m.shape[0] + 1.2))
    shown = np.ma.masked_invalid(np.where(np.isneginf(m), np.nan, m))
    colormap = plt.get_cmap(cmap).with_extremes(bad=BLOCKED_GREY)  # masked cells
    image = ax.imshow(shown, cmap=colormap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_xticks(range(m.shape[1]), col_ticks if col_ticks is not None else range(m.shape[1]))
    ax.set_yticks(range(m.shape[0]), row_ticks if row_ticks is not None else range(m.shape[0]))
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, fontsize=10, pad=28)
    if annotate:
        for (i, j), value in np.ndenumerate(m):
            text = "-inf" if np.isneginf(value) else format(value, fmt)
            color = "black" if np.isneginf(value) else _label_color(image, value)
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    return ax, image


def _label_color(image, value) -> str:
    """Black on light cells, white on dark ones, whatever the colormap."""
    red, green, blue, _ = image.cmap(image.norm(value))
    return "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"


def mask_grid(mask, ax=None, *, title=None, labels="additive", row_label="query i",
              col_label="key j", row_ticks=None, col_ticks=None):
    """Draw a boolean mask (package convention, True = blocked) as a grid.

    ``mask (Tq, Tk)`` bool. Blocked cells are grey (``BLOCKED_GREY``, the grey
    of a masked cell in :func:`heatmap` and in the mask explorer), allowed
    cells white.
    ``labels="additive"`` writes each cell's additive value (``0`` allowed,
    ``-inf`` blocked); ``"bool"`` writes ``True`` / ``False``; ``None`` writes
    nothing. Returns ``(ax, image)``; ``image.get_array()`` is the mask as
    0 / 1 (1 = blocked), for assertions.
    """
    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(f"mask_grid draws a boolean mask (True = blocked); got dtype {m.dtype}.")
    if m.ndim != 2:
        raise ValueError(f"mask_grid needs a 2-D (Tq, Tk) mask; got shape {m.shape}.")
    if labels not in ("additive", "bool", None):
        raise ValueError(f"labels must be 'additive', 'bool' or None; got {labels!r}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.5 * m.shape[1] + 1.6, 0.5 * m.shape[0] + 1.2))
    image = ax.imshow(m.astype(int), cmap=ListedColormap(["white", BLOCKED_GREY]), vmin=0,
                      vmax=1, aspect="equal")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_xticks(range(m.shape[1]), col_ticks if col_ticks is not None else range(m.shape[1]))
    ax.set_yticks(range(m.shape[0]), row_ticks if row_ticks is not None else range(m.shape[0]))
    ax.set_xticks(np.arange(m.shape[1] + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(m.shape[0] + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="0.6", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, fontsize=10, pad=28)
    if labels is not None:
        for (i, j), blocked in np.ndenumerate(m):
            if labels == "additive":
                text = "-inf" if blocked else "0"
            else:
                text = "True" if blocked else "False"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="black")
    return ax, image


def scores_to_weights(scores, axes=None, *, row_ticks=None, col_ticks=None, title=None,
                      fmt=".2f"):
    """Two heatmaps side by side: scores ``S`` (left) and ``A = softmax(S)`` by row (right).

    ``scores (Tq, Tk)``, any real values; ``-inf`` (a masked score) is drawn
    grey and gets weight 0. The weights are computed here with
    :func:`mha.softmax` along the keys, so the picture cannot disagree with
    the math; each row's sum is written to the right of ``A``. The weights use
    a fixed colour scale from 0 to 1. ``axes``: an optional pair of axes.

    Returns a dict: ``"axes"`` (the two axes), ``"scores"`` and ``"weights"``
    (``AxesImage``; ``get_array()`` holds the values drawn) and ``"row sums"``
    (one ``Text`` per row). Refuses a matrix that is not 2-D, and every input
    :func:`mha.softmax` refuses (NaN, +inf, a fully masked row).
    """
    from ..reference import softmax

    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(
            f"scores_to_weights needs a 2-D (Tq, Tk) score matrix; got shape {s.shape}."
        )
    a = softmax(s, axis=-1)  # (Tq, Tk), rows sum to 1
    if axes is None:
        width = 0.6 * s.shape[1] + 1.8
        _, axes = plt.subplots(1, 2, figsize=(2 * width + 1.2, 0.5 * s.shape[0] + 1.8),
                               layout="constrained")
    ax_s, ax_a = axes
    _, image_s = heatmap(s, ax_s, title="scores S", fmt=fmt, cmap="cividis",
                         row_ticks=row_ticks, col_ticks=col_ticks)
    _, image_a = heatmap(a, ax_a, title="weights A = softmax(S), row by row", fmt=fmt,
                         vmin=0.0, vmax=1.0, row_ticks=row_ticks, col_ticks=col_ticks)
    sums = [ax_a.text(s.shape[1] - 0.4, i, f"  row sum {total:{fmt}}", ha="left", va="center",
                      fontsize=8) for i, total in enumerate(a.sum(axis=-1))]
    if title:
        ax_s.figure.suptitle(title, fontsize=11)
    return {"axes": (ax_s, ax_a), "scores": image_s, "weights": image_a, "row sums": sums}


def gradient_heatmaps(panels, mask=None, *, row_label="query i", col_label="key j"):
    """Heatmaps side by side, blocked cells hatched, one colour scale (and bar) per panel.

    ``panels`` is a list of ``(title, matrix (Tq, Tk))``; a matrix with negative
    entries gets a diverging colour map centred on 0 (red positive, blue
    negative), a non-negative one (weights) ``viridis``. ``mask (Tq, Tk)``
    bool, True = blocked, is hatched on every panel.

    Returns ``(fig, axes, images)``; ``images[n].get_array()`` holds panel n's
    values and ``images[n].colorbar`` is its colour bar.
    """
    mats = [np.asarray(m, dtype=float) for _, m in panels]
    if not mats or any(m.ndim != 2 or m.shape != mats[0].shape for m in mats):
        raise ValueError("gradient_heatmaps needs one or more 2-D matrices of one shape.")
    rows, cols = mats[0].shape
    fig, axes = plt.subplots(1, len(mats), figsize=(0.75 * cols * len(mats) + 2.0 * len(mats),
                                                     0.6 * rows + 1.6), squeeze=False)
    axes, images = axes[0], []
    for ax, (title, _), m in zip(axes, panels, mats, strict=True):
        bound = float(np.max(np.abs(m))) or 1.0
        diverging = bool(np.any(m < 0))
        style = ({"cmap": "RdBu_r", "vmin": -bound, "vmax": bound} if diverging
                 else {"cmap": "viridis", "vmin": 0.0, "vmax": bound})
        _, image = heatmap(m, ax, title=title, row_label=row_label, col_label=col_label,
                           annotate=False, **style)
        fig.colorbar(image, ax=ax, shrink=0.8)  # each panel has its own scale: say which
        images.append(image)
        for (i, j), value in np.ndenumerate(m):
            # dark cells get white text: strong colours (diverging) or the low end of viridis
            dark = abs(value) > 0.6 * bound if diverging else value < 0.5 * bound
            ax.text(j, i, f"{value + 0.0:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
        if mask is not None:
            for i, j in zip(*np.nonzero(np.asarray(mask)), strict=True):
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                           edgecolor="0.6", lw=0, alpha=0.6))
    fig.tight_layout()
    return fig, axes, images


def heatmap_row(panels, *, colorbar_label, vmin=None, vmax=None, row_label="query i",
                col_label="key j", fmt=".2f", figsize=None):
    """Heatmaps side by side on ONE colour scale, with one colour bar.

    ``panels`` is a list of ``(title, matrix (Tq, Tk))``. A colour means the
    same number in every panel, so panels can be compared by eye: the scale
    runs from ``vmin`` to ``vmax`` (default: the smallest and largest finite
    entry over all panels). NaN and ``-inf`` cells are grey, as in
    :func:`heatmap`. Returns a dict: ``"fig"``, ``"axes"``, ``"images"``
    (``get_array()`` holds each panel's values; ``get_clim()`` the shared
    scale) and ``"colorbar"``. Refuses an empty list and matrices that are
    not 2-D.
    """
    mats = [np.asarray(m, dtype=float) for _, m in panels]
    if not mats or any(m.ndim != 2 for m in mats):
        raise ValueError("heatmap_row needs one or more 2-D (Tq, Tk) matrices.")
    finite = np.concatenate([m[np.isfinite(m)] for m in mats])
    low = float(finite.min()) if vmin is None else float(vmin)
    high = float(finite.max()) if vmax is None else float(vmax)
    width = sum(0.6 * m.shape[1] + 1.4 for m in mats) + 1.2
    height = max(0.5 * m.shape[0] for m in mats) + 1.6
    fig, axes = plt.subplots(1, len(mats), figsize=figsize or (width, height), squeeze=False,
                             layout="constrained")
    axes, images = list(axes[0]), []
    for ax, (title, _), m in zip(axes, panels, mats, strict=True):
        _, image = heatmap(m, ax, title=title, row_label=row_label, col_label=col_label,
                           fmt=fmt, vmin=low, vmax=high)
        images.append(image)
    colorbar = fig.colorbar(images[0], ax=axes, shrink=0.9, label=colorbar_label)
    return {"fig": fig, "axes": axes, "images": images, "colorbar": colorbar}
