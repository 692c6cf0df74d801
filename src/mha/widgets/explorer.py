"""The base of every explorer: controls, a figure rendered to PNG, a caption.

A full Agg draw of a three-panel figure takes about 100 ms here, and a slider dragged in the
browser sends a new value every few milliseconds: redraws queue up and the picture lags the
hand by a second. An explorer that names its moving artists (:meth:`Explorer.animated_artists`)
is drawn once in full; each later redraw pastes that background back and draws only the moving
artists (matplotlib's "blitting"), a few milliseconds.
"""

from __future__ import annotations

import base64
import struct
import threading
import time
import zlib

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def png_bytes(rgba) -> bytes:
    """An ``(h, w, 4)`` uint8 picture as PNG bytes (RGB: the figure is opaque, alpha dropped).

    No row filters and zlib level 1: about 8 ms for a 900 x 320 figure here, where Pillow's
    encoder (adaptive filters) took 25-40 ms; the file is about a third larger (30 KB).
    """
    rgba = np.asarray(rgba)
    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype != np.uint8:
        raise ValueError(f"png_bytes needs an (h, w, 4) uint8 array; got {rgba.shape} "
                         f"{rgba.dtype}.")
    h, w, _ = rgba.shape
    rows = np.empty((h, 1 + 3 * w), np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) at the start of every row
    rows[:, 1:] = rgba[..., :3].reshape(h, 3 * w)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b""))


class Explorer:
    """Base class: controls on top, a figure below, a one-line caption.

    Subclasses set ``self.controls`` (a list of widgets whose ``value`` they
    watch), implement :meth:`compute` (returns a dict, stored as ``state``)
    and :meth:`draw` (updates ``self.figure`` from that dict), and may
    override :meth:`caption_text`. They call ``super().__init__(controls,
    figsize)`` after creating the controls. A subclass whose :meth:`draw` only
    moves a few artists returns them from :meth:`animated_artists`: the rest
    of the figure is then drawn once and reused (fast redraws); it must not
    change anything else in :meth:`draw`.

    The image is shown at its natural size (``image_size`` pixels, never
    stretched by the page).
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
        self._background = None  # the static part of the figure, once drawn (blitting)
        self.state: dict = {}
        self.redraw_seconds: list[float] = []
        self.setup_figure()
        self.build_picture()
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

    def animated_artists(self) -> list:
        """The artists :meth:`draw` changes; empty (the default) means redraw everything."""
        return []

    def build_picture(self) -> None:
        """Create ``self.image`` (the PNG, at its natural size) and ``self.caption``."""
        self.image = widgets.Image(format="png")
        width, _ = self.image_size
        # Natural size: a flex box would otherwise stretch the PNG to the page's width (blurry);
        # max_width lets a narrow page shrink it without distortion.
        self.image.layout = widgets.Layout(width=f"{width}px", max_width="100%", height="auto")
        self.caption = widgets.HTML()

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
            self.image.value = self._render_png()
            self.caption.value = self.caption_text(self.state)
            self.redraw_seconds.append(time.perf_counter() - start)

    @property
    def image_size(self) -> tuple[int, int]:
        """(width, height) of the picture in pixels."""
        width, height = self.figure.canvas.get_width_height()
        return int(width), int(height)

    def _render_png(self) -> bytes:
        canvas = self.figure.canvas
        moving = self.animated_artists()
        if not moving:
            canvas.draw()
        else:
            if self._background is None:  # first time: everything but the moving artists
                for artist in moving:
                    artist.set_animated(True)
                canvas.draw()
                self._background = canvas.copy_from_bbox(self.figure.bbox)
            canvas.restore_region(self._background)
            for artist in moving:
                self.figure.draw_artist(artist)
        return png_bytes(np.asarray(canvas.buffer_rgba()))

    @property
    def png(self) -> bytes:
        """The picture shown, as PNG bytes."""
        return self.image.value

    def summary(self) -> str:
        """Short stable text; the ``text/plain`` of the displayed explorer."""
        return f"{type(self).__name__}: {self.caption_text(self.state)}"

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        bundle["text/plain"] = self.summary()
        return bundle
