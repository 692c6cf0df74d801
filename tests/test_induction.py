"""Specification of mha.induction (the lesson-06 model, its data and head scores),
mha.induction_train, and the shipped weights."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from mha import induction
from mha.induction import (
    AttentionOnly,
    apply_rotary,
    encode,
    half_losses,
    head_scores,
    letters,
    load_trained,
    position_losses,
    repeated_blocks,
    without_head,
)
from mha.induction_train import EVAL_BLOCK, evaluate, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained():
    return {name: load_trained(name) for name in induction.TRAINED}


# -- data ---------------------------------------------------------------------------------
def test_repeated_blocks_write_the_block_twice():
    tokens = repeated_blocks(5, 7, seed=3)
    assert tokens.shape == (5, 14) and tokens.dtype == torch.int64
    assert torch.equal(tokens[:, :7], tokens[:, 7:])


def test_repeated_blocks_use_distinct_tokens_within_a_block():
    tokens = repeated_blocks(50, 12, seed=0)
    assert all(len(set(row[:12].tolist())) == 12 for row in tokens)


def test_repeated_blocks_repeat_for_a_seed_and_differ_between_seeds():
    assert torch.equal(repeated_blocks(3, 5, seed=1), repeated_blocks(3, 5, seed=1))
    assert not torch.equal(repeated_blocks(3, 5, seed=1), repeated_blocks(3, 5, seed=2))


def test_repeated_blocks_refuse_a_block_longer_than_the_vocabulary():
    with pytest.raises(ValueError, match="block must be in"):
        repeated_blocks(1, 27)


def test_letters_and_encode_are_inverse():
    assert "".join(letters(encode("MULTIHEAD")[0])) == "MULTIHEAD"


def test_encode_refuses_lowercase():
    with pytest.raises(ValueError, match="capital letters"):
        encode("abc")


# -- rotary positions ---------------------------------------------------------------------
def test_rotary_positions_are_the_rope_module_s_own():
    from mha import rope
    assert apply_rotary is rope.apply_rope  # its behaviour is specified in tests/test_rope.py


# -- the model ----------------------------------------------------------------------------
def test_forward_gives_logits_per_position():
    model = AttentionOnly(n_heads=2)
    assert model(repeated_blocks(3, 5)).shape == (3, 10, 26)


def test_attention_maps_are_causal_rows_summing_to_one():
    model = AttentionOnly(n_heads=4)
    maps = model.attention_maps(repeated_blocks(2, 6))
    assert len(maps) == 2 and maps[0].shape == (2, 4, 12, 12)
    for w in maps:
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 12))
        assert torch.all(w.triu(diagonal=1) == 0)


def test_a_later_token_does_not_change_earlier_logits():
    model = AttentionOnly(n_heads=2, positions="learned")
    tokens = repeated_blocks(1, 6)
    changed = tokens.clone()
    changed[0, 8] = (changed[0, 8] + 1) % 26
    torch.testing.assert_close(model(tokens)[:, :8], model(changed)[:, :8])


def test_rotary_model_gives_the_same_logits_at_shifted_positions():
    model = AttentionOnly(n_heads=2)
    tokens = repeated_blocks(2, 5)
    shifted = model(tokens, positions=torch.arange(7, 17))
    torch.testing.assert_close(shifted, model(tokens), atol=1e-5, rtol=1e-5)


def test_forward_refuses_float_tokens():
    with pytest.raises(TypeError, match="int64"):
        AttentionOnly()(torch.zeros(1, 4))


def test_forward_refuses_tokens_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"\[0, 26\)"):
        AttentionOnly()(torch.tensor([[0, 26]]))


def test_learned_positions_refuse_positions_past_max_len():
    with pytest.raises(ValueError, match="max_len"):
        AttentionOnly(positions="learned", max_len=8)(torch.zeros(1, 9, dtype=torch.int64))


def test_without_head_removes_only_that_heads_output():
    model = AttentionOnly(n_heads=4)
    ablated = without_head(model, 0, 2)
    w = ablated.layers[0].out_proj.weight
    assert torch.all(w[:, 16:24] == 0)
    assert torch.equal(w[:, :16], model.layers[0].out_proj.weight[:, :16])
    assert torch.count_nonzero(model.layers[0].out_proj.weight[:, 16:24]) > 0  # original intact


def test_without_head_refuses_a_head_out_of_range():
    with pytest.raises(ValueError, match="no head"):
        without_head(AttentionOnly(n_heads=1), 0, 1)


# -- scores and losses --------------------------------------------------------------------
def _map_with(t, key_of_query):
    w = torch.zeros(1, 1, t, t, dtype=torch.float64)
    for i in range(t):
        w[0, 0, i, key_of_query(i)] = 1.0
    return w


def test_a_pure_previous_token_map_scores_one_previous_and_zero_induction():
    scores = head_scores(_map_with(10, lambda i: max(i - 1, 0)), block=5)
    assert scores["previous"][0] == 1.0 and scores["induction"][0] == 0.0


def test_a_pure_induction_map_scores_one_induction():
    scores = head_scores(_map_with(10, lambda i: i - 4 if i >= 5 else i), block=5)
    assert scores["induction"][0] == 1.0


def test_head_scores_refuse_maps_of_the_wrong_length():
    with pytest.raises(ValueError, match="T = 2 \\* block"):
        head_scores(torch.zeros(1, 1, 9, 9), block=5)


def test_a_model_that_predicts_nothing_has_loss_log_vocab_on_both_halves():
    model = AttentionOnly()
    with torch.no_grad():
        model.unembed.weight.zero_()  # uniform logits
    losses = half_losses(model, repeated_blocks(4, 6))
    assert losses["first"] == pytest.approx(math.log(26)) == losses["repeated"]
    np.testing.assert_allclose(position_losses(model, repeated_blocks(4, 6)), math.log(26),
                               rtol=1e-6)


# -- training -----------------------------------------------------------------------------
def test_training_is_deterministic_for_a_seed():
    a, _ = train(n_heads=1, steps=5, seed=3)
    b, _ = train(n_heads=1, steps=5, seed=3)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name


def test_training_lowers_the_loss():
    _, history = train(n_heads=1, steps=40, seed=0)
    assert np.mean(history["loss"][-5:]) < np.mean(history["loss"][:5])


# -- the shipped weights ------------------------------------------------------------------
def test_pyproject_ships_the_weights_as_package_data():
    text = (ROOT / "pyproject.toml").read_text()  # tomllib needs Python 3.11; the floor is 3.10
    section = re.search(r"^\[tool\.setuptools\.package-data\]\n(.*?)(?:^\[|\Z)", text, re.M | re.S)
    assert section and re.search(r'^mha = \[.*"data/\*\.pt"', section.group(1), re.M)


@pytest.mark.parametrize("name", induction.TRAINED)
def test_shipped_weights_are_under_one_megabyte(name):
    assert (ROOT / "src" / "mha" / "data" / f"{name}.pt").stat().st_size < 1_000_000


def test_load_trained_gives_a_float32_model_in_eval_mode(trained):
    model = trained["induction_2l_4h"]
    assert not model.training and model.embed.weight.dtype == torch.float32
    assert model.n_heads == 4 and trained["induction_2l_1h"].n_heads == 1


def test_load_trained_refuses_an_unknown_name():
    with pytest.raises(ValueError, match="no trained model"):
        load_trained("gpt2")


@pytest.mark.parametrize("name", induction.TRAINED)
def test_shipped_weights_reproduce_their_recorded_metrics(trained, name):
    model = trained[name]
    now, recorded = evaluate(model), model.record["metrics"]
    for key in ("first", "repeated"):
        assert now[key] == pytest.approx(recorded[key], abs=1e-4)
    np.testing.assert_allclose(np.array(now["induction"]), np.array(recorded["induction"]),
                               atol=1e-4)
    np.testing.assert_allclose(np.array(now["previous"]), np.array(recorded["previous"]),
                               atol=1e-4)


@pytest.mark.parametrize("name", induction.TRAINED)
def test_trained_models_predict_the_repeated_half_and_not_the_first(trained, name):
    metrics = evaluate(trained[name])
    assert metrics["repeated"] < 0.1
    assert abs(metrics["first"] - math.log(26)) < 0.3


@pytest.mark.parametrize("name", induction.TRAINED)
def test_trained_models_have_a_previous_token_head_then_an_induction_head(trained, name):
    metrics = evaluate(trained[name])
    assert max(metrics["previous"][0]) > 0.75 and max(metrics["induction"][0]) < 0.1
    assert max(metrics["induction"][1]) > 0.9


def test_removing_the_previous_token_head_breaks_induction(trained):
    model = trained["induction_2l_1h"]
    tokens = repeated_blocks(64, EVAL_BLOCK, seed=7)
    assert half_losses(without_head(model, 0, 0), tokens)["repeated"] > 1.0
    assert half_losses(model, tokens)["repeated"] < 0.1


@pytest.mark.slow
def test_retraining_reproduces_the_shipped_one_head_model(trained):
    recipe = trained["induction_2l_1h"].record["recipe"]
    model, _ = train(n_heads=1, seed=0, **{k: recipe[k] for k in
                                           ("steps", "lr", "batch", "d_model", "positions")})
    now, shipped = evaluate(model), trained["induction_2l_1h"].record["metrics"]
    assert now["repeated"] == pytest.approx(shipped["repeated"], abs=0.01)
