"""mha.checkup on modules written in the styles learners meet (tests/checkup_corpus/).

Every correct module passes every check it can run, in every dtype; every classic
mistake planted in it is named by a failed check; a check that cannot run says so.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from mha.checkup import MISTAKES, checkup  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CORPUS = Path(__file__).parent / "checkup_corpus"
# unusual/: styles written after the corpus passed (einsum with (H, C, dh) weights and a
# (B, T) keep-mask; heads as an nn.ModuleList of single-head modules; two from a learner's
# own modules: heads in a ModuleList taking one (T, T) mask=, einsum with causal= and pad=)
STYLES = sorted(str(p.relative_to(CORPUS).with_suffix("")) for p in [*CORPUS.glob("*.py"),
                                                                     *CORPUS.glob("unusual/*.py")])
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def _load(style):
    name = "checkup_corpus_" + style.replace("/", "_")
    spec = importlib.util.spec_from_file_location(name, CORPUS / f"{style}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(style, mistake=None, dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    source = _load(style)
    heads = 1 if style == "single_head" else 4
    return source, source.Attention(16, heads, mistake=mistake).to(dtype)


def test_the_corpus_has_at_least_eight_styles_and_every_classic_mistake():
    assert len([s for s in STYLES if "/" not in s]) >= 8
    planted = {m for style in STYLES for m in _load(style).MISTAKES}
    classic = {"scale sqrt(d_model)", "no scale", "mask inverted", "mask after softmax",
               "causal off by one", "padding on the query axis", "softmax over the wrong axis",
               "view split", "dropout at inference", "weights path differs"}
    assert classic <= planted <= set(MISTAKES)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("style", STYLES)
def test_every_correct_module_passes_every_check_it_can_run(style, dtype):
    if style == "annotated_style" and dtype == torch.float16:
        pytest.skip("-1e9 does not fit in float16: see the test below")
    source, module = _build(style, dtype=dtype)
    for kw in ({}, source.CHECKUP):  # mask meaning read from behaviour, or as documented
        report = checkup(module, **kw)
        assert not report.failed, str(report)
        for r in report.results:
            assert r.passed or r.detail.startswith("not run: "), str(report)


def test_a_finite_fill_of_minus_1e9_is_reported_as_raising_in_float16():
    _, module = _build("annotated_style", dtype=torch.float16)
    report = checkup(module)
    assert "cannot be converted to type c10::Half without overflow" in report["causality"].detail


MISTAKE_CASES = [pytest.param(style, m, id=f"{style}-{m}") for style in STYLES
                 for m in _load(style).MISTAKES]


@pytest.mark.parametrize(("style", "mistake"), MISTAKE_CASES)
def test_every_planted_mistake_is_named(style, mistake):
    source, module = _build(style, mistake)
    report = checkup(module, **source.CHECKUP)
    assert mistake in report.mistakes, str(report)


@pytest.mark.parametrize(("style", "mistake"), [
    ("flags_style", "scale sqrt(d_model)"), ("nanogpt_style", "causal off by one"),
    ("torch_like", "padding on the query axis"), ("sdpa_style", "view split"),
    ("single_head", "mask after softmax")])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64], ids=str)
def test_mistakes_are_named_in_other_dtypes_too(style, mistake, dtype):
    source, module = _build(style, mistake, dtype)
    assert mistake in checkup(module, **source.CHECKUP).mistakes


def test_a_failure_is_only_reported_with_a_measurement():
    source, module = _build("flags_style", "causal off by one")
    report = checkup(module)
    assert report["causality"].detail.startswith("NaN in output rows [0]")
    assert report["causality"].mistakes == ("causal off by one",)
    for name in report.failed:  # each failure says what it measured
        assert report[name].detail and not report[name].detail.startswith("not run")


def test_a_nan_from_a_fully_blocked_row_is_not_blamed_on_dropout():
    _, module = _build("unusual/einsum_flag_pad", "mask inverted")
    report = checkup(module)
    assert report["causality"].mistakes == ("mask inverted",), str(report)
    assert "dropout on masked scores" not in report.mistakes, str(report)
