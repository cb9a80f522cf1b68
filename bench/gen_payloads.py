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


def write(out_dir, name, doc):
    path = os.path.join(out_dir, name + ".json")
    text = json.dumps(doc, separators=(",", ":"))
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)  # a reader never sees half a file
    return path, len(text)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    names = sys.argv[2:] or ["tiny", *SIZES]
    unknown = [n for n in names if n != "tiny" and n not in SIZES]
    if unknown:
        sys.exit(f"gen_payloads: unknown payload {unknown[0]}; known: tiny, {', '.join(SIZES)}")
    os.makedirs(out_dir, exist_ok=True)
    written = [write(out_dir, "tiny", TINY)] if "tiny" in names else []
    with np.errstate(over="ignore"):  # splitmix64 wraps around on purpose
        for name, (n, d, include) in SIZES.items():
            if name not in names:
                continue
            doc = {
                "q": attnd_random(SEED, 0, (n, d)).tolist(),
                "k": attnd_random(SEED, 1, (n, d)).tolist(),
                "v": attnd_random(SEED, 2, (n, d)).tolist(),
            }
            if include is not None:
                doc["include"] = include
            written.append(write(out_dir, name, doc))
            doc["include"] = ["summary"]
            written.append(write(out_dir, name + "-summary", doc))
    for path, size in written:
        print(f"{path}: {size} bytes")


if __name__ == "__main__":
    main()
