#!/usr/bin/python3
"""bench/pyservice.py — POST /v1/attention and /v2/models/attention/infer in FastAPI + numpy, the service attnd is measured against.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/pyservice.py --port N [--workers 2]

prints "pyservice listening on port N" once uvicorn's workers are forked, then serves
until SIGTERM. Debian's packages only: python3-fastapi, python3-uvicorn (with uvloop and
httptools when installed, as uvicorn picks them), python3-numpy, python3-ujson.

It is written the way a careful Python developer would write this service for speed:
the body is read once and parsed with ujson (no pydantic model: validating millions of
floats one object at a time would make the comparison unfair to Python), the math is
numpy on the same OpenBLAS, each matrix becomes lists with ndarray.tolist(), and the
answer is FastAPI's UJSONResponse returned directly (no jsonable_encoder pass over
millions of numbers). Numbers are shortest round trip (ujson 5 writes repr's digits).

What it computes is the contract of DESIGN.md for POST /v1/attention: q as a matrix or
a vector, k, v, mask (matrix, key-padding vector or "causal", with mask_semantics),
bias, scale, include, labels, round; the same response fields and steps (d_k, scale,
mask_semantics, shapes, steps, scores, scaled, masked with null where blocked, weights,
output, summary, warnings); fully masked rows get weights 0, never NaN; softmax
subtracts the row's max. Errors are problem+json 400/422 with a pointer, but without
attnd's hints and nearest-field suggestions: the bench only sends valid requests.

POST /v2/models/attention/infer is the V2 protocol's attention model with binary
tensors as tritonclient.http sends them (DESIGN.md, docs/v2.md): the header's length
in Inference-Header-Content-Length, each binary input read with np.frombuffer on a
view of the body (FP64, FP32, INT32, INT64; MASK BOOL or integers of 0 and 1), the
same five steps computed in float64 by the same function as /v1, each output asked
with binary_data written with ndarray.tobytes() after the answer's JSON header (each
with binary_data_size, in the order asked), and Inference-Header-Content-Length on
the answer; outputs not asked binary go as JSON data. Parameters scale, causal,
mask_semantics; the id echoed; errors are 400 {"error"}. Not a batch dimension, not
multihead: the bench sends one problem.

Not here: the other endpoints, text and SVG, limits beyond the body size.
"""
import argparse
import math
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one request per worker at a time

import numpy as np  # noqa: E402
import ujson  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import JSONResponse, Response, UJSONResponse  # noqa: E402

PARTS = ("scores", "scaled", "masked", "weights", "output", "summary")

app = FastAPI(title="attention (FastAPI + numpy)", docs_url=None, redoc_url=None,
              openapi_url=None)


class Problem(Exception):
    def __init__(self, status, kind, title, detail, pointer=None):
        super().__init__(detail)
        self.status, self.kind, self.title, self.detail, self.pointer = (
            status, kind, title, detail, pointer)

    def response(self):
        body = {"type": "/problems/" + self.kind, "title": self.title,
                "status": self.status, "detail": self.detail}
        if self.pointer is not None:
            body["errors"] = [{"pointer": self.pointer, "detail": self.detail}]
        return JSONResponse(body, status_code=self.status,
                            media_type="application/problem+json")


def invalid(pointer, detail):
    return Problem(422, "invalid-value", "Invalid value", detail, pointer)


def as_matrix(doc, name, allow_vector=False):
    """A JSON array of equal-length arrays of numbers as a float64 (rows, cols) array."""
    x = doc.get(name)
    if x is None:
        raise Problem(422, "missing-field", "Missing field", f"{name} is required", "/" + name)
    if not isinstance(x, list) or not x:
        raise Problem(422, "not-a-matrix", "Not a matrix",
                      f"{name} must be a non-empty array of arrays of numbers", "/" + name)
    is_vector = allow_vector and not isinstance(x[0], list)
    try:
        a = np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        a = None
    want = 1 if is_vector else 2
    if a is None or a.ndim != want or a.size == 0:
        raise Problem(422, "not-a-matrix", "Not a matrix",
                      f"{name} must be a rectangular array of numbers", "/" + name)
    if any(type(c) is bool for c in (x if is_vector else x[0])):
        raise Problem(422, "not-a-number", "Not a number", f"{name} holds numbers", "/" + name)
    return (a.reshape(1, -1) if is_vector else a), is_vector


def parse_mask(doc, n_q, n_k):
    """(allow (n_q, n_k) bool or None, shape as sent or "causal" or None)."""
    m = doc.get("mask")
    semantics = doc.get("mask_semantics") or "keep"
    if semantics not in ("keep", "block"):
        raise invalid("/mask_semantics", 'mask_semantics is "keep" or "block"')
    if m is None:
        return None, None, semantics
    if m == "causal":
        i = np.arange(n_q)[:, None]
        j = np.arange(n_k)[None, :]
        return j <= i + (n_k - n_q), "causal", semantics
    try:
        a = np.array(m, dtype=object)
    except ValueError:
        a = None
    if a is None or a.ndim not in (1, 2):
        raise Problem(422, "not-a-matrix", "Not a matrix", "mask must be a matrix or a vector",
                      "/mask")
    cells = a.ravel().tolist()
    if any(c not in (0, 1) or (type(c) is float) for c in cells):
        raise invalid("/mask", "mask cells are 0/1 or true/false")
    allow = np.array(cells, dtype=bool).reshape(a.shape)
    shape = list(a.shape)
    if a.ndim == 1 or a.shape[0] == 1:
        if allow.shape[-1] != n_k:
            raise Problem(422, "shape-mismatch", "Shapes do not fit",
                          f"mask needs {n_k} columns", "/mask")
        allow = np.broadcast_to(allow.reshape(1, n_k), (n_q, n_k))
    elif allow.shape != (n_q, n_k):
        raise Problem(422, "shape-mismatch", "Shapes do not fit",
                      f"mask must be ({n_q}, {n_k})", "/mask")
    if semantics == "block":
        allow = ~allow
    return allow, shape, semantics


def forward(q, k, v, scale, bias, allow):
    """The five steps, each kept, in float64: (scores, scaled, masked, weights, output,
    fully masked rows). q (n_q, d_k), k (n_k, d_k), v (n_k, d_v); bias (n_q, n_k) or
    None; allow (n_q, n_k) bool or None. Both routes compute with this one function."""
    n_q = q.shape[0]
    scores = q @ k.T                                     # (n_q, n_k)
    scaled = scores * scale                              # (n_q, n_k)
    masked = scaled + bias if bias is not None else scaled.copy()
    for step, m in (("scores", scores), ("scaled", scaled), ("masked", masked)):
        if not np.isfinite(m).all():
            i, j = np.argwhere(~np.isfinite(m))[0].tolist()
            raise Problem(422, "numeric-overflow", "Numeric overflow",
                          f"{step} overflowed at [{i}, {j}]", "/q")
    if allow is not None:
        masked[~allow] = -np.inf
    fully = ~allow.any(axis=1) if allow is not None else np.zeros(n_q, dtype=bool)
    row_max = masked.max(axis=1, keepdims=True)
    row_max[fully] = 0.0                                 # a row of -inf would give NaN
    e = np.exp(masked - row_max)                         # only for numerical stability
    sums = e.sum(axis=1, keepdims=True)
    sums[fully] = 1.0
    weights = e / sums                                   # (n_q, n_k); fully masked rows 0
    output = weights @ v                                 # (n_q, d_v)
    if not np.isfinite(output).all():
        i, j = np.argwhere(~np.isfinite(output))[0].tolist()
        raise Problem(422, "numeric-overflow", "Numeric overflow",
                      f"output overflowed at [{i}, {j}]", "/v")
    return scores, scaled, masked, weights, output, fully


def attention(doc):
    if not isinstance(doc, dict):
        raise invalid("", "the body must be a JSON object")
    known = {"q", "k", "v", "mask", "mask_semantics", "bias", "scale", "include", "labels",
             "round"}
    for key in doc:
        if key not in known:
            raise Problem(422, "unknown-field", "Unknown field", f"unknown field {key}",
                          "/" + key)
    q, q_vec = as_matrix(doc, "q", allow_vector=True)
    k, _ = as_matrix(doc, "k")
    v, _ = as_matrix(doc, "v")
    n_q, d_k = q.shape
    n_k, d_v = v.shape
    if k.shape[1] != d_k:
        raise Problem(422, "shape-mismatch", "Shapes do not fit",
                      f"q has {d_k} columns but k has {k.shape[1]}", "/k")
    if k.shape[0] != n_k:
        raise Problem(422, "shape-mismatch", "Shapes do not fit",
                      f"v has {n_k} rows but k has {k.shape[0]}", "/v")
    allow, mask_shape, semantics = parse_mask(doc, n_q, n_k)
    bias = None
    if doc.get("bias") is not None:
        bias, _ = as_matrix(doc, "bias", allow_vector=q_vec)
        if bias.shape != (n_q, n_k):
            raise Problem(422, "shape-mismatch", "Shapes do not fit",
                          f"bias must be ({n_q}, {n_k})", "/bias")
    scale = doc.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    elif type(scale) not in (int, float) or not (scale > 0 and math.isfinite(scale)):
        raise invalid("/scale", "scale is a number > 0")
    include = doc.get("include")
    if include is None:
        include = PARTS
    elif not isinstance(include, list) or any(p not in PARTS for p in include):
        raise invalid("/include", "include lists " + ", ".join(PARTS))
    rnd = doc.get("round")
    if rnd is not None and (type(rnd) is not int or not 0 <= rnd <= 15):
        raise invalid("/round", "round is an integer 0..15")

    scores, scaled, masked, weights, output, fully = forward(q, k, v, scale, bias, allow)

    def num(x):
        return round(x, rnd) if rnd is not None else x

    def mat(a, blocked=None):
        if rnd is not None:
            a = np.round(a, rnd)
        if blocked is not None and blocked.any():
            a = a.astype(object)
            a[blocked] = None                            # JSON has no -inf
        return (a[0] if q_vec else a).tolist()

    def vec(a):  # (n_q): a scalar for a vector q
        if rnd is not None:
            a = np.round(a, rnd)
        return a[0].item() if q_vec else a.tolist()

    def shp(*s):
        return list(s[1:]) if q_vec else list(s)

    qs = [d_k] if q_vec else [n_q, d_k]
    res = {
        "d_k": d_k, "scale": num(scale), "mask_semantics": semantics,
        "shapes": {"q": qs, "k": [n_k, d_k], "v": [n_k, d_v], "mask": mask_shape,
                   "bias": list(bias.shape) if bias is not None else None,
                   "weights": shp(n_q, n_k), "output": shp(n_q, d_v)},
        "steps": [
            {"step": 1, "name": "scores", "op": "Q @ K^T", "operands": [qs, [d_k, n_k]],
             "shape": shp(n_q, n_k)},
            {"step": 2, "name": "scaled", "op": "scores * scale", "shape": shp(n_q, n_k)},
            {"step": 3, "name": "masked",
             "op": "scaled + bias, -inf where mask is " + ("1" if semantics == "block" else "0"),
             "shape": shp(n_q, n_k)},
            {"step": 4, "name": "weights", "op": "softmax(masked, axis=-1)",
             "shape": shp(n_q, n_k)},
            {"step": 5, "name": "output", "op": "weights @ V",
             "operands": [shp(n_q, n_k), [n_k, d_v]], "shape": shp(n_q, d_v)},
        ],
    }
    if doc.get("labels") is not None:
        res["labels"] = doc["labels"]
    if "scores" in include:
        res["scores"] = mat(scores)
    if "scaled" in include:
        res["scaled"] = mat(scaled)
    if "masked" in include:
        res["masked"] = mat(masked, None if allow is None else ~allow)
    if "weights" in include:
        res["weights"] = mat(weights)
    if "output" in include:
        res["output"] = mat(output)
    if "summary" in include:
        with np.errstate(divide="ignore", invalid="ignore"):
            logw = np.where(weights > 0, np.log(np.where(weights > 0, weights, 1.0)), 0.0)
        entropy = -(weights * logw).sum(axis=1) + 0.0      # + 0.0: never -0
        argmax = weights.argmax(axis=1).tolist()         # ties: the lowest index
        for i in np.flatnonzero(fully).tolist():
            argmax[i] = None
        res["summary"] = {
            "row_sums": vec(weights.sum(axis=1)),
            "argmax": argmax[0] if q_vec else argmax,
            "max_weight": vec(weights.max(axis=1)),
            "entropy": vec(entropy),
            "fully_masked_rows": np.flatnonzero(fully).tolist(),
        }
    res["warnings"] = [
        {"code": "row_fully_masked", "row": i,
         "message": f"query {i} may attend to no key (its mask row blocks every key): "
                    "its weights and output are 0"}
        for i in np.flatnonzero(fully).tolist()]
    return res


@app.post("/v1/attention")
async def post_attention(request: Request):
    # async def: the computation runs on the event loop, one request per worker at a
    # time, instead of FastAPI's thread pool where 40 threads would share one GIL.
    body = await request.body()
    try:
        doc = ujson.loads(body)
    except ValueError as e:
        return Problem(400, "invalid-json", "Invalid JSON", str(e)).response()
    try:
        return UJSONResponse(attention(doc))
    except Problem as p:
        return p.response()


# ---- POST /v2/models/attention/infer: the V2 protocol's binary tensors ----

V2_OUTPUTS = ("SCORES", "SCALED", "MASKED", "WEIGHTS", "OUTPUT")
V2_FLOATS = {"FP64": "<f8", "FP32": "<f4", "INT32": "<i4", "INT64": "<i8"}
V2_MASKS = {"BOOL": "u1", "UINT8": "u1", "INT8": "i1", "INT32": "<i4", "INT64": "<i8"}


class V2Error(Exception):
    """A 400 as V2 clients read it: {"error": message}."""

    def response(self):
        return UJSONResponse({"error": str(self)}, status_code=400)


def v2_inputs(header, body):
    """{name: (array as sent, datatype)}: binary inputs read in order after the header
    (np.frombuffer on a view of the body: no copy), JSON ones from "data"."""
    inputs, at = {}, 0
    view = memoryview(body)
    for i, t in enumerate(header.get("inputs") or []):
        if not isinstance(t, dict) or not isinstance(t.get("shape"), list):
            raise V2Error(f"inputs[{i}] needs a name, a shape and a datatype")
        name, shape, datatype = t.get("name"), t["shape"], t.get("datatype")
        dtype = (V2_MASKS if name == "MASK" else V2_FLOATS).get(datatype)
        if dtype is None:
            raise V2Error(f"{name}: datatype {datatype} is not taken")
        size = (t.get("parameters") or {}).get("binary_data_size")
        try:
            if size is not None:
                if type(size) is not int or size < 0 or at + size > len(view):
                    raise V2Error(f"{name}: binary_data_size {size} is past the body")
                a = np.frombuffer(view[at:at + size], dtype=dtype)
                at += size
            else:
                a = np.array(t.get("data"), dtype=dtype).ravel()
            inputs[name] = (a.reshape(shape), datatype)
        except (TypeError, ValueError) as e:
            raise V2Error(f"{name}: its data does not fill the shape {shape}: {e}") from None
    if at != len(view):
        raise V2Error(f"{len(view) - at} bytes after the last binary input")
    return inputs


def v2_problem(inputs, parameters):
    """(q, k, v, scale, bias, allow, vector q, FP32 in) in float64, checked as /v1 checks."""
    unknown = set(inputs) - {"Q", "K", "V", "MASK", "BIAS"}
    if unknown:
        raise V2Error(f"unknown input {sorted(unknown)[0]}; the inputs are Q, K, V, MASK, BIAS")
    for name in ("Q", "K", "V"):
        if name not in inputs:
            raise V2Error(f"input {name} is required")
    q, q_type = inputs["Q"]
    k, v = inputs["K"][0], inputs["V"][0]
    q_vec = q.ndim == 1
    q = q.reshape(1, -1) if q_vec else q
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2 or 0 in q.shape + k.shape + v.shape:
        raise V2Error("Q, K and V are non-empty matrices (no batch here)")
    q, k, v = (x.astype(np.float64, copy=False) for x in (q, k, v))
    (n_q, d_k), n_k = q.shape, k.shape[0]
    if k.shape[1] != d_k or v.shape[0] != n_k:
        raise V2Error(f"shapes do not fit: Q {list(q.shape)}, K {list(k.shape)}, V {list(v.shape)}")
    semantics = parameters.get("mask_semantics", "keep")
    if semantics not in ("keep", "block"):
        raise V2Error('mask_semantics is "keep" or "block"')
    allow = None
    if "MASK" in inputs:
        m = inputs["MASK"][0]
        if not np.isin(m, (0, 1)).all():
            raise V2Error("MASK holds 0 and 1")
        m = m.astype(bool)
        if m.shape == (n_k,):
            m = np.broadcast_to(m, (n_q, n_k))
        elif m.shape != (n_q, n_k):
            raise V2Error(f"MASK must be ({n_q}, {n_k}) or ({n_k})")
        allow = ~m if semantics == "block" else m
    if parameters.get("causal") is True:
        if allow is not None:
            raise V2Error("causal combines with no MASK")
        allow = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)
    bias = None
    if "BIAS" in inputs:
        bias = inputs["BIAS"][0].astype(np.float64, copy=False).reshape(-1, n_k)
        if bias.shape != (n_q, n_k):
            raise V2Error(f"BIAS must be ({n_q}, {n_k})")
    scale = parameters.get("scale", 1.0 / math.sqrt(d_k))
    if type(scale) not in (int, float) or not (scale > 0 and math.isfinite(scale)):
        raise V2Error("scale is a number > 0")
    return q, k, v, scale, bias, allow, q_vec, q_type == "FP32"


def v2_attention(header, body):
    """The answer as (JSON header, [binary pieces]), the pieces in the header's order."""
    if not isinstance(header, dict):
        raise V2Error("the inference header is a JSON object")
    parameters = header.get("parameters") or {}
    q, k, v, scale, bias, allow, q_vec, fp32 = v2_problem(v2_inputs(header, body), parameters)
    try:
        scores, scaled, masked, weights, output, _ = forward(q, k, v, scale, bias, allow)
    except Problem as p:
        raise V2Error(p.detail) from None
    steps = dict(zip(V2_OUTPUTS, (scores, scaled, masked, weights, output)))
    asked = header.get("outputs") or [{"name": "WEIGHTS"}, {"name": "OUTPUT"}]
    all_binary = parameters.get("binary_data_output") is True
    datatype, dtype = ("FP32", "<f4") if fp32 else ("FP64", "<f8")
    outputs, pieces = [], []
    for o in asked:
        name = o.get("name") if isinstance(o, dict) else None
        if name not in steps:
            raise V2Error(f"unknown output {name}; the outputs are " + ", ".join(V2_OUTPUTS))
        a = steps[name][0] if q_vec else steps[name]
        entry = {"name": name, "datatype": datatype, "shape": list(a.shape)}
        if (o.get("parameters") or {}).get("binary_data", all_binary):
            raw = a.astype(dtype, copy=False).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            pieces.append(raw)
        else:
            entry["data"] = np.where(np.isneginf(a), None, a).ravel().tolist() \
                if name == "MASKED" and allow is not None else a.ravel().tolist()
        outputs.append(entry)
    answer = {"model_name": "attention", "model_version": "1"}
    if "id" in header:
        answer["id"] = header["id"]
    answer["outputs"] = outputs
    return answer, pieces


@app.post("/v2/models/attention/infer")
async def post_v2_attention(request: Request):
    # As tritonclient.http sends it: the JSON header's length in
    # Inference-Header-Content-Length, the tensors' bytes after it, any Content-Type.
    body = await request.body()
    length = request.headers.get("inference-header-content-length")
    try:
        n = len(body) if length is None else int(length)
        if not 0 < n <= len(body):
            raise V2Error(f"Inference-Header-Content-Length {length} is not within the body")
        try:
            header = ujson.loads(body[:n])
        except ValueError as e:
            raise V2Error(f"the inference header is not JSON: {e}") from None
        answer, pieces = v2_attention(header, memoryview(body)[n:])
    except V2Error as e:
        return e.response()
    if not pieces:
        return UJSONResponse(answer)
    head = ujson.dumps(answer, ensure_ascii=False).encode()
    return Response(b"".join([head, *pieces]), media_type="application/octet-stream",
                    headers={"Inference-Header-Content-Length": str(len(head))})


@app.get("/healthz")
async def healthz():
    return UJSONResponse({"status": "ok"})


def listening_sockets(port, count):
    """count sockets bound to one port, each with its own accept queue (SO_REUSEPORT).

    uvicorn's own supervisor hands every worker the same socket, and whichever worker
    wakes first accepts every connection waiting: wrk opens its connections at once, so
    at 8 connections all of them often landed on one worker and the service ran on one
    core of two (two runs of four at 8 connections here). With a socket each, the
    kernel spreads the connections over the workers by a hash of each one's address and
    port: at 8 connections both workers get some but for 1 time in 128.
    """
    import socket

    sockets = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if count > 1:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        port = sock.getsockname()[1]  # port 0: the others join the one the first got
        sockets.append(sock)
    return sockets


def serve_workers(config, sockets):
    """One uvicorn worker process a socket, until SIGTERM or SIGINT, which they get too."""
    import signal

    import uvicorn
    from uvicorn.subprocess import get_subprocess

    # A signal that comes while sigtimedwait waits is taken by it, not by the handler;
    # one that comes at another moment (the workers' start) is taken by the handler.
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    server = uvicorn.Server(config)
    workers = [get_subprocess(config, target=server.run, sockets=[sock]) for sock in sockets]
    for w in workers:
        w.start()
    while not stop and all(w.is_alive() for w in workers):
        got = signal.sigtimedwait([signal.SIGTERM, signal.SIGINT, signal.SIGCHLD], 1.0)
        if got is not None and got.si_signo != signal.SIGCHLD:
            break
    for w in workers:
        w.terminate()
    for w in workers:
        w.join()


def main():
    import uvicorn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    # Bind here so the port is ours before the workers start (they listen on it).
    sockets = listening_sockets(args.port, max(1, args.workers))
    print(f"pyservice listening on port {sockets[0].getsockname()[1]}", flush=True)
    # The workers import this file as "pyservice" (sys.path[0] is its folder, and
    # multiprocessing hands sys.path to them).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    config = uvicorn.Config("pyservice:app", workers=args.workers, log_level="warning",
                            access_log=False)
    if args.workers > 1:
        serve_workers(config, sockets)
    else:
        uvicorn.Server(config).run(sockets=sockets)
    sys.exit(0)


if __name__ == "__main__":
    main()
