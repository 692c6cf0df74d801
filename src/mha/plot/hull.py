"""Lesson 01: a read-out lies in the convex hull of the values."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def convex_hull_2d(points) -> np.ndarray:
    """Corners of the convex hull of 2-D ``points (n, 2)``, counter-clockwise.

    Andrew's monotone chain; collinear points on an edge are dropped, so two
    distinct points give a 2-corner "hull" (a segment). Used to draw hulls.
    """
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0:
        raise ValueError(f"convex_hull_2d needs points of shape (n, 2); got {p.shape}.")
    p = np.unique(p, axis=0)  # sorted by x, then y
    if len(p) <= 2:
        return p

    def turns_left(a, b, c):  # z of the cross product (b - a) x (c - a)
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) > 0

    def half(seq):
        chain = []
        for pt in seq:
            while len(chain) >= 2 and not turns_left(chain[-2], chain[-1], pt):
                chain.pop()
            chain.append(pt)
        return chain[:-1]

    return np.array(half(p) + half(p[::-1]))


def hull_picture(values, readouts, ax=None, *, value_names=None, title=None):
    """Values as labelled points, their convex hull shaded, read-outs on top.

    ``values (n, 2)``: the value vectors (two features, so they can be drawn).
    ``readouts``: a dict ``{label: (m, 2) array}``; each group is drawn in its
    own colour and named in the legend. Returns a dict of artists: ``"hull"``
    (a ``Polygon`` whose ``get_xy()`` are the hull corners, closed),
    ``"values"`` and one ``PathCollection`` per read-out label (their
    ``get_offsets()`` are the points drawn), and ``"ax"``.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != 2:
        raise ValueError(f"hull_picture draws 2-D values, shape (n, 2); got {v.shape}.")
    if not isinstance(readouts, dict):
        raise TypeError("readouts must be a dict {label: (m, 2) array}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 5.0), layout="constrained")
    names = value_names if value_names is not None else [f"v{j}" for j in range(len(v))]
    if len(names) != len(v):
        raise ValueError(f"value_names has {len(names)} names for {len(v)} values.")
    corners = convex_hull_2d(v)
    artists = {"ax": ax}
    artists["hull"] = plt.Polygon(corners, closed=True, facecolor="0.9", edgecolor="0.55",
                                  lw=2, zorder=0, label="convex hull of the values")
    ax.add_patch(artists["hull"])
    artists["values"] = ax.scatter(v[:, 0], v[:, 1], s=70, color="tab:blue", zorder=3,
                                   label="values")
    for name, (x, y) in zip(names, v, strict=True):
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(7, 5), color="tab:blue")
    styles = [("tab:red", "o", 40), ("tab:orange", "X", 70), ("tab:purple", "s", 40)]
    for n, (label, points) in enumerate(readouts.items()):
        color, marker, size = styles[n % len(styles)]
        pts = np.asarray(points, dtype=float).reshape(-1, 2)
        small = len(pts) > 20
        artists[label] = ax.scatter(pts[:, 0], pts[:, 1], s=8 if small else size, marker=marker,
                                    color=color, alpha=0.6 if small else 1.0, zorder=4,
                                    label=label)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.margins(0.15)
    ax.set_xlabel("feature 0")
    ax.set_ylabel("feature 1")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return artists
