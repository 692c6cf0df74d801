"""A browser-side measure shared by the tests that look at how text wraps on screen.

:data:`MEASURE` is a JavaScript function ``(doc, selector) => {...}``: for every box matching
``selector`` in ``doc``, the words drawn on two lines (broken inside the word), the boxes whose
text is wider than the box or that end past the page's edge, and each box's height.
"""

MEASURE = r"""(d, selector) => {
    const broken = [], clipped = [];
    const boxes = [...d.querySelectorAll(selector)];
    for (const box of boxes) {
        if (box.scrollWidth > box.clientWidth + 1
            || box.getBoundingClientRect().right > d.documentElement.clientWidth + 1)
            clipped.push({text: box.innerText.slice(0, 40), scroll: box.scrollWidth,
                          client: box.clientWidth});
        const walker = d.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.data.matchAll(/\S+/g)) {
                const range = d.createRange();
                range.setStart(node, m.index);
                range.setEnd(node, m.index + m[0].length);
                const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                if (tops.size > 1) broken.push(m[0]);
            }
        }
    }
    return {boxes: boxes.length, broken, clipped,
            lines: boxes.map(b => Math.round(b.getBoundingClientRect().height))};
}"""
