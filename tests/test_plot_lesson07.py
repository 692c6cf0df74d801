"""Specifications of the lesson 07 picture in mha.plot.tables: the bars show the table."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha.plot.tables import FLOOR, difference_bars  # noqa: E402

TABLE = {"float32": {"sdpa": 1.2e-7, "nn": 2.4e-7, "sum": 0.5},
         "float64": {"sdpa": 2.2e-16, "nn": 0.0, "sum": 0.5}}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_one_bar_per_column_and_row_with_the_tables_heights():
    drawn = difference_bars(TABLE, rows=["sdpa", "nn"])
    heights = {c: [r.get_height() for r in bars] for c, bars in drawn["bars"].items()}
    assert heights["float32"] == [1.2e-7, 2.4e-7]
    assert heights["float64"][0] == 2.2e-16


def test_an_exact_zero_sits_on_the_floor_and_is_labelled_zero():
    drawn = difference_bars(TABLE, rows=["sdpa", "nn"])
    assert drawn["bars"]["float64"][1].get_height() == FLOOR
    assert [t.get_text() for t in drawn["zeros"]] == ["0"]


def test_rows_default_to_every_row_of_the_first_column():
    drawn = difference_bars(TABLE)
    assert [t.get_text() for t in drawn["ax"].get_xticklabels()] == ["sdpa", "nn", "sum"]


def test_the_axis_is_logarithmic_and_labelled():
    ax = difference_bars(TABLE)["ax"]
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "max |difference|"


def test_machine_epsilons_are_drawn_as_horizontal_lines():
    eps = {"float32 eps": float(np.finfo(np.float32).eps)}
    line = difference_bars(TABLE, eps=eps)["lines"]["float32 eps"]
    assert list(line.get_ydata()) == [eps["float32 eps"]] * 2


def test_negative_differences_are_refused():
    with pytest.raises(ValueError, match="finite values >= 0"):
        difference_bars({"a": {"r": -1.0}})


def test_long_row_names_wrap_onto_several_lines():
    name = "nn.MultiheadAttention, need_weights=False"
    ax = difference_bars({"a": {name: 1e-7}})["ax"]
    assert ax.get_xticklabels()[0].get_text() == "nn.MultiheadAttention,\nneed_weights=False"
