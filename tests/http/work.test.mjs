// tests/http/work.test.mjs — --max-work bounds a request's arithmetic: the multiply-adds of
// its two products, n_q·n_k·(d_k + d_v), summed over heads and items. At the limit a
// request is served; one multiply-add over it is a 422 limit-exceeded naming the field
// whose size drives it (400 with the same problem type on V2), before anything is computed.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, startServer } from './lib.mjs';

const rows = (n, row) => Array.from({ length: n }, () => row);

// 6 queries, 5 keys, d_k 3, d_v 2: 6·5·(3 + 2) = 150 multiply-adds.
const PROBLEM = { q: rows(6, [1, 0, 0]), k: rows(5, [0, 1, 0]), v: rows(5, [1, 2]) };
const WORK = 6 * 5 * (3 + 2);

let s;
before(async () => { s = await startServer(['--max-work', String(WORK), '--log', 'off']); });
after(async () => { await s.stop(); });

async function refused(path, body, status, pointer) {
  const r = await postJson(s.port, path, body);
  let p;
  if (path.startsWith('/v2/')) { // V2's errors: application/json, with "error" beside RFC 9457's
    assert.equal(r.status, status, r.body);
    p = JSON.parse(r.body);
    assert.equal(p.error, p.detail);
  } else {
    p = assertProblem(assert, r, status);
  }
  assert.equal(p.type, '/problems/limit-exceeded', r.body);
  assert.equal(p.errors[0].pointer, pointer, r.body);
  assert.match(p.errors[0].detail ?? p.detail, /multiply-adds/);
  assert.match(r.body, /--max-work/);
  return p;
}

test('a problem of exactly --max-work multiply-adds is served', async () => {
  const r = await postJson(s.port, '/v1/attention', { ...PROBLEM, include: ['output'] });
  assert.equal(r.status, 200, r.body);
});

test('one query more is refused, naming q (it has the most rows)', async () => {
  const p = await refused('/v1/attention', { ...PROBLEM, q: rows(7, [1, 0, 0]) }, 422, '/q');
  // 7·5·5 = 175, said in the detail with the limit.
  assert.match(p.detail, /175 multiply-adds/);
  assert.match(p.detail, /at most 150/);
});

test('more keys than queries: k is named', async () => {
  await refused('/v1/attention', { q: [[1, 0, 0]], k: rows(31, [0, 1, 0]), v: rows(31, [1, 2]) },
    422, '/k');
});

test('a wider value counts: the output product is work too', async () => {
  await refused('/v1/attention', { ...PROBLEM, v: rows(5, [1, 2, 3]) }, 422, '/q');
});

test('a batch sums its items, and names the item that passed the limit', async () => {
  const half = { q: rows(3, [1, 0, 0]), k: rows(5, [0, 1, 0]), v: rows(5, [1, 2]) }; // 75
  const ok = await postJson(s.port, '/v1/attention/batch', { items: [half, half] });
  assert.equal(ok.status, 200, ok.body);
  await refused('/v1/attention/batch', { items: [half, half, half] }, 422, '/items/2');
});

test('multihead sums its heads: n_q·n_k·2·d_model', async () => {
  // n = 3, d_model = 8: 3·3·16 = 144 <= 150, whatever the heads.
  for (const heads of [1, 2, 4]) {
    const r = await postJson(s.port, '/v1/multihead',
      { heads, random: { seed: 1, n: 3, d_model: 8 }, include: ['output'] });
    assert.equal(r.status, 200, r.body);
  }
  // n = 4: 4·4·16 = 256.
  await refused('/v1/multihead', { heads: 2, random: { seed: 1, n: 4, d_model: 8 } }, 422,
    '/random/n');
});

const tensor = (name, m) => ({ name, shape: [m.length, m[0].length], datatype: 'FP64',
  data: m.flat() });

test('V2 attention: 400 limit-exceeded at the shape of the input that drives it', async () => {
  const path = '/v2/models/attention/infer';
  const ok = await postJson(s.port, path,
    { inputs: [tensor('Q', PROBLEM.q), tensor('K', PROBLEM.k), tensor('V', PROBLEM.v)] });
  assert.equal(ok.status, 200, ok.body);
  await refused(path, { inputs: [tensor('Q', rows(7, [1, 0, 0])), tensor('K', PROBLEM.k),
    tensor('V', PROBLEM.v)] }, 400, '/inputs/0/shape');
  // A batch of two items of 150 each is 300.
  const batched = (m) => ({ name: m.name, shape: [2, ...m.shape], datatype: 'FP64',
    data: [...m.data, ...m.data] });
  await refused(path, { inputs: [tensor('Q', PROBLEM.q), tensor('K', PROBLEM.k),
    tensor('V', PROBLEM.v)].map(batched) }, 400, '/inputs/0/shape');
});

test('ATTND_MAX_WORK sets it too', async () => {
  const tiny = await startServer(['--log', 'off'], { ATTND_MAX_WORK: '1' });
  try {
    const r = await postJson(tiny.port, '/v1/attention', { q: [[1]], k: [[1]], v: [[1]] });
    // 1·1·(1 + 1) = 2 > 1.
    assert.equal(r.status, 422, r.body);
  } finally {
    await tiny.stop();
  }
});
