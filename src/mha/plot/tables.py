"""Tables of measured differences drawn as bars on a log scale (lesson 07)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np

FLOOR = 1e-18  # where an exact 0 is drawn on the log axis (and labelled "0")


def difference_bars(table, rows=None, ax=None, *, title=None, eps=None):
    """Grouped bars of ``table = {column: {row: difference}}`` on a log axis.

    One group per row (e.g. a path), one bar per column (e.g. ``"float32, bias"``).
    An exact 0 cannot sit on a log axis: it is drawn at :data:`FLOOR` and
    labelled ``0``. ``rows`` picks and orders the rows (default: all of the
    first column's); long row names wrap at 22 characters. ``eps`` maps a label
    to a machine epsilon drawn as a dashed line, e.g. ``{"float32 eps": 1.2e-7}``.
    Refuses negative or non-finite differences (``ValueError``). Returns
    ``{"fig", "ax", "bars": {column: BarContainer}, "lines": {label: Line2D},
    "zeros": [Text]}``.
    """
    columns = list(table)
    rows = list(table[columns[0]]) if rows is None else list(rows)
    values = np.array([[table[c][r] for r in rows] for c in columns], dtype=float)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("difference_bars draws differences: finite values >= 0 only; got "
                         f"{values.tolist()}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(1.6 * len(rows) + 2.5, 3.4))
    width = 0.8 / len(columns)
    x = np.arange(len(rows))
    bars, zeros = {}, []
    for i, column in enumerate(columns):
        heights = np.where(values[i] > 0, values[i], FLOOR)
        bars[column] = ax.bar(x + (i - (len(columns) - 1) / 2) * width, heights, width,
                              label=column)
        for rect, v in zip(bars[column], values[i], strict=True):
            if v == 0:
                zeros.append(ax.text(rect.get_x() + rect.get_width() / 2, FLOOR * 2, "0",
                                     ha="center", va="bottom", fontsize=8))
    lines = {}
    for label, value in (eps or {}).items():
        lines[label] = ax.axhline(value, color="0.3", linestyle="--", linewidth=1)
        ax.text(len(rows) - 0.45, value, label, ha="left", va="center", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(FLOOR / 2, max(1e-3, values.max() * 1e4))  # room for the legend on top
    ax.set_xlim(-0.6, len(rows) - 0.5 + (0.8 if eps else 0.1))  # eps labels on the right
    ax.set_xticks(x, ["\n".join(textwrap.wrap(r, 22)) for r in rows], fontsize=8)
    ax.set_ylabel("max |difference|")
    ax.legend(fontsize=8, loc="upper center", ncol=len(columns), frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return {"fig": ax.figure, "ax": ax, "bars": bars, "lines": lines, "zeros": zeros}
