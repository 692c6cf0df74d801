"""Run every benchmark of issue 11, print which budgets hold, write a dated report.

    make bench                                      (= .venv/bin/python benchmarks/run.py)
    .venv/bin/python benchmarks/run.py [--check] [--only attention tiled ...] [--repeats 5]
    .venv/bin/python benchmarks/run.py --smoke --out /tmp/bench   (tiny sizes, one repeat)

Five sections, each printed as it runs:

1. ``series``: each lesson and exercise set in a fresh kernel, wall time (kernel
   start included) and the kernel's peak memory (``benchmarks/series.py``);
2. ``attention``: NumPy, torch from scratch, the package's SDPA path, SDPA and
   nn.MultiheadAttention, as ratios to SDPA (``benchmarks/attention_paths.py``);
3. ``tiled``: ``mha.tiled``'s peak extra memory against the plain path
   (``benchmarks/tiled_memory.py``'s measurement);
4. ``widgets``: median redraw of every explorer (``benchmarks/widget_redraw.py``);
5. ``machine``: float32 matmul GFLOP/s and memory bandwidth, and the fraction of
   the matmul figure each attention path reaches (``benchmarks/machine.py``).

Writes ``<out>/<YYYY-MM-DD_HHMM>.md`` (tables, figures, the machine and its load
average) with ``.json`` and ``-*.png`` beside it; ``--out`` defaults to
``benchmarks/results``. With ``--check`` the exit status is 1 when a budget fails.
Timings are never asserted in ``make test``; tests/test_benchmarks.py runs ``--smoke``.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import attention_paths  # noqa: E402
import budgets  # noqa: E402
import machine  # noqa: E402
import report  # noqa: E402
import series  # noqa: E402

SECTIONS = ("series", "attention", "tiled", "widgets", "machine")
TILED_T = (1024, 4096, 8192)
SMOKE = {"shapes": [(2, 32, 16, 2), (1, 64, 16, 2)], "tiled_t": (128, 256), "widget_n": 2,
         "matmul_n": 128, "copy_mib": 4}


def say(line: str = "") -> None:
    print(line, flush=True)


def tiled_rows(ts=TILED_T, dh: int = 64) -> list[dict]:
    """Peak extra memory (tracemalloc) of ``mha.tiled`` and the plain path, forward and backward."""
    import numpy as np
    from tiled_memory import timed_peak  # helper L09's measurement, reused as is

    import mha
    from mha.tiled import tiled_attention, tiled_attention_backward

    rows, rng = [], np.random.default_rng(0)
    for t in ts:
        q, k, v, g = (rng.standard_normal((1, 1, t, dh)).astype(np.float32) for _ in range(4))
        out, lse = tiled_attention(q, k, v)
        pairs = [("forward", (mha.attention, (q, k, v)), (tiled_attention, (q, k, v))),
                 ("backward", (mha.attention_backward, (q, k, v, g)),
                  (tiled_attention_backward, (q, k, v, out, lse, g)))]
        for name, (plain_fn, plain_args), (tiled_fn, tiled_args) in pairs:
            plain, plain_s = timed_peak(plain_fn, *plain_args)
            tiled, tiled_s = timed_peak(tiled_fn, *tiled_args)
            rows.append({"T": t, "pass": name, "plain_bytes": plain, "tiled_bytes": tiled,
                         "ratio": tiled / plain, "plain_seconds": plain_s,
                         "tiled_seconds": tiled_s})
            say(f"T = {t:5d} {name:8s} plain {plain / 2**20:8.1f} MiB  tiled "
                f"{tiled / 2**20:6.2f} MiB  tiled/plain {100 * tiled / plain:5.2f}%")
    return rows


def widget_section(n: int) -> dict:
    from widget_redraw import DRIVERS, measure

    import mha.widgets
    from mha.widgets import Explorer

    explorers = {obj for obj in vars(mha.widgets).values()
                 if isinstance(obj, type) and issubclass(obj, Explorer) and obj is not Explorer}
    rows = measure(n)
    for row in rows:
        say(f"{row['widget']:26s} median {row['median_ms']:6.1f} ms  max {row['max_ms']:6.1f} ms")
    undriven = sorted(c.__name__ for c in explorers - set(DRIVERS))
    return {"n": n, "rows": rows, "undriven": undriven}


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 when a budget fails")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat (for tests)")
    p.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    p.add_argument("--repeats", type=int, default=None, help="timed calls per path (default 5)")
    p.add_argument("--max-seconds", type=float, default=15.0,
                   help="attention: no new round after this long per row, once 3 are done")
    p.add_argument("--notebooks", nargs="*", default=None,
                   help="notebooks to time (default: the whole series; none with --smoke)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--stem", default=None, help="file name stem (default: the UTC date and time)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    start = time.perf_counter()
    now = datetime.datetime.now(datetime.timezone.utc)
    repeats = args.repeats or (1 if args.smoke else 5)
    results = {"date": now.strftime("%Y-%m-%d %H:%M UTC"),
               "command": "benchmarks/run.py " + " ".join(argv if argv is not None
                                                          else sys.argv[1:]),
               "smoke": args.smoke, "machine": machine.describe(),
               "load_average": {"start": machine.load_average()}}
    say(f"benchmarks, {results['date']}: {machine.one_line(results['machine'])}")
    say(f"load average at start: {results['load_average']['start']}")

    def section(number: int, name: str, title: str) -> bool:
        if name not in args.only:
            return False
        say(f"\n[{number}/5] {title}   ({time.perf_counter() - start:.0f} s elapsed)")
        return True

    if section(1, "series", "the series: fresh-kernel wall time and kernel peak memory"):
        notebooks = args.notebooks
        if notebooks is None and args.smoke:
            notebooks = []  # a smoke run times only the notebooks it is given
        results["series"] = series.run(notebooks, say)  # None: the whole series
        say(f"total {results['series']['total_seconds']:.1f} s")
        results["load_average"]["after series"] = machine.load_average()
    if section(2, "attention", "attention implementations, ratio to SDPA"):
        shapes = SMOKE["shapes"] if args.smoke else attention_paths.SHAPES
        results["attention"] = attention_paths.run(shapes, repeats, say, args.max_seconds)
        results["load_average"]["after attention"] = machine.load_average()
    if section(3, "tiled", "tiled attention memory against the plain path"):
        results["tiled"] = tiled_rows(SMOKE["tiled_t"] if args.smoke else TILED_T)
    if section(4, "widgets", "widget redraw"):
        results["widgets"] = widget_section(SMOKE["widget_n"] if args.smoke else 40)
    if section(5, "machine", "the machine's limit: matmul throughput, memory bandwidth"):
        kw = {"matmul_n": SMOKE["matmul_n"], "copy_mib": SMOKE["copy_mib"],
              "repeats": 1} if args.smoke else {}
        results["limits"] = machine.limits(**kw)
        mm, bw = results["limits"]["matmul"], results["limits"]["bandwidth"]
        say(f"matmul {mm['n']}: torch {mm['torch_gflops']:.1f} GFLOP/s, NumPy "
            f"{mm['numpy_gflops']:.1f} GFLOP/s; copy {bw['copy_gbs']:.1f} GB/s")
        if "attention" in results:
            for name in attention_paths.PATHS:
                fractions = [r["gflops"][name] / mm["torch_gflops"] for r in results["attention"]
                             if name in r["gflops"]]
                say(f"{report.LABELS[name]:32s} reaches {100 * statistics.median(fractions):4.0f}%"
                    f" of the matmul figure (median over sizes), at best "
                    f"{100 * max(fractions):.0f}%")
    results["load_average"]["end"] = machine.load_average()
    results["elapsed_seconds"] = time.perf_counter() - start
    results["budgets"] = budgets.evaluate(results)

    say("\nbudgets:")
    for b in results["budgets"]:
        say(f"  {'held  ' if b['held'] else 'MISSED'}  {b['name']}: {b['measured']} "
            f"(limit {b['limit']}, {b['margin']})")
    missed = sum(not b["held"] for b in results["budgets"])
    say(f"{len(results['budgets']) - missed} of {len(results['budgets'])} budgets hold")
    say("\nheadline:")
    for line in report.headline(results):
        say(f"  {line}")
    paths = report.write(results, args.out, args.stem or now.strftime("%Y-%m-%d_%H%M"))
    say(f"report: {paths['md']}  ({results['elapsed_seconds']:.0f} s)")
    return budgets.exit_code(results["budgets"], args.check)


if __name__ == "__main__":
    sys.exit(main())
