"""The base of every explorer: controls, a figure rendered to PNG, a caption.

A full Agg draw of a three-panel figure takes about 100 ms here, and a slider dragged in the
browser sends a new value every few milliseconds: redraws queue up and the picture lags the
hand by a second. An explorer that names its moving artists (:meth:`Explorer.animated_artists`)
is drawn once in full; each later redraw pastes that background back and draws only the moving
artists (matplotlib's "blitting"), a few milliseconds.

The picture reaches the browser as a ``data:`` URL of the PNG (``Image(format="url")``), not as
PNG bytes, which ipywidgets turns into a ``blob:`` URL the page fetches before decoding it:
lesson 06's pictures showed 35-40 ms after a pick as ``data:`` URLs instead of 58-79 ms.
(Lesson 01's explorer, at a load average of 7-9 on 2 cores, was too noisy to show a difference.)
:attr:`Explorer.png` keeps the PNG bytes (the stored output's ``image/png``).

An explorer whose pictures are keyed by its controls (:meth:`Explorer.picture_key`) may also
name the keys a learner is likely to ask for next (:meth:`Explorer.prefetch_keys`, e.g. one
slider step either way): after each redraw a background thread renders those on a second
figure of its own, so the next key press or drag step is a cache hit (under a millisecond of
kernel time instead of about 23 ms for lesson 01).
"""

from __future__ import annotations

import base64
import copy
import struct
import threading
import time
import zlib

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Affine2D


def png_bytes(rgba) -> bytes:
    """An ``(h, w, 4)`` uint8 picture as PNG bytes (8-bit RGBA, as Agg holds it).

    No row filters and zlib level 1: about 4 ms of CPU for lesson 01's 900 x 380 figure here,
    where Pillow's encoder (adaptive filters) took 25-40 ms. RGBA, not RGB: each row is then
    one contiguous copy; dropping alpha (a strided copy of 3 bytes in 4) took 6 ms of the 9 and
    saved 4 KB of 38.
    """
    rgba = np.asarray(rgba)
    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype != np.uint8:
        raise ValueError(f"png_bytes needs an (h, w, 4) uint8 array; got {rgba.shape} "
                         f"{rgba.dtype}.")
    h, w, _ = rgba.shape
    rows = np.empty((h, 1 + 4 * w), np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) at the start of every row
    rows[:, 1:] = rgba.reshape(h, 4 * w)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8-bit RGBA, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


DATA_URL_PREFIX = b"data:image/png;base64,"


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
    cached_pictures = 256  # pictures kept per explorer, by :meth:`picture_key` (50 KB each)
    # Seconds without a redraw before the background thread draws the second and later of the
    # prefetch keys (the first is drawn at once): while keys are pressed or a slider dragged,
    # its drawing competes with the redraws for the CPU and the GIL.
    prefetch_pause = 0.2

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
        self._pictures: dict = {}  # picture_key() -> data: URL of the PNG, oldest first
        # Prefetching (see prefetch_keys): the cache is shared with a background thread, so
        # every read or write of it holds _cache (never while rendering); _queue holds the keys
        # still to prefetch, _prefetching the key the thread renders now.
        self._cache = threading.Condition()
        self._queue: list = []
        self._prefetching = None
        self._queue_fresh = False  # True: the queue's first key is the most likely (no pause)
        self._last_redraw = 0.0  # time.monotonic() at the end of the last redraw
        self._worker: threading.Thread | None = None
        self._twin: Explorer | None = None
        self._twin_lock = threading.Lock()
        self.prefetch = True  # False: render only what is asked for (prefetch_keys unused)
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

    def picture_key(self):
        """A hashable key that fixes the picture (the same key, the same pixels), or ``None``
        (the default): never reuse a picture. A subclass whose picture depends only on its
        controls' values may return them: a value seen before is then shown again from a
        cache (:attr:`cached_pictures` of them) without rendering or encoding."""
        return None

    def prefetch_keys(self) -> list:
        """Picture keys likely to be asked for next, most likely first (the default: none).
        After each redraw a background thread renders those not in the cache
        (:meth:`state_for` gives each one's state), on a figure of its own."""
        return []

    def state_for(self, key) -> dict:  # pragma: no cover - needed only with prefetch_keys
        """The state (as :meth:`compute` returns) whose picture has ``key``; :meth:`draw` must
        draw from the state alone, not from the controls."""
        raise NotImplementedError

    def build_picture(self) -> None:
        """Create ``self.image`` (a ``data:`` URL of the PNG, shown at its natural size) and
        ``self.caption``."""
        self.image = widgets.Image(format="url")
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
            self.draw(self.state)  # also on a cached picture: the artists describe the state
            key = self.picture_key()
            picture = self._cached(key, wait=True) if key is not None else None
            if picture is None:
                picture = DATA_URL_PREFIX + base64.b64encode(self._render_png())
                if key is not None:
                    self._store(key, picture)
            self.image.value = picture
            self.caption.value = self.caption_text(self.state)
            self.redraw_seconds.append(time.perf_counter() - start)
            self._last_redraw = time.monotonic()
            if key is not None and self.prefetch:
                self._start_prefetch(self.prefetch_keys())

    # -- the picture cache and its prefetching ---------------------------
    def _cached(self, key, wait: bool = False):
        """The cached picture of ``key`` (now the newest), or ``None``. Drops the keys still
        queued for prefetching (a new redraw names its own); with ``wait``, a key the
        background thread is rendering now is waited for rather than rendered twice."""
        with self._cache:
            self._queue.clear()
            while wait and self._prefetching == key:
                self._cache.wait(timeout=5.0)
            picture = self._pictures.pop(key, None)
            if picture is not None:
                self._pictures[key] = picture  # re-inserted: the newest, dropped last
            return picture

    def _store(self, key, picture) -> None:
        with self._cache:
            self._pictures.pop(key, None)
            self._pictures[key] = picture
            while len(self._pictures) > self.cached_pictures:
                self._pictures.pop(next(iter(self._pictures)))  # the least recently used

    def _start_prefetch(self, keys) -> None:
        with self._cache:
            keys = [k for k in keys if k is not None]
            self._queue[:] = [k for k in keys if k not in self._pictures]
            # Only the most likely key is drawn at once; if it is drawn already, all wait.
            self._queue_fresh = bool(keys) and keys[0] not in self._pictures
            self._cache.notify_all()
            if self._queue and (self._worker is None or not self._worker.is_alive()):
                self._worker = threading.Thread(target=self._prefetch_queued, daemon=True,
                                                name=f"{type(self).__name__} prefetch")
                self._worker.start()

    def _prefetch_queued(self) -> None:
        """Render the queued keys on the twin figure, one at a time, until the queue is empty
        (the thread then ends; the next redraw starts another): the most likely key at once,
        the others once no redraw came for :attr:`prefetch_pause` seconds."""
        while True:
            with self._cache:
                while True:
                    while self._queue and self._queue[0] in self._pictures:
                        self._queue.pop(0)
                        self._queue_fresh = False
                    if not self._queue:
                        self._worker = None
                        return
                    idle = time.monotonic() - self._last_redraw
                    if self._queue_fresh or idle >= self.prefetch_pause:
                        break
                    self._cache.wait(self.prefetch_pause - idle)
                self._queue_fresh = False
                key = self._prefetching = self._queue.pop(0)
            try:
                picture = DATA_URL_PREFIX + base64.b64encode(self.render_for(key))
                self._store(key, picture)
            finally:
                with self._cache:
                    self._prefetching = None
                    self._cache.notify_all()

    def render_for(self, key) -> bytes:
        """The PNG of ``key``'s picture, drawn on a second figure (the twin) so that neither the
        shown figure's artists nor its pixels change: the same bytes the explorer shows when
        its controls give ``key``."""
        with self._twin_lock:
            return self._render_on_twin(key)

    def _render_on_twin(self, key) -> bytes:
        if self._twin is None:
            twin = copy.copy(self)  # shares the data and the controls; gets its own figure
            twin.__dict__.pop("_text_stamps", None)
            twin.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.dpi)
            FigureCanvasAgg(twin.figure)
            twin._background = None
            twin.setup_figure()
            self._twin = twin
        twin = self._twin
        twin.draw(self.state_for(key))
        return twin._render_png()

    def wait_for_prefetch(self, timeout: float = 30.0) -> bool:
        """Wait until the background thread has rendered every queued key; ``False`` if it
        has not within ``timeout`` seconds."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return self._worker is None or not self._worker.is_alive()

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
                if type(artist) is Text:  # not an Annotation (a Text subclass with an arrow)
                    self._stamp_text(artist)
                else:
                    self.figure.draw_artist(artist)
        return png_bytes(np.asarray(canvas.buffer_rgba()))

    def _stamp_text(self, text: Text) -> None:
        """Draw a moving text from its pixels, rendered once per string and look.

        matplotlib 3.11 lays out and renders a text glyph by glyph: 1-4 ms of CPU per text
        here, most of a blitted redraw (lesson 01's four moving texts took 10 of 14 ms). Each
        string is drawn once, its anchor moved to the nearest whole pixel, on a blank,
        transparent canvas; its pixels (colour and coverage) are kept and blended in wherever
        the text's anchor now is, rounded the same way (at most half a pixel from where
        matplotlib would put it). The picture does not depend on what was drawn before: the
        same controls give the same bytes.
        """
        if not text.get_visible() or not text.get_text():
            return
        renderer = self.figure.canvas.get_renderer()
        key = (id(text), text.get_text(), text.get_rotation(), text.get_ha(), text.get_va(),
               str(text.get_color()), text.get_alpha(), hash(text.get_fontproperties()))
        x, y = np.floor(text.get_transform().transform(text.get_unitless_position()) + 0.5)
        row, col = renderer.height - y, x  # the anchor's pixel in the buffer (row 0 on top)
        stamps = self.__dict__.setdefault("_text_stamps", {})
        if key not in stamps:
            if len(stamps) >= 2048:
                stamps.pop(next(iter(stamps)))
            # on a canvas just larger than the text, at a whole-pixel offset (same pixels)
            box = text.get_window_extent(renderer)
            x0, y0 = np.floor(box.x0) - 2, np.floor(box.y0) - 2
            width, height = int(np.ceil(box.x1 - x0)) + 3, int(np.ceil(box.y1 - y0)) + 3
            exact = text.get_transform().transform(text.get_unitless_position())
            blank = RendererAgg(width, height, renderer.dpi)
            transform = text.get_transform()
            text.set_transform(transform + Affine2D().translate(x - exact[0] - x0,
                                                                y - exact[1] - y0))
            try:
                text.draw(blank)
            finally:
                text.set_transform(transform)
            pixels = np.asarray(blank.buffer_rgba())
            rows, cols = np.nonzero(pixels[..., 3])
            if rows.size == 0:
                stamps[key] = None
            else:
                top, left = rows.min(), cols.min()
                patch = pixels[top:rows.max() + 1, left:cols.max() + 1]
                stamps[key] = (patch[..., :3].astype(np.float32),
                               patch[..., 3:].astype(np.float32) / 255.0,
                               int(top - (height - (y - y0))), int(left - (x - x0)))
        stamp = stamps[key]
        if stamp is None:
            return
        colour, alpha, d_row, d_col = stamp
        top, left = int(row) + d_row, int(col) + d_col
        buffer = np.asarray(renderer.buffer_rgba())
        h, w = alpha.shape[:2]
        # clip to the canvas (a text near an edge)
        r0, c0 = max(top, 0), max(left, 0)
        r1, c1 = min(top + h, buffer.shape[0]), min(left + w, buffer.shape[1])
        if r0 >= r1 or c0 >= c1:
            return
        a = alpha[r0 - top:r1 - top, c0 - left:c1 - left]
        under = buffer[r0:r1, c0:c1, :3]
        under[...] = (colour[r0 - top:r1 - top, c0 - left:c1 - left] * a
                      + under * (1.0 - a) + 0.5).astype(np.uint8)

    @property
    def png(self) -> bytes:
        """The picture shown, as PNG bytes (``self.image.value`` is its ``data:`` URL)."""
        return base64.b64decode(bytes(self.image.value)[len(DATA_URL_PREFIX):])

    def summary(self) -> str:
        """Short stable text; the ``text/plain`` of the displayed explorer."""
        return f"{type(self).__name__}: {self.caption_text(self.state)}"

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        bundle["text/plain"] = self.summary()
        return bundle
