"""How this course grades (nbgrader 0.9.6 plugins, wired in nbgrader_config.py).

The student's code runs in a Jupyter kernel; this module runs in the grader's own
process (``nbgrader autograde``), which the kernel cannot reach:

* ``RestoreHiddenTests`` (before nbgrader's OverwriteCells): puts the hidden lines back
  into every untouched test cell, so nbgrader warns only about cells a student edited
  (it used to warn "checksum ... has changed!" for every test cell, because the released
  cell lacks the hidden lines that the gradebook's copy has); edits and deletions are
  noted for review.
* ``RobustExecute`` (nbgrader's Execute): a cell still running after the time limit and
  the interrupt, or one that kills Python, no longer makes nbgrader drop the whole
  submission: the cell is marked, Python restarted, the cells before it run again, and
  grading goes on.
* ``GradeOutsideKernel``: each test cell's hidden line only *recorded* what the answer
  returned on every case (``mha.checks.grading.record``); here the records are judged
  against this process's own copy of the references, and the cell's outputs are replaced
  by the verdict (one "correct" line, or the failure message). It also reads the
  submitted code (``ast``) for what tampers with grading or reads its caller, and notes it.
* ``SaveGradingFlags`` (after SaveAutoGrades): a noted submission gets
  ``needs_manual_grade`` on its grades and the reasons as an automatic comment.
* ``ScrubHiddenSource`` (generate_feedback): no line of a hidden test reaches the
  feedback, whatever a cell printed.
* ``ReviewCsvExport`` (nbgrader export): the CSV gets a ``needs_review`` column.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import csv
import io
import os
import re

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.preprocessors import ClearHiddenTests, Execute, NbGraderPreprocessor
from traitlets import Integer

# Imported now, before any student kernel starts: a file the kernel rewrites later
# changes nothing in this process.
from mha.checks import grading as mha_grading
from mha.checks._core import NotAttempted, error_text
from mha.checks.your_turn import NOT_YET

MIME = mha_grading.MIME
HIDDEN_CALL = re.compile(r'_grading\.(record|record_answer)\(\s*"([\w.]+)"\s*,\s*(\w+)\s*'
                         r'(?:,\s*behaviour\s*=\s*"(\w+)"\s*)?\)')
FLAGS = "mha_grading"
REVIEW = "Flagged for review: "


def _flags(nb) -> list:
    return nb.metadata.setdefault(FLAGS, {}).setdefault("flags", [])


def _ids(resources):
    meta = resources["nbgrader"]
    return meta["notebook"], meta["assignment"], meta.get("student"), meta["db_url"]


def released_source(source: str) -> str:
    """A test cell's source as the student notebook has it (the hidden lines removed)."""
    cell = NotebookNode(cell_type="code", source=source, metadata={})
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


# -- sanitize: before OverwriteCells ---------------------------------------------------------

class KeepOneCopy(NbGraderPreprocessor):
    """A cell copied in JupyterLab carries its nbgrader metadata, grade id included: two
    cells claim one id. nbgrader's DeduplicateIds then empties the earlier copy's metadata
    and its CheckCellMetadata stops the whole ``nbgrader autograde`` run ("use an old version
    of the nbgrader metadata format"): no later submission of the class was graded. Here
    (before DeduplicateIds) the last cell with an id keeps it, as DeduplicateIds intends (a
    pasted copy sits below the original, and it is the one a student goes on editing; a test
    cell's last copy runs after every answer above it), and every earlier cell with that id
    loses its nbgrader metadata: it runs, or shows, as an ordinary cell. Noted for review."""

    def preprocess(self, nb, resources):
        seen = {}
        for index in range(len(nb.cells) - 1, -1, -1):
            meta = nb.cells[index].metadata.get("nbgrader")
            grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
            if not isinstance(grade_id, str) or not grade_id:
                continue
            if grade_id in seen:
                del nb.cells[index].metadata["nbgrader"]
                seen[grade_id].append(index)
            else:
                seen[grade_id] = []
        for grade_id, copies in seen.items():
            if copies:
                where = ", ".join(str(i) for i in sorted(copies))
                _flags(nb).append(
                    f"{grade_id}: the notebook has {len(copies) + 1} cells with the id "
                    f"{grade_id[:60]!r} (a copied cell); the last one was graded as that cell, "
                    + (f"the others (cells {where}) as ordinary cells" if len(copies) > 1
                       else f"the other (cell {where}) as an ordinary cell"))
        return nb, resources


class RestoreHiddenTests(NbGraderPreprocessor):
    """Restore the hidden lines of untouched locked cells quietly; note edited ones. A cell
    whose metadata names a grade id this set does not have becomes an ordinary cell (noted),
    and a test cell missing from the submission is put back where the set has it (noted)."""

    def preprocess(self, nb, resources):
        notebook_id, assignment_id, _, db_url = _ids(resources)
        flags = _flags(nb)
        present = set()
        with Gradebook(db_url) as gb:
            for index, cell in enumerate(nb.cells):
                meta = cell.metadata.get("nbgrader")
                grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
                if not grade_id:
                    continue
                try:
                    source = gb.find_source_cell(grade_id, notebook_id, assignment_id)
                except MissingEntry:
                    if meta.get("grade") or meta.get("solution") or meta.get("locked") or \
                            meta.get("task"):
                        kind = "test" if meta.get("grade") else "nbgrader"
                        flags.append(f"cell {index} claims to be the {kind} cell "
                                     f"{str(grade_id)[:60]!r}, which this set does not have "
                                     "(graded as an ordinary cell)")
                    del cell.metadata["nbgrader"]
                    continue
                present.add(grade_id)
                if not source.locked or cell.source == source.source:
                    continue
                if cell.source == released_source(source.source):
                    cell.source = source.source
                else:
                    flags.append(f"the locked cell {grade_id} was edited (grading restored it)")
            try:
                notebook = gb.find_notebook(notebook_id, assignment_id)
                missing = [(g.name, g.max_score) for g in notebook.grade_cells
                           if g.name not in present]
                for name, points in missing:
                    source = gb.find_source_cell(name, notebook_id, assignment_id)
                    self.add_back(nb, name, source.source, points, assignment_id, notebook_id)
                    flags.append(f"the test cell {name} was missing (deleted, or its id "
                                 "changed); grading added it back and ran it")
            except MissingEntry:
                pass
        return nb, resources

    def add_back(self, nb, name: str, source: str, points, assignment_id: str,
                 notebook_id: str) -> None:
        """Insert the test cell ``name`` after the cell that precedes it in the set's source
        notebook (at the end when that cell is gone too)."""
        cell = NotebookNode(cell_type="code", source=source, outputs=[], execution_count=None,
                            metadata=NotebookNode(nbgrader=NotebookNode(
                                grade=True, grade_id=name, locked=True, points=points,
                                schema_version=3, solution=False, task=False)))
        position = len(nb.cells)
        with contextlib.suppress(Exception):
            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
            path = os.path.join(coursedir.format_path(coursedir.source_directory, ".",
                                                      assignment_id), notebook_id + ".ipynb")
            order = [c.metadata.get("nbgrader", {}).get("grade_id")
                     for c in nbformat.read(path, as_version=4).cells]
            before = set(order[:order.index(name)])
            for i, existing in enumerate(nb.cells):
                if existing.metadata.get("nbgrader", {}).get("grade_id") in before:
                    position = i + 1
        nb.cells.insert(position, cell)


# -- execute: never drop a submission ---------------------------------------------------------

def _error_output(ename: str, text: str, label: str | None = None) -> NotebookNode:
    """An error output named ``ename``; what the feedback page shows is its traceback,
    ``label`` then ``text`` (``label`` is ``"<ename>: "`` unless given)."""
    return NotebookNode(output_type="error", ename=ename, evalue=text,
                        traceback=[(f"{ename}: " if label is None else label) + text])


class RobustExecute(Execute):
    """nbgrader's Execute, except that a cell that will not stop, or that kills Python,
    costs that cell only."""

    max_restarts = Integer(5, help="Restarts of Python per notebook before the remaining "
                                   "cells are left unrun.").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        self._restarts = 0
        self._given_up = False
        if isinstance(resources, dict):  # GradeOutsideKernel says it in its verdicts
            resources["mha_cell_timeout"] = self.timeout
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if self._given_up:
            cell.outputs = [_error_output("NotRun", "This cell did not run: Python had to be "
                                          "restarted too often in this notebook.", label="")]
            cell.metadata["mha_stopped"] = "not run"
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except (CellTimeoutError, DeadKernelError) as err:
            if isinstance(err, CellTimeoutError):
                what = (f"this cell was still running after the time limit ({self.timeout} s) "
                        "and did not stop when interrupted")
                self._restart_and_replay(index)
            else:
                # Python may have stopped after an earlier cell had finished (``exit()`` at
                # the end of an answer cell): replay the cells before this one, checking
                # after each that Python is still alive; the cell after which it is not is
                # the one that stops it, and only it is marked (this cell runs again).
                killer = self._restart_and_replay(index, probe=True)
                if killer is not None:
                    first = killer
                    while killer is not None and not self._given_up:
                        self._mark(self.nb.cells[killer], killer, KILLED_AFTER)
                        first = min(first, killer)
                        killer = self._restart_and_replay(index, probe=True)
                    if not self._given_up:
                        # the test cells that ran between the killer and here ran on
                        # borrowed time (Python stops 0.1 s after exit()): run them again
                        for g in range(first + 1, index):
                            test = self.nb.cells[g]
                            if test.cell_type == "code" and utils.is_grade(test):
                                test.outputs = []
                                with contextlib.suppress(CellTimeoutError, DeadKernelError):
                                    self.execute_cell(test, g, store_history=True)
                                self.nb.cells[g] = test
                        cell.outputs = []
                        return self.preprocess_cell(cell, resources, index)
                what = "Python stopped (the kernel died) while this cell ran"
            self._mark(cell, index, what + "; grading restarted Python and ran the cells before "
                       "this one again")
            cell.metadata["mha_stopped"] = what
            self.nb.cells[index] = cell
            return cell, resources

    def _mark(self, cell, index: int, what: str) -> None:
        self.log.warning("cell %s: %s", index, what)
        cell.outputs = list(cell.get("outputs", [])) + [_error_output("GradingStopped", what + ".",
                                                                     label="Grading stopped: ")]
        cell.metadata["mha_stopped"] = what.split(";")[0]

    def _restart_and_replay(self, upto: int, probe: bool = False) -> int | None:
        """A new Python, the cells before ``upto`` run again (not test cells, not cells that
        stopped Python). With ``probe``: the index of the replayed cell after which Python
        was dead, or None."""
        self._restarts += 1
        if self._restarts > self.max_restarts:
            self._given_up = True
            return None
        with contextlib.suppress(Exception):
            self._cleanup_kernel()
        self.km = self.create_kernel_manager()
        self.start_new_kernel()
        self.start_new_kernel_client()
        for i in range(upto):
            original = self.nb.cells[i]
            if (original.cell_type != "code" or utils.is_grade(original)
                    or original.metadata.get("mha_stopped")):
                continue
            try:
                self.execute_cell(copy.deepcopy(original), i, store_history=True)
                if probe:  # is Python stopping after it? (exit() stops it 0.1 s later)
                    check = NotebookNode(cell_type="code", outputs=[], metadata=NotebookNode(),
                                         execution_count=None,
                                         source="print(get_ipython().exit_now)")
                    self.execute_cell(check, i, store_history=False)
                    if any("True" in str(o.get("text", "")) for o in check.outputs):
                        return i
            except DeadKernelError:
                if probe:
                    return i
                self._given_up = True
                return None
            except CellTimeoutError:
                self._given_up = True
                return None
            finally:
                self.nb.cells[i] = original
        return None


KILLED_AFTER = ("Python stopped (the kernel died) right after this cell ran (exit(), os._exit() "
                "or the like); grading restarted Python and ran the other cells without it")


# -- judge, outside the kernel ----------------------------------------------------------------

SUSPECT_MODULES = {
    "builtins", "sys", "inspect", "importlib", "gc", "ctypes", "_ctypes", "cffi", "traceback",
    "signal", "_signal", "threading", "_thread", "multiprocessing", "subprocess",
    "_posixsubprocess", "os", "posix", "nt", "pty", "resource", "fcntl", "mmap", "IPython",
    "ipykernel", "types", "linecache", "atexit", "faulthandler", "code", "codeop", "pdb", "dis",
    "marshal", "socket", "shutil", "pathlib", "tempfile", "sqlite3", "_sqlite3", "nbgrader",
    "tracemalloc", "_tracemalloc", "asyncio", "concurrent", "pickle", "io", "_io", "runpy",
    "contextlib", "unittest", "pytest", "zipimport", "_imp", "glob",
    # more ways to read a file or reach the machine
    "codecs", "fileinput", "gzip", "bz2", "lzma", "zipfile", "tarfile", "shelve", "dbm",
    "urllib", "http", "webbrowser", "_pyio", "posixpath", "pickletools", "zlib",
}
SUSPECT_NAMES = {
    "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "setattr", "delattr",
    "get_ipython", "open", "breakpoint", "exit", "quit", "In", "Out", "_ih", "_oh", "_i", "_ii",
    "_iii", "__builtins__", "checks", "_grading", "_fresh", "display", "publish_display_data",
    "PREDICTIONS",
}
SUSPECT_ATTRIBUTES = {
    "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "tb_frame", "tb_next",
    "gi_frame", "cr_frame", "__code__", "__globals__", "__closure__", "__dict__",
    "__subclasses__", "__bases__", "__mro__", "__builtins__", "_getframe", "modules",
    "settrace", "setprofile", "__setattr__", "__getattribute__", "__name__", "__qualname__",
    "__module__", "checks", "grading", "_core", "_tasks", "history_manager", "user_ns",
    "__traceback__", "with_traceback", "__wrapped__", "func_code", "PREDICTIONS", "fork",
    "forkpty", "_exit", "kill", "system", "popen", "execv", "execve", "spawnv",
    # files read or written through NumPy, torch or pathlib, not only open(): a submission
    # printed the course's hidden lines read with np.loadtxt (issue 20's second examiner)
    "loadtxt", "genfromtxt", "fromfile", "fromregex", "load", "save", "savetxt", "savez",
    "savez_compressed", "tofile", "memmap", "read_text", "read_bytes", "write_text",
    "write_bytes",
    # and through torch, the os module, io, codecs, mmap, urllib (issue 20's last examiner
    # read the set's source notebook with torch.from_file): see also FILE_ATTRIBUTE
    "from_file", "open", "fdopen", "FileIO", "mmap", "urlopen", "open_memmap", "sendfile",
    "read", "readline", "readlines", "pread", "readv", "getoutput", "check_output", "Popen",
}
# Attribute names that read files by their shape: pandas' read_csv, read_json ..., a
# ``load_*`` / ``open_*`` helper; ``read_out`` is set 01's answer, not a reader.
FILE_ATTRIBUTE = re.compile(r"(read|load|open)_(?!out$)\w+|\w+_from_file|from_\w*file\w*")
# A string that names the course's files: the instructor's source notebooks, the gradebook,
# another student's submission (any path that climbs out of the submission's folder too).
COURSE_PATH = re.compile(r"\.\./|\.ipynb\b|gradebook|(^|[/\\])(source|release|submitted|"
                         r"autograded|feedback)([/\\]|$)")
# Calls that switch off what grading watches, whatever module name they are reached through.
SUSPECT_CALLS = {("sys", "setprofile"), ("sys", "settrace"), ("threading", "setprofile"),
                 ("threading", "settrace"), ("tracemalloc", "stop"), ("tracemalloc", "start"),
                 ("tracemalloc", "clear_traces"), ("os", "fork"), ("posix", "fork"),
                 ("gc", "get_referrers"), ("gc", "get_objects")}
MODULE_ALIASES = {"np", "numpy", "mha", "torch", "F", "nn", "math", "scipy", "builtins",
                  "checks", "random", "operator", "functools"}
# Modules whose attributes grading relies on: any name bound to one of them (``import numpy
# as xp``, ``from numpy import linalg``, ``xp = np``) is watched like ``np``.
GUARDED_MODULES = {"numpy", "mha", "torch", "scipy", "builtins", "math", "random", "operator",
                   "functools", "sys", "IPython", "ipykernel", "nbgrader"}
HISTORY_NAMES = {"In", "Out", "_ih", "_oh", "_i", "_ii", "_iii"}
INTERRUPTS = {"BaseException", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
# IPython magics a learner uses innocently: the code they run is read like the cell's own.
QUIET_MAGICS = {"time", "timeit", "capture", "matplotlib", "precision"}
TOO_DEEP = "could not be read: nested too deep"


# What a flagged name does, in plain words for the student who reads the review comment
# (the technical name stays first: READS and the instructor match it).
_FRAMES = "reads the frames of running code, the cell that called it included"
_FILES = "reads or writes files"
_PROCESS = "starts, stops or signals processes"
_GRADING = "reaches grading's own code"
PLAIN = {
    **dict.fromkeys(("f_back", "f_globals", "f_locals", "f_code", "f_builtins", "tb_frame",
                     "tb_next", "gi_frame", "cr_frame", "_getframe", "__traceback__",
                     "with_traceback"), _FRAMES),
    **dict.fromkeys(("__code__", "__globals__", "__closure__", "__dict__", "__wrapped__",
                     "func_code"), "reads the inside of a function or an object"),
    **dict.fromkeys(("__subclasses__", "__bases__", "__mro__"), "walks Python's classes"),
    **dict.fromkeys(("__name__", "__qualname__", "__module__"),
                    "reads the names of the code around it"),
    "modules": "reaches every loaded module, grading's included",
    **dict.fromkeys(("settrace", "setprofile"),
                    "replaces the tracer grading uses to watch calls"),
    **dict.fromkeys(("fork", "forkpty", "_exit", "kill", "system", "popen", "execv", "execve",
                     "spawnv", "Popen", "check_output", "getoutput"), _PROCESS),
    **dict.fromkeys(("checks", "grading", "_core", "_tasks", "_grading", "PREDICTIONS"),
                    _GRADING),
    **dict.fromkeys(("history_manager", "user_ns", "In", "Out", "_ih", "_oh", "_i", "_ii",
                     "_iii"), "reads IPython's history or namespace"),
    **dict.fromkeys(("exec", "eval", "compile", "__import__"), "runs code built as text"),
    **dict.fromkeys(("globals", "locals", "vars", "__builtins__"),
                    "reads a whole namespace"),
    **dict.fromkeys(("setattr", "delattr", "__setattr__", "__getattribute__"),
                    "changes attributes by name"),
    "get_ipython": "reaches IPython itself",
    **dict.fromkeys(("exit", "quit"), "asks Python to stop"),
    **dict.fromkeys(("open", "fdopen", "FileIO", "mmap", "from_file", "read", "readline",
                     "readlines", "pread", "readv", "urlopen", "sendfile") + tuple(
        a for a in ("loadtxt", "genfromtxt", "fromfile", "fromregex", "load", "save",
                    "savetxt", "savez", "savez_compressed", "tofile", "memmap", "open_memmap",
                    "read_text", "read_bytes", "write_text", "write_bytes")), _FILES),
    **dict.fromkeys(("display", "publish_display_data"), "publishes outputs as grading does"),
}


def plain(text: str) -> str:
    """``text`` with what it does in plain words: "uses .f_back (reads the frames of
    running code, the cell that called it included)"."""
    match = re.fullmatch(r"uses \.?(\w+)", text)
    if match:
        name = match.group(1)
        said = PLAIN.get(name) or (_FILES if FILE_ATTRIBUTE.fullmatch(name) else None)
        if said:
            return f"{text} ({said})"
    return text


def parse(source: str):
    """``(tree, problem)``: the cell's syntax tree (IPython's ``%magic`` and ``!shell`` lines
    turned into the calls they make), or None and why not. A syntax error is no problem (the
    cell does not run in the kernel either); an expression nested so deep that the parser
    recurses too far is one (it must not stop grading, and its cell is not read)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:  # IPython's own transforms choked: parse the cell as it is
        pass
    try:
        return ast.parse(source), ""
    except SyntaxError:
        return None, ""
    except (RecursionError, MemoryError):
        return None, TOO_DEEP
    except (ValueError, TypeError) as err:  # a null byte and the like
        return None, f"could not be read ({type(err).__name__})"


def _unparse(node) -> str:
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError, TypeError):
        return "a nested expression"


def module_aliases(sources) -> set[str]:
    """Every name a notebook binds to a module grading relies on (``import numpy as xp``)."""
    aliases = set(MODULE_ALIASES)
    for source in sources:
        tree, _ = parse(source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in GUARDED_MODULES:
                        aliases.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                if (node.module or "").split(".")[0] in GUARDED_MODULES:
                    aliases.update(a.asname or a.name for a in node.names if a.name != "*")
        for node in ast.walk(tree):  # xp = np
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and \
                    node.value.id in aliases:
                aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return aliases


def _root(node) -> str | None:
    """The name an expression starts from: ``mha`` for ``vars(mha)["checks"].grading``, and
    ``vars`` for ``vars(vars(mha)[...])``."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("vars", "getattr") and node.args:
            inner = _root(node.args[0])
            return inner if inner else "vars"
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _call_name(func, aliases: dict) -> tuple[str, str] | None:
    """``("sys", "setprofile")`` for ``sys.setprofile(...)``, ``s.setprofile(...)`` after
    ``import sys as s``, or ``setprofile(...)`` after ``from sys import setprofile``."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return aliases.get(func.value.id, func.value.id), func.attr
    if isinstance(func, ast.Name) and func.id in aliases and "." in aliases[func.id]:
        module, name = aliases[func.id].rsplit(".", 1)
        return module, name
    return None


def _magic(call: ast.Call):
    """``(magic name, code)`` for ``get_ipython().run_line_magic("time", "x = 1")`` (what
    IPython turns ``%time x = 1`` into), ``("!", command)`` for a shell line, else None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython"):
        return None
    args = [a.value if isinstance(a, ast.Constant) else None for a in call.args]
    if func.attr in ("system", "getoutput"):
        return "!", args[0] if args else None
    if func.attr in ("run_line_magic", "run_cell_magic") and args and isinstance(args[0], str):
        return args[0], args[-1] if isinstance(args[-1], str) else None
    return None


def suspicious(source: str, guarded: set | None = None) -> list[str]:
    """What in ``source`` reaches past the answer: grading's machinery, the interpreter,
    the caller's frames, or module attributes it rewrites (one phrase each, with a line).
    ``guarded``: the names bound to NumPy, torch, mha ... anywhere in the notebook."""
    tree, problem = parse(source)
    if tree is None:
        return [problem] if problem else []
    guarded = set(guarded or ()) | module_aliases([source])
    found = []

    def note(node, text):
        entry = f"{plain(text)} (line {getattr(node, 'lineno', '?')})"
        if entry not in found:
            found.append(entry)

    skip = set()  # nodes already reported through the call that holds them
    # IPython's history names (``_i``, ``In`` ...) count only when the cell reads them without
    # assigning them itself (``for _i in range(3)`` is an ordinary loop variable).
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store) and n.id in HISTORY_NAMES}
    imported = {}  # local name -> module or module.function it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                imported[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                imported[a.asname or a.name] = f"{node.module or ''}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in SUSPECT_MODULES or "checks" in alias.name:
                    note(node, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in SUSPECT_MODULES or "checks" in module or any(
                    a.name in ("checks", "grading", "PREDICTIONS") for a in node.names):
                note(node, f"imports from {module or '.'}")
        elif id(node) in skip:
            continue
        elif isinstance(node, ast.Name) and node.id in SUSPECT_NAMES and \
                node.id not in assigned:
            note(node, f"uses {node.id}")
        elif isinstance(node, ast.Attribute) and (node.attr in SUSPECT_ATTRIBUTES
                                                  or FILE_ATTRIBUTE.fullmatch(node.attr)):
            note(node, f"uses .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and \
                COURSE_PATH.search(node.value if isinstance(node.value, str)
                                   else node.value.decode("latin-1")):
            note(node, f"names a path of the course's files ({str(node.value)[:60]!r})")
        elif isinstance(node, ast.Call):
            magic = _magic(node)
            if magic is not None:
                name, code = magic
                skip.update((id(node.func), id(node.func.value), id(node.func.value.func)))
                if name in QUIET_MAGICS:
                    for entry in suspicious(code or "", guarded):
                        note(node, f"in %{name}: {entry.rsplit(' (line', 1)[0]}")
                else:
                    note(node, "runs a shell command" if name == "!" else f"runs %{name}")
                continue
            if isinstance(node.func, ast.Name) and node.func.id == "vars" and node.args:
                root = _root(node.args[0])
                if root is not None and (root in guarded or root == "vars"):
                    owner = root if root != "vars" else "a module"
                    note(node, f"reaches into the namespace of {owner} (it can replace "
                               "grading's recorder or references: a forged grade)")
            called = _call_name(node.func, imported)
            if called and (called[0].split(".")[-1], called[1]) in SUSPECT_CALLS:
                skip.add(id(node.func))
                note(node, f"calls {called[0].split('.')[-1]}.{called[1]}")
            if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                    and len(node.args) >= 2:
                name = node.args[1]
                if not isinstance(name, ast.Constant):
                    note(node, f"uses {node.func.id} with a computed name")
                elif str(name.value) in SUSPECT_ATTRIBUTES | SUSPECT_NAMES:
                    note(node, f"uses {node.func.id}(..., {name.value!r})")
            if isinstance(node.func, ast.Attribute) and node.func.attr == "import_module" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                note(node, f"imports {node.args[0].value}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                base = target
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if base is not target and isinstance(base, ast.Name) and base.id in guarded:
                    note(node, f"rewrites {_unparse(target)}")
        elif isinstance(node, ast.ExceptHandler):
            caught = node.type
            names = set()
            if caught is None:
                names.add("everything (a bare except)")
            else:
                for item in (caught.elts if isinstance(caught, ast.Tuple) else [caught]):
                    if isinstance(item, ast.Name) and item.id in INTERRUPTS:
                        names.add(item.id)
            for name in sorted(names):
                note(node, f"catches {name}")
    return found


def _static_flags(nb) -> list[str]:
    flags = []
    guarded = module_aliases(c.source for c in nb.cells if c.cell_type == "code")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or utils.is_locked(cell):
            continue
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"an added cell ({index})"
        found = suspicious(cell.source, guarded)
        if found:
            flags.append(f"{where}: " + "; ".join(found))
    return flags


def forbidden_mentions(source: str, names: set, aliases: set | None = None) -> list[str]:
    """Where ``source`` names a function a task forbids (``mha.attention``, ``from mha import
    softmax``), even outside the answer function, where the profile hook does not look."""
    tree, _ = parse(source)  # a cell that cannot be read is flagged by suspicious()
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in (aliases or MODULE_ALIASES):
                found.append(f"names {_unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "mha", "scipy", "torch"):
            found += [f"imports {a.name} from {node.module} (line {node.lineno})"
                      for a in node.names if a.name in names]
    return found


def _rule_flags(nb) -> list[str]:
    """Answer code that names a function one of the notebook's tasks forbids."""
    names = set()
    for cell in nb.cells:
        match = HIDDEN_CALL.search(cell.source) if utils.is_grade(cell) else None
        if match and match.group(1) == "record":
            try:
                task = mha_grading.task_for(match.group(2), match.group(4))
            except Exception:
                continue
            names |= {name for rule in task.rules if rule.min_size is None
                      for _, name in rule.calls}
    flags = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or utils.is_locked(cell) or not names:
            continue
        found = forbidden_mentions(cell.source, names)
        if found:
            where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"an added cell ({index})"
            flags.append(f"{where}: " + "; ".join(found) + ", which a task forbids")
    return flags


def _defined_names(tree) -> set:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom):  # `from mha import causal_mask as cm`
            names |= {a.asname or a.name for a in node.names}
    return names


def rule_breaks(nb, task, variable: str) -> list[tuple[str, str]]:
    """``(rule text, where)`` for each forbidden function a task's rule names and the
    answer's code uses (the cell that defines ``variable``, and the cells defining the names
    it uses: a table built at definition time, a thread pool). Read with ``ast``, so a
    mention in a comment or a string is not a use. Rules bounded by size (a softmax on the
    whole row) are left to the profile hook."""
    by_name = {}
    for rule in task.rules:
        if rule.min_size is None:
            for _, name in rule.calls:
                by_name.setdefault(name, rule)
    if not by_name:
        return []
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or utils.is_locked(cell) or utils.is_grade(cell):
            continue
        tree, _ = parse(cell.source)
        if tree is not None:
            cells.append((index, cell, tree, _defined_names(tree)))
    wanted, seen, found = {variable}, set(), []
    aliases = module_aliases(c.source for _, c, _, _ in cells)
    while wanted - seen:
        name = (wanted - seen).pop()
        seen.add(name)
        for index, cell, tree, defined in cells:
            if name not in defined:
                continue
            wanted |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                       and isinstance(n.ctx, ast.Load)}
            where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
            for mention in forbidden_mentions(cell.source, set(by_name), aliases):
                rule = next(r for n, r in by_name.items() if f" {n} " in f" {mention} "
                            or f".{n} " in f" {mention} ")
                what, line = mention.rsplit(" (line ", 1)
                what = what.removeprefix("names ").removeprefix("imports ")
                entry = (rule.text, f"{what} (the cell {where}, line {line}")
                if entry not in found:
                    found.append(entry)
    return found


def _records(cell) -> list:
    return [o["data"][MIME] for o in cell.get("outputs", [])
            if o.get("output_type") in ("display_data", "execute_result")
            and MIME in o.get("data", {})]


class GradeOutsideKernel(NbGraderPreprocessor):
    """Judge each test cell's records in this process; the cell's outputs become the
    verdict."""

    def preprocess(self, nb, resources):
        flags = _flags(nb)
        self._timeout = resources.get("mha_cell_timeout")
        flags += _static_flags(nb) + _rule_flags(nb)
        try:
            with Gradebook(_ids(resources)[3]) as gb:
                flags += leaked_outputs(nb, secret_skeletons(hidden_lines(gb)))
        except Exception as err:  # the outputs are scrubbed again when feedback is made
            self.log.warning("the leak check raised %s", error_text(err))
        for index, cell in enumerate(nb.cells):
            stopped = cell.metadata.get("mha_stopped")
            if stopped and not utils.is_grade(cell):
                where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
                flags.append(f"{where}: {stopped}")
            if cell.cell_type == "code" and utils.is_grade(cell):
                self.grade(cell, flags, nb)
        neutralise_markers(nb, flags)
        return nb, resources

    def grade(self, cell, flags: list, nb=None) -> None:
        match = HIDDEN_CALL.search(cell.source)
        if match is None:
            return
        kind, task, variable, behaviour = match.groups()
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        records = _records(cell)
        stopped = cell.metadata.get("mha_stopped")
        passed, text = False, ""
        ename = "CheckFailed"  # the error's name, as the learner's kernel raises it
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                if not records:
                    text = self.no_records(cell, variable, stopped)
                    if not stopped and "is not defined" not in text:
                        flags.append(f"{grade_id}: the test cell left no grading record")
                elif kind == "record_answer":
                    text, passed = mha_grading.judge_answer(task, records), True
                else:
                    text, passed = mha_grading.judge_records(task, behaviour, records,
                                                             name=variable), True
            except mha_grading.RecordProblem as problem:
                flags.append(f"{grade_id}: {problem}")
                text = (f"{variable}: grading could not read what this cell recorded "
                        f"({problem}); your instructor will look at it.")
            except AssertionError as failed:
                text = str(failed)
                if isinstance(failed, NotAttempted):
                    ename = "NotAttempted"
            except Exception as err:  # a bug of grading, not of the student: say so
                flags.append(f"{grade_id}: grading raised {error_text(err)}")
                text = f"{variable}: grading could not judge this cell ({error_text(err)})."
        if stopped and not passed and "time limit" not in text and "stopped" not in text:
            text = f"{text} ({stopped}.)"
        limit = self.cell_timeout()
        if limit and "the time limit" in text and " s for the whole test cell" not in text:
            text = text.replace("the time limit", f"the time limit ({limit:g} s for the whole "
                                "test cell)", 1)
        if nb is not None and kind == "record" and records:
            try:
                breaks = rule_breaks(nb, mha_grading.task_for(task, behaviour), variable)
            except Exception as err:  # a bug of grading's rule scan: the record still decides
                self.log.warning("%s: the rule scan raised %s", grade_id, error_text(err))
                breaks = []
            if breaks and (passed or "the task says" not in text):
                rule, where = breaks[0]
                said = (f"{variable}: the task says {rule}; your answer uses {where}, so "
                        "this cell gets no points.")
                text = said if passed else f"{text}\n{said}"
                passed = False
        cell.outputs = ([NotebookNode(output_type="stream", name="stdout", text=text + "\n")]
                        # the page shows the traceback, not the ename: it starts as the
                        # learner's notebook says it (mha.checks' handler), not "CheckFailed"
                        if passed else [_error_output(ename, text, NOT_YET)])

    def cell_timeout(self) -> float | None:
        """nbgrader's time limit per cell (``c.Execute.timeout``) in seconds, as
        RobustExecute left it in the resources."""
        value = getattr(self, "_timeout", None)
        return float(value) if isinstance(value, (int, float)) and value > 0 else None

    @staticmethod
    def no_records(cell, variable: str, stopped) -> str:
        if stopped:
            return f"{variable}: {stopped}; it gets no points."
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors and errors[0].get("ename") == "NameError":
            return (f"{variable} is not defined when this test cell runs: the cell that "
                    "defines it is missing, raised an error, or defines another name.")
        if errors:
            return (f"{variable}: this test cell could not run your answer: "
                    f"{errors[0].get('ename')}: {str(errors[0].get('evalue'))[:300]}")
        return (f"{variable}: grading found no record of your answer in this cell; something "
                "in the notebook replaced the grading functions. Your instructor will look.")


MARKERS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def neutralise_markers(nb, flags: list) -> None:
    """nbgrader's hidden-test markers count only in the set's own test cells: in any other
    cell of the graded copy (a comment, a string) they are rewritten, so that
    generate_feedback's ClearHiddenTests does not fail on an unmatched one (it raised "No end
    hidden tests statement found" and the submission got no feedback). Runs after the cells
    ran, so the code ran as written."""
    for index, cell in enumerate(nb.cells):
        if utils.is_grade(cell) or not any(m in cell.get("source", "") for m in MARKERS):
            continue
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
        flags.append(f"{where}: holds nbgrader's hidden-test marker, which only the set's test "
                     "cells may hold (rewritten as [hidden-tests marker] in the graded copy)")
        for marker in MARKERS:
            cell.source = cell.source.replace(marker, "[hidden-tests marker]")


class SaveGradingFlags(NbGraderPreprocessor):
    """Put the notes in the gradebook: needs_manual_grade on every grade, and each note as
    the automatic comment of the answer cell it concerns (a note that names no answer cell:
    an added cell, a test cell, the notebook, goes on the first answer cell)."""

    def preprocess(self, nb, resources):
        flags = nb.metadata.get(FLAGS, {}).get("flags", [])
        if not flags:
            return nb, resources
        notebook_id, assignment_id, student_id, db_url = _ids(resources)
        with Gradebook(db_url) as gb:
            comments = {}
            for cell in nb.cells:
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                if not grade_id:
                    continue
                if utils.is_grade(cell):
                    grade = gb.find_grade(grade_id, notebook_id, assignment_id, student_id)
                    grade.needs_manual_grade = True
                if utils.is_solution(cell) or utils.is_task(cell):
                    comments[grade_id] = gb.find_comment(grade_id, notebook_id, assignment_id,
                                                         student_id)
            if comments:
                notes = {}
                first = next(iter(comments))
                for flag in flags:
                    where = flag.split(":", 1)[0]
                    notes.setdefault(where if where in comments else first, []).append(flag)
                for grade_id, said in notes.items():
                    comments[grade_id].auto_comment = REVIEW + "; ".join(said)
            gb.db.commit()
        return nb, resources


# -- feedback and export ----------------------------------------------------------------------

def hidden_lines(gb, notebook_id: str | None = None, assignment_id: str | None = None
                 ) -> list[str]:
    """The hidden lines of one set's notebook, or of every set in the gradebook (a
    submission can read another set's sources too)."""
    lines = set()
    if assignment_id is None:
        notebooks = [nb for a in gb.assignments for nb in a.notebooks]
    else:
        notebooks = [gb.find_notebook(notebook_id, assignment_id)]
    for notebook in notebooks:
        for cell in notebook.source_cells:
            text = cell.source or ""
            if "BEGIN HIDDEN TESTS" not in text:
                continue
            released = set(released_source(text).splitlines())
            for line in text.splitlines():
                if line.strip() and line not in released and len(line.strip()) >= 8:
                    lines.add(line.strip())
    return sorted(lines, key=len, reverse=True)


# Flag reasons that mean the submission can read files, frames, tracebacks, IPython's history
# or the process: its feedback shows none of its own cells' outputs (what it printed may be
# anything it read, in any encoding), only the test cells' verdicts. The instructor's
# autograded notebook keeps every output. One place, matched against the review reasons.
READS = re.compile(
    r"imports (from |[\w.]+ \(line)|uses (open|exec|eval|compile|__import__|globals|locals|"
    r"vars|get_ipython|In|Out|_ih|_oh|_i|_ii|_iii|__builtins__|breakpoint|getattr|hasattr)\b|"
    r"uses \.|runs |in %|could not be read|calls (sys|os|posix|gc)\.|names a path|"
    r"printed the hidden test code")
WITHHELD = ("outputs withheld: this submission reads files, frames, tracebacks, history or the "
            "process (see the review flags); your instructor will review it.")
MAX_OUTPUT = 20_000  # characters of one output the feedback shows


def _skeleton(text: str) -> str:
    return re.sub(r"[^a-z0-9_]", "", text.lower())


def secret_skeletons(lines) -> list[str]:
    """The hidden lines as :func:`leak` compares them (letters, digits and ``_`` only, so
    that quoting, escaping and spacing do not matter), with nbgrader's hidden-test marker."""
    found = {_skeleton(line) for line in lines} | {"beginhiddentests", "endhiddentests"}
    return sorted((k for k in found if len(k) >= 16), key=len, reverse=True)


def _decodings(text: str):
    """``(how, text)``: the text and what simple encodings in it decode to."""
    import base64
    import codecs

    yield "as printed", text
    yield "in ROT13", codecs.decode(text, "rot13")
    for run in re.findall(r"(?:[0-9a-fA-F]{2}(?:[\s:,]|\\x|0x)*){12,}", text):
        digits = re.sub(r"\\x|0x|[^0-9a-fA-F]", "", run)
        with contextlib.suppress(ValueError):
            yield "in hexadecimal", bytes.fromhex(digits[: len(digits) // 2 * 2]).decode(
                "latin-1")
    for run in re.findall(r"[A-Za-z0-9+/_-]{16,}={0,2}", text):
        for decode in (base64.b64decode, base64.urlsafe_b64decode, base64.b32decode):
            with contextlib.suppress(ValueError, TypeError):
                yield "in base64", decode(run + "=" * (-len(run) % 4)).decode("latin-1")
    for run in re.findall(r"(?:\b\d{1,7}\b[\s,;]*){12,}", text):
        with contextlib.suppress(ValueError, OverflowError):
            yield "as character codes", "".join(chr(int(n)) for n in re.findall(r"\d+", run))


def leak(text: str, skeletons: list[str]) -> str | None:
    """How ``text`` shows a hidden line or the hidden-test marker (as printed, reversed,
    in ROT13, hexadecimal, base64 or character codes, in any case and quoting), else None.
    Only what a feedback page would show is read (:data:`MAX_OUTPUT` characters)."""
    if not skeletons or not text:
        return None
    for how, decoded in _decodings(text[: MAX_OUTPUT + 1000]):
        flat = _skeleton(decoded)
        for order, probe in (("", flat), (", reversed", flat[::-1])):
            if any(k in probe for k in skeletons):
                return how + order
    return None


def output_texts(output) -> list[str]:
    texts = [output.get("text"), output.get("evalue")]
    texts += list(output.get("traceback") or [])
    texts += [v for v in (output.get("data") or {}).values() if isinstance(v, str)]
    return [t if isinstance(t, str) else "".join(t) for t in texts
            if isinstance(t, (str, list))]


def leaked_outputs(nb, skeletons: list[str]) -> list[str]:
    """A flag for each cell (not a test cell) whose outputs show hidden test code."""
    flags = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or utils.is_grade(cell):
            continue
        for output in cell.get("outputs", []):
            how = next((h for h in (leak(t, skeletons) for t in output_texts(output)) if h),
                       None)
            if how:
                where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
                flags.append(f"{where}: printed the hidden test code of a set ({how}); its "
                             "outputs are withheld from the feedback")
                break
    return flags


def withholds(reasons: str) -> bool:
    return bool(READS.search(reasons or ""))


class ScrubHiddenSource(NbGraderPreprocessor):
    """Remove every line of every set's hidden tests from every output the feedback shows,
    cut long outputs, and withhold the student's own cells' outputs when the submission was
    flagged for reading what it should not (:data:`READS`)."""

    def preprocess(self, nb, resources):
        _, assignment_id, student_id, db_url = _ids(resources)
        with Gradebook(db_url) as gb:
            try:
                secrets = hidden_lines(gb)
            except MissingEntry:
                secrets = []
            skeletons = secret_skeletons(secrets)
            withhold = withholds(review_reasons(gb, assignment_id, student_id))
        said = False
        for cell in nb.cells:
            if not utils.is_grade(cell) and "HIDDEN TESTS" in cell.get("source", ""):
                # the student's own words (a search for the marker in a file it read): no
                # hidden line, but the page never shows the marker's words at all
                cell.source = cell.source.replace("HIDDEN TESTS", "[hidden tests]")
            if cell.cell_type != "code":
                continue
            if withhold and not utils.is_grade(cell):
                text = "(output withheld)" if said else WITHHELD
                cell.outputs = ([NotebookNode(output_type="stream", name="stdout",
                                              text=text + "\n")] if cell.get("outputs") else [])
                said = said or bool(cell.outputs)
                continue
            kept = []
            for output in cell.get("outputs", []):
                if MIME in output.get("data", {}):
                    continue
                if not utils.is_grade(cell) and any(leak(t, skeletons)
                                                    for t in output_texts(output)):
                    output = NotebookNode(output_type="stream", name="stdout",
                                          text="(output withheld: it shows hidden test code)\n")
                kept.append(_cap(_scrub(output, secrets)))
            cell.outputs = kept
        return nb, resources


def _cap(output):
    """An output cut to :data:`MAX_OUTPUT` characters per text, saying how much was cut."""
    def cut(text: str) -> str:
        if len(text) <= MAX_OUTPUT:
            return text
        return (text[:MAX_OUTPUT] + f"\n[... {len(text) - MAX_OUTPUT:,} more characters of "
                "this output are not shown here]\n")
    for key in ("text",):
        if isinstance(output.get(key), str):
            output[key] = cut(output[key])
    data = output.get("data")
    if isinstance(data, dict):
        for mime, value in list(data.items()):
            if isinstance(value, str) and len(value) > MAX_OUTPUT:
                if mime == "text/plain":
                    data[mime] = cut(value)
                else:
                    del data[mime]
                    data.setdefault("text/plain", f"[a {mime} output of {len(value):,} "
                                    "characters, not shown here]")
    if isinstance(output.get("traceback"), list):
        output["traceback"] = [cut(t) for t in output["traceback"][:50]]
    return output


def _scrub(value, secrets):
    if isinstance(value, str):
        for line in secrets:
            value = value.replace(line, "[a hidden test line]")
        if "BEGIN HIDDEN TESTS" in value or "END HIDDEN TESTS" in value:
            value = value.replace("BEGIN HIDDEN TESTS", "[hidden]").replace(
                "END HIDDEN TESTS", "[hidden]")
        return value
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return type(value)({k: _scrub(v, secrets) for k, v in value.items()})
    return value


class ReviewCsvExport(CsvExportPlugin):
    """nbgrader's CSV plus a ``needs_review`` column: why grading flagged a submission."""

    def export(self, gradebook):
        super().export(gradebook)
        dest = self.to or "grades.csv"
        with open(dest, newline="") as f:
            rows = list(csv.DictReader(f))
        fields = (list(rows[0].keys()) if rows else []) + ["needs_review"]
        for row in rows:
            row["needs_review"] = review_reasons(gradebook, row["assignment"], row["student_id"])
        with open(dest, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)


def review_reasons(gradebook, assignment: str, student: str) -> str:
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return ""
    reasons = []
    for notebook in submission.notebooks:
        for comment in notebook.comments:
            text = comment.auto_comment or ""
            if text.startswith(REVIEW):
                reasons.append(text[len(REVIEW):])
        if not reasons and any(g.needs_manual_grade for g in notebook.grades):
            reasons.append("needs manual grading")
    return " | ".join(reasons)
