"""Specifications of mha.compare: one set of weights through every path, and the differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mha
from mha import compare
from mha.layers import MultiHeadAttention
from mha.torch_transfer import to_nn_multihead

B, T, C, H = 2, 5, 8, 2
CAUSAL = mha.causal_mask(T)
PADDING = np.array([[False] * T, [False] * 3 + [True] * 2])  # (B, Tk): sequence 1 has 3 tokens


def query(dtype=torch.float64, seed=1):
    return torch.randn(B, T, C, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# -- run_four_paths -------------------------------------------------------------

def test_run_four_paths_returns_an_output_for_every_path():
    run = compare.run_four_paths(compare.seeded_module(C, H), query())
    assert tuple(run.outputs) == compare.PATHS
    assert all(out.shape == (B, T, C) for out in run.outputs.values())


def test_run_four_paths_returns_per_head_weights_where_a_path_has_them():
    run = compare.run_four_paths(compare.seeded_module(C, H), query(), mask=CAUSAL)
    assert set(run.weights) == {"numpy", "torch manual", "nn.MultiheadAttention, need_weights=True"}
    assert all(w.shape == (B, H, T, T) for w in run.weights.values())


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("mask", "padding"), [(None, None), (CAUSAL, None), (None, PADDING),
                                               (CAUSAL, PADDING)],
                         ids=["no mask", "causal", "padding", "causal and padding"])
def test_the_paths_agree_in_float64(bias, mask, padding):
    run = compare.run_four_paths(compare.seeded_module(C, H, bias=bias), query(), mask=mask,
                                 key_padding_mask=padding)
    assert max(compare.max_differences(run.outputs).values()) < 1e-13
    assert max(compare.max_differences(run.weights).values()) < 1e-13


def test_the_paths_agree_in_float32_within_a_few_ulps():
    module = compare.seeded_module(C, H, dtype=torch.float32)
    run = compare.run_four_paths(module, query(torch.float32), mask=CAUSAL)
    assert max(compare.max_differences(run.outputs).values()) < 1e-6


def test_per_head_masks_reach_every_path():
    per_head = np.zeros((B, H, T, T), dtype=bool)
    per_head[0, 1, :, 0] = True  # batch 0, head 1 may not read key 0
    run = compare.run_four_paths(compare.seeded_module(C, H), query(), mask=per_head)
    for w in run.weights.values():
        assert np.all(w[0, 1, :, 0] == 0) and np.all(w[0, 0, :, 0] > 0)
    assert max(compare.max_differences(run.outputs).values()) < 1e-13


def test_the_numpy_path_applies_the_key_padding_mask():
    run = compare.run_four_paths(compare.seeded_module(C, H), query(), key_padding_mask=PADDING)
    assert np.all(run.weights["numpy"][1, :, :, 3:] == 0)
    assert run.blocked.shape == (B, H, T, T)


def test_run_four_paths_restores_the_modules_impl_and_mode():
    module = compare.seeded_module(C, H).train()
    module.impl = "sdpa"
    compare.run_four_paths(module, query())
    assert module.impl == "sdpa" and module.training


def test_run_four_paths_refuses_a_fully_masked_row():
    everything = np.ones((T, T), dtype=bool)
    with pytest.raises(ValueError, match="fully masked row"):
        compare.run_four_paths(compare.seeded_module(C, H), query(), mask=everything)


# -- run_nn_multihead: package masks into nn.MultiheadAttention -------------------

def _layer():
    return to_nn_multihead(compare.seeded_module(C, H))


def test_run_nn_multihead_refuses_a_float_key_padding_mask():
    zero_one = PADDING.astype(np.float64)  # nn.MultiheadAttention would read it as additive
    with pytest.raises(TypeError, match="must be boolean with True = blocked"):
        compare.run_nn_multihead(_layer(), query(), key_padding_mask=zero_one)


def test_run_nn_multihead_refuses_a_fully_padded_sequence():
    everything = torch.ones(B, T, dtype=torch.bool)
    with pytest.raises(ValueError, match="fully masked row: the key_padding_mask blocks"):
        compare.run_nn_multihead(_layer(), query(), key_padding_mask=everything)


def test_run_nn_multihead_refuses_a_row_the_two_masks_block_together():
    first_key_only = np.ones((T, T), dtype=bool)
    first_key_only[:, 0] = False
    padding = np.zeros((B, T), dtype=bool)
    padding[1, 0] = True  # sequence 1 loses its only open key
    with pytest.raises(ValueError, match="the mask combined with key_padding_mask blocks every "
                                         r"key for query 0 of batch/head index \(1, 0\)"):
        compare.run_nn_multihead(_layer(), query(), mask=first_key_only, key_padding_mask=padding)


def test_run_nn_multihead_refuses_a_key_padding_mask_of_another_shape():
    with pytest.raises(ValueError, match=r"key_padding_mask must be \(B, Tk\) = \(2, 5\)"):
        compare.run_nn_multihead(_layer(), query(), key_padding_mask=PADDING[:, None, None])


def test_gradients_of_nn_multihead_refuse_a_fully_padded_sequence():
    everything = torch.ones(B, T, dtype=torch.bool)
    with pytest.raises(ValueError, match="fully masked row"):
        compare.gradients(_layer(), query(), key_padding_mask=everything)


# -- max_differences, magnitude, format_table -------------------------------------

def test_max_differences_measures_each_array_against_the_reference():
    arrays = {"ref": np.zeros(3), "a": np.array([0.0, -2.0, 1.0]), "b": np.zeros(3)}
    assert compare.max_differences(arrays, "ref") == {"a": 2.0, "b": 0.0}


def test_max_differences_refuses_arrays_of_different_shapes():
    with pytest.raises(ValueError, match=r"a has shape \(2,\) but ref has \(3,\)"):
        compare.max_differences({"ref": np.zeros(3), "a": np.zeros(2)}, "ref")


@pytest.mark.parametrize(("x", "shown"), [(1.2e-7, "1e-06"), (4.8e-7, "1e-06"), (1e-7, "1e-07"),
                                          (9.99e-7, "1e-06"), (1e-6, "1e-06"), (2.2e-16, "1e-15"),
                                          (-3e-3, "1e-02"), (0.0, "0"), (1.0000001e-6, "1e-05")])
def test_magnitude_is_the_power_of_ten_at_or_above(x, shown):
    assert compare.magnitude(x) == shown


def test_magnitude_never_prints_less_than_the_difference():
    eps = float(np.finfo(np.float32).eps)
    for ulps in range(1, 100):
        assert float(compare.magnitude(ulps * eps)) >= ulps * eps


def test_format_table_writes_one_line_per_row_plus_a_header():
    table = {"col a": {"r1": 1e-7, "r2": 0.0}, "col b": {"r1": 3e-16, "r2": 0.0}}
    text = compare.format_table(table)
    lines = text.splitlines()
    assert len(lines) == 3 and "col a" in lines[0] and "col b" in lines[0]
    assert lines[1].split() == ["r1", "1e-07", "1e-15"]


def test_format_table_refuses_columns_with_different_rows():
    with pytest.raises(ValueError, match="has rows"):
        compare.format_table({"a": {"r1": 1.0}, "b": {"r2": 1.0}})


# -- seeded_module, difference_table ----------------------------------------------

def test_seeded_module_gives_the_same_weights_rounded_in_both_dtypes():
    m64, m32 = compare.seeded_module(C, H, seed=3), compare.seeded_module(C, H, seed=3,
                                                                          dtype=torch.float32)
    for p64, p32 in zip(m64.parameters(), m32.parameters(), strict=True):
        assert p32.dtype == torch.float32
        torch.testing.assert_close(p64.float(), p32, rtol=0, atol=0)
    assert not m64.training


def test_seeded_module_leaves_the_global_torch_seed_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    compare.seeded_module(C, H)
    assert torch.equal(torch.rand(3), expected)


def test_difference_table_has_one_column_per_dtype_and_bias():
    table = compare.difference_table(query(), H, mask=CAUSAL)
    assert list(table) == ["float32, bias", "float32, no bias", "float64, bias", "float64, no bias"]
    assert list(table["float32, bias"]) == [*compare.PATHS[1:], "rows sum to 1",
                                            "weight on a blocked key"]


def test_nn_multihead_runs_its_own_softmax_sdpa_and_the_fast_path():
    module = compare.seeded_module(C, H)
    layer, x = to_nn_multihead(module), query()
    assert compare.attention_kernels(lambda: layer(x, x, x)) == ["aten._softmax"]
    sdpa = compare.attention_kernels(lambda: layer(x, x, x, need_weights=False))
    assert len(sdpa) == 1 and "scaled_dot_product" in sdpa[0]
    with torch.no_grad():
        fast = compare.attention_kernels(lambda: layer(x, x, x, need_weights=False))
    assert fast == ["aten._native_multi_head_attention"]


def test_attention_kernels_sees_the_manual_path_softmax():
    module = compare.seeded_module(C, H)
    assert compare.attention_kernels(lambda: module(query())) == ["aten._softmax"]


def test_difference_table_stays_within_the_bounds_of_each_dtype():
    table = compare.difference_table(query(), H, mask=CAUSAL, key_padding_mask=PADDING)
    for column, bound in (("float32, bias", 1e-6), ("float64, bias", 1e-14)):
        assert max(table[column].values()) < bound
        assert table[column]["weight on a blocked key"] == 0.0


def test_difference_table_reports_zero_weight_on_blocked_keys_without_a_mask_too():
    table = compare.difference_table(query(), H, dtypes=(torch.float64,), biases=(False,))
    assert table["float64, no bias"]["weight on a blocked key"] == 0.0


# -- gradients --------------------------------------------------------------------

def test_gradients_name_the_same_tensors_for_every_layout():
    module = compare.seeded_module(C, H)
    names = ["x", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"]
    assert sorted(compare.gradients(module, query())) == sorted(names)
    assert sorted(compare.gradients(to_nn_multihead(module), query())) == sorted(names)


def test_gradients_of_a_packed_module_equal_those_of_the_unpacked_one():
    module = compare.seeded_module(C, H)
    packed = MultiHeadAttention(C, H, packed_qkv=True, dtype=torch.float64).eval()
    with torch.no_grad():
        for (w, b), (w0, b0) in zip(packed.in_projections(), module.in_projections(), strict=True):
            w.copy_(w0)
            b.copy_(b0)
        packed.out_proj.load_state_dict(module.out_proj.state_dict())
    ours, theirs = compare.gradients(module, query()), compare.gradients(packed, query())
    for name, grad in ours.items():
        torch.testing.assert_close(theirs[name], grad, rtol=1e-12, atol=1e-12)


def test_gradients_leave_no_grad_on_the_module():
    module = compare.seeded_module(C, H)
    compare.gradients(module, query())
    assert all(p.grad is None for p in module.parameters())


@pytest.mark.parametrize(("dtype", "bound"), [(torch.float64, 1e-13), (torch.float32, 1e-5)])
def test_gradient_differences_are_rounding_only(dtype, bound):
    module = compare.seeded_module(C, H, dtype=dtype)
    diffs = compare.gradient_differences(module, query(dtype), mask=CAUSAL,
                                         key_padding_mask=PADDING)
    assert list(diffs) == ["torch sdpa", "nn.MultiheadAttention"]
    assert max(max(d.values()) for d in diffs.values()) < bound


def test_gradient_differences_see_a_different_module():
    module, other = compare.seeded_module(C, H, seed=0), compare.seeded_module(C, H, seed=1)
    ref, wrong = compare.gradients(module, query()), compare.gradients(other, query())
    assert (ref["W_Q"] - wrong["W_Q"]).abs().max() > 1e-3


# -- missing_gradients ------------------------------------------------------------

class UsesOneOfTwo(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(2, 2), nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)


def test_missing_gradients_names_a_parameter_the_forward_never_uses():
    model = UsesOneOfTwo()
    model(torch.ones(1, 2)).sum().backward()
    assert compare.missing_gradients(model) == ["unused.weight", "unused.bias"]


def test_missing_gradients_is_empty_when_every_parameter_is_reached():
    module = compare.seeded_module(C, H)
    module(query())[0].sum().backward()
    assert compare.missing_gradients(module) == []


def test_missing_gradients_skips_frozen_parameters():
    model = UsesOneOfTwo()
    model.unused.requires_grad_(False)
    model(torch.ones(1, 2)).sum().backward()
    assert compare.missing_gradients(model) == []


# -- migration_checks -------------------------------------------------------------

def run_ours(module, x):
    return module(x, mask=CAUSAL)[0]


def run_theirs(module, x):
    return compare.run_nn_multihead(module, x, mask=CAUSAL, need_weights=False)[0]


def test_migration_checks_all_pass_for_a_faithful_copy():
    module = compare.seeded_module(C, H)
    checks = compare.migration_checks(module, to_nn_multihead(module), query(), run_ours,
                                      run_theirs, atol=1e-12)
    assert checks == dict.fromkeys(["outputs agree", "input gradients agree",
                                    "every parameter gets a gradient", "eval() is deterministic",
                                    "batch items are independent"], True)


def test_migration_checks_see_different_weights():
    module, other = compare.seeded_module(C, H, seed=0), compare.seeded_module(C, H, seed=1)
    checks = compare.migration_checks(module, to_nn_multihead(other), query(), run_ours,
                                      run_theirs, atol=1e-12)
    assert not checks["outputs agree"] and not checks["input gradients agree"]


def test_migration_checks_see_an_unused_parameter():
    ours, theirs = UsesOneOfTwo().double(), UsesOneOfTwo().double()
    theirs.load_state_dict(ours.state_dict())
    x = torch.ones(2, 3, 2, dtype=torch.float64)
    checks = compare.migration_checks(ours, theirs, x, lambda m, x: m(x), lambda m, x: m(x),
                                      atol=1e-12)
    assert checks["outputs agree"] and not checks["every parameter gets a gradient"]


def test_migration_checks_see_dropout_left_on_in_eval():
    class AlwaysDrops(nn.Module):
        def forward(self, x):
            return torch.nn.functional.dropout(x, p=0.5, training=True)

    x = query()
    checks = compare.migration_checks(AlwaysDrops(), AlwaysDrops(), x, lambda m, x: m(x),
                                      lambda m, x: m(x), atol=1e-12)
    assert not checks["eval() is deterministic"]


def test_migration_checks_see_batch_items_mixed():
    def mixes(module, x):
        return x + x.mean(dim=0, keepdim=True)  # every item reads the others

    checks = compare.migration_checks(nn.Identity(), nn.Identity(), query(), mixes, mixes,
                                      atol=1e-12)
    assert not checks["batch items are independent"] and checks["outputs agree"]


@pytest.mark.parametrize("atol", [float("nan"), -1e-12, float("inf"), "1e-12", True])
def test_migration_checks_refuse_a_tolerance_that_is_not_a_finite_number_at_least_0(atol):
    module = compare.seeded_module(C, H)
    with pytest.raises(ValueError, match=f"atol must be a finite number >= 0; got {atol!r}"):
        compare.migration_checks(module, to_nn_multihead(module), query(), run_ours,
                                 run_theirs, atol=atol)


def test_migration_checks_refuse_a_batch_of_one():
    module = compare.seeded_module(C, H)
    with pytest.raises(ValueError, match="batch of at least 2"):
        compare.migration_checks(module, to_nn_multihead(module), query()[:1], run_ours,
                                 run_theirs, atol=1e-12)


def test_relative_gradient_differences_divide_by_the_gradients_size():
    module = compare.seeded_module(C, H)
    absolute = compare.gradient_differences(module, query(), mask=CAUSAL)
    relative = compare.gradient_differences(module, query(), mask=CAUSAL, relative=True)
    size = float(compare.gradients(module, query(), mask=CAUSAL)["W_V"].abs().max())
    for path in absolute:
        assert relative[path]["W_V"] == pytest.approx(absolute[path]["W_V"] / size)


def test_the_key_bias_gets_no_gradient_up_to_rounding():
    grads = compare.gradients(compare.seeded_module(C, H), query(), mask=CAUSAL)
    assert float(grads["b_K"].abs().max()) < 1e-14 * float(grads["W_K"].abs().max())


def test_difference_table_exposes_a_numpy_copy_without_the_transpose(monkeypatch):
    def untransposed(module, ignore_dropout=False):
        copy = mha.MultiHeadAttention(module.d_model, module.n_heads, bias=module.bias)
        for s, proj in zip("qkvo", (module.q_proj, module.k_proj, module.v_proj,
                                    module.out_proj), strict=True):
            setattr(copy, f"w_{s}", proj.weight.detach().numpy().copy())  # (out, in) as is
            setattr(copy, f"b_{s}", None if proj.bias is None else proj.bias.detach().numpy())
        return copy

    monkeypatch.setattr(compare, "to_numpy", untransposed)
    table = compare.difference_table(query(), H, dtypes=(torch.float64,), biases=(True,))
    assert table["float64, bias"]["torch manual"] > 1e-2
