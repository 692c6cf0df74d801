"""Median redraw time of each lesson widget, driven as a learner drives it.

    .venv/bin/python benchmarks/widget_redraw.py

Sets each explorer's controls through their values (the same path a slider
drag or a click takes) and reports the median and maximum of
``explorer.redraw_seconds``. Measured, never asserted in `make test`.
"""

from __future__ import annotations

import statistics

from mha.widgets import MaskExplorer, ScalingExplorer, WeightedSumExplorer


def drive_weighted_sum(n):
    e = WeightedSumExplorer()
    for i in range(n):
        if i % 3 == 2:
            e.length_slider.value = [0.0, 1.5, 3.0, 6.0][i % 4]
        else:
            e.angle_slider.value = -180.0 + (35.0 * i) % 360.0
    return e


def drive_scaling(n):
    e = ScalingExplorer()
    options = list(e.d_k_slider.options)
    for i in range(n):
        if i % 5 == 4:
            e.divide_box.value = not e.divide_box.value
        else:
            e.d_k_slider.value = options[i % len(options)]
    return e


def drive_masks(n):
    e = MaskExplorer()
    presets = [p for p in e.preset.options if p != "custom"]
    buttons = [b for row in e.cells for b in row]
    for i in range(n):
        if i % 6 == 5:
            e.preset.value = presets[i % len(presets)]
        else:
            button = buttons[(7 * i) % len(buttons)]
            button.value = not button.value  # a click that would empty a row is reverted
    return e


def main(n: int = 40) -> None:
    for name, drive in [("WeightedSumExplorer (01)", drive_weighted_sum),
                        ("ScalingExplorer (03)", drive_scaling),
                        ("MaskExplorer (04)", drive_masks)]:
        e = drive(n)
        times = e.redraw_seconds[1:]  # the first is the initial draw
        median_ms, max_ms = 1000 * statistics.median(times), 1000 * max(times)
        print(f"{name:26s} n={len(times):3d}  median={median_ms:5.1f} ms  max={max_ms:5.1f} ms")


if __name__ == "__main__":
    main()
