#!/usr/bin/python3
"""tests/http/precision_reference.py — attention by the precision rules, written from
other parts than attnd's: numpy's float16, a bfloat16 rounding on the double's bits, exact
sums in fractions for float32 products, and Python's math.exp and math.log (the same
libm functions the rules name).

Reads a JSON list of problems on stdin, each {"q", "k", "v", "bias"?, "allow"? (n_q x
n_k of 0/1: the mask, causal and a window together), "alibi"? (the slope m of
−m·|i + n_k − n_q − j|), "softcap"?, "sink_logit"?, "rope"?, "keep"? and "dropout_p"
(dropout's kept cells as attnd drew them, and p), "scale", "format", "accumulate"}, and prints for each the steps
{"scores", "scaled", "masked", "weights", "output", "lse"} as lists of doubles, with
non-finite cells as null (as attnd writes them): JSON's shortest repr of a double reads
back as the same bits, so the test compares bits. A problem with "heads" is multi-head
({"x_q", "x_kv", "w_q", "w_k", "w_v", "w_o" (in_out), "b_q"…"b_o"?, "heads",
"kv_heads", "bias"?, "allow"?, "scale", "format", "accumulate"}): its projections as
kernels run them (the format's operands summed into the accumulator, the bias added
there, the result rounded to the format), each head as above, and it answers {"q", "k",
"v", "scores", "scaled", "masked", "weights", "head_outputs" (h x n_q x d_k), "concat",
"output", "lse" (h x n_q)}. A single problem with "grad_output" (dO) adds the backward
pass by the same rules: {"grad_v", "grad_weights", "delta", "grad_masked", "grad_scaled",
"grad_scores", "grad_q_rope", "grad_k_rope", "grad_q", "grad_k", "grad_sink_logit"}; a
multi-head one with "grad_output" (and "cross" for cross-attention) multi-head's:
{"grad_w_o", "grad_b_o", "grad_weights", "delta", "grad_masked", "grad_sink_logit" (a list
a head), "grad_q", "grad_k", "grad_v", "grad_w_q", "grad_w_k", "grad_w_v" (in_out),
"grad_b_q", "grad_b_k", "grad_b_v", "grad_x" or "grad_x_q" and "grad_x_kv", "grad_bias"}.

The rules (api/openapi.yaml, Precision): inputs rounded to the format; each product's
partial sums rounded once to the accumulator (a fused multiply-add); element-wise steps
in float64 rounded once to the accumulator, the scale first; row sums in key order; the
weights rounded to the format before weights @ V, the output last.
"""
import json
import math
import struct
import sys
from fractions import Fraction

import warnings

import numpy as np

warnings.filterwarnings("ignore", category=RuntimeWarning)  # numpy's cast past the range: inf


def bf16(x):
    """x rounded to bfloat16 (to nearest, ties to even) on the double's bits; subnormals by
    their quantum 2^-133, past the largest finite value ±inf."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    if abs(x) < 2.0 ** -126:
        return round(x / 2.0 ** -133) * 2.0 ** -133  # exact quotient; round() ties to even
    (u,) = struct.unpack("<Q", struct.pack("<d", x))
    drop = 52 - 7
    half = (1 << (drop - 1)) - 1 + ((u >> drop) & 1)
    u = ((u + half) >> drop) << drop
    (r,) = struct.unpack("<d", struct.pack("<Q", u))
    return math.copysign(math.inf, x) if abs(r) > float.fromhex("0x1.fep127") else r


def f32_exact(v):
    """A Fraction (or float) rounded once to float32: the nearest of float32's neighbours
    of the double nearest it, ties to the even pattern."""
    v = Fraction(v)
    guess = np.float32(float(v))
    if np.isinf(guess):
        return float(guess)
    best = None
    for cand in (np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))):
        if np.isinf(cand):
            continue
        d = abs(Fraction(float(cand)) - v)
        even = int(np.array(cand, dtype=np.float32).view(np.uint32)) % 2 == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, float(cand))
    top = Fraction(float(np.finfo(np.float32).max))
    ulp = Fraction(2) ** (127 - 23)
    if abs(v) >= top + ulp / 2:
        return math.copysign(math.inf, float(v))
    return best[1]


def rounder(fmt):
    if fmt == "float16":
        return lambda x: float(np.float16(x))
    if fmt == "bfloat16":
        return bf16
    return lambda x: float(np.float32(x))


def fma(a, b, c, acc):
    """c + a·b rounded once to acc; a·b + c exact as a Fraction for float32, and exact in a
    double for the 16-bit formats (their products have 22 and 16 bits, the sums of these
    problems' magnitudes fit 53)."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return rounder(acc)(a * b + c)
    if acc == "float32":
        return f32_exact(Fraction(a) * Fraction(b) + Fraction(c))
    return rounder(acc)(a * b + c)


def attention(p):
    fmt = p["format"]
    acc = fmt if p.get("accumulate") == "same" else "float32"
    rf, ra = rounder(fmt), rounder(acc)
    q = [[rf(x) for x in row] for row in p["q"]]
    k = [[rf(x) for x in row] for row in p["k"]]
    v = [[rf(x) for x in row] for row in p["v"]]
    bias = [[rf(x) for x in row] for row in p["bias"]] if p.get("bias") else None
    n_q, n_k, d_v = len(q), len(k), len(v[0])
    rope = p.get("rope")  # {"base", "rotated", "interleaved"}: q and k turned as held
    if rope:
        q = [[rf(x) for x in row] for row in rotate(q, [n_k - n_q + i for i in range(n_q)], rope)]
        k = [[rf(x) for x in row] for row in rotate(k, list(range(n_k)), rope)]
    allow = p.get("allow") or [[1] * n_k for _ in range(n_q)]
    scale = ra(p["scale"])
    out = {s: [] for s in ("scores", "scaled", "softcapped", "masked", "weights", "output", "lse",
                           "sink_weight")}
    out["q_rope"], out["k_rope"] = q, k
    cap = ra(p["softcap"]) if p.get("softcap") else None
    sink = ra(p["sink_logit"]) if p.get("sink_logit") is not None else None
    for i in range(n_q):
        scores = []
        for j in range(n_k):
            s = 0.0
            for a, b in zip(q[i], k[j]):
                s = fma(a, b, s, acc)
            scores.append(s)
        scaled = [ra(s * scale) for s in scores]
        capped = [ra(cap * math.tanh(x / cap)) for x in scaled] if cap else scaled
        at = float(i + n_k - n_q)  # the query's position, for ALiBi
        alibi = p.get("alibi")
        masked = []
        for j, x in enumerate(capped):
            if bias or alibi:  # one float64 sum, rounded once
                x = ra((x + bias[i][j] if bias else x) - (alibi * abs(at - j) if alibi else 0.0))
            masked.append(x if allow[i][j] else -math.inf)
        visible = [j for j in range(n_k) if allow[i][j]]
        total = 0.0
        weights = [0.0] * n_k
        shifted_row, exp_row = [math.nan] * n_k, [0.0] * n_k  # null and 0 where blocked
        lse = -math.inf
        if visible or sink is not None:
            top = -math.inf  # a NaN, once met, stays the max (as attnd's loop keeps it)
            for x in [masked[j] for j in visible] + ([sink] if sink is not None else []):
                if x > top or math.isnan(x):
                    top = x
            exps = [0.0] * n_k
            total = 0.0
            for j in visible:
                shifted = ra(masked[j] - top)
                exps[j] = ra(math.exp(shifted)) if not math.isnan(shifted) else math.nan
                total = ra(total + exps[j])
                shifted_row[j], exp_row[j] = shifted, exps[j]
            if sink is not None:  # the sink's term, added last
                e_sink = ra(math.exp(ra(sink - top)))
                total = ra(total + e_sink)
                out["sink_weight"].append(ra(e_sink / total))
            for j in visible:
                weights[j] = rf(ra(exps[j] / total))
            lse = ra(top + math.log(total)) if total != 0 else -math.inf
        mix = weights
        if p.get("keep") is not None:  # dropout: the kept weights, scaled, take their place
            factor = ra(1.0 / (1.0 - p["dropout_p"]))
            mix = [rf(ra(w * kp * factor)) for w, kp in zip(weights, p["keep"][i])]
            out.setdefault("dropped", []).append(mix)
        output = []
        for c in range(d_v):
            o = 0.0
            for j in range(n_k):
                o = fma(mix[j], v[j][c], o, acc)
            output.append(rf(o))
        for name, row in (("scores", scores), ("scaled", scaled), ("softcapped", capped),
                          ("masked", masked), ("weights", weights), ("output", output)):
            out[name].append(row)
        out["lse"].append(lse)
        out.setdefault("shifted", []).append(shifted_row)
        out.setdefault("exp", []).append(exp_row)
        out.setdefault("row_sum", []).append(total if visible or sink is not None else 0.0)
        if p.get("explain") == i:  # the worked row's partial sums, key by key
            out["partial_sums"] = []
            for j in range(n_k):
                sums, acc_sum = [], 0.0
                for a, b in zip(q[i], k[j]):
                    acc_sum = fma(a, b, acc_sum, acc)
                    sums.append(acc_sum)
                out["partial_sums"].append(sums)
    return out


def rotate(rows, positions, rope):
    """Each row's pairs turned in float64 as attnd turns them: θ_c = pos · base^(−2c/r),
    (x_a, x_b) → (x_a cos − x_b sin, x_b cos + x_a sin), pairs (c, c + r/2) or (2c, 2c + 1);
    with "turn_back", by −θ: (x_a cos + x_b sin, x_b cos − x_a sin)."""
    r = rope["rotated"]
    half = r // 2
    inv = [math.pow(rope["base"], -2.0 * c / r) for c in range(half)]
    out = []
    for row, pos in zip(rows, positions):
        pos = float(pos)
        dst = list(row)
        for c in range(half):
            a, b = (2 * c, 2 * c + 1) if rope.get("interleaved") else (c, c + half)
            cs, sn = math.cos(pos * inv[c]), math.sin(pos * inv[c])
            if rope.get("turn_back"):
                sn = -sn
            dst[a] = row[a] * cs - row[b] * sn
            dst[b] = row[b] * cs + row[a] * sn
        out.append(dst)
    return out


def backward(out, p):
    """The gradients by the rules, from the forward's steps as held (out): dO rounded to
    the format; each product's operands in the format summed into the accumulator (dS
    rounded to the format before dS·K' and dSᵀ·Q'); element-wise steps in float64 rounded
    once to the accumulator; grad_q, grad_k, grad_v rounded to the format last, after RoPE's
    turn back in float64."""
    fmt = p["format"]
    acc = fmt if p.get("accumulate") == "same" else "float32"
    rf, ra = rounder(fmt), rounder(acc)
    d_o = [[rf(x) for x in row] for row in p["grad_output"]]
    v = [[rf(x) for x in row] for row in p["v"]]
    w, o = out["weights"], out["output"]
    mix = out.get("dropped") or w
    n_q, n_k, d_v = len(w), len(w[0]), len(v[0])
    allow = p.get("allow") or [[1] * n_k for _ in range(n_q)]
    g = {"grad_v": [[rf(fold([mix[i][j] for i in range(n_q)], [d_o[i][c] for i in range(n_q)], acc))
                     for c in range(d_v)] for j in range(n_k)]}
    dp = [[fold(d_o[i], v[j], acc) for j in range(n_k)] for i in range(n_q)]
    if p.get("keep") is not None:
        factor = ra(1.0 / (1.0 - p["dropout_p"]))
        dp = [[ra(x * kp * factor) for x, kp in zip(row, keep)] for row, keep in zip(dp, p["keep"])]
    delta = [fold(d_o[i], o[i], acc) for i in range(n_q)]
    ds = [[ra(w[i][j] * (dp[i][j] - delta[i])) + 0.0 if allow[i][j] else 0.0 for j in range(n_k)]
          for i in range(n_q)]
    through = ds
    if p.get("softcap"):
        cap = ra(p["softcap"])
        through = [[ra(x * (1.0 - (c / cap) * (c / cap))) for x, c in zip(row, crow)]
                   for row, crow in zip(ds, out["softcapped"])]
    scale = ra(p["scale"])
    scores = [[ra(x * scale) for x in row] for row in through]
    dsf = [[rf(x) for x in row] for row in scores]
    q, k = out["q_rope"], out["k_rope"]
    d_k = len(q[0])
    gq = [[fold(dsf[i], [k[j][t] for j in range(n_k)], acc) for t in range(d_k)] for i in range(n_q)]
    gk = [[fold([dsf[i][j] for i in range(n_q)], [q[i][t] for i in range(n_q)], acc)
           for t in range(d_k)] for j in range(n_k)]
    g.update(grad_weights=dp, delta=delta, grad_masked=ds, grad_scaled=through, grad_scores=scores,
             grad_q_rope=gq, grad_k_rope=gk)
    rope = p.get("rope")
    if rope:
        back = dict(rope, turn_back=True)
        gq = rotate(gq, [n_k - n_q + i for i in range(n_q)], back)
        gk = rotate(gk, list(range(n_k)), back)
    g["grad_q"] = [[rf(x) for x in row] for row in gq]
    g["grad_k"] = [[rf(x) for x in row] for row in gk]
    sink = 0.0
    for sw, d in zip(out["sink_weight"], delta):  # −Σ w·D, one fused multiply-add a row
        sink = fma(-sw, d, sink, acc)
    g["grad_sink_logit"] = sink
    out.update(g)
    return out


def pitfall(out, p):
    """The notes' mistakes from masked as held: "no_max_subtraction" (e^masked, a row's sum
    in key order) or "column_softmax" (shift by each column's max, sums down the rows), the
    weights rounded to the accumulator and then the format, and weights @ V as a product."""
    fmt = p["format"]
    acc = fmt if p.get("accumulate") == "same" else "float32"
    rf, ra = rounder(fmt), rounder(acc)
    m = out["masked"]
    n_q, n_k = len(m), len(m[0])
    e = [[0.0] * n_k for _ in range(n_q)]
    if p["pitfall"] == "no_max_subtraction":
        for i in range(n_q):
            total = 0.0
            for j in range(n_k):
                e[i][j] = ra(math.exp(m[i][j])) if m[i][j] < 709 else math.inf
                total = ra(total + e[i][j])
            for j in range(n_k):
                e[i][j] = (e[i][j], rf(ra(div(e[i][j], total))))
    else:
        for j in range(n_k):
            top = max(m[i][j] for i in range(n_q))
            total = 0.0
            for i in range(n_q):
                shifted = ra(m[i][j] - top) if top != -math.inf else math.nan
                e[i][j] = ra(math.exp(shifted)) if shifted == shifted else math.nan
                total = ra(total + e[i][j])
            for i in range(n_q):
                e[i][j] = (e[i][j], rf(ra(div(e[i][j], total))))
    out["pitfall_exp"] = [[x[0] for x in row] for row in e]
    w = [[x[1] for x in row] for row in e]
    out["pitfall_weights"] = w
    v = [[rf(x) for x in row] for row in p["v"]]
    out["pitfall_output"] = [[rf(fold(w[i], [row[c] for row in v], acc)) for c in range(len(v[0]))]
                             for i in range(n_q)]
    return out


def div(a, b):
    """a / b as IEEE divides: 0/0 NaN, x/0 ±inf (Python raises)."""
    if b != 0:
        return a / b
    if a == 0 or a != a:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def fold(a, b, acc):
    s = 0.0
    for x, y in zip(a, b):
        s = fma(x, y, s, acc)
    return s


def project(x, w, b, fmt, acc):
    """x·W + b by the rules, W as (in, out)."""
    rf, ra = rounder(fmt), rounder(acc)
    xf = [[rf(v) for v in row] for row in x]
    wf = [[rf(v) for v in row] for row in w]
    bf = [rf(v) for v in b] if b else None
    out = []
    for row in xf:
        o = []
        for j in range(len(wf[0])):
            s = 0.0
            for t, a in enumerate(row):
                s = fma(a, wf[t][j], s, acc)
            if bf:
                s = ra(s + bf[j])
            o.append(rf(s))
        out.append(o)
    return out


def multihead(p):
    fmt = p["format"]
    acc = fmt if p.get("accumulate") == "same" else "float32"
    q = project(p["x_q"], p["w_q"], p.get("b_q"), fmt, acc)
    k = project(p["x_kv"], p["w_k"], p.get("b_k"), fmt, acc)
    v = project(p["x_kv"], p["w_v"], p.get("b_v"), fmt, acc)
    h, kv = p["heads"], p["kv_heads"]
    d_k = len(q[0]) // h
    out = {"q": q, "k": k, "v": v}
    names = ("scores", "scaled", "masked", "weights")
    for name in names + ("head_outputs", "lse"):
        out[name] = []
    heads = []  # each head's problem and forward, for the backward
    for i in range(h):
        g = i * kv // h
        cols = lambda m, c: [row[c * d_k:(c + 1) * d_k] for row in m]
        per_head = lambda x: x[i] if isinstance(x, list) else x
        hp = {"q": cols(q, i), "k": cols(k, g), "v": cols(v, g), "bias": p.get("bias"),
              "allow": p.get("allow"), "scale": p["scale"], "format": fmt,
              "accumulate": p.get("accumulate"), "alibi": per_head(p.get("alibi")),
              "softcap": p.get("softcap"), "sink_logit": per_head(p.get("sink_logit")),
              "rope": p.get("rope"), "dropout_p": p.get("dropout_p"),
              "keep": p["keep"][i] if p.get("keep") else None}
        a = attention(hp)
        heads.append((hp, a))
        for name in names:
            out[name].append(a[name])
        out["head_outputs"].append(a["output"])
        out["lse"].append(a["lse"])
    out["concat"] = [sum((out["head_outputs"][i][r] for i in range(h)), []) for r in range(len(q))]
    out["output"] = project(out["concat"], p["w_o"], p.get("b_o"), fmt, acc)
    if "grad_output" in p:
        mh_backward(out, p, heads, d_k)
    return out


def column(m, c):
    return [row[c] for row in m]


def column_sums(m, fmt, acc):
    """A bias's gradient: m's columns summed down the rows in acc, each partial sum
    rounded once, then rounded to the format."""
    rf, ra = rounder(fmt), rounder(acc)
    sums = []
    for c in range(len(m[0])):
        s = 0.0
        for row in m:
            s = ra(s + row[c])
        sums.append(rf(s))
    return sums


def project_back(x, w, dy, fmt, acc):
    """One projection Y = X·W (+ b) backwards, W as (in, out): dW = Xᵀ·dY and db rounded
    to the format, dX = dY·Wᵀ left in the accumulator."""
    rf = rounder(fmt)
    xf = [[rf(a) for a in row] for row in x]
    wf = [[rf(a) for a in row] for row in w]
    dw = [[rf(fold(column(xf, i), column(dy, o), acc)) for o in range(len(dy[0]))]
          for i in range(len(xf[0]))]
    dx = [[fold(row, wf[i], acc) for i in range(len(wf))] for row in dy]
    return dw, column_sums(dy, fmt, acc), dx


def mh_backward(out, p, heads, d_k):
    """Multi-head's backward by the rules (core/precision.h): dO rounded to the format;
    grad_w_o = concatᵀ·dO and grad_concat = dO·W_Oᵀ as products, grad_concat rounded to the
    format (each head's dO); each head's backward above; GQA's grad_k and grad_v, the heads'
    dS into grad_bias and the biases' column sums added in the accumulator in order, each
    partial sum rounded once; grad_x_kv = the two products added once (and grad_x =
    grad_x_q + grad_x_kv once more); the layer's gradients rounded to the format last."""
    fmt = p["format"]
    acc = fmt if p.get("accumulate") == "same" else "float32"
    rf, ra = rounder(fmt), rounder(acc)
    d_o = [[rf(x) for x in row] for row in p["grad_output"]]
    concat, w_o = out["concat"], [[rf(x) for x in row] for row in p["w_o"]]
    n_q, d = len(d_o), len(d_o[0])
    g = {"grad_w_o": [[rf(fold(column(concat, i), column(d_o, o), acc)) for o in range(d)]
                      for i in range(d)],
         "grad_b_o": column_sums(d_o, fmt, acc)}
    g_concat = [[rf(fold(row, w_o[i], acc)) for i in range(d)] for row in d_o]
    h, kv = p["heads"], p["kv_heads"]
    n_k = len(p["x_kv"])
    gq = [[0.0] * d for _ in range(n_q)]
    gk = [[0.0] * (kv * d_k) for _ in range(n_k)]
    gv = [[0.0] * (kv * d_k) for _ in range(n_k)]
    g_bias = [[0.0] * n_k for _ in range(n_q)]
    for name in ("grad_weights", "delta", "grad_masked", "grad_sink_logit"):
        g[name] = []
    for i, (hp, a) in enumerate(heads):
        grp = i * kv // h
        hb = backward(a, dict(hp, grad_output=[row[i * d_k:(i + 1) * d_k] for row in g_concat]))
        for name in ("grad_weights", "delta", "grad_masked", "grad_sink_logit"):
            g[name].append(hb[name])
        for r in range(n_q):
            gq[r][i * d_k:(i + 1) * d_k] = hb["grad_q"][r]
        for r in range(n_k):
            for c in range(d_k):
                gk[r][grp * d_k + c] = ra(gk[r][grp * d_k + c] + hb["grad_k"][r][c])
                gv[r][grp * d_k + c] = ra(gv[r][grp * d_k + c] + hb["grad_v"][r][c])
        for r in range(n_q):
            for c in range(n_k):
                g_bias[r][c] = ra(g_bias[r][c] + hb["grad_masked"][r][c])
    gk = [[rf(x) for x in row] for row in gk]
    gv = [[rf(x) for x in row] for row in gv]
    g.update(grad_q=gq, grad_k=gk, grad_v=gv, grad_bias=g_bias)
    g["grad_w_q"], g["grad_b_q"], px_q = project_back(p["x_q"], p["w_q"], gq, fmt, acc)
    g["grad_w_k"], g["grad_b_k"], px_k = project_back(p["x_kv"], p["w_k"], gk, fmt, acc)
    g["grad_w_v"], g["grad_b_v"], px_v = project_back(p["x_kv"], p["w_v"], gv, fmt, acc)
    px_kv = [[ra(a + b) for a, b in zip(ra_row, rb_row)] for ra_row, rb_row in zip(px_k, px_v)]
    if p.get("cross"):
        g["grad_x_q"] = [[rf(x) for x in row] for row in px_q]
        g["grad_x_kv"] = [[rf(x) for x in row] for row in px_kv]
    else:  # x is X_q and X_kv at once
        g["grad_x"] = [[rf(ra(a + b)) for a, b in zip(qa, kb)] for qa, kb in zip(px_q, px_kv)]
    out.update(g)


def finite_or_null(x):
    if isinstance(x, dict):
        return {key: finite_or_null(y) for key, y in x.items()}
    if isinstance(x, list):
        return [finite_or_null(y) for y in x]
    return x if math.isfinite(x) else None


if __name__ == "__main__":
    problems = json.loads(sys.stdin.read())
    print(json.dumps([finite_or_null(multihead(p) if "heads" in p
                                     else pitfall(attention(p), p) if "pitfall" in p
                                     else backward(attention(p), p) if "grad_output" in p
                                     else attention(p)) for p in problems]))
