"""Specification of the lesson-06 HeadExplorer and its compute function, driven as a
learner drives it: set a dropdown's value, read explorer.state and the caption."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha import induction  # noqa: E402
from mha.widgets import HeadExplorer  # noqa: E402
from mha.widgets.heads import SEQUENCES, head_state, repeat_block, sequence_letters  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return induction.load_trained("induction_2l_4h")


@pytest.fixture(scope="module")
def explorer(model):
    return HeadExplorer(model)


@pytest.fixture(autouse=True)
def restore_defaults(request):
    yield
    if "explorer" in request.fixturenames:
        e = request.getfixturevalue("explorer")
        e.layer_box.value, e.head_box.value, e.sequence_box.value = 1, 0, "MULTIHEAD twice"


# -- the plain functions --------------------------------------------------------------------
def test_every_sequence_has_18_letters():
    assert all(len(sequence_letters(name)) == 18 for name in SEQUENCES)


def test_generated_sequences_repeat_for_their_seed():
    assert sequence_letters("random block twice (seed 0)") == sequence_letters(
        "random block twice (seed 0)")
    assert sequence_letters("random block twice (seed 0)") != sequence_letters(
        "random block twice (seed 1)")


def test_the_no_repeat_sequence_has_18_distinct_letters():
    assert len(set(sequence_letters("18 letters, no repeat (seed 2)"))) == 18


def test_sequence_letters_refuses_an_unknown_name():
    with pytest.raises(ValueError, match="unknown sequence"):
        sequence_letters("HELLO")


def test_repeat_block_finds_the_block_length_or_none():
    assert repeat_block("ABCABC") == 3
    assert repeat_block("ABCABD") is None and repeat_block("AA") is None


def test_head_state_marks_the_cells_after_the_earlier_copy(model):
    text = "MULTIHEAD" * 2
    state = head_state(model.attention_maps(induction.encode(text)), text, 1, 0)
    assert state["block"] == 9 and state["targets"][0] == (9, 1)  # second M -> first U
    assert len(state["targets"]) == 9 and state["labels"] == list(text)


def test_head_state_scores_match_head_scores(model):
    text = "MULTIHEAD" * 2
    maps = model.attention_maps(induction.encode(text))
    expected = induction.head_scores(maps[1], 9)
    state = head_state(maps, text, 1, 2)
    assert state["induction"] == pytest.approx(expected["induction"][2])
    assert state["previous"] == pytest.approx(expected["previous"][2])


def test_head_state_has_no_induction_score_without_a_repeat(model):
    text = sequence_letters("18 letters, no repeat (seed 2)")
    state = head_state(model.attention_maps(induction.encode(text)), text, 1, 0)
    assert state["induction"] is None and state["targets"] == []


def test_head_state_refuses_a_head_out_of_range(model):
    text = "MULTIHEAD" * 2
    with pytest.raises(ValueError, match="no head"):
        head_state(model.attention_maps(induction.encode(text)), text, 0, 4)


# -- the explorer ---------------------------------------------------------------------------
def test_default_is_layer_1_head_0_on_multihead_twice(explorer):
    assert (explorer.state["layer"], explorer.state["head"]) == (1, 0)
    assert "".join(explorer.state["labels"]) == "MULTIHEAD" * 2


def test_dropdowns_offer_every_layer_head_and_sequence(explorer):
    assert list(explorer.layer_box.options) == [0, 1]
    assert list(explorer.head_box.options) == [0, 1, 2, 3]
    assert list(explorer.sequence_box.options) == list(SEQUENCES)


def test_the_image_shows_the_chosen_heads_map(explorer, model):
    explorer.layer_box.value, explorer.head_box.value = 0, 3
    maps = model.attention_maps(induction.encode("MULTIHEAD" * 2))
    np.testing.assert_allclose(explorer.im.get_array()[np.tril_indices(18)],
                               maps[0][0, 3].numpy()[np.tril_indices(18)], rtol=1e-6)


def test_changing_the_sequence_relabels_the_axes(explorer):
    explorer.sequence_box.value = "random block twice (seed 1)"
    letters = sequence_letters("random block twice (seed 1)")
    assert [t.get_text() for t in explorer.col_labels] == list(letters)
    assert [t.get_text() for t in explorer.row_labels] == list(letters)


def test_markers_sit_on_the_induction_targets_and_vanish_without_a_repeat(explorer):
    xs, ys = explorer.marks.get_data()
    assert list(zip(ys, xs, strict=True)) == explorer.state["targets"]
    explorer.sequence_box.value = "18 letters, no repeat (seed 2)"
    assert len(explorer.marks.get_data()[0]) == 0


def test_layer_0_head_0_is_the_previous_token_head(explorer):
    explorer.layer_box.value = 0
    assert explorer.state["previous"] > 0.75


def test_every_layer_1_head_is_an_induction_head_on_multihead_twice(explorer):
    for head in range(4):
        explorer.head_box.value = head
        assert explorer.state["induction"] > 0.85


def test_caption_is_stable_text(explorer):
    assert explorer.summary() == (
        "HeadExplorer: layer 1, head 0: previous-token score 0.00, induction score 0.96")
    explorer.sequence_box.value = "18 letters, no repeat (seed 2)"
    assert explorer.caption.value.endswith("no repeat in the input")


def test_a_redraw_changes_the_image(explorer):
    before = explorer.image.value
    explorer.head_box.value = 1
    assert explorer.image.value != before
