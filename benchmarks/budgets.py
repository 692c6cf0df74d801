"""The budgets of issue 11, checked against a benchmark run's results.

Each budget is a dict: ``name``, ``limit`` and ``measured`` (as text, with units),
``held`` (bool) and ``margin`` (how far under or over the limit, as text). A
section that was not run has no budgets.
"""

from __future__ import annotations

SERIES_TOTAL_SECONDS = 180.0
NOTEBOOK_PEAK_BYTES = 2.0**30
PACKAGE_OVER_SDPA = 1.10
TILED_OVER_PLAIN = 0.05
TILED_AT_T = 8192
WIDGET_MEDIAN_MS = 100.0


def _budget(name: str, measured: float, limit: float, unit: str = "", fmt: str = ".1f") -> dict:
    held = measured <= limit
    if limit > 0:
        rel = abs(measured / limit - 1.0)
        margin = f"{100 * rel:.0f}% {'under' if held else 'over'}"
    else:
        margin = "under" if held else "over"
    return {"name": name, "limit": f"{limit:{fmt}}{unit}", "measured": f"{measured:{fmt}}{unit}",
            "held": held, "margin": margin, "value": measured, "limit_value": limit}


def series_budgets(series: dict) -> list[dict]:
    out = []
    for row in series["notebooks"]:
        name = row["notebook"]
        if row["error"]:
            out.append({"name": f"{name} runs to the end", "limit": "no error",
                        "measured": row["error"], "held": False, "margin": "fails",
                        "value": 1.0, "limit_value": 0.0})
        out.append(_budget(f"{name} wall time", row["seconds"], row["budget_seconds"], " s"))
        if row["peak_bytes"] is not None:
            out.append(_budget(f"{name} kernel peak memory", row["peak_bytes"] / 2**20,
                               NOTEBOOK_PEAK_BYTES / 2**20, " MiB", ".0f"))
    out.append(_budget("series total wall time", series["total_seconds"],
                       SERIES_TOTAL_SECONDS, " s"))
    return out


# The package's module paths the budgets may pick from: the default layout and the packed
# (3C, C) input projection, both impl="sdpa". Issue 11 budgets the package's *fastest* path.
PACKAGE_PATHS = ("package", "packed")


def fastest_package(ratio: dict) -> tuple[str, float]:
    """(name, ratio to SDPA) of the package's fastest module path in one row."""
    return min(((p, ratio[p]) for p in PACKAGE_PATHS if p in ratio), key=lambda pr: pr[1])


def attention_budgets(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        where = f"{tuple(row['shape'])} {'causal' if row['causal'] else 'not causal'} {row['pass']}"
        ratio = row["ratio"]
        path, fastest = fastest_package(ratio)
        out.append(_budget(f"package ({path}) / SDPA, {where}", fastest, PACKAGE_OVER_SDPA, "x",
                           ".2f"))
        out.append(_budget(f"package ({path}) / nn.MultiheadAttention, {where}",
                           fastest / ratio["nn"], 1.0, "x", ".2f"))
    return out


def tiled_budgets(rows: list[dict]) -> list[dict]:
    t = max(row["T"] for row in rows)  # 8192 in a full run; the largest T in a smoke run
    return [_budget(f"tiled / plain peak extra memory, T = {t}, {row['pass']}",
                    100 * row["ratio"], 100 * TILED_OVER_PLAIN, "%", ".2f")
            for row in rows if row["T"] == t]


def widget_budgets(widgets: dict) -> list[dict]:
    out = [_budget(f"{row['widget']} median redraw", row["median_ms"], WIDGET_MEDIAN_MS, " ms")
           for row in widgets["rows"]]
    missing = widgets["undriven"]
    out.append({"name": "every explorer in mha.widgets is measured", "limit": "none left out",
                "measured": ", ".join(missing) or "all", "held": not missing,
                "margin": f"{len(missing)} left out", "value": float(len(missing)),
                "limit_value": 0.0})
    return out


def evaluate(results: dict) -> list[dict]:
    """Every budget of the sections present in ``results``."""
    out = []
    if "series" in results:
        out += series_budgets(results["series"])
    if "attention" in results:
        out += attention_budgets(results["attention"])
    if "tiled" in results:
        out += tiled_budgets(results["tiled"])
    if "widgets" in results:
        out += widget_budgets(results["widgets"])
    return out


def exit_code(budgets: list[dict], check: bool) -> int:
    """1 when ``check`` is set and a budget failed, else 0."""
    return 1 if check and not all(b["held"] for b in budgets) else 0
