"""Five attention implementations, one set of weights, timed as a ratio to SDPA.

    .venv/bin/python benchmarks/attention_paths.py [--repeats 5]

For each (B, T, C, H), float32, self-attention, causal and not, forward (under
``no_grad``) and forward+backward (``out.backward(g)``, every parameter and the
input requiring grad), the median time of each path after one warm-up call:

* ``numpy``: the NumPy class :class:`mha.MultiHeadAttention` (``to_numpy`` copy of
  the weights; it also returns the (B, H, T, T) weights; forward only, it has no
  backward; timed once, see :func:`measure`);
* ``manual``: ``mha.layers.MultiHeadAttention(impl="manual")``, torch from scratch;
* ``package``: the same module with ``impl="sdpa"`` and ``is_causal=True``, the
  package's fastest path (square causal self-attention reaches SDPA's fused kernel);
* ``packed``: the same with ``packed_qkv=True`` (one (3C, C) input projection, as
  nn.MultiheadAttention stores it); shown, not budgeted;
* ``sdpa``: the module's projections around one ``F.scaled_dot_product_attention``
  call (``benchmarks/module_vs_sdpa.py``'s ``direct``), the reference of every ratio;
* ``nn``: ``nn.MultiheadAttention`` with the same weights, ``need_weights=False``
  (causal: the (T, T) mask and ``is_causal=True``, as its docs ask).

Calls are interleaved, their order rotated each round, so drift on a busy machine
hits every path alike. FLOPs are counted from the shapes (:func:`flops`), so each
time is also a throughput. Measured, never asserted in ``make test``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from mha.layers import MultiHeadAttention
from mha.torch_transfer import from_nn_multihead, to_nn_multihead, to_numpy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from module_vs_sdpa import SHAPES, direct  # noqa: E402  (helper PKG's floor: SDPA, same weights)

PATHS = ("numpy", "manual", "package", "packed", "sdpa", "nn")
PASSES = ("forward", "forward+backward")


def flops(shape, is_causal: bool, backward: bool = False) -> float:
    """Matmul FLOPs of one call: 4 projections ``8 B T C^2`` plus ``Q K^T`` and ``P V``.

    The two attention products cost ``2 B T^2 C`` each; causal counts only the
    ``T (T + 1) / 2`` (query, key) pairs that are not blocked. Forward+backward
    counts three times the forward (each product has two gradient products;
    softmax, scaling and masking are not counted).
    """
    b, t, c, _ = shape
    pairs = t * (t + 1) / 2 if is_causal else t * t
    forward = 8.0 * b * t * c * c + 4.0 * b * pairs * c
    return 3.0 * forward if backward else forward


def make_calls(shape, is_causal: bool, backward: bool, seed: int = 0) -> dict:
    """One zero-argument callable per path, all from the same seeded weights and input."""
    b, t, c, h = shape
    torch.manual_seed(seed)
    module = MultiHeadAttention(c, h, impl="sdpa").eval()
    manual = MultiHeadAttention(c, h, impl="manual").eval()
    manual.load_state_dict(module.state_dict())
    reference = to_nn_multihead(module).eval()
    packed = from_nn_multihead(reference, packed_qkv=True, impl="sdpa").eval()
    x = torch.randn(b, t, c, requires_grad=backward)
    g = torch.randn(b, t, c)
    causal = torch.ones(t, t, dtype=torch.bool).triu(1)  # True = blocked, as nn reads it
    nn_kw = {"attn_mask": causal, "is_causal": True} if is_causal else {}
    outputs = {
        "manual": lambda: manual(x, is_causal=is_causal)[0],
        "package": lambda: module(x, is_causal=is_causal)[0],
        "packed": lambda: packed(x, is_causal=is_causal)[0],
        "sdpa": lambda: direct(module, x, is_causal),
        "nn": lambda: reference(x, x, x, need_weights=False, **nn_kw)[0],
    }
    if backward:
        return {name: (lambda f=f: f().backward(g)) for name, f in outputs.items()}
    numpy_module, x_np = to_numpy(module), x.detach().numpy()
    calls = {"numpy": lambda: numpy_module(x_np, is_causal=is_causal)[0]}
    calls.update(outputs)
    return calls


def measure(shape, is_causal: bool, backward: bool, repeats: int,
            max_seconds: float | None = None) -> dict:
    """Median seconds per path, the ratio of each median to ``sdpa``'s, GFLOP/s.

    The torch paths get one warm-up call, then ``repeats`` interleaved rounds of
    calls in an order rotated each round; with ``max_seconds``, no new round starts
    once the rounds have taken that long and at least three are done (so a busy
    machine keeps ``make bench`` bounded; the row records the rounds run).
    ``numpy`` is timed once, after them: one call takes seconds at T = 4096 and
    NumPy has no lazy set-up for a warm-up to absorb.
    ``max_abs_diff`` (forward only): the largest |difference| of any path's output
    from ``sdpa``'s, from the warm-up calls.
    """
    calls = make_calls(shape, is_causal, backward)
    numpy_call = calls.pop("numpy", None)
    names = list(calls)
    times = {name: [] for name in names}
    with torch.set_grad_enabled(backward):
        outs = {name: call() for name, call in calls.items()}  # warm-up
        begin = time.perf_counter()
        for r in range(repeats):
            if max_seconds is not None and r >= 3 and time.perf_counter() - begin > max_seconds:
                break
            for name in names[r % len(names):] + names[:r % len(names)]:
                start = time.perf_counter()
                calls[name]()
                times[name].append(time.perf_counter() - start)
    if numpy_call is not None:
        start = time.perf_counter()
        outs["numpy"] = torch.from_numpy(numpy_call())
        times["numpy"] = [time.perf_counter() - start]
    seconds = {name: statistics.median(times[name]) for name in PATHS if name in times}
    count = flops(shape, is_causal, backward)
    row = {
        "shape": list(shape), "causal": is_causal, "pass": PASSES[backward],
        "repeats": len(times["sdpa"]),
        "seconds": seconds, "min_seconds": {name: min(times[name]) for name in seconds},
        "ratio": {name: s / seconds["sdpa"] for name, s in seconds.items()},
        "flops": count, "gflops": {name: count / s / 1e9 for name, s in seconds.items()},
    }
    if not backward:
        row["max_abs_diff"] = max(float((out - outs["sdpa"]).abs().max())
                                  for out in outs.values())
    return row


def run(shapes=SHAPES, repeats: int = 5, progress=print, max_seconds: float | None = None):
    """Every shape, causal and not, forward and forward+backward: a list of rows."""
    rows = []
    for shape in shapes:
        for is_causal in (False, True):
            for backward in (False, True):
                rows.append(measure(shape, is_causal, backward, repeats, max_seconds))
                progress(format_row(rows[-1]))
    return rows


def format_row(row: dict) -> str:
    ratios = "  ".join(f"{n} {row['ratio'][n]:5.2f}x" for n in PATHS if n in row["ratio"])
    return (f"{str(tuple(row['shape'])):>17} causal={str(row['causal']):5} {row['pass']:16} "
            f"x{row['repeats']} sdpa {1e3 * row['seconds']['sdpa']:7.1f} ms  {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, "
          f"median of {args.repeats}; ratio = path / sdpa")
    run(repeats=args.repeats, progress=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
