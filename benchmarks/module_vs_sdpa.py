"""The package's SDPA path against calling SDPA directly, and against nn.MultiheadAttention.

    .venv/bin/python benchmarks/module_vs_sdpa.py [--repeats 3] [--clock wall|cpu]

For each (B, T, C, H), float32, ``torch.no_grad()``, forward only, self-attention:

* ``ours``: ``mha.layers.MultiHeadAttention(impl="sdpa")(x, is_causal=...)``;
* ``direct``: the same module's projections written out around one
  ``F.scaled_dot_product_attention`` call (the floor the module can reach);
* ``nn``: ``nn.MultiheadAttention`` with the same weights, ``need_weights=False``
  (causal: ``attn_mask`` = the (T, T) causal mask and ``is_causal=True``, as its
  docs ask).

Prints the median time of each (after one warm-up call; calls interleaved, in an
order rotated each round, so that drift and the previous call's memory traffic
hit all three alike; use a multiple of 3 repeats), the ratios of the medians
ours / direct and ours / nn, and the same ratios of the fastest calls (``min``),
which a busy machine disturbs less. Measured, never asserted in ``make test``.
On a shared machine the wall-clock ratios move by 10-20 per cent from run to
run: read several, or use ``--clock cpu`` (process CPU time, both threads).
The module adds about 8-10 microseconds of Python checks per call to the same
tensor operations as ``direct`` (thread CPU time at (1, 8, 32, 4)), under 0.05
per cent of the smallest call here.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from mha.layers import MultiHeadAttention
from mha.torch_transfer import to_nn_multihead

SHAPES = [(8, 256, 512, 8), (4, 1024, 512, 8), (1, 4096, 256, 4)]


def direct(module: MultiHeadAttention, x: torch.Tensor, is_causal: bool) -> torch.Tensor:
    """The module's computation with nothing around SDPA: no checks, no mask handling."""
    b, t, c = x.shape
    h, dh = module.n_heads, module.d_head
    (wq, bq), (wk, bk), (wv, bv) = module.in_projections()
    q, k, v = (F.linear(x, w, bias).view(b, t, h, dh).transpose(1, 2)
               for w, bias in ((wq, bq), (wk, bk), (wv, bv)))  # each (B, H, T, dh)
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)  # (B, H, T, dh)
    return module.out_proj(heads.transpose(1, 2).reshape(b, t, c))


def measure(shape, is_causal: bool, repeats: int, clock=time.perf_counter) -> dict[str, float]:
    b, t, c, h = shape
    torch.manual_seed(0)
    module = MultiHeadAttention(c, h, impl="sdpa").eval()
    reference = to_nn_multihead(module).eval()
    x = torch.randn(b, t, c)
    causal = torch.ones(t, t, dtype=torch.bool).triu(1)  # True = blocked, as nn reads it
    nn_kw = {"attn_mask": causal, "is_causal": True} if is_causal else {}
    calls = {
        "ours": lambda: module(x, is_causal=is_causal),
        "direct": lambda: direct(module, x, is_causal),
        "nn": lambda: reference(x, x, x, need_weights=False, **nn_kw),
    }
    times = {name: [] for name in calls}
    with torch.no_grad():
        out = {name: call() for name, call in calls.items()}  # warm-up
        out["ours"] = out["ours"][0]
        out["nn"] = out["nn"][0]
        worst = max(float((out[n] - out["direct"]).abs().max()) for n in ("ours", "nn"))
        names = list(calls)
        for r in range(repeats):
            # Rotate the order each round: the call after nn's large (T, T) float mask is freed
            # would otherwise always be ours, and pay for the cold memory.
            for name in names[r % 3:] + names[:r % 3]:
                start = clock()
                calls[name]()
                times[name].append(clock() - start)
    result = {name: statistics.median(ts) for name, ts in times.items()}
    result.update({f"{name}_min": min(ts) for name, ts in times.items()})
    result["max_abs_diff"] = worst
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="a multiple of 3")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: process CPU time, steadier when other jobs share the cores")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, no_grad, "
          f"forward, median of {args.repeats}, {args.clock} clock")
    print(f"{'(B, T, C, H)':>17} {'causal':>6} {'ours ms':>8} {'direct ms':>9} {'nn ms':>7} "
          f"{'ours/direct':>11} {'ours/nn':>7} {'min: o/d':>8} {'o/nn':>5} {'max|diff|':>9}")
    for shape in SHAPES:
        for is_causal in (False, True):
            m = measure(shape, is_causal, args.repeats, clock)
            print(f"{str(shape):>17} {str(is_causal):>6} {1e3 * m['ours']:8.1f} "
                  f"{1e3 * m['direct']:9.1f} {1e3 * m['nn']:7.1f} "
                  f"{m['ours'] / m['direct']:11.3f} {m['ours'] / m['nn']:7.3f} "
                  f"{m['ours_min'] / m['direct_min']:8.3f} {m['ours_min'] / m['nn_min']:5.3f} "
                  f"{m['max_abs_diff']:9.1e}")


if __name__ == "__main__":
    main()
