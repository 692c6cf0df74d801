"""Lesson 06: pick a layer and a head, type the letters, remove a head; see the map.

The learner can type any letters (``A``-``Z``, 2 to :data:`MAX_LETTERS` of them)
or pick a preset, and can remove one head (zero what it writes, as
:func:`mha.induction.without_head` does) to watch the heads that read from it
change. The picture is drawn at its natural size, 1 picture pixel per CSS pixel
(:data:`FIGSIZE` at the explorer's 100 dpi), so it stays sharp and, with its
controls, fits a 1440 x 900 screen.
"""

from __future__ import annotations

import base64
import io
import re
import time

import ipywidgets as widgets
import numpy as np

from .explorer import Explorer

SEQUENCES = {
    # name -> letters (None: drawn from a seed); every preset has 18 letters
    "MULTIHEAD twice": "MULTIHEAD" * 2,
    "random block twice (seed 0)": None,
    "random block twice (seed 1)": None,
    "18 letters, no repeat (seed 2)": None,
}
LENGTH = 18  # letters in every preset
MAX_LETTERS = 30  # typed input: 2 .. 30 letters
FIGSIZE = (5.6, 5.0)  # inches at 100 dpi: a 560 x 500 px picture
NOTHING_REMOVED = "nothing"


def sequence_letters(name: str) -> str:
    """The letters of one of :data:`SEQUENCES` (length 18). Refuses an unknown name."""
    from .. import induction

    if name not in SEQUENCES:
        raise ValueError(f"unknown sequence {name!r}; choose one of {list(SEQUENCES)}.")
    if SEQUENCES[name] is not None:
        return SEQUENCES[name]
    seed = int(name.rstrip(")")[-1])
    if "no repeat" in name:
        tokens = induction.repeated_blocks(1, LENGTH, seed=seed)[0, :LENGTH]  # distinct letters
    else:
        tokens = induction.repeated_blocks(1, LENGTH // 2, seed=seed)[0]
    return "".join(induction.letters(tokens))


def clean_letters(text: str) -> str:
    """``text`` in capitals with spaces dropped, e.g. ``"abc abc"`` -> ``"ABCABC"``.

    Refuses (``ValueError``, naming the problem) anything but the letters A-Z and
    spaces, and fewer than 2 or more than :data:`MAX_LETTERS` letters.
    """
    letters = re.sub(r"\s+", "", str(text)).upper()
    bad = sorted(set(re.sub(r"[A-Z]", "", letters)))
    if bad:
        raise ValueError(f"only the letters A-Z are tokens of this model; got {''.join(bad)!r}.")
    if not 2 <= len(letters) <= MAX_LETTERS:
        raise ValueError(f"type 2 to {MAX_LETTERS} letters; got {len(letters)}.")
    return letters


def repeat_block(text: str) -> int | None:
    """``L`` when ``text`` is a block of ``L`` letters written twice, else None."""
    half = len(text) // 2
    return half if len(text) % 2 == 0 and half >= 2 and text[:half] == text[half:] else None


def induction_targets(text: str) -> list[tuple[int, int]]:
    """The ``(query, key)`` cells an induction head would pick in ``text``.

    For each query ``i`` whose letter occurred before, at ``j < i`` (the latest
    such ``j``), the key ``j + 1``: the letter that followed the earlier copy. In a
    block of ``L`` distinct letters written twice these are ``(i, i - L + 1)`` for
    ``i = L .. 2L - 1``, the cells :func:`mha.induction.head_scores` averages.
    """
    last, targets = {}, []
    for i, letter in enumerate(text):
        if letter in last:
            targets.append((i, last[letter] + 1))
        last[letter] = i
    return targets


def head_state(maps, text: str, layer: int, head: int) -> dict:
    """What the explorer shows for one head, from the model's maps.

    ``maps``: per layer ``(1, H, T, T)`` (from ``model.attention_maps``) for the
    letters ``text`` (length ``T``). Returns ``weights (T, T)``, ``labels``,
    ``layer``, ``head``, ``block`` (``L`` when ``text`` is a block written twice,
    else None), ``targets`` (:func:`induction_targets`), the head's ``previous``
    score (mean weight of query ``i`` on key ``i - 1``) and ``induction`` score
    (mean weight on the targets; None when no letter repeats), and ``top_key (T,)``
    (the key each query weighs most). Refuses a layer or head out of range.
    """
    if not 0 <= layer < len(maps) or not 0 <= head < maps[layer].shape[1]:
        raise ValueError(f"no head ({layer}, {head}): {len(maps)} layers of "
                         f"{maps[0].shape[1]} heads.")
    weights = maps[layer][0, head].numpy().astype(float)  # (T, T)
    t = weights.shape[0]
    targets = induction_targets(text)
    state = {"weights": weights, "labels": list(text), "layer": layer, "head": head,
             "block": repeat_block(text), "top_key": weights.argmax(axis=1),
             "targets": targets,
             "previous": float(np.mean(weights[np.arange(1, t), np.arange(t - 1)])),
             "induction": None}
    if targets:
        rows, cols = np.array(targets).T
        state["induction"] = float(np.mean(weights[rows, cols]))
    return state


def removal_label(layer: int, head: int) -> str:
    return f"layer {layer}, head {head}"


class HeadExplorer(Explorer):
    """Dropdowns for the layer, the head, a head to remove and a preset input; a text
    box for the letters; the chosen head's map below, with a colour bar and a title.

    ``model`` defaults to ``mha.induction.load_trained("induction_2l_4h")``. Maps
    are computed on demand and kept per (letters, removed head), so going back to
    a view costs only the drawing. Open squares mark the cells an induction head
    would pick (:func:`induction_targets`): after a repeated letter, the key that
    followed its earlier copy.
    ``state`` is :func:`head_state` plus ``removed`` (a ``(layer, head)`` or None)
    and ``error`` (the message for letters the model cannot read, else None: the
    picture then keeps the last valid input).

    Every head's picture (with its caption) is sent to the browser, in a ``Stack`` of
    layers whose children are ``Stack`` s of heads, each stack's ``selected_index``
    linked in the browser (``jslink``) to its dropdown: picking a layer or a head switches
    the picture without asking the kernel (the round trip browser -> server -> kernel ->
    server -> browser alone took 80-110 ms here). The dropdowns still tell the kernel, so
    ``state``, the caption and the stored output describe the picked view. New letters or
    a removed head redraw all of them, the picked one first. ``image`` and ``caption`` are
    the picked view's widgets.
    """

    def __init__(self, model=None, layer: int = 1, head: int = 0,
                 sequence: str = "MULTIHEAD twice", removed=None):
        from .. import induction

        self.model = induction.load_trained("induction_2l_4h") if model is None else model
        self._variants = {None: self.model}
        self._maps: dict = {}
        self._pictures: dict = {}  # (letters, removed, layer, head) -> WebP bytes
        self._letters = sequence_letters(sequence)
        # "nothing" is the empty tuple, not None: a Dropdown whose value is None shows no
        # selection in the browser.
        removals = [(NOTHING_REMOVED, ())] + [
            (removal_label(l_, h), (l_, h))
            for l_ in range(self.model.n_layers) for h in range(self.model.n_heads)]
        narrow = {"width": "150px"}
        self.layer_box = widgets.Dropdown(options=list(range(self.model.n_layers)), value=layer,
                                          description="layer", layout=narrow)
        self.head_box = widgets.Dropdown(options=list(range(self.model.n_heads)), value=head,
                                         description="head", layout=narrow)
        self.removed_box = widgets.Dropdown(options=removals, value=removed or (),
                                            description="remove", layout={"width": "250px"})
        self.sequence_box = widgets.Dropdown(options=list(SEQUENCES), value=sequence,
                                             description="input", layout={"width": "330px"})
        self.letters_box = widgets.Text(value=self._letters, description="letters",
                                        continuous_update=False, layout={"width": "400px"})
        # Picking a preset fills the letters box, which triggers the one redraw.
        self.sequence_box.observe(self._on_preset, names="value")
        super().__init__([self.layer_box, self.head_box, self.removed_box, self.letters_box],
                         figsize=FIGSIZE)

    # -- inputs ------------------------------------------------------------------------------
    def _on_preset(self, change) -> None:
        if change["new"] is not None:
            self.letters_box.value = sequence_letters(change["new"])

    def _on_change(self, change) -> None:
        if change["owner"] is self.letters_box:
            presets = [n for n in SEQUENCES if sequence_letters(n) == change["new"]]
            with self.sequence_box.hold_trait_notifications():
                self.sequence_box.unobserve(self._on_preset, names="value")
                self.sequence_box.value = presets[0] if presets else None
                self.sequence_box.observe(self._on_preset, names="value")
        super()._on_change(change)

    def maps_for(self, letters: str, removed):
        """Per layer ``(1, H, T, T)`` maps of the model (with ``removed`` silenced)."""
        from .. import induction

        key = (letters, removed)
        if key not in self._maps:
            if removed not in self._variants:
                self._variants[removed] = induction.without_head(self.model, *removed)
            self._maps[key] = self._variants[removed].attention_maps(induction.encode(letters))
        return self._maps[key]

    # -- figure ------------------------------------------------------------------------------
    def setup_figure(self):
        import matplotlib.pyplot as plt

        fig = self.figure
        self.ax = fig.add_axes((0.10, 0.04, 0.74, 0.80))
        cax = fig.add_axes((0.87, 0.04, 0.03, 0.80))
        cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")
        self.im = self.ax.imshow(np.zeros((LENGTH, LENGTH)), cmap=cmap, vmin=0.0, vmax=1.0,
                                 interpolation="nearest")  # cells, not a smoothed picture
        self.colorbar = fig.colorbar(self.im, cax=cax)
        self.colorbar.set_label("weight of query i on key j (grey: future, masked)", fontsize=9)
        self.colorbar.ax.tick_params(labelsize=8)
        (self.marks,) = self.ax.plot([], [], "s", mfc="none", mec="white", mew=1.4)
        # Letters as plain text artists, not tick labels: a redraw sets their text and place
        # (matplotlib's tick machinery costs most of a redraw at 36 labels).
        self.ax.set_axis_off()
        self.col_labels = [self.ax.text(0, 0, "", ha="center", va="bottom")
                           for _ in range(MAX_LETTERS)]
        self.row_labels = [self.ax.text(0, 0, "", ha="right", va="center")
                           for _ in range(MAX_LETTERS)]
        self.ax.text(0.5, 1.045, "key j", transform=self.ax.transAxes, ha="center",
                     va="bottom", fontsize=9)
        self.ax.text(-0.075, 0.5, "query i", transform=self.ax.transAxes, ha="center",
                     va="center", fontsize=9, rotation=90)
        self.title = fig.text(0.47, 0.985, "", ha="center", va="top", fontsize=10)

    def compute(self):
        removed = self.removed_box.value or None
        error = None
        try:
            self._letters = clean_letters(self.letters_box.value)
        except ValueError as problem:
            error = str(problem)  # keep the last valid letters on the picture
        state = head_state(self.maps_for(self._letters, removed), self._letters,
                           self.layer_box.value, self.head_box.value)
        state.update(removed=removed, error=error)
        return state

    def draw(self, state):
        w = state["weights"]
        t = w.shape[0]
        future = np.triu(np.ones((t, t), dtype=bool), k=1)
        self.im.set_data(np.ma.masked_array(w, future))
        self.im.set_extent((-0.5, t - 0.5, t - 0.5, -0.5))
        size = 9 if t <= 20 else 7
        for i, (col, row) in enumerate(zip(self.col_labels, self.row_labels, strict=True)):
            letter = state["labels"][i] if i < t else ""
            col.set(text=letter, position=(i, -0.6), fontsize=size)
            row.set(text=letter, position=(-0.7, i), fontsize=size)
        cells = np.array(state["targets"]).reshape(-1, 2)
        self.marks.set_data(cells[:, 1], cells[:, 0])
        self.marks.set_markersize(0.8 * 0.74 * FIGSIZE[0] * 72 / t)  # 80% of a cell, in points
        self.title.set_text(self.title_text(state))

    def title_text(self, state) -> str:
        what = f"layer {state['layer']}, head {state['head']}"
        if state["removed"] is not None:
            what += f", with {removal_label(*state['removed'])} removed"
        if state["induction"] is None:
            return what + "\nno letter repeats: nothing for an induction head to find"
        return what + (f"\nwhite squares: the key after the earlier copy "
                       f"(mean weight there {state['induction']:.2f})")

    def caption_text(self, state):
        text = (f"layer {state['layer']}, head {state['head']}: previous-token score "
                f"{state['previous']:.2f}")
        text += (", no repeat in the input" if state["induction"] is None
                 else f", induction score {state['induction']:.2f}")
        if state["removed"] is not None:
            text += f" ({removal_label(*state['removed'])} removed)"
        if state["error"] is not None:
            text += f". Not drawn: {state['error']}"
        return text

    # -- rendering ---------------------------------------------------------------------------
    @property
    def image(self) -> widgets.Image:
        """The picked (layer, head)'s picture."""
        return self._views[self.layer_box.value, self.head_box.value][0]

    @property
    def png(self) -> bytes:
        """The picked (layer, head)'s picture as PNG (the stored output's ``image/png``)."""
        from PIL import Image

        buffer = io.BytesIO()
        Image.open(io.BytesIO(self.picture(self.layer_box.value, self.head_box.value))).save(
            buffer, format="png")
        return buffer.getvalue()

    def picture(self, layer: int, head: int) -> bytes:
        """The lossless WebP bytes the picture of ``(layer, head)`` shows now."""
        with self._lock:
            return self._shown[layer, head][1]

    @property
    def caption(self) -> widgets.HTML:
        """The picked (layer, head)'s caption."""
        return self._views[self.layer_box.value, self.head_box.value][1]

    def redraw(self) -> None:
        """As :meth:`Explorer.redraw`, for every view: a view whose input (letters, removed
        head) changed gets its picture, the picked view first (its message leaves first);
        the others only their caption (sent only if it changed). A picture drawn before for
        that input is sent again from a cache, not redrawn (:meth:`render`)."""
        with self._lock:
            start = time.perf_counter()
            self.state = self.compute()
            letters, removed, error = self._letters, self.state["removed"], self.state["error"]
            maps = self.maps_for(letters, removed)
            picked = (self.state["layer"], self.state["head"])
            for view in [picked] + [v for v in self._views if v != picked]:
                state = self.state if view == picked else dict(
                    head_state(maps, letters, *view), removed=removed, error=error)
                image, caption = self._views[view]
                key = (letters, removed, *view)
                if self._shown.get(view, (None,))[0] != key:
                    if key not in self._pictures:
                        if len(self._pictures) >= 64:
                            self._pictures.pop(next(iter(self._pictures)))
                        self.draw(state)
                        self._pictures[key] = self.render(state)
                    self._shown[view] = (key, self._pictures[key])
                    image.value = b"data:image/webp;base64," + base64.b64encode(
                        self._pictures[key])
                caption.value = self.caption_text(state)
            self.draw(self.state)  # the figure's artists describe the picked view
            self.redraw_seconds.append(time.perf_counter() - start)

    def render(self, state=None) -> bytes:
        """The figure (drawn from ``state``, default ``self.state``) as lossless WebP bytes,
        drawing only what changed.

        The letters, the colour bar and the axis names are drawn once per input and kept
        as a background. A redraw pastes it back, pastes the title (each title text is
        drawn once), writes the map's cells straight into the pixel buffer (one block of
        pixels per cell, the colours of ``self.im``) and draws the squares on top. A full
        matplotlib draw of this figure took 50-170 ms of CPU on a busy 2-core machine,
        most of it the 60 letters and the image resampling; this takes about 40 ms of CPU,
        most of it the title's letters (22 ms) and the encoding (24 ms). Lossless WebP, not
        PNG: 11 KB where zlib-1 PNG took 28 KB (and 11 ms), and the notebook stores every
        head's picture (all 8 as PNG data: URLs pushed lesson 06 past 1 MB).
        """
        from PIL import Image

        state = self.state if state is None else state
        canvas = self.figure.canvas
        key = tuple(state["labels"])
        changing = (self.im, self.marks, self.title)
        if getattr(self, "_background_key", None) != key:
            for artist in changing:
                artist.set_visible(False)
            canvas.draw()
            self._background = canvas.copy_from_bbox(self.figure.bbox)
            self._background_key = key
            self._titles = {}  # title text -> the title's strip, drawn once
            box = self.ax.get_window_extent()  # the map's pixels, after the draw fixed them
            self._map_box = [int(round(v)) for v in (box.x0, box.y0, box.x1, box.y1)]
            for artist in (self.marks, self.title):
                artist.set_visible(True)
        canvas.restore_region(self._background)
        title = self.title.get_text()
        if title not in self._titles:
            self.figure.draw_artist(self.title)
            self._titles[title] = canvas.copy_from_bbox(self._title_strip())
        canvas.restore_region(self._titles[title])
        pixels = np.asarray(canvas.buffer_rgba())  # (height, width, 4), row 0 at the top
        x0, y0, x1, y1 = self._map_box
        t = state["weights"].shape[0]
        cells = self.im.to_rgba(self.im.get_array(), bytes=True)  # (T, T, 4); grey: masked
        rows, cols = np.arange(y1 - y0) * t // (y1 - y0), np.arange(x1 - x0) * t // (x1 - x0)
        height = pixels.shape[0]
        pixels[height - y1:height - y0, x0:x1] = cells[rows][:, cols]
        self.ax.draw_artist(self.marks)
        buffer = io.BytesIO()
        Image.fromarray(pixels[..., :3]).save(buffer, format="webp", lossless=True, method=3,
                                              quality=0)
        return buffer.getvalue()

    def _title_strip(self):
        from matplotlib.transforms import Bbox

        top = self.ax.get_window_extent().y1 + 24  # above the letters of the columns
        return Bbox.from_extents(0, top, self.figure.bbox.x1, self.figure.bbox.y1)

    def build_picture(self):
        """One picture and caption per (layer, head), in a Stack of layers of Stacks of heads
        whose ``selected_index`` follows the dropdowns in the browser (see the class)."""
        # The picture shown at its own pixel size: stretched to the output's width it blurs.
        width, height = (round(s * self.dpi) for s in FIGSIZE)
        self._views: dict = {}  # (layer, head) -> (Image, HTML)
        self._shown: dict = {}  # (layer, head) -> (key, WebP bytes) of the picture it shows
        layers = []
        for layer in range(self.model.n_layers):
            heads = []
            for head in range(self.model.n_heads):
                # A data: URL, not the picture's bytes: the browser shows an <img> of a data:
                # URL at once, where bytes become a blob: URL each new view fetches first (a
                # pick's picture showed 35-40 ms after the pick instead of 58-79, median over
                # 15 picks at load 5-8 here).
                view = (widgets.Image(format="url", layout={"width": f"{width}px",
                                                            "height": f"{height}px"}),
                        widgets.HTML())
                self._views[layer, head] = view
                heads.append(widgets.VBox(view))
            layers.append(widgets.Stack(heads, selected_index=self.head_box.index))
        # A Stack shows only its picked child and builds that child's view anew on each pick:
        # the minimum height keeps the page from jumping up while the new picture loads.
        self.pictures = widgets.Stack(layers, selected_index=self.layer_box.index,
                                      layout={"min_height": f"{height + 30}px"})
        self._links = [widgets.jslink((self.layer_box, "index"),
                                      (self.pictures, "selected_index"))]
        self._links += [widgets.jslink((self.head_box, "index"), (stack, "selected_index"))
                        for stack in layers]

    def build_box(self):
        rows = [widgets.HBox([self.layer_box, self.head_box, self.removed_box]),
                widgets.HBox([self.sequence_box, self.letters_box])]
        return widgets.VBox([*rows, self.pictures])
