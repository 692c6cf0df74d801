"""Specification of mha.rope: rotary position embeddings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mha.rope import apply_rope, rope_angles


def _x(b=2, h=3, t=5, dh=8, seed=0, dtype=torch.float64):
    return torch.randn(b, h, t, dh, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_angle_of_pair_i_is_position_times_base_to_minus_2i_over_dh():
    cos, sin = rope_angles(torch.tensor([3]), 4, base=100.0, dtype=torch.float64)
    angles = torch.tensor([[3.0, 3.0 / 10.0]], dtype=torch.float64)  # 100 ** (-2/4) = 0.1
    torch.testing.assert_close(cos, angles.cos())
    torch.testing.assert_close(sin, angles.sin())


def test_position_zero_leaves_x_unchanged():
    x = _x(t=1)
    torch.testing.assert_close(apply_rope(x, torch.tensor([0])), x)


def test_rotation_keeps_the_norm_of_every_pair():
    x = _x()
    y = apply_rope(x, torch.arange(5) * 7)
    pairs = lambda t: t[..., :4] ** 2 + t[..., 4:] ** 2  # noqa: E731
    torch.testing.assert_close(pairs(y), pairs(x))


def test_a_score_depends_on_positions_only_through_their_difference():
    q, k = _x(1, 1, 1, 8, 1), _x(1, 1, 1, 8, 2)
    score = lambda m, n: float(  # noqa: E731
        (apply_rope(q, torch.tensor([m])) * apply_rope(k, torch.tensor([n]))).sum())
    assert score(5, 2) == pytest.approx(score(103, 100), abs=1e-9)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)


def test_batched_positions_rotate_each_sequence_by_its_own_row():
    x = _x()
    pos = torch.tensor([[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]])  # the second row left-padded
    y = apply_rope(x, pos)
    for b in range(2):
        torch.testing.assert_close(y[b:b + 1], apply_rope(x[b:b + 1], pos[b]))


def test_bfloat16_input_keeps_its_dtype():
    x = _x(dtype=torch.float32)
    y = apply_rope(x.bfloat16(), torch.arange(5))
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), apply_rope(x, torch.arange(5)), atol=0.05, rtol=0.02)


def test_refuses_float_positions():
    with pytest.raises(TypeError, match="integer tensor"):
        apply_rope(_x(), torch.arange(5.0))


def test_refuses_an_odd_head_width():
    with pytest.raises(ValueError, match="even"):
        apply_rope(_x(dh=7), torch.arange(5))


def test_refuses_positions_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"positions must be \(T,\)"):
        apply_rope(_x(), torch.arange(4))


def test_refuses_x_that_is_not_4d():
    with pytest.raises(ValueError, match=r"\(B, H, T, dh\)"):
        apply_rope(_x()[0], torch.arange(5))


def test_refuses_a_base_not_above_one():
    with pytest.raises(ValueError, match="base"):
        rope_angles(torch.arange(3), 4, base=1.0)


def test_large_positions_stay_accurate_in_float32():
    cos, _ = rope_angles(torch.tensor([100_000]), 2)
    assert float(cos[0, 0]) == pytest.approx(math.cos(100_000), abs=1e-6)


def test_a_numpy_integer_head_width_is_an_int():
    cos, sin = rope_angles(torch.arange(3), np.int64(4))
    want_cos, want_sin = rope_angles(torch.arange(3), 4)
    assert torch.equal(cos, want_cos) and torch.equal(sin, want_sin)


@pytest.mark.parametrize("position", [2**53 + 1, -(2**53) - 1, 2**62])
def test_refuses_a_position_float64_cannot_hold_exactly(position):
    with pytest.raises(ValueError, match=r"within \+-2\*\*53"):
        rope_angles(torch.tensor([0, position]), 2)


def test_accepts_positions_up_to_2_to_the_53():
    cos, sin = rope_angles(torch.tensor([2**53, -(2**53)]), 2, dtype=torch.float64)
    assert cos[0, 0].item() == math.cos(2.0**53) and sin[1, 0].item() == math.sin(-(2.0**53))
