"""Static pictures for the lessons (matplotlib, pyplot-based for notebooks).

Every function returns the matplotlib objects it made, so a lesson can
assert what the picture shows (e.g. the value in a heatmap cell) and not
only that it was drawn. Axes follow one rule: query ``i`` runs down, key
``j`` runs across.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

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
    colormap = plt.get_cmap(cmap).copy()
    colormap.set_bad("0.85")
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
        finite = shown.compressed()
        mid = (finite.min() + finite.max()) / 2 if finite.size else 0.0
        for (i, j), value in np.ndenumerate(m):
            text = "-inf" if np.isneginf(value) else format(value, fmt)
            color = "black" if np.isneginf(value) or value > mid else "white"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    return ax, image


# ---------------------------------------------------------------------------
# Lesson 01 pictures                         (section owned by lessons 00-01)
# ---------------------------------------------------------------------------
# LESSON-01-PLACEHOLDER


# ---------------------------------------------------------------------------
# Lesson 02 pictures                         (section owned by lesson 02)
# ---------------------------------------------------------------------------
# LESSON-02-PLACEHOLDER


# ---------------------------------------------------------------------------
# Lesson 03 pictures                         (section owned by lesson 03)
# ---------------------------------------------------------------------------
# LESSON-03-PLACEHOLDER


# ---------------------------------------------------------------------------
# Lesson 04 pictures                         (section owned by lesson 04)
# ---------------------------------------------------------------------------
# LESSON-04-PLACEHOLDER


# ---------------------------------------------------------------------------
# Lesson 05 pictures                         (section owned by lesson 05)
# ---------------------------------------------------------------------------
# LESSON-05-PLACEHOLDER
