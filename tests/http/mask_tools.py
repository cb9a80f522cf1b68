#!/usr/bin/python3
"""tests/http/mask_tools.py — runs docs/teaching.md's mask snippets without torch or
flash-attn, and builds from each the mask its tool would apply.

The snippets are written for PyTorch (SDPA, FlexAttention) and flash-attn, neither of
which this machine can install. They use only a handful of calls, so this file puts
stand-ins for them in sys.modules, on numpy:

- torch: tensor, arange, ones(..., dtype=torch.bool) with .tril/.triu(diagonal=), bool,
  int32; tensors are numpy arrays, so &, |, ~, ==, [:, None] broadcast as torch's do.
- torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None,
  is_causal=False): the mask the documentation's reference code builds (is_causal is
  torch.ones(L, S, dtype=torch.bool).tril(diagonal=0); a boolean attn_mask, True = takes
  part), and the weights softmax(q @ k^T / sqrt(E) with -inf where the mask is False).
- flash_attn.flash_attn_func(q, k, v, causal=False, window_size=(-1, -1)) and
  flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
  max_seqlen_k, causal=False, window_size=(-1, -1)): the mask of flash_attn_interface's
  docstring: causal aligned to the bottom right (key j <= i + seqlen_k - seqlen_q), a
  window keeping keys in [i + seqlen_k - seqlen_q - left, i + seqlen_k - seqlen_q + right]
  (-1 = unbounded on that side), and varlen applying both inside each sequence of
  cu_seqlens, nothing across them.

A snippet is one ```python block of the page: a prelude (L, S and the tensors it shares),
then parts that begin with a line "# FlexAttention", "# FlashAttention" or "# SDPA".
Reads {"imports" (the page's import block), "snippet", "q", "k", "v"} on stdin (q (L, E),
k (S, E), v (S, Ev) as lists) and prints {"L", "S", "mask_mod", "flash" (null when the
FlashAttention part calls no function), "sdpa", "weights"}: masks as lists of 0/1,
mask_mod's evaluated cell by cell with plain Python ints, exactly as the page writes it.
Reads {"flash_cases": [{"cu_seqlens_q", "cu_seqlens_k", "causal", "window_size"}]}
instead and prints flash_attn_varlen_func's mask for each.
"""
import json
import re
import sys
import types

import numpy as np


class Tensor(np.ndarray):
    """A numpy array with the few tensor methods the snippets call."""

    def tril(self, diagonal=0):
        return np.tril(self, diagonal).view(Tensor)

    def triu(self, diagonal=0):
        return np.triu(self, diagonal).view(Tensor)


def _tensor(data, dtype=None):
    return np.array(data, dtype=dtype).view(Tensor)


def _arange(*args, dtype=None):
    return np.arange(*args, dtype=dtype).view(Tensor)


def _ones(*shape, dtype=None):
    return np.ones(shape, dtype=dtype or float).view(Tensor)


torch = types.ModuleType("torch")
torch.bool = np.bool_
torch.int32 = np.int32
torch.tensor = _tensor
torch.arange = _arange
torch.ones = _ones

calls = {}


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (query, key, value))
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        assert attn_mask is None, "is_causal with an attn_mask"
        mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
    else:
        assert attn_mask is not None and np.asarray(attn_mask).dtype == np.bool_, \
            "the snippets pass a boolean attn_mask"
        mask = np.broadcast_to(np.asarray(attn_mask), (L, S))
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    x = np.where(mask, (q @ np.swapaxes(k, -1, -2)) * scale, -np.inf)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    w = e / e.sum(axis=-1, keepdims=True)
    calls["sdpa"] = np.array(mask).reshape(L, S)
    calls["weights"] = w.reshape(L, S)
    return w @ v


def _flash_rule(lq, lk, causal, window_size):
    """FlashAttention's mask of one sequence: seqlen_q = lq, seqlen_k = lk."""
    left, right = window_size
    i = np.arange(lq)[:, None] + (lk - lq)  # query i against the keys: bottom-right
    j = np.arange(lk)[None, :]
    keep = np.ones((lq, lk), dtype=bool)
    if causal:
        keep &= j <= i
    if left >= 0:
        keep &= j >= i - left
    if right >= 0:
        keep &= j <= i + right
    return keep


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), **rest):
    assert q.ndim == 4 and k.ndim == 4, "flash_attn_func takes (batch, seqlen, nheads, headdim)"
    calls["flash"] = _flash_rule(q.shape[1], k.shape[1], causal, window_size)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False,
                           window_size=(-1, -1), **rest):
    cq, ck = (np.asarray(c).tolist() for c in (cu_seqlens_q, cu_seqlens_k))
    assert q.ndim == 3 and q.shape[0] == cq[-1] and k.shape[0] == ck[-1], \
        "flash_attn_varlen_func takes (total, nheads, headdim) and cu_seqlens ending at total"
    assert len(cq) == len(ck) and cq[0] == ck[0] == 0
    lqs = [b - a for a, b in zip(cq, cq[1:])]
    lks = [b - a for a, b in zip(ck, ck[1:])]
    assert max_seqlen_q == max(lqs) and max_seqlen_k == max(lks), "max_seqlen of cu_seqlens"
    keep = np.zeros((cq[-1], ck[-1]), dtype=bool)
    for a, lq, b, lk in zip(cq, lqs, ck, lks):
        keep[a:a + lq, b:b + lk] = _flash_rule(lq, lk, causal, window_size)
    calls["flash"] = keep


def _install():
    nn = types.ModuleType("torch.nn")
    functional = types.ModuleType("torch.nn.functional")
    functional.scaled_dot_product_attention = scaled_dot_product_attention
    nn.functional = functional
    torch.nn = nn
    flash = types.ModuleType("flash_attn")
    flash.flash_attn_func = flash_attn_func
    flash.flash_attn_varlen_func = flash_attn_varlen_func
    sys.modules.update({"torch": torch, "torch.nn": nn, "torch.nn.functional": functional,
                        "flash_attn": flash})


HEADERS = ("# FlexAttention", "# FlashAttention", "# SDPA")


def parts(snippet):
    """The prelude and each tool's part of a snippet, by their header lines."""
    out, name = {"prelude": []}, "prelude"
    for line in snippet.splitlines():
        head = next((h for h in HEADERS if line.startswith(h)), None)
        if head:
            name = head[2:]
            assert name not in out, f"two {head} parts"
            out[name] = []
        out[name].append(line)
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def run(job):
    _install()
    calls.clear()
    p = parts(job["snippet"])
    assert set(p) == {"prelude", "FlexAttention", "FlashAttention", "SDPA"}, sorted(p)
    base = {"__name__": "snippet"}
    exec(job["imports"], base)  # the page's imports, resolved to the stand-ins above
    exec(p["prelude"], base)
    L, S = base["L"], base["S"]
    q, k, v = (np.array(job[n], dtype=np.float64) for n in ("q", "k", "v"))
    assert q.shape[0] == L and k.shape[0] == S, "the problem's shape is the snippet's L, S"

    flex = dict(base)
    exec(p["FlexAttention"], flex)
    mask_mod = flex["mask_mod"]
    mm = [[1 if mask_mod(0, 0, i, j) else 0 for j in range(S)] for i in range(L)]

    flash = dict(base)
    if re.search(r"flash_attn_(varlen_)?func\(", p["FlashAttention"]):
        # flash-attn's layouts: (batch, seqlen, nheads, headdim), varlen (total, nheads, headdim)
        if "flash_attn_varlen_func(" in p["FlashAttention"]:
            flash.update(q=q[:, None, :], k=k[:, None, :], v=v[:, None, :])
        else:
            flash.update(q=q[None, :, None, :], k=k[None, :, None, :], v=v[None, :, None, :])
        exec(p["FlashAttention"], flash)

    sdpa = dict(base)
    sdpa.update(q=q[None, None], k=k[None, None], v=v[None, None])  # (batch, heads, L, E)
    exec(p["SDPA"], sdpa)

    as_list = lambda m: m.astype(int).tolist()  # noqa: E731
    return {
        "L": L, "S": S, "mask_mod": mm,
        "flash": as_list(calls["flash"]) if "flash" in calls else None,
        "sdpa": as_list(calls["sdpa"]),
        # a row the mask empties is NaN in SDPA's reference code: null here
        "weights": [[None if np.isnan(x) else float(x) for x in row] for row in calls["weights"]],
    }


def flash_masks(cases):
    """FlashAttention's mask for each {"cu_seqlens_q", "cu_seqlens_k", "causal",
    "window_size"}: flash_attn_varlen_func's documented rule."""
    out = []
    for c in cases:
        calls.clear()
        cq, ck = c["cu_seqlens_q"], c["cu_seqlens_k"]
        lens = lambda cu: [b - a for a, b in zip(cu, cu[1:])]  # noqa: E731
        flash_attn_varlen_func(np.zeros((cq[-1], 1, 1)), np.zeros((ck[-1], 1, 1)), None, cq, ck,
                               max(lens(cq)), max(lens(ck)), causal=c["causal"],
                               window_size=tuple(c["window_size"]))
        out.append(calls["flash"].astype(int).tolist())
    return out


if __name__ == "__main__":
    job = json.load(sys.stdin)
    print(json.dumps(flash_masks(job["flash_cases"]) if "flash_cases" in job else run(job)))
