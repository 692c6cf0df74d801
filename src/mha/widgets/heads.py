"""Lesson 06: pick a layer, a head and an input, see that head's attention map."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .explorer import Explorer

SEQUENCES = {
    # name -> letters; every entry has T = 18 so the picture keeps its size
    "MULTIHEAD twice": "MULTIHEAD" * 2,
    "random block twice (seed 0)": None,
    "random block twice (seed 1)": None,
    "18 letters, no repeat (seed 2)": None,
}
LENGTH = 18


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


def repeat_block(text: str) -> int | None:
    """``L`` when ``text`` is a block of ``L`` letters written twice, else None."""
    half = len(text) // 2
    return half if len(text) % 2 == 0 and half >= 2 and text[:half] == text[half:] else None


def head_state(maps, text: str, layer: int, head: int) -> dict:
    """What the explorer shows for one head, from precomputed maps.

    ``maps``: per layer ``(1, H, T, T)`` (from ``model.attention_maps``) for the
    letters ``text`` (length ``T``). Returns ``weights (T, T)``, ``labels``,
    ``layer``, ``head``, ``block`` (``L`` or None), the head's ``previous`` and
    ``induction`` scores (None without a repeat), ``top_key (T,)`` (the key each
    query weighs most) and ``targets``: the ``(query, key)`` cells an induction
    head would pick. Refuses a layer or head out of range.
    """
    from ..induction import head_scores

    if not 0 <= layer < len(maps) or not 0 <= head < maps[layer].shape[1]:
        raise ValueError(f"no head ({layer}, {head}): {len(maps)} layers of "
                         f"{maps[0].shape[1]} heads.")
    weights = maps[layer][0, head].numpy().astype(float)  # (T, T)
    t = weights.shape[0]
    block = repeat_block(text)
    state = {"weights": weights, "labels": list(text), "layer": layer, "head": head,
             "block": block, "top_key": weights.argmax(axis=1), "targets": [],
             "previous": float(np.mean(weights[np.arange(1, t), np.arange(t - 1)])),
             "induction": None}
    if block is not None:
        scores = head_scores(maps[layer][:, head:head + 1], block)
        state["induction"] = float(scores["induction"][0])
        state["targets"] = [(i, i - block + 1) for i in range(block, t)]
    return state


class HeadExplorer(Explorer):
    """Dropdowns for the layer, the head and the input letters; the head's map below.

    ``model`` defaults to ``mha.induction.load_trained("induction_2l_4h")``. The
    maps of every sequence in :data:`SEQUENCES` are computed once; a redraw only
    swaps the image data, the tick labels and the markers. Open squares mark
    the cells an induction head would pick (key ``i - L + 1``) when the input
    repeats. ``state`` is :func:`head_state`.
    """

    def __init__(self, model=None, layer: int = 1, head: int = 0,
                 sequence: str = "MULTIHEAD twice"):
        from .. import induction

        self.model = induction.load_trained("induction_2l_4h") if model is None else model
        self.texts = {name: sequence_letters(name) for name in SEQUENCES}
        self.maps = {name: self.model.attention_maps(induction.encode(text))
                     for name, text in self.texts.items()}
        self.layer_box = widgets.Dropdown(options=list(range(self.model.n_layers)), value=layer,
                                          description="layer", layout={"width": "140px"})
        self.head_box = widgets.Dropdown(options=list(range(self.model.n_heads)), value=head,
                                         description="head", layout={"width": "140px"})
        self.sequence_box = widgets.Dropdown(options=list(SEQUENCES), value=sequence,
                                             description="input", layout={"width": "330px"})
        super().__init__([self.layer_box, self.head_box, self.sequence_box], figsize=(4.2, 4.2))

    def setup_figure(self):
        self.ax = self.figure.subplots()
        future = np.triu(np.ones((LENGTH, LENGTH), dtype=bool), k=1)
        self._future = future
        import matplotlib.pyplot as plt

        cmap = plt.get_cmap("viridis").with_extremes(bad="0.85")
        self.im = self.ax.imshow(np.ma.masked_array(np.zeros((LENGTH, LENGTH)), future),
                                 cmap=cmap, vmin=0.0, vmax=1.0)
        (self.marks,) = self.ax.plot([], [], "s", ms=7, mfc="none", mec="white", mew=1.2)
        # Letters as plain text artists, not tick labels: redraws set their text only
        # (matplotlib's tick machinery costs most of a redraw at 36 labels).
        self.ax.set_axis_off()
        self.col_labels = [self.ax.text(j, -0.9, "", ha="center", va="bottom", fontsize=7)
                           for j in range(LENGTH)]
        self.row_labels = [self.ax.text(-0.9, i, "", ha="right", va="center", fontsize=7)
                           for i in range(LENGTH)]
        self.ax.text(LENGTH / 2 - 0.5, -2.2, "key j", ha="center", va="bottom", fontsize=8)
        self.ax.text(-2.0, LENGTH / 2 - 0.5, "query i", ha="center", va="center", fontsize=8,
                     rotation=90)
        self.figure.subplots_adjust(left=0.12, right=0.98, top=0.9, bottom=0.02)

    def compute(self):
        name = self.sequence_box.value
        return head_state(self.maps[name], self.texts[name], self.layer_box.value,
                          self.head_box.value)

    def draw(self, state):
        self.im.set_data(np.ma.masked_array(state["weights"], self._future))
        for text, letter in zip(self.col_labels, state["labels"], strict=True):
            text.set_text(letter)
        for text, letter in zip(self.row_labels, state["labels"], strict=True):
            text.set_text(letter)
        cells = np.array(state["targets"]).reshape(-1, 2)
        self.marks.set_data(cells[:, 1], cells[:, 0])

    def caption_text(self, state):
        text = (f"layer {state['layer']}, head {state['head']}: previous-token score "
                f"{state['previous']:.2f}")
        if state["induction"] is None:
            return text + ", no repeat in the input"
        return text + f", induction score {state['induction']:.2f}"
