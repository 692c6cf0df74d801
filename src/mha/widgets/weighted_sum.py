"""Lesson 01: move the weights of a two-value weighted sum, watch the read-out."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .explorer import Explorer


def weighted_sum_readout(values, w_first: float) -> dict:
    """Read-out of two values with weights ``(w_first, 1 - w_first)``.

    ``values (2, d)``; returns ``{"weights": (2,), "readout": (d,)}``. The
    weights are non-negative and sum to 1, so the read-out lies on the
    segment between the two values (their convex hull): ``w_first = 1``
    gives the first value, ``w_first = 0`` the second.

    Refuses (``ValueError``) values that are not ``(2, d)`` or not finite,
    and a weight outside ``[0, 1]`` (including NaN).
    """
    w_first = float(w_first)
    if not 0.0 <= w_first <= 1.0:
        raise ValueError(f"w_first must be in [0, 1]; got {w_first}.")
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != 2:
        raise ValueError(f"values must have shape (2, d): two value vectors; got {values.shape}.")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite.")
    weights = np.array([w_first, 1.0 - w_first])
    return {"weights": weights, "readout": weights @ values}


class WeightedSumExplorer(Explorer):
    """Move the weight of the first value; watch the read-out slide along
    the segment between ``[2, 0]`` and ``[0, 4]`` (the lesson's example).

    The picture also draws the sum tip to tail: the arrow ``w1 * v1`` from
    the origin, then ``w2 * v2`` from its tip, ending at the read-out.
    """


    def __init__(self, values=((2.0, 0.0), (0.0, 4.0)), w_first: float = 0.75):
        self.values = np.asarray(values, dtype=float)
        if self.values.shape != (2, 2):
            raise ValueError(f"the explorer draws two 2-D values, shape (2, 2); got "
                             f"{self.values.shape}.")
        weighted_sum_readout(self.values, w_first)  # same refusals as the function
        self.slider = widgets.FloatSlider(
            value=w_first, min=0.0, max=1.0, step=0.05, description="weight on v1",
            readout_format=".2f", continuous_update=True,
        )
        super().__init__([self.slider], figsize=(4.0, 4.0))

    def setup_figure(self):
        ax = self.ax = self.figure.add_subplot()
        v = self.values
        ax.plot(v[:, 0], v[:, 1], color="0.7", lw=3, zorder=1, label="every convex combination")
        ax.scatter(v[:, 0], v[:, 1], s=80, color="tab:blue", zorder=2)
        for name, (x, y) in zip(("v1", "v2"), v, strict=True):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(8, 4), color="tab:blue")
        ax.plot([0], [0], "+", color="0.3", ms=8)
        arrow = {"arrowstyle": "->", "color": "0.35", "lw": 1.2, "shrinkA": 0, "shrinkB": 0}
        self.first_arrow = ax.annotate("", xy=(0, 0), xytext=(0, 0), arrowprops=arrow)
        self.second_arrow = ax.annotate("", xy=(0, 0), xytext=(0, 0), arrowprops=arrow)
        ax.plot([], [], color="0.35", lw=1.2, label="w1 v1, then w2 v2")  # legend entry
        (self.point,) = ax.plot([], [], "o", color="tab:red", ms=10, zorder=3, label="read-out")
        lo = min(v.min(), 0.0) - 0.5
        hi = max(v.max(), 0.0) + 0.5
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel("feature 0")
        ax.set_ylabel("feature 1")
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title("placeholder", fontsize=9)  # so tight_layout leaves room for it
        self.figure.tight_layout()

    def compute(self):
        return weighted_sum_readout(self.values, self.slider.value)

    def draw(self, state):
        w, r = state["weights"], state["readout"]
        corner = w[0] * self.values[0]
        self.first_arrow.xy, self.first_arrow.xyann = tuple(corner), (0.0, 0.0)
        self.second_arrow.xy, self.second_arrow.xyann = tuple(r), tuple(corner)
        self.point.set_data([r[0]], [r[1]])
        self.ax.set_title(f"{w[0]:.2f} v1 + {w[1]:.2f} v2 = [{r[0]:.2f}, {r[1]:.2f}]: "
                          "on the segment", fontsize=9)

    def caption_text(self, state):
        w, r = state["weights"], state["readout"]
        return f"weights [{w[0]:.2f}, {w[1]:.2f}] read out [{r[0]:.2f}, {r[1]:.2f}]"
