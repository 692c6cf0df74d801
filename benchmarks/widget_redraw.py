"""Median redraw time of each lesson widget, driven as a learner drives it.

    .venv/bin/python benchmarks/widget_redraw.py

Sets each explorer's controls through their values (the same path a slider
drag or a click takes) and reports the median and maximum of
``explorer.redraw_seconds``. Measured, never asserted in `make test`.
"""

from __future__ import annotations

import statistics

from mha.widgets import HeadExplorer, MaskExplorer, ScalingExplorer, WeightedSumExplorer


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


def drive_heads(n):
    e = HeadExplorer()
    sequences = list(e.sequence_box.options)
    for i in range(n):
        if i % 4 == 3:
            e.sequence_box.value = sequences[(i // 4 + 1) % len(sequences)]
        elif i % 4 == 2:
            e.layer_box.value = 1 - e.layer_box.value
        else:
            e.head_box.value = (e.head_box.value + 1) % len(e.head_box.options)
    return e


# One driver per explorer class; tests/test_benchmarks.py checks that every explorer in
# mha.widgets has one, so a new widget cannot go unmeasured.
DRIVERS = {
    WeightedSumExplorer: ("WeightedSumExplorer (01)", drive_weighted_sum),
    ScalingExplorer: ("ScalingExplorer (03)", drive_scaling),
    MaskExplorer: ("MaskExplorer (04)", drive_masks),
    HeadExplorer: ("HeadExplorer (06)", drive_heads),
}


def measure(n: int = 40) -> list[dict]:
    """Median and maximum redraw (ms) of each explorer over ``n`` control changes."""
    rows = []
    for name, drive in DRIVERS.values():
        times = drive(n).redraw_seconds[1:]  # the first is the initial draw
        rows.append({"widget": name, "n": len(times),
                     "median_ms": 1000 * statistics.median(times), "max_ms": 1000 * max(times)})
    return rows


def main(n: int = 40) -> None:
    for row in measure(n):
        print(f"{row['widget']:26s} n={row['n']:3d}  median={row['median_ms']:5.1f} ms  "
              f"max={row['max_ms']:5.1f} ms")


if __name__ == "__main__":
    main()
