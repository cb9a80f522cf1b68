// tests/http/precision_mh_backward.test.mjs — `precision` with `backward` on /v1/multihead:
// every gradient (W_O's, each head's steps, the GQA sums, the projections' in both weight
// layouts, the biases', grad_x or grad_x_q and grad_x_kv, the sink's, grad_bias) bit for bit
// against tests/http/precision_reference.py's multi-head backward in each format and
// accumulator, with self- and cross-attention, GQA, biases, a bias matrix, masks (a fully
// masked row), causal, softcap, sink logits a head, rope and dropout; the report's backward
// entries as |low − float64| recomputed here from the request sent with and without
// precision; a dO past 65504, a grad_concat past it and a head's dP past it kept, named
// and warned about in English and Korean; the text page's backward steps and error lines.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postJson, rng, startServer } from './lib.mjs';
import { FORMS, reference, sameBits, stepError } from './precision_lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

const transpose = (m) => m[0].map((_, j) => m.map((row) => row[j]));

/** Round r's problem: weights drawn (in, out), sent in r's layout, and its reference. */
function problem(next, round) {
  const shapes = [[1, 1], [2, 1], [2, 2], [4, 2], [4, 1], [2, 1]];
  const [heads, kvHeads] = shapes[round % shapes.length];
  const n = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const dK = 2, d = heads * dK, kvd = kvHeads * dK;
  const cross = round % 3 === 1, outIn = round % 2 === 1;
  const nQ = n(1, 4), nK = cross ? n(1, 5) : nQ;
  const mat = (r, c, a) => Array.from({ length: r }, () =>
    Array.from({ length: c }, () => (next() - 0.5) * 2 * a));
  const vec = (len) => mat(1, len, 1)[0];
  const w = { w_q: mat(d, d, 1), w_k: mat(d, kvd, 1), w_v: mat(d, kvd, 1), w_o: mat(d, d, 1) };
  const xq = mat(nQ, d, 2), xkv = cross ? mat(nK, d, 2) : xq;
  const body = { heads, kv_heads: kvHeads, ...(cross ? { x_q: xq, x_kv: xkv } : { x: xq }),
    weight_layout: outIn ? 'out_in' : 'in_out', backward: { grad_output: mat(nQ, d, 1.5) } };
  for (const k of Object.keys(w)) body[k] = outIn ? transpose(w[k]) : w[k];
  if (round % 3 === 0) Object.assign(body, { b_q: vec(d), b_v: vec(kvd) });
  if (round % 3 === 2) Object.assign(body, { b_k: vec(kvd), b_o: vec(d) });
  if (round % 4 === 2) body.bias = mat(nQ, nK, 2);
  let allow;
  if (round % 4 === 1) { // row 0 fully masked
    body.mask = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, () => (i === 0 ? 0 : next() < 0.7 ? 1 : 0)));
    allow = body.mask;
  } else if (round % 4 === 3) { // causal, bottom-right aligned
    body.mask = 'causal';
    allow = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, (_, j) => (j <= i + nK - nQ ? 1 : 0)));
  }
  if (round % 5 === 2)
    Object.assign(body, { softcap: 1.5, rope: { base: 100 },
      sink_logit: Array.from({ length: heads }, (_, h) => 0.25 * h - 0.25) });
  if (round % 5 === 4) body.dropout = { p: 0.25, seed: 70 + round };
  const ref = { x_q: xq, x_kv: xkv, ...w, b_q: body.b_q, b_k: body.b_k, b_v: body.b_v, b_o: body.b_o,
    heads, kv_heads: kvHeads, bias: body.bias, allow, cross, grad_output: body.backward.grad_output };
  if (body.softcap) Object.assign(ref, { softcap: body.softcap, sink_logit: body.sink_logit,
    rope: { base: 100, rotated: dK, interleaved: false } });
  if (body.dropout) ref.dropout_p = body.dropout.p;
  return { body, ref, outIn };
}

/** The gradient steps problem makes, as the answer lists them. */
function stepsOf(body) {
  const cross = 'x_q' in body;
  return ['grad_w_o', ...(body.b_o ? ['grad_b_o'] : []), 'grad_weights', 'delta', 'grad_masked',
    'grad_q', 'grad_k', 'grad_v', 'grad_w_q', 'grad_w_k', 'grad_w_v',
    ...['b_q', 'b_k', 'b_v'].filter((b) => body[b]).map((b) => `grad_${b}`),
    ...(cross ? ['grad_x_q', 'grad_x_kv'] : ['grad_x']),
    ...(body.sink_logit ? ['grad_sink_logit'] : []), ...(body.bias ? ['grad_bias'] : [])];
}

test('every multi-head gradient holds the reference\'s bits, in every format and accumulator', async () => {
  const next = rng(71);
  const cases = [];
  for (let round = 0; round < 12; round++) {
    const { body, ref, outIn } = problem(next, round);
    for (const [format, accumulate] of FORMS) {
      const r = await postJson(s.port, '/v1/multihead', { ...body, precision: { format, accumulate } });
      assert.equal(r.status, 200, r.body);
      const a = r.json();
      cases.push({ a, body, outIn, ref: { ...ref, scale: a.scale, keep: a.dropout_keep, format, accumulate } });
    }
  }
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, body, outIn, ref }, i) => {
    const what = `case ${i} (${ref.format}, ${ref.accumulate}, ${body.heads}/${body.kv_heads}, ` +
      `${Object.keys(body).join(' ')})`;
    sameBits(a.output, want[i].output, `${what} output`);
    for (const step of stepsOf(body)) {
      const layout = outIn && ['grad_w_q', 'grad_w_k', 'grad_w_v', 'grad_w_o'].includes(step);
      assert.ok(step in a, `${what}: ${step} in the answer`);
      sameBits(a[step], layout ? transpose(want[i][step]) : want[i][step], `${what} ${step}`);
    }
    assert.equal(a.first_non_finite, null, what);
  });
  const made = cases.map(({ body }) => Object.keys(body));
  for (const key of ['x_q', 'b_o', 'bias', 'rope', 'dropout', 'mask'])
    assert.ok(made.some((k) => k.includes(key)), `some case has ${key}`);
});

test('the report holds each backward step against the float64 backward of the same request', async () => {
  const next = rng(72);
  let differs = false;
  for (const round of [0, 1, 2, 3]) { // biases and GQA; cross; the sink, rope and a bias; causal
    const { body } = problem(next, round);
    const low = (await postJson(s.port, '/v1/multihead', { ...body, precision: { format: 'bfloat16' } })).json();
    const exact = (await postJson(s.port, '/v1/multihead', body)).json();
    const steps = stepsOf(body);
    for (const step of steps)
      assert.deepEqual(low.precision_report[step], stepError(low[step], exact[step], low.shapes[step]),
        `round ${round} ${step}`);
    const named = Object.keys(low.precision_report);
    assert.deepEqual(named.slice(0, 10), ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights',
      'head_outputs', 'output', 'lse']);
    assert.deepEqual(named.slice(10), steps, `round ${round}: the answer's order`);
    differs ||= steps.some((step) => low.precision_report[step].max_rel_error > 0);
    assert.equal(low.first_non_finite, null);
  }
  assert.ok(differs, 'bfloat16 gradients differ from float64');
});

const eye = [[1, 0], [0, 1]];
const layer = { heads: 1, x: eye, w_q: eye, w_k: eye, w_v: eye, w_o: eye, scale: 1 };

test('a dO past 65504, a grad_concat past it and a head\'s dP past it are kept, named and warned about', async () => {
  const half = { format: 'float16' }, same = { format: 'float16', accumulate: 'same' };
  // 70000 is +inf in float16 as it is read
  const past = (await postJson(s.port, '/v1/multihead', { ...layer,
    backward: { grad_output: [[70000, 1], [0, 1]] }, precision: half })).json();
  assert.deepEqual(past.first_non_finite, { step: 'grad_output', cell: [0, 0] });
  assert.deepEqual(past.grad_b_o, undefined); // no b_o: no grad_b_o
  assert.equal(past.grad_w_o[0][0], null);
  assert.match(past.warnings.find((x) => x.code === 'precision-overflow').hint, /scale the loss down/);
  // dO·W_Oᵀ = 300·300 + 300·300: past float16 once rounded, each head's dO
  const wide = { ...layer, w_o: [[300, 300], [300, 300]], backward: { grad_output: [[300, 300], [300, 300]] } };
  const concat = (await postJson(s.port, '/v1/multihead', { ...wide, precision: half })).json();
  assert.deepEqual(concat.first_non_finite, { step: 'grad_concat', cell: [0, 0] });
  assert.ok(concat.precision_report.grad_weights.non_finite > 0);
  const f32 = (await postJson(s.port, '/v1/multihead', { ...wide, precision: { format: 'float32' } })).json();
  assert.equal(f32.first_non_finite, null);
  // dP = dO_0·V_0ᵀ = 400·200 in a float16 accumulator: head 0's grad_weights, cell [0, 0]
  const big = { ...layer, w_v: [[200, 0], [0, 200]], w_o: [[200, 0], [0, 200]],
    backward: { grad_output: [[2, 0], [0, 0]] } };
  const head = (await postJson(s.port, '/v1/multihead', { ...big, precision: same })).json();
  assert.equal(head.grad_weights[0][0][0], null);
  assert.deepEqual(head.first_non_finite, { step: 'grad_weights', cell: [0, 0, 0] });
  const w = head.warnings.find((x) => x.code === 'precision-overflow');
  assert.match(w.message, /^grad_weights of head 0 is not finite at cell \[0, 0\] in float16/);
  assert.match(w.hint, /accumulate in float32/);
  const held = (await postJson(s.port, '/v1/multihead', { ...big, precision: half })).json();
  assert.equal(held.grad_weights[0][0][0], 80000); // the float32 accumulator holds it ...
  // ... but not grad_x, rounded to the format last: dS_0 = 0.731·(80000 − D_0) with D_0 =
  // 400·0.731·200 = 58480 gives grad_q and grad_k 15731 each, grad_v·W_Vᵀ 292.4·200 = 58480,
  // and grad_x [0, 0] their sum, 89942
  assert.deepEqual(held.first_non_finite, { step: 'grad_x', cell: [0, 0] });
  assert.equal(held.grad_x[0][0], null);
  assert.ok(Math.abs(held.grad_x[1][1]) < 65504);
  const ko = (await postJson(s.port, '/v1/multihead?lang=ko', { ...big, precision: same })).json();
  const kw = ko.warnings.find((x) => x.code === 'precision-overflow');
  assert.match(kw.message, /grad_weights/);
  assert.match(kw.hint, /손실을 작게 줄이세요/);
});

test('the text page writes the backward steps and their error lines', async () => {
  const body = { heads: 2, kv_heads: 1, x: [[1, 0, 0.5, 0], [0, 1, 0, 0.5]], w_q: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
    w_k: [[1, 0], [0, 1], [1, 0], [0, 1]], w_v: [[1, 0], [0, 1], [0, 1], [1, 0]],
    w_o: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], b_o: [0, 1, 0, 1],
    backward: { seed: 3 }, precision: { format: 'float16' } };
  const json = (await postJson(s.port, '/v1/multihead', body)).json();
  const page = (await postJson(s.port, '/v1/multihead?format=text', body)).body;
  const steps = stepsOf(body);
  let from = 0;
  steps.forEach((step, i) => {
    const at = page.indexOf(`backward step ${i + 2}  ${step} = `, from); // grad_output is step 1
    assert.ok(at > from, `${step} in order:\n${page}`);
    from = at;
    const line = page.slice(at).split('backward step')[1].split('\n').find((x) => x.includes('against float64'));
    const e = json.precision_report[step];
    const m = line.match(/^ {2}float16 against float64: max abs error (\S+), max rel error (\S+) at (head (\d+) )?\[([\d, ]+)\], 0 not finite$/);
    assert.ok(m, `${step}: ${line}`);
    assert.equal(Number(m[1]), Number(e.max_abs_error.toPrecision(3)), step);
    const cell = [...(m[4] !== undefined ? [Number(m[4])] : []), ...m[5].split(', ').map(Number)];
    assert.deepEqual(cell, e.max_rel_cell, step);
  });
  assert.match(page, /backward step 1 {2}grad_output = /);
  const ko = (await postJson(s.port, '/v1/multihead?format=text&lang=ko', body)).body;
  assert.match(ko, /역전파 단계 5 {2}delta = [^]*float64 와 비교한 float16: [^\n]*\(head \d 의 \[\d\] 칸\)/);
});
