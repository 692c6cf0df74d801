"""Lesson 01: turn and stretch a query; watch its scores, weights and read-out move together."""

from __future__ import annotations

import math
import numbers

import ipywidgets as widgets
import numpy as np

from ..reference import softmax
from .explorer import Explorer


def query_from_polar(angle_degrees: float, length: float) -> np.ndarray:
    """The 2-D query ``length * [cos(angle), sin(angle)]``, angle in degrees.

    Refuses (``ValueError``) a length that is negative or not finite and an
    angle that is not finite.
    """
    angle, length = float(angle_degrees), float(length)
    if not math.isfinite(angle):
        raise ValueError(f"the query angle must be a finite number of degrees; got {angle}.")
    if not (math.isfinite(length) and length >= 0.0):
        raise ValueError(f"the query length must be a finite number >= 0; got {length}.")
    theta = math.radians(angle)
    return length * np.array([math.cos(theta), math.sin(theta)])


def weighted_sum_readout(query, keys, values, scale: float = 1.0) -> dict:
    """One query's scores, weights and read-out: the whole of lesson 01 in one call.

    Shapes: ``query (d_k,)``, ``keys (Tk, d_k)``, ``values (Tk, d_v)``. Returns
    ``{"query": (d_k,), "scores": (Tk,), "weights": (Tk,), "readout": (d_v,)}``
    with ``scores = scale * keys @ query`` (``scale=1.0``: raw dot products),
    ``weights = softmax(scores)`` (non-negative, summing to 1) and
    ``readout = weights @ values``, a point of the values' convex hull.

    Refuses (``ValueError``) arrays of the wrong rank, keys and values with
    different ``Tk``, a query whose width is not the keys' ``d_k``, non-finite
    entries, and a ``scale`` that is negative or not finite; strings, bools and
    complex numbers (``DTypeError``, :func:`mha._checks.as_float_array`).
    """
    from .._checks import DTypeError, as_float_array

    q, k, v = (as_float_array(a, name).astype(float)  # refuses strings, bools, NaN by name
               for a, name in ((query, "query"), (keys, "keys"), (values, "values")))
    if q.ndim != 1 or k.ndim != 2 or v.ndim != 2:
        raise ValueError(f"need query (d_k,), keys (Tk, d_k) and values (Tk, d_v); got shapes "
                         f"{q.shape}, {k.shape} and {v.shape}.")
    if k.shape[0] != v.shape[0] or k.shape[0] == 0:
        raise ValueError(f"keys and values need the same number Tk >= 1 of rows (one value per "
                         f"key); got {k.shape[0]} keys and {v.shape[0]} values.")
    if q.shape[0] != k.shape[1]:
        raise ValueError(f"the query must be as wide as each key (d_k={k.shape[1]}); got a query "
                         f"of width {q.shape[0]}.")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(k)) and np.all(np.isfinite(v))):
        raise ValueError("query, keys and values must be finite.")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):  # float('2') would pass
        raise DTypeError(f"scale must be a real number; got {scale!r}.")
    scale = float(scale)
    if not (math.isfinite(scale) and scale >= 0.0):
        raise ValueError(f"scale must be a finite number >= 0; got {scale}.")
    scores = scale * (k @ q)
    weights = softmax(scores)
    return {"query": q, "scores": scores, "weights": weights, "readout": weights @ v}


ARC_RADIUS = 2.2  # the angle's arc, outside the keys' unit circle
ANGLE_STEP = 5.0  # degrees per step of the angle slider, from -180
LENGTH_STEP = math.log(3.0) / 11  # the length slider's step, from 0 (eleven steps: ln 3)
STEPS = (72, 60)  # the angle and length sliders' last step: 73 x 61 positions


def slider_steps(angle: float, length: float) -> tuple[int, int] | None:
    """The sliders' step numbers ``(i, j)`` of ``angle = -180 + 5 i`` and
    ``length = j ln(3) / 11``, or ``None`` for a position off the sliders' grid (within
    1e-9 is on it: the browser computes its steps in floating point)."""
    i, j = round((float(angle) + 180.0) / ANGLE_STEP), round(float(length) / LENGTH_STEP)
    if (0 <= i <= STEPS[0] and 0 <= j <= STEPS[1]
            and abs(angle - (-180.0 + ANGLE_STEP * i)) <= 1e-9
            and abs(length - LENGTH_STEP * j) <= 1e-9):
        return i, j
    return None


def likely_next_steps(steps: tuple[int, int], moved: tuple[int, int] | None = None
                      ) -> list[tuple[int, int]]:
    """Slider steps a learner reaches next from ``steps``, most likely first: the last move
    ``moved`` (its sign per slider) continued one and two steps, then one step of either
    slider either way (the moved slider first), all within the sliders' ranges."""
    (i, j), (di, dj) = steps, (0, 0) if moved is None else moved
    di, dj = (di > 0) - (di < 0), (dj > 0) - (dj < 0)
    ahead = [(i + di, j + dj), (i + 2 * di, j + 2 * dj)] if (di, dj) != (0, 0) else []
    angle_first = dj == 0
    singles = [(i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)]
    if not angle_first:
        singles = singles[2:] + singles[:2]
    picked = []
    for step in ahead + singles:
        if (step != (i, j) and step not in picked
                and 0 <= step[0] <= STEPS[0] and 0 <= step[1] <= STEPS[1]):
            picked.append(step)
    return picked


def _fmt(vector) -> str:
    return "[" + ", ".join(f"{round(float(x), 2) + 0.0:.2f}" for x in vector) + "]"  # no -0.00


class WeightedSumExplorer(Explorer):
    """Turn the query and change its length; see its scores, its weights and
    the read-out move together.

    Left: the keys and the query arrow (key space). Middle: one bar per key,
    its weight, with its raw score ``q . k_j`` written above it. Right: the
    values, their convex hull (a segment for two values, a triangle for
    three) and the read-out. The default is lesson 01's example: keys
    ``[1, 0]`` and ``[0, 1]``, values ``[2, 0]`` and ``[0, 4]`` and the query
    ``[ln 3, 0]``, whose weights are 0.75 and 0.25 and whose read-out is
    ``[1.5, 1]``. A long query makes the weights nearly one-hot and pushes
    the read-out against the hull, never across it. ``state`` is
    :func:`weighted_sum_readout`.
    """

    LENGTH_STEP = LENGTH_STEP
    # Sixty steps, about 5.99: the slider's end lies on its grid, as every value a browser
    # sends back does (a max of 6.0 fell between the grid points 5.99 and 6.09).
    MAX_LENGTH = STEPS[1] * LENGTH_STEP

    def __init__(self, keys=((1.0, 0.0), (0.0, 1.0)), values=((2.0, 0.0), (0.0, 4.0)),
                 angle: float = 0.0, length: float = math.log(3.0)):
        self.keys = np.asarray(keys, dtype=float)
        self.values = np.asarray(values, dtype=float)
        n = self.keys.shape[0] if self.keys.ndim == 2 else 0
        if self.keys.shape != (n, 2) or self.values.shape != (n, 2) or n not in (2, 3):
            raise ValueError(f"the explorer draws 2 or 3 keys and values in 2-D, shapes (Tk, 2) "
                             f"with Tk = 2 or 3; got keys {self.keys.shape} and values "
                             f"{self.values.shape}.")
        if not 0.0 <= float(length) <= self.MAX_LENGTH:
            raise ValueError(f"the query length must be in [0, {self.MAX_LENGTH:.4f}] (the "
                             f"slider's range); got {length}.")
        if not -180.0 <= float(angle) <= 180.0:
            raise ValueError(f"the query angle must be in [-180, 180] degrees; got {angle}.")
        weighted_sum_readout(query_from_polar(angle, length), self.keys, self.values)  # refusals
        # Wide sliders: at the default width (about 120 px of track) a 30 px drag turned the
        # query 85 degrees; at 460 px a degree is more than a pixel of travel.
        slider_layout = {"width": "560px"}
        style = {"description_width": "100px"}
        self.angle_slider = widgets.FloatSlider(
            value=angle, min=-180.0, max=180.0, step=5.0, description="query angle",
            readout_format=".0f", continuous_update=True, style=style, layout=slider_layout)
        # The browser snaps a slider's value to min + k * step and sends it back: with a step
        # of 0.1 the start ln 3 = 1.0986 became 1.1 (weights 0.7503, not 0.75). Eleven steps
        # of ln(3) / 11 (about 0.0999) land on ln 3 exactly.
        self.length_slider = widgets.FloatSlider(
            value=length, min=0.0, max=self.MAX_LENGTH, step=self.LENGTH_STEP,
            description="query length", readout_format=".2f", continuous_update=True,
            style=style, layout=slider_layout)
        super().__init__([self.angle_slider, self.length_slider], figsize=(9.0, 3.8))

    def build_box(self):
        # One slider above the other, each wide enough to drag with care.
        return widgets.VBox([widgets.VBox(self.controls), self.image, self.caption])

    def setup_figure(self):
        ax_k, ax_w, ax_v = self.ax_keys, self.ax_weights, self.ax_values = self.figure.subplots(
            1, 3, gridspec_kw={"width_ratios": [1.35, 0.65, 1.0]})
        n = len(self.keys)
        names = [f"k{j}" for j in range(n)]
        # keys and query
        reach = self.MAX_LENGTH + 0.4
        ax_k.axhline(0, color="0.85", lw=0.8, zorder=0)
        ax_k.axvline(0, color="0.85", lw=0.8, zorder=0)
        # Keys: thin blue arrows with their names beside the tips, away from the query; the
        # query arrow, drawn last and on top, stays visible where it runs along a key (the
        # default query [ln 3, 0] runs along k0).
        key_arrow = {"arrowstyle": "-|>", "color": "tab:blue", "lw": 1.2, "mutation_scale": 9,
                     "shrinkA": 0, "shrinkB": 0, "alpha": 0.8}
        # The axes reach the longest query (about 6), so the keys, of length 1, are short: a
        # dotted circle of radius 1 marks their length.
        circle = np.linspace(0.0, 2.0 * np.pi, 121)
        ax_k.plot(np.cos(circle), np.sin(circle), color="tab:blue", lw=0.8, ls=":", zorder=1)
        self.key_rings = []
        for name, (x, y) in zip(names, self.keys, strict=True):
            ax_k.annotate("", xy=(x, y), xytext=(0, 0), arrowprops=key_arrow, zorder=2)
            # a ring at the key's tip, redrawn over the query (animated): the default query
            # runs along k0 and would hide it
            (ring,) = ax_k.plot([x], [y], "o", ms=10, mfc="none", mec="tab:blue", mew=1.5)
            self.key_rings.append(ring)
            side = (-16, -4) if abs(x) < abs(y) else (-4, -15)  # left of a vertical key, else below
            ax_k.annotate(name, (x, y), textcoords="offset points", xytext=side,
                          color="tab:blue", fontsize=9)
        arrow = {"arrowstyle": "-|>", "color": "tab:red", "lw": 2.2, "mutation_scale": 14,
                 "shrinkA": 0, "shrinkB": 0}
        self.query_arrow = ax_k.annotate("", xy=(0, 0), xytext=(0, 0), arrowprops=arrow,
                                         annotation_clip=False)
        self.query_label = ax_k.text(0, 0, "q", color="tab:red", fontsize=10,
                                     fontweight="bold", ha="left", va="bottom")
        # the angle, as an arc from feature 0's axis to the query, with its number
        (self.angle_arc,) = ax_k.plot([], [], color="tab:red", lw=1.2)
        self.angle_text = ax_k.text(0, 0, "", color="tab:red", fontsize=8, ha="center",
                                    va="center")
        ax_k.set_xlim(-reach, reach)
        ax_k.set_ylim(-reach, reach)
        ax_k.set_xticks([-5, 0, 5])
        ax_k.set_yticks([-5, 0, 5])
        ax_k.tick_params(labelsize=8)
        ax_k.set_aspect("equal")
        ax_k.set_title("query q (red) and keys k0, k1 (blue)", fontsize=9)
        # weights, with scores written above
        self.bars = ax_w.bar(np.arange(n), np.zeros(n), color="tab:blue")
        self.score_texts = [ax_w.text(j, 0, "", ha="center", va="bottom", fontsize=8)
                            for j in range(n)]
        ax_w.set_ylim(0, 1.25)
        ax_w.set_yticks([0, 0.5, 1])
        ax_w.set_xticks(range(n), names)
        ax_w.set_ylabel("weight")
        ax_w.set_title("weights = softmax(scores)", fontsize=9)
        # values, hull, read-out
        v = self.values
        closed = np.vstack([v, v[:1]])
        ax_v.fill(v[:, 0], v[:, 1], facecolor="0.9", edgecolor="0.55", lw=2, zorder=0)
        ax_v.plot(closed[:, 0], closed[:, 1], color="0.55", lw=2, zorder=1)
        ax_v.scatter(v[:, 0], v[:, 1], s=60, color="tab:blue", zorder=2)
        for j, (x, y) in enumerate(v):
            ax_v.annotate(f"v{j}", (x, y), textcoords="offset points", xytext=(6, 4),
                          color="tab:blue")
        (self.point,) = ax_v.plot([], [], "o", color="tab:red", ms=9, zorder=3)
        lo, hi = min(v.min(), 0.0) - 0.6, max(v.max(), 0.0) + 0.6
        ax_v.set_xlim(lo, hi)
        ax_v.set_ylim(lo, hi)
        ax_v.set_aspect("equal")
        ax_v.set_xticks(range(int(np.ceil(lo)), int(hi) + 1, 2))
        ax_v.set_yticks(range(int(np.ceil(lo)), int(hi) + 1, 2))
        ax_v.tick_params(labelsize=8)
        ax_w.tick_params(labelsize=8)
        ax_v.set_xlabel("feature 0")
        ax_v.set_ylabel("feature 1")
        ax_v.set_title("read-out (red) in the hull", fontsize=9)
        self.figure.tight_layout()

    def compute(self):
        return self.state_for(self.picture_key())

    def picture_key(self):
        # The picture depends only on the two sliders: a value seen before (a drag back and
        # forth) is shown again without drawing. A position on the sliders' grid is keyed by
        # its exact grid value, so the browser's rounding and a prefetch find the same key.
        angle, length = float(self.angle_slider.value), float(self.length_slider.value)
        steps = slider_steps(angle, length)
        if steps is None:
            return (angle, length)
        return (-180.0 + ANGLE_STEP * steps[0], LENGTH_STEP * steps[1])

    def state_for(self, key):
        """The state of the sliders at ``key = (angle, length)``: :func:`weighted_sum_readout`
        of that query, and its ``angle`` in degrees."""
        angle, length = key
        q = query_from_polar(angle, length)
        return {**weighted_sum_readout(q, self.keys, self.values), "angle": float(angle)}

    def prefetch_keys(self):
        """One step of either slider either way, the last move continued first
        (:func:`likely_next_steps`): a key press or a drag step then finds its picture drawn
        (a new picture costs about 23 ms of kernel CPU, a drawn one under a millisecond)."""
        key = self.picture_key()
        steps = slider_steps(*key)
        last, self._last_steps = getattr(self, "_last_steps", None), steps
        if steps is None:
            return []
        moved = None if last is None else (steps[0] - last[0], steps[1] - last[1])
        return [(-180.0 + ANGLE_STEP * i, LENGTH_STEP * j)
                for i, j in likely_next_steps(steps, moved)]

    def animated_artists(self):
        return [self.angle_arc, self.angle_text, self.query_arrow, *self.key_rings,
                self.query_label, *self.bars, *self.score_texts, self.point]

    def draw(self, state):
        q, s, w, r = state["query"], state["scores"], state["weights"], state["readout"]
        self.query_arrow.xy, self.query_arrow.xyann = tuple(q), (0.0, 0.0)
        self.query_label.set_position((q[0] + 0.25, q[1] + 0.15))
        angle = math.radians(state["angle"])
        arc = np.linspace(0.0, angle, max(2, int(abs(angle) / 0.05) + 2))
        self.angle_arc.set_data(ARC_RADIUS * np.cos(arc), ARC_RADIUS * np.sin(arc))
        # the number beside the arc's middle; a small angle leaves no room, so below the axis
        narrow = abs(angle) <= 0.35
        middle = ARC_RADIUS + (0.9 if narrow else 1.3)
        self.angle_text.set_position((middle * math.cos(angle / 2),
                                      middle * math.sin(angle / 2) - (0.55 if narrow else 0.0)))
        self.angle_text.set_text(f"{state['angle']:.0f}\N{DEGREE SIGN}")
        for bar, text, score, weight in zip(self.bars, self.score_texts, s, w, strict=True):
            bar.set_height(weight)
            text.set_y(weight + 0.02)
            text.set_text(f"score {score:.2f}")
        self.point.set_data([r[0]], [r[1]])

    def caption_text(self, state):
        return (f"query {_fmt(state['query'])}: scores {_fmt(state['scores'])} "
                f"weights {_fmt(state['weights'])} read out {_fmt(state['readout'])}")
