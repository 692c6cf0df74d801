"""Specification of mha.plot.cache.cache_growth: the KV cache, one row per forward pass."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha.plot.cache import APPENDED, EMPTY, KEPT, cache_growth  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_each_row_keeps_the_earlier_positions_and_appends_the_new_one():
    states = np.asarray(cache_growth([3, 4, 5])["image"].get_array())
    assert states.tolist() == [[APPENDED] * 3 + [EMPTY] * 2,
                               [KEPT] * 3 + [APPENDED] + [EMPTY],
                               [KEPT] * 4 + [APPENDED]]


def test_a_chunk_of_several_tokens_appends_several_positions():
    states = cache_growth([2, 5])["states"]
    assert (states[1] == APPENDED).sum() == 3 and (states[1] == KEPT).sum() == 2


def test_rows_are_labelled_with_what_each_pass_fed():
    ax = cache_growth([3, 4, 6])["ax"]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "prefill, 3 tokens", "step 1", "step 2, 2 tokens"]


def test_each_row_names_the_shape_of_the_cached_keys():
    texts = [t.get_text().strip() for t in cache_growth([3, 4])["ax"].texts]
    assert texts == ["K, V: (B, H_kv, 3, dh)", "K, V: (B, H_kv, 4, dh)"]


def test_the_legend_names_the_three_states():
    legend = cache_growth([1, 2])["ax"].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        "not computed yet", "kept from earlier steps (read, never recomputed)",
        "appended by this step"]


@pytest.mark.parametrize("lengths", [[], [0, 1], [3, 3], [4, 2]])
def test_lengths_that_do_not_grow_are_refused(lengths):
    with pytest.raises(ValueError, match="increase at every pass"):
        cache_growth(lengths)
