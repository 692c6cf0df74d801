"""The benchmark runner (benchmarks/run.py) keeps working: a smoke run, the budgets, the counts.

No timing is asserted here (machines are noisy): a smoke run with tiny sizes and one
repeat writes the report and its JSON with every section, and the budget and FLOP
arithmetic is checked on made-up numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import attention_paths  # noqa: E402
import budgets  # noqa: E402


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke run of the runner on a two-cell notebook: its exit code, JSON and report."""
    out = tmp_path_factory.mktemp("bench")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np"),
                                         nbformat.v4.new_code_cell("x = np.ones(1000)")])
    nbformat.write(nb, out / "tiny.ipynb")
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--smoke", "--out", str(out),
                           "--stem", "smoke", "--notebooks", str(out / "tiny.ipynb")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no --check: 0 whatever the budgets
    return {"proc": proc, "out": out, "json": json.loads((out / "smoke.json").read_text())}


@pytest.mark.slow
def test_smoke_run_writes_every_section_to_the_json(smoke):
    data = smoke["json"]
    assert {"series", "attention", "tiled", "widgets", "limits", "machine", "budgets"} <= set(data)
    assert [r["notebook"] for r in data["series"]["notebooks"]] == [
        str(smoke["out"] / "tiny.ipynb")]


@pytest.mark.slow
def test_smoke_run_times_every_attention_path_as_a_ratio_to_sdpa(smoke):
    rows = smoke["json"]["attention"]
    forward = [r for r in rows if r["pass"] == "forward"]
    assert forward and all(set(r["ratio"]) == set(attention_paths.PATHS) for r in forward)
    assert all(r["ratio"]["sdpa"] == 1.0 for r in rows)
    assert all(r["max_abs_diff"] < 1e-4 for r in forward)  # same weights: same output


@pytest.mark.slow
def test_smoke_run_measures_the_kernel_peak_memory(smoke):
    (row,) = smoke["json"]["series"]["notebooks"]
    assert row["error"] is None and row["peak_bytes"] > 10 * 2**20  # a Python kernel's RSS


@pytest.mark.slow
def test_smoke_report_links_its_figures_and_names_the_machine(smoke):
    text = (smoke["out"] / "smoke.md").read_text()
    for figure in ("smoke-series.png", "smoke-ratio.png", "smoke-memory.png"):
        assert f"]({figure})" in text and (smoke["out"] / figure).stat().st_size > 1000
    assert smoke["json"]["machine"]["cpu"] in text and "Load average" in text


@pytest.mark.slow
def test_smoke_run_prints_each_budget_held_or_missed(smoke):
    lines = [ln for ln in smoke["proc"].stdout.splitlines()
             if ln.startswith(("  held", "  MISSED"))]
    assert len(lines) == len(smoke["json"]["budgets"]) > 0


def test_every_explorer_in_mha_widgets_has_a_redraw_driver():
    from widget_redraw import DRIVERS

    import mha.widgets
    from mha.widgets import Explorer

    explorers = {obj for obj in vars(mha.widgets).values()
                 if isinstance(obj, type) and issubclass(obj, Explorer) and obj is not Explorer}
    assert explorers <= set(DRIVERS), explorers - set(DRIVERS)


def _results(package_ratio: float, nn_ratio: float = 1.5) -> dict:
    row = {"shape": [1, 8, 4, 2], "causal": True, "pass": "forward",
           "ratio": {"package": package_ratio, "sdpa": 1.0, "nn": nn_ratio}}
    return {"attention": [row]}


def test_check_exits_nonzero_when_the_package_is_over_1_10x_sdpa():
    found = budgets.evaluate(_results(1.2))
    assert budgets.exit_code(found, check=True) == 1
    assert [b["held"] for b in found] == [False, True]


def test_check_exits_zero_when_every_budget_holds():
    assert budgets.exit_code(budgets.evaluate(_results(1.05)), check=True) == 0


def test_without_check_a_missed_budget_still_exits_zero():
    assert budgets.exit_code(budgets.evaluate(_results(3.0)), check=False) == 0


def test_package_slower_than_nn_multihead_misses_its_budget():
    (_, against_nn) = budgets.evaluate(_results(1.05, nn_ratio=1.0))
    assert not against_nn["held"] and against_nn["measured"] == "1.05x"


def test_the_package_budgets_read_its_fastest_module_path():
    row = {"shape": [1, 8, 4, 2], "causal": True, "pass": "forward",
           "ratio": {"package": 1.3, "packed": 0.9, "sdpa": 1.0, "nn": 1.0}}
    against_sdpa, against_nn = budgets.evaluate({"attention": [row]})
    assert against_sdpa["held"] and against_nn["held"]
    assert "package (packed)" in against_sdpa["name"]


def test_tiled_budget_is_read_at_the_largest_t():
    rows = [{"T": 1024, "pass": "forward", "ratio": 0.08},
            {"T": 8192, "pass": "forward", "ratio": 0.003}]
    (only,) = budgets.tiled_budgets(rows)
    assert "T = 8192" in only["name"] and only["held"]


def test_a_notebook_that_fails_misses_its_budget():
    series = {"notebooks": [{"notebook": "x.ipynb", "error": "CellExecutionError: boom",
                             "seconds": 1.0, "budget_seconds": 20.0, "peak_bytes": None}],
              "total_seconds": 1.0}
    assert not all(b["held"] for b in budgets.series_budgets(series))


def test_lesson_09_has_a_30_second_budget_and_the_others_20():
    import series

    assert series.budget_seconds(Path("09_memory_speed_precision.ipynb")) == 30.0
    assert series.budget_seconds(Path("04_masks.ipynb")) == 20.0


def test_every_exercise_stub_is_timed_through_its_solution_version():
    import series

    kinds = [kind for path, kind in series.series_notebooks() if path.name.startswith("ex")]
    assert kinds and set(kinds) == {"exercise (solution)"}


def test_flops_count_projections_and_both_attention_products():
    b, t, c = 2, 4, 8
    projections, products = 8 * b * t * c * c, 2 * (2 * b * t * t * c)
    assert attention_paths.flops((b, t, c, 2), is_causal=False) == projections + products


def test_causal_flops_count_only_the_unblocked_pairs():
    full = attention_paths.flops((1, 4, 8, 2), is_causal=False)
    causal = attention_paths.flops((1, 4, 8, 2), is_causal=True)
    assert full - causal == 4 * (16 - 10) * 8  # 10 of the 16 (query, key) pairs are open


def test_forward_and_backward_count_three_forwards():
    shape = (1, 4, 8, 2)
    assert attention_paths.flops(shape, False, backward=True) == 3 * attention_paths.flops(
        shape, False)


def test_a_time_limit_stops_the_rounds_after_three():
    row = attention_paths.measure((1, 8, 8, 2), False, False, repeats=6, max_seconds=0.0)
    assert row["repeats"] == 3


def test_without_a_time_limit_every_round_runs():
    row = attention_paths.measure((1, 8, 8, 2), False, False, repeats=4)
    assert row["repeats"] == 4
