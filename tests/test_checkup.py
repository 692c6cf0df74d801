"""mha.checkup: any module's call is found, checks it cannot run say so, failures name a mistake."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from mha import broken  # noqa: E402
from mha._wrap import WIDTH  # noqa: E402
from mha.checkup import CHECKS, MISTAKES, Adapter, checkup, checkup_table  # noqa: E402
from mha.checkup.__main__ import main  # noqa: E402
from mha.layers import MultiHeadAttention  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("packed", [False, True])
def test_package_module_passes_every_check_in_every_dtype(dtype, packed):
    report = checkup(MultiHeadAttention(8, 2, packed_qkv=packed, dtype=dtype))
    assert all(r.passed for r in report.results), str(report)


def test_package_module_sdpa_passes_and_the_weight_checks_say_not_run():
    report = checkup(MultiHeadAttention(8, 2, impl="sdpa"))
    assert report.passed, str(report)
    assert report.not_run == ["rows sum to 1", "weights path"]
    assert report["weights path"].detail.startswith("not run: ")


@pytest.mark.parametrize("batch_first", [True, False])
def test_nn_multihead_attention_passes_every_check(batch_first):
    report = checkup(nn.MultiheadAttention(8, 2, batch_first=batch_first))
    assert all(r.passed for r in report.results), str(report)


def test_nn_multihead_attention_without_bias_passes_every_check():
    assert all(r.passed for r in checkup(nn.MultiheadAttention(8, 2, bias=False)).results)


def test_every_check_is_reported_once_in_order():
    assert [r.name for r in checkup(MultiHeadAttention(8, 2)).results] == list(CHECKS)


def test_a_failed_check_names_the_mistake_it_measured():
    report = checkup(broken.BrokenScaleDModel(8, 2))
    assert report.failed == ["scale"] and report.mistakes == ["scale sqrt(d_model)"]
    assert "q.k / 2.828" in report["scale"].detail  # sqrt(8), not sqrt(dh) = 2
    likely = f"likely: scale sqrt(d_model): {MISTAKES['scale sqrt(d_model)']}"
    assert " ".join(likely.split()) in " ".join(str(report).split())  # wrapped at WIDTH columns


def test_the_printed_report_breaks_between_words_at_width_columns():
    report = checkup(broken.BrokenScaleDModel(8, 2))
    likely = f"      likely: {report['scale'].likely}"
    assert len(likely) > WIDTH
    assert max(len(line) for line in str(report).splitlines()) <= WIDTH
    assert " ".join(likely.split()) in " ".join(str(report).split())


def test_a_failed_checks_line_prints_as_in_the_report():
    """Lesson 10 prints one check's result: the same lines as the report's, wrapped."""
    report = checkup(broken.BrokenScaleDModel(8, 2))
    shown = str(report["scale"])
    assert shown.startswith("FAIL  scale: ") and "\n      likely: " in shown
    assert shown in str(report)
    assert max(len(line) for line in shown.splitlines()) <= WIDTH


def test_a_missing_scale_is_named():
    class NoScale(broken.StepwiseAttention):
        def scores(self, q, k):
            return q @ k.transpose(-2, -1)

    report = checkup(NoScale(8, 2))
    assert report.failed == ["scale"] and report.mistakes == ["no scale"]


def test_every_failed_check_names_a_known_mistake():
    for cls in broken.BROKEN:
        report = checkup(cls(8, 2))
        for name in report.failed:
            assert report[name].mistakes and set(report[name].mistakes) <= set(MISTAKES)


def test_a_check_whose_call_raises_is_not_run_and_shows_the_error():
    report = checkup(broken.BrokenPaddingBroadcast(8, 2), batch=3, length=5)
    assert report["padding invariance"].passed is None
    assert report["padding invariance"].detail.startswith(
        "not run: calling the module for this check raised RuntimeError")


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
    assert "dropout at inference" in report.mistakes


def test_large_init_fails_score_spread_and_default_init_passes():
    assert checkup(broken.BrokenLargeInit(16, 4))["score spread"].passed is False
    assert checkup(MultiHeadAttention(16, 4))["score spread"].passed


# -- calls the check-up reads from the signature ---------------------------------------

class FixedCausal(nn.Module):
    """Called as (x): a causal buffer, no flags, no weights (a bare tensor back)."""

    def __init__(self, d, h):
        super().__init__()
        self.h, self.qkv, self.o = h, nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("tril", torch.tril(torch.ones(8, 8)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, -1))
        s = (q @ k.transpose(-2, -1) / math.sqrt(c // self.h))
        s = s.masked_fill(self.tril[:t, :t] == 0, float("-inf"))
        return self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))


def test_a_module_called_with_x_alone_is_read_as_always_causal():
    report = checkup(FixedCausal(8, 2))
    assert report.passed, str(report)
    assert report.not_run == ["padding invariance", "positions stay apart", "weights path"]
    assert any("always causal" in note for note in report.notes)


def test_a_not_run_check_says_what_to_pass():
    report = checkup(FixedCausal(8, 2))
    assert report["padding invariance"].detail.startswith("not run: the module takes no key "
                                                          "padding mask")
    assert "not run  padding invariance" in str(report)


class EncoderOnly(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.d_model, self.lin = d, nn.Linear(d, 3 * d)

    def forward(self, x):
        q, k, v = self.lin(x).chunk(3, -1)
        return (q @ k.transpose(-2, -1) / math.sqrt(self.d_model)).softmax(-1) @ v


def test_a_module_that_reads_every_position_is_not_failed_on_causality():
    report = checkup(EncoderOnly(8))
    assert report["causality"].passed is None and "pass causal=True" in \
        report["causality"].detail
    assert report.passed


def test_causal_true_asks_an_encoder_only_module_for_causality_and_it_fails():
    assert checkup(EncoderOnly(8), causal=True)["causality"].passed is False


def test_a_mask_arguments_meaning_is_read_from_behaviour_or_taken_as_told():
    class KeepMask(nn.Module):  # mask: True = may attend
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 24)

        def forward(self, x, mask=None):
            q, k, v = self.lin(x).chunk(3, -1)
            s = q @ k.transpose(-2, -1) / math.sqrt(8)
            if mask is not None:
                s = s.masked_fill(~mask.reshape(*mask.shape[-3:]) if mask.dim() == 4
                                  else ~mask, float("-inf"))
            return s.softmax(-1) @ v

    report = checkup(KeepMask())
    assert report.passed and any("True read as keep" in n for n in report.notes), str(report)
    told = checkup(KeepMask(), mask_means="blocked")
    assert "mask inverted" in told.mistakes


# -- refusals ---------------------------------------------------------------------------

@pytest.mark.parametrize(("kw", "name"), [({"batch": 1}, "batch"), ({"length": 2}, "length"),
                                          ({"batch": 2.0}, "batch"), ({"batch": 10**6}, "batch"),
                                          ({"length": 65}, "length")])
def test_checkup_refuses_sizes_too_small_or_too_large_for_its_checks(kw, name):
    with pytest.raises(ValueError, match=f"{name} must be an int from "):
        checkup(MultiHeadAttention(8, 2), **kw)


@pytest.mark.parametrize("atol", [-1, float("nan"), float("inf"), "x", True, 0, 1e9])
def test_checkup_refuses_a_bad_atol(atol):
    with pytest.raises(ValueError, match="atol must be a finite number with 0 < atol"):
        checkup(MultiHeadAttention(8, 2), atol=atol)


@pytest.mark.parametrize("seed", [1.5, -1, "0", None, False, 2**70])
def test_checkup_refuses_a_bad_seed(seed):
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        checkup(MultiHeadAttention(8, 2), seed=seed)


def test_checkup_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="checkup needs an nn.Module"):
        checkup(lambda x: x)


class NoParameters(nn.Module):
    def forward(self, x):
        return (x @ x.transpose(-2, -1) / math.sqrt(x.shape[-1])).softmax(-1) @ x


def test_a_module_without_parameters_asks_for_d_model_instead_of_raising_stopiteration():
    with pytest.raises(ValueError, match="pass d_model="):
        checkup(NoParameters())


def test_a_module_without_parameters_runs_and_gradients_say_not_run():
    report = checkup(NoParameters(), d_model=8)
    assert report["gradients"].passed is None and report.passed


def test_checkup_refuses_a_module_that_changes_the_shape():
    with pytest.raises(ValueError, match=r"returned out of shape \(5, 5, 4\)"):
        checkup(nn.Linear(8, 4))


def test_a_hand_built_adapter_is_used_as_given():
    module = MultiHeadAttention(8, 2)

    def run(x, causal, key_padding_mask, need_weights):
        return module(x, key_padding_mask=key_padding_mask, is_causal=False,
                      need_weights=need_weights)  # forgets the causal flag

    report = checkup(Adapter(module, 8, 2, run))
    assert report.failed == ["causality"] and report.mistakes == ["mask ignored"]


def test_checkup_table_has_a_row_per_module_and_a_mark_per_check():
    reports = {"good": checkup(MultiHeadAttention(8, 2)),
               "scale": checkup(broken.BrokenScaleDModel(8, 2))}
    lines = checkup_table(reports).splitlines()
    assert lines[-2].split() == ["good"] + ["."] * len(CHECKS)
    marks = lines[-1].split()[1:]
    assert marks[list(CHECKS).index("scale")] == "X" and marks.count("X") == 1


# -- python -m mha.checkup --------------------------------------------------------------

def _write(tmp_path, body):
    path = tmp_path / "mine.py"
    path.write_text("import math\nimport torch\nfrom torch import nn\n\n" + body)
    return path


GOOD = '''
class Mine(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.h, self.qkv, self.out = num_heads, nn.Linear(embed_dim, 3 * embed_dim), \\
            nn.Linear(embed_dim, embed_dim)

    def forward(self, x, is_causal=False):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, -1))
        s = q @ k.transpose(-2, -1) / math.sqrt(DIVISOR)
        if is_causal:
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return self.out((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))
'''


def test_cli_prints_the_report_and_exits_0_when_nothing_fails(tmp_path, capsys):
    path = _write(tmp_path, GOOD.replace("DIVISOR", "c // self.h"))
    assert main([f"{path}:Mine", "--d-model", "16", "--heads", "4"]) == 0
    out = capsys.readouterr().out
    assert "pass  scale: scores = q.k / 2 " in out and "0 failed" in out


def test_cli_exits_1_and_names_the_mistake_when_a_check_fails(tmp_path, capsys):
    path = _write(tmp_path, GOOD.replace("DIVISOR", "c"))
    assert main([f"{path}:Mine", "--d-model", "16", "--heads", "4"]) == 1
    assert "likely: scale sqrt(d_model)" in capsys.readouterr().out


def test_cli_exits_2_naming_a_missing_class(tmp_path, capsys):
    path = _write(tmp_path, GOOD.replace("DIVISOR", "c"))
    assert main([f"{path}:Other"]) == 2
    assert "has no 'Other'; its nn.Module classes: ['Mine']" in capsys.readouterr().err


def test_cli_says_how_to_pass_a_module_it_cannot_build(tmp_path, capsys):
    path = _write(tmp_path, GOOD.replace("DIVISOR", "c").replace(
        "(self, embed_dim, num_heads):", "(self, embed_dim, num_heads, block):"))
    assert main([f"{path}:Mine"]) == 2
    assert "def make(): return Mine(...), and pass file.py:make" in capsys.readouterr().err


NANOGPT_CONFIG = """
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
"""


def test_cli_says_how_to_pass_a_module_whose_constructor_takes_a_config(tmp_path, capsys):
    path = tmp_path / "cfgmod.py"
    path.write_text(NANOGPT_CONFIG)
    assert main([f"{path}:CausalSelfAttention"]) == 2
    err = capsys.readouterr().err
    assert "AttributeError" in err and "pass file.py:make" in err


@pytest.mark.parametrize("args", [["--heads", "0"], ["--d-model", "-4"], ["--heads", "3"]])
def test_cli_refuses_bad_sizes_before_building(tmp_path, capsys, args):
    path = _write(tmp_path, GOOD.replace("DIVISOR", "c"))
    assert main([f"{path}:Mine", *args]) == 2
    assert "checkup: --" in capsys.readouterr().err


def test_cli_runs_as_a_module_from_a_terminal(tmp_path):
    import os
    import subprocess
    import sys

    path = _write(tmp_path, GOOD.replace("DIVISOR", "1"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "mha.checkup", f"{path}:Mine", "--d-model",
                           "8", "--heads", "2"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 1 and "likely: no scale" in done.stdout, done.stderr


# -- lesson 10's pictures (mha.plot.checkup) ----------------------------------------

def _pictures():
    import matplotlib

    matplotlib.use("Agg")
    from mha.plot import checkup as pictures

    return pictures


def test_checkup_grid_draws_pass_fail_and_not_run_and_outlines_the_expected_cell():
    import matplotlib.pyplot as plt

    reports = {"sdpa": checkup(MultiHeadAttention(8, 2, impl="sdpa")),
               "scale": checkup(broken.BrokenScaleDModel(8, 2))}
    ax, image = _pictures().checkup_grid(reports, {"scale": "scale"})
    values = image.get_array()
    col, rows = list(CHECKS).index("scale"), list(CHECKS).index("rows sum to 1")
    assert values[1, col] == 0 and values[0, col] == 1 and values.mask[0, rows]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(CHECKS)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["sdpa", "scale"]
    (outline,) = ax.patches
    assert outline.get_xy() == (col - 0.5, 0.5)
    plt.close("all")


def test_loss_curves_draws_each_curve_and_the_floor():
    import matplotlib.pyplot as plt

    ax, lines = _pictures().loss_curves({"a": [3.0, 2.0, 1.0], "b": [3.0, 2.5]}, floor=2.08)
    assert [list(line.get_ydata()) for line in lines] == [[3.0, 2.0, 1.0], [3.0, 2.5]]
    floor = [line for line in ax.get_lines() if line not in lines]
    assert len(floor) == 1 and list(floor[0].get_ydata()) == [2.08, 2.08]
    assert "2.08" in [t.get_text() for t in ax.get_legend().get_texts()][-1]
    plt.close("all")


class _OneSquareMaskHeads(nn.Module):
    """Two single-head modules in an nn.ModuleList, forward(x, mask=None) with one (T, T)
    mask: a (B, 1, T, T) mask broadcasts against (B, T, T) scores and grows the output."""

    def __init__(self, c=8):
        super().__init__()
        self.qkv = nn.ModuleList([nn.Linear(c, 3 * (c // 2), bias=False) for _ in range(2)])
        self.proj = nn.Linear(c, c)

    def forward(self, x, mask=None):
        outs = []
        for lin in self.qkv:
            q, k, v = lin(x).chunk(3, dim=-1)
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            outs.append(s.softmax(-1) @ v)
        return self.proj(torch.cat(outs, dim=-1))


def test_a_mask_shape_that_changes_the_output_shape_is_not_taken_and_never_fails():
    torch.manual_seed(0)
    report = checkup(_OneSquareMaskHeads())
    assert not report.failed, str(report)
    assert "padding as (B, 1, T, T)" not in "\n".join(report.notes)


def test_a_check_whose_call_changes_the_output_shape_is_not_run():
    torch.manual_seed(0)
    module = _OneSquareMaskHeads()

    def run(x, causal, key_padding_mask, need_weights):
        mask = None if key_padding_mask is None else key_padding_mask[:, None, None, :]
        return module(x, mask), None  # (B, 1, 1, T) against (B, T, T): the output grows

    report = checkup(Adapter(module, 8, 2, run))
    assert report["padding invariance"].passed is None, str(report)
    assert "the output has shape (5, 5, 5, 8)" in report["padding invariance"].detail


def test_a_nan_already_in_eval_is_not_blamed_on_dropout():
    torch.manual_seed(0)
    report = checkup(broken.BrokenInvertedMask(16, 4))
    assert "dropout on masked scores" not in report.mistakes, str(report)
    assert report["finite in training"].passed is None


def test_a_nan_only_in_training_is_blamed_on_dropout():
    torch.manual_seed(0)
    report = checkup(broken.BrokenDropoutOnScores(16, 4))
    assert report["finite in training"].mistakes == ("dropout on masked scores",), str(report)


def test_a_check_whose_call_raised_is_not_run_and_says_so():
    class Raises(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x, is_causal=False):
            if is_causal:
                raise RuntimeError("boom")
            return self.lin(x)

    result = checkup(Raises())["causality"]
    assert result.passed is None and "boom" in result.detail and not result.likely


# -- meeting modules the check-up was not built around (issue 18, second probe) ----------

class _Tiny(nn.Module):
    """A correct causal single-head module; subclasses break one thing each."""

    def __init__(self, d=8):
        super().__init__()
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x, is_causal=False):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        s = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
        if is_causal:
            t = x.shape[1]
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return self.out(s.softmax(-1) @ v)


@pytest.mark.parametrize("kw", [{"add_bias_kv": True}, {"add_zero_attn": True},
                                {"kdim": 8, "vdim": 8}], ids=str)
def test_a_call_of_the_checkups_own_that_raises_is_not_run_never_fail(kw):
    torch.manual_seed(0)
    report = checkup(nn.MultiheadAttention(8, 2, batch_first=True, **kw))
    assert not report.failed, str(report)


def test_dropout_left_on_fails_eval_determinism_only():
    class AlwaysDropout(_Tiny):
        def forward(self, x, is_causal=False):
            return F.dropout(super().forward(x, is_causal), 0.1, training=True)

    torch.manual_seed(0)
    report = checkup(AlwaysDropout())
    assert report.failed == ["eval determinism"], str(report)
    assert report["causality"].detail.startswith("not run: two calls in eval() differ")


def test_a_nan_output_is_named_as_such_not_as_a_view_split():
    class NaNOut(_Tiny):
        def forward(self, x, is_causal=False):
            return super().forward(x, is_causal) * float("nan")

    report = checkup(NaNOut())
    assert report.mistakes == ["non-finite output"], str(report)


def test_a_module_that_changes_its_input_in_place_is_named_and_nothing_else():
    class Mutates(_Tiny):
        def forward(self, x, is_causal=False):
            x.mul_(2.0)
            return super().forward(x, is_causal)

    torch.manual_seed(0)
    report = checkup(Mutates())
    assert report.mistakes == ["input changed in place"], str(report)


@pytest.mark.parametrize("error", [RuntimeError, ValueError])
def test_a_module_that_raises_is_reported_with_every_check_not_run(error):
    class Raises(_Tiny):
        def forward(self, x, is_causal=False):
            raise error("boom")

    report = checkup(Raises())
    assert not report.failed and len(report.not_run) == len(CHECKS)
    assert f"raised {error.__name__}: boom" in report["causality"].detail


def test_a_tuple_of_three_says_which_element_was_taken():
    class Three(_Tiny):
        def forward(self, x, is_causal=False):
            return super().forward(x, is_causal), None, 3

    report = checkup(Three())
    assert any("tuple of 3: element 0 taken as the output" in n for n in report.notes)


@pytest.mark.parametrize(("kw", "match"), [
    ({"d_model": -16}, "d_model must be an int >= 1"), ({"n_heads": 0}, "n_heads must be"),
    ({"n_heads": 3}, "n_heads=3 does not divide d_model=16"),
    ({"batch_first": "no"}, "batch_first must be True, False or None")])
def test_checkup_refuses_bad_sizes_and_flags_by_name(kw, match):
    with pytest.raises(ValueError, match=match):
        checkup(MultiHeadAttention(16, 4), **kw)


def test_checkup_refuses_a_meta_module_and_mixed_dtypes_by_name():
    with pytest.raises(ValueError, match="on meta; the check-up runs on CPU"):
        checkup(_Tiny().to("meta"))
    mixed = _Tiny()
    mixed.qkv.double()
    with pytest.raises(ValueError, match="mixed dtypes"):
        checkup(mixed)


def test_a_module_that_mixes_no_positions_is_not_failed_on_causality():
    # nn.Linear is no attention: no position reads another and no softmax over scores runs.
    report = checkup(torch.nn.Linear(16, 16))
    assert report.passed and not any(r.passed is False for r in report.results), str(report)
    assert "no attention between positions" in str(report)
