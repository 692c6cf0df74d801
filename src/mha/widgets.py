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


# ---------------------------------------------------------------------------
# Lesson 03: scaling by sqrt(d_k)            (section owned by lesson 03)
# ---------------------------------------------------------------------------

class ScalingExplorer(Explorer):
    """Pick the head width ``d_k`` and switch the division by ``sqrt(d_k)``.

    The raw scores are ``sqrt(d_k) * z`` for a fixed unit-variance ``z``
    (default :func:`mha.scaling.unit_variance_scores`, 8 keys; see
    :func:`mha.scaling.scores_at_width`): their spread grows with ``d_k``.
    Left: the softmax weights over the keys. Right: the norm of the softmax
    Jacobian (the size of the gradient that reaches the scores) against
    ``d_k``, with and without the division, and a dot at the current setting.
    ``state`` is :func:`mha.scaling.scaling_state`.
    """

    D_K_OPTIONS = tuple(2**e for e in range(2, 11))  # 4, 8, ..., 1024 (log-spaced)

    def __init__(self, z=None, d_k: int = 64, divide: bool = True):
        from . import scaling

        self._scaling = scaling
        self.z = scaling.unit_variance_scores() if z is None else np.asarray(z, dtype=float)
        if d_k not in self.D_K_OPTIONS:
            raise ValueError(f"d_k must be one of {self.D_K_OPTIONS}; got {d_k!r}.")
        self.d_k_slider = widgets.SelectionSlider(
            options=list(self.D_K_OPTIONS), value=d_k, description="d_k",
            continuous_update=True,
        )
        self.divide_box = widgets.Checkbox(value=bool(divide), description="divide by sqrt(d_k)",
                                           indent=False)
        super().__init__([self.d_k_slider, self.divide_box], figsize=(8.0, 3.2))

    def setup_figure(self):
        ax_w, ax_g = self.ax_weights, self.ax_grad = self.figure.subplots(
            1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
        n = self.z.size
        self.bars = ax_w.bar(np.arange(n), np.zeros(n), color="tab:blue")
        ax_w.set_ylim(0, 1.05)
        ax_w.set_xticks(range(n))
        ax_w.set_xlabel("key j")
        ax_w.set_ylabel("softmax weight")
        widths = np.array(self.D_K_OPTIONS)
        curve = self._scaling.jacobian_norm_curve
        floor = 1e-12  # log axis: keep exact zeros visible at the bottom
        self.curves = {
            False: np.maximum(curve(self.z, np.sqrt(widths)), floor),
            True: np.maximum(curve(self.z, np.ones(widths.size)), floor),
        }
        ax_g.plot(widths, self.curves[False], "-o", ms=3, color="tab:red", label="not divided")
        ax_g.plot(widths, self.curves[True], "-o", ms=3, color="tab:blue",
                  label="divided by sqrt(d_k)")
        (self.dot,) = ax_g.plot([], [], "o", ms=11, mfc="none", mec="black", mew=2,
                                label="current setting")
        ax_g.set_xscale("log", base=2)
        ax_g.set_yscale("log")
        ax_g.set_ylim(floor / 2, 2.0)
        # Plain-text tick labels and no minor ticks: mathtext labels double the redraw time.
        ax_g.set_xticks(widths[::2], [str(w) for w in widths[::2]])
        ax_g.set_yticks([1e-12, 1e-9, 1e-6, 1e-3, 1.0], ["1e-12", "1e-9", "1e-6", "0.001", "1"])
        ax_g.minorticks_off()
        ax_g.set_xlabel("head width d_k")
        ax_g.set_ylabel("norm of softmax Jacobian")
        ax_g.legend(fontsize=7, loc="lower left")
        self.figure.tight_layout(rect=(0, 0, 1, 0.93))

    def compute(self):
        return self._scaling.scaling_state(self.z, self.d_k_slider.value, self.divide_box.value)

    def draw(self, state):
        for bar, w in zip(self.bars, state["weights"], strict=True):
            bar.set_height(w)
        self.dot.set_data([state["d_k"]], [max(state["jacobian_norm"], 1e-12)])
        how = "divided by sqrt(d_k)" if state["divide"] else "not divided"
        self.figure.suptitle(
            f"d_k = {state['d_k']}, scores {how}: largest weight {state['largest_weight']:.3f}",
            fontsize=10)

    def caption_text(self, state):
        how = "divided" if state["divide"] else "not divided"
        return (f"d_k={state['d_k']}, {how}: largest weight {state['largest_weight']:.3f}, "
                f"gradient size (Jacobian norm) {state['jacobian_norm']:.2g}")


# ---------------------------------------------------------------------------
# Lesson 04: masks                           (section owned by lesson 04)
# ---------------------------------------------------------------------------
MASK_PRESETS = ("causal", "padding", "causal + padding", "custom")


def mask_preset(name: str, t: int = 5, n_padded: int = 2) -> np.ndarray:
    """The ``(t, t)`` boolean mask (True = blocked) of a named preset.

    ``"causal"`` blocks the future; ``"padding"`` blocks the last ``n_padded``
    keys for every query; ``"causal + padding"`` blocks both. ``"custom"`` is
    not a pattern (it keeps whatever the grid holds) and is refused here.
    """
    from . import masks

    if name not in MASK_PRESETS[:3]:
        raise ValueError(f"unknown mask preset {name!r}; choose one of {MASK_PRESETS[:3]}.")
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
    with a fully masked row (``ValueError`` from :func:`mha.attention`'s check).
    """
    from ._checks import check_mask

    s = np.asarray(scores, dtype=float)
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
        self.n_padded = n_padded
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

        self.axes = self.figure.subplots(1, 2)

        colormap = colormaps["viridis"].with_extremes(bad="0.85")  # grey = blocked
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
