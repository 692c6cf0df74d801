"""Specs of the Explorer base class every lesson widget is built on."""

from __future__ import annotations

import base64

import ipywidgets as widgets
import pytest

from mha.widgets import Explorer


class Doubler(Explorer):
    """The smallest explorer: one slider, a line whose height is twice the value."""

    def __init__(self):
        self.slider = widgets.IntSlider(value=1, min=0, max=5)
        super().__init__([self.slider], figsize=(2, 2))

    def setup_figure(self):
        self.ax = self.figure.add_subplot()
        (self.line,) = self.ax.plot([0, 1], [0, 0])
        self.ax.set_ylim(0, 10)

    def compute(self):
        return {"double": 2 * self.slider.value}

    def draw(self, state):
        self.line.set_ydata([state["double"]] * 2)

    def caption_text(self, state):
        return f"double = {state['double']}"


def test_explorer_computes_and_draws_once_on_creation():
    e = Doubler()
    assert e.state == {"double": 2}
    assert bytes(e.image.value).startswith(b"\x89PNG")
    assert len(e.redraw_seconds) == 1


def test_moving_a_control_recomputes_redraws_and_recaptions():
    e = Doubler()
    before = e.image.value
    e.slider.value = 4
    assert e.state == {"double": 8}
    assert e.image.value != before
    assert e.caption.value == "double = 8"
    assert len(e.redraw_seconds) == 2


def test_display_bundle_has_the_widget_a_png_fallback_and_stable_text():
    e = Doubler()
    bundle = e._repr_mimebundle_()
    assert bundle["text/plain"] == "Doubler: double = 2"
    assert base64.b64decode(bundle["image/png"]) == bytes(e.image.value)
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_an_explorer_must_implement_compute():
    class Empty(Explorer):
        pass

    with pytest.raises(NotImplementedError):
        Empty([])
