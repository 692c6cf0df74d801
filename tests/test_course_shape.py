"""Every lesson is one sitting (docs/AUTHORING.md, "A lesson is one sitting").

The core path (every cell before ``## Going deeper``, the launch cells included)
holds at most 2,000 words of markdown (every token but inline and display math,
fenced code and tags included) and 50 cells; Going deeper says it is optional; cells that only pin
numbers are tagged ``check``; every lesson has a your-turn cell, a predict
prompt and, from lesson 01 on, opens with the map of the computation.
"""

from __future__ import annotations

import pytest
from course_shape import (
    LESSONS,
    MAX_CELLS,
    MAX_WORDS,
    core_cells,
    core_words,
    deeper_heading,
    load,
    only_pins,
    prose_words,
    source,
    tags,
    your_turn_pairs,
)

PARAMS = [pytest.param(p, id=p.name) for p in LESSONS]


@pytest.mark.parametrize("path", PARAMS)
def test_core_path_has_at_most_2000_words_of_prose(path):
    words = core_words(load(path))
    assert words <= MAX_WORDS, (
        f"{path.name}: the core path has {words} words of prose (> {MAX_WORDS})")


@pytest.mark.parametrize("path", PARAMS)
def test_core_path_has_at_most_50_cells(path):
    cells = len(core_cells(load(path)))
    assert cells <= MAX_CELLS, f"{path.name}: the core path has {cells} cells (> {MAX_CELLS})"


@pytest.mark.parametrize("path", PARAMS)
def test_going_deeper_says_it_is_optional(path):
    heading = deeper_heading(load(path))
    if heading is None:
        pytest.skip("no Going deeper section")
    text = source(heading).lower()
    assert "optional" in text and "relies on" in text, (
        f"{path.name}: the Going deeper heading must say in one line that no later lesson "
        "and no exercise set relies on it")


@pytest.mark.parametrize("path", PARAMS)
def test_cells_that_only_pin_numbers_are_tagged_check(path):
    nb = load(path)
    untagged = [i for i, c in enumerate(nb["cells"])
                if c["cell_type"] == "code" and only_pins(source(c)) and "check" not in tags(c)]
    assert not untagged, f"{path.name}: cells {untagged} only assert; tag them 'check'"


@pytest.mark.parametrize("path", PARAMS)
def test_check_cells_are_collapsed_and_print_nothing(path):
    nb = load(path)
    for index, cell in enumerate(nb["cells"]):
        if "check" in tags(cell):
            assert cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"), (
                f"{path.name} cell {index}: a check cell is shown collapsed (run make notebooks)")
            texts = [o for o in cell.get("outputs", []) if o.get("output_type") != "display_data"]
            assert not texts, f"{path.name} cell {index}: a check cell prints nothing"


@pytest.mark.parametrize("path", PARAMS)
def test_every_lesson_has_a_your_turn_cell_with_a_solution(path):
    pairs = your_turn_pairs(load(path))
    assert pairs, f"{path.name}: no code cell tagged 'your-turn'"
    for index, _stub, solution in pairs:
        assert solution.strip(), (f"{path.name} cell {index}: the next cell must be a <details> "
                                  "with <summary>Solution</summary> and one ```python block")


@pytest.mark.parametrize("path", PARAMS)
def test_every_lesson_asks_for_a_prediction(path):
    nb = load(path)
    prompts = [c for c in core_cells(nb)
               if c["cell_type"] == "markdown" and source(c).lstrip().startswith("**Predict.**")]
    assert prompts, f"{path.name}: no '**Predict.**' prompt in the core path"


@pytest.mark.parametrize("path", [p for p in PARAMS if not p.id.startswith("00_")])
def test_every_lesson_from_01_draws_the_map_of_the_computation(path):
    nb = load(path)
    code = [source(c) for c in core_cells(nb) if c["cell_type"] == "code"]
    assert any("computation_map(" in text for text in code), (
        f"{path.name}: the lesson opens with mha.plot.computation_map(...)")


def test_prose_words_leave_out_only_inline_math():
    text = ("The weights $w_j$ sum to 1:\n$$\\sum_j w_j = 1$$\n- <b>bold</b>\n"
            "```python\nx = 1\n```\n")
    # The weights sum to 1: | \sum_j w_j = 1 | - <b>bold</b> | ```python x = 1 ```
    assert prose_words(text) == 16


def test_only_pins_sees_asserts_and_their_continuation_lines():
    assert only_pins("assert x == 1\nnp.testing.assert_allclose(\n    a, b)\n")
    assert not only_pins("y = f(x)\nassert y == 1\n")
    assert not only_pins("# nothing\n")
