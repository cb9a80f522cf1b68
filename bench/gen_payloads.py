#!/usr/bin/python3
"""bench/gen_payloads.py — the request bodies `make bench` sends, written deterministically.

    /usr/bin/python3 bench/gen_payloads.py OUT_DIR [NAME...]

writes, into OUT_DIR (build/bench/ by default), the payloads named (default: all):

    tiny.json      seed 000's worked example: Q, K (2, 4), V (2, 2), every step
    medium.json    n = 64,   d = 64, every step
    large.json     n = 512,  d = 64, every step
    xl.json        n = 2048, d = 64, include ["weights", "output"]
                   (n_q·n_k = 4,194,304: exactly the default --max-cells)
    NAME-summary.json   the same numbers with include ["summary"], for medium, large
                   and xl: the in-process JSON bench times the response writer as the
                   difference between the two
    NAME.v2.bin    for each of tiny, medium, large, xl, the same Q, K, V as a V2 binary
                   request exactly as tritonclient.http sends it: a compact JSON header
                   (inputs Q, K, V as FP64 with binary_data_size; outputs SCORES, SCALED,
                   MASKED, WEIGHTS, OUTPUT, each binary_data), then the three tensors'
                   little-endian bytes; every step asked, xl's too
    NAME.v2.hlen   the header's length in bytes (Inference-Header-Content-Length)
    long.v2.bin    only when named (`make bench`'s long row): n_q = n_k = 32,768,
                   d = 64, Q, K, V as BF16 (12 MiB), outputs OUTPUT and LSE, each
                   binary_data; and long.v2.hlen. BF16 is the top 16 bits of the
                   float32 nearest each value, rounded to nearest even (the values are
                   finite, so no NaN needs its own rule)

Q, K and V come from the generator /v1/multihead's `random` uses (splitmix64 by index,
see docs/api.md), so anyone can rebuild the same bytes: seed 7, streams 0, 1 and 2,
values in [-1, 1). Numbers are written as Python's repr writes them (shortest round
trip, about 19 characters each), the way a numpy client's json.dumps sends them.

Not here: timing, servers. The files are build products and are not committed.
"""
import json
import os
import sys

import numpy as np

SEED = 7

# name: (n, d, include); n_q = n_k = n, d_k = d_v = d. None means the default (every step).
SIZES = {
    "medium": (64, 64, None),
    "large": (512, 64, None),
    "xl": (2048, 64, ["weights", "output"]),
}

TINY = {  # seed 000's worked example (d_k = 4, scale 1/√4)
    "q": [[1, 0, 1, 0], [0, 1, 0, 1]],
    "k": [[1, 0, 1, 0], [1, 1, 1, 1]],
    "v": [[10, 0], [0, 10]],
}


def attnd_random(seed, stream, shape, amplitude=1.0):
    """The README's generator: value k of a stream is splitmix64 of seed + stream·2^40 + (k+1)·γ."""
    k = np.arange(1, int(np.prod(shape)) + 1, dtype=np.uint64)
    z = np.uint64((seed + (stream << 40)) % 2**64) + k * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return ((2 * u - 1) * amplitude).reshape(shape)


V2_OUTPUTS = ("SCORES", "SCALED", "MASKED", "WEIGHTS", "OUTPUT")


def write_atomic(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)  # a reader never sees half a file


def write_v2(out_dir, name, doc):
    """NAME.v2.bin and NAME.v2.hlen: doc's q, k, v as tritonclient.http's binary request."""
    tensors = [np.ascontiguousarray(doc[n], dtype="<f8") for n in ("q", "k", "v")]
    header = {
        "inputs": [{"name": n, "shape": list(t.shape), "datatype": "FP64",
                    "parameters": {"binary_data_size": t.nbytes}}
                   for n, t in zip("QKV", tensors)],
        "outputs": [{"name": n, "parameters": {"binary_data": True}} for n in V2_OUTPUTS],
    }
    head = json.dumps(header, separators=(",", ":")).encode()  # rapidjson's compact dump
    path = os.path.join(out_dir, name + ".v2.bin")
    body = head + b"".join(t.tobytes() for t in tensors)
    write_atomic(path, body)
    write_atomic(os.path.join(out_dir, name + ".v2.hlen"), b"%d\n" % len(head))
    return path, len(body)


LONG_N, LONG_D = 32768, 64


def bf16_bits(x):
    """uint16 BF16 bits of float64 x: float32 first, then its top 16 bits rounded to
    nearest, ties to even (add 0x7FFF plus the kept part's lowest bit, then shift)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    lowest_kept = (bits >> np.uint32(16)) & np.uint32(1)
    return ((bits + np.uint32(0x7FFF) + lowest_kept) >> np.uint32(16)).astype("<u2")


def write_long(out_dir):
    """long.v2.bin: the long row's request, Q, K, V as BF16, outputs OUTPUT and LSE."""
    with np.errstate(over="ignore"):  # splitmix64 wraps around on purpose
        tensors = [bf16_bits(attnd_random(SEED, s, (LONG_N, LONG_D))) for s in (0, 1, 2)]
    header = {
        "inputs": [{"name": n, "shape": [LONG_N, LONG_D], "datatype": "BF16",
                    "parameters": {"binary_data_size": t.nbytes}}
                   for n, t in zip("QKV", tensors)],
        "outputs": [{"name": n, "parameters": {"binary_data": True}} for n in ("OUTPUT", "LSE")],
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    body = head + b"".join(t.tobytes() for t in tensors)
    path = os.path.join(out_dir, "long.v2.bin")
    write_atomic(path, body)
    write_atomic(os.path.join(out_dir, "long.v2.hlen"), b"%d\n" % len(head))
    return path, len(body)


def write(out_dir, name, doc):
    path = os.path.join(out_dir, name + ".json")
    text = json.dumps(doc, separators=(",", ":"))
    write_atomic(path, text.encode())
    return path, len(text)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    names = sys.argv[2:] or ["tiny", *SIZES]
    unknown = [n for n in names if n not in ("tiny", "long") and n not in SIZES]
    if unknown:
        sys.exit(f"gen_payloads: unknown payload {unknown[0]}; known: tiny, {', '.join(SIZES)}, long")
    os.makedirs(out_dir, exist_ok=True)
    written = [write(out_dir, "tiny", TINY), write_v2(out_dir, "tiny", TINY)] if "tiny" in names else []
    if "long" in names:
        written.append(write_long(out_dir))
    with np.errstate(over="ignore"):  # splitmix64 wraps around on purpose
        for name, (n, d, include) in SIZES.items():
            if name not in names:
                continue
            doc = {
                "q": attnd_random(SEED, 0, (n, d)).tolist(),
                "k": attnd_random(SEED, 1, (n, d)).tolist(),
                "v": attnd_random(SEED, 2, (n, d)).tolist(),
            }
            written.append(write_v2(out_dir, name, doc))
            if include is not None:
                doc["include"] = include
            written.append(write(out_dir, name, doc))
            doc["include"] = ["summary"]
            written.append(write(out_dir, name + "-summary", doc))
    for path, size in written:
        print(f"{path}: {size} bytes")


if __name__ == "__main__":
    main()
