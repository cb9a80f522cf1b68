#!/usr/bin/python3
"""Generates tests/data/backward_torch.json: /v1/attention and /v1/multihead requests
with "backward": {"grad_output": dO}, and the gradients torch.autograd (float64)
answers for the same numbers. Run by hand with Debian's python3-torch; the output is
committed, so the test suite needs no torch.

    /usr/bin/python3 tests/gen_torch_backward.py > tests/data/backward_torch.json

Optionally, with a running attnd, every case's forward is checked first:

    ATTND_URL=http://localhost:18200 /usr/bin/python3 tests/gen_torch_backward.py > ...

posts each body without "backward" and holds its output (and weights) to the explicit
torch forward below to 1e-12, and holds the dropout keep matrix of the Python port of
core/random.c (stream 7) to attnd's "dropout_keep", cell for cell. The JSON written
does not depend on ATTND_URL.

The forward is written out step by step as DESIGN.md ("Attention variants") and
core/variants_ref.c state it, not with torch's attention modules: q_rope, k_rope →
scores → scaled → softcapped → masked (bias, ALiBi, −inf where blocked) → weights
(softmax with the sink logit) → dropped → output. loss = Σ dO ∘ output, so
loss.backward() is the backward with grad_output = dO. grad_q and grad_k are with
respect to the unrotated q and k (through RoPE).

"want" also holds the intermediates a kernel author checks against, computed in numpy
from the torch forward's tensors and the formulas, and asserted here against torch:
  grad_weights  dP = dO·Vᵀ at every cell (× keep/(1 − p) with dropout)
  delta         D_i = Σ_c dO_ic·O_ic
  grad_masked   dS = weights ∘ (dP − D), 0 where blocked (== torch's grad of masked)
  grad_bias     dS (when bias is given; == torch's grad of bias)
  grad_sink_logit  −Σ_i sink_weight_i·D_i (when sink_logit is given; == torch's)
and "output", the forward's output. grad_v (without dropout) = weightsᵀ·dO, and grad_q,
grad_k by the chain of steps (dS → through softcap → × scale → ·K', ᵀ·Q' → Rᵀ back
through RoPE) are asserted against torch's to 1e-12 too.

Multihead: Q = X·W_Q + b_q ("in_out") or X·W_Qᵀ + b_q ("out_in"), likewise K, V;
heads split by columns, head i reads kv head floor(i·kv_heads/heads); concat; ·W_O + b_o.
Gradients of every weight are in the layout sent.

Inputs come from numpy's default_rng with a fixed seed, uniform in [−1, 1]; the output
is the same bytes on every run.
"""
import json
import math
import os
import sys
import urllib.request

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)

ATTND_URL = os.environ.get("ATTND_URL")
MASK64 = (1 << 64) - 1


# ---- the generator of core/random.c (splitmix64, by index), for dropout's keep ----

def attnd_unit(seed, stream, k):
    """Value k of a stream in [0, 1): splitmix64 of seed + stream·2^40 + (k+1)·γ."""
    z = (seed + (stream << 40) + (k + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return (z >> 11) * 2.0 ** -53


def dropout_keep(seed, p, n_q, n_k, first=0):
    """attnd's dropout_keep: 1 where u >= p, u from stream 7, row-major from `first`."""
    return np.array([[0.0 if attnd_unit(seed, 7, first + i * n_k + j) < p else 1.0
                      for j in range(n_k)] for i in range(n_q)])


# ---- attnd, when ATTND_URL is set ----

def post(path, body):
    req = urllib.request.Request(ATTND_URL + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def close(name, got, want, tol=1e-12):
    got = np.array(got, dtype=float)
    want = np.asarray(want, dtype=float)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    assert np.all(err <= tol), (name, float(err.max()))
    return float(err.max())


# ---- the single-head forward, step by step ----

def visible_cells(n_q, n_k, mask, window, sink_tokens):
    """attn_key_visible: the mask (matrix, key vector or "causal"), then the window."""
    off = n_k - n_q
    vis = np.ones((n_q, n_k), dtype=bool)
    for i in range(n_q):
        at = i + off
        for j in range(n_k):
            if isinstance(mask, str):
                assert mask == "causal"
                if j > at:
                    vis[i, j] = False
            elif mask is not None:
                m = np.asarray(mask)
                if (m[j] if m.ndim == 1 else m[i, j]) == 0:
                    vis[i, j] = False
            if window is not None and j >= sink_tokens:
                left, right = window.get("left"), window.get("right")
                if left is not None and j - at < -left:
                    vis[i, j] = False
                if right is not None and j - at > right:
                    vis[i, j] = False
    return vis


def rope_tables(positions, base, r):
    """cos and sin of θ_c = pos / base^(2c/r), (n, r/2), as variants_ref.c's ref_angle."""
    theta = np.array([[pos / math.pow(base, (2 * c) / r) for c in range(r // 2)]
                      for pos in positions])
    return torch.tensor(np.cos(theta)), torch.tensor(np.sin(theta))


def rope_matrix(pos, base, r, layout, d):
    """The rotation of one row at pos as a (d, d) matrix R: x_rope = R·x."""
    R = np.eye(d)
    half = r // 2
    for c in range(half):
        t = pos / math.pow(base, (2 * c) / r)
        a, b = (c, c + half) if layout == "half" else (2 * c, 2 * c + 1)
        R[a, a], R[a, b], R[b, a], R[b, b] = math.cos(t), -math.sin(t), math.sin(t), math.cos(t)
    return R


def rope_apply(x, cos, sin, r, layout):
    half = r // 2
    rot, rest = x[:, :r], x[:, r:]
    if layout == "half":  # x·cos + rotate_half(x)·sin (Hugging Face)
        c2, s2 = torch.cat([cos, cos], 1), torch.cat([sin, sin], 1)
        rotated = torch.cat([-rot[:, half:], rot[:, :half]], 1)
        out = rot * c2 + rotated * s2
    else:  # pair (2c, 2c+1) as a complex number times e^(iθ_c) (Meta llama)
        a, b = rot[:, 0::2], rot[:, 1::2]
        ra, rb = a * cos - b * sin, a * sin + b * cos
        out = torch.stack([ra, rb], 2).reshape(x.shape[0], r)
    return torch.cat([out, rest], 1)


def softmax_sink(masked, vis, sink=None):
    """Row softmax of masked (−inf where blocked) with the sink logit in the max and the
    sum but no column; a fully masked row gets weights 0. Returns (weights, sink_weight)."""
    vis_t = torch.tensor(vis)
    with torch.no_grad():
        m = torch.where(vis_t, masked, torch.tensor(-math.inf)).max(1, keepdim=True).values
        if sink is not None:
            m = torch.maximum(m, sink.detach().expand_as(m))
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.where(vis_t, torch.exp(torch.where(vis_t, masked, m) - m), torch.zeros_like(masked))
    total = e.sum(1, keepdim=True)
    es = None
    if sink is not None:
        es = torch.exp(sink - m)
        total = total + es
    safe = torch.where(total > 0, total, torch.ones_like(total))
    return e / safe, (es / safe if es is not None else None)


def attention_case(name, rng, n_q, n_k, d_k, d_v, **opt):
    q = rng.uniform(-1, 1, (n_q, d_k))
    k = rng.uniform(-1, 1, (n_k, d_k))
    v = rng.uniform(-1, 1, (n_k, d_v))
    d_o = rng.uniform(-1, 1, (n_q, d_v))
    req = {"q": q.tolist(), "k": k.tolist(), "v": v.tolist()}
    mask = opt.get("mask")
    if mask is not None:
        req["mask"] = mask if isinstance(mask, str) else np.asarray(mask).astype(int).tolist()
    bias = None
    if opt.get("bias"):
        bias = rng.uniform(-1, 1, (n_q, n_k))
        req["bias"] = bias.tolist()
    scale = opt.get("scale")
    if scale is not None:
        req["scale"] = scale
    else:
        scale = 1.0 / math.sqrt(d_k)
    rope = opt.get("rope")
    if rope is not None:
        req["rope"] = rope
    softcap = opt.get("softcap")
    if softcap is not None:
        req["softcap"] = softcap
    alibi = opt.get("alibi")
    if alibi is not None:
        req["alibi"] = alibi
    window = opt.get("window")
    if window is not None:
        req["window"] = window
    sink_tokens = opt.get("sink_tokens", 0)
    if "sink_tokens" in opt:
        req["sink_tokens"] = sink_tokens
    sink_logit = opt.get("sink_logit")
    if sink_logit is not None:
        req["sink_logit"] = sink_logit
    dropout = opt.get("dropout")
    if dropout is not None:
        req["dropout"] = dropout
    req["backward"] = {"grad_output": d_o.tolist()}

    off = n_k - n_q
    vis = visible_cells(n_q, n_k, mask, window, sink_tokens)

    # forward in torch
    qt = torch.tensor(q, requires_grad=True)
    kt = torch.tensor(k, requires_grad=True)
    vt = torch.tensor(v, requires_grad=True)
    bt = torch.tensor(bias, requires_grad=True) if bias is not None else None
    zt = torch.tensor(float(sink_logit), requires_grad=True) if sink_logit is not None else None
    qr, kr = qt, kt
    if rope is not None:
        base = rope.get("base", 10000.0)
        r = int(d_k * rope.get("fraction", 1.0)) // 2 * 2
        layout = rope.get("layout", "half")
        pq = rope.get("positions_q", [off + i for i in range(n_q)])
        pk = rope.get("positions_k", list(range(n_k)))
        cq, sq = rope_tables(pq, base, r)
        ck, sk = rope_tables(pk, base, r)
        qr = rope_apply(qt, cq, sq, r, layout)
        kr = rope_apply(kt, ck, sk, r, layout)
    scores = qr @ kr.T
    x = scores * scale
    scaled = x
    if softcap is not None:
        x = softcap * torch.tanh(x / softcap)
    if bt is not None:
        x = x + bt
    if alibi is not None:
        dist = np.abs(np.arange(n_q)[:, None] + off - np.arange(n_k)[None, :]).astype(float)
        x = x + torch.tensor(-alibi * dist)
    masked = torch.where(torch.tensor(vis), x, torch.tensor(-math.inf))
    masked.retain_grad()
    weights, sink_w = softmax_sink(masked, vis, zt)
    mix = weights
    keep = None
    if dropout is not None:
        p = dropout["p"]
        keep = dropout_keep(dropout["seed"], p, n_q, n_k)
        mix = weights * torch.tensor(keep) / (1.0 - p)
    output = mix @ vt
    loss = (torch.tensor(d_o) * output).sum()
    loss.backward()

    # the intermediates from the formulas, in float64 numpy
    P = weights.detach().numpy()
    O = output.detach().numpy()
    dP = d_o @ v.T
    if keep is not None:
        dP = dP * keep / (1.0 - dropout["p"])
    D = (d_o * O).sum(1)
    dS = np.where(vis, P * (dP - D[:, None]), 0.0)
    assert not torch.isnan(masked.grad).any(), name
    tg = masked.grad.numpy()
    close(name + ": torch grad of masked vs dS", dS, tg, 1e-12)
    assert np.all(tg[~vis] == 0), name
    for t in (qt, kt, vt):
        assert torch.isfinite(t.grad).all(), name
    if keep is None:  # grad_v = weightsᵀ·dO
        close(name + ": grad_v", P.T @ d_o, vt.grad.numpy(), 1e-12)

    # the rest of the chain by the formulas (DESIGN.md, "Backward"), against torch
    g = dS
    if softcap is not None:
        g = g * (1.0 - np.tanh(scaled.detach().numpy() / softcap) ** 2)
    g = g * scale  # grad_scores
    gq = g @ kr.detach().numpy()  # grad_q_rope
    gk = g.T @ qr.detach().numpy()  # grad_k_rope
    if rope is not None:  # back through the rotation: Rᵀ·g, row by row
        gq = np.stack([rope_matrix(pos, base, r, layout, d_k).T @ row for pos, row in zip(pq, gq)])
        gk = np.stack([rope_matrix(pos, base, r, layout, d_k).T @ row for pos, row in zip(pk, gk)])
    close(name + ": grad_q by the formulas", gq, qt.grad.numpy(), 1e-12)
    close(name + ": grad_k by the formulas", gk, kt.grad.numpy(), 1e-12)

    want = {"output": O.tolist(),
            "grad_q": qt.grad.numpy().tolist(),
            "grad_k": kt.grad.numpy().tolist(),
            "grad_v": vt.grad.numpy().tolist(),
            "grad_weights": dP.tolist(),
            "delta": D.tolist(),
            "grad_masked": dS.tolist()}
    if bt is not None:
        close(name + ": grad_bias", dS, bt.grad.numpy(), 1e-12)
        want["grad_bias"] = bt.grad.numpy().tolist()
    if zt is not None:
        sw = sink_w.detach().numpy()[:, 0]
        close(name + ": grad_sink_logit", -(sw * D).sum(), zt.grad.item(), 1e-12)
        want["grad_sink_logit"] = zt.grad.item()

    if ATTND_URL:
        body = {kk: vv for kk, vv in req.items() if kk != "backward"}
        inc = ["output", "weights"] + (["dropout_keep"] if dropout is not None else [])
        got = post("/v1/attention", dict(body, include=inc))
        e = close(name + ": attnd output", got["output"], O)
        close(name + ": attnd weights", got["weights"], P)
        if dropout is not None:
            assert np.array_equal(np.array(got["dropout_keep"], dtype=float), keep), name
        print("attention %-40s forward matches attnd (max rel %.1e)" % (name, e), file=sys.stderr)
    return {"name": name, "request": req, "want": want}


# ---- multihead ----

def multihead_case(name, rng, n_q, n_k, d_model, heads, kv_heads=None, cross=False,
                   layout="in_out", mask=None, biases="qkvo"):
    kvh = kv_heads or heads
    d_k = d_model // heads
    d_kv = kvh * d_k
    x_q = rng.uniform(-1, 1, (n_q, d_model))
    x_kv = rng.uniform(-1, 1, (n_k, d_model)) if cross else x_q
    outs = {"q": d_model, "k": d_kv, "v": d_kv, "o": d_model}
    ins = {"q": d_model, "k": d_model, "v": d_model, "o": d_model}
    # weights in the layout sent: in_out (in, out), out_in (out, in)
    w = {}
    for key in "qkvo":
        shape = (ins[key], outs[key]) if layout == "in_out" else (outs[key], ins[key])
        w[key] = rng.uniform(-1, 1, shape) / math.sqrt(d_model)
    b = {key: rng.uniform(-0.5, 0.5, outs[key]) for key in biases}
    d_o = rng.uniform(-1, 1, (n_q, d_model))

    req = {"heads": heads}
    if kv_heads is not None:
        req["kv_heads"] = kv_heads
    req["weight_layout"] = layout
    if cross:
        req["x_q"], req["x_kv"] = x_q.tolist(), x_kv.tolist()
    else:
        req["x"] = x_q.tolist()
    for key in "qkvo":
        req["w_" + key] = w[key].tolist()
    for key in biases:
        req["b_" + key] = b[key].tolist()
    if mask is not None:
        req["mask"] = mask if isinstance(mask, str) else np.asarray(mask).astype(int).tolist()
    req["backward"] = {"grad_output": d_o.tolist()}

    vis = visible_cells(n_q, n_k, mask, None, 0)
    xq = torch.tensor(x_q, requires_grad=True)
    xkv = torch.tensor(x_kv, requires_grad=True) if cross else xq
    wt = {key: torch.tensor(w[key], requires_grad=True) for key in "qkvo"}
    bt = {key: torch.tensor(b[key], requires_grad=True) for key in biases}

    def proj(x, key):
        y = x @ wt[key] if layout == "in_out" else x @ wt[key].T
        return y + bt[key] if key in bt else y

    Q, K, V = proj(xq, "q"), proj(xkv, "k"), proj(xkv, "v")
    scale = 1.0 / math.sqrt(d_k)
    head_out, head_w = [], []
    for h in range(heads):
        g = h * kvh // heads
        qh = Q[:, h * d_k:(h + 1) * d_k]
        kh = K[:, g * d_k:(g + 1) * d_k]
        vh = V[:, g * d_k:(g + 1) * d_k]
        masked = torch.where(torch.tensor(vis), (qh @ kh.T) * scale, torch.tensor(-math.inf))
        wts, _ = softmax_sink(masked, vis)
        head_w.append(wts)
        head_out.append(wts @ vh)
    concat = torch.cat(head_out, 1)
    output = proj(concat, "o")
    loss = (torch.tensor(d_o) * output).sum()
    loss.backward()

    want = {"output": output.detach().numpy().tolist()}
    if cross:
        want["grad_x_q"] = xq.grad.numpy().tolist()
        want["grad_x_kv"] = xkv.grad.numpy().tolist()
    else:
        want["grad_x"] = xq.grad.numpy().tolist()
    for key in "qkvo":
        want["grad_w_" + key] = wt[key].grad.numpy().tolist()
    for key in biases:
        want["grad_b_" + key] = bt[key].grad.numpy().tolist()

    if ATTND_URL:
        body = {kk: vv for kk, vv in req.items() if kk != "backward"}
        got = post("/v1/multihead", dict(body, include=["output", "weights"]))
        e = close(name + ": attnd output", got["output"], output.detach().numpy())
        close(name + ": attnd weights", got["weights"],
              torch.stack(head_w).detach().numpy())
        print("multihead %-40s forward matches attnd (max rel %.1e)" % (name, e), file=sys.stderr)
    return {"name": name, "request": req, "want": want}


def check_generator():
    """The port against attnd's dropout_keep at a few sizes, seeds and rates. The seeds
    stay within 2^53: attnd reads dropout.seed through a double, so a larger seed is
    rounded to the nearest double before the generator sees it."""
    if not ATTND_URL:
        return
    rng = np.random.default_rng(7)
    cells = 0
    for n_q, n_k, seed, p in [(1, 1, 0, 0.5), (7, 9, 42, 0.3), (16, 33, 2**40 + 12345, 0.5),
                              (40, 50, 2**53 - 1, 0.1), (5, 64, 123456789, 0.9)]:
        body = {"q": rng.uniform(-1, 1, (n_q, 2)).tolist(),
                "k": rng.uniform(-1, 1, (n_k, 2)).tolist(),
                "v": rng.uniform(-1, 1, (n_k, 1)).tolist(),
                "dropout": {"p": p, "seed": seed}, "include": ["dropout_keep"]}
        got = np.array(post("/v1/attention", body)["dropout_keep"], dtype=float)
        assert np.array_equal(got, dropout_keep(seed, p, n_q, n_k)), (n_q, n_k, seed, p)
        cells += n_q * n_k
    print("generator port matches attnd's dropout_keep (%d cells)" % cells, file=sys.stderr)


def main():
    check_generator()
    rng = np.random.default_rng(20261207)
    A = attention_case
    full_row = np.ones((4, 6))
    full_row[2] = 0
    full_row[0, 1] = full_row[3, 4] = full_row[1, 0] = 0
    sink_mask = np.ones((5, 4))
    sink_mask[1] = 0
    sink_mask[3, 2] = 0
    attention = [
        A("plain", rng, 3, 5, 4, 3),
        A("plain, n_q > n_k", rng, 6, 2, 3, 2),
        A("scale given", rng, 4, 4, 3, 2, scale=0.37),
        A("causal", rng, 5, 7, 4, 3, mask="causal"),
        A("causal, n_q > n_k (first rows fully masked)", rng, 6, 4, 2, 1, mask="causal"),
        A("mask matrix with a fully masked row", rng, 4, 6, 5, 2, mask=full_row),
        A("key padding vector", rng, 3, 5, 4, 4, mask=np.array([1, 0, 1, 1, 0])),
        A("bias", rng, 4, 3, 6, 3, bias=True),
        A("bias with causal", rng, 3, 5, 4, 2, bias=True, mask="causal"),
        A("rope half", rng, 4, 6, 8, 3, rope={"base": 10000}),
        A("rope interleaved, fraction 0.5", rng, 3, 5, 8, 2,
          rope={"base": 500, "layout": "interleaved", "fraction": 0.5}),
        A("rope half, fraction 0.5 of d_k 6 (r 2)", rng, 2, 4, 6, 2,
          rope={"base": 100, "fraction": 0.5}),
        A("rope explicit positions", rng, 3, 4, 6, 2,
          rope={"base": 50, "layout": "half", "positions_q": [7, 2.5, 11],
                "positions_k": [0, 3, 1, 9.25]}),
        A("rope interleaved, explicit positions", rng, 2, 3, 4, 3,
          rope={"base": 10000, "layout": "interleaved", "positions_q": [4, 5],
                "positions_k": [-1, 0, 6]}),
        A("softcap", rng, 4, 5, 8, 3, softcap=0.8, scale=1.0),
        A("alibi", rng, 3, 6, 4, 2, alibi=0.25),
        A("alibi with causal", rng, 5, 5, 3, 3, alibi=0.5, mask="causal"),
        A("window with sink_tokens", rng, 8, 9, 4, 2, window={"left": 2, "right": 1},
          sink_tokens=2),
        A("window left only, causal, sink_tokens", rng, 7, 7, 3, 2,
          window={"left": 1, "right": None}, sink_tokens=1, mask="causal"),
        A("window that empties rows", rng, 6, 3, 3, 2, window={"left": 0, "right": 0}),
        A("sink_logit", rng, 4, 5, 4, 3, sink_logit=0.3),
        A("sink_logit with a fully masked row", rng, 5, 4, 3, 2, sink_logit=-0.7,
          mask=sink_mask),
        A("sink_logit with causal, n_q > n_k", rng, 5, 3, 4, 2, sink_logit=1.5, mask="causal"),
        A("all variants (no dropout)", rng, 6, 8, 8, 4, scale=0.45, bias=True,
          rope={"base": 100, "layout": "interleaved", "fraction": 0.75}, softcap=1.2,
          alibi=0.2, mask="causal", window={"left": 3, "right": 0}, sink_tokens=1,
          sink_logit=0.1),
        A("all variants, rope half with positions, mask matrix", rng, 4, 5, 6, 3, bias=True,
          rope={"base": 1000, "positions_q": [3, 4, 5, 6], "positions_k": [0, 2, 4, 6, 8]},
          softcap=0.9, alibi=0.3, mask=np.array([[1, 1, 0, 1, 1], [0, 0, 0, 0, 0],
                                                 [1, 1, 1, 1, 1], [1, 0, 1, 1, 1]]),
          window={"left": 2, "right": 1}, sink_tokens=1, sink_logit=-0.2),
        A("dropout", rng, 5, 6, 4, 3, dropout={"p": 0.3, "seed": 42}),
        A("dropout with causal and softcap", rng, 6, 7, 5, 2, dropout={"p": 0.4, "seed": 7},
          mask="causal", softcap=0.7),
    ]
    M = multihead_case
    causal5 = np.tril(np.ones((5, 5)))
    causal5[3, 0] = 0
    multihead = [
        M("self, in_out", rng, 4, 4, 8, 2),
        M("self, out_in", rng, 5, 5, 6, 3, layout="out_in"),
        M("cross, in_out", rng, 3, 5, 8, 2, cross=True),
        M("cross, out_in, causal", rng, 3, 6, 4, 1, cross=True, layout="out_in",
          mask="causal"),
        M("self, GQA 4 heads 2 kv heads, in_out, mask matrix", rng, 5, 5, 8, 4, kv_heads=2,
          mask=causal5),
        M("cross, MQA 3 heads 1 kv head, out_in, causal, b_q and b_o only", rng, 4, 6, 6, 3,
          kv_heads=1, cross=True, layout="out_in", mask="causal", biases="qo"),
    ]
    json.dump({"generator": "tests/gen_torch_backward.py", "torch": torch.__version__,
               "attention": attention, "multihead": multihead}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
