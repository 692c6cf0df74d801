"""Lesson 10's pictures: the check-up as a grid, and training losses side by side."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["checkup_grid", "loss_curves"]


def checkup_grid(reports: dict, expected: dict | None = None, ax=None, *, title=None):
    """Modules down, checks across: pass (green), fail (red), skipped (grey).

    ``reports``: ``{row name: mha.checkup.Report}`` (anything with ``.results``,
    a list of objects with ``.name`` and ``.passed`` True / False / None).
    ``expected``: ``{row name: check name}``; those cells get a black outline
    (the check a broken module names). Returns ``(ax, image)``;
    ``image.get_array()`` holds 1 for pass, 0 for fail, masked for skipped.
    """
    rows = list(reports)
    checks = [r.name for r in reports[rows[0]].results]
    values = np.full((len(rows), len(checks)), np.nan)
    for i, row in enumerate(rows):
        for r in reports[row].results:
            if r.passed is not None:
                values[i, checks.index(r.name)] = float(r.passed)
    if ax is None:
        _, ax = plt.subplots(figsize=(0.5 * len(checks) + 3.2, 0.3 * len(rows) + 2.4))
    colormap = plt.get_cmap("RdYlGn").with_extremes(bad="0.85")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=colormap, vmin=-0.3, vmax=1.3,
                      aspect="auto")
    ax.set_xticks(range(len(checks)), checks, rotation=60, ha="left", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.xaxis.tick_top()
    for i, row in enumerate(rows):
        if expected and expected.get(row) in checks:
            j = checks.index(expected[row])
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.8,
                                       edgecolor="black"))
    if title:
        ax.set_title(title, fontsize=10)
    return ax, image


def loss_curves(curves: dict, floor: float | None = None, ax=None, *, title=None,
                floor_label="no information"):
    """Training losses against the step, one line per ``{label: losses}``.

    ``floor``: a dashed horizontal line (e.g. ``ln V``, the loss of a uniform
    guess over ``V`` tokens), labelled ``floor_label``. Returns ``(ax, lines)``,
    the ``Line2D`` of each curve in the order given.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.2))
    lines = [ax.plot(np.arange(len(y)), np.asarray(y), label=label, lw=1.2)[0]
             for label, y in curves.items()]
    if floor is not None:
        ax.axhline(floor, color="0.4", ls="--", lw=1, label=f"{floor_label} ({floor:.2f})")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return ax, lines
