// tests/http/attention_random.test.mjs — POST /v1/attention's `random`: {"seed", "n_q",
// "n_k", "d_k", "d_v"} answers exactly what the same q, k and v sent as JSON answer, with
// q, k, v regenerated here from the documented formula (api/request/random.h: splitmix64
// by index, q stream 10, k 11, v 12, amplitude 1); and every bad field is a 422 naming it.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postJson, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

const MASK64 = (1n << 64n) - 1n;
const mul = (a, b) => (a * b) & MASK64;

/** Value k of stream `stream` for `seed`, in [-1, 1): the formula of random.h, in BigInt. */
function value(seed, stream, k) {
  let z = (BigInt(seed) + (BigInt(stream) << 40n) + mul(BigInt(k) + 1n, 0x9E3779B97F4A7C15n)) & MASK64;
  z = mul(z ^ (z >> 30n), 0xBF58476D1CE4E5B9n);
  z = mul(z ^ (z >> 27n), 0x94D049BB133111EBn);
  z ^= z >> 31n;
  return (Number(z >> 11n) * 2 ** -53) * 2 - 1;
}

function matrix(seed, stream, rows, cols) {
  return Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => value(seed, stream, i * cols + j)));
}

test('the formula here reads multihead\'s random x (stream 0) as the server makes it', async () => {
  // /v1/multihead echoes x when asked: the generator this file writes is the server's.
  const r = await postJson(s.port, '/v1/multihead',
    { heads: 1, random: { seed: 12345, n: 3, d_model: 4 }, include: ['x'], round: 15 });
  assert.equal(r.status, 200, r.body);
  const x = JSON.parse(r.body).x;
  assert.deepEqual(x, matrix(12345, 0, 3, 4).map((row) => row.map((v) => Number(v.toFixed(15)))));
});

test('random q, k and v answer exactly what the same numbers sent as JSON answer', async () => {
  const seed = 2026, n_q = 5, n_k = 7, d_k = 6, d_v = 3;
  const q = matrix(seed, 10, n_q, d_k), k = matrix(seed, 11, n_k, d_k), v = matrix(seed, 12, n_k, d_v);
  const extras = { mask: 'causal', include: ['scores', 'weights', 'output', 'summary'] };
  const random = await postJson(s.port, '/v1/attention', { random: { seed, n_q, n_k, d_k, d_v }, ...extras });
  const sent = await postJson(s.port, '/v1/attention', { q, k, v, ...extras });
  assert.equal(random.status, 200, random.body);
  assert.equal(sent.status, 200, sent.body);
  assert.equal(random.body, sent.body, 'the two answers are the same bytes');
  const a = JSON.parse(random.body);
  assert.deepEqual(a.shapes.q, [n_q, d_k]);
  assert.deepEqual(a.shapes.v, [n_k, d_v]);
  // A batch item takes random too, and another seed gives other numbers.
  const batch = await postJson(s.port, '/v1/attention/batch', { items: [
    { random: { seed, n_q, n_k, d_k, d_v }, ...extras },
    { random: { seed: seed + 1, n_q, n_k, d_k, d_v }, ...extras }] });
  assert.equal(batch.status, 200, batch.body);
  const items = JSON.parse(batch.body).results;
  assert.deepEqual(items[0].body, a);
  assert.notDeepEqual(items[1].body.output, a.output);
});

test('bad random fields are 422s naming the field; random beside q, k or v is refused', async () => {
  const ok = { seed: 1, n_q: 2, n_k: 3, d_k: 4, d_v: 5 };
  const cases = [
    [{ random: ok, q: [[1, 0, 0, 0]] }, 'invalid-value', '/q'],
    [{ random: ok, v: [[1]] }, 'invalid-value', '/v'],
    [{ random: [1] }, 'invalid-value', '/random'],
    [{ random: { ...ok, n: 3 } }, 'unknown-field', '/random/n'],
    [{ random: { ...ok, seed: undefined } }, 'missing-field', '/random/seed'],
    [{ random: { ...ok, seed: -1 } }, 'invalid-value', '/random/seed'],
    [{ random: { ...ok, seed: 1.5 } }, 'invalid-value', '/random/seed'],
    [{ random: { ...ok, n_q: undefined } }, 'missing-field', '/random/n_q'],
    [{ random: { ...ok, n_k: 0 } }, 'invalid-value', '/random/n_k'],
    [{ random: { ...ok, d_k: 'x' } }, 'invalid-value', '/random/d_k'],
    [{ random: { ...ok, d_v: 2 ** 40 } }, 'invalid-value', '/random/d_v'],
    // 2049 x 2048 scores pass --max-cells' 4,194,304: named by the larger size.
    [{ random: { ...ok, n_q: 2049, n_k: 2048 } }, 'limit-exceeded', '/random/n_q'],
    [{ random: { ...ok, n_k: 5000000, n_q: 1 } }, 'limit-exceeded', '/random/n_k'],
    [{ random: { ...ok, d_k: 5000000 } }, 'limit-exceeded', '/random/d_k'],
    [{ random: ok, labels: { queries: ['a'] } }, undefined, undefined],
  ];
  for (const [body, type, pointer] of cases) {
    const r = await postJson(s.port, '/v1/attention', body);
    assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.body}`);
    const j = JSON.parse(r.body);
    if (type === undefined) continue;
    assert.equal(j.type, `/problems/${type}`, r.body);
    assert.equal(j.errors[0].pointer, pointer, r.body);
  }
  // Over the request's memory limit: named at the random size that drives it.
  const big = await postJson(s.port, '/v1/attention', { random: { seed: 1, n_q: 2048, n_k: 2048, d_k: 64, d_v: 64 } });
  assert.equal(big.status, 422, big.body);
  assert.equal(JSON.parse(big.body).errors[0].pointer, '/random/n_q');
});
