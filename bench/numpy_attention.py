#!/usr/bin/python3
"""bench/numpy_attention.py — numpy's naive float64 attention, timed, for `core_bench floor`.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/numpy_attention.py N BUDGET

prints one line: the median seconds of softmax(Q·Kᵀ/√d)·V at n_q = n_k = N, d = 64, as the
first lecture note writes it (seed 000: scores, a softmax that subtracts each row's max,
weights @ V), repeated until BUDGET seconds have passed and at least 3 runs were made;
or "n/a REASON" when numpy is missing. Q, K, V: the bench's generator (seed 7, streams
0, 1, 2, bench/gen_payloads.py). One BLAS thread, as attnd's core rows.

Not here: the ratio (core_bench divides by the bare dgemm pair it measured in the same run).
"""
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import numpy as np
except ImportError:
    print("n/a (numpy is missing)")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_payloads import attnd_random  # noqa: E402  (after the path is set)

D = 64


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def naive_attention(q, k, v):
    scores = q @ k.T
    weights = softmax(scores / np.sqrt(q.shape[1]))
    return weights @ v


def main():
    n, budget = int(sys.argv[1]), float(sys.argv[2])
    with np.errstate(over="ignore"):  # splitmix64 wraps around on purpose
        q, k, v = (attnd_random(7, s, (n, D)) for s in (0, 1, 2))
    naive_attention(q, k, v)  # warm: first-touch of the buffers, numpy's own set-up
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        naive_attention(q, k, v)
        times.append(time.perf_counter() - t0)
    times.sort()
    mid = len(times) // 2
    print(times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid]))


if __name__ == "__main__":
    main()
