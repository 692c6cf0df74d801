"""The KV cache growing step by step: one row per forward pass, one column per position."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

EMPTY, KEPT, APPENDED = 0, 1, 2  # the states of a (step, position) cell in cache_growth's image
COLORS = ["white", "tab:blue", "tab:orange"]
LABELS = ["not computed yet", "kept from earlier steps (read, never recomputed)",
          "appended by this step"]


def cache_growth(lengths, *, row_labels=None, ax=None, title=None):
    """Draw a cache's positions after each forward pass.

    ``lengths``: the cache length after each pass, increasing (e.g. ``[3, 4, 5, 6]``
    for a prefill of 3 tokens and three one-token steps). Row ``r`` shows the cache
    after pass ``r``: positions ``0 .. lengths[r-1] - 1`` ``KEPT``, the new ones
    ``APPENDED``, the rest ``EMPTY``. Each row is labelled with what the pass fed
    (``row_labels``, default "prefill, 3 tokens" then "step 1", ...) and, at its
    right end, the shape of the cached K: ``(B, H_kv, T, dh)`` with ``T`` filled in.

    Returns a dict: ``"ax"``, ``"image"`` (``get_array()`` holds the states drawn)
    and ``"states"`` ((passes, max length) int array). Refuses lengths that are
    empty, not positive integers or not increasing.
    """
    lengths = [int(n) for n in lengths]
    pairs = list(zip(lengths, lengths[1:], strict=False))
    if not lengths or lengths[0] < 1 or any(b <= a for a, b in pairs):
        raise ValueError(f"cache_growth needs cache lengths that start >= 1 and increase at "
                         f"every pass; got {lengths}.")
    if row_labels is None:
        row_labels = [f"prefill, {lengths[0]} tokens"] + [
            f"step {i}" if b - a == 1 else f"step {i}, {b - a} tokens"
            for i, (a, b) in enumerate(pairs, start=1)]
    if len(row_labels) != len(lengths):
        raise ValueError(f"one row label per pass: {len(lengths)} lengths, "
                         f"{len(row_labels)} labels.")
    before = [0, *lengths[:-1]]
    pos = np.arange(lengths[-1])[None, :]
    states = np.where(pos < np.array(before)[:, None], KEPT,
                      np.where(pos < np.array(lengths)[:, None], APPENDED, EMPTY))
    if ax is None:
        _, ax = plt.subplots(figsize=(0.42 * lengths[-1] + 4.2, 0.45 * len(lengths) + 1.6))
    image = ax.imshow(states, cmap=ListedColormap(COLORS), vmin=-0.5, vmax=2.5,
                      interpolation="nearest", aspect="equal")
    ax.set_xticks(range(lengths[-1]))
    ax.set_yticks(range(len(lengths)), row_labels)
    ax.set_xticks(np.arange(lengths[-1] + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(lengths) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="0.6", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("position in the cache (one column of K and of V per position)")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    for row, n in enumerate(lengths):
        ax.text(lengths[-1] - 0.2, row, f"  K, V: (B, H_kv, {n}, dh)", va="center", fontsize=8,
                clip_on=False)
    ax.legend(handles=[Patch(facecolor=c, edgecolor="0.3", label=lab)
                       for c, lab in zip(COLORS, LABELS, strict=True)],
              loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=1, fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10, pad=12)
    return {"ax": ax, "image": image, "states": states}
