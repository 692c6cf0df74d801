"""Lesson 04: click a mask grid; compare masking before softmax with zeroing after."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .. import reference
from .explorer import Explorer

MASK_PRESETS = ("causal", "padding", "causal + padding", "custom")


def mask_preset(name: str, t: int = 5, n_padded: int = 2) -> np.ndarray:
    """The ``(t, t)`` boolean mask (True = blocked) of a named preset.

    ``"causal"`` blocks the future; ``"padding"`` blocks the last ``n_padded``
    keys for every query; ``"causal + padding"`` blocks both. ``"custom"`` is
    not a pattern (it keeps whatever the grid holds) and is refused here, as are
    a ``t`` that is not a positive int and an ``n_padded`` that is not an int
    in ``0..t-1``.
    """
    from .. import masks
    from .._checks import check_non_negative_int, check_positive_int

    if not isinstance(name, str) or name not in MASK_PRESETS[:3]:
        raise ValueError(f"unknown mask preset {name!r}; choose one of {MASK_PRESETS[:3]}.")
    t, n_padded = check_positive_int(t, "t"), check_non_negative_int(n_padded, "n_padded")
    if not 0 <= n_padded < t:
        raise ValueError(f"n_padded must be in 0..{t - 1} (one key must stay); got {n_padded}.")
    padding = masks.padding_mask([t - n_padded], t)[0, 0]  # (1, t): same keys for every query
    causal = masks.causal_mask(t)
    if name == "causal":
        return causal
    if name == "padding":
        return np.broadcast_to(padding, (t, t)).copy()
    return masks.combine(causal, padding)


def mask_before_vs_after(scores, mask) -> dict:
    """Weights of the two ways to apply ``mask`` (True = blocked) to ``scores (Tq, Tk)``.

    ``"before"``: blocked scores become ``-inf`` *before* the softmax (right:
    each row sums to 1 over the allowed keys). ``"after"``: the softmax of all
    scores, then the blocked weights set to 0 (wrong: each row sums to less
    than 1). Returns both weight matrices and their row sums. Refuses a mask
    with a fully masked row (``ValueError`` from :func:`mha.attention`'s check),
    scores that are not 2-D real finite numbers and a mask that does not
    broadcast to them.
    """
    from .._checks import as_float_array
    from .._mask_checks import check_mask

    s = as_float_array(scores, "scores").astype(float)
    if s.ndim != 2:
        raise ValueError(f"scores must be (Tq, Tk), one row per query; got shape {s.shape}.")
    m = check_mask(mask, s.shape)
    before = reference.softmax(np.where(m, -np.inf, s))
    after = np.where(m, 0.0, reference.softmax(s))
    return {"mask": m.copy(), "before": before, "after": after,
            "before_row_sums": before.sum(-1), "after_row_sums": after.sum(-1)}


def _fmt_row_sums(sums) -> str:
    return "[" + " ".join(f"{x:.2f}" for x in sums) + "]"


class MaskExplorer(Explorer):
    """Click cells of a 5 x 5 mask grid (a pressed cell is blocked, ``-inf``)
    or pick a preset; compare the weights of "mask before softmax" (each row
    sums to 1) with "zero after softmax" (rows sum to less than 1).

    The scores are fixed and seeded. A click that would block every key of a
    query is refused: the cell is reverted and the caption says why (nothing
    raises inside the callback). ``state`` is :func:`mask_before_vs_after`
    plus ``"preset"`` and ``"refused"`` (the refusal message or ``None``).
    """

    T = 5

    def __init__(self, preset: str = "causal", seed: int = 0, n_padded: int = 2):
        if preset not in MASK_PRESETS[:3]:
            raise ValueError(f"preset must be one of {MASK_PRESETS[:3]}; got {preset!r}.")
        from .._checks import check_non_negative_int

        self.n_padded = n_padded
        seed = check_non_negative_int(seed, "seed")  # NumPy would refuse "a" in its own words
        self.scores = np.round(np.random.default_rng(seed).normal(0.0, 1.5, (self.T, self.T)), 2)
        self.refused: str | None = None
        self._syncing = False
        self.preset = widgets.ToggleButtons(options=list(MASK_PRESETS), value=preset,
                                            description="mask", style={"button_width": "auto"})
        start = mask_preset(preset, self.T, n_padded)
        self.cells = [
            [widgets.ToggleButton(value=bool(start[i, j]), tooltip=f"query {i}, key {j}",
                                  layout=widgets.Layout(width="44px", height="28px"))
             for j in range(self.T)]
            for i in range(self.T)
        ]
        self._where = {id(b): (i, j) for i, row in enumerate(self.cells) for j, b in enumerate(row)}
        super().__init__([self.preset, *(b for row in self.cells for b in row)],
                         figsize=(8.0, 3.6))

    # -- the grid ------------------------------------------------------
    def grid(self) -> np.ndarray:
        """The mask the buttons show, ``(T, T)`` bool, True = blocked."""
        return np.array([[b.value for b in row] for row in self.cells])

    def _set_grid(self, mask) -> None:
        self._syncing = True
        try:
            for i, row in enumerate(self.cells):
                for j, button in enumerate(row):
                    button.value = bool(mask[i, j])
        finally:
            self._syncing = False

    def _on_change(self, change) -> None:
        # The lock (see Explorer) also keeps another thread's change out while _syncing is set.
        with self._lock:
            if self._syncing:
                return
            owner = change["owner"]
            if owner is self.preset:
                self.refused = None
                if owner.value != "custom":
                    self._set_grid(mask_preset(owner.value, self.T, self.n_padded))
            else:
                i, j = self._where[id(owner)]
                grid = self.grid()
                if grid[i].all():
                    self.refused = (f"refused: blocking key {j} would leave query {i} with no key "
                                    "(a fully masked row, softmax would divide 0 by 0); "
                                    "the cell stays open")
                    self._syncing = True
                    owner.value = False
                    self._syncing = False
                else:
                    self.refused = None
                    if self.preset.value != "custom" and not np.array_equal(
                            grid, mask_preset(self.preset.value, self.T, self.n_padded)):
                        self._syncing = True
                        self.preset.value = "custom"
                        self._syncing = False
            self.redraw()

    # -- layout and drawing --------------------------------------------
    def build_box(self):
        label = widgets.Layout(width="44px", height="28px")
        header = [widgets.Label("", layout=widgets.Layout(width="64px"))]
        header += [widgets.Label(f"key {j}", layout=label) for j in range(self.T)]
        rows = []
        for i, row in enumerate(self.cells):
            rows.append(widgets.Label(f"query {i}", layout=widgets.Layout(width="64px")))
            rows.extend(row)
        grid = widgets.GridBox(header + rows, layout=widgets.Layout(
            grid_template_columns=f"64px repeat({self.T}, 48px)", align_items="center"))
        return widgets.VBox([self.preset, widgets.HBox([grid, self.image]), self.caption])

    def setup_figure(self):
        from matplotlib import colormaps

        from ..plot.matrices import BLOCKED_GREY

        self.axes = self.figure.subplots(1, 2)
        colormap = colormaps["viridis"].with_extremes(bad=BLOCKED_GREY)  # as in mask_grid
        self.images, self.texts, self.sum_texts = [], [], []
        blank = np.zeros((self.T, self.T))
        for ax in self.axes:
            self.images.append(ax.imshow(blank, cmap=colormap, vmin=0.0, vmax=1.0))
            self.texts.append([[ax.text(j, i, "", ha="center", va="center", fontsize=8)
                                for j in range(self.T)] for i in range(self.T)])
            ax.text(self.T - 0.2, -0.75, "row sum", ha="left", va="center", fontsize=8)
            self.sum_texts.append([ax.text(self.T - 0.2, i, "", ha="left", va="center", fontsize=8)
                                   for i in range(self.T)])
            ax.set_xticks(range(self.T))
            ax.set_yticks(range(self.T))
            ax.xaxis.tick_top()
            ax.xaxis.set_label_position("top")
            ax.set_xlabel("key j")
            ax.set_ylabel("query i")
        self.figure.subplots_adjust(left=0.06, right=0.9, bottom=0.03, top=0.76, wspace=0.45)

    def compute(self):
        state = mask_before_vs_after(self.scores, self.grid())
        state["preset"] = self.preset.value
        state["refused"] = self.refused
        return state

    def draw(self, state):
        m = state["mask"]
        for i, row in enumerate(self.cells):
            for j, button in enumerate(row):
                button.description = "-inf" if m[i, j] else "0"
                button.button_style = "danger" if m[i, j] else ""
        low, high = state["after_row_sums"].min(), state["after_row_sums"].max()
        titles = ("mask before softmax: every row sums to 1",
                  f"zero after softmax: rows sum to {low:.2f}..{high:.2f}")
        for ax, image, texts, sums, key, title in zip(
                self.axes, self.images, self.texts, self.sum_texts, ("before", "after"), titles,
                strict=True):
            w = state[key]
            image.set_data(np.ma.masked_array(w, m))
            for (i, j), value in np.ndenumerate(w):
                texts[i][j].set_text("" if m[i, j] else f"{value:.2f}")
                texts[i][j].set_color("black" if m[i, j] or value > 0.5 else "white")
            for text, total in zip(sums, state[key + "_row_sums"], strict=True):
                text.set_text(f"{total:.2f}")
            ax.set_title(title, fontsize=9, pad=8)

    def caption_text(self, state):
        text = (f"{state['preset']}: row sums, mask before softmax "
                f"{_fmt_row_sums(state['before_row_sums'])}; zero after softmax "
                f"{_fmt_row_sums(state['after_row_sums'])}")
        if state["refused"]:
            text += f". {state['refused']}"
        return text
