"""Specs of the Explorer base class every lesson widget is built on."""

from __future__ import annotations

import base64
import threading
import time

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
    assert e.png.startswith(b"\x89PNG")
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
    assert base64.b64decode(bundle["image/png"]) == e.png
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_an_explorer_must_implement_compute():
    class Empty(Explorer):
        pass

    with pytest.raises(NotImplementedError):
        Empty([])


class CountingDoubler(Doubler):
    """A Doubler that counts how many redraws are between compute and caption at once,
    and is slow enough in between that two unserialised threads would overlap."""

    def __init__(self):
        self.inside, self.most_inside = 0, 0
        super().__init__()

    def compute(self):
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        time.sleep(0.002)
        return super().compute()

    def caption_text(self, state):
        self.inside -= 1
        return super().caption_text(state)


def change_from_two_threads(explorer, set_a, set_b, times: int = 15) -> None:
    """Call ``set_a`` and ``set_b`` ``times`` times each, from two threads at once (as
    ipykernel 7.3 does: a cell on the main thread, the browser's comm messages on another)."""
    threads = [threading.Thread(target=lambda f=f: [f(k) for k in range(times)])
               for f in (set_a, set_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_redraws_asked_for_from_two_threads_run_one_at_a_time():
    e = CountingDoubler()
    change_from_two_threads(e, lambda k: setattr(e.slider, "value", k % 6),
                            lambda k: e.redraw())
    assert e.most_inside == 1


def test_after_changes_from_two_threads_the_picture_shows_the_last_values():
    from mha.widgets import WeightedSumExplorer

    e = WeightedSumExplorer()
    change_from_two_threads(e, lambda k: setattr(e.angle_slider, "value", -90.0 + 5 * k),
                            lambda k: setattr(e.length_slider, "value", 0.5 + 0.25 * k))
    fresh = WeightedSumExplorer(angle=e.angle_slider.value, length=e.length_slider.value)
    assert e.state["query"].tolist() == fresh.state["query"].tolist()
    assert e.png == fresh.png


class BlittedDoubler(Doubler):
    """The Doubler, naming its one moving artist: redraws paste the background back."""

    def animated_artists(self):
        return [self.line]


def test_an_explorer_naming_its_moving_artists_draws_the_same_picture():
    # The same picture up to stacking order: the moving line is pasted over the axes' frame
    # where a full draw puts it under; a few pixels where the two cross may differ.
    import io

    import numpy as np
    from PIL import Image

    def pixels(e):
        return np.asarray(Image.open(io.BytesIO(e.png)).convert("RGB"), int)

    blitted, full = BlittedDoubler(), Doubler()
    for value in (3, 0, 5):
        blitted.slider.value = full.slider.value = value
        differ = np.abs(pixels(blitted) - pixels(full)).max(axis=2) > 0
        assert differ.mean() < 0.01, differ.mean()
    assert blitted.state == full.state


def test_png_bytes_round_trip_through_pillow():
    import io

    import numpy as np
    from PIL import Image

    from mha.widgets.explorer import png_bytes

    rgba = np.random.default_rng(0).integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(png_bytes(rgba))).convert("RGB"))
    np.testing.assert_array_equal(decoded, rgba[..., :3])


def test_png_bytes_refuses_an_array_that_is_not_rgba_uint8():
    import numpy as np

    from mha.widgets.explorer import png_bytes

    with pytest.raises(ValueError, match="uint8"):
        png_bytes(np.zeros((4, 4, 3), dtype=np.uint8))


def test_the_image_is_laid_out_at_its_natural_width():
    e = Doubler()
    assert e.image.layout.width == f"{e.image_size[0]}px" == "200px"


def test_the_image_shows_the_png_as_a_data_url():
    # A data: URL shows sooner in the browser than PNG bytes (which become a blob: URL).
    e = Doubler()
    assert e.image.format == "url"
    assert e.image.value == b"data:image/png;base64," + base64.b64encode(e.png)


def test_a_picture_seen_before_is_shown_again_without_rendering():
    from mha.widgets import WeightedSumExplorer

    e = WeightedSumExplorer()
    e.wait_for_prefetch()
    e.prefetch = False  # 40 would otherwise be drawn ahead, as 35's neighbour
    renders = []
    render = e._render_png
    e._render_png = lambda: renders.append(1) or render()
    e.angle_slider.value = 35.0
    first = e.png
    e.angle_slider.value = 40.0
    e.angle_slider.value = 35.0
    assert len(renders) == 2 and e.png == first
    assert e.caption.value.startswith("query [0.90, 0.63]")  # the caption follows too


def test_an_explorer_without_a_picture_key_renders_every_time():
    e = Doubler()
    renders = []
    render = e._render_png
    e._render_png = lambda: renders.append(1) or render()
    for value in (3, 4, 3):
        e.slider.value = value
    assert len(renders) == 3


def test_stamped_moving_texts_look_like_matplotlibs_own_drawing():
    # Moving texts are pasted from pixels drawn once per string at a whole-pixel anchor:
    # against matplotlib drawing the same moving artists itself only a few edge pixels differ
    # by more than 160 of 255 (3-11 here; a stamp one pixel too low: 166).
    import io

    import numpy as np
    from PIL import Image

    from mha.widgets import WeightedSumExplorer

    e = WeightedSumExplorer()
    canvas = e.figure.canvas
    for angle in (35.0, 40.0, 35.0):  # the second 35 reuses the stamps the first drew
        e.angle_slider.value = angle
        stamped = np.asarray(Image.open(io.BytesIO(e.png)).convert("RGB"), int)
        canvas.restore_region(e._background)
        for artist in e.animated_artists():
            e.figure.draw_artist(artist)
        drawn = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)
        differ = np.abs(stamped - drawn).max(axis=2) > 160
        assert differ.sum() < 40, differ.sum()
