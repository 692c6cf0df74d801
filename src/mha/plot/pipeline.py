"""The map of the whole computation, one box per step, drawn for every lesson.

Lesson 01 introduces it and every later lesson opens with it, its own steps
highlighted, so a learner always sees where the lesson's piece sits:

    x -> Q, K, V -> Q K^T -> S = Q K^T / sqrt(d_k) -> mask -> softmax -> A V -> heads -> W_O
                 \\-> KV cache (past keys and values) --/
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

# (stage name, label drawn in the box), left to right along the main row
STAGES = (
    ("input", "$x$\ntokens as\nvectors"),
    ("projections", "$Q, K, V$\nfrom $x$ by\n$W_Q, W_K, W_V$"),
    ("scores", "$QK^\\top$\none dot\nproduct per\nquery, key"),
    ("scale", "$S=QK^\\top\\!/\\sqrt{d_k}$\nthe scores,\nkept in range"),
    ("mask", "mask\nblocked score\nbecomes $-\\infty$"),
    ("softmax", "$A = $ softmax\neach row\nsums to 1"),
    ("readout", "$AV$\nweighted sum\nof values"),
    ("heads", "$H$ heads each\nrun the steps;\nconcatenated"),
    ("output", "$W_O$\nmixes the\nheads, back to\nwidth $C$"),
)
CACHE = ("cache", "KV cache: keys and values\nof earlier positions, reused")
STAGE_NAMES = tuple(name for name, _ in STAGES) + (CACHE[0],)

ON, OFF = "#fdd49e", "#f0f0f0"  # highlighted box, other box
EDGE_ON, EDGE_OFF = "#d94801", "#b0b0b0"


def computation_map(highlight=(), *, ax=None, title=None):
    """Draw the steps of attention from input to output, ``highlight`` in colour.

    ``highlight``: a stage name or an iterable of them, from
    ``STAGE_NAMES`` = input, projections, scores, scale, mask, softmax,
    readout, heads, output, cache. Refuses an unknown name (and lists the
    known ones). Returns a dict: ``"ax"``, ``"boxes"`` (stage name ->
    ``FancyBboxPatch``) and ``"highlighted"`` (the tuple of names drawn in
    colour), so tests can check what was drawn.
    """
    chosen = (highlight,) if isinstance(highlight, str) else tuple(highlight)
    unknown = [h for h in chosen if h not in STAGE_NAMES]
    if unknown:
        raise ValueError(f"computation_map: unknown stage(s) {unknown}; "
                         f"the stages are {', '.join(STAGE_NAMES)}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(13, 3.0))
    width, height, gap = 1.3, 1.1, 0.3
    boxes, centers = {}, {}
    for index, (name, label) in enumerate(STAGES):
        x = index * (width + gap)
        boxes[name] = _box(ax, x, 1.0, width, height, label, name in chosen)
        centers[name] = (x, x + width)
    for (left, _), (right, _) in zip(STAGES, STAGES[1:], strict=False):
        _arrow(ax, (centers[left][1], 1.0 + height / 2), (centers[right][0], 1.0 + height / 2))
    # the cache sits under the steps it feeds: it stores K and V, the scores and A V read it
    x0 = centers["projections"][0]
    x1 = centers["readout"][1]
    boxes["cache"] = _box(ax, x0 + 0.6, -0.35, x1 - x0 - 1.2, 0.62, CACHE[1], "cache" in chosen)
    mid_p = sum(centers["projections"]) / 2
    _arrow(ax, (mid_p, 1.0), (mid_p, 0.27), dashed=True)
    for target in ("scores", "readout"):
        mid = sum(centers[target]) / 2
        _arrow(ax, (mid, 0.27), (mid, 1.0), dashed=True)
    ax.set_xlim(-0.1, centers["output"][1] + 0.1)
    ax.set_ylim(-0.45, 2.25)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title or _default_title(chosen), fontsize=11)
    return {"ax": ax, "boxes": boxes, "highlighted": chosen}


def _box(ax, x, y, w, h, label, on):
    patch = FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                           facecolor=ON if on else OFF, edgecolor=EDGE_ON if on else EDGE_OFF,
                           linewidth=2.0 if on else 1.0)
    ax.add_patch(patch)
    ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=8,
            color="black" if on else "#666666")
    return patch


def _arrow(ax, start, end, dashed=False):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=11,
                                 color="#777777", linewidth=1.0,
                                 linestyle="--" if dashed else "-"))


def _default_title(chosen) -> str:
    if not chosen:
        return "Attention, step by step: this series builds each box"
    return "Where this lesson sits: " + ", ".join(chosen) + " (in colour)"
