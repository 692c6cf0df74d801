"""How a lesson is measured as one sitting (docs/AUTHORING.md, "A lesson is one sitting").

Shared by tests/test_course_shape.py and tests/test_your_turn.py; no tests here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
GOING_DEEPER = "## Going deeper"
MAX_WORDS, MAX_CELLS = 2000, 50

_INLINE_MATH = re.compile(r"\$[^$]*\$")  # "$$" pairs match empty: display math stays
_SOLUTION = re.compile(r"<summary>\s*Solution\s*</summary>\s*```python\n(.*?)```", re.S)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def source(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def core_cells(nb) -> list[dict]:
    """Every cell before the ``## Going deeper`` heading (all of them without one), the
    launch header and install cells that tools/launch.py adds included: the learner
    scrolls past them too."""
    cells = nb["cells"]
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and source(cell).lstrip().startswith(GOING_DEEPER):
            return cells[:index]
    return cells


def deeper_heading(nb) -> dict | None:
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and source(cell).lstrip().startswith(GOING_DEEPER):
            return cell
    return None


def prose_words(text: str) -> int:
    """Words in one markdown cell as the issue counts them: every whitespace-separated
    token once inline math (``$...$``) is taken out. Display math's content, fenced code
    (the your-turn solutions), HTML tags, list bullets and table bars all count: a stricter
    count than a reader's, so no honest recount finds more."""
    return len(_INLINE_MATH.sub(" ", text).split())


def core_words(nb) -> int:
    return sum(prose_words(source(c)) for c in core_cells(nb) if c["cell_type"] == "markdown")


def your_turn_pairs(nb) -> list[tuple[int, str, str]]:
    """(cell index, stub source, solution source) for each cell tagged ``your-turn``;
    the solution is the ```python block of the ``<details>`` cell right after it
    (``""`` when that cell is missing or has no such block)."""
    pairs = []
    cells = nb["cells"]
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "code" and "your-turn" in tags(cell):
            after = cells[index + 1] if index + 1 < len(cells) else None
            is_md = after is not None and after["cell_type"] == "markdown"
            found = _SOLUTION.search(source(after)) if is_md else None
            pairs.append((index, source(cell), found.group(1) if found else ""))
    return pairs


_PIN = re.compile(r"^\s*(assert\b|np\.testing\.|torch\.testing\.|numpy\.testing\.)")


def only_pins(code: str) -> bool:
    """A code cell whose every statement line is an assert / np.testing / torch.testing
    line (continuation lines of those included)."""
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not lines:
        return False
    depth = 0
    for line in lines:
        if depth == 0 and not _PIN.match(line):
            return False
        depth += line.count("(") + line.count("[") + line.count("{")
        depth -= line.count(")") + line.count("]") + line.count("}")
    return True
