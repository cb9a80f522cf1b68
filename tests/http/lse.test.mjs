// tests/http/lse.test.mjs — the row statistics a kernel returns beside its output: `lse`
// (each row's natural log-sum-exp of its visible masked scores, the sink logit counted;
// null for a fully masked row), `row_sum` (Σ e^(masked − row_max)) and `row_max`, as
// includable steps. Each is checked against a naive loop written here, on random problems
// with every mask kind, a bias, and the sink logit, through /v1/attention (JSON and text),
// a vector q and a batch.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postBytes, postJson, request, rng, startServer } from './lib.mjs';
import { assertNear, maskedScores, matrix, rowStats } from './reference.mjs';

function assertStats(answer, problem, z, what) {
  const want = rowStats(maskedScores(problem), z);
  want.forEach(([max, sum, lse], i) => {
    assertNear(answer.row_max[i], max, `${what} row_max[${i}]`);
    assertNear(answer.row_sum[i], sum, `${what} row_sum[${i}]`);
    assertNear(answer.lse[i], lse, `${what} lse[${i}]`);
  });
}

let s;
before(async () => { s = await startServer(['--log', 'off']); });
after(async () => { await s.stop(); });

const INCLUDE = ['output', 'row_max', 'row_sum', 'lse'];

/** Random problems: each mask kind, with and without a bias, some rows fully masked. */
function problems() {
  const r = rng(33);
  const out = [];
  for (const [nQ, nK] of [[1, 1], [3, 5], [7, 4], [9, 9], [16, 33]]) {
    const dK = 1 + Math.floor(r() * 6), dV = 1 + Math.floor(r() * 4);
    const base = { q: matrix(r, nQ, dK), k: matrix(r, nK, dK), v: matrix(r, nK, dV) };
    const cells = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, () => (i === 1 ? 0 : r() < 0.6 ? 1 : 0)));
    const padding = Array.from({ length: nK }, (_, j) => (j === 0 || r() < 0.7 ? 1 : 0));
    out.push({ name: `${nQ}x${nK} unmasked`, ...base });
    out.push({ name: `${nQ}x${nK} cells`, ...base, mask: cells });
    out.push({ name: `${nQ}x${nK} key padding`, ...base, mask: padding });
    out.push({ name: `${nQ}x${nK} causal`, ...base, mask: 'causal' });
    out.push({ name: `${nQ}x${nK} bias, scale 0.3`, ...base, bias: matrix(r, nQ, nK, 5),
      scale: 0.3 });
  }
  return out;
}

test('lse, row_sum and row_max match a naive log-sum-exp on every mask kind', async () => {
  for (const { name, ...p } of problems()) {
    const r = await postJson(s.port, '/v1/attention', { ...p, include: INCLUDE });
    assert.equal(r.status, 200, `${name}: ${r.body}`);
    const a = JSON.parse(r.body);
    assertStats(a, p, undefined, name);
    assert.deepEqual(a.shapes.lse, [p.q.length]);
    assert.deepEqual(a.shapes.row_sum, [p.q.length]);
    // Listed as steps after the five, which keep their numbers.
    const names = a.steps.map((st) => st.name);
    assert.deepEqual(names.slice(-2), ['row_sum', 'lse']);
    assert.equal(a.steps.find((st) => st.name === 'output').step, 5);
    assert.deepEqual(a.steps.at(-1).shape, [p.q.length]);
  }
});

test('a fully masked row: lse and row_max null, row_sum 0', async () => {
  const p = { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1], [2], [3]],
    mask: [[1, 1, 1], [0, 0, 0]] };
  const a = JSON.parse((await postJson(s.port, '/v1/attention', { ...p, include: INCLUDE })).body);
  assert.equal(a.lse[1], null);
  assert.equal(a.row_max[1], null);
  assert.equal(a.row_sum[1], 0);
  assertStats(a, p, undefined, 'fully masked');
});

test('huge scores keep a finite lse: the max is subtracted first', async () => {
  const p = { q: [[1e150]], k: [[1e150], [-1e150]], v: [[1], [2]], scale: 1e-6 };
  const a = JSON.parse((await postJson(s.port, '/v1/attention', { ...p, include: INCLUDE })).body);
  assert.ok(Number.isFinite(a.lse[0]), JSON.stringify(a.lse));
  assertNear(a.lse[0], 1e294, 'lse of e^1e294 + e^-1e294');
});

test('the sink logit is counted in the log-sum-exp, and alone in a fully masked row', async () => {
  const r = rng(7);
  const p = { q: matrix(r, 4, 3), k: matrix(r, 6, 3), v: matrix(r, 6, 2),
    mask: [[1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 0], [1, 1, 0, 0, 0, 0]] };
  for (const z of [-3, 0.5, 4]) {
    const a = JSON.parse((await postJson(s.port, '/v1/attention',
      { ...p, sink_logit: z, include: INCLUDE })).body);
    assertStats(a, p, z, `sink_logit ${z}`);
    assertNear(a.lse[1], z, 'the fully masked row: the sink alone');
  }
});

test('a vector q answers scalars; a batch answers each item', async () => {
  const r = rng(11);
  const k = matrix(r, 5, 3), v = matrix(r, 5, 2), q = matrix(r, 1, 3)[0];
  const one = JSON.parse((await postJson(s.port, '/v1/attention',
    { q, k, v, include: INCLUDE })).body);
  const [[max, sum, lse]] = rowStats(maskedScores({ q: [q], k }));
  assertNear(one.lse, lse, 'vector lse');
  assertNear(one.row_sum, sum, 'vector row_sum');
  assertNear(one.row_max, max, 'vector row_max');
  assert.deepEqual(one.shapes.lse, []);

  const items = problems().slice(0, 6).map(({ name, ...p }) => ({ ...p, include: INCLUDE }));
  const b = JSON.parse((await postJson(s.port, '/v1/attention/batch', { items })).body);
  assert.equal(b.results.length, items.length);
  b.results.forEach((res, i) => assertStats(res.body, items[i], undefined, `batch item ${i}`));
});

test('text draws lse and row_sum as labelled columns', async () => {
  const p = { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1], [2], [3]],
    mask: [[1, 1, 1], [0, 0, 0]], include: ['lse', 'row_sum'] };
  const r = await request(s.port, { method: 'POST', path: '/v1/attention',
    headers: { 'Content-Type': 'application/json', Accept: 'text/plain' }, body: JSON.stringify(p) });
  assert.equal(r.status, 200, r.body);
  const [[, sum, lse]] = rowStats(maskedScores(p));
  const lseRows = r.body.match(/lse = row_max \+ ln row_sum\n\s+lse\n\s+q0\s+(\S+)\n\s+q1\s+(\S+)/);
  assert.ok(lseRows, r.body);
  assert.equal(Number(lseRows[1]), Number(lse.toFixed(4)));
  assert.equal(lseRows[2], '-inf');
  assert.equal(Number(r.body.match(/row_sum = [^\n]*\n\s+sum\n\s+q0\s+(\S+)/)[1]),
    Number(sum.toFixed(4)));
});

test('an unknown name near lse is hinted', async () => {
  const r = await postJson(s.port, '/v1/attention',
    { q: [[1]], k: [[1]], v: [[1]], include: ['logsumexp'] });
  assert.equal(r.status, 422, r.body);
  assert.match(r.body, /lse/);
});

test('multihead: each head\'s lse and row_sum, (h, n_q), from its own masked scores', async () => {
  for (const extra of [{}, { mask: 'causal' }, { kv_heads: 1 }, { sink_logit: 0.25 }]) {
    const body = { heads: 4, random: { seed: 5, n: 6, d_model: 8 }, ...extra,
      include: ['masked', 'row_sum', 'lse'] };
    const r = await postJson(s.port, '/v1/multihead', body);
    assert.equal(r.status, 200, r.body);
    const a = JSON.parse(r.body);
    assert.deepEqual(a.shapes.lse, [4, 6]);
    assert.deepEqual(a.steps.slice(-2).map((st) => [st.name, st.shape]),
      [['row_sum', [4, 6]], ['lse', [4, 6]]]);
    a.masked.forEach((head, h) => {
      rowStats(head, extra.sink_logit).forEach(([, sum, lse], i) => {
        assertNear(a.row_sum[h][i], sum, `${JSON.stringify(extra)} head ${h} row_sum[${i}]`);
        assertNear(a.lse[h][i], lse, `${JSON.stringify(extra)} head ${h} lse[${i}]`);
      });
    });
  }
  // Not in the default answer: only when named.
  const plain = JSON.parse((await postJson(s.port, '/v1/multihead',
    { heads: 2, random: { seed: 5, n: 3, d_model: 4 } })).body);
  assert.equal(plain.lse, undefined);
  assert.equal(plain.shapes.lse, undefined);
});

// ------------------------------------------------------------------ V2: LSE, ROW_SUM, ROW_MAX

const V2 = (model) => `/v2/models/${model}/infer`;
const fp64 = (name, rowsOf) => ({ name, datatype: 'FP64', shape: [rowsOf.length, rowsOf[0].length],
  data: rowsOf.flat() });
const outputOf = (answer, name) => answer.outputs.find((o) => o.name === name);

test('V2 attention: LSE, ROW_SUM and ROW_MAX are (n_q) outputs, null where fully masked', async () => {
  const r = rng(21);
  const p = { q: matrix(r, 5, 3), k: matrix(r, 7, 3), v: matrix(r, 7, 2),
    mask: Array.from({ length: 5 }, (_, i) => Array.from({ length: 7 }, () => (i === 2 ? 0 : 1))) };
  const body = { inputs: [fp64('Q', p.q), fp64('K', p.k), fp64('V', p.v),
    { name: 'MASK', datatype: 'BOOL', shape: [5, 7], data: p.mask.flat().map(Boolean) }],
  outputs: [{ name: 'LSE' }, { name: 'ROW_SUM' }, { name: 'ROW_MAX' }] };
  const res = await postJson(s.port, V2('attention'), body);
  assert.equal(res.status, 200, res.body);
  const a = JSON.parse(res.body);
  const want = rowStats(maskedScores(p));
  for (const [name, k] of [['ROW_MAX', 0], ['ROW_SUM', 1], ['LSE', 2]]) {
    const o = outputOf(a, name);
    assert.deepEqual(o.shape, [5]);
    want.forEach((w, i) => assertNear(o.data[i], w[k], `${name}[${i}]`));
  }
  // Binary: the fully masked row's LSE is -inf itself, not a stand-in.
  const bin = await postBytes(s.port, V2('attention'),
    JSON.stringify({ ...body, outputs: [{ name: 'LSE', parameters: { binary_data: true } }] }));
  assert.equal(bin.status, 200);
  const n = Number(bin.headers['inference-header-content-length']);
  assert.equal(bin.raw.length - n, 5 * 8);
  const lse = [0, 1, 2, 3, 4].map((i) => bin.raw.readDoubleLE(n + 8 * i));
  assert.equal(lse[2], -Infinity);
  want.forEach((w, i) => assertNear(i === 2 ? null : lse[i], w[2], `binary LSE[${i}]`));
});

test('V2: a batch answers (B, n_q); multihead answers (h, n_q)', async () => {
  const r = rng(22);
  const items = [0, 1].map(() => ({ q: matrix(r, 3, 2), k: matrix(r, 4, 2), v: matrix(r, 4, 2) }));
  const stack = (name, key) => ({ name, datatype: 'FP64', shape: [2, items[0][key].length, 2],
    data: items.flatMap((it) => it[key].flat()) });
  const res = await postJson(s.port, V2('attention'), { inputs: [stack('Q', 'q'), stack('K', 'k'),
    stack('V', 'v')], outputs: [{ name: 'LSE' }] });
  assert.equal(res.status, 200, res.body);
  const o = outputOf(JSON.parse(res.body), 'LSE');
  assert.deepEqual(o.shape, [2, 3]);
  items.forEach((it, b) => rowStats(maskedScores(it)).forEach(([, , lse], i) =>
    assertNear(o.data[b * 3 + i], lse, `batch ${b} LSE[${i}]`)));

  const x = matrix(r, 4, 4), w = () => matrix(r, 4, 4, 0.5);
  const mh = await postJson(s.port, V2('multihead'), { inputs: [fp64('X', x), fp64('W_Q', w()),
    fp64('W_K', w()), fp64('W_V', w()), fp64('W_O', w())], parameters: { heads: 2, causal: true },
  outputs: [{ name: 'MASKED' }, { name: 'LSE' }, { name: 'ROW_SUM' }] });
  assert.equal(mh.status, 200, mh.body);
  const m = JSON.parse(mh.body);
  const masked = outputOf(m, 'MASKED');
  assert.deepEqual(outputOf(m, 'LSE').shape, [2, 4]);
  for (let h = 0; h < 2; h++) {
    const head = [0, 1, 2, 3].map((i) => masked.data.slice((h * 4 + i) * 4, (h * 4 + i + 1) * 4));
    rowStats(head).forEach(([, sum, lse], i) => {
      assertNear(outputOf(m, 'LSE').data[h * 4 + i], lse, `multihead head ${h} LSE[${i}]`);
      assertNear(outputOf(m, 'ROW_SUM').data[h * 4 + i], sum, `multihead head ${h} ROW_SUM[${i}]`);
    });
  }
});
