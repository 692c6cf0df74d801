"""The check-up's checks: each measures one behaviour and returns (passed, detail, mistakes).

``passed`` None means not run (the detail starts "not run:" and says what to
pass). Every comparison uses :meth:`Context.tol`, which follows the dtype and
the size of the values compared.
"""

from __future__ import annotations

import math

import torch

from ._trace import projection_candidates, trace

SPREAD_LIMIT = 3.0  # std of a row of scores at initialisation above this saturates softmax
NEG = -1e4  # a score at or below this counts as masked (a finite fill such as -1e9)


class ShapeChanged(ValueError):
    """A call returned another shape than its input: the module does not take what was passed
    (e.g. a mask that broadcast to an extra axis). A check that meets it is not run, never
    failed."""


class Context:
    """The module's adapter, the inputs, and the tolerance rule."""

    def __init__(self, a, x, x_other, pad, atol, rel, gen):
        self.a, self.x, self.x_other, self.pad, self.atol, self.rel = a, x, x_other, pad, atol, rel
        self.b, self.t = x.shape[0], x.shape[1]
        self.gen = gen
        self.causal_call = True  # what to pass for "causal" in calls that want a mask

    def tol(self, ref):
        if self.atol is not None:
            return float(self.atol)
        finite = ref[torch.isfinite(ref)]
        big = float(finite.abs().max()) if finite.numel() else 1.0
        return self.rel * max(big, 1e-30)  # relative to the size of the values compared

    def largest(self, a, b):
        """Largest |a - b|; NaN or inf in the same places of both count as equal."""
        a, b = a.double(), b.double()
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        d = torch.where(same, 0.0, (a - b).abs())
        return float(d.max()) if torch.isfinite(d).all() else math.inf

    def differ(self, a, b):
        return self.largest(a, b) > self.tol(a)

    def run(self, x, causal, pad=None, need_weights=False):
        # grad on, always: nn.MultiheadAttention takes one path (not its fused no-grad path)
        with torch.enable_grad():  # a copy: a module that changes its input changes no other
            out, w = self.a.run(x.clone(), causal, pad, need_weights)
        if tuple(out.shape) != tuple(x.shape):
            raise ShapeChanged(f"the output has shape {tuple(out.shape)} for x of shape "
                               f"{tuple(x.shape)}")
        return out.detach(), (None if w is None else w.detach())


def probe(ctx):
    """Refuse a module the check-up cannot call, before any check runs."""
    a, x = ctx.a, ctx.x
    try:
        out, _ = ctx.a.run(x, False, None, False)
    except TypeError as err:
        if "checkup could not" in str(err) or "must return" in str(err):
            raise
        raise TypeError(f"checkup could not call the module: {err}. Pass d_model=, "
                        "batch_first=, or wrap it in checkup.Adapter(module, d_model, n_heads, "
                        "run) with a run(x, causal, key_padding_mask, need_weights) that "
                        "calls it.") from err
    except Exception as err:  # noqa: BLE001 - the module's own error: reported, not a check
        return (f"calling the module on x of shape {tuple(x.shape)} raised "
                f"{type(err).__name__}: " + str(err).strip().splitlines()[0][:120]
                if str(err).strip() else f"calling the module raised {type(err).__name__}")
    if tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"the module returned out of shape {tuple(out.shape)} for x of shape "
                         f"{tuple(x.shape)}; the check-up needs (B, T, C) in and out (pass "
                         "batch_first= if it reads (T, B, C)).")
    del a
    return None


def _axes_independent(ctx):
    """``(along 0, along 1)``: does changing index 0 of that axis change the others' outputs."""
    x = ctx.x
    out0 = ctx.run(x, False)[0]
    xa, xb = x.clone(), x.clone()
    xa[0], xb[:, 0] = ctx.x_other[0], ctx.x_other[:, 0]
    return (not ctx.differ(out0[1:], ctx.run(xa, False)[0][1:]),
            not ctx.differ(out0[:, 1:], ctx.run(xb, False)[0][:, 1:]))


def settle_layout(ctx, notes):
    """(B, T, C) or (T, B, C) for a (query, key, value) module with no batch_first: the axis
    whose entries stay independent is its batch (nn.MultiheadAttention's default is (T, B, C))."""
    a = ctx.a
    if getattr(a, "_layout_known", True) or "x, x, x" not in notes[0]:
        return
    try:
        along_0, along_1 = _axes_independent(ctx)
    except Exception:  # noqa: BLE001 - the checks will report what the call raises
        return
    if along_1 and not along_0:
        a._style["first"] = False
        notes[0] = notes[0].replace("(B, T, C)", "(T, B, C)")
        notes.append("no batch_first attribute: read as sequence-first (T, B, C), because the "
                     "entries of axis 1 stay independent and those of axis 0 do not (pass "
                     "batch_first=True to insist on (B, T, C))")


def preconditions(ctx):
    """Before the checks: two eval() calls agree, the output is finite, the input is left as it
    was (every check's call gets a copy of x, so a change in place is reported, not spread).
    A check that compares outputs is not run when two calls differ or the output is not
    finite (``ctx.unsure``)."""
    ctx.mutated, ctx.varies, ctx.nonfinite, ctx.unsure = 0.0, 0.0, False, None
    x = ctx.x.clone()
    try:
        ctx.a.run(x, False, None, False)  # Context.run passes a copy: this call gets x itself
        ctx.mutated = ctx.largest(x, ctx.x)
        plain = ctx.run(ctx.x, False)[0]
        bad_rows = ~torch.isfinite(plain).all(dim=-1).all(dim=0)  # (T,)
        # an always-causal module's plain call is causal: a NaN in some rows is a blocked
        # row (causality names it); NaN everywhere is not
        ctx.nonfinite = bool(bad_rows.all() if ctx.a.causal == "always" else bad_rows.any())
        if ctx.nonfinite:  # a softmax row with every score blocked: a mask's NaN, not this
            _, tr = trace(lambda: ctx.run(ctx.x, False), ctx.x)
            ctx.nonfinite = not any(bool(((ev.scores <= NEG) | torch.isneginf(ev.scores))
                                         .all(dim=-1).any()) for ev in tr.events)
        ctx.varies = ctx.largest(plain, ctx.run(ctx.x, False)[0])
    except Exception:  # noqa: BLE001 - the checks report what the calls raise
        pass
    if ctx.varies > 0:
        ctx.unsure = "two calls in eval() differ (see eval determinism)"
    elif ctx.nonfinite:
        ctx.unsure = ("the output has NaN or inf with no mask at all (see finite in "
                      "training)")


def _reads(ctx, causal, pad=None):
    """``(reads (T, T) bool, nan_rows (T,) bool)``: does output i change when token j does."""
    out0 = ctx.run(ctx.x, causal, pad)[0]
    t = ctx.t
    nan_rows = ~torch.isfinite(out0).all(dim=-1).all(dim=0)  # (T,)
    reads = torch.zeros(t, t, dtype=torch.bool)
    tol = ctx.tol(out0)
    for j in range(t):
        xj = ctx.x.clone()
        xj[:, j] = ctx.x_other[:, j]
        outj = ctx.run(xj, causal, pad)[0]
        diff = (outj.double() - out0.double()).abs().amax(dim=(0, 2))  # (T,)
        reads[:, j] = ~(diff <= tol)  # NaN counts as a change
    return reads, nan_rows


def _triangular_buffer(module, t):
    for tensor in [*module.buffers(), *(v for v in vars(module).values()
                                         if isinstance(v, torch.Tensor))]:
        if tensor.dim() >= 2 and tensor.shape[-1] == tensor.shape[-2] >= t:
            m = tensor.reshape(-1, *tensor.shape[-2:])[0][:t, :t]
            m = m != 0 if m.dtype != torch.bool else m
            # a triangle, maybe one diagonal off (an off-by-one mask is still a causal buffer)
            if m.any() and not m.all() and (torch.equal(m, m.tril(1)) or
                                            torch.equal(m, m.triu(-1))):
                return True
    return False


def settle_call(ctx, notes):
    """How to ask for causal attention and for weights: try the flags, keep what works."""
    a = ctx.a
    style = getattr(a, "_style", None)
    if style and a._mask_name and not a._pad_name:
        _settle_mask_form(ctx, notes)
    if style and style["causal"] == "flag" and a._mask_name:
        try:
            ctx.run(ctx.x, True)
        except (RuntimeError, ValueError, TypeError) as err:
            style["causal"] = "flag+mask"  # e.g. nn.MultiheadAttention's is_causal is a hint
            notes.append(f"{a._flag}=True alone raised ({type(err).__name__}); the causal mask "
                         f"goes in {a._mask_name}= as well")
            _hint_off_if_the_mask_suffices(ctx)
    if a.weights == "flag":
        try:
            w = ctx.run(ctx.x, False, None, True)[1]
        except (RuntimeError, ValueError, TypeError) as err:
            w = None
            notes.append(f"asking for the weights raised {type(err).__name__}: "
                         f"{str(err).splitlines()[0][:80]}")
        if w is None:
            a.weights = None


def _hint_off_if_the_mask_suffices(ctx):
    """With the mask alone (the flag False) position 0 ignores later tokens: pass the flag as
    False, as torch may take ``is_causal=True`` as a hint that replaces the mask."""
    style, x = ctx.a._style, ctx.x
    x2 = x.clone()
    x2[:, 1:] = ctx.x_other[:, 1:]
    style["flag_on"] = False
    try:
        first, second = ctx.run(x, True)[0][:, :1], ctx.run(x2, True)[0][:, :1]
        style["flag_on"] = not (torch.isfinite(first).all() and not ctx.differ(first, second))
    except Exception:  # noqa: BLE001 - the mask alone does not fit: keep the flag on
        style["flag_on"] = True


def _settle_mask_form(ctx, notes):
    """Which shapes the mask argument takes, probed with B != T so a wrong one raises."""
    a, style = ctx.a, ctx.a._style
    x2, t = ctx.x[:2], ctx.t
    pad2 = torch.arange(t) >= torch.tensor([t, t - 1])[:, None]  # (2, T)
    if style["causal"] == "mask":
        try:
            ctx.run(x2, True)
        except Exception:  # noqa: BLE001 - a (T, T) mask does not fit: padding only
            style["causal"] = "none"
            a.causal = "unknown"
    for form in ("4", "3", "keys"):
        if form == "keys" and style["causal"] == "mask":
            break  # a causal (T, T) mask fits; padding then goes in the same square mask
        style["form"] = form
        try:
            ctx.run(x2, False, pad2)
            break
        except Exception:  # noqa: BLE001 - try the next shape
            continue
    else:  # no shape works: keep the square mask, so the checks report the module's error
        style["form"] = "4"
        if style["causal"] == "none":
            style["causal"], a.causal = "mask", "flag"
    shape = {"4": "(B, 1, T, T)", "3": "(B, T, T)", "keys": "(B, T)"}[style["form"]]
    notes.append(f"{a._mask_name}= takes " + ("a causal (T, T) mask and " if
                 style["causal"] == "mask" else "no causal mask, ") + f"padding as {shape}")


def settle(ctx, notes):
    """Decide what the module can be asked for (causal, weights) from its behaviour."""
    a = ctx.a
    if a.causal == "unknown":  # no causal option: always causal, or never
        declared = getattr(a, "_declared_causal", None)
        if declared is None:
            reads, nan_rows = _reads(ctx, False)
            i, j = torch.meshgrid(torch.arange(ctx.t), torch.arange(ctx.t), indexing="ij")
            one_sided = not reads[j > i].any() or not reads[j < i].any()  # a triangle unread
            declared = bool(nan_rows.any()) or one_sided or _triangular_buffer(a.module, ctx.t)
            # A module where no position reads another and no softmax over (T, T) scores or
            # SDPA call is seen (a Linear, an MLP) is not attention done wrong: there is no
            # attention between positions to check. (An attention whose mask leaves only the
            # diagonal has scores, so it is still checked and fails causality.)
            ctx.mixes_nothing = (not reads[i != j].any() and not nan_rows.any()
                                 and not trace(lambda: ctx.run(ctx.x, False), ctx.x)[1].events)
            declared = declared and not ctx.mixes_nothing
        a.causal = "always" if declared else "never"
        if getattr(ctx, "mixes_nothing", False):
            notes.append("no position reads any other: no attention between positions was "
                         "seen (is this the attention module?)")
        else:
            notes.append("no causal option: " + ("the module is treated as always causal (it "
                         "does not read every position, or holds a triangular buffer)"
                         if declared else "each position reads every other (pass causal=True "
                         "if it is meant to be causal)"))
    ctx.causal_call = a.causal != "never"
    if a.weights == "unknown":
        w = ctx.run(ctx.x, False, None, True)[1]
        a.weights = "always" if w is not None else None
    if a.weights is None:
        notes.append("returns no attention weights (the weight checks use the softmax seen "
                     "inside the call)")


# -- the checks ----------------------------------------------------------------------

def causality(ctx):
    a, t = ctx.a, ctx.t
    if ctx.unsure:
        return None, f"not run: {ctx.unsure}, so a change in the output measures nothing"
    if getattr(ctx, "mixes_nothing", False):
        return None, ("not run: no position reads any other, so there is no attention between "
                      "positions to check")
    if a.causal == "never":
        return None, ("not run: the module has no causal option (no is_causal / causal / mask "
                      "argument, no triangular buffer) and each position reads every other; "
                      "pass causal=True to checkup if it is meant to be causal")
    reads, nan_rows = _reads(ctx, True)
    i, j = torch.meshgrid(torch.arange(t), torch.arange(t), indexing="ij")
    allowed = j <= i
    ok = ~nan_rows
    if torch.equal(reads[ok], allowed[ok]) and not nan_rows.any():
        return True, f"position i reads 0..i only (T = {t})"
    future = [(int(r), int(c)) for r, c in zip(*torch.where(reads & ~allowed & ok[:, None]),
                                                  strict=True)]
    what = []
    if nan_rows.any():
        what.append(f"NaN in output rows {torch.where(nan_rows)[0].tolist()}")
    if future:
        what.append(f"reads the future at (i, j) = {future[:4]}" + (" ..." if len(future) > 4
                                                                    else ""))
    missing = allowed & ~reads & ok[:, None]
    if missing.any():
        what.append("does not read allowed (i, j) = "
                    f"{[(int(r), int(c)) for r, c in zip(*torch.where(missing), strict=True)][:4]}")
    named = _name_causal_mistake(ctx, reads, nan_rows)
    if nan_rows.any() and not named:
        named = ["fully blocked row"]
    return False, "; ".join(what), named


def _name_causal_mistake(ctx, reads, nan_rows):
    """Which mistake a failed causality points to: read from the scores' mask if seen."""
    t = ctx.t
    i, j = torch.meshgrid(torch.arange(t), torch.arange(t), indexing="ij")
    _, tr = trace(lambda: ctx.run(ctx.x, True), ctx.x)
    used = [ev for ev in tr.events if ev.used] or tr.events
    if used:
        s = torch.cat([ev.scores for ev in used], dim=1)  # (B, H, T, T)
        blocked = (~torch.isfinite(s) | (s <= NEG)).any(dim=1).any(dim=0)  # (T, T)
        if torch.equal(blocked, j > i):  # the scores are masked right
            if any(ev.dim == -2 for ev in used):
                return ["softmax over the wrong axis"]
            return ["view split"]  # the scores are masked right: the rows are not positions
        if torch.equal(blocked, j >= i) or torch.equal(blocked, j > i + 1):
            return ["causal off by one"]
        if torch.equal(blocked, j <= i) or torch.equal(blocked, j < i):
            return ["mask inverted"]
        if not blocked.any():
            return _after_or_ignored(tr)
        return ["mask inverted", "causal off by one", "view split"]
    # no scores seen: read the mistake from which positions each output reads
    # (position i's own token always counts: it makes the query)
    last = i[:, 0] < t - 1
    if torch.equal(reads[last], (j >= i)[last]):
        return ["mask inverted"]
    if torch.equal(reads, j <= i + 1) or (nan_rows[0] and not nan_rows[1:].any()):
        return ["causal off by one"]
    if bool(reads.all()):
        return ["mask ignored", "mask after softmax"]
    return ["view split", "mask inverted"]


def _after_or_ignored(tr):
    """The scores carry no mask under a causal call: mask after softmax, or none at all."""
    t = tr.events[0].scores.shape[-1]
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    for ev in tr.events:
        if ev.used and ev.entered is not None:
            zeroed = ev.entered[..., future]
            if ev.weights[..., future].abs().max() > 0 and zeroed.abs().max() == 0:
                return ["mask after softmax"]
    return ["mask ignored"]


def padding(ctx):
    a = ctx.a
    if ctx.unsure:
        return None, f"not run: {ctx.unsure}, so a change in the output measures nothing"
    if not a.padding:
        return None, ("not run: the module takes no key padding mask (no key_padding_mask / "
                      "padding_mask / mask argument); give forward one to run it")
    out0 = ctx.run(ctx.x, False, ctx.pad)[0]
    worst, where, named = 0.0, None, []
    for b in range(ctx.b):
        padded = ctx.pad[b]
        if not padded.any():
            continue
        xb = ctx.x.clone()
        xb[b, padded] = ctx.x_other[b, padded]
        outb = ctx.run(xb, False, ctx.pad)[0]
        real = ~padded
        d = ctx.largest(out0[b, real], outb[b, real])
        if d > worst:
            worst, where = d, b
            rows = out0[b, padded].double()
            same = rows.shape[0] > 1 and bool((rows - rows[:1]).abs().max() <=
                                              ctx.tol(rows))
            named = ["padding on the query axis"] if (not torch.isfinite(rows).all() or same) \
                else ["mask inverted"] if _reads_only_padding(ctx, b) else \
                ["padding not on the keys"]
    tol = ctx.tol(out0[~ctx.pad])
    if worst <= tol:
        return True, f"real positions unchanged when padded tokens change (under {tol:.2g})"
    amount = "NaN or inf" if math.isinf(worst) else f"{worst:.2g}"
    return False, (f"real positions of sequence {where} change by {amount} when its padded "
                   "tokens change"), named


def _reads_only_padding(ctx, b):
    """Do the real positions of sequence b ignore its other real tokens (an inverted mask)?"""
    real = torch.where(~ctx.pad[b])[0]
    if len(real) < 2:
        return False
    xb = ctx.x.clone()
    xb[b, real[0]] = ctx.x_other[b, real[0]]
    first, second = ctx.run(ctx.x, False, ctx.pad)[0], ctx.run(xb, False, ctx.pad)[0]
    return not ctx.differ(first[b, real[1:]], second[b, real[1:]])


def batch(ctx):
    a = ctx.a
    if ctx.unsure:
        return None, f"not run: {ctx.unsure}, so a change in the output measures nothing"
    x2 = ctx.x.clone()
    x2[0] = ctx.x_other[0]
    pad, pad2 = (ctx.pad, ctx.pad.clone()) if a.padding else (None, None)
    if pad2 is not None:
        pad2[0] = torch.arange(ctx.t) >= ctx.t - 2  # sequence 0: new tokens, new padding
    first, second = ctx.run(ctx.x, False, pad)[0], ctx.run(x2, False, pad2)[0]
    d = ctx.largest(first[1:], second[1:])
    tol = ctx.tol(first[1:])
    if d <= tol:
        return True, f"sequences 1.. unchanged when sequence 0 changes (under {tol:.2g})"
    return False, (f"sequences 1.. change by {'NaN or inf' if math.isinf(d) else f'{d:.2g}'} "
                   "when sequence 0 changes"), ["sequences mix"]


def positions(ctx):
    if ctx.unsure:
        return None, f"not run: {ctx.unsure}, so a change in the output measures nothing"
    if ctx.a.causal == "always":
        return None, ("not run: the module is always causal; the permutation test needs a "
                      "call without a mask (causality checks the split instead)")
    perm = torch.arange(ctx.t).roll(1).flip(0)  # no position stays in place for T >= 3
    out = ctx.run(ctx.x, False)[0]
    moved = ctx.run(ctx.x[:, perm], False)[0]
    d = ctx.largest(moved, out[:, perm])
    tol = ctx.tol(out)
    if d <= tol:
        return True, f"permuting the tokens permutes the outputs (under {tol:.2g})"
    same = ctx.x[:, :1].expand_as(ctx.x).clone()  # every token the same
    out_same = ctx.run(same, False)[0]
    if not ctx.differ(out_same, out_same[:, :1].expand_as(out_same)):
        return None, (f"not run: permuting the tokens changes the outputs by {d:.2g}, but "
                      "identical tokens give identical outputs at every position: the "
                      "outputs depend on position (RoPE, ALiBi, relative position terms), "
                      "which permuting legitimately changes")
    return False, (f"permuting the tokens changes the outputs by {d:.2g} beyond the "
                   "permutation: rows of a head are not positions"), ["view split"]


def _fit(scores, r):
    """Least-squares ``scores = r / s``: ``(s, relative misfit)`` over the entries given."""
    rr = float((r * r).sum())
    if rr == 0:
        return math.inf, math.inf
    inv = float((r * scores).sum()) / rr
    misfit = float((scores - inv * r).norm() / scores.norm().clamp_min(1e-300))
    return (1 / inv if inv > 0 else math.inf), misfit


def _scores_of_call(ctx):
    causal = ctx.a.causal == "always"
    _, tr = trace(lambda: ctx.run(ctx.x, causal), ctx.x)
    used = [ev for ev in tr.events if ev.used] or tr.events
    return tr, used


def scale(ctx):
    a, c = ctx.a, ctx.a.d_model
    tr, used = _scores_of_call(ctx)
    if not used:
        return None, ("not run: no softmax over (T, T) scores and no SDPA call was seen in "
                      "the forward pass")
    cands = projection_candidates(tr, c, a.module)
    if not cands:
        return None, ("not run: no product of the input with a (C, D) matrix was seen (the "
                      "projections are computed in a way the check-up cannot watch)")
    s = torch.cat([ev.scores for ev in used], dim=1)  # (B, H, T, T)
    h = s.shape[1]  # the number of score maps the call computed: its heads
    usable = (torch.isfinite(s) & (s > NEG)).all(dim=1)  # (B, T, T): no head masks it
    total = torch.where(usable, s.nan_to_num(0.0, 0.0, 0.0).sum(dim=1), 0.0)[usable]
    best = (math.inf, math.inf, None)
    for qi, q in enumerate(cands):
        for ki, k in enumerate(cands):
            if q.shape != k.shape:
                continue
            r = (q @ k.transpose(-2, -1))[usable]
            found = _fit(total, r)
            if found[1] < best[1]:
                best = (*found, (qi, ki))
    s_hat, misfit, _ = best
    fit_tol = max(1e-6, 4 * ctx.rel)
    dh = c / h
    if misfit > fit_tol:
        return None, (f"not run: the scores fed to softmax are not q.k / s for any two of the "
                      f"products of x seen and one s (best relative misfit {misfit:.2g}), so "
                      "the scale cannot be read (position terms such as RoPE, or heads whose "
                      "rows mix positions)")
    want = {"sqrt(dh)": math.sqrt(dh), "sqrt(d_model)": math.sqrt(c), "1": 1.0}
    name = min(want, key=lambda n: abs(math.log(s_hat / want[n])))
    close = abs(math.log(s_hat / want[name])) < 0.05
    what = f"scores = q.k / {s_hat:.4g} (sqrt(dh) = sqrt({dh:g}) = {math.sqrt(dh):.4g})"
    if close and abs(math.log(s_hat / want["sqrt(dh)"])) < 0.05:
        return True, what
    if close and name == "sqrt(d_model)":
        return False, what + f": divided by sqrt(d_model) = sqrt({c})", ["scale sqrt(d_model)"]
    if close and name == "1":
        return False, what + ": not divided at all", ["no scale"]
    return False, what, ["wrong scale"]


def rows(ctx):
    a = ctx.a
    causal = ctx.causal_call
    if a.weights:
        w = ctx.run(ctx.x, causal, None, True)[1]
        source = "returned weights"
    else:
        w = None
    _, tr = trace(lambda: ctx.run(ctx.x, causal), ctx.x)
    used = [ev for ev in tr.events if ev.used and ev.dim is not None]
    if w is None:
        if not used:
            return None, ("not run: the module returns no weights and computes them inside "
                          "SDPA; pass need_weights (or return the weights) to run it")
        w = torch.cat([ev.weights for ev in used], dim=1)
        source = "weights of the softmax inside the call"
    w = w.double()
    if not torch.isfinite(w).all():
        return False, f"{source}: NaN or inf", ["fully blocked row"]
    d = float((w.sum(dim=-1) - 1).abs().max())
    tol = ctx.tol(w.sum(dim=-1))
    if d <= tol:
        return True, f"{source}: every row sums to 1 (within {tol:.2g})"
    if any(ev.dim == -2 for ev in used):
        named = ["softmax over the wrong axis"]
        how = " (softmax called with dim=-2: the queries)"
    elif used and all(float((ev.weights.sum(-1) - 1).abs().max()) <= tol for ev in used):
        named, how = ["mask after softmax"], " (the softmax's own rows sum to 1)"
    else:
        named, how = ["softmax over the wrong axis", "mask after softmax"], ""
    sums = w.sum(-1)
    return False, f"{source}: rows sum to {float(sums.min()):.3g}..{float(sums.max()):.3g}" \
        + how, named


def weights_path(ctx):
    a = ctx.a
    if ctx.unsure and a.weights:
        return None, f"not run: {ctx.unsure}, so a change in the output measures nothing"
    if not a.weights:
        return None, ("not run: the module returns no weights; give forward a need_weights "
                      "argument (or return (out, weights)) to run it")
    causal = ctx.causal_call
    found = []
    if a.weights == "flag":
        plain = ctx.run(ctx.x, causal, None, False)[0]
        asked = ctx.run(ctx.x, causal, None, True)[0]
        d = ctx.largest(plain, asked)
        if d > ctx.tol(plain):
            found.append(f"asking for the weights changes the output by {d:.2g}")
    (out, w), tr = trace(lambda: ctx.run(ctx.x, causal, None, True), ctx.x)
    used = [ev for ev in tr.events if ev.used and ev.entered is not None]
    if w is not None and used:
        entered = torch.cat([ev.entered for ev in used], dim=1)  # (B, H, T, T)
        w = w.double()
        if w.dim() == 3 and entered.shape[1] > 1:
            entered = entered.mean(dim=1)
        elif w.dim() == 3:
            entered = entered[:, 0]
        if w.shape == entered.shape:
            d = ctx.largest(w, entered)
            if d > ctx.tol(entered):
                found.append(f"the returned weights differ from the weights the output used "
                             f"by {'NaN or inf' if math.isinf(d) else f'{d:.2g}'}")
        else:
            found.append(f"returned weights of shape {tuple(w.shape)}, the output used "
                         f"{tuple(entered.shape)}")
    if not found:
        return True, "the output does not change with the weights, which are the ones it used"
    return False, "; ".join(found), ["weights path differs"]


def determinism(ctx):
    if ctx.mutated > 0:
        return False, (f"the call changes its input x in place (by up to {ctx.mutated:.2g}): "
                       "a second call sees other inputs"), ["input changed in place"]
    first = ctx.run(ctx.x, ctx.causal_call)[0]
    second = ctx.run(ctx.x, ctx.causal_call)[0]
    if torch.allclose(first, second, rtol=0.0, atol=0.0, equal_nan=True):
        return True, "two calls equal"
    return False, f"two calls in eval() differ by {ctx.largest(first, second):.2g}", \
        ["dropout at inference"]


def spread(ctx):
    if ctx.mutated > 0:
        return None, ("not run: the module changes its input in place, so its scores are not "
                      "those of x (see eval determinism)")
    _, used = _scores_of_call(ctx)
    if not used:
        return None, "not run: no softmax over (T, T) scores and no SDPA call was seen"
    s = torch.cat([ev.scores for ev in used], dim=1)
    keep = torch.isfinite(s) & (s > NEG)
    n = keep.sum(-1).clamp_min(1)
    mean = torch.where(keep, s, 0.0).sum(-1) / n
    var = torch.where(keep, (s - mean[..., None]) ** 2, 0.0).sum(-1) / (n - 1).clamp_min(1)
    value = float(var.sqrt()[n > 1].mean())
    ok = value <= SPREAD_LIMIT
    return ok, f"std of a row of scores {value:.2g} (limit {SPREAD_LIMIT:g})", \
        ([] if ok else ["large init"])


def gradients(ctx):
    named = [(n, p) for n, p in ctx.a.module.named_parameters() if p.requires_grad]
    if not named:
        return None, "not run: the module has no parameters that require a gradient"
    with torch.enable_grad():
        out = ctx.a.run(ctx.x.clone().requires_grad_(), ctx.causal_call, None, False)[0]
        found = torch.autograd.grad(out.float().square().sum(), [p for _, p in named],
                                    allow_unused=True)
    unused = [n for (n, _), g in zip(named, found, strict=True) if g is None]
    if not unused:
        return True, f"all {len(named)} parameters reached"
    return False, f"no gradient reaches {unused}", ["unused parameter"]


def training(ctx):
    ctx.a.module.train()
    try:
        out = ctx.run(ctx.x, ctx.causal_call)[0]
    finally:
        ctx.a.module.eval()
    if torch.isfinite(out).all():
        return True, "finite"
    if ctx.nonfinite:
        return False, ("NaN or inf in the output in eval() already, with no mask at all"), \
            ["non-finite output"]
    if not torch.isfinite(ctx.run(ctx.x, ctx.causal_call)[0]).all():
        # the NaN is there without training: not this check's to explain (causality names it)
        return None, ("not run: the output has NaN or inf in eval() too, so train() adds "
                      "nothing to find (see causality: a fully blocked row)")
    return False, "NaN or inf in the output in train() only, not in eval()", \
        ["dropout on masked scores"]


CHECK_FUNCTIONS = {"causality": causality, "padding invariance": padding,
                   "batch independence": batch, "positions stay apart": positions,
                   "scale": scale, "rows sum to 1": rows, "weights path": weights_path,
                   "eval determinism": determinism, "score spread": spread,
                   "gradients": gradients, "finite in training": training}
