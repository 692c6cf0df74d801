"""A benchmark run as a dated markdown report with figures, and the JSON beside it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from attention_paths import PASSES, PATHS
from machine import one_line
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

LABELS = {"numpy": "NumPy reference", "manual": "torch from scratch (manual)",
          "package": "package, impl='sdpa'", "packed": "package, sdpa + packed_qkv",
          "sdpa": "F.scaled_dot_product_attention", "nn": "nn.MultiheadAttention"}
COLOURS = {"numpy": "tab:brown", "manual": "tab:orange", "package": "tab:blue",
           "packed": "tab:purple", "sdpa": "black", "nn": "tab:green"}


def _footer(fig: Figure, results: dict) -> None:
    load = results.get("load_average", {}).get("start")
    text = one_line(results["machine"]) + (f"; load average at start {load[0]}" if load else "")
    width = int(fig.get_figwidth() * 19)  # characters of 6.5 pt text per line
    fig.text(0.01, 0.01, textwrap.fill(f"{results['date']}  {text}", width), fontsize=6.5,
             color="0.3")


def _save(fig: Figure, path: Path) -> str:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    return path.name


def ratio_figure(results: dict, path: Path) -> str:
    """Each path's time / SDPA's against T, forward and forward+backward, causal solid."""
    fig = Figure(figsize=(9.0, 4.0))
    axes = fig.subplots(1, 2, sharey=True)
    rows = results["attention"]
    for ax, pass_name in zip(axes, PASSES, strict=True):
        for name in PATHS:
            for causal, style in ((True, "-o"), (False, "--s")):
                pts = sorted((r["shape"][1], r["ratio"][name]) for r in rows
                             if r["pass"] == pass_name and r["causal"] == causal
                             and name in r["ratio"])
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, color=COLOURS[name], ms=4,
                            label=f"{LABELS[name]}{', causal' if causal else ''}")
        ax.axhline(1.10, color="tab:red", lw=0.8, ls=":", label="budget 1.10x")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("T (each T has its own (B, C, H); see the table)")
        ax.set_title(pass_name, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("time / SDPA time (median)")
    axes[0].legend(fontsize=6.5, loc="upper left", ncol=1)  # forward has every path
    fig.subplots_adjust(left=0.08, right=0.99, top=0.9, bottom=0.2, wspace=0.05)
    _footer(fig, results)
    return _save(fig, path)


def memory_figure(results: dict, path: Path) -> str:
    """Peak extra memory (MiB) of the plain and tiled paths against T."""
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.subplots()
    rows = results["tiled"]
    for pass_name, marker in (("forward", "o"), ("backward", "s")):
        for kind, colour in (("plain", "tab:red"), ("tiled", "tab:blue")):
            pts = sorted((r["T"], r[f"{kind}_bytes"] / 2**20) for r in rows
                         if r["pass"] == pass_name)
            ax.plot(*zip(*pts, strict=True), marker=marker, color=colour,
                    ls="-" if pass_name == "forward" else "--", label=f"{kind}, {pass_name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("T (one head, dh = 64, float32)")
    ax.set_ylabel("peak extra memory, MiB (tracemalloc)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.subplots_adjust(left=0.12, right=0.98, top=0.95, bottom=0.22)
    _footer(fig, results)
    return _save(fig, path)


def series_figure(results: dict, path: Path) -> str:
    """Each notebook's wall time and kernel peak memory, with the budgets."""
    rows = results["series"]["notebooks"]
    names = [Path(r["notebook"]).stem for r in rows]
    fig = Figure(figsize=(9.0, 4.2))
    left, right = fig.subplots(1, 2, sharey=True)
    ys = range(len(rows))
    left.barh(ys, [r["seconds"] for r in rows], color="tab:blue")
    left.scatter([r["budget_seconds"] for r in rows], ys, marker="|", color="tab:red", s=80,
                 label="budget")
    left.set_xlabel("wall time, s (fresh kernel, start included)")
    right.barh(ys, [(r["peak_bytes"] or 0) / 2**20 for r in rows], color="tab:green")
    right.axvline(1024, color="tab:red", lw=0.8, ls=":", label="budget 1 GiB")
    right.set_xlabel("kernel peak memory, MiB (VmHWM)")
    left.set_yticks(list(ys), names, fontsize=7)
    left.invert_yaxis()
    for ax in (left, right):
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(True, axis="x", alpha=0.3)
    fig.subplots_adjust(left=0.22, right=0.98, top=0.96, bottom=0.2, wspace=0.05)
    _footer(fig, results)
    return _save(fig, path)


def _repeats(rows: list[dict]) -> str:
    low, high = min(r["repeats"] for r in rows), max(r["repeats"] for r in rows)
    return str(low) if low == high else f"{low} to {high} (the `x` column)"


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _machine_lines(results: dict) -> list[str]:
    m = results["machine"]
    blas = ", ".join(f"{k} {v}" for k, v in m["blas_threads"].items())
    load = results["load_average"]
    env = ", ".join(f"{k}={v}" for k, v in m["thread_variables"].items()) or "none set"
    return [
        f"- CPU: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; {m['platform']}",
        f"- Python {m['python']}, torch {m['torch']}, NumPy {m['numpy']}",
        f"- Threads: torch {m['torch_threads']} (inter-op {m['torch_interop_threads']}); "
        f"NumPy's pools: {blas}; thread variables: {env}",
        "- Load average (1, 5, 15 min) during the run: "
        + "; ".join(f"{k} {v}" for k, v in load.items()),
    ]


def headline(results: dict) -> list[str]:
    """The figures a README quotes, one short line each, for the sections that ran."""
    out = []
    if results.get("series", {}).get("notebooks"):
        s = results["series"]
        slowest = max(s["notebooks"], key=lambda r: r["seconds"])
        peak = max(s["notebooks"], key=lambda r: r["peak_bytes"] or 0)
        out.append(f"the series: {s['total_seconds']:.0f} s for {len(s['notebooks'])} notebooks "
                   f"(lessons {s['lessons_seconds']:.0f} s); slowest "
                   f"{Path(slowest['notebook']).name} {slowest['seconds']:.1f} s; "
                   "largest kernel peak "
                   f"{(peak['peak_bytes'] or 0) / 2**20:.0f} MiB ({Path(peak['notebook']).name})")
    if "attention" in results:
        rows = results["attention"]
        worst = max(rows, key=lambda r: r["ratio"]["package"])
        vs_nn = max(r["ratio"]["package"] / r["ratio"]["nn"] for r in rows)
        out.append(f"package's SDPA path / SDPA: {min(r['ratio']['package'] for r in rows):.2f}x"
                   f" to {worst['ratio']['package']:.2f}x (worst {tuple(worst['shape'])}, "
                   f"{'causal' if worst['causal'] else 'not causal'}, {worst['pass']}); "
                   f"against nn.MultiheadAttention at most {vs_nn:.2f}x")
    if "tiled" in results:
        t = max(r["T"] for r in results["tiled"])
        ratios = ", ".join(f"{r['pass']} {100 * r['ratio']:.2f}%" for r in results["tiled"]
                           if r["T"] == t)
        out.append(f"tiled attention's peak extra memory at T = {t}: {ratios} of the plain path's")
    if "widgets" in results:
        slow = max(results["widgets"]["rows"], key=lambda r: r["median_ms"])
        out.append(f"widgets: slowest median redraw {slow['median_ms']:.0f} ms ({slow['widget']})")
    if "limits" in results:
        mm = results["limits"]["matmul"]
        line = (f"machine: {mm['torch_gflops']:.0f} GFLOP/s float32 matmul, "
                f"{results['limits']['bandwidth']['copy_gbs']:.1f} GB/s copy")
        if "attention" in results:
            best = max(r["gflops"]["package"] for r in results["attention"])
            share = 100 * best / mm["torch_gflops"]
            line += f"; the package's SDPA path reaches at best {share:.0f}% of it"
        out.append(line)
    return out


def markdown(results: dict, figures: dict[str, str]) -> str:
    budgets = results["budgets"]
    failed = [b for b in budgets if not b["held"]]
    out = [f"# Benchmarks, {results['date']}", "",
           f"`{results['command']}` on this machine, {results['elapsed_seconds']:.0f} s in all.",
           "", *_machine_lines(results), "", "## Headline", "",
           *[f"- {line}" for line in headline(results)], "", "## Budgets", "",
           f"{len(budgets) - len(failed)} of {len(budgets)} budgets hold"
           + (f"; {len(failed)} do not:" if failed else "."), ""]
    shown = failed + [b for b in budgets if b["held"]]
    out += _table(["budget", "limit", "measured", "held", "margin"],
                  [[b["name"], b["limit"], b["measured"], "yes" if b["held"] else "**no**",
                    b["margin"]] for b in shown])
    if "series" in results:
        s = results["series"]
        out += ["", "## 1. The series", "",
                "Fresh kernel per notebook, kernel start included; peak = the kernel's VmHWM. "
                "Exercise sets are their solution versions from `course/source/` (the stubs "
                "raise NotImplementedError by design).", ""]
        out += _table(["notebook", "what", "wall s", "budget s", "peak MiB", "error"],
                      [[r["notebook"], r["kind"], f"{r['seconds']:.1f}",
                        f"{r['budget_seconds']:.0f}",
                        "?" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:.0f}",
                        r["error"] or ""] for r in s["notebooks"]])
        out += ["", f"Total {s['total_seconds']:.1f} s (lessons {s['lessons_seconds']:.1f} s).",
                ""]
        out += [f"![series]({figures['series']})"] if "series" in figures else []
    if "attention" in results:
        out += ["", "## 2. Attention implementations", "",
                "float32, same weights, self-attention; median of "
                f"{_repeats(results['attention'])} interleaved calls after a warm-up "
                "(NumPy: one call); ratio = time / SDPA's time in the same run. "
                "`package, fastest calls`: the ratio of the fastest calls instead of the medians, "
                "which a busy machine disturbs less. "
                "`max abs diff`: largest forward difference from SDPA's output.", ""]
        out += _table(["(B, T, C, H)", "causal", "pass", "x", "SDPA ms",
                       *[LABELS[n] for n in PATHS if n != "sdpa"], "package, fastest calls",
                       "max abs diff"],
                      [[str(tuple(r["shape"])), "yes" if r["causal"] else "no", r["pass"],
                        r["repeats"], f"{1e3 * r['seconds']['sdpa']:.1f}",
                        *[f"{r['ratio'][n]:.2f}x" if n in r["ratio"] else "n/a"
                          for n in PATHS if n != "sdpa"],
                        f"{r['min_seconds']['package'] / r['min_seconds']['sdpa']:.2f}x",
                        f"{r['max_abs_diff']:.1e}" if "max_abs_diff" in r else ""]
                       for r in results["attention"]])
        out += ["", f"![ratio to SDPA against T]({figures['ratio']})"]
    if "tiled" in results:
        out += ["", "## 3. Tiled attention memory", "",
                "`mha.tiled` (256 x 256 tiles) against `mha.attention` / "
                "`mha.attention_backward`, one head, dh = 64, float32, not causal; peak extra "
                "memory by tracemalloc (`benchmarks/tiled_memory.py`'s measurement).", ""]
        out += _table(["T", "pass", "plain MiB", "tiled MiB", "tiled / plain", "plain s",
                       "tiled s"],
                      [[r["T"], r["pass"], f"{r['plain_bytes'] / 2**20:.1f}",
                        f"{r['tiled_bytes'] / 2**20:.2f}", f"{100 * r['ratio']:.2f}%",
                        f"{r['plain_seconds']:.2f}", f"{r['tiled_seconds']:.2f}"]
                       for r in results["tiled"]])
        out += ["", f"![memory against T]({figures['memory']})"]
    if "widgets" in results:
        w = results["widgets"]
        out += ["", "## 4. Widgets", "",
                f"Each explorer driven through its controls' values ({w['n']} changes, "
                "`benchmarks/widget_redraw.py`); a redraw is compute + draw + PNG.", ""]
        out += _table(["explorer", "redraws", "median ms", "max ms"],
                      [[r["widget"], r["n"], f"{r['median_ms']:.1f}", f"{r['max_ms']:.1f}"]
                       for r in w["rows"]])
    if "limits" in results:
        lim = results["limits"]
        mm = lim["matmul"]
        out += ["", "## 5. The machine's limit", "",
                f"- float32 matmul ({mm['n']} x {mm['n']}, fastest of the calls): torch "
                f"{mm['torch_gflops']:.1f} GFLOP/s, NumPy {mm['numpy_gflops']:.1f} GFLOP/s",
                f"- memory bandwidth (copy of {lim['bandwidth']['mib']} MiB, read + write): "
                f"{lim['bandwidth']['copy_gbs']:.1f} GB/s"]
        if "attention" in results:
            out += ["", "Fraction of the torch matmul figure each path reaches (matmul FLOPs "
                    "counted from the shapes: projections `8 B T C^2`, attention `4 B T^2 C`, "
                    "causal only the unblocked half, forward+backward three times the forward).",
                    ""]
            peak = mm["torch_gflops"]
            out += _table(["(B, T, C, H)", "causal", "pass", "GFLOP",
                           *[LABELS[n] for n in PATHS]],
                          [[str(tuple(r["shape"])), "yes" if r["causal"] else "no", r["pass"],
                            f"{r['flops'] / 1e9:.1f}",
                            *[f"{r['gflops'][n]:.1f} ({100 * r['gflops'][n] / peak:.0f}%)"
                              if n in r["gflops"] else "n/a" for n in PATHS]]
                           for r in results["attention"]])
    out += ["", "Machine-readable: " + f"`{figures['json']}`.", ""]
    return "\n".join(out)


def write(results: dict, out_dir: Path, stem: str) -> dict[str, Path]:
    """``<stem>.md``, ``<stem>.json`` and the figures ``<stem>-*.png`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {"json": f"{stem}.json"}
    if "series" in results and results["series"]["notebooks"]:
        figures["series"] = series_figure(results, out_dir / f"{stem}-series.png")
    if "attention" in results:
        figures["ratio"] = ratio_figure(results, out_dir / f"{stem}-ratio.png")
    if "tiled" in results:
        figures["memory"] = memory_figure(results, out_dir / f"{stem}-memory.png")
    (out_dir / figures["json"]).write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out_dir / f"{stem}.md").write_text(markdown(results, figures))
    return {name: out_dir / f for name, f in figures.items()} | {"md": out_dir / f"{stem}.md"}
