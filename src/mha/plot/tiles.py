"""The tiles of tiled attention drawn over the (Tq, Tk) score plane (query i down, key j across)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

SKIPPED_TILE, COMPUTED, COMPUTED_BLOCKED = 0, 1, 2  # the entries' states in tile_grid's image
COLORS = ["white", "tab:blue", "tab:orange"]
LABELS = ["skipped tile (no score computed)", "computed", "computed, then blocked"]


def tile_grid(tq: int, tk: int, block_q: int, block_k: int, *, is_causal: bool = False,
              mask=None, ax=None, title=None):
    """Draw which scores tiled attention computes, tile by tile.

    Every entry ``(i, j)`` of the ``(Tq, Tk)`` plane gets one of three states:
    ``SKIPPED_TILE`` (its tile is skipped: every score in it is blocked),
    ``COMPUTED`` (computed and used), ``COMPUTED_BLOCKED`` (computed as part of
    a partial tile, then set to ``-inf``). Tile borders are drawn as lines.
    ``is_causal`` (lower-right) and ``mask`` ((Tq, Tk) bool, True = blocked)
    are those of :func:`mha.tiled.tile_plan`.

    Returns a dict: ``"ax"``, ``"image"`` (``AxesImage``; ``get_array()`` holds
    the states drawn) and ``"plan"`` (the tile plan, ``SKIPPED`` / ``FULL`` /
    ``PARTIAL`` per tile). Refuses a mask that is not a (Tq, Tk) boolean array.
    """
    from ..masks import mask_from_positions
    from ..tiled import SKIPPED, tile_plan

    blocked = np.zeros((tq, tk), dtype=bool)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.shape != (tq, tk):
            raise ValueError(
                f"tile_grid draws one (Tq, Tk) = ({tq}, {tk}) boolean mask (True = blocked); "
                f"got dtype {mask.dtype}, shape {mask.shape}."
            )
        blocked |= mask
    if is_causal:
        blocked |= mask_from_positions(np.arange(tq) + tk - tq, np.arange(tk))
    plan = tile_plan(tq, tk, block_q, block_k, is_causal=is_causal, mask=mask)
    tile_of_entry = plan[np.arange(tq)[:, None] // block_q, np.arange(tk)[None, :] // block_k]
    states = np.where(tile_of_entry == SKIPPED, SKIPPED_TILE,
                      np.where(blocked, COMPUTED_BLOCKED, COMPUTED))
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 4.4 * tq / tk + 0.8))
    image = ax.imshow(states, cmap=ListedColormap(COLORS), vmin=-0.5, vmax=2.5,
                      interpolation="nearest", aspect="equal")
    for i0 in range(0, tq + 1, block_q):
        ax.axhline(i0 - 0.5, color="0.3", linewidth=0.8)
    for j0 in range(0, tk + 1, block_k):
        ax.axvline(j0 - 0.5, color="0.3", linewidth=0.8)
    ax.axhline(tq - 0.5, color="0.3", linewidth=0.8)
    ax.axvline(tk - 0.5, color="0.3", linewidth=0.8)
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    ax.legend(handles=[Patch(facecolor=c, edgecolor="0.3", label=lab)
                       for c, lab in zip(COLORS, LABELS, strict=True)],
              loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=1, fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10, pad=12)
    return {"ax": ax, "image": image, "plan": plan}


def mask_legend(image, ax=None, *, loc="upper center", bbox_to_anchor=(0.5, -0.02)):
    """A legend for :func:`mha.plot.mask_grid`: which shade is blocked, which allowed.

    ``image`` is the ``AxesImage`` that ``mask_grid`` returns; the two patches take
    its own colours (1 = blocked = True, 0 = allowed = False), so the legend cannot
    drift from the picture. Returns the ``Legend``.
    """
    ax = image.axes if ax is None else ax
    shade = {value: image.cmap(image.norm(value)) for value in (1, 0)}
    handles = [Patch(facecolor=shade[1], edgecolor="0.3", label="blocked (True): weight 0"),
               Patch(facecolor=shade[0], edgecolor="0.3", label="allowed (False)")]
    return ax.legend(handles=handles, loc=loc, bbox_to_anchor=bbox_to_anchor, ncol=2,
                     fontsize=8, frameon=False)
