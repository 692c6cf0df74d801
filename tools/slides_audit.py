"""Screenshot and measure every slide of the static decks at 1280 x 720 (issue 19's review).

    python tools/slides_audit.py DECKS OUT [--no-shots]

DECKS: a folder written by ``tools/slides.py --export``; OUT gets one PNG per slide
(``NN-SSS.png``) and ``slides.json`` (per slide: code cells shown, lines of code and of
printed output as drawn, their smallest font, lines of prose, pictures). It prints the
slides per deck and the dense ones: a slide that shows more than one code cell, more than
slides.CODE_LINES lines of code + output, printed output under slides.MIN_OUTPUT_FONT px, or
code with more than slides.CODE_SLIDE_PROSE lines of prose (the rules of tools/slides.py).
Headless Debian Chromium (/usr/bin/chromium) through Playwright; decks served on 127.0.0.1.
"""

from __future__ import annotations

import collections
import functools
import http.server
import json
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slides  # noqa: E402

MEASURE = r"""() => {
    const slide = Reveal.getCurrentSlide();
    const scale = Reveal.getScale();
    const box = slide.getBoundingClientRect();
    const hidden = 'details:not([open]) > :not(summary)';
    const vis = el => {
        const b = el.getBoundingClientRect();
        return b.width > 0 && b.height > 0 && !el.closest(hidden);
    };
    const lineHeight = el => {
        const cs = getComputedStyle(el);
        return parseFloat(cs.lineHeight) || 1.3 * parseFloat(cs.fontSize);
    };
    const rendered = el => {
        const cs = getComputedStyle(el);
        const inner = el.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
        return Math.round(inner / lineHeight(el));
    };
    const font = el => parseFloat(getComputedStyle(el).fontSize);
    const code = [...slide.querySelectorAll('.jp-InputArea div.highlight > pre')].filter(vis);
    const outs = [...slide.querySelectorAll('.jp-OutputArea-output pre')].filter(vis);
    const md = [...slide.querySelectorAll('.jp-RenderedMarkdown')].filter(vis);
    const imgs = [...slide.querySelectorAll('.jp-RenderedImage img')].filter(vis);
    let prose = 0;
    for (const m of md) {
        for (const el of m.querySelectorAll('p, li, tr, pre, .MJXc-display')) {
            if (!vis(el) || el.closest('summary')) continue;
            if (el.tagName === 'LI' && el.querySelector('p')) continue;
            const height = el.getBoundingClientRect().height / scale;
            const per = el.classList.contains('MJXc-display') ? 31 : lineHeight(el);
            prose += Math.max(1, Math.round(height / per));
        }
    }
    let bottom = 0;
    for (const el of slide.querySelectorAll('.jp-Cell')) {
        if (vis(el)) bottom = Math.max(bottom, el.getBoundingClientRect().bottom - box.top);
    }
    const count = list => list.reduce((a, pre) => a + rendered(pre), 0);
    return {
        code_cells: code.length, code_lines: count(code),
        out_blocks: outs.length, out_lines: count(outs),
        min_out_font: outs.length ? Math.min(...outs.map(font)) : null,
        min_code_font: code.length ? Math.min(...code.map(font)) : null,
        prose_lines: prose, images: imgs.length, bottom: Math.round(bottom / scale),
        text: slide.innerText.trim().slice(0, 60),
    };
}"""
IDLE = """() => !window.MathJax || !MathJax.Hub || !MathJax.Hub.queue
    || (MathJax.Hub.queue.running === 0 && MathJax.Hub.queue.pending === 0)"""
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def measure(decks: Path, out: Path, shots: bool = True) -> list[dict]:
    handler = functools.partial(Quiet, directory=str(decks))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            for deck in sorted(decks.glob("*.slides.html")):
                context = browser.new_context(viewport={"width": slides.SLIDE_WIDTH,
                                                        "height": slides.SLIDE_HEIGHT})
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{server.server_port}/{deck.name}")
                page.wait_for_function("() => window.Reveal && Reveal.isReady()",
                                       timeout=60_000)
                page.wait_for_function(IDLE, timeout=60_000)
                every = page.evaluate("() => Reveal.getSlides().map(s => Reveal.getIndices(s))")
                for number, indices in enumerate(every, 1):
                    page.evaluate("([h, v]) => Reveal.slide(h, v)",
                                  [indices["h"], indices.get("v") or 0])
                    page.wait_for_function(IDLE, timeout=30_000)
                    row = page.evaluate(MEASURE)
                    row.update(deck=deck.name.split(".")[0], n=number,
                               png=f"{deck.name[:2]}-{number:03d}.png")
                    if shots:
                        page.screenshot(path=str(out / row["png"]))
                    rows.append(row)
                context.close()
            browser.close()
    finally:
        server.shutdown()
    return rows


def dense(row: dict) -> list[str]:
    """What makes the slide ``row`` hard to read from the back of a room (empty: nothing)."""
    found = []
    if row["code_cells"] > 1:
        found.append("several code cells")
    if row["code_lines"] + row["out_lines"] > slides.CODE_LINES:
        found.append("code + output lines")
    if row["min_out_font"] and row["min_out_font"] < slides.MIN_OUTPUT_FONT:
        found.append("small output font")
    if (row["code_cells"] or row["out_blocks"]) and row["prose_lines"] > slides.CODE_SLIDE_PROSE:
        found.append("prose with code")
    return found


def main(argv: list[str]) -> int:
    decks, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = measure(decks, out, shots="--no-shots" not in argv)
    (out / "slides.json").write_text(json.dumps(rows, indent=1))
    crowded = [r for r in rows if dense(r)]
    print(f"{len(rows)} slides, {sum(bool(r['code_cells'] or r['out_blocks']) for r in rows)} "
          f"with code or output, {len(crowded)} dense")
    print("slides per deck:", dict(collections.Counter(r["deck"][:2] for r in rows)))
    print("dense per deck:", dict(collections.Counter(r["deck"][:2] for r in crowded)))
    print("why:", dict(collections.Counter(k for r in rows for k in dense(r))))
    for row in crowded:
        print(f"  {row['png']}: {', '.join(dense(row))}: {row['text'][:40]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
