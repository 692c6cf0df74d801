"""Lesson 03: head width d_k, the sqrt(d_k) division, the weights and the gradient."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .explorer import Explorer


class ScalingExplorer(Explorer):
    """Pick the head width ``d_k`` and switch the division by ``sqrt(d_k)``.

    One query and ``n_keys`` keys are sampled once, with 1024 standard normal
    features each (:func:`mha.scaling.sample_head`, seeded by ``seed``); a head
    of width ``d_k`` dots their first ``d_k`` features
    (:func:`mha.scaling.scores_at_width`). Nothing is rescaled by hand, so the
    picture shows what real samples do: the spread of the raw scores grows
    with ``d_k``; divided, it stays near 1, up to the noise of one sample.
    Left: the softmax weights over the keys. Right: the norm of the softmax
    Jacobian (the size of the gradient that reaches the scores) against
    ``d_k``, with and without the division, and a ring at the current setting;
    thick dashed (each labelled divided / not divided), the median over
    ``N_SAMPLES`` other seeded samples
    (:func:`mha.scaling.jacobian_norms_by_width`), so the picture says which
    wiggles belong to this one sample and which trend every sample shares.
    ``state`` is :func:`mha.scaling.scaling_state`.
    """

    D_K_OPTIONS = tuple(2**e for e in range(2, 11))  # 4, 8, ..., 1024 (log-spaced)
    # Log axis floor: a norm below it (an exact 0) is drawn at it. It sits below the smallest norm
    # the default sample gives (3.7e-16 at d_k = 1024, not divided), so that point is drawn as is.
    FLOOR = 1e-18
    N_SAMPLES = 100  # samples behind the dashed median curves (seeds 1..100)

    def __init__(self, d_k: int = 64, divide: bool = True, *, n_keys: int = 8, seed: int = 0):
        from .. import scaling

        self._scaling = scaling
        self.q, self.k = scaling.sample_head(n_keys, max(self.D_K_OPTIONS), seed)
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
        n = self.k.shape[0]
        self.bars = ax_w.bar(np.arange(n), np.zeros(n), color="tab:blue")
        ax_w.set_ylim(0, 1.05)
        ax_w.set_xticks(range(n))
        ax_w.set_xlabel("key j")
        ax_w.set_ylabel("softmax weight")
        widths = np.array(self.D_K_OPTIONS)
        floor = self.FLOOR
        self.curves = {
            divide: np.maximum([self._scaling.scaling_state(self.q, self.k, int(d), divide)[
                "jacobian_norm"] for d in widths], floor)
            for divide in (False, True)
        }
        seeds = range(1, self.N_SAMPLES + 1)
        self.medians = {
            divide: np.maximum(np.median(self._scaling.jacobian_norms_by_width(
                seeds, widths, divide, n), axis=0), floor)
            for divide in (False, True)
        }
        ax_g.plot(widths, self.curves[False], "-o", ms=3, lw=1, color="tab:red", zorder=4,
                  label="this sample, not divided")
        ax_g.plot(widths, self.curves[True], "-o", ms=3, lw=1, color="tab:blue", zorder=4,
                  label="this sample, divided")
        # the medians thick and dark, the sample's curves thin on top of them: where the two
        # run together (divided, every width) both stay visible
        ax_g.plot(widths, self.medians[False], ls=(0, (4, 2)), lw=2.2, color="darkred",
                  label=f"median of {self.N_SAMPLES} samples, not divided")
        ax_g.plot(widths, self.medians[True], ls=(0, (4, 2)), lw=2.2, color="navy",
                  label=f"median of {self.N_SAMPLES} samples, divided")
        (self.dot,) = ax_g.plot([], [], "o", ms=11, mfc="none", mec="black", mew=2,
                                label="current setting")
        ax_g.set_xscale("log", base=2)
        ax_g.set_yscale("log")
        ax_g.set_ylim(floor / 2, 2.0)
        # Plain-text tick labels and no minor ticks: mathtext labels double the redraw time.
        ax_g.set_xticks(widths[::2], [str(w) for w in widths[::2]])
        ax_g.set_yticks([1e-15, 1e-10, 1e-5, 1.0], ["1e-15", "1e-10", "1e-5", "1"])
        ax_g.minorticks_off()
        ax_g.set_xlabel("head width d_k")
        ax_g.set_ylabel("norm of softmax Jacobian")
        ax_g.legend(fontsize=6.5, loc="lower left")
        self.figure.tight_layout(rect=(0, 0, 1, 0.93))

    def picture_key(self):
        # q and k are fixed at creation: the picture depends only on the two controls, a few
        # d_k values times two, so after one visit each is shown again without drawing.
        return (self.d_k_slider.value, self.divide_box.value)

    def compute(self):
        return self._scaling.scaling_state(self.q, self.k, self.d_k_slider.value,
                                           self.divide_box.value)

    def draw(self, state):
        for bar, w in zip(self.bars, state["weights"], strict=True):
            bar.set_height(w)
        self.dot.set_data([state["d_k"]], [max(state["jacobian_norm"], self.FLOOR)])
        how = "divided by sqrt(d_k)" if state["divide"] else "not divided"
        self.figure.suptitle(
            f"d_k = {state['d_k']}, scores {how}: largest weight {state['largest_weight']:.3f}",
            fontsize=10)

    def caption_text(self, state):
        how = "divided" if state["divide"] else "not divided"
        return (f"d_k={state['d_k']}, {how}: largest weight {state['largest_weight']:.3f}, "
                f"gradient size (Jacobian norm) {state['jacobian_norm']:.2g}")
