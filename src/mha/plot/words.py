"""Lessons 01-02: attention maps over the words of a sentence, and a boxed cell."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .matrices import heatmap


def word_maps(panels, words, *, title=None, fmt=".2f", vmin=0.0, vmax=1.0):
    """Maps over words side by side, on one colour scale.

    ``panels`` is a list of ``(title, matrix (T, T))``, ``words`` the ``T``
    words of the sentence: the word that reads runs down, the word it reads
    runs across, each axis labelled with the words. Every panel uses the
    scale ``vmin`` to ``vmax`` (default 0 to 1, the range of a weight), so a
    colour means the same number everywhere. Returns a dict: ``"fig"``,
    ``"axes"`` and ``"images"`` (``get_array()`` holds each panel's values).

    Refuses an empty list, matrices that are not square ``(T, T)`` and a
    ``words`` list whose length is not ``T``.
    """
    mats = [np.asarray(m, dtype=float) for _, m in panels]
    words = [str(w) for w in words]
    if not mats:
        raise ValueError("word_maps needs at least one (title, matrix) panel.")
    for m in mats:
        if m.shape != (len(words), len(words)):
            raise ValueError(f"each map must be (T, T) with T = {len(words)} words; got shape "
                             f"{m.shape}.")
    width = 0.55 * len(words) + 1.6
    fig, axes = plt.subplots(1, len(mats), figsize=(width * len(mats), width * 0.85 + 0.4),
                             layout="constrained", squeeze=False)
    images = []
    for ax, (name, _), m in zip(axes[0], panels, mats, strict=True):
        _, image = heatmap(m, ax, row_label="word that reads", col_label="word it reads",
                           title=name, fmt=fmt, vmin=vmin, vmax=vmax, row_ticks=words,
                           col_ticks=words)
        ax.tick_params(axis="x", labelrotation=45)
        images.append(image)
    if title:
        fig.suptitle(title, fontsize=11)
    return {"fig": fig, "axes": list(axes[0]), "images": images}


def outline_cell(ax, i, j, *, color="red", linewidth=2):
    """Draw a box around cell ``(i, j)`` (row ``i``, column ``j``) of a heatmap.

    Returns the ``Rectangle``; its ``get_xy()`` is ``(j - 0.5, i - 0.5)`` and it
    is one cell wide and high.
    """
    box = plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=color,
                        linewidth=linewidth)
    ax.add_patch(box)
    return box
