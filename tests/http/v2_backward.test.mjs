// tests/http/v2_backward.test.mjs — the backward pass on the V2 model `attention`: an input
// GRAD_OUTPUT (dO, OUTPUT's shape) makes the gradients' steps outputs (GRAD_OUTPUT, GRAD_V,
// GRAD_WEIGHTS, DELTA, GRAD_MASKED, GRAD_SCALED, GRAD_SCORES, GRAD_Q_ROPE, GRAD_K_ROPE,
// GRAD_Q, GRAD_K, GRAD_SINK_LOGIT, GRAD_BIAS). Each is held to /v1/attention's `backward`
// answer for the same numbers: bit for bit in binary FP64, to 1e-15 in JSON, with /v1's
// shapes (the batch first); an FP16 or BF16 dO answers what its FP64 twin answers; a few
// torch.autograd fixtures (tests/data/backward_torch.json) sent as V2 to 1e-9; with
// parameters.precision, /v1's low backward bit for bit (a batch too); the metadata; and
// each bad input's 400.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { postBytes, postJson, request, startServer } from './lib.mjs';
import { assertClose, batched, body, bytesOf, fill, flat, fp64Bytes, inferAt, outputsOf, refusedAt, tensor } from './v2_helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = JSON.parse(readFileSync(path.join(here, '..', 'data', 'backward_torch.json'), 'utf8'));

let s;
let small; // --max-cells 64: a (9, 9) score matrix is over it, its output is not
before(async () => {
  s = await startServer(['--log', 'off']);
  small = await startServer(['--log', 'off', '--max-cells', '64']);
});
after(async () => {
  await s.stop();
  await small.stop();
});

assert.equal(new Uint8Array(new Uint16Array([1]).buffer)[0], 1, 'the test builds little-endian bytes');

const infer = (model, inputs, outputs, parameters, binary = false, server = s) =>
  inferAt(server.port, model, inputs, outputs, parameters, binary);

async function v1(req) {
  const r = await postJson(s.port, '/v1/attention', req);
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

// The backward pass's outputs, /v1's step names in upper case, in the order they run.
const GRADS = ['grad_output', 'grad_v', 'grad_weights', 'delta', 'grad_masked', 'grad_scaled',
  'grad_scores', 'grad_q_rope', 'grad_k_rope', 'grad_q', 'grad_k', 'grad_sink_logit', 'grad_bias'];
const upper = (name) => name.toUpperCase();

/** The gradients a problem makes: the rope ones with rope, the sink's with a sink, bias's with BIAS. */
function gradsOf(p) {
  return GRADS.filter((g) => (g.endsWith('_rope') ? p.v1.rope !== undefined
    : g === 'grad_sink_logit' ? p.v1.sink_logit !== undefined
      : g === 'grad_bias' ? p.v1.bias !== undefined : true));
}

/** Problems: /v1's fields, and V2's parameters and extra inputs for the same numbers. */
const PROBLEMS = [
  { what: 'plain', nQ: 3, nK: 4, dK: 4, dV: 3, v1: {}, params: {} },
  { what: 'causal', nQ: 4, nK: 4, dK: 2, dV: 2, v1: { mask: 'causal' }, params: { causal: true } },
  { what: 'rope', nQ: 3, nK: 5, dK: 4, dV: 2, v1: { rope: { base: 100, layout: 'interleaved' } },
    params: { rope_base: 100, rope_layout: 'interleaved' } },
  { what: 'softcap', nQ: 3, nK: 3, dK: 4, dV: 2, v1: { softcap: 0.5, scale: 1 }, params: { softcap: 0.5, scale: 1 } },
  { what: 'sink logit', nQ: 3, nK: 4, dK: 2, dV: 2, v1: { sink_logit: 0.25 }, params: { sink_logit: 0.25 } },
  { what: 'bias', nQ: 3, nK: 4, dK: 2, dV: 2, bias: true, v1: {}, params: {} },
];

/** A problem's numbers, seeded: q, k, v, dO and (when it has one) the bias. */
function numbersOf(p, seed) {
  const n = { q: fill(p.nQ, p.dK, seed + 3), k: fill(p.nK, p.dK, seed + 5), v: fill(p.nK, p.dV, seed + 11),
    dO: fill(p.nQ, p.dV, seed + 2) };
  if (p.bias) n.bias = fill(p.nQ, p.nK, seed + 1);
  return n;
}

/** /v1's answer for the numbers: every gradient the problem makes, and its shapes. */
async function v1Backward(p, n) {
  const req = { q: n.q, k: n.k, v: n.v, ...p.v1, backward: { grad_output: n.dO },
    include: ['output', ...gradsOf({ ...p, v1: { ...p.v1, bias: n.bias } })] };
  if (n.bias) req.bias = n.bias;
  const got = await v1(req);
  got.stepShape = Object.fromEntries(got.steps.map((x) => [x.name, x.shape]));
  return got;
}

function v2Inputs(n, dOType = 'FP64') {
  const inputs = [tensor('Q', n.q), tensor('K', n.k), tensor('V', n.v), tensor('GRAD_OUTPUT', n.dO, dOType)];
  if (n.bias) inputs.push(tensor('BIAS', n.bias));
  return inputs;
}

test('every GRAD_ output is /v1\'s backward answer: bit for bit in binary FP64, 1e-15 in JSON, /v1\'s shapes', async () => {
  for (const p of PROBLEMS) {
    const n = numbersOf(p, 1);
    const want = await v1Backward(p, n);
    const names = gradsOf({ ...p, v1: { ...p.v1, bias: n.bias } });
    for (const binary of [false, true]) {
      const at = `${p.what}, ${binary ? 'binary' : 'JSON'}`;
      const o = outputsOf(await infer('attention', v2Inputs(n), ['OUTPUT', ...names.map(upper)], p.params, binary));
      assert.deepEqual(Object.keys(o), ['OUTPUT', ...names.map(upper)], at);
      for (const g of names) {
        const got = o[upper(g)];
        assert.equal(got.datatype, 'FP64', `${at} ${g}`);
        assert.deepEqual(got.shape, want.stepShape[g], `${at} ${g} shape`);
        if (binary) assert.ok(got.bytes.equals(fp64Bytes(want[g])), `${at} ${g}: bit for bit`);
        else assertClose(got.data, want[g], 1e-15, `${at} ${g}`);
      }
      assertClose(o.OUTPUT.data, want.output, 1e-15, `${at} OUTPUT`);
    }
  }
});

test('a batch of 2: each problem its own dO, every gradient /v1\'s, the batch size first', async () => {
  const p = { ...PROBLEMS[2], bias: true }; // rope and a per-problem BIAS
  const ns = [numbersOf(p, 1), numbersOf(p, 4)];
  const want = [await v1Backward(p, ns[0]), await v1Backward(p, ns[1])];
  const names = gradsOf({ ...p, v1: { ...p.v1, bias: ns[0].bias } });
  assert.ok(names.includes('grad_q_rope') && names.includes('grad_bias'));
  const inputs = ['q', 'k', 'v', 'dO', 'bias'].map((key) =>
    batched(key === 'dO' ? 'GRAD_OUTPUT' : upper(key), ns.map((x) => x[key])));
  for (const binary of [false, true]) {
    const o = outputsOf(await infer('attention', inputs, names.map(upper), p.params, binary));
    for (const g of names) {
      const got = o[upper(g)], at = `batch ${binary ? 'binary' : 'JSON'} ${g}`;
      assert.deepEqual(got.shape, [2, ...want[0].stepShape[g]], at);
      const both = [...flat(want[0][g]), ...flat(want[1][g])];
      if (binary) assert.ok(got.bytes.equals(fp64Bytes(both)), `${at}: bit for bit`);
      else assertClose(got.data, both, 1e-15, at);
    }
  }
  // the sink logit's gradient is one number a problem: (B)
  const sp = PROBLEMS[4], sn = [numbersOf(sp, 1), numbersOf(sp, 2)];
  const sw = [await v1Backward(sp, sn[0]), await v1Backward(sp, sn[1])];
  const sIn = ['q', 'k', 'v', 'dO'].map((key) => batched(key === 'dO' ? 'GRAD_OUTPUT' : upper(key), sn.map((x) => x[key])));
  const so = outputsOf(await infer('attention', sIn, ['GRAD_SINK_LOGIT', 'DELTA'], sp.params, true));
  assert.deepEqual(so.GRAD_SINK_LOGIT.shape, [2]);
  assert.ok(so.GRAD_SINK_LOGIT.bytes.equals(fp64Bytes([sw[0].grad_sink_logit, sw[1].grad_sink_logit])));
  assert.deepEqual(so.DELTA.shape, [2, sp.nQ]);
});

test('a vector Q: GRAD_OUTPUT (d_v), DELTA and GRAD_SINK_LOGIT scalars, GRAD_K (n_k, d_k), as /v1', async () => {
  const q = [0.5, -0.25], k = fill(3, 2, 5), v = fill(3, 2, 7), dO = [1, -0.5];
  const want = await v1({ q, k, v, sink_logit: 0.5, backward: { grad_output: dO },
    include: ['grad_q', 'grad_k', 'delta', 'grad_sink_logit', 'grad_masked'] });
  const inputs = [{ name: 'Q', shape: [2], datatype: 'FP64', values: q }, tensor('K', k), tensor('V', v),
    { name: 'GRAD_OUTPUT', shape: [2], datatype: 'FP64', values: dO }];
  const o = outputsOf(await infer('attention', inputs, ['GRAD_Q', 'GRAD_K', 'DELTA', 'GRAD_SINK_LOGIT', 'GRAD_MASKED'],
    { sink_logit: 0.5 }, true));
  assert.deepEqual([o.GRAD_Q.shape, o.GRAD_K.shape, o.DELTA.shape, o.GRAD_SINK_LOGIT.shape, o.GRAD_MASKED.shape],
    [[2], [3, 2], [], [], [3]]);
  for (const g of ['grad_q', 'grad_k', 'delta', 'grad_sink_logit', 'grad_masked'])
    assert.ok(o[upper(g)].bytes.equals(fp64Bytes(want[g])), g);
});

test('GRAD_OUTPUT in FP16 or BF16, binary or JSON, is widened exactly: the FP64 twin\'s answer', async () => {
  const p = PROBLEMS[0], n = numbersOf(p, 1);
  const names = ['GRAD_OUTPUT', 'GRAD_Q', 'GRAD_K', 'GRAD_V', 'DELTA'];
  const twin = outputsOf(await infer('attention', v2Inputs(n), names, {}, true));
  for (const datatype of ['FP16', 'BF16']) {
    for (const binary of [false, true]) {
      const o = outputsOf(await infer('attention', v2Inputs(n, datatype), names, {}, binary));
      for (const name of names) {
        if (binary) assert.ok(o[name].bytes.equals(twin[name].bytes), `${datatype} binary ${name}`);
        else assert.deepEqual(o[name].data, twin[name].data, `${datatype} JSON ${name}`);
      }
    }
  }
  // the datatype an output asks for holds, as for the forward outputs
  const b = await postBytes(s.port, '/v2/models/attention/infer', JSON.stringify({
    inputs: v2Inputs(n).map(({ values, ...t }) => ({ ...t, data: values })),
    outputs: [{ name: 'GRAD_Q', parameters: { datatype: 'FP32' } }] }), { 'Content-Type': 'application/json' });
  const g = JSON.parse(b.body).outputs[0];
  assert.equal(g.datatype, 'FP32');
  assert.deepEqual(g.data, twin.GRAD_Q.data.map((x) => Math.fround(x)));
});

test('none asked: WEIGHTS, OUTPUT, GRAD_Q, GRAD_K, GRAD_V; OUTPUT and LSE alone are computed whole', async () => {
  const p = PROBLEMS[0], n = numbersOf(p, 1);
  const r = await postBytes(s.port, '/v2/models/attention/infer', body(v2Inputs(n), [], {}, false).body.replace(',"outputs":[]', ''),
    { 'Content-Type': 'application/json' });
  assert.deepEqual(JSON.parse(r.body).outputs.map((x) => x.name), ['WEIGHTS', 'OUTPUT', 'GRAD_Q', 'GRAD_K', 'GRAD_V']);
  // OUTPUT and LSE stream without GRAD_OUTPUT: a (9, 9) problem fits --max-cells 64 ...
  const q = fill(9, 2, 3), k = fill(9, 2, 5), v = fill(9, 1, 7), dO = fill(9, 1, 2);
  const plain = [tensor('Q', q), tensor('K', k), tensor('V', v)];
  outputsOf(await infer('attention', plain, ['OUTPUT', 'LSE'], {}, false, small));
  // ... and with it the backward needs every step: its 81 scores are over the limit
  const r2 = await infer('attention', [...plain, tensor('GRAD_OUTPUT', dO)], ['OUTPUT', 'LSE'], {}, false, small);
  assert.equal(r2.status, 400, r2.body);
  assert.equal(r2.json().type, '/problems/limit-exceeded');
  // on a server that holds them, OUTPUT and LSE are /v1's
  const want = await v1({ q, k, v, backward: { grad_output: dO }, include: ['output', 'lse', 'grad_q'] });
  const o = outputsOf(await infer('attention', [...plain, tensor('GRAD_OUTPUT', dO)], ['OUTPUT', 'LSE', 'GRAD_Q'], {}, true));
  assert.ok(o.OUTPUT.bytes.equals(fp64Bytes(want.output)));
  assert.ok(o.LSE.bytes.equals(fp64Bytes(want.lse)));
  assert.ok(o.GRAD_Q.bytes.equals(fp64Bytes(want.grad_q)));
});

// The torch.autograd fixtures whose fields V2 has as parameters and inputs.
const TORCH = { plain: {}, causal: {}, 'rope half': {}, 'rope interleaved, fraction 0.5': {}, softcap: {}, sink_logit: {}, bias: {} };

/** A fixture's /v1 request as V2 inputs and parameters. */
function asV2(request) {
  const { q, k, v, bias, mask, rope, scale, softcap, sink_logit: sink, backward } = request;
  const inputs = [tensor('Q', q), tensor('K', k), tensor('V', v), tensor('GRAD_OUTPUT', backward.grad_output)];
  if (bias) inputs.push(tensor('BIAS', bias));
  const parameters = {};
  if (mask === 'causal') parameters.causal = true;
  else assert.equal(mask, undefined, 'a fixture V2 reads');
  if (scale !== undefined) parameters.scale = scale;
  if (softcap !== undefined) parameters.softcap = softcap;
  if (sink !== undefined) parameters.sink_logit = sink;
  for (const [key, value] of Object.entries(rope ?? {})) parameters[`rope_${key}`] = value;
  return { inputs, parameters };
}

test('torch.autograd\'s gradients, sent as V2: within 1e-9', async () => {
  const cases = fixtures.attention.filter((c) => c.name in TORCH);
  assert.equal(cases.length, Object.keys(TORCH).length);
  for (const { name, request, want } of cases) {
    const { inputs, parameters } = asV2(request);
    const asked = Object.keys(want).map(upper);
    const o = outputsOf(await infer('attention', inputs, asked, parameters, true));
    for (const [key, value] of Object.entries(want)) {
      const w = flat(value), scale = Math.max(1e-6, ...w.map(Math.abs));
      const got = o[upper(key)].data;
      assert.equal(got.length, w.length, `${name} ${key}`);
      w.forEach((x, i) => assert.ok(Math.abs(got[i] - x) <= 1e-9 * scale, `${name} ${key}[${i}]: ${got[i]}, torch ${x}`));
    }
  }
});

test('the metadata lists GRAD_OUTPUT among the inputs and every gradient among the outputs', async () => {
  const r = await request(s.port, { path: '/v2/models/attention' });
  assert.equal(r.status, 200, r.body);
  const meta = r.json();
  assert.deepEqual(meta.inputs.find((t) => t.name === 'GRAD_OUTPUT'), { name: 'GRAD_OUTPUT', datatype: 'FP64', shape: [-1, -1] });
  const outs = Object.fromEntries(meta.outputs.map((t) => [t.name, t]));
  for (const g of GRADS) assert.equal(outs[upper(g)]?.datatype, 'FP64', g);
  assert.deepEqual(outs.GRAD_SINK_LOGIT.shape, []);
  assert.deepEqual(outs.DELTA.shape, [-1]);
  assert.deepEqual(outs.GRAD_Q.shape, [-1, -1]);
  assert.deepEqual(meta.outputs.slice(-GRADS.length).map((t) => t.name), GRADS.map(upper), 'in the order they run');
});

const refused = (model, inputs, outputs, parameters, expect) =>
  refusedAt(s.port, model, inputs, outputs, parameters, expect);

test('each bad backward input is a 400 naming it', async () => {
  const n = numbersOf(PROBLEMS[0], 1), qkv = [tensor('Q', n.q), tensor('K', n.k), tensor('V', n.v)];
  const dO = tensor('GRAD_OUTPUT', n.dO);
  const A = (inputs, outputs, parameters, expect) => refused('attention', inputs, outputs, parameters, expect);
  const j = await A(qkv, ['OUTPUT', 'GRAD_Q'], {}, { type: 'missing-field', pointer: '/outputs/1/name',
    message: /^output GRAD_Q is a step of the backward pass, which runs only with an input GRAD_OUTPUT$/ });
  assert.match(j.errors[0].hint, /send GRAD_OUTPUT/);
  await A([...qkv, tensor('GRAD_OUTPUT', fill(3, 2, 1))], ['GRAD_Q'], {}, { type: 'shape-mismatch',
    pointer: '/inputs/3/shape', message: /^GRAD_OUTPUT has shape \[3, 2\] but must be OUTPUT's shape \[3, 3\]$/ });
  await A([...qkv, { name: 'GRAD_OUTPUT', shape: [9], datatype: 'FP64', values: flat(n.dO) }], ['GRAD_Q'], {},
    { type: 'shape-mismatch', pointer: '/inputs/3/shape', message: /has shape \[9\] but must be OUTPUT's shape \[3, 3\]/ });
  // a batched Q needs a batched dO, each problem its own
  const bq = ['q', 'k', 'v'].map((key) => batched(upper(key), [n[key], n[key]]));
  await A([...bq, dO], ['GRAD_Q'], {}, { type: 'shape-mismatch', pointer: '/inputs/3/shape',
    message: /has shape \[3, 3\] but must be OUTPUT's shape \[2, 3, 3\]/ });
  await A([...qkv, dO], ['GRAD_Q_ROPE'], {}, { type: 'invalid-value', pointer: '/outputs/0/name',
    message: /^output GRAD_Q_ROPE is a step of a variant this request does not ask for$/ });
  await A([...qkv, dO], ['GRAD_Q', 'GRAD_SINK_LOGIT'], {}, { type: 'invalid-value', pointer: '/outputs/1/name',
    message: /GRAD_SINK_LOGIT is a step of a variant/ });
  const b = await A([...qkv, dO], ['GRAD_BIAS'], {}, { type: 'invalid-value', pointer: '/outputs/0/name',
    message: /GRAD_BIAS is a step of a variant/ });
  assert.match(b.errors[0].hint, /GRAD_BIAS an input BIAS/);
  await A([...qkv, { ...dO, datatype: 'BOOL', values: flat(n.dO).map((x) => x > 0) }], ['GRAD_Q'], {},
    { type: 'invalid-value', pointer: '/inputs/3/datatype', message: /^inputs\[3\] \(GRAD_OUTPUT\) is BOOL/ });
});

test('with precision, every GRAD_ output is /v1\'s low backward answer, bit for bit in binary FP64', async () => {
  for (const [format, accumulate] of [['float16', 'float32'], ['bfloat16', 'same'], ['float32', 'float32']]) {
    for (const p of PROBLEMS) {
      const n = numbersOf(p, 2);
      const low = { ...p, v1: { ...p.v1, precision: { format, accumulate } } };
      const want = await v1Backward(low, n);
      const names = gradsOf({ ...p, v1: { ...p.v1, bias: n.bias } });
      const o = outputsOf(await infer('attention', v2Inputs(n), ['OUTPUT', ...names.map(upper)],
        { ...p.params, precision: format, accumulate }, true));
      for (const g of ['output', ...names]) {
        const got = o[upper(g)], at = `${p.what} ${format}/${accumulate} ${g}`;
        assert.equal(got.datatype, 'FP64', at);
        assert.deepEqual(got.shape, g === 'output' ? [p.nQ, p.dV] : want.stepShape[g], `${at} shape`);
        assert.ok(got.bytes.equals(fp64Bytes(want[g])), `${at}: bit for bit`);
      }
    }
  }
  // a batch of 2 in float16: each problem /v1's own
  const p = PROBLEMS[1], ns = [numbersOf(p, 1), numbersOf(p, 4)];
  const low = { ...p, v1: { ...p.v1, precision: { format: 'float16' } } };
  const want = [await v1Backward(low, ns[0]), await v1Backward(low, ns[1])];
  const inputs = ['q', 'k', 'v', 'dO'].map((key) =>
    batched(key === 'dO' ? 'GRAD_OUTPUT' : upper(key), ns.map((x) => x[key])));
  const o = outputsOf(await infer('attention', inputs, ['GRAD_Q', 'GRAD_K', 'GRAD_V'],
    { ...p.params, precision: 'float16' }, true));
  for (const g of ['grad_q', 'grad_k', 'grad_v'])
    assert.ok(o[upper(g)].bytes.equals(fp64Bytes([...flat(want[0][g]), ...flat(want[1][g])])), `batch ${g}`);
  // the gradients differ from float64's: the rules ran
  const exact = await v1Backward(p, ns[0]);
  assert.ok(flat(want[0].grad_q).some((x, c) => x !== flat(exact.grad_q)[c]), 'float16 is not float64');
});
