#!/usr/bin/python3
"""A float16 attention kernel checked against attnd's float64 oracle.

    /usr/bin/python3 docs/examples/verify_fp16.py [HOST:PORT]   (default localhost:8080,
                                                               or $ATTND)

kernel() computes attention as a plain float16 kernel does (FlashAttention's way): Q, K
and V in float16, every product's sum in float32 in index order, softmax in float32, the
weights rounded to float16 before weights @ V, the output rounded to float16 last. Put
your own kernel in its place. The script sends the inputs and the kernel's answer for a
batch of problems (batch x heads) to the V2 model `verify` as binary FP16 tensors, with
numpy and the standard library alone, and prints each problem's verdict by the flash
rule: the largest error within twice a naive float16 kernel's, plus a small atol.
"""
import http.client
import json
import os
import struct
import sys

import numpy as np

F16, F32 = np.float16, np.float32


def kernel(q, k, v, scale):
    """softmax(q @ k.T * scale) @ v of one problem, as a float16 kernel computes it."""
    n_q, d = q.shape
    scores = np.zeros((n_q, k.shape[0]), F32)
    for c in range(d):  # float16 products are exact in float32; each sum is rounded once
        scores = (scores + q[:, c, None].astype(F32) * k[None, :, c].astype(F32)).astype(F32)
    scores = (scores * F32(scale)).astype(F32)
    shifted = (scores - scores.max(axis=1, keepdims=True)).astype(F32)
    e = np.exp(shifted.astype(np.float64)).astype(F32)
    total = np.zeros((n_q, 1), F32)
    for j in range(e.shape[1]):
        total = (total + e[:, j, None]).astype(F32)
    weights = (e / total).astype(F16)  # as FlashAttention converts P before P @ V
    out = np.zeros((n_q, v.shape[1]), F32)
    for j in range(v.shape[0]):
        out = (out + weights[:, j, None].astype(F32) * v[None, j, :].astype(F32)).astype(F32)
    return out.astype(F16)


def problems(seed=0, batch=1, heads=2, n=16, d=8):
    """Q, K, V of batch x heads problems, (B, n, d) each, in float16."""
    rng = np.random.default_rng(seed)
    shape = (batch * heads, n, d)
    return [rng.standard_normal(shape).astype(F16) for _ in range(3)]


def infer(address, tensors, outputs):
    """POSTs float16 tensors {name: array} to /v2/models/verify/infer as Triton's binary
    tensor data; returns the answer's outputs {name: (datatype, shape, bytes)}."""
    header = {
        "inputs": [{"name": name, "shape": list(t.shape), "datatype": "FP16",
                    "parameters": {"binary_data_size": t.nbytes}} for name, t in tensors.items()],
        "outputs": [{"name": name, "parameters": {"binary_data": True}} for name in outputs],
    }
    head = json.dumps(header).encode()
    body = head + b"".join(t.astype("<f2").tobytes() for t in tensors.values())
    host, _, port = address.partition(":")
    conn = http.client.HTTPConnection(host, int(port or 8080), timeout=60)
    conn.request("POST", "/v2/models/verify/infer", body,
                 {"Content-Type": "application/octet-stream",
                  "Inference-Header-Content-Length": str(len(head))})
    res = conn.getresponse()
    answer = res.read()
    if res.status != 200:
        sys.exit(f"attnd answered {res.status}: {answer.decode()}")
    n = int(res.getheader("Inference-Header-Content-Length"))
    at, out = n, {}
    for o in json.loads(answer[:n])["outputs"]:
        size = o["parameters"]["binary_data_size"]
        out[o["name"]] = (o["datatype"], o["shape"], answer[at:at + size])
        at += size
    return out


def strings(raw):
    """A BYTES tensor's elements: each a 4-byte little-endian length, then its bytes."""
    out, at = [], 0
    while at < len(raw):
        (length,) = struct.unpack_from("<I", raw, at)
        out.append(raw[at + 4:at + 4 + length].decode())
        at += 4 + length
    return out


def check(address, scale_of):
    """Runs kernel() on every problem (scale_of(d) its scale) and prints attnd's verdicts."""
    q, k, v = problems()
    output = np.stack([kernel(q[b], k[b], v[b], scale_of(q.shape[2])) for b in range(len(q))])
    out = infer(address, {"Q": q, "K": k, "V": v, "OUTPUT": output}, ["VERDICT", "REPORT"])
    verdicts = np.frombuffer(out["VERDICT"][2], np.uint8)
    for b, report in enumerate(strings(out["REPORT"][2])):
        c = json.loads(report)["checks"][0]
        sign = "<=" if c["pass"] else ">"
        print(f"problem {b}: {'pass' if verdicts[b] else 'fail'}  max |candidate - gold| "
              f"{c['max_abs_error']:.3g} {sign} bound {c['bound']:.3g}")
        for w in [] if c["pass"] else c["worst"][:3]:
            print(f"  worst {w['cell']}: candidate {w['candidate']:.4g}  gold {w['gold']:.4g}  "
                  f"naive {w['naive']:.4g}")
    return bool(verdicts.all())


if __name__ == "__main__":
    address = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ATTND", "localhost:8080")
    sys.exit(0 if check(address, lambda d: 1 / np.sqrt(d)) else 1)
