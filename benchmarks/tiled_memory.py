"""Peak extra memory of tiled attention against the plain path, forward and backward.

    .venv/bin/python benchmarks/tiled_memory.py [--dtype float32|float64] [--causal]

One head (B = H = 1), d_k = d_v = 64, T = 1024, 4096, 8192. The plain path is
mha.attention / mha.attention_backward, which hold (T, T) matrices; the tiled
path is mha.tiled with its default 256 x 256 tiles (products on one BLAS thread).
Peak extra memory is what tracemalloc sees NumPy allocate during the call
(inputs excluded, the result included).
With --causal the plain path gets mha.causal_mask(T) (its (T, T) bool mask is
made before the measurement) and the tiled path is_causal=True.
Measured and printed, never asserted (tests/test_tiled.py asserts the bound).
Needs about 1.2 GiB of RAM in float32 and 2.3 GiB in float64 at T = 8192.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mha
from mha.tiled import peak_traced_bytes, tiled_attention, tiled_attention_backward

MIB = 2.0**20


def timed_peak(fn, *args, **kwargs):
    start = time.perf_counter()
    peak = peak_traced_bytes(fn, *args, **kwargs)
    return peak, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--causal", action="store_true")
    args = parser.parse_args()
    dtype = np.dtype(args.dtype)
    print(f"B = H = 1, d_k = d_v = 64, {dtype}, causal={args.causal}; peak extra memory in MiB "
          "(tracemalloc), seconds include tracing")
    print(f"{'T':>5} {'pass':8} {'plain MiB':>10} {'tiled MiB':>10} {'tiled/plain':>12}"
          f" {'plain s':>8} {'tiled s':>8}")
    rng = np.random.default_rng(0)
    for t in (1024, 4096, 8192):
        q, k, v, g = (rng.standard_normal((1, 1, t, 64)).astype(dtype) for _ in range(4))
        mask = mha.causal_mask(t) if args.causal else None
        out, lse = tiled_attention(q, k, v, is_causal=args.causal)
        rows = [
            ("forward", (mha.attention, (q, k, v), {"mask": mask}),
             (tiled_attention, (q, k, v), {"is_causal": args.causal})),
            ("backward", (mha.attention_backward, (q, k, v, g), {"mask": mask}),
             (tiled_attention_backward, (q, k, v, out, lse, g), {"is_causal": args.causal})),
        ]
        for name, (plain_fn, plain_args, plain_kw), (tiled_fn, tiled_args, tiled_kw) in rows:
            plain_peak, plain_s = timed_peak(plain_fn, *plain_args, **plain_kw)
            tiled_peak, tiled_s = timed_peak(tiled_fn, *tiled_args, **tiled_kw)
            print(f"{t:5d} {name:8} {plain_peak / MIB:10.1f} {tiled_peak / MIB:10.2f} "
                  f"{tiled_peak / plain_peak:12.4f} {plain_s:8.2f} {tiled_s:8.2f}", flush=True)


if __name__ == "__main__":
    main()
