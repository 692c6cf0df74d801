"""Curves: naive vs stable softmax, variance against d_k, weights as bars, gradient sizes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def naive_vs_stable(logits, shifts, ax=None, *, index=0, dtype=np.float64, title=None):
    """The weight of one entry of ``softmax(logits + c)`` against the shift ``c``.

    Two curves: the naive form ``exp(z) / sum(exp(z))`` and :func:`mha.softmax`
    (which subtracts the row maximum first), both computed in ``dtype``.
    Softmax is shift invariant, so the true curve is flat. The naive one is
    NaN where ``exp`` overflows (inf / inf) or every term underflows (0 / 0),
    shaded red, and finite but wrong (off by more than 100 units in the last
    place of ``dtype``) where some terms underflow, shaded orange.

    ``logits (n,)`` finite; ``shifts (m,)`` finite, increasing. Returns
    ``(ax, artists)``: ``artists["naive"]`` and ``artists["stable"]`` are
    ``Line2D`` (``get_ydata()`` = the weights drawn, NaN where the naive form
    broke); ``artists["nan spans"]`` and ``artists["wrong spans"]`` are the
    shaded spans (``Rectangle``). Refuses logits that are not 1-D or not
    finite, shifts that are not 1-D, finite and increasing, and an ``index``
    outside the logits.
    """
    from ..reference import softmax

    z = np.asarray(logits, dtype=dtype)
    c = np.asarray(shifts, dtype=np.float64)
    if z.ndim != 1 or z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError(
            f"naive_vs_stable needs finite 1-D logits (n,); got {np.asarray(logits)!r}."
        )
    if c.ndim != 1 or c.size < 2 or not np.all(np.isfinite(c)) or np.any(np.diff(c) <= 0):
        raise ValueError("shifts must be a finite, increasing 1-D array with at least two entries.")
    if not -z.size <= index < z.size:
        raise ValueError(f"index {index} is outside the {z.size} logits.")
    rows = z[None, :] + c[:, None].astype(dtype)  # (m, n): one shifted row per c
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = np.exp(rows)
        naive = (e / e.sum(axis=-1, keepdims=True))[:, index]  # (m,)
    stable = softmax(rows, axis=-1)[:, index]  # (m,)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.2))
    nan = np.isnan(naive)
    ulps = 100 * np.finfo(dtype).eps
    wrong = ~nan & ~np.isclose(naive, stable, rtol=ulps, atol=0)
    artists = {
        "nan spans": _shade_runs(ax, c, nan, "tab:red", "naive form: NaN"),
        "wrong spans": _shade_runs(ax, c, wrong, "tab:orange", "naive form: finite but wrong"),
        "stable": ax.plot(c, stable, color="tab:blue", lw=3,
                          label="mha.softmax (max subtracted)")[0],
        "naive": ax.plot(c, naive, color="black", lw=1.2, ls="--",
                         label="naive exp(z) / sum(exp(z))")[0],
    }
    ax.set_xlabel("shift c added to every logit")
    ax.set_ylabel(f"weight of entry {index}")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8, loc="lower center")
    ax.set_title(title or f"computed in {np.dtype(dtype).name}", fontsize=10)
    return ax, artists


def _shade_runs(ax, x, flags, color, label):
    """Shade each run of consecutive True ``flags``, out to the midpoints with its
    neighbours (so a single flagged sample still shows); return the spans."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(int), [0]])))
    mids = np.concatenate([[x[0]], (x[1:] + x[:-1]) / 2, [x[-1]]])  # (m + 1,)
    spans = []
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        spans.append(ax.axvspan(mids[start], mids[stop], color=color, alpha=0.2, lw=0,
                                label=None if spans else label))
    return spans


def variance_vs_width(d_k, raw, scaled, ax=None, *, title=None):
    """Log-log plot of the measured variance of ``q . k`` against ``d_k``.

    ``d_k, raw, scaled`` are ``(W,)`` (e.g. a :class:`mha.scaling.VarianceSample`).
    Draws the measured raw variance, the line ``y = d_k`` it should follow, and
    the variance after dividing by ``sqrt(d_k)`` with the line ``y = 1``.
    Returns ``(ax, artists)`` with keys ``"raw"``, ``"scaled"``, ``"d_k line"``
    and ``"one line"`` (``Line2D``; ``get_xydata()`` gives the points drawn).
    """
    d_k, raw, scaled = (np.asarray(a, dtype=float) for a in (d_k, raw, scaled))
    if not d_k.shape == raw.shape == scaled.shape or d_k.ndim != 1:
        raise ValueError(
            "d_k, raw and scaled must be 1-D of one length; "
            f"got {d_k.shape}, {raw.shape}, {scaled.shape}."
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(5.6, 3.8))
    artists = {
        "d_k line": ax.plot(d_k, d_k, color="0.6", lw=1.5, ls="--", label="y = d_k")[0],
        "one line": ax.plot(d_k, np.ones_like(d_k), color="0.6", lw=1.5, ls=":", label="y = 1")[0],
        "raw": ax.plot(d_k, raw, "o", color="tab:red", label="var(q.k), measured")[0],
        "scaled": ax.plot(d_k, scaled, "s", color="tab:blue",
                          label="var(q.k / sqrt(d_k)), measured")[0],
    }
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(d_k, [f"{d:g}" for d in d_k])
    top = max(raw.max(), scaled.max(), d_k.max())
    y_ticks = 4.0 ** np.arange(0, np.ceil(np.log(top) / np.log(4)) + 1)
    ax.set_yticks(y_ticks, [f"{y:g}" for y in y_ticks])
    ax.minorticks_off()
    ax.set_xlabel("head width d_k")
    ax.set_ylabel("variance of the score")
    ax.legend(fontsize=8, loc="upper left")
    if title:
        ax.set_title(title, fontsize=10)
    return ax, artists


def weight_bars(rows, ax=None, *, title=None, key_label="key j", ylim=(0.0, 1.0)):
    """Grouped bars: one group per key, one bar per labelled weight vector.

    ``rows`` maps a label to a weight vector ``(n,)``; all vectors have the
    same length. Returns ``(ax, containers)`` where ``containers[label]`` is
    the ``BarContainer`` of that row (bar heights = the weights drawn).
    ``ylim`` is the weight range shown (default the full 0..1).
    """
    rows = {label: np.asarray(w, dtype=float) for label, w in rows.items()}
    lengths = {w.shape for w in rows.values()}
    if not rows or len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise ValueError(
            f"weight_bars needs 1-D weight vectors of one length; got shapes {lengths}.")
    n = next(iter(rows.values())).size
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.0))
    width = 0.8 / len(rows)
    containers = {}
    for r, (label, w) in enumerate(rows.items()):
        x = np.arange(n) - 0.4 + width * (r + 0.5)
        containers[label] = ax.bar(x, w, width=width, label=label)
    ax.set_xticks(range(n))
    ax.set_xlabel(key_label)
    ax.set_ylabel("attention weight")
    ax.set_ylim(*ylim)
    ax.legend(fontsize=8, loc="upper right")
    if title:
        ax.set_title(title, fontsize=10)
    return ax, containers


def weights_vs_scale(scales, weights, ax=None, *, title=None, log=True):
    """The softmax curve: each key's weight against the score scale ``c``.

    ``scales (S,)`` strictly increasing; ``weights (S, n)``, row ``s`` the
    softmax of ``scales[s] * z``. The key that wins at the largest scale is
    drawn thick. ``log`` puts ``c`` on a log axis (needs ``c > 0``); with
    ``log=False`` the axis is linear. Returns ``(ax, lines)``, one ``Line2D``
    per key, in key order. Refuses shapes that do not match, rows that are
    not probabilities, and a scale <= 0 on a log axis.
    """
    scales, weights = np.asarray(scales, dtype=float), np.asarray(weights, dtype=float)
    if scales.ndim != 1 or np.any(np.diff(scales) <= 0):
        raise ValueError("scales must be 1-D and strictly increasing.")
    if log and np.any(scales <= 0):
        raise ValueError("a log axis needs scales > 0; pass log=False to include c = 0.")
    if weights.ndim != 2 or weights.shape[0] != scales.size:
        raise ValueError(f"weights must be (S, n) with S = {scales.size}; got {weights.shape}.")
    if np.any(weights < 0) or not np.allclose(weights.sum(axis=1), 1.0):
        raise ValueError("each row of weights must be a softmax output (>= 0, summing to 1).")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.0))
    winner = int(np.argmax(weights[-1]))
    lines = [ax.plot(scales, weights[:, j], lw=2.5 if j == winner else 1,
                     color="tab:blue" if j == winner else "0.6",
                     label=f"key {j} (wins)" if j == winner else None)[0]
             for j in range(weights.shape[1])]
    if log:
        ax.set_xscale("log")
    else:
        ax.set_xlim(scales[0], scales[-1])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("score scale c  (scores = c * z; temperature = 1 / c)")
    ax.set_ylabel("softmax weight")
    ax.legend(fontsize=8, loc="center left" if log else "upper right")
    if title:
        ax.set_title(title, fontsize=10)
    return ax, lines


def jacobian_norm_vs_scale(scales, norms, ax=None, *, marks=None, levels=None, title=None,
                           log=True):
    """Norm of the softmax Jacobian against the score scale ``c``.

    ``scales, norms (S,)``; ``marks`` maps a label to a point ``(c, norm)``
    to point out on the curve (compute it, e.g. with
    :func:`mha.scaling.jacobian_norm_curve`); ``levels`` maps a label to a
    height drawn as a dotted horizontal line (e.g. ``1/n``, the norm of
    uniform weights). ``log=True`` draws both axes on a log scale (the far
    range, where the norm falls by many orders of magnitude); ``log=False``
    draws them linear from 0, where the peak and the plateau are readable.
    Returns ``(ax, artists)``: ``artists["curve"]`` is the ``Line2D``,
    ``artists[label]`` the marker of each mark and the line of each level.
    """
    scales, norms = np.asarray(scales, dtype=float), np.asarray(norms, dtype=float)
    if scales.shape != norms.shape or scales.ndim != 1 or np.any(np.diff(scales) <= 0):
        raise ValueError("scales and norms must be 1-D of one length, scales strictly increasing.")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.6))
    artists = {"curve": ax.plot(scales, norms, color="tab:purple", lw=2)[0]}
    for label, y in (levels or {}).items():
        artists[label] = ax.axhline(y, color="0.4", ls=":", lw=1.2, label=label)
    for label, (c, y) in (marks or {}).items():
        artists[label] = ax.plot([c], [y], "o", ms=8, label=f"{label}: {y:.2g}")[0]
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.set_xlim(scales[0], scales[-1])
        ax.set_ylim(0, 1.15 * max(norms.max(), *(levels or {0: 0}).values()))
    ax.set_xlabel("score scale c  (scores = c * z; temperature = 1 / c)")
    ax.set_ylabel("norm of softmax Jacobian")
    if marks or levels:
        ax.legend(fontsize=8, loc="lower left" if log else "upper right")
    if title:
        ax.set_title(title, fontsize=10)
    return ax, artists


def score_slopes(loss, scores, grad, *, span=3.0, axes=None):
    """One panel per score: the loss as that score moves, and the tangent the gradient predicts.

    ``loss`` maps a 1-D score vector ``(n,)`` to a number; ``scores (n,)`` is
    the point; ``grad (n,)`` is the claimed ``dL/ds`` there. Panel ``j`` varies
    ``s_j`` over ``scores[j] +- span`` with the other scores held fixed and
    draws a straight line of slope ``grad[j]`` through the point: if the
    gradient is right, the line touches the curve there.

    Returns ``(fig, axes, curves, tangents)``; ``curves[j].get_data()`` is the
    loss along ``s_j`` and ``tangents[j].get_data()`` the drawn tangent.
    """
    s = np.asarray(scores, dtype=float)
    g = np.asarray(grad, dtype=float)
    if s.ndim != 1 or g.shape != s.shape:
        raise ValueError(f"scores and grad must be 1-D of one shape; got {s.shape} and {g.shape}.")
    if axes is None:
        fig, axes = plt.subplots(1, s.size, figsize=(3.2 * s.size, 2.8), sharey=True, squeeze=False)
        axes = axes[0]
    fig = axes[0].figure
    at = float(loss(s))
    curves, tangents = [], []
    for j, ax in enumerate(axes):
        xs = s[j] + np.linspace(-span, span, 121)
        ys = [float(loss(np.where(np.arange(s.size) == j, x, s))) for x in xs]
        curves.append(ax.plot(xs, ys, color="tab:blue", label="loss")[0])
        near = s[j] + np.array([-0.4, 0.4]) * span
        tangents.append(ax.plot(near, at + g[j] * (near - s[j]), color="tab:red", lw=2,
                                label=f"slope {g[j]:+.2f}")[0])
        ax.plot([s[j]], [at], "o", color="black", ms=5)
        ax.set_xlabel(f"s_{j} (other scores fixed)")
        ax.legend(loc="best", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("loss")
    return fig, axes, curves, tangents
