"""The static decks of `make slides`, as a lecturer presents them: every slide of every
deck at 1280 x 720 in headless Chromium.

The decks are exported once (tools/slides.py --export, into build/test-slides; the npm
packages are fetched once into build/slides-npm) and served from 127.0.0.1. Each deck
is walked slide by slide with reveal.js's own API; on each slide, every element that is
drawn (MathJax's hidden MathML and a closed answer's body excepted) must end inside
the 1280 x 720 slide, and no element may cut its content with a scroll bar. A failing
slide is saved as a screenshot in test-artifacts/browser/.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import launch  # noqa: E402
import slides  # noqa: E402

OUT = ROOT / "build" / "test-slides"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
LESSONS = slides.lessons()
WIDTH, HEIGHT = slides.SLIDE_WIDTH, slides.SLIDE_HEIGHT

# Where each drawn element of the present slide ends (slide pixels), and which elements cut
# their content (a scroll bar a lecturer would have to drag).
MEASURE = r"""([width, height]) => {
    const slide = Reveal.getCurrentSlide();
    const box = slide.getBoundingClientRect();
    const scale = Reveal.getScale();
    const problems = [];
    const hidden = '.MJX_Assistive_MathML, script, style, details:not([open]) > :not(summary)';
    for (const el of slide.querySelectorAll('*')) {
        if (el.closest(hidden)) continue;
        const b = el.getBoundingClientRect();
        if (b.width === 0 || b.height === 0) continue;
        const right = (b.right - box.left) / scale, bottom = (b.bottom - box.top) / scale;
        const name = `${el.tagName.toLowerCase()}.${String(el.className).split(' ')[0]}`;
        if (bottom > height + 1 || right > width + 1) {
            problems.push(`${name} ends at ${Math.round(right)} x ${Math.round(bottom)}`);
        }
        const style = getComputedStyle(el);
        const clips = v => v === 'auto' || v === 'scroll' || v === 'hidden';
        if (el.tagName !== 'SECTION' && clips(style.overflowX)
                && el.scrollWidth > el.clientWidth + 1) {
            problems.push(`${name} cuts ${el.scrollWidth - el.clientWidth} px of width`);
        }
        if (el.tagName !== 'SECTION' && clips(style.overflowY)
                && el.scrollHeight > el.clientHeight + 1) {
            problems.push(`${name} cuts ${el.scrollHeight - el.clientHeight} px of height`);
        }
    }
    return {problems: problems.slice(0, 3), text: slide.innerText.trim().slice(0, 50)};
}"""
MATHJAX_IDLE = """() => !window.MathJax || !MathJax.Hub || !MathJax.Hub.queue
    || (MathJax.Hub.queue.running === 0 && MathJax.Hub.queue.pending === 0)"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def decks():
    """Every lesson's deck, exported as `make slides` does and served on 127.0.0.1."""
    paths = slides.export(LESSONS, OUT)
    handler = functools.partial(Quiet, directory=str(OUT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {p.name: f"http://127.0.0.1:{server.server_port}/{p.name}" for p in paths}
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def deck_page(chromium, url: str):
    """A 1280 x 720 page showing the deck at ``url``, typeset; records requests and errors."""
    context = chromium.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.requests, page.bad_responses, page.errors = [], [], []
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("response", lambda r: r.status >= 400 and page.bad_responses.append(
        f"{r.status} {r.url}"))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    try:
        page.goto(url)
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=60_000)
        page.wait_for_function(MATHJAX_IDLE, timeout=60_000)
        yield page
    finally:
        context.close()


def show(page, indices) -> None:
    page.evaluate("([h, v]) => Reveal.slide(h, v)", [indices["h"], indices.get("v") or 0])
    page.wait_for_function(MATHJAX_IDLE, timeout=30_000)


def screenshot(page, name: str) -> str:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    page.screenshot(path=str(path))
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_slide_fits_1280_by_720(decks, chromium, lesson):
    name = lesson.stem + ".slides.html"
    failures = []
    with deck_page(chromium, decks[name]) as page:
        every = page.evaluate("() => Reveal.getSlides().map(s => Reveal.getIndices(s))")
        assert len(every) >= 3, f"{name} has {len(every)} slides"
        for number, indices in enumerate(every, 1):
            show(page, indices)
            found = page.evaluate(MEASURE, [WIDTH, HEIGHT])
            if found["problems"]:
                shot = screenshot(page, f"slides-{lesson.stem}-{number:02d}.png")
                failures.append(f"slide {number} {found['text']!r}: "
                                f"{'; '.join(found['problems'])} (screenshot {shot})")
        assert page.errors == [], page.errors
        assert page.bad_responses == [], page.bad_responses
    assert not failures, f"{name}: {len(failures)} of {len(every)} slides overflow:\n" + \
        "\n".join(failures)


# What the present slide draws of code (issue 19): code cells shown, lines of code and printed
# output as drawn (wrapped lines counted), the smallest font of those, lines of prose.
READABLE = r"""() => {
    const slide = Reveal.getCurrentSlide();
    const drawn = el => el.getBoundingClientRect().height > 0
        && !el.closest('details:not([open]) > :not(summary)');
    const lines = el => {
        const style = getComputedStyle(el);
        const inner = el.clientHeight - parseFloat(style.paddingTop)
            - parseFloat(style.paddingBottom);
        return Math.round(inner / parseFloat(style.lineHeight));
    };
    const code = [...slide.querySelectorAll('.jp-InputArea div.highlight > pre')].filter(drawn);
    const printed = [...slide.querySelectorAll('.jp-OutputArea-output pre')].filter(drawn);
    let prose = 0;
    for (const el of slide.querySelectorAll('.jp-RenderedMarkdown :is(p, li, tr, pre)')) {
        if (!drawn(el) || (el.tagName === 'LI' && el.querySelector('p'))) continue;
        prose += Math.max(1, lines(el) || 1);
    }
    const pres = [...code, ...printed];
    return {code: code.length, lines: pres.reduce((sum, pre) => sum + lines(pre), 0),
            font: Math.min(...pres.map(pre => parseFloat(getComputedStyle(pre).fontSize))),
            prose, text: slide.innerText.trim().slice(0, 50)};
}"""


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_code_slide_can_be_read_from_the_back_of_a_room(decks, chromium, lesson):
    """As drawn at 1280 x 720: one code cell, at most slides.CODE_LINES lines of code and
    output, output at slides.MIN_OUTPUT_FONT px or more, and the prose around it at most
    slides.CODE_SLIDE_PROSE lines (one more for the estimate's error: a formula that wraps)."""
    name = lesson.stem + ".slides.html"
    crowded = []
    with deck_page(chromium, decks[name]) as page:
        every = page.evaluate("() => Reveal.getSlides().map(s => Reveal.getIndices(s))")
        for number, indices in enumerate(every, 1):
            show(page, indices)
            found = page.evaluate(READABLE)
            if not found["code"] and not found["lines"]:
                continue
            problems = [f"{found['code']} code cells"] if found["code"] > 1 else []
            if found["lines"] > slides.CODE_LINES:
                problems.append(f"{found['lines']} lines of code and output")
            if found["font"] < slides.MIN_OUTPUT_FONT:
                problems.append(f"code or output at {found['font']} px")
            if found["prose"] > slides.CODE_SLIDE_PROSE + 1:
                problems.append(f"{found['prose']} lines of prose")
            if problems:
                shot = screenshot(page, f"slides-dense-{lesson.stem}-{number:02d}.png")
                crowded.append(f"slide {number} {found['text']!r}: {', '.join(problems)} "
                               f"(screenshot {shot})")
    assert not crowded, f"{name}: {len(crowded)} of {len(every)} slides are dense:\n" + \
        "\n".join(crowded)


@pytest.fixture(scope="module")
def lesson_03(decks, chromium):
    with deck_page(chromium, decks["03_scaling.slides.html"]) as page:
        yield page


def slide_with(page, selector: str, text: str = ""):
    """Go to the first slide containing ``selector`` (whose text is ``text``, if given);
    return that element."""
    indices = page.evaluate("""([selector, text]) => {
        const hit = Reveal.getSlides().find(s => [...s.querySelectorAll(selector)]
            .some(e => !text || e.textContent.trim() === text));
        return hit ? Reveal.getIndices(hit) : null;
    }""", [selector, text])
    assert indices, f"no slide contains {selector} {text!r}"
    show(page, indices)
    found = page.locator(f".reveal .slides section.present {selector}")
    return found.filter(has_text=text).first if text else found.first


def test_check_yourself_answers_are_hidden_until_clicked(lesson_03):
    summary = slide_with(lesson_03, "details > summary", "Answer")  # not a your-turn Solution
    answer = summary.locator("xpath=..").locator(".answer")
    assert summary.inner_text().strip() == "Answer"
    assert not answer.is_visible()
    summary.click()
    assert answer.is_visible()
    assert answer.inner_text().strip()


def test_a_widget_slide_shows_its_stored_picture_and_says_it_needs_the_notebook(lesson_03):
    image = slide_with(lesson_03, "img[alt^='Stored picture of the live widget']")
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    slide = lesson_03.locator(".reveal .slides section.present").last
    assert "Live widget" in slide.inner_text() and "JupyterLab" in slide.inner_text()
    assert lesson_03.locator(".widget-slider, .jupyter-widgets").count() == 0


def test_no_deck_shows_a_check_cell_or_an_assert(decks, chromium):
    for name in decks:
        page_text = (OUT / name).read_text()
        code = re.findall(r'<div class="highlight[^"]*"><pre>(.*?)</pre>', page_text, re.S)
        plain = [re.sub(r"<[^>]+>", "", c) for c in code]
        assert not [c for c in plain if re.search(r"^\s*assert\b|\.testing\.assert_", c, re.M)], \
            f"{name} shows assert lines"


def launch_links() -> set[str]:
    """Every launch link tools/launch.py builds for a notebook of the repository."""
    project = launch.Project()
    paths = [launch.repository_path(p) for p in launch.notebooks()]
    return {link for path in paths for link in (project.binder(path), project.colab(path))}


def test_every_link_on_every_slide_resolves(decks, chromium):
    """A link leads to a file of the decks' folder (an anchor to an element of its page) or is
    a launch link built by tools/launch.py; the last slides linked to .ipynb files that the
    folder does not hold. The lecturer's way too: the next lesson's link opens its deck."""
    launches, broken = launch_links(), []
    for name in decks:
        page_html = (OUT / name).read_text()
        ids = set(re.findall(r'\sid="([^"]+)"', page_html))
        for href in re.findall(r'<a\s[^>]*href="([^"]*)"', page_html):
            href = href.replace("&amp;", "&")
            target = urllib.parse.urlsplit(href)
            if target.scheme in ("http", "https"):
                ok = href in launches
            elif target.scheme:
                ok = False
            elif not target.path:
                # as a browser looks it up: the fragment as written, then decoded
                ok = bool({target.fragment, urllib.parse.unquote(target.fragment)} & ids)
            else:
                ok = (OUT / urllib.parse.unquote(target.path)).is_file()
            if not ok:
                broken.append(f"{name}: {href}")
    assert broken == [], f"{len(broken)} link(s) lead nowhere:\n" + "\n".join(broken[:20])
    with deck_page(chromium, decks["01_weighted_sum.slides.html"]) as page:
        link = slide_with(page, "a", "02 Scores and softmax")
        link.click()
        page.wait_for_url("**/02_scores_and_softmax.slides.html*")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=60_000)
        assert page.bad_responses == [], page.bad_responses


def test_every_picture_has_alt_text_and_requests_stay_on_127_0_0_1(decks, chromium):
    for name, url in decks.items():
        with deck_page(chromium, url) as page:
            missing = page.evaluate("""() => [...document.querySelectorAll('.reveal img')]
                .filter(img => !(img.getAttribute('alt') || '').trim()
                               || img.getAttribute('alt') === 'Figure').length""")
            assert missing == 0, f"{name}: {missing} picture(s) without alt text"
            outside = [u for u in page.requests
                       if urllib.parse.urlsplit(u).scheme not in ("data", "blob")
                       and urllib.parse.urlsplit(u).hostname != "127.0.0.1"]
            assert outside == [], f"{name} requested {outside}"
