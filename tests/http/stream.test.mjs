// tests/http/stream.test.mjs — a V2 request that asks for OUTPUT and the row statistics
// only (LSE, ROW_SUM, ROW_MAX) is computed without an (n_q, n_k) matrix (core/stream.h):
// it agrees with the full path (the same request asking for WEIGHTS too) to 1e-12 on
// every value, with every mask kind and variant but dropout, in a batch too; and
// --max-cells then bounds its output only, while a request that asks for a matrix over
// it is still refused, naming the input and the way out.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postJson, rng, startServer } from './lib.mjs';

const values = (r, n, amp = 2) => Array.from({ length: n }, () => (r() * 2 - 1) * amp);
const INFER = '/v2/models/attention/infer';
const STREAMED = ['OUTPUT', 'LSE', 'ROW_SUM', 'ROW_MAX'];

let s;
before(async () => { s = await startServer(['--max-cells', '8192', '--log', 'off']); });
after(async () => { await s.stop(); });

function close(got, want, what) {
  assert.equal(got.length, want.length, what);
  got.forEach((g, i) => {
    if (want[i] === null || g === null) {
      assert.equal(g, want[i], `${what}[${i}]`);
      return;
    }
    assert.ok(Math.abs(g - want[i]) <= 1e-12 * Math.max(1, Math.abs(want[i])),
      `${what}[${i}]: streamed ${g}, full ${want[i]}`);
  });
}

/** The streamed answer and the full one (WEIGHTS asked too) of the same inputs. */
async function both(inputs, parameters = {}) {
  const ask = (names) => postJson(s.port, INFER,
    { inputs, parameters, outputs: names.map((name) => ({ name })) });
  const [streamed, full] = await Promise.all([ask(STREAMED), ask([...STREAMED, 'WEIGHTS'])]);
  assert.equal(streamed.status, 200, streamed.body);
  assert.equal(full.status, 200, full.body);
  const of = (r) => Object.fromEntries(JSON.parse(r.body).outputs.map((o) => [o.name, o]));
  return [of(streamed), of(full)];
}

const problem = (r, nQ, nK, d, dV = d) => [
  { name: 'Q', datatype: 'FP64', shape: [nQ, d], data: values(r, nQ * d) },
  { name: 'K', datatype: 'FP64', shape: [nK, d], data: values(r, nK * d) },
  { name: 'V', datatype: 'FP64', shape: [nK, dV], data: values(r, nK * dV) },
];

test('streamed and full agree on every mask kind and variant but dropout', async () => {
  const r = rng(1);
  const cases = [];
  for (const [nQ, nK] of [[1, 1], [5, 9], [63, 70], [65, 33]]) {
    const inputs = problem(r, nQ, nK, 4, 3);
    const mask = { name: 'MASK', datatype: 'BOOL', shape: [nQ, nK],
      data: Array.from({ length: nQ * nK }, (_, c) => Math.floor(c / nK) !== 1 && r() < 0.7) };
    const bias = { name: 'BIAS', datatype: 'FP64', shape: [nQ, nK], data: values(r, nQ * nK, 3) };
    cases.push([`${nQ}x${nK}`, inputs, {}]);
    cases.push([`${nQ}x${nK} mask`, [...inputs, mask], {}]);
    cases.push([`${nQ}x${nK} bias`, [...inputs, bias], { scale: 0.4 }]);
    cases.push([`${nQ}x${nK} causal`, inputs, { causal: true }]);
    cases.push([`${nQ}x${nK} rope, softcap`, inputs, { rope_base: 10000, softcap: 5 }]);
    cases.push([`${nQ}x${nK} alibi, window, sink`, inputs,
      { alibi: 0.25, window_left: 3, sink_tokens: 1, sink_logit: 0.5 }]);
  }
  for (const [name, inputs, parameters] of cases) {
    const [st, full] = await both(inputs, parameters);
    for (const out of STREAMED) close(st[out].data, full[out].data, `${name} ${out}`);
    assert.deepEqual(st.OUTPUT.shape, full.OUTPUT.shape);
  }
});

test('a batch streams each problem', async () => {
  const r = rng(2);
  const batched = problem(r, 6, 7, 3).map((t) => ({ ...t, shape: [2, ...t.shape],
    data: [...t.data, ...values(r, t.data.length)] }));
  const [st, full] = await both(batched, { causal: true });
  assert.deepEqual(st.LSE.shape, [2, 6]);
  for (const out of STREAMED) close(st[out].data, full[out].data, `batch ${out}`);
});

test('--max-cells bounds only what is built: 100 x 100 scores streamed, refused as a matrix', async () => {
  const inputs = problem(rng(3), 100, 100, 2); // 10,000 score cells > --max-cells 8192
  const ok = await postJson(s.port, INFER, { inputs, outputs: [{ name: 'OUTPUT' }, { name: 'LSE' }] });
  assert.equal(ok.status, 200, ok.body);
  const out = JSON.parse(ok.body).outputs;
  assert.deepEqual(out.map((o) => o.shape), [[100, 2], [100]]);
  assert.ok(out[1].data.every(Number.isFinite));
  const refused = await postJson(s.port, INFER, { inputs, outputs: [{ name: 'WEIGHTS' }] });
  assert.equal(refused.status, 400, refused.body);
  const p = JSON.parse(refused.body);
  assert.equal(p.type, '/problems/limit-exceeded');
  assert.equal(p.errors[0].pointer, '/inputs/0/shape');
  assert.match(p.errors[0].hint ?? p.hint, /OUTPUT, LSE, ROW_SUM and ROW_MAX only/);
  // None asked means WEIGHTS and OUTPUT: a matrix, refused the same way.
  const dflt = await postJson(s.port, INFER, { inputs });
  assert.equal(dflt.status, 400, dflt.body);
});

test('a non-finite step on the streamed path is the full path\'s 400, naming the step and cell', async () => {
  const inputs = problem(rng(4), 3, 4, 2);
  inputs[0].data[2] = 1e300; // query 1
  inputs[1].data[4] = 1e300; // key 2
  const ask = (names) => postJson(s.port, INFER, { inputs, outputs: names.map((name) => ({ name })) });
  const [st, full] = await Promise.all([ask(['OUTPUT', 'LSE']), ask(['OUTPUT', 'WEIGHTS'])]);
  assert.equal(st.status, 400, st.body);
  assert.equal(full.status, 400, full.body);
  const a = JSON.parse(st.body), b = JSON.parse(full.body);
  assert.equal(a.type, '/problems/numeric-overflow');
  assert.deepEqual([a.errors[0].step, a.errors[0].cell], [b.errors[0].step, b.errors[0].cell]);
});
