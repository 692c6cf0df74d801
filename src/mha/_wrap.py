"""Feedback text wrapped at word boundaries, for JupyterLab's output area.

JupyterLab 4 shows a cell's text output with ``word-break: break-all``: a line wider than
the window breaks at its edge, in the middle of a word. The package's feedback (a check's
verdict, a failed check as the notebook shows it, the check-up's report) is therefore
wrapped here, at most :data:`WIDTH` columns, between words only:

* explicit newlines stay; a line that fits is left exactly as it is (so wrapping twice
  gives the same text);
* a continuation line is indented: under the value of an indented ``label: value`` line
  (``  expected: [...]``), else four columns deeper than its line;
* a `code span` is never split; an array or a numeric tuple (``[...]``, ``(2, 3)``) is
  kept whole if it fits on one line, else split between its outermost items first;
* a word longer than a line stays whole, on a line of its own.

Only what the learner reads is wrapped: the messages of exceptions, which tests and
grading match, are not (:func:`wrap_for_display` is applied where text is displayed).
"""

from __future__ import annotations

import math
import re

# The narrowest output area a learner is likely to use: `make lab`'s JupyterLab 4.6 in Chromium
# at 1024 x 768 with the file browser open fits 74 columns (584 px / 7.83 px per character of
# 13 px DejaVu Sans Mono, measured 2026-12-03); a wider line is wrapped again by the browser
# (74 + the rest, ragged). 72 leaves two columns of margin. With the left sidebar closed the same
# window fits 106 columns; 1440 x 900 fits 127 with the file browser open, 159 without.
WIDTH = 72
_HANG = 4  # how much deeper a continuation line starts than its own line
_LABEL = re.compile(r"( +)([A-Za-z][\w ]{0,11}?:)( +)(?=\S)")  # "  expected: ", "  got:      "


def wrap_for_display(text: str, width: int = WIDTH) -> str:
    """``text`` with each line wider than ``width`` broken between words (see the module)."""
    return "\n".join(_wrap_line(line, width) for line in str(text).split("\n"))


def _wrap_line(line: str, width: int) -> str:
    if len(line) <= width or not line.strip():
        return line
    body = line.rstrip().lstrip(" ")
    indent = len(line) - len(line.lstrip(" "))
    label = _LABEL.match(line)
    hang = label.end() if label and label.end() <= width // 3 else indent + _HANG
    parts = re.split(r"( +)", body)  # word, separator, word, ...
    words, seps = parts[0::2], [""] + parts[1::2]
    depths = _depths(words)
    lines, current = [], " " * indent
    fresh = width - hang  # room for an atom on a continuation line
    for start, end in _atoms(depths, 0, len(words) - 1, 0, words, seps, fresh):
        atom = _join(words, seps, start, end)
        if current.strip() and len(current) + len(seps[start]) + len(atom) > width:
            lines.append(current)
            current = " " * hang + atom
        elif current.strip():
            current += seps[start] + atom
        else:
            current += atom
    lines.append(current)
    return "\n".join(lines)


def _join(words, seps, start, end) -> str:
    return words[start] + "".join(seps[i] + words[i] for i in range(start + 1, end + 1))


def _atoms(depths, start, end, level, words, seps, room):
    """Words ``start..end`` as unbreakable runs: broken at separators of depth ``level``,
    and a run that does not fit in ``room`` broken again one level deeper."""
    runs, first = [], start
    for i in range(start, end):
        if depths[i] <= level:
            runs.append((first, i))
            first = i + 1
    runs.append((first, end))
    out = []
    for a, b in runs:
        inner = [depths[i] for i in range(a, b) if depths[i] != math.inf]
        if a < b and inner and len(_join(words, seps, a, b)) > room:
            out += _atoms(depths, a, b, min(inner), words, seps, room)
        else:
            out.append((a, b))
    return out


def _depths(words) -> list:
    """For the separator after each word: 0 where a break is free, the number of open
    arrays / numeric tuples where it splits one, ``inf`` where it must not break (inside a
    `code span`, after a lone ``[``, before a lone ``,``)."""
    depths, stack, code = [], [], False
    for word in words:
        for k, ch in enumerate(word):
            if ch == "`":
                code = not code
            elif code:
                continue
            elif ch in "[(":
                nxt = word[k + 1: k + 2]
                stack.append(ch == "[" or nxt == "" or nxt in "[(0123456789-+."
                             or word.startswith("shape", k + 1))  # "(shape (2, 3), float64)"
            elif ch in ")]" and stack:
                stack.pop()
        if word.endswith("..."):  # a rendering cut short: its brackets never close
            stack.clear()
        depths.append(math.inf if code else sum(stack))
    # never break after a lone opening bracket, nor before a lone comma, closing bracket or
    # "..." (NumPy writes "[ 1.304 , 0.9471]"; a cut rendering ends in ",...")
    for i in range(len(words) - 1):
        if not words[i].strip("[(") or not words[i + 1].strip(",)]."):
            depths[i] = math.inf
    return depths
