// tests/http/v2_mh_backward.test.mjs — the backward pass on the V2 model `multihead`: an input
// GRAD_OUTPUT (dO, OUTPUT's shape) makes /v1/multihead's gradient steps outputs, their names in
// upper case. Each is held to /v1/multihead's `backward` answer for the same numbers (which
// tests/http/backward.test.mjs holds to torch.autograd): bit for bit in binary FP64, with
// /v1's shapes, for self- and cross-attention, GQA, biases, both weight layouts, RoPE and a
// sink logit; a batch of 2 answers each problem's own; with parameters.precision, /v1's low
// backward bit for bit; none asked gives the layer's gradients; the metadata lists them;
// each bad input is a 400 naming it.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postJson, request, startServer } from './lib.mjs';
import { assertClose, batched, fill, flat, fp64Bytes, inferAt, outputsOf, refusedAt, tensor } from './v2_helpers.mjs';

let s;
before(async () => {
  s = await startServer(['--log', 'off']);
});
after(async () => {
  await s.stop();
});

const infer = (inputs, outputs, parameters, binary = false) =>
  inferAt(s.port, 'multihead', inputs, outputs, parameters, binary);
const upper = (name) => name.toUpperCase();
const transpose = (m) => m[0].map((_, c) => m.map((row) => row[c]));

// /v1/multihead's gradient steps, in the order they run.
const GRADS = ['grad_output', 'grad_w_o', 'grad_b_o', 'grad_weights', 'delta', 'grad_masked',
  'grad_q', 'grad_k', 'grad_v', 'grad_w_q', 'grad_w_k', 'grad_w_v', 'grad_b_q', 'grad_b_k',
  'grad_b_v', 'grad_x', 'grad_x_q', 'grad_x_kv', 'grad_sink_logit', 'grad_bias'];

/** The gradients a problem makes: its biases', self or cross, a sink's, BIAS's. */
function gradsOf(p) {
  return GRADS.filter((g) => {
    const bias = /^grad_b_([qkvo])$/.exec(g);
    if (bias) return p.biases.includes(bias[1]);
    if (g === 'grad_x') return !p.cross;
    if (g === 'grad_x_q' || g === 'grad_x_kv') return p.cross;
    if (g === 'grad_sink_logit') return p.v1.sink_logit !== undefined;
    if (g === 'grad_bias') return p.bias;
    return true;
  });
}

const PROBLEMS = [
  { what: 'self, 2 heads', n: 3, d: 4, heads: 2, kv: 2, biases: [], v1: {}, params: {} },
  { what: 'GQA, biases, causal', n: 4, d: 4, heads: 2, kv: 1, biases: ['q', 'k', 'v', 'o'],
    v1: { mask: 'causal' }, params: { causal: true } },
  { what: 'cross, out_in', n: 3, nKv: 5, cross: true, d: 4, heads: 2, kv: 2, biases: ['k'],
    layout: 'out_in', v1: {}, params: {} },
  { what: 'rope and a sink', n: 4, d: 8, heads: 2, kv: 1, biases: [], v1: { rope: {}, sink_logit: 0.5 },
    params: { rope_base: 10000, sink_logit: 0.5 } },
  { what: 'BIAS', n: 3, d: 4, heads: 4, kv: 2, biases: ['o'], bias: true, v1: {}, params: {} },
];

/** The numbers of problem p: x (or x_q, x_kv), the weights in p's layout, biases, dO, BIAS. */
function numbersOf(p, seed) {
  const kvCols = (p.d / p.heads) * p.kv;
  const weight = (out, sd) => (p.layout === 'out_in' ? transpose(fill(p.d, out, sd)) : fill(p.d, out, sd));
  const n = { w_q: weight(p.d, seed + 2), w_k: weight(kvCols, seed + 3), w_v: weight(kvCols, seed + 4),
    w_o: weight(p.d, seed + 5), dO: fill(p.n, p.d, seed + 6) };
  if (p.cross) {
    n.x_q = fill(p.n, p.d, seed + 1);
    n.x_kv = fill(p.nKv, p.d, seed + 7);
  } else n.x = fill(p.n, p.d, seed + 1);
  for (const b of p.biases) n[`b_${b}`] = fill(1, b === 'k' || b === 'v' ? kvCols : p.d, seed + 8)[0];
  if (p.bias) n.bias = fill(p.n, p.cross ? p.nKv : p.n, seed + 9);
  return n;
}

const INPUTS = ['x', 'x_q', 'x_kv', 'w_q', 'w_k', 'w_v', 'w_o', 'b_q', 'b_k', 'b_v', 'b_o', 'bias'];

async function v1Backward(p, n) {
  const req = { heads: p.heads, kv_heads: p.kv, ...p.v1, backward: { grad_output: n.dO },
    include: ['output', ...gradsOf(p)] };
  if (p.layout) req.weight_layout = p.layout;
  for (const key of INPUTS) if (n[key] !== undefined) req[key] = n[key];
  const r = await postJson(s.port, '/v1/multihead', req);
  assert.equal(r.status, 200, r.body);
  const got = r.json();
  got.stepShape = Object.fromEntries(got.steps.map((x) => [x.name, x.shape]));
  return got;
}

function v2Inputs(n) {
  const inputs = [];
  for (const key of INPUTS) {
    if (n[key] === undefined) continue;
    const m = Array.isArray(n[key][0]) ? n[key] : [n[key]];
    const t = tensor(upper(key), m);
    inputs.push(Array.isArray(n[key][0]) ? t : { ...t, shape: [n[key].length] });
  }
  inputs.push(tensor('GRAD_OUTPUT', n.dO));
  return inputs;
}

const paramsOf = (p) => ({ heads: p.heads, kv_heads: p.kv, ...(p.layout ? { weight_layout: p.layout } : {}), ...p.params });

test('every GRAD_ output is /v1/multihead\'s backward answer, bit for bit in binary FP64, /v1\'s shapes', async () => {
  for (const p of PROBLEMS) {
    const n = numbersOf(p, 1);
    const want = await v1Backward(p, n);
    const names = gradsOf(p);
    for (const binary of [false, true]) {
      const at = `${p.what}, ${binary ? 'binary' : 'JSON'}`;
      // V2 takes at most 16 outputs a request: the gradients in two halves
      const half = Math.ceil(names.length / 2), o = {};
      for (const part of [names.slice(0, half), names.slice(half)]) {
        Object.assign(o, outputsOf(await infer(v2Inputs(n), ['OUTPUT', ...part.map(upper)], paramsOf(p), binary)));
      }
      assert.deepEqual(Object.keys(o).sort(), ['OUTPUT', ...names.map(upper)].sort(), at);
      for (const g of names) {
        const got = o[upper(g)];
        assert.deepEqual(got.shape, want.stepShape[g], `${at} ${g} shape`);
        if (binary) assert.ok(got.bytes.equals(fp64Bytes(want[g])), `${at} ${g}: bit for bit`);
        else assertClose(got.data, want[g], 1e-15, `${at} ${g}`);
      }
      assertClose(o.OUTPUT.data, want.output, 1e-15, `${at} OUTPUT`);
    }
  }
});

test('a batch of 2: each problem its own X and dO, every gradient /v1\'s, the batch size first', async () => {
  const p = PROBLEMS[3]; // rope, a sink logit and GQA
  const ns = [numbersOf(p, 1), numbersOf(p, 1)];
  ns[1].x = fill(p.n, p.d, 9);
  ns[1].dO = fill(p.n, p.d, 10);
  const want = [await v1Backward(p, ns[0]), await v1Backward(p, ns[1])];
  const names = gradsOf(p);
  const inputs = v2Inputs(ns[0]).map((t) =>
    (t.name === 'X' ? batched('X', ns.map((x) => x.x)) : t.name === 'GRAD_OUTPUT' ? batched('GRAD_OUTPUT', ns.map((x) => x.dO)) : t));
  const o = outputsOf(await infer(inputs, names.map(upper), paramsOf(p), true));
  for (const g of names) {
    const got = o[upper(g)], at = `batch ${g}`;
    assert.deepEqual(got.shape, [2, ...want[0].stepShape[g]], at);
    assert.ok(got.bytes.equals(fp64Bytes([...flat(want[0][g]), ...flat(want[1][g])])), `${at}: bit for bit`);
  }
});

test('none asked: WEIGHTS, OUTPUT and the layer\'s gradients (GRAD_X or GRAD_X_Q and GRAD_X_KV, GRAD_W_*)', async () => {
  for (const p of [PROBLEMS[0], PROBLEMS[2]]) {
    const o = outputsOf(await infer(v2Inputs(numbersOf(p, 1)), [], paramsOf(p)));
    const x = p.cross ? ['GRAD_X_Q', 'GRAD_X_KV'] : ['GRAD_X'];
    assert.deepEqual(Object.keys(o), ['WEIGHTS', 'OUTPUT', ...x, 'GRAD_W_Q', 'GRAD_W_K', 'GRAD_W_V', 'GRAD_W_O'], p.what);
  }
});

test('the metadata lists GRAD_OUTPUT among the inputs and the gradients among the outputs', async () => {
  const r = await request(s.port, { path: '/v2/models/multihead' });
  assert.equal(r.status, 200);
  const meta = r.json();
  assert.ok(meta.inputs.some((t) => t.name === 'GRAD_OUTPUT'));
  for (const g of GRADS) assert.ok(meta.outputs.some((t) => t.name === upper(g)), g);
});

test('each bad backward input is a 400 naming it', async () => {
  const p = PROBLEMS[0], n = numbersOf(p, 1);
  const inputs = v2Inputs(n);
  const bad = (ins, outs, params, expect) => refusedAt(s.port, 'multihead', ins, outs, params, expect);
  const noDO = inputs.filter((t) => t.name !== 'GRAD_OUTPUT');
  await bad(noDO, ['GRAD_X'], paramsOf(p), { type: 'missing-field', pointer: '/outputs/0/name', message: /^output GRAD_X is a step of the backward pass, which runs only with an input GRAD_OUTPUT/ });
  await bad(inputs, ['GRAD_B_Q'], paramsOf(p), { type: 'invalid-value', pointer: '/outputs/0/name', message: /^output GRAD_B_Q is the gradient of an input or variant this request does not have/ });
  await bad(inputs, ['GRAD_X_Q'], paramsOf(p), { type: 'invalid-value', pointer: '/outputs/0/name', message: /GRAD_X_Q is the gradient/ });
  await bad(inputs, ['GRAD_SINK_LOGIT'], paramsOf(p), { type: 'invalid-value', pointer: '/outputs/0/name', message: /GRAD_SINK_LOGIT is the gradient/ });
  const short = inputs.map((t) => (t.name === 'GRAD_OUTPUT' ? tensor('GRAD_OUTPUT', fill(2, 4, 1)) : t));
  await bad(short, ['GRAD_X'], paramsOf(p), { type: 'shape-mismatch', pointer: '/inputs/5/shape', message: /^GRAD_OUTPUT must have OUTPUT's shape, which is X's/ });
});

test('with precision, every GRAD_ output is /v1/multihead\'s low backward answer, bit for bit in binary FP64', async () => {
  for (const [format, accumulate] of [['float16', 'float32'], ['bfloat16', 'same']]) {
    for (const p of PROBLEMS) {
      const n = numbersOf(p, 2);
      const want = await v1Backward({ ...p, v1: { ...p.v1, precision: { format, accumulate } } }, n);
      const names = gradsOf(p);
      const o = {};
      const half = Math.ceil(names.length / 2); // at most 16 outputs a request
      for (const part of [names.slice(0, half), names.slice(half)])
        Object.assign(o, outputsOf(await infer(v2Inputs(n), ['OUTPUT', ...part.map(upper)],
          { ...paramsOf(p), precision: format, accumulate }, true)));
      for (const g of ['output', ...names]) {
        const got = o[upper(g)], at = `${p.what} ${format}/${accumulate} ${g}`;
        assert.equal(got.datatype, 'FP64', at);
        if (g !== 'output') assert.deepEqual(got.shape, want.stepShape[g], `${at} shape`);
        assert.ok(got.bytes.equals(fp64Bytes(want[g])), `${at}: bit for bit`);
      }
    }
  }
  const p = PROBLEMS[1], n = numbersOf(p, 2);
  const low = await v1Backward({ ...p, v1: { ...p.v1, precision: { format: 'float16' } } }, n);
  const exact = await v1Backward(p, n);
  assert.ok(flat(low.grad_x).some((x, c) => x !== flat(exact.grad_x)[c]), 'float16 is not float64');
});
