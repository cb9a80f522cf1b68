// tests/http/precision.test.mjs — `precision` on /v1/attention and in a batch: every step
// bit for bit against tests/http/precision_reference.py (numpy's float16, bfloat16 rounded
// on the double's bits, float32 sums exact in fractions, sums in index order), in each
// format and accumulator, on random problems with masks, bias and fully masked rows; the
// report against the float64 answer; overflow past 65504 kept, named and warned about in
// English and Korean; and the 422s that name the member at fault.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, rng, startServer } from './lib.mjs';
import { FORMS, reference, sameBits } from './precision_lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

function randomProblem(next, { masked = false, bias = false, amp = 2 } = {}) {
  const n = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const nQ = n(1, 6), nK = n(1, 7), dK = n(1, 8), dV = n(1, 4);
  const mat = (r, c, a) => Array.from({ length: r }, () =>
    Array.from({ length: c }, () => (next() - 0.5) * 2 * a));
  const p = { q: mat(nQ, dK, amp), k: mat(nK, dK, amp), v: mat(nK, dV, 3) };
  if (bias) p.bias = mat(nQ, nK, 4);
  if (masked) {
    p.mask = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, () => (i === 0 ? 0 : next() < 0.7 ? 1 : 0)));
  }
  return p;
}

test('every step holds the reference\'s bits, in every format and accumulator', async () => {
  const next = rng(35);
  const cases = [];
  for (let round = 0; round < 12; round++) {
    const p = randomProblem(next, { masked: round % 3 === 1, bias: round % 2 === 0,
      amp: round % 4 === 3 ? 12 : 2 });
    for (const [format, accumulate] of FORMS) cases.push({ p, format, accumulate });
  }
  const answers = [];
  for (const { p, format, accumulate } of cases) {
    const r = await postJson(s.port, '/v1/attention',
      { ...p, precision: { format, accumulate },
        include: ['scores', 'scaled', 'masked', 'weights', 'output', 'lse', 'row_max', 'shifted', 'exp'] });
    assert.equal(r.status, 200, r.body);
    answers.push(r.json());
  }
  const want = reference(cases.map(({ p, format, accumulate }) => ({
    q: p.q, k: p.k, v: p.v, bias: p.bias, allow: p.mask, scale: 1 / Math.sqrt(p.q[0].length),
    format, accumulate,
  })));
  cases.forEach(({ format, accumulate }, i) => {
    const a = answers[i];
    assert.deepEqual(a.precision.format, format);
    assert.deepEqual(a.precision.accumulate, accumulate);
    for (const step of ['scores', 'scaled', 'masked', 'weights', 'output', 'lse', 'shifted', 'exp'])
      sameBits(a[step], want[i][step], `case ${i} (${format}, ${accumulate}) ${step}`);
  });
});

test('the report is each step against the float64 answer of the same request', async () => {
  const next = rng(36);
  const p = randomProblem(next, { bias: true });
  const low = (await postJson(s.port, '/v1/attention', { ...p, precision: { format: 'bfloat16' } })).json();
  const exact = (await postJson(s.port, '/v1/attention', p)).json();
  for (const step of ['scores', 'scaled', 'masked', 'weights', 'output']) {
    const l = low[step].flat(), e = exact[step].flat();
    let maxAbs = 0, maxRel = 0, cell = null;
    for (let c = 0; c < l.length; c++) {
      const d = Math.abs(l[c] - e[c]);
      maxAbs = Math.max(maxAbs, d);
      if (e[c] !== 0 && d / Math.abs(e[c]) > maxRel) {
        maxRel = d / Math.abs(e[c]);
        cell = [Math.floor(c / low[step][0].length), c % low[step][0].length];
      }
    }
    const rep = low.precision_report[step];
    assert.equal(rep.max_abs_error, maxAbs, `${step} max_abs_error`);
    assert.equal(rep.max_rel_error, maxRel, `${step} max_rel_error`);
    assert.deepEqual(rep.max_rel_cell, cell, `${step} max_rel_cell`);
    assert.equal(rep.non_finite, 0);
  }
  assert.ok(low.precision_report.weights.max_rel_error > 0, 'bfloat16 weights differ from float64');
  assert.equal(low.first_non_finite, null);
  assert.deepEqual(low.warnings.filter((w) => w.code === 'precision-overflow'), []);
});

test('past 65504 a float16 sum is +inf: kept, named and warned about', async () => {
  // 200·200 + 200·200 = 80000 in a float16 accumulator: the second partial sum overflows.
  const body = { q: [[200, 200], [0.5, 0.5]], k: [[200, 200], [1, 1]], v: [[1], [2]], scale: 1,
    precision: { format: 'float16', accumulate: 'same' } };
  const r = await postJson(s.port, '/v1/attention', body);
  assert.equal(r.status, 200, r.body);
  const a = r.json();
  assert.equal(a.scores[0][0], null);
  assert.equal(a.scores[1][1], 1);
  assert.deepEqual(a.first_non_finite, { step: 'scores', cell: [0, 0] });
  assert.equal(a.precision.max_finite, 65504);
  assert.ok(a.precision_report.scores.non_finite >= 1);
  const w = a.warnings.find((x) => x.code === 'precision-overflow');
  assert.deepEqual({ step: w.step, cell: w.cell, max: w.max_finite }, { step: 'scores', cell: [0, 0], max: 65504 });
  assert.match(w.message, /scores is not finite at cell \[0, 0\] in float16, whose largest finite value is 65504/);
  assert.match(w.hint, /accumulate in float32/);
  // The same sums in a float32 accumulator are finite: 80000 exactly.
  const wide = (await postJson(s.port, '/v1/attention', { ...body, precision: { format: 'float16' } })).json();
  assert.equal(wide.scores[0][0], 80000);
  assert.equal(wide.first_non_finite, null);
  // Korean: the message and hint in the notes' words, the codes as they are.
  const ko = (await postJson(s.port, '/v1/attention?lang=ko', body)).json();
  const kw = ko.warnings.find((x) => x.code === 'precision-overflow');
  assert.match(kw.message, /계산 범위를 넘었습니다/);
  assert.match(kw.hint, /float32 에 누적/);
});

test('65504 is float16\'s largest value; an input past it is +inf from the start', async () => {
  const at = (await postJson(s.port, '/v1/attention', { q: [[65504]], k: [[1]], v: [[1]], scale: 1,
    precision: { format: 'float16' } })).json();
  assert.deepEqual(at.scores, [[65504]]);
  assert.equal(at.first_non_finite, null);
  const past = (await postJson(s.port, '/v1/attention', { q: [[65520]], k: [[1]], v: [[1]], scale: 1,
    precision: { format: 'float16' } })).json();
  assert.deepEqual(past.first_non_finite, { step: 'q', cell: [0, 0] });
  assert.equal(past.scores[0][0], null);
  assert.match(past.warnings.find((x) => x.code === 'precision-overflow').hint, /scale q down/);
  // Below float16's smallest normal (2^-14) values are kept as subnormals, multiples of 2^-24:
  // 1e-6 is 16.78 of them, held as 17; a tie, 2.5·2^-24, goes to the even 2.
  const sub = (await postJson(s.port, '/v1/attention', { q: [[1e-6], [2.5 * 2 ** -24]], k: [[1]], v: [[1]],
    scale: 1, precision: { format: 'float16' }, include: ['scores'] })).json();
  assert.deepEqual(sub.scores, [[17 * 2 ** -24], [2 * 2 ** -24]]);
});

test('a bias of -1e9 is -inf in float16: a warning that says so, not an error', async () => {
  const r = await postJson(s.port, '/v1/attention', { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1]],
    v: [[1], [2]], bias: [[0, -1e9], [0, 0]], precision: { format: 'float16' } });
  assert.equal(r.status, 200, r.body);
  const a = r.json();
  assert.deepEqual(a.first_non_finite, { step: 'bias', cell: [0, 1] });
  const w = a.warnings.find((x) => x.code === 'precision-overflow');
  assert.equal(w.step, 'bias');
  assert.match(w.hint, /-1e9 does in float16/);
  assert.deepEqual(a.weights[0], [1, 0]); // the key it hides takes no weight, as a mask would
  // bfloat16 holds -1e9 (its range is float32's): nothing to warn about.
  const b = (await postJson(s.port, '/v1/attention', { q: [[1, 0]], k: [[1, 0], [0, 1]],
    v: [[1], [2]], bias: [[0, -1e9]], precision: { format: 'bfloat16' } })).json();
  assert.equal(b.first_non_finite, null);
});

test('a batch item computes its precision as the request alone does', async () => {
  const next = rng(37);
  const p = { ...randomProblem(next), precision: { format: 'float16' } };
  const alone = (await postJson(s.port, '/v1/attention', p)).json();
  const r = await postJson(s.port, '/v1/attention/batch', { items: [p, { ...p, precision: null }] });
  assert.equal(r.status, 200, r.body);
  const [item, plain] = r.json().results.map((x) => x.body);
  for (const key of ['weights', 'output', 'precision', 'precision_report', 'first_non_finite'])
    assert.deepEqual(item[key], alone[key], key);
  assert.equal(plain.precision, undefined);
});

test('bad precision gets a 422 naming the member and the name meant', async () => {
  const base = { q: [[1, 0]], k: [[1, 0]], v: [[1]] };
  const cases = [
    [{ format: 'fp16' }, '/precision/format', /did you mean "float16"/],
    [{ format: 'bf16' }, '/precision/format', /did you mean "bfloat16"/],
    [{ format: 'float64' }, '/precision/format', /leave precision out/],
    [{ format: 'int8' }, '/precision/format', null],
    [{ format: 'float16', accumulate: 'float16' }, '/precision/accumulate', /write "same"/],
    [{ format: 'float16', accumulate: 'bfloat16' }, '/precision/accumulate', /no other accumulator/],
    [{ format: 'bfloat16', accumulate: 'fp32' }, '/precision/accumulate', /did you mean "float32"/],
    [{ format: 'float16', accumulate: 'double' }, '/precision/accumulate', /no other accumulator/],
    [{ accumulate: 'same' }, '/precision/format', /"format": "float16"/],
    [{ format: 'float16', round: 'even' }, '/precision/round', null],
    ['float16', '/precision', /"precision": \{"format": "float16"/],
  ];
  for (const [precision, pointer, hint] of cases) {
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention', { ...base, precision }), 422);
    assert.equal(p.errors[0].pointer, pointer, JSON.stringify(precision));
    if (hint) assert.match(p.errors[0].hint, hint, JSON.stringify(precision));
  }
  // Korean for the format's 422.
  const ko = assertProblem(assert, await postJson(s.port, '/v1/attention?lang=ko',
    { ...base, precision: { format: 'half' } }), 422);
  assert.match(ko.detail, /float16, bfloat16, float32 중 하나여야/);
});

test('the text page gives each step\'s error under its matrix; the SVG draws what is not finite red', async () => {
  const body = { q: [[200, 200], [1, 0]], k: [[200, 200], [1, 1]], v: [[1], [2]], scale: 1,
    precision: { format: 'float16', accumulate: 'same' } };
  const a = (await postJson(s.port, '/v1/attention', body)).json();
  const text = (await postJson(s.port, '/v1/attention?format=text', body)).body;
  assert.match(text, /^precision {2}float16, sums in float16; the largest finite value 65504$/m);
  // Under step 4's matrix (after its last row, before step 5), the weights' line, from the
  // same report as the JSON answer.
  const step4 = text.slice(text.indexOf('step 4'), text.indexOf('step 5'));
  const w = a.precision_report.weights;
  const line = `  float16 against float64: max abs error ${Number(w.max_abs_error.toPrecision(3))}, ` +
    `max rel error ${Number(w.max_rel_error.toPrecision(3))} at [${w.max_rel_cell.join(', ')}], ` +
    `${w.non_finite} not finite`;
  assert.ok(step4.trimEnd().endsWith(line), `step 4 ends with the error line:\n${step4}`);
  assert.match(text, /\nwarning: scores is not finite at cell \[0, 0\] in float16, whose largest finite value is 65504\n {2}hint: accumulate in float32/);
  const ko = (await postJson(s.port, '/v1/attention?format=text&lang=ko', body)).body;
  assert.match(ko, /float64 와 비교한 float16: 최대 절대 오차/);
  const svg = (await postJson(s.port, '/v1/attention?format=svg', body)).body;
  // Row q0's two weights are NaN: two red cells, named in their tooltips; q1's are blue.
  assert.equal(svg.match(/fill="#b2182b"/g).length, 2);
  assert.match(svg, /q0 → k0: nan<\/title>/);
  assert.match(svg, /red: not finite in float16/);
  const finite = (await postJson(s.port, '/v1/attention?format=svg',
    { ...body, precision: { format: 'float16' } })).body;
  assert.doesNotMatch(finite, /b2182b|red: not finite/);
});

test('V2 takes precision and accumulate and answers the same numbers as /v1', async () => {
  const next = rng(38);
  const B = 2, p = randomProblem(next, { bias: false });
  const q2 = [p.q, p.q.map((row) => row.map((x) => -x))]; // two problems, one batch
  const flat = (m) => m.flat(Infinity);
  const nQ = p.q.length, dK = p.q[0].length, nK = p.k.length, dV = p.v[0].length;
  const inputs = [
    { name: 'Q', shape: [B, nQ, dK], datatype: 'FP64', data: flat(q2) },
    { name: 'K', shape: [B, nK, dK], datatype: 'FP64', data: flat([p.k, p.k]) },
    { name: 'V', shape: [B, nK, dV], datatype: 'FP64', data: flat([p.v, p.v]) },
  ];
  for (const [format, accumulate] of FORMS) {
    const r = await postJson(s.port, '/v2/models/attention/infer', {
      inputs, parameters: { precision: format, accumulate },
      outputs: ['SCORES', 'MASKED', 'WEIGHTS', 'OUTPUT', 'LSE'].map((name) => ({ name })),
    });
    assert.equal(r.status, 200, r.body);
    const out = Object.fromEntries(r.json().outputs.map((o) => [o.name, o.data]));
    for (let b = 0; b < B; b++) {
      const v1 = (await postJson(s.port, '/v1/attention', { q: q2[b], k: p.k, v: p.v,
        precision: { format, accumulate }, include: ['scores', 'masked', 'weights', 'output', 'lse'] })).json();
      const slice = (name, per) => out[name].slice(b * per, (b + 1) * per);
      sameBits(slice('SCORES', nQ * nK), v1.scores, `V2 ${format}/${accumulate} SCORES[${b}]`);
      sameBits(slice('MASKED', nQ * nK), v1.masked, `V2 ${format}/${accumulate} MASKED[${b}]`);
      sameBits(slice('WEIGHTS', nQ * nK), v1.weights, `V2 ${format}/${accumulate} WEIGHTS[${b}]`);
      sameBits(slice('OUTPUT', nQ * dV), v1.output, `V2 ${format}/${accumulate} OUTPUT[${b}]`);
      sameBits(slice('LSE', nQ), v1.lse, `V2 ${format}/${accumulate} LSE[${b}]`);
    }
  }
  // Bad names are V2 400s at the parameter, with the name meant.
  const bad = async (parameters, pointer, hint) => {
    const r = await postJson(s.port, '/v2/models/attention/infer', { inputs, parameters });
    assert.equal(r.status, 400, r.body);
    const e = r.json();
    assert.ok(typeof e.error === 'string' && e.error.length > 0);
    assert.equal(e.errors[0].pointer, pointer);
    if (hint) assert.match(e.errors[0].hint, hint);
  };
  await bad({ precision: 'bf16' }, '/parameters/precision', /did you mean "bfloat16"/);
  await bad({ precision: 'float16', accumulate: 'float16' }, '/parameters/accumulate', /write "same"/);
  await bad({ accumulate: 'same' }, '/parameters/accumulate', /"precision": "float16"/);
});

test('rows answers the listed rows of the whole low-format problem, with its report', async () => {
  const next = rng(39);
  const p = { ...randomProblem(next, { masked: true, bias: true }), precision: { format: 'bfloat16' },
    include: ['scores', 'weights', 'output', 'lse'] };
  const whole = (await postJson(s.port, '/v1/attention', p)).json();
  const rows = [p.q.length - 1, 0, p.q.length - 1];
  const r = await postJson(s.port, '/v1/attention', { ...p, rows });
  assert.equal(r.status, 200, r.body);
  const a = r.json();
  for (const step of ['scores', 'weights', 'output', 'lse'])
    sameBits(a[step], rows.map((i) => whole[step][i]), `rows ${step}`);
  assert.deepEqual(a.precision_report, whole.precision_report);
  assert.deepEqual(a.first_non_finite, whole.first_non_finite);
});

test('/v1/multihead: the projections and every head in the format, bit for bit', async () => {
  const next = rng(40);
  const cases = [];
  for (let round = 0; round < 4; round++) {
    const heads = [1, 2, 4, 2][round], kvHeads = [1, 1, 2, 2][round], dModel = heads * (1 + round % 3);
    const n = 2 + round, bias = (len) => Array.from({ length: len }, () => (next() - 0.5) * 2);
    for (const [format, accumulate] of FORMS) {
      const body = { heads, kv_heads: kvHeads, random: { seed: 40 + round, n, d_model: dModel },
        b_q: bias(dModel), b_o: bias(dModel), mask: round % 2 ? 'causal' : null,
        precision: { format, accumulate },
        include: ['x', 'w_q', 'w_k', 'w_v', 'w_o', 'q', 'k', 'v', 'scores', 'scaled', 'masked',
          'weights', 'head_outputs', 'concat', 'output', 'lse'] };
      const r = await postJson(s.port, '/v1/multihead', body);
      assert.equal(r.status, 200, r.body);
      cases.push({ body, a: r.json() });
    }
  }
  const want = reference(cases.map(({ body, a }) => ({
    x_q: a.x, x_kv: a.x, w_q: a.w_q, w_k: a.w_k, w_v: a.w_v, w_o: a.w_o, b_q: body.b_q,
    b_o: body.b_o, heads: body.heads, kv_heads: body.kv_heads, scale: a.scale,
    allow: body.mask === 'causal' ? a.x.map((_, i) => a.x.map((_, j) => (j <= i ? 1 : 0))) : undefined,
    format: body.precision.format, accumulate: body.precision.accumulate,
  })));
  cases.forEach(({ body, a }, i) => {
    const what = `multihead ${body.heads}/${body.kv_heads} ${body.precision.format}/${body.precision.accumulate}`;
    for (const step of ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights', 'head_outputs',
      'concat', 'output', 'lse'])
      sameBits(a[step], want[i][step], `${what} ${step}`);
    for (const step of ['q', 'k', 'v', 'scores', 'weights', 'head_outputs', 'output', 'lse'])
      assert.ok(step in a.precision_report, `${what}: the report has ${step}`);
  });
  // A head's overflow is named with its head: x·W past 65504 in a float16 accumulator.
  const big = await postJson(s.port, '/v1/multihead', { heads: 2, x: [[300, 300], [1, 1]],
    w_q: [[1, 0], [0, 1]], w_k: [[300, 0], [0, 300]], w_v: [[1, 0], [0, 1]], w_o: [[1, 0], [0, 1]],
    scale: 1, precision: { format: 'float16', accumulate: 'same' } });
  assert.equal(big.status, 200, big.body);
  const b = big.json();
  assert.deepEqual(b.first_non_finite, { step: 'k', cell: [0, 0] }); // 300·300 = 90000
  const w = b.warnings.find((x) => x.code === 'precision-overflow');
  assert.equal(w.step, 'k');
  // In a head's step, the cell names its head: 200·200 + 200·200 in a float16 sum.
  const head = (await postJson(s.port, '/v1/multihead', { heads: 1, x: [[200, 200], [1, 0]],
    w_q: [[1, 0], [0, 1]], w_k: [[1, 0], [0, 1]], w_v: [[1, 0], [0, 1]], w_o: [[1, 0], [0, 1]],
    scale: 1, precision: { format: 'float16', accumulate: 'same' } })).json();
  assert.deepEqual(head.first_non_finite, { step: 'scores', cell: [0, 0, 0] });
  assert.match(head.warnings.find((x) => x.code === 'precision-overflow').message,
    /^scores of head 0 is not finite at cell \[0, 0\] in float16/);
  const text = (await postJson(s.port, '/v1/multihead?format=text', { heads: 1, x: [[200, 200], [1, 0]],
    w_q: [[1, 0], [0, 1]], w_k: [[1, 0], [0, 1]], w_v: [[1, 0], [0, 1]], w_o: [[1, 0], [0, 1]],
    scale: 1, precision: { format: 'float16', accumulate: 'same' } })).body;
  assert.match(text, /^precision {2}float16, sums in float16/m);
  assert.match(text, /step 5 {2}scores[^]*float16 against float64: max abs error [^\n]*, \d+ not finite\n/);
});

test('V2 multihead takes precision and answers /v1/multihead\'s numbers', async () => {
  const v1 = (await postJson(s.port, '/v1/multihead', { heads: 2, kv_heads: 1,
    random: { seed: 41, n: 3, d_model: 4 }, precision: { format: 'bfloat16' },
    include: ['x', 'w_q', 'w_k', 'w_v', 'w_o', 'q', 'scores', 'head_outputs', 'output'] })).json();
  const t = (name, m) => ({ name, shape: [m.length, m[0].length], datatype: 'FP64', data: m.flat() });
  const r = await postJson(s.port, '/v2/models/multihead/infer', {
    inputs: [t('X', v1.x), t('W_Q', v1.w_q), t('W_K', v1.w_k), t('W_V', v1.w_v), t('W_O', v1.w_o)],
    parameters: { heads: 2, kv_heads: 1, precision: 'bfloat16' },
    outputs: ['Q', 'SCORES', 'HEAD_OUTPUTS', 'OUTPUT'].map((name) => ({ name })),
  });
  assert.equal(r.status, 200, r.body);
  const out = Object.fromEntries(r.json().outputs.map((o) => [o.name, o.data]));
  sameBits(out.Q, v1.q, 'V2 multihead Q');
  sameBits(out.SCORES, v1.scores, 'V2 multihead SCORES');
  sameBits(out.HEAD_OUTPUTS, v1.head_outputs, 'V2 multihead HEAD_OUTPUTS');
  sameBits(out.OUTPUT, v1.output, 'V2 multihead OUTPUT');
  // With a variant's parameters too: V2 answers /v1's numbers.
  const capped = (await postJson(s.port, '/v1/multihead', { heads: 2, kv_heads: 1, x: v1.x, w_q: v1.w_q,
    w_k: v1.w_k, w_v: v1.w_v, w_o: v1.w_o, softcap: 2, sink_logit: 0.5, precision: { format: 'bfloat16' },
    include: ['output'] })).json();
  const r2 = await postJson(s.port, '/v2/models/multihead/infer', {
    inputs: [t('X', v1.x), t('W_Q', v1.w_q), t('W_K', v1.w_k), t('W_V', v1.w_v), t('W_O', v1.w_o)],
    parameters: { heads: 2, kv_heads: 1, precision: 'bfloat16', softcap: 2, sink_logit: 0.5 },
    outputs: [{ name: 'OUTPUT' }] });
  assert.equal(r2.status, 200, r2.body);
  sameBits(r2.json().outputs[0].data, capped.output, 'V2 multihead OUTPUT with softcap and a sink');
});

test('a window, sink tokens and ALiBi are computed in the format too', async () => {
  const next = rng(42);
  const cases = [];
  for (let round = 0; round < 4; round++) {
    const p = randomProblem(next, { bias: round % 2 === 0 });
    const nQ = p.q.length, nK = p.k.length;
    const left = 1 + (round % 2), sinks = round % 3, alibi = round === 3 ? undefined : 0.25 * (round + 1);
    const allow = Array.from({ length: nQ }, (_, i) => Array.from({ length: nK }, (_, j) => {
      const at = i + nK - nQ;
      return j <= at && (j >= at - left || j < sinks) ? 1 : 0; // causal, the window, the sinks
    }));
    for (const [format, accumulate] of FORMS) {
      const body = { ...p, mask: 'causal', window: { left, right: 0 }, sink_tokens: sinks,
        precision: { format, accumulate }, include: ['scores', 'masked', 'weights', 'output', 'lse'] };
      if (alibi !== undefined) body.alibi = alibi;
      const r = await postJson(s.port, '/v1/attention', body);
      assert.equal(r.status, 200, r.body);
      cases.push({ a: r.json(), ref: { q: p.q, k: p.k, v: p.v, bias: p.bias, allow, alibi,
        scale: 1 / Math.sqrt(p.q[0].length), format, accumulate } });
    }
  }
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, ref }, i) => {
    for (const step of ['scores', 'masked', 'weights', 'output', 'lse'])
      sameBits(a[step], want[i][step], `variants case ${i} (${ref.format}, ${ref.accumulate}) ${step}`);
  });
});

test('the pitfalls in the format: no_max_subtraction overflows float16 at e^11.1', async () => {
  const next = rng(43);
  const cases = [];
  for (let round = 0; round < 3; round++) {
    const p = randomProblem(next, { masked: round === 1, amp: 4 });
    for (const pitfall of ['no_max_subtraction', 'column_softmax'])
      for (const [format, accumulate] of FORMS) {
        const r = await postJson(s.port, '/v1/attention', { ...p, scale: 1, pitfall,
          precision: { format, accumulate }, include: ['masked'] });
        assert.equal(r.status, 200, r.body);
        cases.push({ a: r.json(), ref: { q: p.q, k: p.k, v: p.v, allow: p.mask, scale: 1, format,
          accumulate, pitfall } });
      }
  }
  const want = reference(cases.map((c) => c.ref));
  let overflowed = 0;
  cases.forEach(({ a, ref }, i) => {
    const what = `pitfall ${ref.pitfall} ${ref.format}/${ref.accumulate} case ${i}`;
    if (ref.pitfall === 'no_max_subtraction') {
      sameBits(a.pitfall.steps.exp, want[i].pitfall_exp, `${what} exp`);
      overflowed += a.pitfall.steps.exp.flat().filter((x) => x === null).length;
    }
    sameBits(a.pitfall.steps.weights, want[i].pitfall_weights, `${what} weights`);
    sameBits(a.pitfall.steps.output, want[i].pitfall_output, `${what} output`);
  });
  assert.ok(overflowed > 0, 'some float16 sums overflowed without the max');
  // At 11.1 exactly the line is crossed: e^11 < 65504 < e^11.1, in a float16 accumulator.
  const at = async (score) => (await postJson(s.port, '/v1/attention', { q: [[score]], k: [[1], [0]],
    v: [[1], [2]], scale: 1, pitfall: 'no_max_subtraction',
    precision: { format: 'float16', accumulate: 'same' } })).json().pitfall.steps.exp[0][0];
  assert.ok(Number.isFinite(await at(11)), 'e^11 is finite in float16');
  assert.equal(await at(11.1), null, 'e^11.1 is past 65504');
});

test('/v1/multihead in the format with a window, sink tokens and ALiBi slopes per head', async () => {
  const cases = [];
  for (const [format, accumulate] of FORMS) {
    const body = { heads: 2, kv_heads: 1, random: { seed: 44, n: 5, d_model: 4 }, mask: 'causal',
      window: { left: 1, right: 0 }, sink_tokens: 1, alibi: [0.5, 0.25],
      precision: { format, accumulate },
      include: ['x', 'w_q', 'w_k', 'w_v', 'w_o', 'q', 'k', 'v', 'scores', 'masked', 'weights',
        'head_outputs', 'output', 'lse'] };
    const r = await postJson(s.port, '/v1/multihead', body);
    assert.equal(r.status, 200, r.body);
    cases.push({ body, a: r.json() });
  }
  const allow = Array.from({ length: 5 }, (_, i) => Array.from({ length: 5 }, (_, j) =>
    (j <= i && (j >= i - 1 || j < 1) ? 1 : 0)));
  const want = reference(cases.map(({ body, a }) => ({
    x_q: a.x, x_kv: a.x, w_q: a.w_q, w_k: a.w_k, w_v: a.w_v, w_o: a.w_o, heads: 2, kv_heads: 1,
    scale: a.scale, allow, alibi: body.alibi, format: body.precision.format,
    accumulate: body.precision.accumulate,
  })));
  cases.forEach(({ body, a }, i) => {
    for (const step of ['q', 'k', 'v', 'scores', 'masked', 'weights', 'head_outputs', 'output', 'lse'])
      sameBits(a[step], want[i][step], `multihead variants ${body.precision.format}/${body.precision.accumulate} ${step}`);
  });
});

test('softcap and the sink logit are computed in the format too', async () => {
  const next = rng(45);
  const cases = [];
  for (let round = 0; round < 4; round++) {
    const p = randomProblem(next, { masked: round % 2 === 1, bias: round === 2, amp: 6 });
    const extra = [{ softcap: 2 }, { sink_logit: 0.5 }, { softcap: 1.5, sink_logit: -1 },
      { softcap: 30, sink_logit: 3 }][round];
    for (const [format, accumulate] of FORMS) {
      const r = await postJson(s.port, '/v1/attention', { ...p, ...extra, precision: { format, accumulate },
        include: ['scores', 'scaled', 'masked', 'weights', 'output', 'lse', 'summary',
          ...(extra.softcap ? ['softcapped'] : [])] });
      assert.equal(r.status, 200, r.body);
      cases.push({ a: r.json(), extra, ref: { q: p.q, k: p.k, v: p.v, bias: p.bias, allow: p.mask,
        scale: 1 / Math.sqrt(p.q[0].length), format, accumulate, ...extra } });
    }
  }
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, extra, ref }, i) => {
    const what = `case ${i} ${JSON.stringify(extra)} ${ref.format}/${ref.accumulate}`;
    for (const step of ['scores', 'scaled', 'masked', 'weights', 'output', 'lse'])
      sameBits(a[step], want[i][step], `${what} ${step}`);
    if (extra.softcap) sameBits(a.softcapped, want[i].softcapped, `${what} softcapped`);
    if (extra.sink_logit !== undefined) sameBits(a.summary.sink_weight, want[i].sink_weight, `${what} sink_weight`);
  });
});

test('rope turns q and k as held and rounds them to the format', async () => {
  const next = rng(46);
  const cases = [];
  for (let round = 0; round < 3; round++) {
    const p = randomProblem(next, { masked: round === 2 });
    const dK = p.q[0].length;
    if (dK < 2) continue;
    const fraction = round === 1 ? 0.5 : 1, layout = round === 2 ? 'interleaved' : 'half';
    const rotated = Math.floor(dK * fraction / 2) * 2;
    if (rotated < 2) continue;
    for (const [format, accumulate] of FORMS) {
      const r = await postJson(s.port, '/v1/attention', { ...p, rope: { base: 100, fraction, layout },
        precision: { format, accumulate }, include: ['q_rope', 'k_rope', 'scores', 'weights', 'output'] });
      assert.equal(r.status, 200, r.body);
      cases.push({ a: r.json(), ref: { q: p.q, k: p.k, v: p.v, allow: p.mask, scale: 1 / Math.sqrt(dK),
        format, accumulate, rope: { base: 100, rotated, interleaved: layout === 'interleaved' } } });
    }
  }
  assert.ok(cases.length >= 10, `${cases.length} rope cases`);
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, ref }, i) => {
    for (const [got, name] of [[a.q_rope, 'q_rope'], [a.k_rope, 'k_rope'], [a.scores, 'scores'],
      [a.weights, 'weights'], [a.output, 'output']])
      sameBits(got, want[i][name], `rope case ${i} ${ref.format}/${ref.accumulate} ${name}`);
  });
});

test('dropout keeps what float64 keeps, and its dropped weights are in the format', async () => {
  const next = rng(47);
  const cases = [];
  for (let round = 0; round < 3; round++) {
    const p = randomProblem(next, { masked: round === 1 });
    const dropout = { p: [0.1, 0.5, 0.3][round], seed: 47 + round };
    const plain = (await postJson(s.port, '/v1/attention', { ...p, dropout, include: ['dropout_keep'] })).json();
    for (const [format, accumulate] of FORMS) {
      const r = await postJson(s.port, '/v1/attention', { ...p, dropout, precision: { format, accumulate },
        include: ['dropout_keep', 'dropped', 'weights', 'output'] });
      assert.equal(r.status, 200, r.body);
      const a = r.json();
      assert.deepEqual(a.dropout_keep, plain.dropout_keep, 'the same cells kept as in float64');
      cases.push({ a, ref: { q: p.q, k: p.k, v: p.v, allow: p.mask, scale: 1 / Math.sqrt(p.q[0].length),
        format, accumulate, keep: a.dropout_keep, dropout_p: dropout.p } });
    }
  }
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, ref }, i) => {
    for (const step of ['weights', 'dropped', 'output'])
      sameBits(a[step], want[i][step], `dropout case ${i} ${ref.format}/${ref.accumulate} ${step}`);
  });
});

test('/v1/multihead in the format with rope, softcap, sink logits per head and dropout', async () => {
  const cases = [];
  for (const [format, accumulate] of FORMS) {
    const body = { heads: 2, kv_heads: 1, random: { seed: 48, n: 4, d_model: 8 }, mask: 'causal',
      rope: { base: 100 }, softcap: 3, sink_logit: [0.5, -0.5], dropout: { p: 0.25, seed: 9 },
      precision: { format, accumulate },
      include: ['x', 'w_q', 'w_k', 'w_v', 'w_o', 'q', 'k', 'v', 'scores', 'masked', 'weights',
        'dropout_keep', 'head_outputs', 'output', 'lse'] };
    const r = await postJson(s.port, '/v1/multihead', body);
    assert.equal(r.status, 200, r.body);
    cases.push({ body, a: r.json() });
  }
  const allow = Array.from({ length: 4 }, (_, i) => Array.from({ length: 4 }, (_, j) => (j <= i ? 1 : 0)));
  const want = reference(cases.map(({ body, a }) => ({
    x_q: a.x, x_kv: a.x, w_q: a.w_q, w_k: a.w_k, w_v: a.w_v, w_o: a.w_o, heads: 2, kv_heads: 1,
    scale: a.scale, allow, softcap: 3, sink_logit: body.sink_logit, rope: { base: 100, rotated: 4 },
    dropout_p: 0.25, keep: a.dropout_keep, format: body.precision.format,
    accumulate: body.precision.accumulate,
  })));
  cases.forEach(({ body, a }, i) => {
    for (const step of ['q', 'k', 'v', 'scores', 'masked', 'weights', 'head_outputs', 'output', 'lse'])
      sameBits(a[step], want[i][step], `multihead all variants ${body.precision.format}/${body.precision.accumulate} ${step}`);
  });
});

test('explain works its row as the format holds it: terms, partial sums, exp and the output', async () => {
  const next = rng(49);
  const cases = [];
  for (let round = 0; round < 3; round++) {
    const p = randomProblem(next, { bias: round === 1, masked: round === 2, amp: 3 });
    const row = p.q.length - 1;
    for (const [format, accumulate] of FORMS) {
      const r = await postJson(s.port, '/v1/attention', { ...p, explain: { row }, precision: { format, accumulate },
        include: ['scores', 'masked', 'weights', 'output'] });
      assert.equal(r.status, 200, r.body);
      cases.push({ a: r.json(), row, ref: { q: p.q, k: p.k, v: p.v, bias: p.bias, allow: p.mask,
        scale: 1 / Math.sqrt(p.q[0].length), format, accumulate, explain: row } });
    }
  }
  const want = reference(cases.map((c) => c.ref));
  cases.forEach(({ a, row, ref }, i) => {
    const x = a.explain, w = want[i], what = `explain case ${i} ${ref.format}/${ref.accumulate}`;
    x.keys.forEach((key, j) => {
      sameBits(key.terms.map((t) => t[0]), a.explain.query, `${what} key ${j} query terms`);
      sameBits(key.partial_sums, w.partial_sums[j], `${what} key ${j} partial sums`);
      sameBits([key.dot], [w.scores[row][j]], `${what} key ${j} dot`);
      sameBits([key.masked], [w.masked[row][j]], `${what} key ${j} masked`);
      sameBits([key.shifted], [w.shifted[row][j]], `${what} key ${j} shifted`);
      sameBits([key.exp], [w.exp[row][j]], `${what} key ${j} exp`);
      sameBits([key.weight], [w.weights[row][j]], `${what} key ${j} weight`);
    });
    sameBits([x.exp_sum], [w.row_sum[row]], `${what} exp_sum`);
    sameBits(x.output.value, w.output[row], `${what} output`);
  });
  // Multi-head: head 1's row 2, from its own steps.
  const mh = await postJson(s.port, '/v1/multihead', { heads: 2, random: { seed: 50, n: 3, d_model: 4 },
    explain: { row: 2, head: 1 }, precision: { format: 'bfloat16', accumulate: 'same' },
    include: ['scores', 'weights', 'head_outputs'] });
  assert.equal(mh.status, 200, mh.body);
  const m = mh.json();
  m.explain.keys.forEach((key, j) => {
    sameBits([key.dot], [m.scores[1][2][j]], `multihead explain key ${j} dot`);
    sameBits([key.partial_sums.at(-1)], [key.dot], `multihead explain key ${j}: the last partial sum is dot`);
    sameBits([key.weight], [m.weights[1][2][j]], `multihead explain key ${j} weight`);
  });
  sameBits(m.explain.output.value, m.head_outputs[1][2], 'multihead explain output');
  // The text page's worked row says the format's numbers: 0.1 is 0.0999755859375 in float16.
  const text = (await postJson(s.port, '/v1/attention?format=text', { q: [[0.1, 0]], k: [[1, 0], [0, 1]],
    v: [[1], [2]], round: 8, explain: { row: 0 }, precision: { format: 'float16' }, include: [] })).body;
  assert.match(text, /q0·k0 = 0\.09997559×1 \+ 0×0 ≈ 0\.09997559/);
});
