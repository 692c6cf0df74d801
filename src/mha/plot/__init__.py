"""Static pictures for the lessons (matplotlib, pyplot-based for notebooks).

Every function returns the matplotlib objects it made, so a lesson can
assert what the picture shows (e.g. the value in a heatmap cell) and not
only that it was drawn. Axes follow one rule: query ``i`` runs down, key
``j`` runs across.
"""

from __future__ import annotations

from .curves import (
    jacobian_norm_vs_scale,
    naive_vs_stable,
    score_slopes,
    variance_vs_width,
    weight_bars,
    weights_vs_scale,
)
from .heads import head_grid as head_grid  # lesson 06
from .hull import convex_hull_2d, hull_picture
from .matrices import gradient_heatmaps, heatmap, heatmap_row, mask_grid, scores_to_weights
from .pipeline import STAGE_NAMES, computation_map  # every lesson's opening map
from .tiles import tile_grid as tile_grid  # lesson 09

__all__ = [
    "STAGE_NAMES",
    "computation_map",
    "convex_hull_2d",
    "gradient_heatmaps",
    "heatmap",
    "heatmap_row",
    "hull_picture",
    "jacobian_norm_vs_scale",
    "mask_grid",
    "naive_vs_stable",
    "score_slopes",
    "scores_to_weights",
    "variance_vs_width",
    "weight_bars",
    "weights_vs_scale",
]
