// tests/http/precision_backward.test.mjs — `precision` with `backward` on /v1/attention:
// every gradient step bit for bit against tests/http/precision_reference.py (the rules
// written from numpy's float16, a bfloat16 rounding on the double's bits and exact float32
// sums in fractions), in each format and accumulator, with a bias, masks (a fully masked
// row), causal, softcap, the sink logit, rope and dropout; the report's backward entries
// as |low − float64| recomputed here from the same request sent with and without
// precision; a dO past 65504 and a float16 sum past it kept, named and warned about in
// English and Korean; the text page's error lines; a batch item; and the 422s that stay
// (a low format over --max-cells, a dO of another shape). Multi-head's backward in the
// format: precision_mh_backward.test.mjs.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, rng, startServer } from './lib.mjs';
import { FORMS, reference, sameBits, stepError } from './precision_lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

const ORDER = ['grad_v', 'grad_weights', 'delta', 'grad_masked', 'grad_scaled', 'grad_scores',
  'grad_q_rope', 'grad_k_rope', 'grad_q', 'grad_k', 'grad_sink_logit'];

const GRADS = ['grad_v', 'grad_weights', 'delta', 'grad_masked', 'grad_scaled', 'grad_scores',
  'grad_q', 'grad_k'];

/** Round r's problem: even d_k (for rope), dO, and one variant or mask a round. */
function problem(next, round) {
  const n = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const nQ = n(1, 5), nK = n(2, 6), dK = 2 * n(1, 3), dV = n(1, 3);
  const mat = (r, c, a) => Array.from({ length: r }, () =>
    Array.from({ length: c }, () => (next() - 0.5) * 2 * a));
  const body = { q: mat(nQ, dK, 2), k: mat(nK, dK, 2), v: mat(nK, dV, 3),
    backward: { grad_output: mat(nQ, dV, 1.5) } };
  let allow;
  const kind = round % 6;
  if (kind === 1) { // a bias and a mask whose row 0 is fully masked
    body.bias = mat(nQ, nK, 2);
    body.mask = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, () => (i === 0 ? 0 : next() < 0.7 ? 1 : 0)));
    allow = body.mask;
  } else if (kind === 3) { // causal (bottom-right aligned) with the sink logit
    body.mask = 'causal';
    body.sink_logit = 0.5;
    allow = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, (_, j) => (j <= i + nK - nQ ? 1 : 0)));
  }
  if (kind === 2) body.softcap = 1.5;
  if (kind === 4) body.rope = { base: 100, layout: round % 4 === 0 ? 'half' : 'interleaved' };
  if (kind === 5) body.dropout = { p: 0.25, seed: 50 + round };
  return { body, allow };
}

/** The reference's problem for an answer a of body in (format, accumulate). */
function referenceOf(body, allow, a, format, accumulate) {
  const ref = { q: body.q, k: body.k, v: body.v, bias: body.bias, allow, scale: a.scale, format,
    accumulate, grad_output: body.backward.grad_output };
  if (body.softcap) ref.softcap = body.softcap;
  if (body.sink_logit !== undefined) ref.sink_logit = body.sink_logit;
  if (body.rope) ref.rope = { base: 100, rotated: body.q[0].length, interleaved: body.rope.layout === 'interleaved' };
  if (body.dropout) Object.assign(ref, { keep: a.dropout_keep, dropout_p: body.dropout.p });
  return ref;
}

test('every gradient holds the reference\'s bits, in every format and accumulator', async () => {
  const next = rng(61);
  const cases = [];
  for (let round = 0; round < 12; round++) {
    const { body, allow } = problem(next, round);
    for (const [format, accumulate] of FORMS) {
      const r = await postJson(s.port, '/v1/attention', { ...body, precision: { format, accumulate } });
      assert.equal(r.status, 200, r.body);
      const a = r.json();
      cases.push({ a, body, ref: referenceOf(body, allow, a, format, accumulate) });
    }
  }
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, body, ref }, i) => {
    const what = `case ${i} (${ref.format}, ${ref.accumulate}, ${Object.keys(body).join(' ')})`;
    sameBits(a.output, want[i].output, `${what} output`);
    const steps = [...GRADS, ...(body.rope ? ['grad_q_rope', 'grad_k_rope'] : []),
      ...(body.sink_logit !== undefined ? ['grad_sink_logit'] : [])];
    for (const step of steps) sameBits(a[step], want[i][step], `${what} ${step}`);
    if (body.bias) sameBits(a.grad_bias, want[i].grad_masked, `${what} grad_bias`);
    assert.equal(a.first_non_finite, null, what);
  });
  assert.ok(cases.some(({ a }) => a.grad_sink_logit !== undefined && a.grad_q_rope === undefined));
});

test('the report holds each backward step against the float64 backward of the same request', async () => {
  const next = rng(62);
  for (const round of [0, 3, 4]) { // plain, causal with the sink, rope
    const { body } = problem(next, round);
    const low = (await postJson(s.port, '/v1/attention', { ...body, precision: { format: 'bfloat16' } })).json();
    const exact = (await postJson(s.port, '/v1/attention', body)).json();
    const steps = [...GRADS, ...(body.rope ? ['grad_q_rope', 'grad_k_rope'] : []),
      ...(body.sink_logit !== undefined ? ['grad_sink_logit'] : [])];
    for (const step of steps) {
      const cols = Array.isArray(low[step]) && Array.isArray(low[step][0]) ? low[step][0].length : 1;
      assert.deepEqual(low.precision_report[step], stepError(low[step], exact[step], [0, cols]),
        `round ${round} ${step}`);
    }
    const named = Object.keys(low.precision_report);
    assert.deepEqual(named.slice(0, 6), ['scores', 'scaled', 'masked', 'weights', 'output', 'lse']);
    assert.deepEqual(named.slice(6), ORDER.filter((x) => steps.includes(x)),
      `round ${round}: the steps in the order they run`);
    assert.ok(low.precision_report.grad_q.max_rel_error > 0, 'bfloat16 gradients differ from float64');
  }
});

test('float16 gradients are float64\'s within the format\'s rounding', async () => {
  const next = rng(63);
  const { body } = problem(next, 0);
  const low = (await postJson(s.port, '/v1/attention', { ...body, precision: { format: 'float16' } })).json();
  const exact = (await postJson(s.port, '/v1/attention', body)).json();
  for (const step of ['grad_q', 'grad_k', 'grad_v']) {
    const l = low[step].flat(), e = exact[step].flat();
    const top = Math.max(...e.map(Math.abs));
    // a few float16 roundings (2^-11 each) of terms no larger than the largest gradient's
    // scale: |dS|·|k| summed over at most six keys
    for (let c = 0; c < l.length; c++)
      assert.ok(Math.abs(l[c] - e[c]) <= 0.02 * top + 1e-3, `${step}[${c}]: ${l[c]} vs ${e[c]}`);
  }
});

test('a dO past 65504 and a float16 sum past it are kept, named and warned about', async () => {
  const base = { q: [[1, 0]], k: [[1, 0]], v: [[4, 1]], scale: 1, include: ['grad_v', 'grad_weights'] };
  // 70000 is +inf in float16 as it is read: grad_v holds it, grad_output is named
  const past = await postJson(s.port, '/v1/attention', { ...base, backward: { grad_output: [[70000, 1]] },
    precision: { format: 'float16' } });
  assert.equal(past.status, 200, past.body);
  const a = past.json();
  assert.deepEqual(a.grad_v, [[null, 1]]);
  assert.deepEqual(a.first_non_finite, { step: 'grad_output', cell: [0, 0] });
  const w = a.warnings.find((x) => x.code === 'precision-overflow');
  assert.deepEqual({ step: w.step, cell: w.cell, max: w.max_finite }, { step: 'grad_output', cell: [0, 0], max: 65504 });
  assert.match(w.hint, /scale the loss down/);
  assert.ok(a.precision_report.grad_v.non_finite >= 1);
  // 30000·4 + 1·1 past 65504 in a float16 accumulator: dP is +inf at [0, 0] ...
  const same = { ...base, backward: { grad_output: [[30000, 1]] }, precision: { format: 'float16', accumulate: 'same' } };
  const b = (await postJson(s.port, '/v1/attention', same)).json();
  assert.deepEqual(b.grad_v, [[30000, 1]]);
  assert.deepEqual(b.grad_weights, [[null]]);
  assert.deepEqual(b.first_non_finite, { step: 'grad_weights', cell: [0, 0] });
  assert.match(b.warnings.find((x) => x.code === 'precision-overflow').hint, /accumulate in float32/);
  // ... and 120001 exactly in a float32 accumulator
  const wide = (await postJson(s.port, '/v1/attention', { ...same, precision: { format: 'float16' } })).json();
  assert.deepEqual(wide.grad_weights, [[120001]]);
  assert.equal(wide.first_non_finite, null);
  const ko = (await postJson(s.port, '/v1/attention?lang=ko', same)).json();
  const kw = ko.warnings.find((x) => x.code === 'precision-overflow');
  assert.match(kw.message, /grad_weights 의 칸 \[0, 0\] 이\(가\) float16 에서 계산 범위를 넘었습니다/);
  assert.match(kw.hint, /손실을 작게 줄이세요/);
});

test('the text page writes each backward step\'s error line under its matrix', async () => {
  const body = { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[1], [2]],
    backward: { grad_output: [[1], [0.5]] }, precision: { format: 'float16' } };
  const json = (await postJson(s.port, '/v1/attention', body)).json();
  const page = (await postJson(s.port, '/v1/attention?format=text', body)).body;
  const at = page.indexOf('backward step 8  grad_q = grad_scores @ K');
  assert.ok(at > 0, page);
  const e = json.precision_report.grad_q;
  const line = page.slice(at).split('\n').find((x) => x.includes('against float64'));
  const m = line.match(/^ {2}float16 against float64: max abs error (\S+), max rel error (\S+) at \[(\d+), (\d+)\], 0 not finite$/);
  assert.ok(m, line);
  assert.equal(Number(m[1]), Number(e.max_abs_error.toPrecision(3))); // printed as %.3g
  assert.equal(Number(m[2]), Number(e.max_rel_error.toPrecision(3)));
  assert.deepEqual([Number(m[3]), Number(m[4])], e.max_rel_cell);
  for (const step of ['grad_v', 'grad_weights', 'delta', 'grad_masked', 'grad_scaled', 'grad_scores', 'grad_k']) {
    const from = page.indexOf(`  ${step} = `);
    assert.ok(from > 0 && page.slice(from).split('backward step')[0].includes('float16 against float64'), step);
  }
  const ko = (await postJson(s.port, '/v1/attention?format=text&lang=ko', body)).body;
  const koAt = ko.indexOf('역전파 단계 8  grad_q = grad_scores @ K');
  assert.ok(koAt > 0, ko);
  assert.match(ko.slice(koAt), /^ {2}float64 와 비교한 float16: 최대 절대 오차 \S+, 최대 상대 오차 \S+ \(\[0, 1\] 칸\)/m);
});

test('a batch item computes precision and backward as the request alone does', async () => {
  const next = rng(64);
  const { body } = problem(next, 2);
  const p = { ...body, precision: { format: 'bfloat16' } };
  const alone = (await postJson(s.port, '/v1/attention', p)).json();
  const r = await postJson(s.port, '/v1/attention/batch', { items: [p] });
  assert.equal(r.status, 200, r.body);
  const item = r.json().results[0].body;
  for (const key of [...GRADS, 'precision_report', 'first_non_finite']) assert.deepEqual(item[key], alone[key], key);
});

test('what stays refused: a low format over --max-cells, dO of another shape', async () => {
  const shape = assertProblem(assert, await postJson(s.port, '/v1/attention', { q: [[1, 0]], k: [[1, 0]],
    v: [[1]], backward: { grad_output: [[1, 2]] }, precision: { format: 'float16' } }), 422);
  assert.equal(shape.type, '/problems/shape-mismatch');
  assert.equal(shape.errors[0].pointer, '/backward/grad_output');
  const small = await startServer(['--max-cells', '16']);
  try {
    const big = { random: { seed: 1, n_q: 8, n_k: 8, d_k: 2, d_v: 2 }, backward: { seed: 0 },
      include: ['output', 'grad_q'] };
    const streamed = await postJson(small.port, '/v1/attention', big);
    assert.equal(streamed.status, 200, streamed.body); // float64: the streamed backward
    const low = assertProblem(assert, await postJson(small.port, '/v1/attention',
      { ...big, precision: { format: 'float16' } }), 422);
    assert.equal(low.type, '/problems/limit-exceeded');
  } finally {
    await small.stop();
  }
});
