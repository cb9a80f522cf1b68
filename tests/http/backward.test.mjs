// tests/http/backward.test.mjs — /v1/attention's `backward`: every gradient held to
// torch.autograd in float64 (tests/data/backward_torch.json, made by
// tests/gen_torch_backward.py with Debian's python3-torch: every variant, masks, fully
// masked rows, dropout), dO from the seed against the documented generator, the steps
// and shapes, a vector q, a batch item, and each bad input's 422.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, startServer } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = JSON.parse(readFileSync(path.join(here, '..', 'data', 'backward_torch.json'), 'utf8'));

let s;
before(async () => { s = await startServer(['--log', 'off']); });
after(async () => { await s.stop(); });

/** got within 1e-9 of want, relative to the largest |value| of the step (at least 1e-6:
 * a row whose dS is 0 by algebra comes out as 1e-19 after two summation orders). */
function assertClose(got, want, what) {
  const flat = (x) => (Array.isArray(x) ? x.flat(Infinity) : [x]);
  const g = flat(got), w = flat(want);
  assert.equal(g.length, w.length, `${what}: ${g.length} numbers, want ${w.length}`);
  const scale = Math.max(1e-6, ...w.map(Math.abs));
  w.forEach((x, i) => assert.ok(Math.abs(g[i] - x) <= 1e-9 * scale,
    `${what}[${i}]: ${g[i]}, torch ${x} (scale ${scale})`));
}

test('every gradient agrees with torch.autograd to 1e-9 (every variant, masks, dropout)', async () => {
  assert.ok(fixtures.attention.length >= 20);
  for (const { name, request, want } of fixtures.attention) {
    const r = await postJson(s.port, '/v1/attention', request);
    assert.equal(r.status, 200, `${name}: ${r.body}`);
    const got = r.json();
    for (const [key, value] of Object.entries(want)) assertClose(got[key], value, `${name} ${key}`);
  }
});

test('the steps after the forward ones, with their shapes; the default include has them all', async () => {
  const body = { q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1]], v: [[1, 2, 3], [4, 5, 6]],
    bias: [[0, 1], [1, 0], [0, 0]], rope: {}, sink_logit: 0.5, backward: { seed: 3 } };
  const got = (await postJson(s.port, '/v1/attention', body)).json();
  const names = got.steps.map((x) => x.name);
  const tail = ['grad_output', 'grad_v', 'grad_weights', 'delta', 'grad_masked', 'grad_scaled',
    'grad_scores', 'grad_q_rope', 'grad_k_rope', 'grad_q', 'grad_k', 'grad_sink_logit', 'grad_bias'];
  assert.deepEqual(names.slice(-tail.length), tail);
  const shape = Object.fromEntries(got.steps.map((x) => [x.name, x.shape]));
  assert.deepEqual([shape.grad_output, shape.grad_v, shape.delta, shape.grad_masked, shape.grad_q,
    shape.grad_k, shape.grad_sink_logit], [[3, 3], [2, 3], [3], [3, 2], [3, 2], [2, 2], []]);
  for (const name of tail) assert.ok(name in got, `${name} in the answer`);
  assert.deepEqual(got.grad_bias, got.grad_masked, 'grad_bias is dS');
  // dO from stream 8: value k = ((z >> 11) * 2^-53 * 2 - 1), z = splitmix64(seed + 8 * 2^40 + (k + 1) * golden)
  const mask = (1n << 64n) - 1n;
  const value = (seed, stream, k) => {
    let z = (BigInt(seed) + (BigInt(stream) << 40n) + (BigInt(k) + 1n) * 0x9E3779B97F4A7C15n) & mask;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & mask;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & mask;
    z ^= z >> 31n;
    return Number(z >> 11n) * 2 ** -53 * 2 - 1;
  };
  assert.deepEqual(got.grad_output.flat(), Array.from({ length: 9 }, (_, k) => value(3, 8, k)));
  // D = Σ dO ∘ O row by row
  got.delta.forEach((d, i) => assert.ok(Math.abs(d - got.grad_output[i].reduce((a, x, c) => a + x * got.output[i][c], 0)) < 1e-12));
});

test('a vector q answers vectors and scalars; a batch item carries its gradients', async () => {
  const one = { q: [1, 0], k: [[1, 0], [0, 1]], v: [[1], [2]], backward: { grad_output: [1] },
    include: ['weights', 'grad_q', 'delta', 'grad_masked', 'grad_k'] };
  const got = (await postJson(s.port, '/v1/attention', one)).json();
  assert.equal(got.grad_q.length, 2);
  assert.equal(typeof got.delta, 'number');
  assert.equal(got.grad_masked.length, 2);
  assert.equal(got.grad_k.length, 2);
  // dS = P (dP - D): dP = V^T row = [1, 2], D = output
  const w = got.weights, out = w[0] * 1 + w[1] * 2;
  assert.ok(Math.abs(got.grad_masked[0] - w[0] * (1 - out)) < 1e-15);
  const matrix = { ...one, q: [[1, 0]], backward: { grad_output: [[1]] } };
  const batch = (await postJson(s.port, '/v1/attention/batch', { items: [matrix] })).json();
  assert.equal(batch.results[0].status, 200);
  assert.deepEqual(batch.results[0].body.grad_q[0], got.grad_q);
});

test('bad backward input is a 422 that names the field', async () => {
  const base = { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[1], [2]] };
  const cases = [
    [{ backward: { grad_output: [[1, 2], [3, 4]] } }, 'shape-mismatch', '/backward/grad_output', /must be the output's shape \(n_q, d_v\) = \(2, 1\)/],
    [{ backward: {} }, 'missing-field', '/backward', /exactly one/],
    [{ backward: { seed: 1, grad_output: [[1], [2]] } }, 'invalid-value', '/backward', /exactly one/],
    [{ backward: { seed: -1 } }, 'invalid-value', '/backward/seed', /from 0/],
    [{ backward: [1] }, 'invalid-value', '/backward', /must be an object/],
    [{ backward: { seed: 1 }, rows: [0] }, 'invalid-value', '/backward', /needs every query row/],
    [{ include: ['grad_q'] }, 'invalid-value', '/include/0', /a step this request does not make/],
    [{ backward: { seed: 1 }, include: ['grad_q_rope'] }, 'invalid-value', '/include/0', /a step this request does not make/],
  ];
  for (const [extra, type, pointer, detail] of cases) {
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention', { ...base, ...extra }), 422);
    assert.equal(p.type, `/problems/${type}`, JSON.stringify(extra));
    assert.equal(p.errors[0].pointer, pointer, JSON.stringify(extra));
    assert.match(p.errors[0].detail, detail, JSON.stringify(extra));
    assert.ok(p.errors[0].hint, `${JSON.stringify(extra)} has a hint`);
  }
});

test('the text page prints the backward steps after the forward, numbered, in both languages', async () => {
  const body = { q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
    backward: { grad_output: [[1, 0], [0, 1]] }, include: ['weights', 'grad_masked', 'delta'] };
  const json = (await postJson(s.port, '/v1/attention', body)).json();
  const page = (await postJson(s.port, '/v1/attention?format=text', body)).body;
  const at = page.indexOf('backward step 5  grad_masked = dS = weights * (dP - D), 0 where blocked');
  assert.ok(at > page.indexOf('step 5  output'), page);
  const rows = page.slice(at).split('\n').slice(2, 4);
  // dS rows as the JSON answer holds them, at 4 decimals
  rows.forEach((line, i) => assert.deepEqual(line.trim().split(/\s+/).slice(1).map(Number),
    json.grad_masked[i].map((x) => Number(x.toFixed(4)))));
  assert.match(page, /backward step 4  delta = D = sum\(dO \* output, axis=-1\)/);
  const ko = (await postJson(s.port, '/v1/attention?format=text&lang=ko', body)).body;
  assert.match(ko, /역전파 단계 5  grad_masked = /);
});

test('/v1/multihead: every gradient agrees with torch.autograd (self, cross, GQA, both layouts, a mask)', async () => {
  assert.ok(fixtures.multihead.length >= 5);
  for (const { name, request, want } of fixtures.multihead) {
    const r = await postJson(s.port, '/v1/multihead', request);
    assert.equal(r.status, 200, `${name}: ${r.body}`);
    const got = r.json();
    for (const [key, value] of Object.entries(want)) assertClose(got[key], value, `${name} ${key}`);
    // the head's steps lead with the head; the projections' gradients keep the weights' layout
    assert.equal(got.grad_weights.length, request.heads);
    assert.deepEqual(got.shapes.grad_w_k, [got.grad_w_k.length, got.grad_w_k[0].length]);
  }
});

test('/v1/multihead: a gradient it does not make, rows, or a dO of another shape is a 422', async () => {
  const base = { heads: 2, random: { seed: 1, n: 3, d_model: 4 } };
  const cases = [
    [{ backward: { grad_output: [[1, 2]] } }, '/backward/grad_output', /\(n_q, d_model\) = \(3, 4\)/],
    [{ backward: { seed: 1 }, rows: [0] }, '/backward', /needs every query row/],
    [{ backward: { seed: 1 }, include: ['grad_x_q'] }, '/include/0', /a step this request does not make/],
    [{ include: ['grad_x'] }, '/include/0', /a step this request does not make/],
  ];
  for (const [extra, pointer, detail] of cases) {
    const p = assertProblem(assert, await postJson(s.port, '/v1/multihead', { ...base, ...extra }), 422);
    assert.equal(p.errors[0].pointer, pointer, JSON.stringify(extra));
    assert.match(p.errors[0].detail, detail, JSON.stringify(extra));
  }
  const seeded = (await postJson(s.port, '/v1/multihead', { ...base, backward: { seed: 2 } })).json();
  assert.deepEqual(seeded.steps.map((x) => x.name).filter((x) => x.startsWith('grad_') || x === 'delta').slice(0, 3),
    ['grad_output', 'grad_w_o', 'grad_weights']);
  assert.deepEqual(seeded.shapes.grad_masked, [2, 3, 3]);
});

test('/v1/shapes?backward=true lists the gradients after the forward rows, each the shape of what it differentiates', async () => {
  const { request } = await import('./lib.mjs');
  const r = await request(s.port, { path: '/v1/shapes?n=10&n_kv=12&d_model=512&heads=8&backward=true' });
  assert.equal(r.status, 200, r.body);
  const rows = r.json().rows, at = rows.findIndex((x) => x.op === 'dO @ W_O^T');
  assert.equal(rows[at - 1].op, 'concat @ W_O', 'after every forward row');
  const result = Object.fromEntries(rows.slice(at).map((x) => [x.op, x.result]));
  assert.deepEqual(result['concat^T @ dO'], [512, 512]); // W_O's shape
  assert.deepEqual(result['dO_i @ V^T'], [10, 12]); // the weights' shape
  assert.deepEqual(result['grad_scores^T @ Q'], [12, 64]); // one head's K
  assert.deepEqual(result['grad_Q @ W_Q^T'], [10, 512]); // X's
  const plain = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8' });
  assert.equal(plain.json().rows.length, 13);
  const bad = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&backward=yes' });
  assert.equal(assertProblem(assert, bad, 422).parameter, 'backward');
});

test('explain works the row\'s dS by hand: D term by term, each key\'s P (dP - D)', async () => {
  const body = { q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1, 2], [3, 4], [5, 6]],
    mask: 'causal', backward: { seed: 4 }, explain: { row: 2 } };
  const got = (await postJson(s.port, '/v1/attention', body)).json();
  const x = got.explain.backward;
  assert.deepEqual(x.grad_output, got.grad_output[2]);
  x.delta_terms.forEach((t, c) => assert.equal(t, got.grad_output[2][c] * got.output[2][c]));
  assertClose(x.delta, x.delta_terms.reduce((a, t) => a + t, 0), 'delta = Σ terms');
  assert.equal(x.delta, got.delta[2]);
  x.keys.forEach((k, j) => {
    assert.equal(k.grad_masked, got.grad_masked[2][j]);
    assertClose(k.grad_masked, k.weight * (k.grad_weight - x.delta), `dS[${j}] = P (dP - D)`);
  });
  const page = (await postJson(s.port, '/v1/attention?format=text', body)).body;
  assert.match(page, /backward: D = Σ dO·output = /);
  assert.match(page, /dS\[k2\] = weight × \(dP − D\) = /);
});

test('streamed: over --max-cells, asking only grad_q, grad_k, grad_v (and the output), the backward needs no (n_q, n_k) matrix', async () => {
  const small = await startServer(['--log', 'off', '--max-cells', '256']);
  try {
    const body = { random: { seed: 5, n_q: 20, n_k: 30, d_k: 4, d_v: 3 }, mask: 'causal', rope: {},
      softcap: 3, sink_logit: 0.3, backward: { seed: 2 },
      include: ['output', 'lse', 'grad_q', 'grad_k', 'grad_v', 'delta', 'grad_sink_logit'] };
    const streamed = await postJson(small.port, '/v1/attention', body); // 600 cells > 256
    assert.equal(streamed.status, 200, streamed.body);
    const full = (await postJson(s.port, '/v1/attention', body)).json(); // built whole
    const got = streamed.json();
    for (const key of ['grad_q', 'grad_k', 'grad_v', 'delta', 'grad_sink_logit'])
      assertClose(got[key], full[key], `streamed ${key}`);
    // asking for a step only the whole pass holds is refused over the limit, as the forward's
    const refused = await postJson(small.port, '/v1/attention', { ...body, include: ['grad_masked'] });
    assert.equal(assertProblem(assert, refused, 422).type, '/problems/limit-exceeded');
    // documents stream on the default server too: the same gradients
    const docs = { ...body, documents: { lengths: [8, 12] }, random: { seed: 5, n_q: 20, n_k: 20, d_k: 4, d_v: 3 } };
    const a = (await postJson(s.port, '/v1/attention', docs)).json();
    const b = (await postJson(s.port, '/v1/attention', { ...docs, include: [...docs.include, 'weights'] })).json();
    for (const key of ['grad_q', 'grad_k', 'grad_v']) assertClose(a[key], b[key], `documents ${key}`);
  } finally {
    await small.stop();
  }
});
