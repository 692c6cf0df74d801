"""An exercise task: its cases, its known mistakes, the rules its text states.

A :class:`Task` runs an answer on each case while it watches three things the values
alone do not show: calls to a function the task forbids (a :class:`Rule`, seen by a
profile hook, whatever name the answer gave the function), a memory peak that only a
forbidden construction reaches (the n x n Jacobian), and writes into the inputs. Then
:func:`mha.checks._core.judge` compares the outputs with the reference and names the
mistake.

The same :meth:`Task.verdict` judges outcomes observed in the learner's kernel (the check
in a test cell) and outcomes recorded there and judged by the grader in its own process
(:mod:`mha.checks.grading`).
"""

from __future__ import annotations

import _thread
import dataclasses
import sys
import threading
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._core import (
    NOT_ATTEMPTED,
    Case,
    CheckFailed,
    NotAttempted,
    Passed,
    case_label,
    error_text,
    graded_elsewhere,
    judge,
    show,
)


@dataclass(frozen=True)
class Rule:
    """A rule the task text states, e.g. "do not call mha.softmax".

    ``calls``: ``(module prefix, function name)`` pairs whose call breaks it, seen by a
    profile hook whatever name the answer gave the function (``from mha import softmax as
    s`` too): Python functions by the module that defines them, C functions (torch) by the
    module of the function or of the tensor a method is called on. ``min_size(case)``: only
    calls whose first argument has at least this many elements count (a softmax on the
    whole row, not on a block); such calls are seen wherever their size can be read: Python
    functions by the profile hook, torch's functions and methods (``torch.softmax``,
    ``Tensor.softmax``, ``torch.exp``) by a torch function mode, and NumPy's ufuncs
    (``("numpy", "exp")``) by a stand-in put at ``numpy.exp`` while the answer runs, and at
    the names the answer's code bound to it before (``from numpy import exp``: ``_Rebinds``);
    torch calls in threads the answer starts go through the case's function mode too.
    ``max_peak(case)``: bytes the answer may hold at its peak (numbers traced by tracemalloc,
    which sees NumPy's arrays, or the largest tensor a torch call returned), or None.
    ``allowed_mha``: when set, every function of the mha package the answer calls breaks the
    rule unless its ``module.qualname`` starts with one of these (``mha.multihead``'s
    MultiHeadAttention does the attention a task asks for, whatever it calls inside).
    """

    text: str
    calls: tuple = ()
    min_size: Callable | None = None
    max_peak: Callable | None = None
    detail: str = "calls {name}"
    allowed_mha: tuple | None = None


@dataclass
class Observation:
    """What one case did: its output or error, and what the watchers saw."""

    out: object = None
    err: BaseException | None = None
    stopped: str = ""  # an exception that stopped the run (KeyboardInterrupt, SystemExit)
    broken: list = field(default_factory=list)  # (rule text, detail)
    mutated: list = field(default_factory=list)  # indices of inputs written into


def _first_arg_size(frame) -> int:
    code = frame.f_code
    if code.co_argcount == 0:
        return 0
    value = frame.f_locals.get(code.co_varnames[0])
    try:
        return int(np.size(value)) if not hasattr(value, "numel") else int(value.numel())
    except Exception:
        return 0


# Libraries whose frames stand between a call and whoever asked for it: a forbidden call
# from inside them is judged by the frame that called into them (``np.apply_along_axis``
# given ``mha.softmax``, a thread pool's worker running what the answer submitted).
_PASS_THROUGH = ("numpy", "torch", "scipy")


def _module_of(frame) -> str:
    return frame.f_globals.get("__name__", "") or ""


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _made_by_answer(caller, name: str) -> bool:
    """Whether the call of ``name`` made from frame ``caller`` is the answer's own.

    False only when the nearest frame up the stack that is neither NumPy, torch, SciPy nor
    the standard library is a function of the mha package whose code names ``name`` itself
    (``mha.causal_mask`` calling ``mha.masks.mask_from_positions``: the answer called an
    allowed function). True when that frame is the answer's code or a helper it defined,
    ``mha.checks`` (which calls the answer, so an answer that *is* the forbidden function
    counts), an mha function calling a function handed to it
    (``mha.numerical.numerical_jacobian(mha.softmax, x)``), or when the stack ends first (a
    thread the answer started)."""
    frame = caller
    while frame is not None:
        module = _module_of(frame)
        top = module.partition(".")[0]
        if _in_package(module, "mha"):
            return _in_package(module, "mha.checks") or name not in frame.f_code.co_names
        if not (top in _PASS_THROUGH or top in sys.stdlib_module_names):
            return True
        frame = frame.f_back
    return True


def _called_by_answer(caller) -> bool:
    """Whether the nearest frame from ``caller`` up that is neither NumPy, torch, SciPy nor
    the standard library is outside the mha package, or in ``mha.checks`` (the answer's
    code, a helper it defined, a thread it started), not a function of mha."""
    frame = caller
    while frame is not None:
        module = _module_of(frame)
        top = module.partition(".")[0]
        if _in_package(module, "mha"):
            return _in_package(module, "mha.checks")
        if not (top in _PASS_THROUGH or top in sys.stdlib_module_names):
            return True
        frame = frame.f_back
    return True


class _Watch:
    """A profile hook that notes calls to the functions ``rules`` forbid, when the answer
    makes them (see :func:`_made_by_answer`), not an allowed mha function it calls."""

    def __init__(self, rules: Sequence[Rule], case: Case):
        self.case = case
        self.by_name: dict = {}
        for rule in rules:
            for module, fname in rule.calls:
                self.by_name.setdefault(fname, []).append((rule, module))
        self.only_mha = [r for r in rules if r.allowed_mha is not None]
        self.hits: list = []
        self.rebinds: _Rebinds | None = None

    def __call__(self, frame, event, arg):
        if event == "call":
            if self.rebinds is not None and id(frame.f_globals) not in self.rebinds.seen:
                module = _module_of(frame)
                top = module.partition(".")[0]
                if not (_in_package(module, "mha") or top in _PASS_THROUGH
                        or top in sys.stdlib_module_names):
                    self.rebinds.namespace(frame.f_globals)
            if self.only_mha:
                self._mha_call(frame)
            found = self.by_name.get(frame.f_code.co_name)
            if found and _made_by_answer(frame.f_back, frame.f_code.co_name):
                where = _module_of(frame)
                for rule, module in found:
                    if where.startswith(module) and (rule.min_size is None or _first_arg_size(
                            frame) >= rule.min_size(self.case)):
                        self._hit(rule, f"{where}.{frame.f_code.co_name}")
        elif event == "c_call":
            found = self.by_name.get(getattr(arg, "__name__", ""))
            if found and _made_by_answer(frame, arg.__name__):
                owner = getattr(arg, "__self__", None)
                where = getattr(arg, "__module__", None) or type(owner).__module__ or ""
                for rule, module in found:
                    if where.startswith(module) and rule.min_size is None:
                        self._hit(rule, f"{module}.{arg.__name__}")

    def _mha_call(self, frame) -> None:
        module = _module_of(frame)
        if (not _in_package(module, "mha") or _in_package(module, "mha.checks")
                or frame.f_code.co_name == "<module>"):  # importing a module calls nothing
            return
        name = f"{module}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"
        for rule in self.only_mha:
            if not name.startswith(rule.allowed_mha) and _called_by_answer(frame.f_back):
                self._hit(rule, name)

    def sized_call(self, name: str, module: str, value, caller) -> None:
        """A call seen outside the profile hook (torch's function mode, the NumPy ufunc
        stand-in): ``name`` of ``module`` on ``value``."""
        found = self.by_name.get(name)
        if not found or not _made_by_answer(caller, name):
            return
        size = _size(value)
        for rule, prefix in found:
            if module.startswith(prefix) and rule.min_size is not None and size >= \
                    rule.min_size(self.case):
                self._hit(rule, f"{module}.{name}")

    def _hit(self, rule: Rule, name: str) -> None:
        entry = (rule.text, rule.detail.format(name=name))
        if entry not in self.hits:
            self.hits.append(entry)


def _size(value) -> int:
    try:
        return int(value.numel()) if hasattr(value, "numel") else int(np.size(value))
    except Exception:
        return 0


class _UfuncStandIn:
    """Put at ``numpy.<name>`` while an answer runs: tells the watch the size of what the
    ufunc is called on, then calls it (its attributes are the ufunc's)."""

    def __init__(self, ufunc, watch: _Watch):
        self._ufunc, self._watch = ufunc, watch

    def __call__(self, *args, **kwargs):
        if args:
            self._watch.sized_call(self._ufunc.__name__, "numpy", args[0], sys._getframe(1))
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, attr):
        return getattr(self._ufunc, attr)

    def __repr__(self) -> str:
        return repr(self._ufunc)


class _Rebinds:
    """Names the answer's own code bound to a watched ufunc before it ran (``from numpy import
    exp``, ``exp = np.exp``, a default argument, a closure's cell): each is pointed at the
    stand-in while the answer runs and back afterwards (a name the answer rebinds meanwhile
    is left as it made it). The answer's globals are swapped before it starts; the globals of
    other code it calls (a module of its own) when the profile hook first sees a call there."""

    def __init__(self, stand_ins: dict):
        self.by_id = {id(ufunc): stand_in for ufunc, stand_in in stand_ins.items()}
        self.seen: set = set()
        self.undo: list = []  # (restore function)

    def namespace(self, names: dict) -> None:
        if id(names) in self.seen or not self.by_id:
            return
        self.seen.add(id(names))
        for key, value in list(names.items()):
            stand_in = self.by_id.get(id(value))
            if stand_in is not None and isinstance(value, np.ufunc):
                names[key] = stand_in
                self.undo.append(lambda d=names, k=key, u=value, s=stand_in: (
                    d.__setitem__(k, u) if d.get(k) is s else None))

    def function(self, fn) -> None:
        fn = getattr(fn, "__func__", fn)
        globals_ = getattr(fn, "__globals__", None)
        if isinstance(globals_, dict):
            self.namespace(globals_)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                stand_in = self.by_id.get(id(cell.cell_contents))
            except ValueError:  # an empty cell
                continue
            if stand_in is not None:
                value = cell.cell_contents
                cell.cell_contents = stand_in
                self.undo.append(lambda c=cell, u=value, s=stand_in: (
                    setattr(c, "cell_contents", u) if c.cell_contents is s else None))
        defaults = getattr(fn, "__defaults__", None)
        if defaults and any(id(d) in self.by_id for d in defaults):
            fn.__defaults__ = tuple(self.by_id.get(id(d), d) for d in defaults)
            self.undo.append(lambda f=fn, d=defaults: setattr(f, "__defaults__", d))
        kwdefaults = getattr(fn, "__kwdefaults__", None)
        if kwdefaults and any(id(d) in self.by_id for d in kwdefaults.values()):
            fn.__kwdefaults__ = {k: self.by_id.get(id(d), d) for k, d in kwdefaults.items()}
            self.undo.append(lambda f=fn, d=kwdefaults: setattr(f, "__kwdefaults__", d))

    def restore(self) -> None:
        for undo in reversed(self.undo):
            undo()
        self.undo.clear()


def _ufuncs_to_watch(rules: Sequence[Rule]) -> list:
    names = {fname for r in rules if r.min_size is not None for module, fname in r.calls
             if module == "numpy"}
    return [n for n in sorted(names) if isinstance(getattr(np, n, None), np.ufunc)]


def _torch_mode(watch: _Watch | None, sized: bool, peaks: bool):
    """A torch function mode that tells ``watch`` the size of the first argument of each
    torch call (``torch.softmax``, ``Tensor.exp``: C functions whose arguments the profile
    hook cannot see) and keeps the size in bytes of the largest tensor a call returned;
    None when torch is not loaded (an answer that uses it imported it already)."""
    torch = sys.modules.get("torch")
    if torch is None or not (sized or peaks):
        return None
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        largest = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            return self.handle(func, args, kwargs, sys._getframe(1))

        def handle(self, func, args, kwargs, caller):
            out = func(*args, **(kwargs or {}))
            if sized and args:
                name = getattr(func, "__name__", "") or ""
                module = getattr(func, "__module__", None) or "torch"
                watch.sized_call(name, module if module.startswith("torch") else "torch",
                                 args[0], caller)
            if peaks:
                for t in (out if isinstance(out, (tuple, list)) else (out,)):
                    if isinstance(t, torch.Tensor):
                        with torch._C.DisableTorchFunction():
                            nbytes = t.numel() * t.element_size()
                        self.largest = max(self.largest, nbytes)
            return out

    return Mode()


# The watch and torch function mode of the case being recorded, for threads the answer starts
# (a thread pool started in the answer cell and reused keeps this hook and this mode, which
# always report to the current ones).
_CURRENT: list = [None]
_CURRENT_MODE: list = [None]


def _forwarding_mode():
    """A torch function mode for a thread the answer starts (torch's modes belong to the
    thread that entered them): it hands each call to the current case's mode, if any."""
    from torch.overrides import TorchFunctionMode

    class Forward(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            mode = _CURRENT_MODE[0]
            if mode is None:
                return func(*args, **(kwargs or {}))
            return mode.handle(func, args, kwargs, sys._getframe(1))

    return Forward()


_THREAD = threading.local()


def _thread_hook(frame, event, arg):
    if _CURRENT_MODE[0] is not None and not getattr(_THREAD, "forwarding", False):
        # the first event of a thread the answer started: torch's calls there go through a
        # mode that hands them to the current case's (left on the thread's mode stack)
        _THREAD.forwarding = True
        _forwarding_mode().__enter__()
    watch = _CURRENT[0]
    if watch is not None:
        watch(frame, event, arg)


_START_NEW_THREAD = {name: getattr(_thread, name) for name in (
    "start_new_thread", "start_new", "start_joinable_thread") if hasattr(_thread, name)}


def _watched_start(start):
    """``_thread.start_new_thread`` (which ``threading.setprofile`` does not reach) starting
    its function under the watch's hook."""
    def start_new_thread(function, args=(), kwargs=None, *rest, **options):
        def run(*a, **k):
            sys.setprofile(_thread_hook)
            return function(*a, **k)
        if kwargs is None:
            return start(run, tuple(args), *rest, **options)
        return start(run, tuple(args), kwargs, *rest, **options)
    return start_new_thread


def _snapshot(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value).__module__.startswith("torch") and hasattr(value, "clone"):
        return value.detach().clone()
    return None


def _changed(before, after) -> bool:
    if isinstance(before, np.ndarray):
        return not (before.shape == np.shape(after) and np.array_equal(
            before, np.asarray(after), equal_nan=before.dtype.kind in "fc"))
    try:
        import torch

        return not torch.equal(before, after.detach())
    except Exception:
        return True


def observe(task: Task, answer, case: Case, catch_interrupts: bool = False) -> Observation:
    """Run ``answer`` on ``case`` under the task's watchers."""
    args = tuple(a.copy() if isinstance(a, np.ndarray) else
                 (a.detach().clone() if _snapshot(a) is not None else a) for a in case.args)
    before = [_snapshot(a) for a in args]
    peak_rules = [r for r in task.rules if r.max_peak is not None and r.max_peak(case)]
    call_rules = [r for r in task.rules if r.calls or r.allowed_mha is not None]
    watch = _Watch(call_rules, case) if call_rules else None
    sized = watch is not None and any(r.min_size is not None for r in call_rules)
    mode = _torch_mode(watch, sized, bool(peak_rules))
    ufuncs = _ufuncs_to_watch(call_rules) if watch is not None else []
    stand_ins = {getattr(np, name): _UfuncStandIn(getattr(np, name), watch) for name in ufuncs}
    rebinds = _Rebinds(stand_ins) if stand_ins else None
    obs = Observation()
    tracing = False
    old_profile = sys.getprofile()
    old_thread_profile = getattr(threading, "_profile_hook", None)
    old_ufuncs = {name: getattr(np, name) for name in ufuncs}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if peak_rules and not tracemalloc.is_tracing():
                tracemalloc.start()
                tracing = True
            if peak_rules:
                tracemalloc.reset_peak()
            if watch is not None:  # threads the answer starts are watched too
                _CURRENT[0] = watch
                _CURRENT_MODE[0] = mode
                threading.setprofile(_thread_hook)
                for name, start in _START_NEW_THREAD.items():
                    setattr(_thread, name, _watched_start(start))
                for name, ufunc in old_ufuncs.items():
                    setattr(np, name, stand_ins[ufunc])
                if rebinds is not None:  # `from numpy import exp` run before the answer
                    watch.rebinds = rebinds
                    try:
                        for fn in (getattr(answer, "func", None), answer,  # functools.partial
                                   type(answer).__dict__.get("__call__")):  # a callable object
                            rebinds.function(fn)
                    except Exception:  # an odd callable: its calls still meet numpy.exp's
                        pass
                sys.setprofile(watch)
            try:
                if mode is not None:
                    with mode:
                        obs.out = task.call(answer, args, case.kwargs)
                else:
                    obs.out = task.call(answer, args, case.kwargs)
            finally:
                if watch is not None:
                    sys.setprofile(old_profile)
                    threading.setprofile(old_thread_profile)
                    for name, start in _START_NEW_THREAD.items():
                        setattr(_thread, name, start)
                    for name, ufunc in old_ufuncs.items():
                        setattr(np, name, ufunc)
                    if rebinds is not None:
                        rebinds.restore()
                    _CURRENT[0] = None
                    _CURRENT_MODE[0] = None
            if peak_rules:
                peak = max(tracemalloc.get_traced_memory()[1],
                           mode.largest if mode is not None else 0)
                for rule in peak_rules:
                    if peak > rule.max_peak(case):
                        obs.broken.append((rule.text, rule.detail.format(
                            name=f"{peak / 1e6:.1f} MB", peak=peak)))
    except Exception as err:  # the learner's error: reported as such
        obs.err = err
    except BaseException as err:  # KeyboardInterrupt (the time limit), SystemExit
        if not catch_interrupts:
            raise
        obs.stopped = error_text(err)
    finally:
        if tracing:
            tracemalloc.stop()
    if watch is not None:
        obs.broken[:0] = watch.hits
    obs.mutated = [i for i, (b, a) in enumerate(zip(before, args, strict=True))
                   if b is not None and _changed(b, a)]
    return obs


def _default_call(answer, args, kwargs):
    return answer(*args, **kwargs)


def _renamed(prepare: Callable | None, old: str, new: str) -> Callable | None:
    """``prepare`` whose failure messages start with ``new:`` instead of ``old:``."""
    if prepare is None:
        return None

    def renamed(got):
        try:
            return prepare(got)
        except CheckFailed as failed:
            text = str(failed)
            if text.startswith(old + ":"):
                raise type(failed)(new + text[len(old):]) from None
            raise
    return renamed


@dataclass(frozen=True)
class Task:
    """One graded behaviour family: ``check(answer, behaviour)`` for the learner, the same
    cases plus the hidden ones for grading."""

    name: str
    reference: Callable
    cases: tuple
    mistakes: tuple = ()
    atol: float = 1e-6
    prepare: Callable | None = None
    rules: tuple = ()
    keeps_inputs: bool = False  # the task says the answer must not change its inputs
    call: Callable = _default_call
    judge_fn: Callable | None = None  # (task, cases, outcomes) -> line, for non-value checks
    # messages name the learner's function by its own name (ex04's ``causal``, lesson 00's
    # ``causal_mask``) rather than by the task's
    says_answer_name: bool = False

    def answer_name(self, answer) -> str | None:
        name = getattr(answer, "__name__", None)
        if self.says_answer_name and isinstance(name, str) and name.isidentifier():
            return name
        return None

    def cases_for(self, behaviour: str | None, include_hidden: bool = False) -> list[Case]:
        chosen = [c for c in self.cases if (behaviour is None or c.behaviour == behaviour)
                  and (include_hidden or not c.hidden)]
        if not chosen:
            raise ValueError(f"{self.name}: no cases for behaviour {behaviour!r}.")
        return chosen

    def check(self, answer, behaviour: str | None = None) -> str:
        """The learner's check: the visible cases; one line on success, else CheckFailed."""
        __tracebackhide__ = True
        cases = self.cases_for(behaviour)
        if graded_elsewhere():
            return Passed(f"{self.name}: graded by nbgrader.")
        self.refuse_non_answers(answer)
        observations = []
        for case in cases:
            obs = observe(self, answer, case)
            observations.append(obs)
            if obs.err is not None and isinstance(obs.err, NotImplementedError):
                break
        return self.verdict(cases[: len(observations)], observations,
                            name=self.answer_name(answer))

    def refuse_non_answers(self, answer) -> None:
        if answer is None or answer is Ellipsis:
            raise NotAttempted(f"{self.name}: not attempted yet (it is still {answer!r}).")
        if not callable(answer):
            raise CheckFailed(f"{self.name}: expected a function; got {show(answer)}.")

    def verdict(self, cases: Sequence[Case], observations: Sequence[Observation],
                name: str | None = None) -> str:
        """Judge what the answer did on ``cases`` (in order; fewer observations than cases
        when a run stopped): one line on success, else :class:`CheckFailed`. ``name``: the
        learner's name for the function, used by a task that ``says_answer_name``."""
        __tracebackhide__ = True
        if self.says_answer_name and name and name.isidentifier() and name != self.name:
            return dataclasses.replace(self, name=name, prepare=_renamed(
                self.prepare, self.name, name)).verdict(cases, observations)
        for obs in observations:
            if obs.err is not None and (isinstance(obs.err, NotImplementedError) or getattr(
                    obs.err, "type_name", "") == "NotImplementedError"):
                raise NotAttempted(f"{self.name}: {NOT_ATTEMPTED}") from None
        for case, obs in zip(cases, observations, strict=False):
            if obs.stopped:
                raise CheckFailed(
                    f"{self.name}: your function was stopped on case {case_label(case)} by "
                    f"{obs.stopped.split(':')[0]}: it ran past the time limit (or raised it "
                    "itself); make sure it finishes, quickly, on every input.") from None
        if len(observations) < len(cases):
            case = cases[len(observations)]
            raise CheckFailed(
                f"{self.name}: your function never finished case {case_label(case)}: "
                "grading stopped it at the time limit.") from None
        for case, obs in zip(cases, observations, strict=False):
            if obs.broken:
                text, detail = obs.broken[0]
                raise CheckFailed(f"{self.name}: the task says {text}; your answer {detail} "
                                  f"(case {case_label(case)}).") from None
        if self.keeps_inputs:
            for case, obs in zip(cases, observations, strict=False):
                if obs.mutated:
                    raise CheckFailed(
                        f"{self.name}: the task says your function must not change its "
                        f"inputs; it wrote into input {obs.mutated[0] + 1} on case "
                        f"{case_label(case)} (work on a copy).") from None
        outcomes = [(obs.out, obs.err) for obs in observations]
        if self.judge_fn is not None:
            return self.judge_fn(self, list(cases), outcomes)
        return judge(self.name, list(cases), outcomes, self.reference, self.mistakes,
                     self.atol, self.prepare)
