// tests/http/mh_rows.test.mjs — `rows` and the streamed route on /v1/multihead (DESIGN.md,
// "Row statistics, rows, and any length"), as /v1/attention has them: the listed query rows
// only, in their order, repeats allowed, with the whole problem's keys, masks and variants;
// over --max-cells, an answer that needs no per-head (n_q, n_k) step is streamed instead of
// refused. Checked against multi-head attention by its definition (projections, heads by
// tests/http/reference.mjs, concat, output projection, written here) and against the full
// path of a server whose --max-cells lets it build every step (variants: bit for bit where
// the same path runs, 1e-12 where the stream runs).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, request, rng, startServer } from './lib.mjs';
import { assertNear, maskedScores, matrix, rowStats, weightsAndOutput } from './reference.mjs';

const MAX_CELLS = 1024; // the streamed problems have heads x n_q x n_k = 2 x 40 x 36 = 2,880

let small, full;
before(async () => {
  small = await startServer(['--log', 'off', '--max-cells', String(MAX_CELLS)]);
  full = await startServer(['--log', 'off']);
});
after(async () => {
  await small.stop();
  await full.stop();
});

/** x·W + b, W (in, out). */
const project = (x, w, b) =>
  x.map((row) => w[0].map((_, c) => row.reduce((acc, xv, l) => acc + xv * w[l][c], b ? b[c] : 0)));
const columns = (m, from, width) => m.map((row) => row.slice(from, from + width));

/** Multi-head attention by its definition (multihead.h's formulas), every step kept. */
function multihead(p) {
  const xq = p.x ?? p.x_q, xkv = p.x ?? p.x_kv;
  const dModel = xq[0].length, h = p.heads, kv = p.kv_heads ?? h, dK = dModel / h;
  const q = project(xq, p.w_q, p.b_q), k = project(xkv, p.w_k, p.b_k), v = project(xkv, p.w_v, p.b_v);
  const heads = [];
  for (let i = 0; i < h; i++) {
    const g = Math.floor((i * kv) / h);
    const masked = maskedScores({ q: columns(q, i * dK, dK), k: columns(k, g * dK, dK),
      bias: p.bias, mask: p.mask, scale: p.scale });
    heads.push({ masked, ...weightsAndOutput(masked, columns(v, g * dK, dK)), stats: rowStats(masked) });
  }
  const concat = q.map((_, r) => heads.flatMap((hd) => hd.output[r]));
  return { q, k, v, heads, concat, output: project(concat, p.w_o, p.b_o) };
}

/** A random problem: self- or cross-attention, heads and kv_heads, a mask or a bias. */
function problem(seed, { nQ, nK, dModel = 8, heads = 2, kvHeads = heads, cross = false, extra = {} }) {
  const r = rng(seed), kvCols = (dModel / heads) * kvHeads;
  const p = { heads, kv_heads: kvHeads, w_q: matrix(r, dModel, dModel, 0.5),
    w_k: matrix(r, dModel, kvCols, 0.5), w_v: matrix(r, dModel, kvCols, 0.5),
    w_o: matrix(r, dModel, dModel, 0.5), b_q: matrix(r, 1, dModel)[0], ...extra };
  if (cross) Object.assign(p, { x_q: matrix(r, nQ, dModel), x_kv: matrix(r, nK, dModel) });
  else p.x = matrix(r, nQ, dModel);
  if (extra.mask === 'cells') // the last row fully masked
    p.mask = Array.from({ length: nQ }, (_, i) => Array.from({ length: nK }, () => (i === nQ - 1 ? 0 : r() < 0.6 ? 1 : 0)));
  if (extra.mask === 'padding') p.mask = Array.from({ length: nK }, (_, j) => (j % 5 === 2 ? 0 : 1));
  if (extra.bias === 'random') p.bias = matrix(r, nQ, nK, 3);
  return p;
}

const someRows = (n) => [n - 1, 0, Math.floor(n / 2), Math.floor(n / 2)];
const EVERY = ['q', 'k', 'v', 'scores', 'masked', 'weights', 'head_outputs', 'concat', 'output',
  'weights_mean', 'summary', 'row_sum', 'lse'];
const STREAMABLE = ['q', 'k', 'v', 'head_outputs', 'concat', 'output', 'row_sum', 'lse'];

function assertRows(a, want, rows, what, { weights = true } = {}) {
  const h = want.heads.length;
  rows.forEach((i, at) => {
    const w = `${what} rows[${at}] = ${i}`;
    want.q[i].forEach((x, c) => assertNear(a.q[at][c], x, `${w} q[${c}]`));
    want.concat[i].forEach((x, c) => assertNear(a.concat[at][c], x, `${w} concat[${c}]`));
    want.output[i].forEach((x, c) => assertNear(a.output[at][c], x, `${w} output[${c}]`));
    for (let hd = 0; hd < h; hd++) {
      const head = want.heads[hd];
      head.output[i].forEach((x, c) => assertNear(a.head_outputs[hd][at][c], x, `${w} head ${hd} out[${c}]`));
      assertNear(a.lse[hd][at], head.stats[i][2], `${w} head ${hd} lse`);
      assertNear(a.row_sum[hd][at], head.stats[i][1], `${w} head ${hd} row_sum`);
      if (weights)
        head.weights[i].forEach((x, j) => assertNear(a.weights[hd][at][j], x, `${w} head ${hd} weights[${j}]`));
    }
  });
  assert.deepEqual(a.k.length, want.k.length, `${what}: k is every key's`);
  want.k.forEach((row, j) => row.forEach((x, c) => assertNear(a.k[j][c], x, `${what} k[${j}][${c}]`)));
}

const SHAPES = [
  ['self', { nQ: 6, nK: 6 }], ['self causal', { nQ: 7, nK: 7, extra: { mask: 'causal' } }],
  ['cross GQA cells', { nQ: 5, nK: 9, heads: 4, kvHeads: 2, cross: true, extra: { mask: 'cells' } }],
  ['cross causal wide', { nQ: 4, nK: 7, cross: true, extra: { mask: 'causal' } }],
  ['self bias MQA', { nQ: 5, nK: 5, heads: 2, kvHeads: 1, extra: { bias: 'random', scale: 0.4 } }],
];

test('rows answers the listed rows in order, each as the definition gives it', async () => {
  for (const [name, opts] of SHAPES) {
    const p = problem(3, opts);
    const rows = someRows(opts.nQ);
    const r = await postJson(full.port, '/v1/multihead', { ...p, rows, include: EVERY });
    assert.equal(r.status, 200, `${name}: ${r.body}`);
    const a = r.json();
    const want = multihead(p);
    assertRows(a, want, rows, name);
    const h = p.heads, n = rows.length;
    assert.deepEqual(a.shapes[p.x ? 'x' : 'x_q'], [opts.nQ, 8], `${name}: the input as sent`);
    assert.deepEqual(a.shapes.q, [n, 8]);
    assert.deepEqual(a.shapes.weights, [h, n, opts.nK]);
    assert.deepEqual(a.shapes.lse, [h, n]);
    assert.equal(a.weights_mean.length, n);
    assert.equal(a.summary.argmax.length, h);
    a.summary.argmax.forEach((m) => assert.equal(m.length, n));
    for (const st of a.steps.filter((x) => !['k', 'v'].includes(x.name))) {
      const perHead = st.shape.length === 3 || ['row_sum', 'lse'].includes(st.name);
      assert.equal(perHead ? st.shape[1] : st.shape[0], n, `${name}: step ${st.name}`);
    }
    const masked = want.heads[0].masked;
    const fully = rows.filter((i) => masked[i].every((x) => x === null));
    assert.deepEqual(a.warnings.filter((x) => x.code === 'row_fully_masked').map((x) => x.row), fully,
      `${name}: warnings name the real rows`);
  }
});

test('rows with variants gives the whole answer\'s rows, bit for bit', async () => {
  const variants = { rope: {}, alibi: 'auto', sink_logit: 0.5, window: { left: 3 }, softcap: 5 };
  const p = problem(5, { nQ: 6, nK: 6, extra: { mask: 'causal', ...variants } });
  const rows = [5, 1, 1, 3];
  const include = [...EVERY, 'q_rope', 'k_rope', 'softcapped'];
  const whole = (await postJson(full.port, '/v1/multihead', { ...p, include })).json();
  const r = await postJson(full.port, '/v1/multihead', { ...p, rows, include });
  assert.equal(r.status, 200, r.body);
  const a = r.json();
  for (const key of ['q', 'concat', 'output', 'weights_mean'])
    assert.deepEqual(a[key], rows.map((i) => whole[key][i]), key);
  for (const key of ['weights', 'head_outputs', 'q_rope', 'softcapped', 'lse'])
    assert.deepEqual(a[key], whole[key].map((m) => rows.map((i) => m[i])), key);
  assert.deepEqual(a.k_rope, whole.k_rope, 'k_rope is every key\'s');
  assert.deepEqual(a.summary.sink_weight, whole.summary.sink_weight.map((m) => rows.map((i) => m[i])));
  assert.deepEqual(a.summary.argmax, whole.summary.argmax.map((m) => rows.map((i) => m[i])));
});

test('over --max-cells, what needs no (n_q, n_k) step is streamed, as the definition gives it', async () => {
  for (const [name, opts] of [['self', { nQ: 40, nK: 40 }],
    ['self causal', { nQ: 40, nK: 40, extra: { mask: 'causal' } }],
    ['cross GQA padding', { nQ: 40, nK: 36, heads: 4, kvHeads: 2, cross: true, extra: { mask: 'padding' } }]]) {
    const p = problem(7, opts);
    for (const rows of [undefined, [39, 0, 17, 17]]) {
      const body = { ...p, include: STREAMABLE, ...(rows ? { rows } : {}) };
      const r = await postJson(small.port, '/v1/multihead', body);
      assert.equal(r.status, 200, `${name}: ${r.body}`);
      const a = r.json();
      const listed = rows ?? Array.from({ length: opts.nQ }, (_, i) => i);
      assertRows(a, multihead(p), listed, `${name} streamed`, { weights: false });
      assert.equal(a.weights, undefined);
      const fully = listed.filter((i) => multihead(p).heads[0].masked[i].every((x) => x === null));
      assert.deepEqual(a.warnings.map((x) => x.row), fully, `${name}: only the fully masked rows`);
      // the full path, where --max-cells lets it build every step, gives the same to 1e-12
      const f = (await postJson(full.port, '/v1/multihead', body)).json();
      for (const key of ['q', 'k', 'v']) assert.deepEqual(a[key], f[key], `${name} ${key}: bit for bit`);
    }
  }
});

test('streamed with random inputs, cross-attention too, with or without rows', async () => {
  for (const random of [{ seed: 1, n: 40, d_model: 8 }, { seed: 2, n: 40, n_kv: 36, d_model: 8 }])
    for (const rows of [undefined, [39, 2]]) {
      const body = { heads: 2, random, mask: 'causal', include: ['output', 'lse'], ...(rows ? { rows } : {}) };
      const r = await postJson(small.port, '/v1/multihead', body);
      assert.equal(r.status, 200, r.body);
      const a = r.json(), f = (await postJson(full.port, '/v1/multihead', body)).json();
      assert.equal(a.lse[0].length, rows ? rows.length : 40);
      a.lse.forEach((m, h) => m.forEach((x, i) => assertNear(x, f.lse[h][i], `lse[${h}][${i}]`)));
      a.output.forEach((row, i) => row.forEach((x, c) => assertNear(x, f.output[i][c], `output[${i}][${c}]`)));
    }
});

test('streamed with variants agrees with the full path to 1e-12', async () => {
  const variants = { rope: {}, alibi: 'auto', sink_logit: 0.5, window: { left: 5 }, sink_tokens: 1, softcap: 5 };
  const p = problem(9, { nQ: 40, nK: 40, heads: 4, kvHeads: 2, extra: { mask: 'causal', ...variants } });
  for (const rows of [undefined, [3, 39, 3]]) {
    const body = { ...p, include: STREAMABLE, ...(rows ? { rows } : {}) };
    const r = await postJson(small.port, '/v1/multihead', body);
    assert.equal(r.status, 200, r.body);
    const a = r.json(), f = (await postJson(full.port, '/v1/multihead', body)).json();
    for (const key of ['output', 'concat']) a[key].forEach((row, i) => row.forEach((x, c) => assertNear(x, f[key][i][c], `${key}[${i}][${c}]`)));
    for (const key of ['head_outputs', 'lse', 'row_sum'])
      a[key].forEach((m, h) => m.forEach((row, i) => [row].flat().forEach((x, c) =>
        assertNear(x, [f[key][h][i]].flat()[c], `${key} head ${h} [${i}][${c}]`))));
  }
});

test('a request that needs the per-head steps is refused over --max-cells, with the way out', async () => {
  const p = problem(11, { nQ: 40, nK: 40 });
  for (const [extra, format] of [[{}, 'json'], [{ include: ['weights'] }, 'json'], [{ include: ['summary'] }, 'json'],
    [{ include: STREAMABLE, explain: { row: 0, head: 0 } }, 'json'], [{ include: STREAMABLE, dropout: { p: 0.1, seed: 1 } }, 'json'],
    [{ include: STREAMABLE }, 'text']]) {
    const r = await request(small.port, { method: 'POST', path: `/v1/multihead?format=${format}`,
      headers: { 'Content-Type': 'application/json', Accept: format === 'text' ? 'text/plain' : 'application/json' },
      body: JSON.stringify({ ...p, ...extra }) });
    const e = assertProblem(assert, r, 422);
    assert.equal(e.type.endsWith('limit-exceeded'), true, r.body);
    assert.equal(e.errors[0].pointer, '/heads', JSON.stringify(extra));
    assert.match(e.errors[0].hint, /head_outputs, concat, output, row_sum, lse/);
  }
});

test('bad rows: each a 422 at its pointer', async () => {
  const p = problem(13, { nQ: 4, nK: 4 });
  const cases = [
    [{ rows: [] }, '/rows', /empty list/], [{ rows: 2 }, '/rows', /non-empty list/],
    [{ rows: [0, 4] }, '/rows/1', /x has 4 rows: each entry of rows is a query index 0 to 3/],
    [{ rows: [0.5] }, '/rows/0', /rows/],
    [{ rows: [0, 3], explain: { row: 2, head: 1 } }, '/explain/row', /add 2 to rows/],
  ];
  for (const [extra, pointer, message] of cases) {
    const r = await postJson(full.port, '/v1/multihead', { ...p, ...extra });
    const e = assertProblem(assert, r, 422);
    assert.equal(e.errors[0].pointer, pointer, JSON.stringify(extra));
    assert.match(`${e.detail} ${e.errors[0].hint ?? ''}`, message);
  }
  // cross-attention's queries are x_q's rows
  const cross = await postJson(full.port, '/v1/multihead',
    { ...problem(14, { nQ: 5, nK: 9, cross: true }), rows: [5] });
  assert.match(assertProblem(assert, cross, 422).errors[0].hint, /^x_q has 5 rows: .* 0 to 4$/);
  const bv = await request(full.port, { method: 'POST', path: '/v1/multihead?format=bertviz',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...p, rows: [0] }) });
  assert.equal(assertProblem(assert, bv, 422).errors[0].pointer, '/rows');
  // the listed rows' steps are built too: over --max-cells, at /rows
  const big = problem(15, { nQ: 20, nK: 20 });
  const many = Array.from({ length: 40 }, (_, i) => i % 20);
  const over = assertProblem(assert, await postJson(small.port, '/v1/multihead', { ...big, rows: many }), 422);
  assert.equal(over.errors[0].pointer, '/rows');
});

test('explain works on a listed row of a head as it does without rows', async () => {
  const p = problem(23, { nQ: 4, nK: 4, extra: { mask: 'causal', rope: {}, sink_logit: 0.25 } });
  const whole = (await postJson(full.port, '/v1/multihead', { ...p, explain: { row: 2, head: 1 } })).json();
  const r = await postJson(full.port, '/v1/multihead', { ...p, rows: [3, 2], explain: { row: 2, head: 1 } });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json().explain, whole.explain);
});

test('the text page labels the listed rows with their real names', async () => {
  const p = problem(17, { nQ: 4, nK: 4, extra: { labels: { queries: ['나는', 'a', 'b', 'c'] } } });
  const r = await request(full.port, { method: 'POST', path: '/v1/multihead?format=text',
    headers: { 'Content-Type': 'application/json', Accept: 'text/plain' },
    body: JSON.stringify({ ...p, rows: [3, 0], include: ['x', 'weights', 'output'] }) });
  assert.equal(r.status, 200, r.body);
  const text = r.body;
  assert.match(text.split('\n')[0], /^multi-head self-attention  n_q 4  n_k 4 .*  rows 2$/,
    "the header gives the problem's n_q and the answer's rows");
  const x = text.slice(text.indexOf('\nx\n'));
  for (const name of ['나는', 'a', 'b', 'c']) assert.match(x, new RegExp(`\\n\\s*${name}\\s`), 'x keeps every row');
  const out = text.slice(text.lastIndexOf('output'));
  assert.ok(out.indexOf('c') < out.indexOf('나는'), 'output: rows[0] = 3 (c) first, then 나는');
});

/** The V2 model multihead's JSON body for a /v1 problem p (self or cross, causal or not). */
function v2Body(p, outputs, batch = 0) {
  const t = (name, m) => ({ name, datatype: 'FP64', shape: batch ? [batch, m.length, m[0].length] : [m.length, m[0].length],
    data: batch ? Array.from({ length: batch }, () => m.flat()).flat() : m.flat() });
  const inputs = p.x ? [t('X', p.x)] : [t('X_Q', p.x_q), t('X_KV', p.x_kv)];
  for (const w of ['w_q', 'w_k', 'w_v', 'w_o']) inputs.push({ name: w.toUpperCase(), datatype: 'FP64', shape: [p[w].length, p[w][0].length], data: p[w].flat() });
  inputs.push({ name: 'B_Q', datatype: 'FP64', shape: [p.b_q.length], data: p.b_q });
  const parameters = { heads: p.heads, kv_heads: p.kv_heads, ...(p.mask === 'causal' ? { causal: true } : {}) };
  return { inputs, parameters, outputs: outputs.map((name) => ({ name })) };
}

test('V2 multihead: outputs that need no (n_q, n_k) step are streamed, over --max-cells too', async () => {
  const p = problem(19, { nQ: 40, nK: 36, heads: 4, kvHeads: 2, cross: true });
  const outs = ['OUTPUT', 'LSE', 'ROW_SUM', 'ROW_MAX', 'HEAD_OUTPUTS', 'CONCAT', 'K'];
  const want = multihead(p);
  for (const batch of [0, 2]) {
    const r = await postJson(small.port, '/v2/models/multihead/infer', v2Body(p, outs, batch));
    assert.equal(r.status, 200, r.body);
    const got = Object.fromEntries(r.json().outputs.map((o) => [o.name, o]));
    const per = batch || 1;
    assert.deepEqual(got.OUTPUT.shape, batch ? [batch, 40, 8] : [40, 8]);
    assert.deepEqual(got.LSE.shape, batch ? [batch, 4, 40] : [4, 40]);
    for (let b = 0; b < per; b++) {
      want.output.flat().forEach((x, c) => assertNear(got.OUTPUT.data[b * 320 + c], x, `OUTPUT[${b}][${c}]`));
      want.concat.flat().forEach((x, c) => assertNear(got.CONCAT.data[b * 320 + c], x, `CONCAT[${b}][${c}]`));
      want.k.flat().forEach((x, c) => assertNear(got.K.data[b * 36 * 4 + c], x, `K[${b}][${c}]`));
      want.heads.forEach((hd, h) => hd.stats.forEach(([max, sum, lse], i) => {
        assertNear(got.LSE.data[b * 160 + h * 40 + i], lse, `LSE[${b}][${h}][${i}]`);
        assertNear(got.ROW_SUM.data[b * 160 + h * 40 + i], sum, `ROW_SUM[${b}][${h}][${i}]`);
        assertNear(got.ROW_MAX.data[b * 160 + h * 40 + i], max, `ROW_MAX[${b}][${h}][${i}]`);
        hd.output[i].forEach((x, c) => assertNear(got.HEAD_OUTPUTS.data[b * 320 + h * 80 + i * 2 + c], x, `HEAD_OUTPUTS[${b}][${h}][${i}][${c}]`));
      }));
    }
  }
  // WEIGHTS needs every head's (n_q, n_k) matrix: over --max-cells it is refused, with the way out
  const w = await postJson(small.port, '/v2/models/multihead/infer', v2Body(problem(21, { nQ: 40, nK: 40 }), ['OUTPUT', 'WEIGHTS']));
  assert.equal(w.status, 400, w.body); // V2 answers its errors 400
  assert.match(w.json().error, /score matrix/);
  assert.match(w.json().errors[0].hint, /OUTPUT, Q, K, V, HEAD_OUTPUTS, CONCAT, LSE/);
});

test('the text page with rows and a sink logit gives each head\'s sink_weight for the listed rows only', async () => {
  const body = { heads: 2, kv_heads: 1, random: { seed: 2, n: 3, d_model: 4 }, rows: [2, 0], sink_logit: 0.5,
    round: 4 };
  const text = (await postJson(full.port, "/v1/multihead?format=text", body)).body;
  const json = (await postJson(full.port, "/v1/multihead", { ...body, include: ["summary"] })).json();
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.includes('sink_weight'));
  assert.ok(at >= 0, text);
  for (let h = 0; h < 2; h++) {
    const numbers = lines[at + 1 + h].replace(/^\s*head \d+:\s*/, '').trim().split(/\s+/).map(Number);
    assert.deepEqual(numbers, json.summary.sink_weight[h].map((x) => Number(x.toFixed(4))), `head ${h}`);
  }
});
