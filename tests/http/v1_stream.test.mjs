// tests/http/v1_stream.test.mjs — /v1/attention over --max-cells: a request whose answer
// needs no (n_q, n_k) matrix (include within output, row_max, row_sum, lse; JSON; no
// explain, pitfall or dropout) is computed streamed (core/stream.h) instead of refused;
// one that needs the matrices is refused as before, with a hint naming the way out.
// Checked against the definition (tests/http/reference.mjs) and against the full path
// of a server whose --max-cells lets it build them.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, request, rng, startServer } from './lib.mjs';
import { assertNear, maskedScores, matrix, rowStats, weightsAndOutput } from './reference.mjs';

const MAX_CELLS = 4096; // the problems below have 80 x 90 = 7,200 (n_q, n_k) cells
const STATS = ['output', 'row_max', 'row_sum', 'lse'];

let small, full;
before(async () => {
  small = await startServer(['--log', 'off', '--max-cells', String(MAX_CELLS)]);
  full = await startServer(['--log', 'off']);
});
after(async () => {
  await small.stop();
  await full.stop();
});

function problem(seed) {
  const r = rng(seed);
  return { q: matrix(r, 80, 5), k: matrix(r, 90, 5), v: matrix(r, 90, 3) };
}

test('over --max-cells, output and the row statistics are streamed, as the definition gives them', async () => {
  const base = problem(1);
  const padding = Array.from({ length: 90 }, (_, j) => (j % 7 === 3 ? 0 : 1));
  for (const extra of [{}, { mask: 'causal' }, { mask: padding }, { scale: 0.3 }]) {
    const p = { ...base, ...extra };
    const r = await postJson(small.port, '/v1/attention', { ...p, include: STATS });
    assert.equal(r.status, 200, r.body);
    const a = r.json();
    const masked = maskedScores(p);
    const { output } = weightsAndOutput(masked, p.v);
    const stats = rowStats(masked);
    const what = JSON.stringify(Object.keys(extra));
    assert.deepEqual(a.shapes.output, [80, 3]);
    assert.ok(!('weights' in a) && !('summary' in a), `${what}: only what was asked`);
    output.forEach((row, i) => row.forEach((x, c) => assertNear(a.output[i][c], x, `${what} output[${i}][${c}]`)));
    stats.forEach(([max, sum, lse], i) => {
      assertNear(a.row_max[i], max, `${what} row_max[${i}]`);
      assertNear(a.row_sum[i], sum, `${what} row_sum[${i}]`);
      assertNear(a.lse[i], lse, `${what} lse[${i}]`);
    });
    // bottom-right causal with n_k > n_q: every row sees a key; no warning to give
    assert.deepEqual(a.warnings, []);
  }
});

test('streamed with variants and rows: the full path\'s numbers to 1e-12', async () => {
  const base = problem(2);
  for (const extra of [{ rope: {} }, { alibi: 0.25, mask: 'causal' }, { window: { left: 9, right: 2 } },
    { softcap: 1.5 }, { sink_logit: 0.75 }, { rows: [79, 0, 40, 40] },
    { rows: [3, 77], rope: {}, window: { left: 30, right: 0 }, sink_logit: -0.5 }]) {
    const body = { ...base, ...extra, include: STATS };
    const [s, f] = await Promise.all([postJson(small.port, '/v1/attention', body),
      postJson(full.port, '/v1/attention', body)]);
    assert.equal(s.status, 200, s.body);
    assert.equal(f.status, 200, f.body);
    const a = s.json(), b = f.json();
    const what = JSON.stringify(extra);
    assert.deepEqual(a.shapes, b.shapes, what);
    assert.deepEqual(a.steps, b.steps, what);
    b.output.forEach((row, i) => row.forEach((x, c) => assertNear(a.output[i][c], x, `${what} output[${i}][${c}]`)));
    for (const key of ['row_max', 'row_sum', 'lse'])
      b[key].forEach((x, i) => assertNear(a[key][i], x, `${what} ${key}[${i}]`));
  }
});

test('streamed fully masked rows: null lse, zero output, a warning each', async () => {
  const p = { ...problem(3), mask: Array.from({ length: 90 }, () => 0) };
  const r = await postJson(small.port, '/v1/attention', { ...p, rows: [5, 2], include: STATS });
  assert.equal(r.status, 200, r.body);
  const a = r.json();
  assert.deepEqual(a.lse, [null, null]);
  assert.deepEqual(a.row_sum, [0, 0]);
  assert.deepEqual(a.output, [[0, 0, 0], [0, 0, 0]]);
  assert.deepEqual(a.warnings.map((w) => [w.code, w.row]), [['row_fully_masked', 5], ['row_fully_masked', 2]]);
});

test('over --max-cells, what needs the matrices is refused as before, with the way out', async () => {
  const p = problem(4);
  const cases = [
    // named by whichever of q and k has more rows: k's 90 here
    ['/v1/attention', { ...p }, '/k'],
    ['/v1/attention', { ...p, include: ['output', 'weights'] }, '/k'],
    ['/v1/attention', { ...p, include: ['output'], explain: { row: 0 } }, '/k'],
    ['/v1/attention', { ...p, include: ['output'], dropout: { p: 0.1, seed: 1 } }, '/k'],
    ['/v1/attention', { q: p.k, k: p.q, v: p.v.slice(0, 80) }, '/q'],
    ['/v1/attention', { random: { seed: 1, n_q: 80, n_k: 90, d_k: 4, d_v: 2 } }, '/random/n_k'],
  ];
  for (const [path, body, pointer] of cases) {
    const r = await postJson(small.port, path, body);
    const e = assertProblem(assert, r, 422);
    assert.match(e.type, /limit-exceeded/, r.body);
    assert.equal(e.errors[0].pointer, pointer, r.body);
    assert.match(e.errors[0].hint, /row statistics only/);
  }
  const batch = await postJson(small.port, '/v1/attention/batch', { items: [{ ...p, include: ['output'] }] });
  assert.equal(batch.status, 200, batch.body);
  const item = batch.json().results[0];
  assert.equal(item.status, 422);
  assert.equal(item.body.errors[0].pointer, '/items/0/k');
  assert.match(item.body.errors[0].hint, /alone to \/v1\/attention/);
  const page = await request(small.port, { method: 'POST', path: '/v1/attention?format=text',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...p, include: ['output'] }) });
  assertProblem(assert, page, 422);
});

test('random makes a problem over --max-cells that streams', async () => {
  const body = { random: { seed: 3, n_q: 100, n_k: 70, d_k: 8, d_v: 4 }, mask: 'causal', include: STATS };
  const [s, f] = await Promise.all([postJson(small.port, '/v1/attention', body),
    postJson(full.port, '/v1/attention', body)]);
  assert.equal(s.status, 200, s.body);
  const a = s.json(), b = f.json();
  assert.deepEqual(a.lse.map((x) => x === null), b.lse.map((x) => x === null), 'the same rows see no key');
  b.lse.forEach((x, i) => assertNear(a.lse[i], x, `lse[${i}]`));
  assert.equal(a.warnings.length, b.warnings.filter((w) => w.code === 'row_fully_masked').length);
});

test('streamed, rows is bounded by the output it builds, not by weights it never holds', async () => {
  const p = { ...problem(5), include: ['lse'] };
  const many = Array.from({ length: 200 }, (_, i) => (i * 7) % 80); // 200 x 90 weights: over 4,096
  const r = await postJson(small.port, '/v1/attention', { ...p, rows: many });
  assert.equal(r.status, 200, r.body);
  const lse = rowStats(maskedScores(p)).map((x) => x[2]);
  many.forEach((i, at) => assertNear(r.json().lse[at], lse[i], `lse[${at}] = row ${i}`));
  const over = Array.from({ length: 1400 }, () => 0); // 1,400 x 3 outputs: over 4,096
  const e = assertProblem(assert, await postJson(small.port, '/v1/attention', { ...p, rows: over }), 422);
  assert.equal(e.errors[0].pointer, '/rows');
  assert.match(e.detail, /output would be 1400 x 3 cells/);
});
