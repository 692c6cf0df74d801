"""Static pictures for the lessons (matplotlib, pyplot-based for notebooks).

Every function returns the matplotlib objects it made, so a lesson can
assert what the picture shows (e.g. the value in a heatmap cell) and not
only that it was drawn. Axes follow one rule: query ``i`` runs down, key
``j`` runs across.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def heatmap(matrix, ax=None, *, row_label="query i", col_label="key j", title=None,
            fmt=".2f", cmap="viridis", vmin=None, vmax=None, annotate=True,
            row_ticks=None, col_ticks=None):
    """Draw a 2-D matrix, rows = queries (down), columns = keys (across).

    ``matrix (Tq, Tk)``; ``-inf`` entries (masked scores) are drawn in grey
    and annotated ``-inf``. Returns ``(ax, image)``; ``image.get_array()``
    holds the values drawn, for assertions.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D (Tq, Tk) matrix; got shape {m.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * m.shape[1] + 1.8, 0.5 * m.shape[0] + 1.2))
    shown = np.ma.masked_invalid(np.where(np.isneginf(m), np.nan, m))
    colormap = plt.get_cmap(cmap).with_extremes(bad="0.85")  # masked cells in grey
    image = ax.imshow(shown, cmap=colormap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_xticks(range(m.shape[1]), col_ticks if col_ticks is not None else range(m.shape[1]))
    ax.set_yticks(range(m.shape[0]), row_ticks if row_ticks is not None else range(m.shape[0]))
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, fontsize=10, pad=28)
    if annotate:
        for (i, j), value in np.ndenumerate(m):
            text = "-inf" if np.isneginf(value) else format(value, fmt)
            color = "black" if np.isneginf(value) else _label_color(image, value)
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    return ax, image


def _label_color(image, value) -> str:
    """Black on light cells, white on dark ones, whatever the colormap."""
    red, green, blue, _ = image.cmap(image.norm(value))
    return "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"


# ---------------------------------------------------------------------------
# Lesson 01 pictures                         (section owned by lessons 00-01)
# ---------------------------------------------------------------------------
def mask_picture(mask, ax=None, *, title=None, row_label="query i", col_label="key j"):
    """Draw a boolean mask in the package convention (**True = blocked**).

    ``mask (Tq, Tk)`` bool. Blocked cells are dark and read ``True``;
    allowed cells are light and read ``False``. Rows are queries (down),
    columns keys (across). Returns ``(ax, image)``; ``image.get_array()``
    is the mask as 1 (blocked) / 0 (allowed). Refuses a non-boolean or
    non-2-D mask: a 0/1 or additive mask must be converted explicitly first.
    """
    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(f"mask_picture draws boolean masks (True = blocked); got dtype {m.dtype}.")
    if m.ndim != 2:
        raise ValueError(f"mask_picture needs a 2-D (Tq, Tk) mask; got shape {m.shape}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * m.shape[1] + 1.8, 0.5 * m.shape[0] + 1.2))
    image = ax.imshow(m.astype(float), cmap="Greys", vmin=-0.3, vmax=1.3, aspect="auto")
    for (i, j), blocked in np.ndenumerate(m):
        ax.text(j, i, str(bool(blocked)), ha="center", va="center", fontsize=8,
                color="white" if blocked else "black")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_xticks(range(m.shape[1]))
    ax.set_yticks(range(m.shape[0]))
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, fontsize=10, pad=28)
    return ax, image


def convex_hull_2d(points) -> np.ndarray:
    """Corners of the convex hull of 2-D ``points (n, 2)``, counter-clockwise.

    Andrew's monotone chain; collinear points on an edge are dropped, so two
    distinct points give a 2-corner "hull" (a segment). Used to draw hulls.
    """
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 2 or len(p) == 0:
        raise ValueError(f"convex_hull_2d needs points of shape (n, 2); got {p.shape}.")
    p = np.unique(p, axis=0)  # sorted by x, then y
    if len(p) <= 2:
        return p

    def turns_left(a, b, c):  # z of the cross product (b - a) x (c - a)
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) > 0

    def half(seq):
        chain = []
        for pt in seq:
            while len(chain) >= 2 and not turns_left(chain[-2], chain[-1], pt):
                chain.pop()
            chain.append(pt)
        return chain[:-1]

    return np.array(half(p) + half(p[::-1]))


def hull_picture(values, readouts, ax=None, *, value_names=None, title=None):
    """Values as labelled points, their convex hull shaded, read-outs on top.

    ``values (n, 2)``: the value vectors (two features, so they can be drawn).
    ``readouts``: a dict ``{label: (m, 2) array}``; each group is drawn in its
    own colour and named in the legend. Returns a dict of artists: ``"hull"``
    (a ``Polygon`` whose ``get_xy()`` are the hull corners, closed),
    ``"values"`` and one ``PathCollection`` per read-out label (their
    ``get_offsets()`` are the points drawn), and ``"ax"``.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != 2:
        raise ValueError(f"hull_picture draws 2-D values, shape (n, 2); got {v.shape}.")
    if not isinstance(readouts, dict):
        raise TypeError("readouts must be a dict {label: (m, 2) array}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 5.0), layout="constrained")
    names = value_names if value_names is not None else [f"v{j + 1}" for j in range(len(v))]
    if len(names) != len(v):
        raise ValueError(f"value_names has {len(names)} names for {len(v)} values.")
    corners = convex_hull_2d(v)
    artists = {"ax": ax}
    artists["hull"] = plt.Polygon(corners, closed=True, facecolor="0.9", edgecolor="0.55",
                                  lw=2, zorder=0, label="convex hull of the values")
    ax.add_patch(artists["hull"])
    artists["values"] = ax.scatter(v[:, 0], v[:, 1], s=70, color="tab:blue", zorder=3,
                                   label="values")
    for name, (x, y) in zip(names, v, strict=True):
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(7, 5), color="tab:blue")
    styles = [("tab:red", "o", 40), ("tab:orange", "X", 70), ("tab:purple", "s", 40)]
    for n, (label, points) in enumerate(readouts.items()):
        color, marker, size = styles[n % len(styles)]
        pts = np.asarray(points, dtype=float).reshape(-1, 2)
        small = len(pts) > 20
        artists[label] = ax.scatter(pts[:, 0], pts[:, 1], s=8 if small else size, marker=marker,
                                    color=color, alpha=0.6 if small else 1.0, zorder=4,
                                    label=label)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.margins(0.15)
    ax.set_xlabel("feature 0")
    ax.set_ylabel("feature 1")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return artists


# ---------------------------------------------------------------------------
# Lesson 02 pictures                         (section owned by lesson 02)
# ---------------------------------------------------------------------------
def scores_to_weights(scores, axes=None, *, row_ticks=None, col_ticks=None, title=None,
                      fmt=".2f"):
    """Two heatmaps side by side: scores ``S`` (left) and ``A = softmax(S)`` by row (right).

    ``scores (Tq, Tk)``, any real values; ``-inf`` (a masked score) is drawn
    grey and gets weight 0. The weights are computed here with
    :func:`mha.softmax` along the keys, so the picture cannot disagree with
    the math; each row's sum is written to the right of ``A``. The weights use
    a fixed colour scale from 0 to 1. ``axes``: an optional pair of axes.

    Returns a dict: ``"axes"`` (the two axes), ``"scores"`` and ``"weights"``
    (``AxesImage``; ``get_array()`` holds the values drawn) and ``"row sums"``
    (one ``Text`` per row). Refuses a matrix that is not 2-D, and every input
    :func:`mha.softmax` refuses (NaN, +inf, a fully masked row).
    """
    from .reference import softmax

    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(
            f"scores_to_weights needs a 2-D (Tq, Tk) score matrix; got shape {s.shape}."
        )
    a = softmax(s, axis=-1)  # (Tq, Tk), rows sum to 1
    if axes is None:
        width = 0.6 * s.shape[1] + 1.8
        _, axes = plt.subplots(1, 2, figsize=(2 * width + 1.2, 0.5 * s.shape[0] + 1.8),
                               layout="constrained")
    ax_s, ax_a = axes
    _, image_s = heatmap(s, ax_s, title="scores S", fmt=fmt, cmap="cividis",
                         row_ticks=row_ticks, col_ticks=col_ticks)
    _, image_a = heatmap(a, ax_a, title="weights A = softmax(S), row by row", fmt=fmt,
                         vmin=0.0, vmax=1.0, row_ticks=row_ticks, col_ticks=col_ticks)
    sums = [ax_a.text(s.shape[1] - 0.4, i, f"  row sum {total:{fmt}}", ha="left", va="center",
                      fontsize=8) for i, total in enumerate(a.sum(axis=-1))]
    if title:
        ax_s.figure.suptitle(title, fontsize=11)
    return {"axes": (ax_s, ax_a), "scores": image_s, "weights": image_a, "row sums": sums}


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
    from .reference import softmax

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


# ---------------------------------------------------------------------------
# Lesson 03 pictures                         (section owned by lesson 03)
# ---------------------------------------------------------------------------

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


def jacobian_norm_vs_scale(scales, norms, ax=None, *, marks=None, title=None):
    """Norm of the softmax Jacobian against the score scale ``c`` (log-log).

    ``scales, norms (S,)``; ``marks`` maps a label to a point ``(c, norm)``
    to point out on the curve (compute it, e.g. with
    :func:`mha.scaling.jacobian_norm_curve`). Returns
    ``(ax, artists)``: ``artists["curve"]`` is the ``Line2D`` and
    ``artists[label]`` the marker of each mark.
    """
    scales, norms = np.asarray(scales, dtype=float), np.asarray(norms, dtype=float)
    if scales.shape != norms.shape or scales.ndim != 1 or np.any(np.diff(scales) <= 0):
        raise ValueError("scales and norms must be 1-D of one length, scales strictly increasing.")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.6))
    artists = {"curve": ax.plot(scales, norms, color="tab:purple", lw=2)[0]}
    for label, (c, y) in (marks or {}).items():
        artists[label] = ax.plot([c], [y], "o", ms=8, label=f"{label}: {y:.2g}")[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("score scale c  (scores = c * z; temperature T = 1 / c)")
    ax.set_ylabel("norm of softmax Jacobian")
    if marks:
        ax.legend(fontsize=8, loc="lower left")
    if title:
        ax.set_title(title, fontsize=10)
    return ax, artists


# ---------------------------------------------------------------------------
# Lesson 04 pictures                         (section owned by lesson 04)
# ---------------------------------------------------------------------------
def mask_grid(mask, ax=None, *, title=None, labels="additive", row_label="query i",
              col_label="key j", row_ticks=None, col_ticks=None):
    """Draw a boolean mask (package convention, True = blocked) as a grid.

    ``mask (Tq, Tk)`` bool. Blocked cells are dark, allowed cells light.
    ``labels="additive"`` writes each cell's additive value (``0`` allowed,
    ``-inf`` blocked); ``"bool"`` writes ``True`` / ``False``; ``None`` writes
    nothing. Returns ``(ax, image)``; ``image.get_array()`` is the mask as
    0 / 1 (1 = blocked), for assertions.
    """
    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(f"mask_grid draws a boolean mask (True = blocked); got dtype {m.dtype}.")
    if m.ndim != 2:
        raise ValueError(f"mask_grid needs a 2-D (Tq, Tk) mask; got shape {m.shape}.")
    if labels not in ("additive", "bool", None):
        raise ValueError(f"labels must be 'additive', 'bool' or None; got {labels!r}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.5 * m.shape[1] + 1.6, 0.5 * m.shape[0] + 1.2))
    image = ax.imshow(m.astype(int), cmap="Greys", vmin=-0.25, vmax=1.25, aspect="equal")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_xticks(range(m.shape[1]), col_ticks if col_ticks is not None else range(m.shape[1]))
    ax.set_yticks(range(m.shape[0]), row_ticks if row_ticks is not None else range(m.shape[0]))
    ax.set_xticks(np.arange(m.shape[1] + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(m.shape[0] + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="0.6", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, fontsize=10, pad=28)
    if labels is not None:
        for (i, j), blocked in np.ndenumerate(m):
            if labels == "additive":
                text = "-inf" if blocked else "0"
            else:
                text = "True" if blocked else "False"
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="white" if blocked else "black")
    return ax, image


# ---------------------------------------------------------------------------
# Lesson 05 pictures                         (section owned by lesson 05)
# ---------------------------------------------------------------------------
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


def gradient_heatmaps(panels, mask=None, *, row_label="query i", col_label="key j"):
    """Heatmaps side by side, blocked cells hatched, one colour scale per panel.

    ``panels`` is a list of ``(title, matrix (Tq, Tk))``; a matrix with negative
    entries gets a diverging colour map centred on 0 (red positive, blue
    negative), a non-negative one (weights) ``viridis``. ``mask (Tq, Tk)``
    bool, True = blocked, is hatched on every panel.

    Returns ``(fig, axes, images)``; ``images[n].get_array()`` holds panel n's values.
    """
    mats = [np.asarray(m, dtype=float) for _, m in panels]
    if not mats or any(m.ndim != 2 or m.shape != mats[0].shape for m in mats):
        raise ValueError("gradient_heatmaps needs one or more 2-D matrices of one shape.")
    rows, cols = mats[0].shape
    fig, axes = plt.subplots(1, len(mats), figsize=(0.75 * cols * len(mats) + 1.2 * len(mats),
                                                     0.6 * rows + 1.6), squeeze=False)
    axes, images = axes[0], []
    for ax, (title, _), m in zip(axes, panels, mats, strict=True):
        bound = float(np.max(np.abs(m))) or 1.0
        diverging = bool(np.any(m < 0))
        style = ({"cmap": "RdBu_r", "vmin": -bound, "vmax": bound} if diverging
                 else {"cmap": "viridis", "vmin": 0.0, "vmax": bound})
        _, image = heatmap(m, ax, title=title, row_label=row_label, col_label=col_label,
                           annotate=False, **style)
        images.append(image)
        for (i, j), value in np.ndenumerate(m):
            # dark cells get white text: strong colours (diverging) or the low end of viridis
            dark = abs(value) > 0.6 * bound if diverging else value < 0.5 * bound
            ax.text(j, i, f"{value + 0.0:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
        if mask is not None:
            for i, j in zip(*np.nonzero(np.asarray(mask)), strict=True):
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                           edgecolor="0.6", lw=0, alpha=0.6))
    fig.tight_layout()
    return fig, axes, images
