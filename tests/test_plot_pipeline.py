"""What the map of the computation draws (mha.plot.computation_map)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from mha.plot import STAGE_NAMES, computation_map  # noqa: E402
from mha.plot.pipeline import OFF, ON  # noqa: E402


def _colour(patch):
    return to_hex(patch.get_facecolor())


def test_every_stage_gets_a_box():
    drawn = computation_map()
    assert set(drawn["boxes"]) == set(STAGE_NAMES)
    plt.close("all")


def test_highlighted_stages_are_coloured_and_the_rest_grey():
    drawn = computation_map(["scores", "softmax"])
    for name, box in drawn["boxes"].items():
        assert _colour(box) == (ON if name in ("scores", "softmax") else OFF), name
    plt.close("all")


def test_a_single_stage_name_is_accepted_as_a_string():
    assert computation_map("cache")["highlighted"] == ("cache",)
    plt.close("all")


def test_an_unknown_stage_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown stage.*the stages are input, projections"):
        computation_map("attention")


def test_the_main_row_runs_left_to_right_in_the_order_of_the_computation():
    boxes = computation_map()["boxes"]
    xs = [boxes[name].get_x() for name in STAGE_NAMES if name != "cache"]
    assert xs == sorted(xs)
    plt.close("all")
