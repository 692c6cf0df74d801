"""Specification of the lesson-06 HeadExplorer and its compute function, driven as a
learner drives it: set a dropdown's value, read explorer.state and the caption."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import base64  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha import induction  # noqa: E402
from mha.widgets import HeadExplorer  # noqa: E402
from mha.widgets.heads import (  # noqa: E402
    FIGSIZE,
    MAX_LETTERS,
    SEQUENCES,
    clean_letters,
    head_state,
    induction_targets,
    repeat_block,
    sequence_letters,
)


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
        e.layer_box.value, e.head_box.value, e.removed_box.value = 1, 0, ()
        e.sequence_box.value = "MULTIHEAD twice"


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


def test_clean_letters_takes_capitals_and_drops_spaces():
    assert clean_letters("the cat") == "THECAT"


def test_clean_letters_refuses_what_the_model_cannot_read():
    with pytest.raises(ValueError, match="only the letters A-Z"):
        clean_letters("AB1")
    with pytest.raises(ValueError, match=f"type 2 to {MAX_LETTERS} letters"):
        clean_letters("A" * (MAX_LETTERS + 1))


def test_induction_targets_point_after_the_latest_earlier_copy():
    assert induction_targets("ABCAB") == [(3, 1), (4, 2)]
    assert induction_targets("ABAA") == [(2, 1), (3, 3)]  # latest earlier A is at 2
    assert induction_targets("ABC") == []


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


def test_dropdowns_offer_every_layer_head_sequence_and_head_to_remove(explorer):
    assert list(explorer.layer_box.options) == [0, 1]
    assert list(explorer.head_box.options) == [0, 1, 2, 3]
    assert list(explorer.sequence_box.options) == list(SEQUENCES)
    assert [v for _, v in explorer.removed_box.options] == [()] + [
        (layer, head) for layer in range(2) for head in range(4)]


def test_typed_letters_are_drawn_and_unselect_the_preset(explorer, model):
    explorer.letters_box.value = "abcab"
    assert explorer.state["labels"] == list("ABCAB") and explorer.sequence_box.value is None
    maps = model.attention_maps(induction.encode("ABCAB"))
    np.testing.assert_allclose(explorer.state["weights"], maps[1][0, 0].numpy(), rtol=1e-6)
    assert [t.get_text() for t in explorer.col_labels[:6]] == [*"ABCAB", ""]


def test_picking_a_preset_fills_the_letters_box(explorer):
    explorer.sequence_box.value = "random block twice (seed 0)"
    assert explorer.letters_box.value == sequence_letters("random block twice (seed 0)")


def test_letters_the_model_cannot_read_keep_the_picture_and_say_why(explorer):
    before = explorer.state["labels"]
    explorer.letters_box.value = "AB1"
    assert explorer.state["labels"] == before
    assert "Not drawn: only the letters A-Z" in explorer.caption.value


def test_removing_the_previous_token_head_breaks_the_induction_heads(explorer):
    intact = explorer.state["induction"]
    explorer.removed_box.value = (0, 0)
    assert intact > 0.9 and explorer.state["induction"] < 0.2
    assert "layer 0, head 0 removed" in explorer.caption.value


def test_removing_a_head_matches_without_head(explorer, model):
    explorer.removed_box.value, explorer.layer_box.value = (0, 2), 1
    cut = induction.without_head(model, 0, 2)
    expected = cut.attention_maps(induction.encode("MULTIHEAD" * 2))[1][0, 0].numpy()
    np.testing.assert_allclose(explorer.state["weights"], expected, rtol=1e-6)


def test_the_picture_has_its_natural_size_and_the_image_is_shown_at_it(explorer):
    import io

    from PIL import Image

    width, height = Image.open(io.BytesIO(explorer.png)).size
    assert (width, height) == (round(FIGSIZE[0] * 100), round(FIGSIZE[1] * 100))
    assert (explorer.image.layout.width, explorer.image.layout.height) == (
        f"{width}px", f"{height}px")


def test_every_head_has_its_picture_in_a_stack_of_layers_of_stacks_of_heads(explorer):
    for layer, stack in enumerate(explorer.pictures.children):
        for head, view in enumerate(stack.children):
            explorer.layer_box.value, explorer.head_box.value = layer, head
            assert view.children == (explorer.image, explorer.caption)
            assert explorer.image.value == b"data:image/webp;base64," + base64.b64encode(
                explorer.picture(layer, head))
            assert explorer.caption.value == explorer.caption_text(explorer.state)


def test_the_dropdowns_switch_the_stacks_in_the_browser(explorer):
    # jslink: the browser sets selected_index from the dropdown's index, no kernel round trip
    links = [(link.source, link.target) for link in explorer._links]
    assert links == [((explorer.layer_box, "index"), (explorer.pictures, "selected_index"))] + [
        ((explorer.head_box, "index"), (stack, "selected_index"))
        for stack in explorer.pictures.children]
    assert explorer.pictures.selected_index == 1
    assert {stack.selected_index for stack in explorer.pictures.children} == {0}


def test_every_heads_picture_differs(explorer):
    pictures = {explorer.picture(layer, head) for layer in range(2) for head in range(4)}
    assert len(pictures) == 8


def sent_pictures(explorer, act) -> list:
    """The (layer, head) of every picture sent to the browser while ``act()`` runs, in order."""
    sent = []
    watchers = {view: (lambda change, view=view: sent.append(view))
                for view in explorer._views}
    for view, watch in watchers.items():
        explorer._views[view][0].observe(watch, names="value")
    try:
        act()
    finally:
        for view, watch in watchers.items():
            explorer._views[view][0].unobserve(watch, names="value")
    return sent


def test_a_pick_sends_no_picture(explorer):
    def pick():
        explorer.head_box.value = 3
        explorer.layer_box.value = 0

    assert sent_pictures(explorer, pick) == []
    assert explorer.state["head"] == 3 and explorer.caption.value.startswith("layer 0, head 3")


def test_new_letters_send_every_picture_the_picked_one_first(explorer):
    explorer.head_box.value = 2

    def type_letters():
        explorer.letters_box.value = "ABCDABCD"

    sent = sent_pictures(explorer, type_letters)
    assert sent[0] == (1, 2) and sorted(sent) == sorted(explorer._views)


def test_letters_seen_before_bring_back_the_same_pictures(explorer):
    first = explorer.png
    explorer.sequence_box.value = "random block twice (seed 1)"
    explorer.sequence_box.value = "MULTIHEAD twice"
    assert explorer.png == first


def test_the_fast_render_matches_a_full_matplotlib_draw(explorer):
    import io

    from PIL import Image

    explorer.head_box.value = 2
    fast = np.asarray(Image.open(io.BytesIO(explorer.png)).convert("RGB")).astype(int)
    explorer.im.set_visible(True)
    buffer = io.BytesIO()
    explorer.figure.savefig(buffer, format="png", dpi=explorer.dpi)
    explorer.im.set_visible(False)
    full = np.asarray(Image.open(buffer).convert("RGB")).astype(int)
    differ = np.abs(fast - full).max(axis=2) > 0
    assert differ.mean() < 0.01  # cell edges may fall one pixel apart


def test_the_picture_has_a_title_and_a_colour_bar(explorer):
    assert explorer.title.get_text().startswith("layer 1, head 0")
    assert explorer.colorbar.vmin == 0.0 and explorer.colorbar.vmax == 1.0


def test_the_image_shows_the_chosen_heads_map(explorer, model):
    explorer.layer_box.value, explorer.head_box.value = 0, 3
    maps = model.attention_maps(induction.encode("MULTIHEAD" * 2))
    np.testing.assert_allclose(explorer.im.get_array()[np.tril_indices(18)],
                               maps[0][0, 3].numpy()[np.tril_indices(18)], rtol=1e-6)


def test_changing_the_sequence_relabels_the_axes(explorer):
    explorer.sequence_box.value = "random block twice (seed 1)"
    letters = sequence_letters("random block twice (seed 1)")
    assert [t.get_text() for t in explorer.col_labels[:18]] == list(letters)
    assert [t.get_text() for t in explorer.row_labels[:18]] == list(letters)
    assert {t.get_text() for t in explorer.col_labels[18:]} == {""}


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


def test_a_pick_shows_another_picture(explorer):
    before = explorer.png
    explorer.head_box.value = 1
    assert explorer.png != before
