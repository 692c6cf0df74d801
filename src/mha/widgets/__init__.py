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
``explorer.png`` (the PNG bytes of what is shown; ``explorer.image`` holds them as a
``data:`` URL, which the browser shows sooner than bytes).
"""

from __future__ import annotations

from .explorer import Explorer
from .heads import HeadExplorer as HeadExplorer  # lesson 06
from .masks import MASK_PRESETS, MaskExplorer, mask_before_vs_after, mask_preset
from .scaling import ScalingExplorer
from .weighted_sum import WeightedSumExplorer, weighted_sum_readout

__all__ = [
    "Explorer",
    "MASK_PRESETS",
    "MaskExplorer",
    "ScalingExplorer",
    "WeightedSumExplorer",
    "mask_before_vs_after",
    "mask_preset",
    "weighted_sum_readout",
]
