#!/usr/bin/python3
"""Generates tests/data/multihead_torch.json: /v1/multihead requests and what
torch.nn.MultiheadAttention (float64, batch_first=True) answers for the same
numbers. Run by hand with Debian's python3-torch; the output is committed, so the
test suite needs no torch.

    /usr/bin/python3 tests/gen_torch_fixtures.py > tests/data/multihead_torch.json

attnd's weights are (in, out) (Q = X W_Q) unless weight_layout is "out_in";
torch's in_proj_weight and out_proj.weight are (out, in), so the in_out weights are
transposed on the way in. torch's boolean attn_mask means True = blocked, the
opposite of attnd's default "keep" semantics; a float attn_mask is added to the
scaled scores, which is what attnd's bias is.
"""
import json
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def mha(x_q, x_kv, w, b, heads, torch_mask=None, key_padding=None):
    d = x_q.shape[1]
    m = torch.nn.MultiheadAttention(d, heads, bias=True, batch_first=True)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.tensor(np.concatenate([w["q"], w["k"], w["v"]])))
        m.in_proj_bias.copy_(torch.tensor(np.concatenate([b["q"], b["k"], b["v"]])))
        m.out_proj.weight.copy_(torch.tensor(w["o"]))
        m.out_proj.bias.copy_(torch.tensor(b["o"]))
        out, weights = m(torch.tensor(x_q)[None], torch.tensor(x_kv)[None],
                         torch.tensor(x_kv)[None], attn_mask=torch_mask,
                         key_padding_mask=key_padding, need_weights=True,
                         average_attn_weights=False)
    return out[0].numpy(), weights[0].numpy()


def case(name, rng, n_q, n_k, d, heads, cross, layout, mask=None, bias=None, key_padding=None):
    x_q = rng.uniform(-1, 1, (n_q, d))
    x_kv = rng.uniform(-1, 1, (n_k, d)) if cross else x_q
    w_torch = {k: rng.uniform(-1, 1, (d, d)) / np.sqrt(d) for k in "qkvo"}  # (out, in)
    b = {k: rng.uniform(-0.5, 0.5, d) for k in "qkvo"}
    torch_mask = None
    if bias is not None:
        torch_mask = torch.tensor(bias.copy())
        if mask is not None:
            torch_mask = torch_mask.masked_fill(torch.tensor(mask == 0), float("-inf"))
    elif mask is not None:
        torch_mask = torch.tensor(mask == 0)  # True = blocked
    kp = torch.tensor(key_padding == 0)[None] if key_padding is not None else None
    out, weights = mha(x_q, x_kv, w_torch, b, heads, torch_mask, kp)

    req = {"heads": heads, "weight_layout": layout}
    if cross:
        req["x_q"], req["x_kv"] = x_q.tolist(), x_kv.tolist()
    else:
        req["x"] = x_q.tolist()
    for k in "qkvo":
        w = w_torch[k] if layout == "out_in" else w_torch[k].T
        req["w_" + k] = w.tolist()
        req["b_" + k] = b[k].tolist()
    if mask is not None:
        req["mask"] = mask.astype(int).tolist()
    if key_padding is not None:
        req["mask"] = key_padding.astype(int).tolist()
    if bias is not None:
        req["bias"] = bias.tolist()
    return {"name": name, "request": req,
            "expected": {"output": out.tolist(), "weights": weights.tolist()}}


def main():
    rng = np.random.default_rng(20261129)
    causal = np.tril(np.ones((4, 4)))
    cases = [
        case("self, in_out", rng, 4, 4, 8, 2, False, "in_out"),
        case("self, out_in", rng, 5, 5, 6, 3, False, "out_in"),
        case("cross, in_out", rng, 3, 5, 8, 4, True, "in_out"),
        case("cross, out_in", rng, 2, 6, 4, 1, True, "out_in"),
        case("self, causal mask", rng, 4, 4, 8, 2, False, "in_out", mask=causal),
        case("cross, bias", rng, 3, 4, 6, 2, True, "out_in", bias=rng.uniform(-1, 1, (3, 4))),
        case("self, mask and bias", rng, 4, 4, 4, 2, False, "in_out", mask=causal,
             bias=rng.uniform(-1, 1, (4, 4))),
        case("cross, key padding", rng, 3, 5, 8, 2, True, "in_out",
             key_padding=np.array([1, 1, 0, 1, 0])),
    ]
    json.dump({"generator": "tests/gen_torch_fixtures.py", "torch": torch.__version__,
               "cases": cases}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
