"""mha.checkup: the named checks pass good modules, and a failure names itself."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from mha import broken  # noqa: E402
from mha._checkup_adapters import _projections  # noqa: E402
from mha.checkup import (  # noqa: E402
    CHECKS,
    Adapter,
    _loop_over_heads,
    checkup,
    checkup_table,
    qkv_adapter,
)
from mha.layers import MultiHeadAttention  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WEIGHT_CHECKS = {"rows sum to 1", "need_weights invariance", "score spread"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("packed", [False, True])
def test_package_module_manual_passes_every_check(dtype, packed):
    report = checkup(MultiHeadAttention(8, 2, packed_qkv=packed, dtype=dtype))
    assert report.passed and all(r.passed for r in report.results), str(report)


def test_package_module_sdpa_passes_and_skips_only_the_weight_checks():
    report = checkup(MultiHeadAttention(8, 2, impl="sdpa"))
    assert report.passed, str(report)
    assert {r.name for r in report.results if r.passed is None} == WEIGHT_CHECKS


@pytest.mark.parametrize("batch_first", [True, False])
def test_nn_multihead_attention_passes_every_check(batch_first):
    report = checkup(nn.MultiheadAttention(8, 2, batch_first=batch_first))
    assert all(r.passed for r in report.results), str(report)


def test_dropout_in_the_package_module_is_off_in_eval_and_finite_in_training():
    assert checkup(MultiHeadAttention(8, 2, dropout=0.5)).passed


def test_every_check_is_reported_once_in_order():
    assert [r.name for r in checkup(MultiHeadAttention(8, 2)).results] == list(CHECKS)


def test_a_failed_check_names_the_likely_mistake():
    report = checkup(broken.BrokenScaleDModel(8, 2))
    assert report.failed == ["loop over heads"]
    assert "sqrt(d_model)" in report["loop over heads"].likely
    assert "likely: " in str(report)


def test_a_check_whose_call_raises_fails_and_shows_the_error():
    report = checkup(broken.BrokenPaddingBroadcast(8, 2), batch=3, length=5)
    assert report["padding invariance"].passed is False
    assert report["padding invariance"].detail.startswith("raised RuntimeError")


def test_checkup_leaves_mode_global_random_state_and_grads_as_found():
    module = MultiHeadAttention(8, 2, dropout=0.1).train()
    state = torch.random.get_rng_state()
    checkup(module)
    assert module.training
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(p.grad is None for p in module.parameters())


def test_eval_determinism_is_not_fooled_by_reseeding():
    report = checkup(broken.BrokenDropoutAtInference(8, 2), seed=3)
    assert report["eval determinism"].passed is False


def test_large_init_fails_score_spread_and_default_init_passes():
    assert checkup(broken.BrokenLargeInit(16, 4))["score spread"].passed is False
    assert checkup(MultiHeadAttention(16, 4))["score spread"].passed


def test_loop_over_heads_reference_equals_the_package_module():
    module = MultiHeadAttention(8, 4, dtype=torch.float64)
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(_loop_over_heads(x, _projections(module)(), 4), module(x)[0])


def test_qkv_adapter_takes_batch_first_from_the_module_unless_told():
    layer = nn.MultiheadAttention(8, 2)  # batch_first=False
    assert checkup(qkv_adapter(layer)).passed
    assert "batch independence" in checkup(qkv_adapter(layer, batch_first=True)).failed


def test_a_hand_built_adapter_is_used_as_given():
    module = MultiHeadAttention(8, 2)

    def run(x, causal, key_padding_mask, need_weights):
        return module(x, key_padding_mask=key_padding_mask, is_causal=False,
                      need_weights=need_weights)  # forgets the causal flag

    report = checkup(Adapter(module, 8, 2, run))  # no projections given
    assert report.failed == ["causality"]
    assert report["loop over heads"].passed is None


def test_checkup_table_has_a_row_per_module_and_a_mark_per_check():
    reports = {"good": checkup(MultiHeadAttention(8, 2)),
               "scale": checkup(broken.BrokenScaleDModel(8, 2))}
    lines = checkup_table(reports).splitlines()
    assert lines[-2].split() == ["good"] + ["."] * len(CHECKS)
    marks = lines[-1].split()[1:]
    assert marks[list(CHECKS).index("loop over heads")] == "X" and marks.count("X") == 1


@pytest.mark.parametrize(("kw", "name"), [({"batch": 1}, "batch"), ({"length": 2}, "length"),
                                          ({"batch": 2.0}, "batch")])
def test_checkup_refuses_sizes_too_small_for_its_checks(kw, name):
    with pytest.raises(ValueError, match=f"{name} must be an int >= "):
        checkup(MultiHeadAttention(8, 2), **kw)


def test_checkup_refuses_a_module_without_the_package_attributes():
    with pytest.raises(TypeError, match="needs an nn.Module with d_model and n_heads"):
        checkup(nn.Linear(8, 8))


def test_checkup_refuses_a_module_it_cannot_call_and_says_how_to_wrap_it():
    class OtherCall(nn.Module):
        d_model, n_heads = 8, 2

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x, mask=None):
            return self.lin(x), None

    with pytest.raises(TypeError, match="could not call the module.*checkup.Adapter"):
        checkup(OtherCall())


def test_checkup_refuses_a_module_that_returns_a_bare_tensor():
    module = MultiHeadAttention(8, 2)
    adapter = Adapter(module, 8, 2, lambda x, *rest: module(x)[0])
    with pytest.raises(TypeError, match=r"must return \(out, weights or None\); got Tensor"):
        checkup(adapter)

# -- lesson 10's pictures (mha.plot.checkup) ----------------------------------------

def _pictures():
    import matplotlib

    matplotlib.use("Agg")
    from mha.plot import checkup as pictures

    return pictures


def test_checkup_grid_draws_pass_fail_and_skipped_and_outlines_the_expected_cell():
    import matplotlib.pyplot as plt

    reports = {"sdpa": checkup(MultiHeadAttention(8, 2, impl="sdpa")),
               "scale": checkup(broken.BrokenScaleDModel(8, 2))}
    ax, image = _pictures().checkup_grid(reports, {"scale": "loop over heads"})
    values = image.get_array()
    heads, rows = list(CHECKS).index("loop over heads"), list(CHECKS).index("rows sum to 1")
    assert values[1, heads] == 0 and values[0, heads] == 1 and values.mask[0, rows]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(CHECKS)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["sdpa", "scale"]
    (outline,) = ax.patches
    assert outline.get_xy() == (heads - 0.5, 0.5)
    plt.close("all")


def test_loss_curves_draws_each_curve_and_the_floor():
    import matplotlib.pyplot as plt

    ax, lines = _pictures().loss_curves({"a": [3.0, 2.0, 1.0], "b": [3.0, 2.5]}, floor=2.08)
    assert [list(line.get_ydata()) for line in lines] == [[3.0, 2.0, 1.0], [3.0, 2.5]]
    floor = [line for line in ax.get_lines() if line not in lines]
    assert len(floor) == 1 and list(floor[0].get_ydata()) == [2.08, 2.08]
    assert "2.08" in [t.get_text() for t in ax.get_legend().get_texts()][-1]
    plt.close("all")
