// tests/http/concurrency.test.mjs — requests of different sizes computed at the same
// time, on several workers each calling OpenBLAS, give the same bytes as one at a
// time. `make tsan` runs this suite against a ThreadSanitizer build as well.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { request, startServer } from './lib.mjs';

/** Reproducible numbers in [-2, 2) (a 32-bit LCG), so every run sends the same payloads. */
function numbers(seed) {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return Math.round((x / 2 ** 32) * 4000 - 2000) / 1000;
  };
}

const matrix = (next, rows, cols) =>
  Array.from({ length: rows }, () => Array.from({ length: cols }, next));

// (n_q, n_k, d_k, d_v), from a single cell to sizes where OpenBLAS blocks its work.
const SIZES = [[1, 1, 1, 1], [2, 3, 4, 2], [8, 16, 8, 4], [32, 32, 16, 16], [64, 48, 32, 8],
  [128, 128, 64, 32], [3, 200, 5, 7], [100, 3, 2, 50], [96, 160, 48, 24]];

const PAYLOADS = SIZES.flatMap(([nq, nk, dk, dv], i) => {
  const next = numbers(i + 1);
  const body = { q: matrix(next, nq, dk), k: matrix(next, nk, dk), v: matrix(next, nk, dv) };
  if (i % 3 === 1) body.mask = 'causal';
  if (i % 3 === 2) body.bias = matrix(next, nq, nk);
  const text = JSON.stringify(body);
  return [
    { path: '/v1/attention', body: text },
    { path: '/v1/attention?format=text', body: text },
  ];
});

const send = (port, p) =>
  request(port, {
    method: 'POST', path: p.path, headers: { 'Content-Type': 'application/json' }, body: p.body,
  });

test('concurrent requests give the same bytes as serial ones', async (t) => {
  const s = await startServer(['--threads', '4', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL')); // a failed assertion must not leave it running
  const serial = [];
  for (const p of PAYLOADS) {
    const r = await send(s.port, p);
    assert.equal(r.status, 200, r.body.slice(0, 300));
    serial.push(r.body);
  }
  for (let round = 0; round < 3; round++) {
    // Every payload three times, interleaved differently each round.
    const order = PAYLOADS.flatMap((_, i) => [i, i, i]);
    for (let i = order.length - 1; i > 0; i--) {
      const j = (i * 7919 + round * 104729) % (i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    const got = await Promise.all(order.map((i) => send(s.port, PAYLOADS[i])));
    got.forEach((r, n) => {
      const i = order[n];
      assert.equal(r.status, 200);
      assert.ok(r.body === serial[i], `${PAYLOADS[i].path} #${i} differs when run concurrently`);
    });
  }
  await s.stop();
});
