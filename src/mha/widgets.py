"""Interactive explorers for the lessons: plain ipywidgets + matplotlib.

Each explorer keeps its computing in a plain function (tested without any
widget) and its drawing in :class:`Explorer`, which renders a matplotlib
figure to a PNG shown in an ``ipywidgets.Image``. That choice buys three
things: no JavaScript beyond ipywidgets' own, redraws of a few tens of
milliseconds (artists are updated, never re-created), and a committed
notebook that shows the default picture even without a kernel (the display
bundle carries an ``image/png`` fallback next to the widget view, and a
short, stable ``text/plain`` that strict nbval compares).

Tests drive an explorer exactly as a learner does: set a control's
``.value`` and read ``explorer.state`` (what was computed) and
``explorer.image.value`` (what is shown).
"""

from __future__ import annotations

import base64
import io
import time

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import reference

class Explorer:
    """Base class: controls on top, a figure below, a one-line caption.

    Subclasses set ``self.controls`` (a list of widgets whose ``value`` they
    watch), implement :meth:`compute` (returns a dict, stored as ``state``)
    and :meth:`draw` (updates ``self.figure`` from that dict), and may
    override :meth:`caption_text`. They call ``super().__init__(controls,
    figsize)`` after creating the controls.
    """

    dpi = 80

    def __init__(self, controls, figsize=(6.0, 3.0)):
        self.controls = list(controls)
        self.figure = Figure(figsize=figsize, dpi=self.dpi)  # no pyplot: no global state
        FigureCanvasAgg(self.figure)
        self.image = widgets.Image(format="png")
        self.caption = widgets.HTML()
        self.state: dict = {}
        self.redraw_seconds: list[float] = []
        self.setup_figure()
        for control in self.controls:
            control.observe(self._on_change, names="value")
        self.box = self.build_box()
        self.redraw()

    # -- to implement --------------------------------------------------
    def setup_figure(self) -> None:
        """Create axes and artists once (called before the first redraw)."""

    def compute(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, state: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def caption_text(self, state: dict) -> str:
        return ""

    def build_box(self) -> widgets.Box:
        """Arrange controls, image and caption; override for a custom layout."""
        return widgets.VBox([widgets.HBox(self.controls), self.image, self.caption])

    # -- machinery -----------------------------------------------------
    def _on_change(self, change) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Recompute, redraw the figure, refresh the image; time the whole step."""
        start = time.perf_counter()
        self.state = self.compute()
        self.draw(self.state)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=self.dpi)
        self.image.value = buffer.getvalue()
        self.caption.value = self.caption_text(self.state)
        self.redraw_seconds.append(time.perf_counter() - start)

    def summary(self) -> str:
        """Short stable text; the ``text/plain`` of the displayed explorer."""
        return f"{type(self).__name__}: {self.caption_text(self.state)}"

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        bundle["image/png"] = base64.b64encode(self.image.value).decode("ascii")
        bundle["text/plain"] = self.summary()
        return bundle


# ---------------------------------------------------------------------------
# Lesson 01: the weighted sum
# ---------------------------------------------------------------------------

def weighted_sum_readout(values, w_first: float) -> dict:
    """Read-out of two values with weights ``(w_first, 1 - w_first)``.

    ``values (2, d)``; returns ``{"weights": (2,), "readout": (d,)}``. The
    weights are non-negative and sum to 1, so the read-out lies on the
    segment between the two values (their convex hull).
    """
    if not 0.0 <= w_first <= 1.0:
        raise ValueError(f"w_first must be in [0, 1]; got {w_first}.")
    values = np.asarray(values, dtype=float)
    weights = np.array([w_first, 1.0 - w_first])
    return {"weights": weights, "readout": weights @ values}


class WeightedSumExplorer(Explorer):
    """Move the weight of the first value; watch the read-out slide along
    the segment between ``[2, 0]`` and ``[0, 4]`` (the lesson's example)."""

    def __init__(self, values=((2.0, 0.0), (0.0, 4.0)), w_first: float = 0.75):
        self.values = np.asarray(values, dtype=float)
        self.slider = widgets.FloatSlider(
            value=w_first, min=0.0, max=1.0, step=0.05, description="weight on v1",
            readout_format=".2f", continuous_update=True,
        )
        super().__init__([self.slider], figsize=(4.0, 4.0))

    def setup_figure(self):
        ax = self.ax = self.figure.add_subplot()
        v = self.values
        ax.plot(v[:, 0], v[:, 1], color="0.7", lw=2, zorder=1, label="all convex combinations")
        ax.scatter(v[:, 0], v[:, 1], s=80, color="tab:blue", zorder=2)
        for name, (x, y) in zip(("v1", "v2"), v):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(8, 4))
        (self.point,) = ax.plot([], [], "o", color="tab:red", ms=10, zorder=3, label="read-out")
        ax.set_xlim(-0.5, 4.5)
        ax.set_ylim(-0.5, 4.5)
        ax.set_aspect("equal")
        ax.set_xlabel("feature 0")
        ax.set_ylabel("feature 1")
        ax.legend(loc="upper right", fontsize=8)
        self.figure.tight_layout()

    def compute(self):
        return weighted_sum_readout(self.values, self.slider.value)

    def draw(self, state):
        x, y = state["readout"]
        self.point.set_data([x], [y])
        w = state["weights"]
        self.ax.set_title(f"{w[0]:.2f} * v1 + {w[1]:.2f} * v2 stays on the segment", fontsize=9)

    def caption_text(self, state):
        w, r = state["weights"], state["readout"]
        return f"weights [{w[0]:.2f}, {w[1]:.2f}] read out [{r[0]:.2f}, {r[1]:.2f}]"


# ---------------------------------------------------------------------------
# Lesson 03: scaling by sqrt(d_k)            (section owned by lesson 03)
# ---------------------------------------------------------------------------
# LESSON-03-PLACEHOLDER


# ---------------------------------------------------------------------------
# Lesson 04: masks                           (section owned by lesson 04)
# ---------------------------------------------------------------------------
# LESSON-04-PLACEHOLDER
