# ruff: noqa: E501  (the submissions are students' code, long lines included)
"""Submissions graded by tests/test_grading_corpus.py through the real nbgrader flow.

Each one is (student, set, answers, expectations, flagged): ``answers`` replaces answer
cells by grade id (the others get the instructor's solution); ``expect`` maps a test cell to
"pass" or to words its failure message must contain (unlisted test cells must pass);
``flagged``: the export's needs_review column is filled (True) or empty (False). Styles:
loops, einsum, torch, float32, in-place work, each classic mistake, and hostile code that
patches NumPy / builtins / the checks / sys.modules, reads frames, forges records, prints
history, swallows interrupts, hangs or kills Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nbformat.v4 import new_code_cell


@dataclass
class Sub:
    student: str
    assignment: str
    answers: dict
    expect: dict = field(default_factory=dict)
    flagged: bool = False
    reasons: tuple = ()  # words the needs_review column must hold, one entry each
    edit: Callable | None = None  # changes the notebook beyond the answer cells
    corrupt: int = 0  # > 0: the notebook file is cut after that many characters (not JSON)


def add_cell(source: str, after: str = "setup", nbgrader: dict | None = None):
    """An edit: a code cell of the student's own after the cell ``after``."""
    def edit(nb):
        index = next(i for i, c in enumerate(nb.cells)
                     if c.metadata.get("nbgrader", {}).get("grade_id") == after)
        cell = new_code_cell(source)
        if nbgrader is not None:
            cell.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "locked": False,
                                         "solution": False, "task": False, **nbgrader}
        nb.cells.insert(index + 1, cell)
    return edit


def delete_cell(grade_id: str, rename_to: str | None = None):
    """An edit: the test cell ``grade_id`` deleted (or its id changed to ``rename_to``)."""
    def edit(nb):
        index = next(i for i, c in enumerate(nb.cells)
                     if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        if rename_to is None:
            del nb.cells[index]
        else:
            nb.cells[index].metadata["nbgrader"]["grade_id"] = rename_to
    return edit


def copy_cell(grade_id: str, original: str | None = None, above: str | None = None):
    """An edit: the cell ``grade_id`` copied as JupyterLab copies it (its nbgrader metadata,
    grade id included), pasted below it, or above the cell ``above``; ``original``: the
    source the first of the two keeps (the copy keeps the answer)."""
    def edit(nb):
        import copy

        index = next(i for i, c in enumerate(nb.cells)
                     if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        dup = copy.deepcopy(nb.cells[index])
        dup.pop("id", None)
        if original is not None:
            nb.cells[index].source = original
        if above is None:
            nb.cells.insert(index + 1, dup)
        else:
            nb.cells.insert(next(i for i, c in enumerate(nb.cells) if c.metadata.get(
                "nbgrader", {}).get("grade_id") == above), dup)
    return edit


DEEP = "-" * 5000 + "1"  # ast.parse: RecursionError (nested too deep)


E1, E2, E3, E4, E5 = ("ex01_weighted_sum", "ex02_scores_and_softmax", "ex03_scaling",
                      "ex04_masks", "ex05_softmax_backward")
E6, E7, E8, E9, E10 = ("ex06_multi_head", "ex07_matching_pytorch", "ex08_kv_cache",
                       "ex09_memory_speed_precision", "ex10_debugging")

CORPUS = [
    # -- ex01 ---------------------------------------------------------------------------------
    Sub("loops", E1, {"read_out": '''
def read_out(weights, values):
    w = np.asarray(weights, dtype=float)
    rows = w[None] if w.ndim == 1 else w
    out = []
    for row in rows:
        acc = [0.0] * len(values[0])
        for j, wj in enumerate(row):
            for c in range(len(acc)):
                acc[c] += wj * values[j][c]
        out.append(acc)
    out = np.array(out)
    return out[0] if w.ndim == 1 else out
''', "predict_read_out": "predicted_read_out = (0.75, 0.5)",
        "predict_weight": "weight_on_first = np.float64(0.5)",
        "predict_reachable": "can_read_out_2_2 = np.bool_(False)"}),
    # handed in untouched: each stub is named "not attempted" (NotAttempted, as the notebook says)
    Sub("untouched_stubs", E1, {"read_out": '''
def read_out(weights, values):
    """weights (..., Tk), values (Tk, dv) -> (..., dv)."""
    # YOUR CODE HERE
    raise NotImplementedError()
''', "predict_read_out": '''
predicted_read_out = None  # your prediction, e.g. [0.1, 0.2]
# YOUR CODE HERE
raise NotImplementedError()
'''}, expect={"test_read_out_one_query": "not attempted", "test_read_out_many_queries": "not attempted",
               "test_predict_read_out": "not attempted"}),
    Sub("einsum_f32", E1, {"read_out": '''
def read_out(weights, values):
    return np.einsum("...k,kd->...d", np.asarray(weights, np.float32), np.asarray(values, np.float32))
'''}),
    Sub("plain_average", E1, {"read_out": '''
def read_out(weights, values):
    return np.mean(values, axis=0)  # forgot the weights
'''}, {"test_read_out_one_query": "plain average", "test_read_out_many_queries": "plain average"}),
    Sub("not_summed", E1, {"read_out": '''
def read_out(weights, values):
    return np.asarray(weights)[..., :, None] * values
'''}, {"test_read_out_one_query": "did not add", "test_read_out_many_queries": "did not add"}),
    Sub("patches_abs", E1, {"read_out": '''
import builtins
np.abs = lambda x, *a, **k: np.zeros_like(np.asarray(x, dtype=float))
np.absolute = np.abs
builtins.abs = lambda x: 0.0
def read_out(weights, values):
    return np.zeros(np.shape(weights)[:-1] + np.shape(values)[-1:])
'''}, {"test_read_out_one_query": "wrong on case", "test_read_out_many_queries": "wrong on case",
       "test_predict_read_out": "pass"}, flagged=True),
    Sub("reads_frames", E1, {"read_out": '''
import inspect
def read_out(weights, values):
    frame = inspect.currentframe().f_back
    while frame is not None:
        print("---- the cell that called me ----")
        try:
            print(inspect.getsource(frame.f_code))
        except Exception:
            pass
        frame = frame.f_back
    return np.asarray(weights) @ values
'''}, flagged=True),
    Sub("prints_traceback", E1, {"read_out": '''
import traceback
def read_out(weights, values):
    try:
        raise RuntimeError("where am I")
    except RuntimeError:
        traceback.print_stack()
    return np.asarray(weights) @ values
'''}, flagged=True),
    # -- ex02 ---------------------------------------------------------------------------------
    Sub("float32_numpy", E2, {"softmax": '''
def softmax(logits):
    x = np.asarray(logits, dtype=np.float32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''', "project_and_score": '''
def project_and_score(x, w_q, w_k):
    q, k = np.einsum("tc,cd->td", x, w_q), np.einsum("tc,cd->td", x, w_k)
    return np.einsum("id,jd->ij", q, k) / np.sqrt(q.shape[-1])
'''}),
    Sub("torch_float32", E2, {"softmax": '''
import torch
def softmax(logits):
    t = torch.as_tensor(np.asarray(logits), dtype=torch.float32)
    e = (t - t.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)
''', "project_and_score": '''
import torch
def project_and_score(x, w_q, w_k):
    x, w_q, w_k = (torch.tensor(a, dtype=torch.float32) for a in (x, w_q, w_k))
    q, k = x @ w_q, x @ w_k
    return q @ k.T / q.shape[-1] ** 0.5
''', "predict_cross_shape": "cross_scores_shape = [3, 5]"}),
    Sub("in_place", E2, {"softmax": '''
def softmax(logits):
    x = np.asarray(logits, dtype=float)
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x
'''}),
    Sub("longdouble_no_shift", E2, {"softmax": '''
def softmax(logits):
    e = np.exp(np.asarray(logits, dtype=np.longdouble))
    return (e / e.sum(axis=-1, keepdims=True)).astype(float)
'''}, {"test_softmax_stable": "max shift"}),
    Sub("calls_mha_softmax", E2, {"softmax": '''
from mha import softmax as ready_made
def softmax(logits):
    return ready_made(np.asarray(logits, dtype=float))
'''}, {"test_softmax_values": "do not call", "test_softmax_stable": "do not call",
       "test_softmax_masked": "do not call"}, flagged=True),
    Sub("softmax_raises", E2, {"softmax": '''
def softmax(logits):
    raise ValueError("not finished")
'''}, {"test_softmax_values": "raised ValueError: not finished",
       "test_softmax_stable": "raised ValueError", "test_softmax_masked": "raised ValueError"}),
    Sub("wrong_axis_and_kqt", E2, {"softmax": '''
def softmax(logits):
    x = np.asarray(logits, dtype=float)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
''', "project_and_score": '''
def project_and_score(x, w_q, w_k):
    return (x @ w_k) @ (x @ w_q).T / np.sqrt(w_q.shape[1])
'''}, {"test_softmax_values": "wrong axis", "test_softmax_stable": "wrong axis",
       "test_softmax_masked": "wrong axis", "test_project_and_score": "transposed"}),
    Sub("hangs_on_large_logits", E2, {"softmax": '''
def softmax(logits):
    x = np.asarray(logits, dtype=float)
    while np.abs(x[np.isfinite(x)]).max() > 100:
        try:
            pass
        except KeyboardInterrupt:
            pass
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''}, {"test_softmax_stable": "stop"}, flagged=True),
    Sub("forges_records", E2, {"softmax": '''
from IPython.display import publish_display_data
def softmax(logits):
    publish_display_data({"application/vnd.mha.grading+json": {
        "task": "softmax", "behaviour": "stable", "case": 0, "label": "large equal logits [1000, 1000]",
        "out": None}})
    return np.asarray(logits) * 0
'''}, {"test_softmax_values": "could not read", "test_softmax_stable": "could not read",
       "test_softmax_masked": "could not read"}, flagged=True),
    # -- ex03 ---------------------------------------------------------------------------------
    Sub("kqt_heads", E3, {"head_scores": '''
def head_scores(q, k, d_model):
    return k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])
'''}, {"test_head_scores": "transposed"}),
    Sub("torch32_heads", E3, {"head_scores": '''
import torch
def head_scores(q, k, d_model):
    q, k = torch.as_tensor(q, dtype=torch.float32), torch.as_tensor(k, dtype=torch.float32)
    return torch.matmul(q, k.transpose(-1, -2)) / q.shape[-1] ** 0.5
''', "predict_dk64": "weights_dk64 = np.array([0.8808, 0.1192], dtype=np.float32)"}),
    Sub("fakes_grading_module", E3, {"head_scores": '''
import sys, types
fake = types.ModuleType("mha.checks.grading")
fake.record = lambda *args, **kwargs: None
fake.record_answer = lambda *args, **kwargs: None
sys.modules["mha.checks.grading"] = fake
sys.modules["mha.checks"].grading = fake
def head_scores(q, k, d_model):
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)
'''}, {"test_head_scores": "no record", "test_predict_dk64": "no record",
       "test_predict_shifted": "no record", "test_predict_divided": "no record"}, flagged=True),
    # -- ex04 ---------------------------------------------------------------------------------
    Sub("torch32_masks", E4, {"causal": '''
import torch
def causal(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
''', "masked_attention": '''
import torch
def masked_attention(q, k, v, mask):
    q, k, v = (torch.as_tensor(a, dtype=torch.float32) for a in (q, k, v))
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    w = torch.softmax(s.masked_fill(torch.as_tensor(mask), float("-inf")), dim=-1)
    return w @ v, w
''', "to_sdpa": '''
import torch
def to_sdpa(mask):
    return ~torch.as_tensor(mask)
'''}),
    Sub("two_d_only", E4, {"masked_attention": '''
def masked_attention(q, k, v, mask):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = np.where(mask, -np.inf, s)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return w @ v, w
'''}, {"test_masked_attention_broadcast": "raised"}),
    Sub("masks_wrong_axis", E4, {"masked_attention": '''
def masked_attention(q, k, v, mask):
    s = np.where(mask, -np.inf, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    w = np.exp(s - s.max(axis=-2, keepdims=True))
    w = w / w.sum(axis=-2, keepdims=True)
    return w @ v, w
'''}, {"test_masked_attention": "wrong axis", "test_masked_attention_broadcast": "wrong axis"}),
    Sub("masked_raises", E4, {"masked_attention": '''
def masked_attention(q, k, v, mask):
    raise RuntimeError("I will finish this tomorrow")
'''}, {"test_masked_attention": "raised RuntimeError",
       "test_masked_attention_broadcast": "raised RuntimeError"}),
    Sub("calls_forbidden_masks", E4, {"causal": '''
from mha import causal_mask as cm
def causal(t):
    return cm(t)
''', "masked_attention": '''
def masked_attention(q, k, v, mask):
    return mha.attention(q, k, v, mask=mask)
''', "to_sdpa": '''
def to_sdpa(mask):
    return mha.masks.to_sdpa(mask)
'''}, {"test_causal": "do not call mha.causal_mask", "test_masked_attention": "do not call mha.attention",
       "test_masked_attention_broadcast": "do not call mha.attention",
       "test_to_sdpa": "do not call mha.masks.to_sdpa"}, flagged=True),
    Sub("kqt_masked", E4, {"masked_attention": '''
def masked_attention(q, k, v, mask):
    s = np.where(mask, -np.inf, k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1]))
    return (mha.softmax(s, axis=-1) @ v), mha.softmax(s, axis=-1)
'''}, {"test_masked_attention": "transposed", "test_masked_attention_broadcast": "transposed"}),
    Sub("tampers_checks", E4, {"causal": '''
import importlib
for _name in dir(checks):
    if _name.startswith("check"):
        setattr(checks, _name, lambda *args, **kwargs: None)
np.allclose = lambda *args, **kwargs: True
importlib.reload = lambda module: module
def causal(t):
    return np.tril(np.ones((t, t), dtype=bool))
'''}, {"test_causal": "causal: mask inverted"}, flagged=True),  # the learner's name, not causal_mask
    # an allowed-looking mha function that does the attention: the rule covers it
    Sub("masked_via_tiled", E4, {"masked_attention": '''
def masked_attention(q, k, v, mask):
    out = mha.tiled.tiled_attention(q, k, v, mask).out
    return out, mha.softmax(np.where(mask, -np.inf, mha.scores(q, k)), axis=-1)
'''}, {"test_masked_attention": "your answer calls mha.tiled.tiled_attention",
       "test_masked_attention_broadcast": "your answer calls mha.tiled.tiled_attention"}),
    # the function mha.causal_mask calls, and PyTorch's fused attention: both rules of the set
    Sub("positions_and_sdpa", E4, {"causal": '''
def causal(t):
    return mha.masks.mask_from_positions(np.arange(t), np.arange(t))
''', "masked_attention": '''
import torch
import torch.nn.functional as F
def masked_attention(q, k, v, mask):
    w = mha.softmax(np.where(mask, -np.inf, mha.scores(q, k)), axis=-1)
    allowed = torch.as_tensor(~np.broadcast_to(mask, w.shape))
    out = F.scaled_dot_product_attention(*(torch.as_tensor(x) for x in (q, k, v)), attn_mask=allowed)
    return out.numpy(), w
'''}, {"test_causal": "do not call mha.masks.mask_from_positions",
       "test_masked_attention": "do not call torch.nn.functional.scaled_dot_product_attention",
       "test_masked_attention_broadcast": "do not call torch.nn.functional.scaled_dot_product_attention"},
        flagged=True),
    # -- ex05 ---------------------------------------------------------------------------------
    Sub("diagonal_only_loop", E5, {"softmax_grad": '''
def softmax_grad(p, g):
    shape = np.shape(g)
    p, g = np.atleast_2d(p), np.atleast_2d(g)
    out = np.zeros_like(p)
    for r in range(p.shape[0]):
        for i in range(p.shape[1]):
            out[r, i] = p[r, i] * (1 - p[r, i]) * g[r, i]
    return out.reshape(shape)
'''}, {"test_softmax_grad": "diagonal", "test_attention_grads_dq_dk": "diagonal"}),
    Sub("builds_jacobian", E5, {"softmax_grad": '''
def softmax_grad(p, g):
    jac = np.einsum("...i,ij->...ij", p, np.eye(p.shape[-1])) - p[..., :, None] * p[..., None, :]
    return np.einsum("...ij,...j->...i", jac, g)
'''}, {"test_softmax_grad": "Jacobian"}),
    Sub("torch_jacobian", E5, {"softmax_grad": '''
import torch
def softmax_grad(p, g):
    p, g = torch.as_tensor(p), torch.as_tensor(g)
    rows = [(torch.diag(pr) - torch.outer(pr, pr)) @ gr
            for pr, gr in zip(p.reshape(-1, p.shape[-1]), g.reshape(-1, p.shape[-1]))]
    return torch.stack(rows).reshape(p.shape)
'''}, {"test_softmax_grad": "without building the n x n Jacobian"}),
    Sub("torch32_grads", E5, {"softmax_grad": '''
import torch
def softmax_grad(p, g):
    p, g = torch.as_tensor(p, dtype=torch.float32), torch.as_tensor(g, dtype=torch.float32)
    return p * (g - (p * g).sum(-1, keepdim=True))
''', "attention_grads": '''
import torch
def attention_grads(q, k, v, d_out):
    q, k, v, d_out = (torch.as_tensor(a, dtype=torch.float32) for a in (q, k, v, d_out))
    scale = q.shape[-1] ** -0.5
    a = torch.softmax(q @ k.T * scale, dim=-1)
    d_v = a.T @ d_out
    d_a = d_out @ v.T
    d_s = a * (d_a - (a * d_a).sum(-1, keepdim=True))
    return d_s @ k * scale, d_s.T @ q * scale, d_v
'''}),
    Sub("autograd", E5, {"attention_grads": '''
import torch
def attention_grads(q, k, v, d_out):
    q, k, v = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    out = torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1) @ v
    out.backward(torch.as_tensor(d_out))
    return q.grad, k.grad, v.grad
'''}),
    Sub("calls_attention_backward", E5, {"attention_grads": '''
def attention_grads(q, k, v, d_out):
    g = mha.attention_backward(q, k, v, d_out)
    return g.dq, g.dk, g.dv
'''}, {"test_attention_grads_dv": "do not call", "test_attention_grads_dq_dk": "do not call"}, flagged=True),
    Sub("da_transposed", E5, {"attention_grads": '''
def attention_grads(q, k, v, d_out):
    scale = 1.0 / np.sqrt(q.shape[-1])
    a = mha.softmax(q @ k.T * scale)
    d_a = v @ d_out.T  # transposed
    d_s = softmax_grad(a, d_a)
    return d_s @ k * scale, d_s.T @ q * scale, a.T @ d_out
'''}, {"test_attention_grads_dv": "raised ValueError",
       "test_attention_grads_dq_dk": "dA is transposed"}),
    Sub("prints_history", E5, {"predict_constant": '''
grad_constant = [0.0, 0.0, 0.0]
print("\\n".join(In))
print(get_ipython().history_manager.input_hist_raw)
'''}, flagged=True),
    # -- ex06 ---------------------------------------------------------------------------------
    Sub("torch_view", E6, {"split": '''
import torch
def split(x, n_heads):
    b, t, c = x.shape
    return torch.as_tensor(x).view(b, t, n_heads, c // n_heads).transpose(1, 2)
''', "merge": '''
import torch
def merge(h):
    b, n, t, d = h.shape
    return torch.as_tensor(h).transpose(1, 2).reshape(b, t, n * d)
'''}),
    Sub("view_bug", E6, {"split": '''
def split(x, n_heads):
    b, t, c = x.shape
    return x.reshape(b, n_heads, t, c // n_heads)
''', "merge": '''
def merge(h):
    b, n, t, d = h.shape
    return h.reshape(b, t, n * d)
'''}, {"test_split": "split: heads split with `view`",  # the learner's names, as in the set
       "test_merge": "merge: heads merged with a reshape"}),
    Sub("swallows_interrupts", E6, {"merge": '''
while True:
    try:
        pass
    except KeyboardInterrupt:
        pass
'''}, {"test_merge": "not defined"}, flagged=True),
    Sub("calls_split_heads", E6, {"split": '''
def split(x, n_heads):
    return mha.split_heads(x, n_heads)
'''}, {"test_split": "do not call mha.split_heads"}, flagged=True),
    # -- ex07 ---------------------------------------------------------------------------------
    Sub("keeps_with_p", E7, {"dropout_attention": '''
import torch
from torch import nn


class DropoutAttention(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        w = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        if self.training:
            w = w * (torch.rand_like(w) < self.p) / (1 - self.p)
        return w @ v
'''}, {"test_dropout_train": "probability p instead of 1 - p"}),
    Sub("drops_the_output", E7, {"dropout_attention": '''
import torch
import torch.nn.functional as F
from torch import nn


class DropoutAttention(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        return F.dropout(F.scaled_dot_product_attention(q, k, v), self.p, self.training)
'''}, {"test_dropout_train": "applied to the output"}),
    Sub("manual_dropout", E7, {"dropout_attention": '''
import torch
from torch import nn


class DropoutAttention(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        w = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        if self.training and self.p > 0:
            keep = torch.bernoulli(torch.full_like(w, 1 - self.p))
            w = w * keep / (1 - self.p)
        return w @ v
''', "numpy_weight": '''
def numpy_weight(weight):
    return np.einsum("oi->io", weight)
'''}),
    Sub("never_drops", E7, {"dropout_attention": '''
import torch
import torch.nn.functional as F
from torch import nn


class DropoutAttention(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)
'''}, {"test_dropout_train": "never applied"}),
    # -- ex08 ---------------------------------------------------------------------------------
    Sub("upper_left", E8, {"cache_mask": '''
def cache_mask(n_cached, n_new):
    return np.triu(np.ones((n_new, n_cached + n_new), dtype=bool), k=1)
'''}, {"test_cache_mask": "upper-left"}),
    Sub("torch_cache", E8, {"cache_mask": '''
import torch
def cache_mask(n_cached, n_new):
    q = torch.arange(n_cached, n_cached + n_new)[:, None]
    return torch.arange(n_cached + n_new)[None, :] > q
'''}),
    Sub("calls_mask_from_positions", E8, {"cache_mask": '''
from mha.masks import mask_from_positions
def cache_mask(n_cached, n_new):
    return mask_from_positions(np.arange(n_cached, n_cached + n_new), np.arange(n_cached + n_new))
'''}, {"test_cache_mask": "do not call mha.masks.mask_from_positions"}, flagged=True),
    # -- ex09 ---------------------------------------------------------------------------------
    Sub("in_place_online", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    m, l, o = -np.inf, 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        blk = s[j:j + block]
        m_new = max(m, blk.max())
        c = np.exp(m - m_new)
        blk -= m_new          # in place, into the caller's array
        np.exp(blk, out=blk)
        l = l * c + blk.sum()
        o = o * c + blk @ v[j:j + block]
        m = m_new
    return o / l
'''}),
    Sub("longdouble_online", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    l, o = np.longdouble(0), np.zeros(v.shape[-1], dtype=np.longdouble)
    for j in range(0, len(s), block):
        e = np.exp(np.asarray(s[j:j + block], dtype=np.longdouble))
        l += e.sum()
        o += e @ v[j:j + block]
    return (o / l).astype(float)
'''}, {"test_online_softmax": "max shift"}),
    Sub("output_not_rescaled", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    m, l, o = -np.inf, 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        m_new = max(m, float(np.max(s[j:j + block])))
        e = np.exp(s[j:j + block] - m_new)
        l = l * np.exp(m - m_new) + e.sum()
        o = o + e @ v[j:j + block]
        m = m_new
    return o / l
'''}, {"test_online_softmax": "output is not rescaled"}),
    Sub("whole_row_softmax", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    return mha.softmax(s) @ v
'''}, {"test_online_softmax": "whole row"}),
    Sub("torch_whole_row", E9, {"online_softmax": '''
import torch
def online_softmax(s, v, block):
    return torch.as_tensor(s).softmax(0).numpy() @ v
'''}, {"test_online_softmax": "calls torch.softmax on every score of the row"}),
    Sub("whole_row_by_hand", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    e = np.exp(s - s.max())
    return (e / e.sum()) @ v
'''}, {"test_online_softmax": "do not compute the softmax on the whole row"}),
    Sub("torch_blocks", E9, {"online_softmax": '''
import torch
def online_softmax(s, v, block):
    s, v = torch.as_tensor(s, dtype=torch.float32), torch.as_tensor(v, dtype=torch.float32)
    m, l, o = torch.tensor(-float("inf")), torch.tensor(0.0), torch.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        m_new = torch.maximum(m, s[j:j + block].max())
        c = torch.exp(m - m_new)
        e = torch.exp(s[j:j + block] - m_new)
        l, o, m = l * c + e.sum(), o * c + e @ v[j:j + block], m_new
    return o / l
'''}),
    # exp bound in a cell before the answer cell ran
    Sub("exp_bound_before", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    e = exp(s - s.max())
    return (e / e.sum()) @ v
'''}, {"test_online_softmax": "takes numpy.exp of every score of the row at once"},
        edit=add_cell("from numpy import exp")),
    Sub("torch_in_a_thread", E9, {"online_softmax": '''
import threading
import torch
def online_softmax(s, v, block):
    box = []
    def work():
        box.append(torch.softmax(torch.as_tensor(s), 0).numpy() @ v)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return box[0]
'''}, {"test_online_softmax": "calls torch.softmax on every score of the row at once"},
        flagged=True, reasons=("imports threading",)),
    Sub("every_block_in_one_call", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    n = -(-len(s) // block)
    padded = np.concatenate([s, np.full(n * block - len(s), -np.inf)]).reshape(n, block)
    vals = np.concatenate([v, np.zeros((n * block - len(s), v.shape[1]))]).reshape(n, block, -1)
    m = padded.max(axis=1)
    e = np.exp(padded - m[:, None])
    c = np.exp(m - m.max())
    return (c @ np.einsum("nb,nbd->nd", e, vals)) / (c @ e.sum(axis=1))
'''}, {"test_online_softmax": "even reshaped to (n_blocks, block), is the whole row"}),
    Sub("online_via_tiled", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    q, k = np.ones((1, 1)), np.asarray(s, dtype=float)[:, None]
    return mha.tiled.tiled_attention(q, k, v, scale=1.0, block_k=block).out[0]
'''}, {"test_online_softmax": "your answer calls mha.tiled.tiled_attention"}),
    # a right answer whose cell checks it against mha.attention: that is no call of the answer
    Sub("self_test_with_attention", E9, {"online_softmax": '''
def online_softmax(s, v, block):
    m, l, o = -np.inf, 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        m_new = max(m, float(np.max(s[j:j + block])))
        e = np.exp(s[j:j + block] - m_new)
        c = np.exp(m - m_new)
        l, o, m = l * c + e.sum(), o * c + e @ v[j:j + block], m_new
    return o / l

_s, _v = np.array([0.5, 2.0, -1.0]), np.eye(3)
assert np.allclose(online_softmax(_s, _v, 2), mha.attention(np.ones((1, 1)), _s[:, None], _v, scale=1.0)[0][0])
'''}),
    # the row's maximum first, then math.exp score by score: the stated rule holds (the set
    # says the two-pass softmax passes)
    Sub("two_pass_math_exp", E9, {"online_softmax": '''
import math
def online_softmax(s, v, block):
    top = max(float(x) for x in s)
    total, out = 0.0, np.zeros(v.shape[-1])
    for j in range(0, len(s), block):
        for x, row in zip(s[j:j + block], v[j:j + block]):
            e = math.exp(float(x) - top)
            total, out = total + e, out + e * row
    return out / total
'''}),
    Sub("kills_python", E9, {"online_softmax": '''
import os
def online_softmax(s, v, block):
    os._exit(1)
'''}, {"test_online_softmax": "kernel died"}, flagged=True),
    # -- ex10 ---------------------------------------------------------------------------------
    Sub("only_last_token", E10, {"leaks_future": '''
def leaks_future(model, x):
    changed = x.copy()
    changed[:, -1] = changed[:, -1] + 1.0
    return not np.allclose(model(changed)[:, :-1], model(x)[:, :-1])
'''}, {"test_leaks_future": "only changes the last token"}),
    Sub("only_position_0", E10, {"leaks_future": '''
def leaks_future(model, x):
    changed = x.copy()
    changed[:, 1:] = np.random.default_rng(1).normal(size=changed[:, 1:].shape)
    return not np.allclose(model(changed)[:, 0], model(x)[:, 0])
'''}, {"test_leaks_future": "only compares the output at position 0"}),
    Sub("raises_interrupt", E10, {"leaks_future": '''
def leaks_future(model, x):
    raise KeyboardInterrupt
'''}, {"test_leaks_future": "stopped"}),
    Sub("reads_model_name", E10, {"leaks_future": '''
def leaks_future(model, x):
    return model.__name__ != "causal_model"
'''}, {"test_leaks_future": "wrong on case 'a causal running maximum'"}, flagged=True),
    # (it used to be told "your test flags a correct causal head", which it does not: it
    # passes that case by its name; a mistake is named now only when it explains every case)
    # -- malformed notebooks: never dropped ----------------------------------------------------
    Sub("nested_too_deep", E1, {}, flagged=True, reasons=("nested too deep",),
        edit=add_cell(f"deep = {DEEP}")),
    Sub("nested_in_answer", E3, {"predict_divided": f"weights_divided = [0.731, 0.269]\n_deep = {DEEP}"},
        {"test_predict_divided": "not defined"}, flagged=True, reasons=("nested too deep",)),
    Sub("unknown_grade_cell", E3, {}, flagged=True, reasons=("'bonus_points', which this set does not have",),
        edit=add_cell('print("five more points, please")', "head_scores",
                      {"grade": True, "grade_id": "bonus_points", "points": 5, "locked": True})),
    Sub("unknown_solution_cell", E1, {}, flagged=True, reasons=("'my_notes', which this set does not have",),
        edit=add_cell("notes = 'weights times values'", "read_out",
                      {"solution": True, "grade_id": "my_notes"})),
    Sub("deletes_test_cell", E3, {}, flagged=True,
        reasons=("test_predict_divided was missing", "added it back"),
        edit=delete_cell("test_predict_divided")),
    Sub("deletes_failing_test", E1, {"read_out": '''
def read_out(weights, values):
    return np.mean(values, axis=0)  # forgot the weights
'''}, {"test_read_out_one_query": "plain average", "test_read_out_many_queries": "plain average"},
        flagged=True, reasons=("test_read_out_one_query was missing",),
        edit=delete_cell("test_read_out_one_query")),
    Sub("renames_test_cell", E1, {}, flagged=True,
        reasons=("'test_mine', which this set does not have", "test_read_out_many_queries was missing"),
        edit=delete_cell("test_read_out_many_queries", rename_to="test_mine")),
    # -- bfloat16 answers -----------------------------------------------------------------------
    Sub("bf16_masks", E4, {"masked_attention": '''
import torch
def masked_attention(q, k, v, mask):
    q, k, v = (torch.as_tensor(a, dtype=torch.bfloat16) for a in (q, k, v))
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    w = torch.softmax(s.masked_fill(torch.as_tensor(mask), float("-inf")), dim=-1)
    return w @ v, w
'''}),
    Sub("bf16_kqt", E4, {"masked_attention": '''
import torch
def masked_attention(q, k, v, mask):
    q, k, v = (torch.as_tensor(a, dtype=torch.bfloat16) for a in (q, k, v))
    s = k @ q.transpose(-1, -2) / q.shape[-1] ** 0.5
    w = torch.softmax(s.masked_fill(torch.as_tensor(mask), float("-inf")), dim=-1)
    return w @ v, w
'''}, {"test_masked_attention": "transposed", "test_masked_attention_broadcast": "transposed"}),
    Sub("bf16_grads", E5, {"softmax_grad": '''
import torch
def softmax_grad(p, g):
    p, g = torch.as_tensor(p, dtype=torch.bfloat16), torch.as_tensor(g, dtype=torch.bfloat16)
    return p * (g - (p * g).sum(-1, keepdim=True))
''', "attention_grads": '''
import torch
def attention_grads(q, k, v, d_out):
    q, k, v, d_out = (torch.as_tensor(a, dtype=torch.float16) for a in (q, k, v, d_out))
    scale = q.shape[-1] ** -0.5
    a = torch.softmax(q @ k.T * scale, dim=-1)
    d_a = d_out @ v.T
    d_s = a * (d_a - (a * d_a).sum(-1, keepdim=True))
    return d_s @ k * scale, d_s.T @ q * scale, a.T @ d_out
'''}),
    Sub("bf16_diagonal_only", E5, {"softmax_grad": '''
import torch
def softmax_grad(p, g):
    p, g = torch.as_tensor(p, dtype=torch.bfloat16), torch.as_tensor(g, dtype=torch.bfloat16)
    return p * (1 - p) * g
'''}, {"test_softmax_grad": "diagonal",  # the set's attention_grads calls it on NumPy arrays:
        "test_attention_grads_dv": "raised TypeError", "test_attention_grads_dq_dk": "raised TypeError"}),
    # -- spellings of tampering the scan names (the grade is the one the answer earns) ----------
    Sub("numpy_alias", E1, {"read_out": '''
import numpy as xp
xp.set_printoptions = xp.set_printoptions
def read_out(weights, values):
    return xp.asarray(weights) @ values
'''}, flagged=True, reasons=("rewrites xp.set_printoptions",)),
    Sub("getattr_globals", E1, {"read_out": '''
def read_out(weights, values):
    return np.asarray(weights) @ values
_seen = getattr(read_out, "__globals__")
'''}, flagged=True, reasons=("getattr(..., '__globals__')",)),
    Sub("os_level_imports", E2, {}, flagged=True, reasons=(
        "imports posix", "imports sqlite3", "imports ctypes", "imports subprocess",
        "imports multiprocessing", "imports signal", "imports gc", "imports tracemalloc",
        "calls sys.setprofile", "calls sys.settrace", "calls tracemalloc.stop", "calls os.fork"),
        edit=add_cell('''
import posix, sqlite3, ctypes, subprocess, multiprocessing, signal, gc, tracemalloc, sys, os
sys.setprofile(None)
sys.settrace(None)
tracemalloc.stop()
if False:
    os.fork()
'''.strip())),
    Sub("magic_hides_import", E2, {}, flagged=True, reasons=("in %time: imports posix", "runs a shell command"),
        edit=add_cell("%time import posix\n!echo hello")),
    Sub("reads_predictions", E3, {"predict_dk64": '''
weights_dk64 = checks.PREDICTIONS["ex03.weights_dk64"].expected
'''}, flagged=True, reasons=("PREDICTIONS",)),
    # -- issue 20, second examiner's round -------------------------------------------------------
    # nbgrader's hidden-test marker in an answer cell: feedback used to fail for it
    Sub("marker_in_answer", E2, {"project_and_score": '''
def project_and_score(x, w_q, w_k):
    # BEGIN HIDDEN TESTS  <- a tutorial had this line, I kept it
    scores = (x @ w_q) @ (x @ w_k).T
    return scores / np.sqrt(w_q.shape[1])
'''}, flagged=True, reasons=("hidden-test marker",)),
    # kills nbgrader itself: recorded with 0 and a flag, the students after it still graded
    Sub("a_kills_the_grader", E1, {"read_out": '''
import os as _os, signal as _signal
_os.kill(_os.getppid(), _signal.SIGKILL)
def read_out(weights, values):
    return np.asarray(weights) @ values
'''}, {t: "killed" for t in ("test_read_out_one_query", "test_read_out_many_queries",
                               "test_predict_read_out", "test_predict_weight", "test_predict_reachable")},
        flagged=True, reasons=("the grading process was killed",)),
    # reads every set's sources and prints their hidden lines reversed: its outputs are withheld
    Sub("prints_sources_reversed", E3, {}, flagged=True, reasons=("uses open",),
        edit=add_cell('''
import glob as _g, json as _j
for _path in sorted(_g.glob("../../../source/*/*.ipynb")):
    for _c in _j.load(open(_path))["cells"]:
        print("".join(_c["source"])[::-1])
'''.strip())),
    # forbidden calls at definition time and in a thread: the rule decides the grade
    Sub("forbidden_in_table_and_thread", E4, {"causal": '''
_TABLE = {n: mha.causal_mask(n) for n in range(1, 300)}
def causal(t):
    return _TABLE[t].copy()
''', "masked_attention": '''
from concurrent.futures import ThreadPoolExecutor
_workers = ThreadPoolExecutor(max_workers=1)
def masked_attention(q, k, v, mask):
    return _workers.submit(mha.attention, q, k, v, mask).result()
'''}, {"test_causal": "do not call mha.causal_mask",
       "test_masked_attention": "do not call mha.attention",
       "test_masked_attention_broadcast": "do not call mha.attention"}, flagged=True),
    # a forbidden name in a comment or a docstring is no call; `_i` as a loop variable is no
    # history; a huge print is cut in the feedback
    Sub("mentions_and_prints", E4, {"causal": '''
def causal(t):
    """Like mha.causal_mask(t), written by hand (I do not call mha.causal_mask)."""
    # np.triu(..., k=1) is what mha.causal_mask does too
    blocked = np.zeros((t, t), dtype=bool)
    for _i in range(t):
        blocked[_i, _i + 1:] = True
    return blocked
'''}, edit=add_cell('print("x" * 3_000_000)', "causal")),
    # replaces grading's observer through vars(): stubs get the reference's outputs (forging
    # remains possible, docs/TEACHING.md); the flag says what it is
    Sub("forges_through_vars", E1, {"read_out": '''
_space = vars(vars(vars(mha)["checks"])["grading"])
_real = _space["observe"]
_space["observe"] = lambda task, answer, case, catch_interrupts=False: _real(
    task, task.reference, case, catch_interrupts=catch_interrupts)
def read_out(weights, values):
    return None
'''}, flagged=True, reasons=("reaches into the namespace of mha",)),
    # classic mistakes named: a leak test of the first sequence only; the softmax down the
    # columns with -1e9 for blocked scores (a padded key's column is not NaN then)
    Sub("leak_test_first_sequence", E10, {"leaks_future": '''
def leaks_future(model, x):
    reference = model(x)[0]
    for t in range(1, x.shape[1]):
        noisy = x.copy()
        noisy[:, t:] = noisy[:, t:] * 3.0 + 1.0
        if np.abs(model(noisy)[0, :t] - reference[:t]).max() > 1e-9:
            return True
    return False
'''}, {"test_leaks_future": "only compares the first sequence of the batch"}),
    # issue 20's last examiner: a copied cell (its grade id too) stopped `nbgrader autograde`
    # for the whole class; now the last copy keeps the id and the others are ordinary cells
    Sub("copied_answer_cell", E6, {}, flagged=True, reasons=("a copied cell",),
        edit=copy_cell("split", "def split(x, n_heads):\n    # YOUR CODE HERE\n"
                       "    raise NotImplementedError()")),
    Sub("copied_task_text", E2, {}, flagged=True, reasons=("a copied cell",),
        edit=copy_cell("task3")),
    Sub("copied_test_above_answer", E1, {}, flagged=True, reasons=("a copied cell",),
        edit=copy_cell("test_read_out_one_query", above="read_out")),
    # a truncated upload: named, 0 points for review, a feedback page that says why
    Sub("corrupt_json", E3, {}, {t: "not valid JSON" for t in (
        "test_head_scores", "test_predict_dk64", "test_predict_shifted", "test_predict_divided")},
        flagged=True, reasons=("is not valid JSON",), corrupt=3000),
    # reads the set's source with torch.from_file and prints it reversed: flagged, withheld
    Sub("torch_from_file", E1, {"read_out": '''
import torch
_t = torch.from_file('../../../source/ex01_weighted_sum/ex01_weighted_sum.ipynb', shared=False, size=11000, dtype=torch.uint8)
_s = bytes(_t.tolist()).decode('utf-8', 'replace')
_i = _s.find('HIDDEN TESTS')
print(_s[_i - 100:_i + 400][::-1])
def read_out(weights, values):
    return np.asarray(weights) @ np.asarray(values)
'''}, flagged=True, reasons=("uses .from_file",)),
    # the same through a reader the scan does not know, the path built from pieces: what it
    # printed is recognised as hidden test code (reversed), flagged and withheld
    Sub("reads_source_unseen", E1, {"read_out": '''
_p = chr(47).join(["..", "..", "..", "sour" + "ce", "ex01_weighted_sum", "ex01_weighted_sum.ip" + "ynb"])
_s = mha.__spec__.loader.get_data(_p).decode()
_i = _s.find("HIDDEN TESTS")
print(_s[_i - 100:_i + 400][::-1])
def read_out(weights, values):
    return np.asarray(weights) @ np.asarray(values)
'''}, flagged=True, reasons=("printed the hidden test code",)),
    # a leak test of the middle position only flags the unmasked model: not "never flags"
    Sub("leak_test_middle_only", E10, {"leaks_future": '''
def leaks_future(model, x):
    t = x.shape[1] // 2
    x2 = x.copy()
    x2[:, t + 1:] = np.random.default_rng(0).normal(size=x2[:, t + 1:].shape)
    return not np.allclose(model(x)[:, :t + 1], model(x2)[:, :t + 1])
'''}, {"test_leaks_future": "one position t only"}),
    # an infinite loop: the message says the time limit in seconds (the corpus runs at 30 s)
    Sub("loops_forever", E3, {"head_scores": '''
def head_scores(q, k, d_model):
    while True:
        pass
'''}, {"test_head_scores": "past the time limit (30 s for the whole test cell)"}),
    # exit() at the end of an answer cell does not stop the grading kernel: full points, flagged
    Sub("exits_after_answer", E10, {"predict_early_outputs_move": 'early_outputs_move = "c"\nexit()'},
        flagged=True, reasons=("uses exit",)),
    Sub("columns_softmax_1e9", E4, {"masked_attention": '''
def masked_attention(q, k, v, mask):
    scores = np.where(mask, -1e9, q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-1]))
    w = np.exp(scores - scores.max(axis=-2, keepdims=True))
    w /= w.sum(axis=-2, keepdims=True)
    return w @ v, w
'''}, {"test_masked_attention": "wrong axis", "test_masked_attention_broadcast": "wrong axis"}),
]
