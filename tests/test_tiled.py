"""Specification of mha.tiled: online-softmax attention over tiles, and its backward.

The references are the plain path (mha.attention, mha.attention_backward, which
build the whole (Tq, Tk) matrix) and torch autograd in float64. Causal masking
is lower-right aligned: query i of Tq sits at position i + Tk - Tq.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha._checks import DTypeError
from mha.masks import mask_from_positions
from mha.tiled import (
    FULL,
    PARTIAL,
    SKIPPED,
    TiledGrads,
    TiledOutput,
    peak_traced_bytes,
    tile_plan,
    tiled_attention,
    tiled_attention_backward,
)


def lower_right_causal(tq, tk):
    return mask_from_positions(np.arange(tq) + tk - tq, np.arange(tk))  # (Tq, Tk)


def plain(q, k, v, mask=None, is_causal=False, scale=None):
    """The plain path's output, and its masking as one explicit mask (for its backward)."""
    full = mask
    if is_causal:
        causal = lower_right_causal(q.shape[-2], k.shape[-2])
        full = causal if mask is None else (causal | mask)
    return mha.attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)[0], full


def rel_err(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def qkv(rng, lead, tq, tk, d_k, d_v, dtype=np.float64):
    shapes = [lead + (tq, d_k), lead + (tk, d_k), lead + (tk, d_v)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


# --- worked small cases --------------------------------------------------------------------

def test_two_keys_one_at_a_time_rescale_the_first_sum_by_exp_of_the_max_change():
    # Scores (0, log 3): after key 0, m = 0, l = 1; key 1 raises m to log 3, so the old
    # sum is multiplied by exp(0 - log 3) = 1/3: l = 1/3 + 1 = 4/3, weights (1/4, 3/4).
    q, k = np.array([[1.0]]), np.array([[0.0], [np.log(3.0)]])
    v = np.eye(2)
    out, lse = tiled_attention(q, k, v, scale=1.0, block_k=1)
    np.testing.assert_allclose(out, [[0.25, 0.75]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(lse, [np.log(4.0)], rtol=0, atol=1e-15)


def test_returns_output_and_log_sum_exp_named():
    rng = np.random.default_rng(0)
    q, k, v = qkv(rng, (2, 3), 5, 7, 4, 3)
    result = tiled_attention(q, k, v, block_q=2, block_k=3)
    assert isinstance(result, TiledOutput)
    assert result.out.shape == (2, 3, 5, 3) and result.lse.shape == (2, 3, 5)
    s = mha.scores(q, k)
    np.testing.assert_allclose(result.lse, np.log(np.exp(s).sum(-1)), rtol=0, atol=1e-13)


def test_causal_with_fewer_queries_than_keys_is_aligned_lower_right():
    # Two new queries after three cached keys: query 0 is position 3, it sees keys 0..3.
    rng = np.random.default_rng(1)
    q, k, v = qkv(rng, (), 2, 5, 3, 2)
    out, _ = tiled_attention(q, k, v, is_causal=True, block_q=1, block_k=2)
    expected = mha.attention(q, k, v, mask=np.array([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], bool))[0]
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15)


def test_scale_is_used_in_place_of_one_over_sqrt_dk():
    rng = np.random.default_rng(2)
    q, k, v = qkv(rng, (), 4, 6, 3, 2)
    np.testing.assert_allclose(tiled_attention(q, k, v, scale=0.3, block_k=4).out,
                               mha.attention(q, k, v, scale=0.3)[0], rtol=0, atol=1e-14)


def test_float32_in_gives_float32_out_and_float16_computes_in_float32():
    rng = np.random.default_rng(3)
    for dtype, expected in [(np.float32, np.float32), (np.float16, np.float32),
                            (np.float64, np.float64)]:
        out, lse = tiled_attention(*qkv(rng, (), 3, 4, 2, 2, dtype), block_k=3)
        assert out.dtype == lse.dtype == expected


# --- the tile plan ---------------------------------------------------------------------------

def test_causal_square_plan_skips_every_tile_above_the_diagonal():
    plan = tile_plan(8, 8, 2, 2, is_causal=True)
    assert (plan == np.where(np.eye(4, dtype=bool), PARTIAL,
                             np.where(np.tri(4, dtype=bool), FULL, SKIPPED))).all()


def test_causal_plan_with_tiles_not_dividing_t_still_skips_only_fully_blocked_tiles():
    tq, tk, bq, bk = 7, 10, 3, 4
    plan = tile_plan(tq, tk, bq, bk, is_causal=True)
    blocked = lower_right_causal(tq, tk)
    for a in range(plan.shape[0]):
        for b in range(plan.shape[1]):
            tile = blocked[a * bq:(a + 1) * bq, b * bk:(b + 1) * bk]
            assert plan[a, b] == (SKIPPED if tile.all() else PARTIAL if tile.any() else FULL)


def test_sliding_window_plan_skips_tiles_the_mask_blocks_entirely():
    plan = tile_plan(16, 16, 4, 4, mask=mha.causal_mask(16, window=4))
    # Window 4 = tile side 4: the diagonal tiles and the ones just below, 4 + 3 of 16.
    assert (plan != SKIPPED).sum() == 7
    assert (plan[np.tri(4, k=-2, dtype=bool)] == SKIPPED).all()  # the band's far past
    assert (plan[np.triu_indices(4, 1)] == SKIPPED).all()  # the future


# --- equality with the plain path ------------------------------------------------------------

def test_equals_plain_path_with_a_causal_mask_and_padding_in_float64():
    rng = np.random.default_rng(4)
    q, k, v = qkv(rng, (2, 2), 9, 9, 4, 5)
    pad = mha.padding_mask(np.array([9, 6]), 9)  # (2, 1, 1, 9)
    out, _ = tiled_attention(q, k, v, mask=pad, is_causal=True, block_q=4, block_k=3)
    assert np.abs(out - plain(q, k, v, mask=pad, is_causal=True)[0]).max() < 1e-12


def test_float32_is_within_1e_5_relative_of_the_plain_path_at_t_1024():
    rng = np.random.default_rng(5)
    q, k, v = qkv(rng, (1, 2), 1024, 1024, 64, 64, np.float32)
    out, _ = tiled_attention(q, k, v, is_causal=True)
    assert rel_err(out, plain(q, k, v, is_causal=True)[0]) < 1e-5


def random_mask(rng, lead, tq, tk, is_causal):
    """A random mask that leaves every query at least one key (the diagonal, or one key)."""
    m = rng.random(lead + (tq, tk)) < 0.4
    keep = np.minimum(np.arange(tq) + tk - tq, tk - 1) if is_causal else rng.integers(0, tk, tq)
    m[..., np.arange(tq), keep] = False
    return m


cases = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "lead": st.sampled_from([(), (2,), (2, 3)]),
    "tq": st.integers(1, 12), "tk": st.integers(1, 12),
    "d_k": st.integers(1, 5), "d_v": st.integers(1, 5),
    "block_q": st.integers(1, 6), "block_k": st.integers(1, 6),
    "is_causal": st.booleans(), "masked": st.booleans(),
    "dtype": st.sampled_from([np.float32, np.float64]),
})


def draw(case):
    case = dict(case)
    if case["is_causal"] and case["tq"] > case["tk"]:
        case["tq"], case["tk"] = case["tk"], case["tq"]  # keep every query a key
    rng = np.random.default_rng(case["seed"])
    q, k, v = qkv(rng, case["lead"], case["tq"], case["tk"], case["d_k"], case["d_v"],
                  case["dtype"])
    mask = random_mask(rng, case["lead"], case["tq"], case["tk"], case["is_causal"]) \
        if case["masked"] else None
    options = dict(mask=mask, is_causal=case["is_causal"])
    return rng, q, k, v, options, dict(block_q=case["block_q"], block_k=case["block_k"])


@settings(max_examples=150)
@given(cases)
def test_property_equals_plain_path_over_shapes_tiles_masks_and_dtypes(case):
    _, q, k, v, options, blocks = draw(case)
    out, lse = tiled_attention(q, k, v, **options, **blocks)
    expected, _ = plain(q, k, v, **options)
    assert out.dtype == expected.dtype
    tol = 1e-12 if case["dtype"] == np.float64 else 1e-5
    assert rel_err(out, expected) <= tol


@settings(max_examples=100)
@given(cases)
def test_property_backward_equals_plain_backward(case):
    rng, q, k, v, options, blocks = draw({**case, "dtype": np.float64})
    out, lse = tiled_attention(q, k, v, **options, **blocks)
    g = rng.standard_normal(out.shape)
    grads = tiled_attention_backward(q, k, v, out, lse, g, **options, **blocks)
    _, full = plain(q, k, v, **options)
    expected = mha.attention_backward(q, k, v, g, mask=full)
    for name, mine, ref in zip(TiledGrads._fields, grads, expected[:3], strict=True):
        assert mine.shape == ref.shape
        np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-10, err_msg=name)


def test_tile_sizes_change_rounding_only():
    rng = np.random.default_rng(6)
    q, k, v = qkv(rng, (), 40, 40, 8, 8)
    outs = [tiled_attention(q, k, v, is_causal=True, block_q=bq, block_k=bk).out
            for bq, bk in [(1, 1), (7, 13), (40, 40), (256, 256)]]
    for out in outs[1:]:
        assert np.abs(out - outs[0]).max() < 1e-14


# --- the backward ---------------------------------------------------------------------------

def test_row_term_d_equals_rowsum_of_weights_times_their_gradient():
    # rowsum_j A_ij dA_ij = sum_j A_ij sum_c G_ic V_jc = sum_c G_ic O_ic: D needs no (Tq, Tk).
    rng = np.random.default_rng(7)
    q, k, v = qkv(rng, (2,), 6, 8, 3, 4)
    out, a = mha.attention(q, k, v, mask=lower_right_causal(6, 8))
    g = rng.standard_normal(out.shape)
    d_a = mha.attention_backward(q, k, v, g, mask=lower_right_causal(6, 8)).d_weights
    np.testing.assert_allclose(np.sum(g * out, -1), np.sum(a * d_a, -1), rtol=0, atol=1e-14)


def test_backward_matches_torch_autograd_with_causal_mask_and_padding():
    rng = np.random.default_rng(8)
    q, k, v = qkv(rng, (2, 2), 7, 10, 3, 4)
    pad = mha.padding_mask(np.array([10, 8]), 10)
    out, lse = tiled_attention(q, k, v, mask=pad, is_causal=True, block_q=3, block_k=4)
    g = rng.standard_normal(out.shape)
    grads = tiled_attention_backward(q, k, v, out, lse, g, mask=pad, is_causal=True,
                                     block_q=3, block_k=4)
    qt, kt, vt = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    blocked = torch.tensor(lower_right_causal(7, 10) | pad)
    s = (qt @ kt.transpose(-1, -2) / np.sqrt(3)).masked_fill(blocked, -torch.inf)
    ((torch.softmax(s, -1) @ vt) * torch.tensor(g)).sum().backward()
    for mine, ref in zip(grads, (qt.grad, kt.grad, vt.grad), strict=True):
        np.testing.assert_allclose(mine, ref.numpy(), rtol=0, atol=1e-10)


def test_backward_sums_the_gradient_of_a_broadcast_key_over_heads():
    rng = np.random.default_rng(9)
    q = rng.standard_normal((2, 3, 5, 4))
    k, v = rng.standard_normal((2, 1, 5, 4)), rng.standard_normal((2, 1, 5, 2))
    out, lse = tiled_attention(q, k, v, block_q=2, block_k=2)
    g = rng.standard_normal(out.shape)
    grads = tiled_attention_backward(q, k, v, out, lse, g, block_q=2, block_k=2)
    expected = mha.attention_backward(q, k, v, g)
    assert grads.dk.shape == k.shape and grads.dv.shape == v.shape
    for mine, ref in zip(grads, expected[:3], strict=True):
        np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-12)


# --- refusals, in the package's words ---------------------------------------------------------

def small(rng=None):
    return qkv(rng or np.random.default_rng(10), (), 3, 4, 2, 2)


def test_refuses_a_boolean_query_like_the_plain_path():
    q, k, v = small()
    with pytest.raises(DTypeError, match="q is a boolean array"):
        tiled_attention(q > 0, k, v)


def test_refuses_mismatched_head_width():
    q, k, v = small()
    with pytest.raises(ValueError, match="share the feature width d_k"):
        tiled_attention(q[:, :1], k, v)


def test_refuses_an_integer_mask_and_names_the_conversion():
    q, k, v = small()
    with pytest.raises(DTypeError, match="True = blocked.*mask == 1"):
        tiled_attention(q, k, v, mask=np.zeros((3, 4), dtype=int))


def test_refuses_a_fully_masked_row_of_the_explicit_mask():
    q, k, v = small()
    mask = np.zeros((3, 4), bool)
    mask[1] = True
    with pytest.raises(ValueError, match="fully masked row.*query 1"):
        tiled_attention(q, k, v, mask=mask)


def test_refuses_causal_with_more_queries_than_keys():
    rng = np.random.default_rng(11)
    q, k, v = qkv(rng, (), 5, 3, 2, 2)
    with pytest.raises(ValueError, match="is_causal=True with Tq=5 queries and Tk=3 keys"):
        tiled_attention(q, k, v, is_causal=True)


def test_refuses_a_row_that_mask_and_causal_leave_without_a_key():
    q, k, v = qkv(np.random.default_rng(12), (), 4, 4, 2, 2)
    mask = np.zeros((4, 4), bool)
    mask[2, :3] = True  # key 3 is in query 2's future: with is_causal nothing is left
    with pytest.raises(ValueError, match="combined with is_causal blocks every key for query 2"):
        tiled_attention(q, k, v, mask=mask, is_causal=True, block_q=2, block_k=2)


@pytest.mark.parametrize("block", [0, -1, 1.5, True])
def test_refuses_a_tile_side_that_is_not_a_positive_integer(block):
    q, k, v = small()
    with pytest.raises(ValueError, match="block_q must be an integer >= 1"):
        tiled_attention(q, k, v, block_q=block)


def test_refuses_a_negative_scale():
    q, k, v = small()
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        tiled_attention(q, k, v, scale=-1.0)


def test_refuses_scores_that_overflow_float32():
    q, k, v = small()
    with pytest.raises(ValueError, match="overflow float32"):
        tiled_attention(*((x * 1e20).astype(np.float32) for x in (q, k, v)))


@pytest.mark.parametrize("flag", ["no", 1, None])
def test_refuses_an_is_causal_that_is_not_a_bool_like_the_plain_path(flag):
    q, k, v = small()
    with pytest.raises(DTypeError, match=f"is_causal must be True or False; got {flag!r}"):
        tiled_attention(q, k, v, is_causal=flag)
    with pytest.raises(DTypeError, match="is_causal must be True or False"):
        tiled_attention_backward(q, k, v, np.zeros((3, 2)), np.zeros(3), np.zeros((3, 2)),
                                 is_causal=flag)
    with pytest.raises(DTypeError, match="is_causal must be True or False"):
        tile_plan(3, 4, is_causal=flag)


def test_tile_plan_refuses_a_zero_one_mask():
    allowed = np.array([[1, 0], [1, 1]])  # 1 = allowed: read as-is it would skip those tiles
    with pytest.raises(DTypeError, match="True = blocked.*mask == 0"):
        tile_plan(2, 2, 1, 1, mask=allowed)


def test_tile_plan_refuses_a_mask_of_another_shape():
    with pytest.raises(ValueError, match="does not broadcast"):
        tile_plan(2, 3, 1, 1, mask=np.zeros((2, 2), bool))


def test_tile_plan_takes_a_mask_with_leading_dims():
    mask = np.zeros((2, 1, 2, 2), bool)
    mask[:, :, :, 1] = True
    assert tile_plan(2, 2, 1, 1, mask=mask).tolist() == [[FULL, SKIPPED], [FULL, SKIPPED]]


def overflow_in_a_blocked_key():
    """Key 1 overflows every score with scale 10, and the mask blocks it for every query."""
    q, k = np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [1e308, 0.0]])
    return q, k, np.ones((2, 2)), np.array([[False, True]] * 2)


def test_refuses_an_overflow_in_a_skipped_tile_like_the_plain_path():
    q, k, v, mask = overflow_in_a_blocked_key()
    with pytest.raises(ValueError, match="overflow float64") as plain_err:
        mha.attention(q, k, v, mask=mask, scale=10.0)
    with pytest.raises(ValueError) as ours:
        tiled_attention(q, k, v, mask=mask, scale=10.0, block_k=1)  # key 1's tile is skipped
    assert str(ours.value) == str(plain_err.value)


def test_backward_refuses_an_overflow_in_a_skipped_tile():
    q, k, v, mask = overflow_in_a_blocked_key()
    with pytest.raises(ValueError, match=r"overflow float64 \(first at index \(0, 1\)\)"):
        tiled_attention_backward(q, k, v, np.ones((2, 2)), np.zeros(2), np.ones((2, 2)),
                                 mask=mask, scale=10.0, block_k=1)


def test_refuses_an_overflow_above_the_causal_diagonal_like_the_plain_path():
    q, k, v = (np.ones((4, 2), np.float32) for _ in range(3))
    k[3], q[3] = 3e38, 0.0  # key 3 overflows for queries 0..2 only, all in its future
    with pytest.raises(ValueError, match="overflow float32") as plain_err:
        mha.attention(q, k, v, is_causal=True, scale=1.0)
    with pytest.raises(ValueError) as ours:
        tiled_attention(q, k, v, is_causal=True, scale=1.0, block_q=1, block_k=1)
    assert str(ours.value) == str(plain_err.value)


def test_backward_refuses_a_log_sum_exp_of_the_wrong_shape():
    q, k, v = small()
    out, lse = tiled_attention(q, k, v)
    with pytest.raises(ValueError, match=r"lse has shape \(1, 3\).*one log-sum-exp per query"):
        tiled_attention_backward(q, k, v, out, lse[None], out)


def test_backward_refuses_an_upstream_of_the_wrong_shape():
    q, k, v = small()
    out, lse = tiled_attention(q, k, v)
    with pytest.raises(ValueError, match=r"d_out has shape \(3, 1\)"):
        tiled_attention_backward(q, k, v, out, lse, out[:, :1])


def test_backward_refuses_a_non_finite_log_sum_exp():
    q, k, v = small()
    out, lse = tiled_attention(q, k, v)
    with pytest.raises(ValueError, match="lse contains -inf"):
        tiled_attention_backward(q, k, v, out, np.full_like(lse, -np.inf), out)


# --- memory: linear in T ------------------------------------------------------------------------

def peaks(t, dtype=np.float32):
    rng = np.random.default_rng(13)
    q, k, v, g = (rng.standard_normal((1, 1, t, 64)).astype(dtype) for _ in range(4))
    out, lse = tiled_attention(q, k, v, is_causal=True)
    forward = peak_traced_bytes(tiled_attention, q, k, v, is_causal=True)
    backward = peak_traced_bytes(tiled_attention_backward, q, k, v, out, lse, g, is_causal=True)
    return forward, backward


def test_plain_path_peak_memory_holds_several_score_matrices():
    rng = np.random.default_rng(14)
    q, k, v = (rng.standard_normal((1, 1, 1024, 64)).astype(np.float32) for _ in range(3))
    one_score_matrix = 1024 * 1024 * 4
    assert peak_traced_bytes(mha.attention, q, k, v) >= 2 * one_score_matrix
    g = np.ones_like(q)
    assert peak_traced_bytes(mha.attention_backward, q, k, v, g) >= 2 * one_score_matrix


def test_tiled_peak_memory_grows_linearly_in_t():
    (f1, b1), (f2, b2) = peaks(2048), peaks(4096)
    assert f2 / f1 < 2.5 and b2 / b1 < 2.5  # doubling T: about 2x, where (T, T) gives 4x


def test_tiled_peak_memory_at_t_8192_is_under_5_percent_of_one_score_matrix():
    # The plain path holds at least one (T, T) matrix (the test above: several), so this
    # bounds the tiled path below 5% of the plain path's peak; benchmarks/tiled_memory.py
    # prints the measured ratio.
    forward, backward = peaks(8192)
    one_score_matrix = 8192 * 8192 * 4
    assert forward <= 0.05 * one_score_matrix and backward <= 0.05 * one_score_matrix


def test_peak_traced_bytes_counts_a_call_s_allocations_only():
    held = np.ones(1_000_000)  # allocated before the call: not counted
    assert peak_traced_bytes(np.zeros, 1000) < 0.1 * held.nbytes
    assert peak_traced_bytes(np.zeros, 1_000_000) >= 8_000_000


def blocked_at(shape, *rows):
    m = np.zeros(shape, bool)
    for row in rows:
        m[row] = True
    return m


@pytest.mark.parametrize(("is_causal", "mask"), [
    (False, blocked_at((4, 4), 1)),  # the mask alone blocks query 1
    (True, blocked_at((4, 4), 2)),  # the same with is_causal
    (True, blocked_at((4, 4), (0, 0))),  # only the combination leaves query 0 no key
    (True, blocked_at((2, 4, 4), (0, 3), (1, 0))),  # the first in index order is named
], ids=["mask", "mask+causal", "combination", "batched"])
def test_refuses_exactly_what_the_plain_path_refuses_with_the_same_words(is_causal, mask):
    q, k, v = qkv(np.random.default_rng(15), mask.shape[:-2], 4, 4, 2, 2)
    with pytest.raises(ValueError, match="fully masked row") as plain_err:
        mha.attention(q, k, v, mask=mask, is_causal=is_causal)
    with pytest.raises(ValueError) as ours:
        tiled_attention(q, k, v, mask=mask, is_causal=is_causal, block_q=2, block_k=2)
    assert str(ours.value) == str(plain_err.value)


def test_tile_loops_leave_numpy_blas_threads_as_they_were():
    from threadpoolctl import ThreadpoolController

    def threads():
        return [lib["num_threads"] for lib in ThreadpoolController().info()]

    before = threads()
    q, k, v = small()
    out, lse = tiled_attention(q, k, v)
    tiled_attention_backward(q, k, v, out, lse, out)
    assert threads() == before
