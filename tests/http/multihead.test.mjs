// tests/http/multihead.test.mjs — /v1/multihead, /v1/shapes and /v1/attention/batch over
// real HTTP, and docs/api.md's numpy generator against what `random` fills in.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { postJson, request, startServer } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
let s;
before(async () => {
  s = await startServer(['--max-batch', '4']);
});
after(async () => {
  await s.stop();
});

test('POST /v1/multihead: seed 000 sizes, 8 heads of 64, random inputs', async () => {
  const r = await postJson(s.port, '/v1/multihead', {
    heads: 8,
    random: { seed: 1, n: 10, d_model: 512 },
    include: ['weights', 'output'],
  });
  assert.equal(r.status, 200);
  const b = r.json();
  assert.equal(b.d_k, 64);
  assert.deepEqual(b.shapes.weights, [8, 10, 10]);
  assert.equal(b.weights.length, 8);
  assert.equal(b.output.length, 10);
  assert.equal(b.output[0].length, 512);
  for (const head of b.weights) for (const row of head) {
    assert.ok(Math.abs(row.reduce((a, x) => a + x, 0) - 1) < 1e-12);
  }
});

test('POST /v1/multihead: a problem names the pointer and hints at the layout', async () => {
  const r = await postJson(s.port, '/v1/multihead', {
    heads: 2,
    kv_heads: 1,
    x: [[1, 2, 3, 4]],
    random: { seed: 1 },
    w_k: [[1, 0, 0, 0], [0, 1, 0, 0]],
  });
  assert.equal(r.status, 422);
  assert.match(r.headers['content-type'], /^application\/problem\+json/);
  const p = r.json();
  assert.equal(p.type, '/problems/shape-mismatch');
  assert.equal(p.errors[0].pointer, '/w_k');
  assert.match(p.errors[0].hint, /weight_layout to "out_in"/);
});

test('POST /v1/multihead: a wrong bias with wide random inputs is a 422 at /b_o, filled nothing', async () => {
  // Issue 32: d_model 2048 asks random for four 2048 x 2048 weights; b_o has one number.
  // Every field is checked before random fills anything (the fill is the run step's).
  const body = { heads: 1, random: { seed: 1, n: 1, d_model: 2048 }, b_o: [1] };
  const r = await postJson(s.port, '/v1/multihead', body);
  assert.equal(r.status, 422, r.body);
  const p = r.json();
  assert.equal(p.type, '/problems/shape-mismatch');
  assert.equal(p.errors[0].pointer, '/b_o');
  assert.match(p.detail, /b_o has 1 x 1 numbers but must be a vector of 2048/);
  // The same request with a b_o of the right length is computed, its inputs filled once.
  const ok = await postJson(s.port, '/v1/multihead', { ...body, b_o: new Array(2048).fill(1),
    include: ['output'] });
  assert.equal(ok.status, 200, ok.body);
  assert.deepEqual(ok.json().shapes.output, [1, 2048]);
});

test('GET /v1/shapes: the seed table; HEAD too; a bad parameter is named', async () => {
  const r = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8' });
  assert.equal(r.status, 200);
  const rows = r.json().rows;
  assert.deepEqual(rows[0], {
    op: 'X_q @ W_Q', left: [10, 512], right: [512, 64], result: [10, 64],
    meaning: "one head's queries: each token's d_model numbers become d_k",
  });
  assert.deepEqual(rows.at(-1).result, [10, 512]);
  const h = await request(s.port, { method: 'HEAD', path: '/v1/shapes?n=10&d_model=512&heads=8' });
  assert.equal(h.status, 200);
  assert.equal(h.body, '');
  const bad = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=3' });
  assert.equal(bad.status, 422);
  assert.equal(bad.json().parameter, 'heads');
  const svg = await request(s.port, {
    path: '/v1/shapes?n=1&d_model=2&heads=1', headers: { Accept: 'image/svg+xml' },
  });
  assert.equal(svg.status, 406);
});

test('POST /v1/attention/batch: items independent, absolute pointers, --max-batch', async () => {
  const keys = [[1, 0], [0, 1], [0.8, 0.2]];
  const v = [[10, 0], [0, 20], [8, 4]];
  const r = await postJson(s.port, '/v1/attention/batch', {
    items: [
      { q: [[1, 0]], k: keys, v, scale: 1, include: ['summary'] },
      { q: [[1, 0]], k: [[1, 0], [0, 1, 1], [0.8, 0.2]], v, scale: 1 },
      { q: [[2, 0]], k: keys, v, scale: 1, include: ['summary'] },
    ],
  });
  assert.equal(r.status, 200);
  const [a, bad, c] = r.json().results;
  assert.equal(a.status, 200);
  assert.equal(bad.status, 422);
  assert.equal(bad.body.errors[0].pointer, '/items/1/k/1');
  // The experiment: doubling the query sharpens the weights toward key 0.
  assert.ok(c.body.summary.max_weight[0] > a.body.summary.max_weight[0]);
  const over = await postJson(s.port, '/v1/attention/batch', {
    items: Array.from({ length: 5 }, () => ({ q: [[1]], k: [[1]], v: [[1]] })),
  });
  assert.equal(over.status, 422);
  assert.equal(over.json().type, '/problems/limit-exceeded');
  const svg = await request(s.port, {
    method: 'POST', path: '/v1/attention/batch?format=svg', body: '{"items":[]}',
  });
  assert.equal(svg.status, 406);
});

test("docs/api.md's numpy generator gives the numbers random fills in", async () => {
  const page = readFileSync(path.join(here, '..', '..', 'docs', 'api.md'), 'utf8');
  const m = page.match(/<!-- random-generator -->\n```python\n([\s\S]*?)```/);
  assert.ok(m, 'docs/api.md has the generator snippet');
  const script = `${m[1]}
import json, sys
print(json.dumps({"x": x.tolist(), "w_q": w_q.tolist()}))
`;
  const numpy = JSON.parse(execFileSync('/usr/bin/python3', ['-W', 'error', '-c', script], {
    encoding: 'utf8', maxBuffer: 64 << 20,
  }));
  const r = await postJson(s.port, '/v1/multihead', {
    heads: 8,
    random: { seed: 1, n: 10, d_model: 512 },
    include: ['x', 'w_q'],
  });
  assert.equal(r.status, 200);
  const b = r.json();
  assert.deepEqual(b.x, numpy.x);
  assert.deepEqual(b.w_q, numpy.w_q);
});

test('multi-head as text: every step, one block per head with its kv head', async () => {
  const r = await request(s.port, {
    method: 'POST',
    path: '/v1/multihead?format=text',
    body: JSON.stringify({
      heads: 4, kv_heads: 2, random: { seed: 2, n: 3, d_model: 8 },
      include: ['weights', 'summary'], labels: { queries: ['사과', 'b', 'c'] },
    }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^text\/plain; charset=utf-8/);
  const lines = r.body.split('\n');
  assert.match(lines[0], /^multi-head self-attention  n_q 3  n_k 3  d_model 8  heads 4  kv_heads 2  d_k 2/);
  for (let step = 1; step <= 11; step++) assert.ok(r.body.includes(`\nstep ${step}  `), `step ${step}`);
  assert.ok(r.body.includes('  head 1 (kv head 0)\n'));
  assert.ok(r.body.includes('  head 2 (kv head 1)\n'));
  // Labels are aligned by display width: 사과 takes two columns, like "ab".
  const rows = lines.filter((l) => /^  (사과|b   |c   )/.test(l));
  assert.ok(rows.length >= 3);
});

test('multi-head as SVG: a panel per head and one for the mean, valid XML', async () => {
  const r = await request(s.port, {
    method: 'POST',
    path: '/v1/multihead',
    headers: { Accept: 'image/svg+xml' },
    body: JSON.stringify({ heads: 2, random: { seed: 2, n: 3, d_model: 4 }, mask: 'causal' }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^image\/svg\+xml/);
  execFileSync('/usr/bin/python3', ['-c', 'import sys, xml.dom.minidom as m; m.parseString(sys.stdin.buffer.read())'], { input: r.body });
  assert.ok(r.body.includes('>head 0<'));
  assert.ok(r.body.includes('>head 1<'));
  assert.ok(r.body.includes('>mean of 2 heads<'));
});

test('the shape table as text, aligned', async () => {
  const r = await request(s.port, {
    path: '/v1/shapes?n=10&d_model=512&heads=8', headers: { Accept: 'text/plain' },
  });
  assert.equal(r.status, 200);
  const lines = r.body.split('\n');
  assert.equal(lines[0], 'shapes  n 10  n_kv 10  d_model 512  heads 8  kv_heads 8  d_k 64');
  assert.equal(lines[2], 'op                                          left       right     result  meaning');
  assert.ok(lines[3].startsWith('X_q @ W_Q                              (10, 512)   (512, 64)   (10, 64)  '));
  assert.ok(lines[9].startsWith('tiles(visible, B_q, B_k)                (10, 10)           -     (1, 1)  block_map: '));
  assert.ok(lines[12].startsWith('logsumexp(axis=-1)                      (10, 10)           -       (10)  lse: '));
  assert.ok(lines[15].startsWith('concat @ W_O                           (10, 512)  (512, 512)  (10, 512)  '));
  const svg = await request(s.port, { path: '/v1/shapes?n=1&d_model=2&heads=1&format=svg' });
  assert.equal(svg.status, 406);
});
