"""The base of every explorer: controls, a figure rendered to PNG, a caption."""

from __future__ import annotations

import base64
import io
import threading
import time

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


class Explorer:
    """Base class: controls on top, a figure below, a one-line caption.

    Subclasses set ``self.controls`` (a list of widgets whose ``value`` they
    watch), implement :meth:`compute` (returns a dict, stored as ``state``)
    and :meth:`draw` (updates ``self.figure`` from that dict), and may
    override :meth:`caption_text`. They call ``super().__init__(controls,
    figsize)`` after creating the controls.
    """

    dpi = 100  # 100 px per inch: labels stay readable at the image's natural size

    def __init__(self, controls, figsize=(6.0, 3.0)):
        # ipykernel 7.3 (the newest on Python 3.10) handles a widget's comm messages in a
        # subshell thread while the main thread runs a cell: a slider dragged in the browser
        # and a cell setting the slider redrew the one figure at once, and two Agg draws
        # interleaved left a blank PNG. One redraw at a time, whatever thread asks.
        self._lock = threading.RLock()
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
        """Recompute, redraw the figure, refresh the image; time the whole step.

        Thread-safe: redraws asked for from two threads run one after the other, and each
        reads the controls when its turn comes, so the last one shows their last values.
        """
        with self._lock:
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
