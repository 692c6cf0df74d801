"""The offline book (book/, `make book`): every page opens with no network, readable and accessible.

The module builds the book once (book/build.py: npm ci when needed, then Sphinx
from the committed notebooks, nothing executed), serves book/_build/html on
127.0.0.1 (a free port) and opens every page once in headless Chromium (Debian's,
through Playwright, as tests/browser/ does), recording requests, console errors,
broken images, typeset math and axe-core's violations. Each test then checks one
of those records over all pages.

Skips, with the reason: Python below 3.11 (the book's Sphinx theme needs 3.11; the
test extra leaves Sphinx out there, so this skips under CI too), no npm and no
book/node_modules (the build needs MathJax), or no Chromium / playwright for the
browser tests. Under CI (CI set) a missing Sphinx or browser fails them instead.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import html.parser
import http.server
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
HTML = BOOK / "_build" / "html"
AXE = BOOK / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
UNDER_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
# axe rules at these impacts fail a page; known exceptions: (rule id, reason). None so far.
FAILING_IMPACTS = {"critical", "serious"}
KNOWN_AXE_EXCEPTIONS: dict[str, str] = {}

pytestmark = pytest.mark.timeout(600)  # a busy shared 2-core machine; about a minute alone


def _load_build():
    spec = importlib.util.spec_from_file_location("book_build", BOOK / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build()


def page_names(pages: list[Path]) -> list[str]:
    """Site paths of ``pages`` (build.pages()) in reading order, the index first."""
    return ["index.html"] + [f"notebooks/{p.with_suffix('.html').as_posix()}" for p in pages]


class Site:
    """The built book: its folder and the pages it was built with (a lesson that lands
    while the tests run is not in this build)."""

    def __init__(self, root: Path, pages: list[Path]):
        self.root, self.pages, self.names = root, pages, page_names(pages)

    def __truediv__(self, name: str) -> Path:
        return self.root / name


@pytest.fixture(scope="module")
def site() -> Site:
    if sys.version_info < (3, 11):
        # Declared, not missing: pyproject's test extra leaves the book's Sphinx stack out
        # below 3.11 (sphinx-book-theme >= 1.4 needs it), so this skips under CI too.
        pytest.skip("the book needs Python >= 3.11 (sphinx-book-theme >= 1.4); this is "
                    f"Python {sys.version_info.major}.{sys.version_info.minor}")
    if importlib.util.find_spec("myst_nb") is None or importlib.util.find_spec("sphinx") is None:
        reason = "Sphinx or myst-nb is missing (pip install -e '.[test]', or make test)"
        if UNDER_CI:
            pytest.fail(f"CI is set and the book cannot be built: {reason}", pytrace=False)
        pytest.skip(reason)
    theme = importlib.metadata.version("sphinx-book-theme")
    if tuple(int(n) for n in theme.split(".")[:2]) < (1, 4):
        # Older themes (all Python 3.10 gets) load icon fonts that a file:// page may not
        # load, and axe finds a serious violation in them.
        reason = f"the book needs sphinx-book-theme >= 1.4 (Python >= 3.11); found {theme}"
        if UNDER_CI:
            pytest.fail(f"CI is set and the book cannot be built: {reason}", pytrace=False)
        pytest.skip(reason)
    if not build.node_modules_ready() and shutil.which("npm") is None:
        pytest.skip("npm is missing and book/node_modules is not installed (the book serves "
                    "MathJax from it): install Node.js, or run make book once")
    pages = build.pages()
    build.build()
    return Site(HTML, pages)


# -- the stored outputs and the built page agree (no browser needed) -------------------
class _Outputs(html.parser.HTMLParser):
    """The outputs of every code cell of a built page, in order: ("image", file name),
    ("text", text) or ("html", text)."""

    VOID = {"img", "br", "hr", "meta", "link", "input", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells: list[list[list]] = []
        self.stack: list[tuple[str, str | None]] = []
        self.current: list | None = None

    def _inside(self, role: str) -> bool:
        return any(r == role for _, r in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag in self.VOID:
            if tag == "img" and self._inside("cell_output") and self.current is None:
                name = urllib.parse.unquote(attrs.get("src", "")).rsplit("/", 1)[-1]
                self.cells[-1].append(["image", name])
            return
        role = None
        if tag == "div" and "cell" in classes:
            role = "cell"
            self.cells.append([])
        elif tag == "div" and "cell_output" in classes:
            role = "cell_output"
        elif (tag == "div" and "output" in classes and self._inside("cell_output")
              and self.current is None):
            role = "output"
            self.current = ["html" if "text_html" in classes else "text", ""]
            self.cells[-1].append(self.current)
        self.stack.append((tag, role))

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, role = self.stack.pop()
            if role == "output":
                self.current = None
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self.current is not None:
            self.current[1] += data


def _text_of_html(markup: str) -> str:
    parser = _Outputs()
    parser.cells, parser.current = [[]], ["html", ""]
    parser.stack = [("div", "cell_output")]
    parser.feed(markup)
    return parser.current[1]


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MIME_ORDER = ("text/html", "image/svg+xml", "image/png", "image/jpeg", "text/latex",
              "text/plain")
EXTENSION = {"image/svg+xml": ".svg", "image/png": ".png", "image/jpeg": ".jpg"}


def _squash(text: str) -> str:
    return " ".join(ANSI.sub("", text).split())


def stored_outputs(nb) -> list[list[list]]:
    """What the book should show for each code cell: the mime type the HTML builder picks
    (the widget view dropped, so its stored PNG), with pictures named by content hash."""
    cells = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or {"remove-cell", "check", "launch-install"} & set(tags):
            continue  # check cells and the install cell stay out of the book
        shown = []
        for out in [] if "remove-output" in tags else cell.outputs:
            if out.output_type == "stream":
                shown.append(["text", _squash(out.text)])
            elif out.output_type == "error":
                shown.append(["text", _squash("\n".join(out.traceback))])
            else:
                mime = next((m for m in MIME_ORDER if m in out.data), None)
                if mime is None:
                    continue
                if mime in EXTENSION:
                    data = out.data[mime]
                    raw = data.encode() if mime == "image/svg+xml" else base64.b64decode(data)
                    shown.append(["image", hashlib.sha256(raw).hexdigest() + EXTENSION[mime]])
                elif mime == "text/html":
                    shown.append(["html", _squash(_text_of_html(out.data[mime]))])
                else:
                    shown.append(["text", _squash(out.data[mime])])
        cells.append(shown)
    return cells


def built_outputs(page: Path) -> list[list[list]]:
    parser = _Outputs()
    parser.feed(page.read_text())
    return [[[kind, value if kind == "image" else _squash(value)] for kind, value in cell]
            for cell in parser.cells]


LESSON_PAGES = [p for p in build.pages() if p.parent == Path(".")]


@pytest.mark.parametrize("lesson", [p.stem for p in LESSON_PAGES])
def test_built_lesson_shows_exactly_the_stored_outputs(site, lesson):
    nb = nbformat.read(ROOT / "notebooks" / f"{lesson}.ipynb", as_version=4)
    expected = stored_outputs(nb)
    built = built_outputs(site / "notebooks" / f"{lesson}.html")
    assert len(built) == len(expected), "the page and the notebook have different code cells"
    for index, (want, got) in enumerate(zip(expected, built, strict=True)):
        assert got == want, f"code cell {index} (0-based, code cells only) differs"
    assert any(kind == "image" for cell in built for kind, _ in cell) or lesson.startswith("10")


def test_no_check_cell_and_no_install_cell_is_in_the_book(site):
    """Cells tagged `check` (asserts that pin the prose's numbers) and tools/launch.py's
    install cell are left out; every other code cell is there."""
    for lesson in LESSON_PAGES:
        nb = nbformat.read(ROOT / "notebooks" / lesson, as_version=4)
        page = (site / "notebooks" / lesson.with_suffix(".html")).read_text()
        shown = len(re.findall(r'class="cell(?: tag_[^\s"]+)* docutils container"', page))
        left_out = [c for c in nb.cells if c.cell_type == "code"
                    and {"check", "launch-install"} & set(c.metadata.get("tags", []))]
        assert shown == sum(c.cell_type == "code" for c in nb.cells) - len(left_out), lesson
        assert "MHA_INSTALL_FROM" not in page


def test_the_book_leaves_out_tagged_cells_and_keeps_answers_in_their_list_items():
    """The book's source-read step on a small notebook: the check cell and the install cell
    go, an answer under a numbered question is indented into its item."""
    sys.path.insert(0, str(BOOK / "_ext"))
    import course_pages

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# T"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("assert x == 1", metadata={"tags": ["check"]}),
        nbformat.v4.new_code_cell("# install", metadata={"tags": ["launch-install"]}),
        nbformat.v4.new_markdown_cell("1. Why?\n<details><summary>Answer</summary>\n\nBecause."
                                      "\n</details>\n\nAfter the list."),
    ])
    source = [nbformat.writes(nb)]
    course_pages.add_book_cells(None, "notebooks/99_t", source)
    cells = json.loads(source[0])["cells"]
    assert ["".join(c["source"]) for c in cells[:2]] == ["# T", "x = 1"]
    assert cells[2]["source"] == ("1. Why?\n   <details><summary>Answer</summary>\n\n   Because."
                                  "\n   </details>\n\nAfter the list.")


def test_stored_outputs_check_notices_a_changed_output(site):
    """The comparison above can fail: one changed character in a stored output shows."""
    lesson = LESSON_PAGES[1].stem
    nb = nbformat.read(ROOT / "notebooks" / f"{lesson}.ipynb", as_version=4)
    expected = stored_outputs(nb)
    cell = next(c for c in nb.cells if c.cell_type == "code" and any(
        o.output_type == "stream" for o in c.outputs))
    stream = next(o for o in cell.outputs if o.output_type == "stream")
    stream.text = "x" + stream.text
    assert stored_outputs(nb) != expected
    assert built_outputs(site / "notebooks" / f"{lesson}.html") == expected


def test_every_picture_has_meaningful_alt_text(site):
    bad = []
    for name in site.names:
        parser = _AltTexts()
        parser.feed((site / name).read_text())
        for src, alt in parser.images:
            stem = src.rsplit("/", 1)[-1]
            if (not alt.strip() or alt == src or stem in alt or alt.startswith("<Figure")
                    or len(alt.split()) < 3):
                bad.append(f"{name}: {src} alt={alt!r}")
    assert bad == []


class _AltTexts(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.images: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            attrs = dict(attrs)
            self.images.append((attrs.get("src", ""), attrs.get("alt") or ""))


def test_every_page_has_a_plain_text_title(site):
    """The browser tab shows words: the page's heading, no raw TeX such as \\(\\sqrt{d_k}\\)."""
    titles = {}
    for name in site.names:
        match = re.search(r"<title>(.*?)</title>", (site / name).read_text(), re.S)
        titles[name] = html.unescape(match.group(1)).strip() if match else ""
    assert {n: t for n, t in titles.items() if not t or "\\" in t or "$" in t} == {}
    assert titles["notebooks/03_scaling.html"].startswith("03 Why divide by sqrt(d_k)")


def test_every_widget_picture_is_followed_by_a_line_on_the_live_widget(site):
    missing = []
    for lesson in [p for p in site.pages if p.parent == Path(".")]:
        nb = nbformat.read(ROOT / "notebooks" / lesson, as_version=4)
        widgets = sum(any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                          for o in c.get("outputs", [])) for c in nb.cells)
        notes = (site / "notebooks" / lesson.with_suffix(".html")).read_text().count(
            'class="widget-note admonition"')
        if notes != widgets:
            missing.append(f"{lesson}: {widgets} widgets, {notes} notes")
    assert missing == []


def test_every_exercise_set_is_marked_to_run_in_jupyterlab_or_binder(site):
    exercises = [p for p in site.pages if p.parent == Path("exercises")]
    assert exercises, "no exercise set found in notebooks/exercises/"
    for page in exercises:
        text = (site / "notebooks" / page.with_suffix(".html")).read_text()
        assert 'class="exercise-note admonition"' in text, page
        assert "JupyterLab" in text and "Binder" in text, page


# -- in Chromium ---------------------------------------------------------------------
def _browser_skip_reason() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[test]')"
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def base_url(site):
    handler = functools.partial(_QuietHandler, directory=str(site.root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser_ready():
    """Skip (or, under CI, fail) when Chromium or playwright is missing."""
    reason = _browser_skip_reason()
    if reason:
        if UNDER_CI:
            pytest.fail(f"CI is set and the book's browser tests cannot run: {reason}",
                        pytrace=False)
        pytest.skip(reason)


MATHJAX_LOADED = "() => !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"
MATH_STATE = r"""async () => {
    if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) return null;
    await MathJax.startup.promise;
    const spans = [...document.querySelectorAll('.math')];
    return {
        math: spans.length,
        typeset: spans.filter(s => s.querySelector('mjx-container')).length,
        errors: document.querySelectorAll('mjx-merror').length,
    };
}"""
BROKEN_IMAGES = r"""() => [...document.images]
    .filter(img => !img.complete || img.naturalWidth === 0).map(img => img.src)"""
# Every <details> (a "Check yourself" answer, a "Your turn" solution): closed, with content.
DETAILS = r"""() => [...document.querySelectorAll('details')].map(d => ({
    open: d.open, summary: (d.querySelector('summary') || {}).textContent,
    body: [...d.childNodes].filter(n => n.nodeName !== 'SUMMARY')
        .map(n => n.textContent).join('').trim().length}))"""
PREV_NEXT = r"""() => {
    const href = sel => { const a = document.querySelector(sel); return a ? a.href : null; };
    return {prev: href('.prev-next-area a.left-prev'), next: href('.prev-next-area a.right-next'),
            title: document.title, h1: (document.querySelector('h1') || {}).textContent};
}"""
AXE_RUN = r"""async () => {
    const result = await axe.run(document, {resultTypes: ['violations']});
    return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""


async def _visit(browser, url: str, axe: bool) -> dict:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(60_000)
    page = await context.new_page()
    record = {"url": url, "requests": [], "console_errors": [], "started": time.monotonic()}
    page.on("request", lambda r: record["requests"].append(r.url))
    page.on("console", lambda m: m.type == "error" and record["console_errors"].append(m.text))
    page.on("pageerror", lambda e: record["console_errors"].append(str(e)))
    try:
        await page.goto(url, wait_until="load")
        try:
            await page.wait_for_function(MATHJAX_LOADED, timeout=15_000)
        except Exception:
            record["math"] = None  # no MathJax on the page
        else:
            record["math"] = await page.evaluate(MATH_STATE)
        record["broken_images"] = await page.evaluate(BROKEN_IMAGES)
        record["details"] = await page.evaluate(DETAILS)
        record["nav"] = await page.evaluate(PREV_NEXT)
        if axe:
            await page.add_script_tag(path=str(AXE))
            record["axe"] = await page.evaluate(AXE_RUN)
    finally:
        await context.close()
    record["seconds"] = time.monotonic() - record.pop("started")
    return record


def open_pages(urls: list[str], axe: bool, at_once: int = 3) -> list[dict]:
    """Open each URL in a fresh context of one headless Chromium, ``at_once`` pages at a
    time (axe-core and MathJax keep a renderer busy), in a thread of its own (its own
    event loop, whatever pytest's plugins run)."""
    import asyncio

    from playwright.async_api import async_playwright

    async def run_all():
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                              args=CHROMIUM_ARGS)
            gate = asyncio.Semaphore(at_once)

            async def one(url):
                async with gate:
                    return await _visit(browser, url, axe)

            try:
                return await asyncio.gather(*(one(url) for url in urls))
            finally:
                await browser.close()

    result: dict = {}

    def target():
        try:
            result["records"] = asyncio.run(run_all())
        except BaseException as error:  # re-raised in the test's thread
            result["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["records"]


@pytest.fixture(scope="module")
def visits(browser_ready, site, base_url) -> dict[str, dict]:
    """Every page, opened once from the local server (axe-core run on each)."""
    records = open_pages([base_url + name for name in site.names], axe=True)
    return dict(zip(site.names, records, strict=True))


def _outside(url: str, allowed: tuple[str, ...]) -> bool:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return False
    if parts.scheme == "file":
        return "file" not in allowed
    return parts.hostname != "127.0.0.1"


@pytest.mark.browser
def test_no_page_requests_anything_beyond_127_0_0_1(visits):
    outside = {name: [u for u in v["requests"] if _outside(u, ())]
               for name, v in visits.items()}
    assert all(v["requests"] for v in visits.values()), "no request recorded: recorder broken"
    assert {k: v for k, v in outside.items() if v} == {}


@pytest.mark.browser
def test_no_page_logs_a_console_error(visits):
    errors = {name: v["console_errors"] for name, v in visits.items() if v["console_errors"]}
    assert errors == {}


@pytest.mark.browser
def test_no_image_is_broken(visits):
    broken = {name: v["broken_images"] for name, v in visits.items() if v["broken_images"]}
    assert broken == {}


@pytest.mark.browser
def test_all_math_is_typeset_by_the_local_mathjax(visits):
    states = {name: v["math"] for name, v in visits.items()}
    assert None not in states.values(), {k: v for k, v in states.items() if v is None}
    untypeset = {k: v for k, v in states.items() if v["typeset"] != v["math"] or v["errors"]}
    assert untypeset == {}
    assert sum(v["typeset"] for v in states.values()) > 50  # the lessons hold much math
    assert states["notebooks/03_scaling.html"]["typeset"] > 0


@pytest.mark.browser
def test_pages_have_titles_and_previous_next_links_in_series_order(visits, site, base_url):
    names = site.names
    for i, name in enumerate(names):
        nav = visits[name]["nav"]
        assert nav["h1"] and nav["title"].strip(), name
        assert nav["prev"] == (base_url + names[i - 1] if i > 0 else None), name
        assert nav["next"] == (base_url + names[i + 1] if i + 1 < len(names) else None), name


@pytest.mark.browser
def test_every_answer_and_solution_is_closed_and_holds_its_text(visits):
    bad = {name: [d for d in v["details"] if d["open"] or d["body"] == 0]
           for name, v in visits.items()}
    assert {k: v for k, v in bad.items() if v} == {}
    assert sum(len(v["details"]) for v in visits.values()) > 10  # every lesson has some


@pytest.mark.browser
def test_axe_core_finds_no_critical_or_serious_violation(visits):
    failing = {}
    for name, visit in visits.items():
        rules = [v for v in visit["axe"] if v["impact"] in FAILING_IMPACTS
                 and v["id"] not in KNOWN_AXE_EXCEPTIONS]
        if rules:
            failing[name] = rules
    assert failing == {}, json.dumps(failing, indent=1)[:4000]


@pytest.mark.browser
def test_pages_open_from_file_urls_with_math_and_no_network(browser_ready, site):
    """Opened straight from disk (file://): math typesets and no http request is made."""
    names = [n for n in ("index.html", "notebooks/03_scaling.html",
                         "notebooks/exercises/ex04_masks.html") if n in site.names]
    for name, visit in zip(names, open_pages([(site / n).as_uri() for n in names], axe=False),
                           strict=True):
        assert [u for u in visit["requests"] if _outside(u, ("file",))] == [], name
        assert visit["console_errors"] == [], name
        assert visit["broken_images"] == [], name
        assert visit["math"] and visit["math"]["typeset"] == visit["math"]["math"], name


# -- tools/figure_alt_text.py: where a picture's alt text comes from ---------------------
def _alt_tool():
    spec = importlib.util.spec_from_file_location("figure_alt_text",
                                                  ROOT / "tools" / "figure_alt_text.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _picture_cell(source: str, **metadata) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, metadata=metadata)
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"})]
    return cell


def test_alt_text_is_the_figure_titles_in_source_order():
    source = 'fig.suptitle("two maps")\nax.set_title("left: causal")\nheatmap(w, title="right")'
    assert _alt_tool().alt_text(_picture_cell(source)) == "Figure: two maps; left: causal; right"


def test_alt_text_falls_back_to_the_first_comment_line():
    cell = _picture_cell("ax.plot(x, y)  # loss per step, 20-step mean\nplt.show()")
    assert _alt_tool().alt_text(cell) == "Figure: loss per step, 20-step mean"


def test_alt_text_set_in_cell_metadata_wins():
    cell = _picture_cell('heatmap(w, title="t")', mystnb={"image": {"alt": "A 5 x 5 grid"}})
    assert _alt_tool().alt_text(cell) == "A 5 x 5 grid"


def test_a_picture_with_no_title_and_no_comment_has_no_alt_text(tmp_path, capsys):
    tool = _alt_tool()
    nb = nbformat.v4.new_notebook(cells=[_picture_cell("ax.plot(x, y)\nplt.show()")])
    assert tool.alt_text(nb.cells[0]) is None
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert tool.main([str(tmp_path / "n.ipynb")]) == 1
    assert "MISSING" in capsys.readouterr().out
    assert tool.main([str(tmp_path / "n.ipynb"), "--set", "0", "Loss falls, then flattens"]) == 0
    assert tool.main([str(tmp_path / "n.ipynb")]) == 0


def test_every_lesson_picture_has_alt_text_from_its_cell():
    tool = _alt_tool()
    missing = [(p.name, i) for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
               for i, text in tool.pictures(nbformat.read(p, as_version=4)) if text is None]
    assert missing == []
