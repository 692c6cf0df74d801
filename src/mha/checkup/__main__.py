"""``python -m mha.checkup path/to/file.py:Name [--d-model 16 --heads 4]``: from a terminal.

``Name`` is an ``nn.Module`` class, built as ``Name(d_model, heads)`` (or with
keyword names its ``__init__`` uses: ``d_model`` / ``embed_dim`` / ``d_in`` /
``dim`` ..., ``n_heads`` / ``num_heads`` / ``heads`` ...), or a function that
returns the module (called with no arguments). Prints the report; the exit
status is 1 when a check fails, 0 otherwise (2 for a usage error).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
from pathlib import Path

import torch

from .._checkup_adapters import _D_MODEL_NAMES, _HEAD_NAMES
from . import checkup

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
          "float16": torch.float16}


def load(target: str):
    """The object named by ``path/to/file.py:Name``; refuses a missing file or name."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise ValueError(f"expected path/to/file.py:Name; got {target!r}.")
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(file.stem, module)
    spec.loader.exec_module(module)
    if not hasattr(module, name):
        found = [n for n, v in vars(module).items() if inspect.isclass(v) and
                 issubclass(v, torch.nn.Module) and v.__module__ == module.__name__]
        raise ValueError(f"{path} has no {name!r}; its nn.Module classes: {found}")
    return getattr(module, name)


def build(obj, d_model: int, heads: int):
    """An instance of ``obj``: a class built from (d_model, heads), or a function's result."""
    if not inspect.isclass(obj):
        return obj()
    params = [p for p in inspect.signature(obj.__init__).parameters.values()
              if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    kw = {}
    for p in params:
        if p.name in _D_MODEL_NAMES:
            kw[p.name] = d_model
        elif p.name in _HEAD_NAMES:
            kw[p.name] = heads
    required = [p for p in params if p.default is p.empty and p.name not in kw]
    try:
        if kw and not required:
            return obj(**kw)
        return obj(d_model, heads) if len(params) >= 2 else obj(d_model)
    except Exception as err:  # noqa: BLE001 - e.g. a constructor that takes a config object
        raise TypeError(f"could not build {obj.__name__} from d_model={d_model}, heads={heads} "
                        f"({type(err).__name__}: {err}); add a function to the file that "
                        "returns the module, e.g. "
                        f"def make(): return {obj.__name__}(...), and pass file.py:make") from err


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mha.checkup", description=(
        "Run mha.checkup.checkup on an attention module defined in a file."))
    parser.add_argument("target", help="path/to/file.py:ClassName (or a function returning "
                                       "the module)")
    parser.add_argument("--d-model", type=int, default=16, help="model width (default 16)")
    parser.add_argument("--heads", type=int, default=4, help="number of heads (default 4)")
    parser.add_argument("--dtype", choices=list(DTYPES), default=None,
                        help="cast the module to this dtype first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--atol", type=float, default=None)
    parser.add_argument("--mask-means", choices=["blocked", "keep"], default=None,
                        help="what True means in the module's mask argument")
    parser.add_argument("--seq-first", action="store_true",
                        help="the module reads (T, B, C) and has no batch_first attribute")
    args = parser.parse_args(argv)
    for flag, value in (("--d-model", args.d_model), ("--heads", args.heads)):
        if value < 1:
            print(f"checkup: {flag} must be an int >= 1; got {value}.", file=sys.stderr)
            return 2
    if args.d_model % args.heads:
        print(f"checkup: --heads {args.heads} does not divide --d-model {args.d_model}.",
              file=sys.stderr)
        return 2
    try:
        torch.manual_seed(args.seed)
        module = build(load(args.target), args.d_model, args.heads)
        if args.dtype:
            module = module.to(DTYPES[args.dtype])
        report = checkup(module, seed=args.seed, atol=args.atol, d_model=args.d_model,
                         n_heads=args.heads, mask_means=args.mask_means,
                         batch_first=False if args.seq_first else None)
    except (ValueError, TypeError) as err:
        print(f"checkup: {err}", file=sys.stderr)
        return 2
    print(report)
    print(f"\n{len(report.failed)} failed, {len(report.not_run)} not run, "
          f"{len(report.results) - len(report.failed) - len(report.not_run)} passed")
    return 1 if report.failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
