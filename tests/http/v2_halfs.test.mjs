// tests/http/v2_halfs.test.mjs — FP16 and BF16 on the V2 wire: inputs widened exactly
// (a half-precision request answers byte for byte what its FP64 twin answers), outputs
// narrowed by `parameters.datatype` (checked against roundings written here and, for
// FP16, numpy's float16 through /usr/bin/python3), and the 400s that name the culprit.
//
// The widening here is the formats' definitions: FP16 in powers of two, BF16 as the
// float32 with those top 16 bits. The narrowing is written from the double's own value
// (scaled by a power of two, then rounded half to even by hand), never through
// Float32Array, whose rounding would round twice.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';

import { postBytes, startServer } from './lib.mjs';
import { bf16Bits, bf16Value, fp16Bits, fp16Value } from './reference.mjs';
import { binaryAnswer, binaryBody, f64Bytes, u16Bytes } from './v2_binary.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

/** POST to a V2 model; resolves {status, headers, body, raw, json()} after the contract check. */
const infer = (model, body, headers = {}) =>
  postBytes(s.port, `/v2/models/${model}/infer`, body, headers);

// ---- the formats, by definition (reference.mjs) ----


test('the test\'s own roundings: known values, ties to even, and the double-rounding trap', () => {
  assert.equal(fp16Bits(1), 0x3c00);
  assert.equal(fp16Bits(65504), 0x7bff);
  assert.equal(fp16Bits(65519.99), 0x7bff);
  assert.equal(fp16Bits(65520), null);
  assert.equal(fp16Bits(2 ** -24), 1);
  assert.equal(fp16Bits(2 ** -25), 0);            // the tie with 0 goes to even: 0
  assert.equal(fp16Bits(1 + 2 ** -11), 0x3c00);   // tie: to even
  assert.equal(fp16Bits(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(bf16Bits(1 + 2 ** -8 + 2 ** -30), 0x3f81); // through float32 it would be 0x3f80
  assert.equal(bf16Value(0x3f81), 1 + 2 ** -7);
  assert.equal(fp16Value(0x8000), -0);
  assert.ok(Object.is(fp16Value(0x8000), -0));
});

// ---- requests ----

/** A small deterministic generator (xorshift32) for the test's numbers. */
function generator(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
}

/**
 * n bit patterns of a format whose values lie within ±4: random patterns, kept when
 * small, plus the awkward ones (±0, the smallest subnormals) up front.
 */
function patterns(n, valueOf, seed, awkward) {
  const next = generator(seed);
  const out = [...awkward];
  while (out.length < n) {
    const b = next() & 0xffff;
    const x = valueOf(b);
    if (Number.isFinite(x) && Math.abs(x) <= 4) out.push(b);
  }
  return out.slice(0, n);
}

const ATTENTION_STEPS = ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'OUTPUT'];
const FORMATS = {
  FP16: { valueOf: fp16Value, bitsOf: fp16Bits, awkward: [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff] },
  BF16: { valueOf: bf16Value, bitsOf: bf16Bits, awkward: [0x0000, 0x8000, 0x0001, 0x8001, 0x007f] },
};

/** The same tensors twice: as `datatype` bit patterns, and widened here into FP64. */
function twins(datatype, specs, seed) {
  const { valueOf, awkward } = FORMATS[datatype];
  const half = [], wide = [];
  specs.forEach(({ name, shape }, i) => {
    const count = shape.reduce((a, b) => a * b, 1);
    const bits = patterns(count, valueOf, seed + i, i === 0 ? awkward : []);
    half.push({ name, shape, datatype, bytes: u16Bytes(bits) });
    wide.push({ name, shape, datatype: 'FP64', bytes: f64Bytes(bits.map(valueOf)) });
  });
  return { half, wide };
}

for (const datatype of ['FP16', 'BF16']) {
  test(`a ${datatype} binary request answers byte for byte what its widened FP64 twin answers`, async () => {
    // attention: 7 queries, 9 keys, d_k 8, d_v 5, a causal mask; every step as FP64 binary.
    const { half, wide } = twins(datatype, [
      { name: 'Q', shape: [7, 8] }, { name: 'K', shape: [9, 8] }, { name: 'V', shape: [9, 5] }], 11);
    const outputs = ATTENTION_STEPS.map((name) => ({ name, datatype: 'FP64' }));
    const a = binaryAnswer(await infer('attention', binaryBody(half, outputs, { causal: true }).body,
      binaryBody(half, outputs, { causal: true }).headers));
    const b = binaryAnswer(await infer('attention', binaryBody(wide, outputs, { causal: true }).body,
      binaryBody(wide, outputs, { causal: true }).headers));
    for (const name of ATTENTION_STEPS) {
      assert.equal(a[name].datatype, 'FP64');
      assert.ok(a[name].bytes.length > 0);
      assert.ok(a[name].bytes.equals(b[name].bytes), `${datatype} ${name} differs from the FP64 twin`);
    }
    // The default for FP16 and BF16 inputs is FP64 too (asked for nothing in particular).
    const plain = ATTENTION_STEPS.map((name) => ({ name }));
    const c = binaryAnswer(await infer('attention', binaryBody(half, plain).body, binaryBody(half, plain).headers));
    assert.equal(c.OUTPUT.datatype, 'FP64');

    // multihead: X (6, 8), 2 heads, every weight in the format too.
    const mh = twins(datatype, [
      { name: 'X', shape: [6, 8] }, { name: 'W_Q', shape: [8, 8] }, { name: 'W_K', shape: [8, 8] },
      { name: 'W_V', shape: [8, 8] }, { name: 'W_O', shape: [8, 8] }, { name: 'B_Q', shape: [8] }], 29);
    const mhOut = ['OUTPUT', 'WEIGHTS', 'Q', 'HEAD_OUTPUTS'].map((name) => ({ name }));
    const d = binaryAnswer(await infer('multihead', binaryBody(mh.half, mhOut, { heads: 2 }).body,
      binaryBody(mh.half, mhOut, { heads: 2 }).headers));
    const e = binaryAnswer(await infer('multihead', binaryBody(mh.wide, mhOut, { heads: 2 }).body,
      binaryBody(mh.wide, mhOut, { heads: 2 }).headers));
    for (const { name } of mhOut) {
      assert.equal(d[name].datatype, 'FP64');
      assert.ok(d[name].bytes.equals(e[name].bytes), `multihead ${datatype} ${name} differs from the FP64 twin`);
    }
  });
}

/** The FP64 values of an answer's FP64 piece. */
const doubles = (piece) => Array.from(new Float64Array(piece.bytes.buffer.slice(
  piece.bytes.byteOffset, piece.bytes.byteOffset + piece.bytes.length)));
const u16s = (piece) => Array.from(new Uint16Array(piece.bytes.buffer.slice(
  piece.bytes.byteOffset, piece.bytes.byteOffset + piece.bytes.length)));

/** numpy's float16 of each double, as bit patterns (numpy rounds from the double once). */
function numpyFp16(values) {
  const program = 'import json, sys\nimport numpy as np\n' +
    'x = np.array(json.loads(sys.stdin.read()), dtype=np.float64)\n' +
    'print(json.dumps(x.astype(np.float16).view(np.uint16).tolist()))\n';
  const text = execFileSync('/usr/bin/python3', ['-c', program],
    { input: JSON.stringify(values), encoding: 'utf8' });
  return JSON.parse(text);
}

test('outputs in FP16, BF16 and FP32 are the FP64 answer rounded once, to nearest even', async () => {
  // FP64 inputs with many digits, so the rounding has work: 5 queries, 6 keys, d 4.
  const next = generator(7);
  const mat = (n) => Array.from({ length: n }, () => (next() / 2 ** 32 - 0.5) * 6);
  const inputs = [
    { name: 'Q', shape: [5, 4], datatype: 'FP64', bytes: f64Bytes(mat(20)) },
    { name: 'K', shape: [6, 4], datatype: 'FP64', bytes: f64Bytes(mat(24)) },
    { name: 'V', shape: [6, 3], datatype: 'FP64', bytes: f64Bytes(mat(18).map((x) => x * 1000)) },
  ];
  const steps = ['SCORES', 'MASKED', 'WEIGHTS', 'OUTPUT'];
  // Each datatype in its own request, the same FP64 answer underneath.
  const answers = {};
  for (const datatype of ['FP64', 'FP32', 'FP16', 'BF16']) {
    const asked = steps.map((name) => ({ name, datatype }));
    const { body, headers } = binaryBody(inputs, asked, { causal: true });
    answers[datatype] = binaryAnswer(await infer('attention', body, headers));
  }
  // numpy once, for every step's finite cells (blocked cells sent as 0 and skipped).
  const everyCell = steps.flatMap((name) => doubles(answers.FP64[name]).map((x) => (Number.isFinite(x) ? x : 0)));
  const numpyAll = numpyFp16(everyCell);
  let checked = 0;
  for (const name of steps) {
    const wide = doubles(answers.FP64[name]);
    const f16 = u16s(answers.FP16[name]);
    const b16 = u16s(answers.BF16[name]);
    assert.equal(answers.FP16[name].datatype, 'FP16');
    assert.equal(answers.BF16[name].datatype, 'BF16');
    assert.deepEqual(answers.FP16[name].shape, answers.FP64[name].shape);
    // MASKED's blocked cells are -inf: -inf in every format.
    const finite = wide.map((x) => Number.isFinite(x));
    assert.deepEqual(f16, wide.map((x) => (Number.isFinite(x) ? fp16Bits(x) : 0xfc00)), `${name} FP16`);
    assert.deepEqual(b16, wide.map((x) => (Number.isFinite(x) ? bf16Bits(x) : 0xff80)), `${name} BF16`);
    const numpy = numpyAll.slice(checked, checked + wide.length);
    f16.forEach((b, i) => { if (finite[i]) assert.equal(b, numpy[i], `${name}[${i}] against numpy`); });
    const f32 = new Float32Array(answers.FP32[name].bytes.buffer.slice(answers.FP32[name].bytes.byteOffset,
      answers.FP32[name].bytes.byteOffset + answers.FP32[name].bytes.length));
    wide.forEach((x, i) => assert.equal(f32[i], Math.fround(x))); // float32 from the double: one rounding
    checked += wide.length;
  }
  assert.ok(checked > 60);

  // JSON data: each number is the narrowed value, written as a double.
  const json = {
    inputs: inputs.map(({ name, shape, datatype, bytes }) => ({ name, shape, datatype,
      data: Array.from(new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))) })),
    outputs: [{ name: 'OUTPUT', parameters: { datatype: 'BF16' } }, { name: 'WEIGHTS', parameters: { datatype: 'FP16' } }],
    parameters: { causal: true },
  };
  const r = await infer('attention', Buffer.from(JSON.stringify(json)), { 'Content-Type': 'application/json' });
  assert.equal(r.status, 200, r.body);
  const [out, w] = r.json().outputs;
  assert.equal(out.datatype, 'BF16');
  assert.equal(w.datatype, 'FP16');
  assert.deepEqual(out.data, doubles(answers.FP64.OUTPUT).map((x) => bf16Value(bf16Bits(x))));
  assert.deepEqual(w.data, doubles(answers.FP64.WEIGHTS).map((x) => fp16Value(fp16Bits(x))));
});

/** A 400 from a V2 model: the problem's type and first pointer; returns the body. */
async function refused(model, body, type, pointer, headers = { 'Content-Type': 'application/json' }) {
  const r = await infer(model, typeof body === 'object' && !Buffer.isBuffer(body)
    ? Buffer.from(JSON.stringify(body)) : body, headers);
  assert.equal(r.status, 400, r.body);
  const j = r.json();
  assert.equal(j.type, `/problems/${type}`, r.body);
  assert.equal(j.errors?.[0]?.pointer, pointer, r.body);
  assert.equal(j.error, j.detail);
  return j;
}

const seedJson = (datatype, q = [1, 0, 1, 0, 0, 1, 0, 1]) => [
  { name: 'Q', shape: [2, 4], datatype, data: q },
  { name: 'K', shape: [2, 4], datatype, data: [1, 0, 1, 0, 1, 1, 1, 1] },
  { name: 'V', shape: [2, 2], datatype, data: [10, 0, 0, 10] },
];

test('FP16 and BF16 JSON data: exact values are read, others refused at their cell with the nearest value', async () => {
  // The seed's numbers are exact in both: the answer is the FP64 seed's.
  for (const datatype of ['FP16', 'BF16']) {
    const r = await infer('attention', Buffer.from(JSON.stringify({ inputs: seedJson(datatype) })),
      { 'Content-Type': 'application/json' });
    assert.equal(r.status, 200, r.body);
    const out = r.json().outputs.find((o) => o.name === 'OUTPUT');
    assert.equal(out.datatype, 'FP64');
    assert.deepEqual(out.data, [5, 5, 2.6894142136999513, 7.310585786300049]);
  }
  // Subnormals and -0 are values of the formats.
  const tiny = await infer('attention', Buffer.from(JSON.stringify({ inputs: seedJson('FP16',
    [2 ** -24, -0, 1, 0, 0, 1, 0, 65504]) })), { 'Content-Type': 'application/json' });
  assert.equal(tiny.status, 200, tiny.body);
  const j = await refused('attention', { inputs: seedJson('FP16', [1, 0, 1, 0.1, 0, 1, 0, 1]) },
    'invalid-value', '/inputs/0/data/3');
  assert.match(j.error, /^inputs\[0\] \(Q, FP16\) has 0\.1 at \/3, which FP16 does not hold exactly$/);
  assert.match(j.errors[0].hint, /nearest FP16 value is 0\.0999755859375/);
  const b = await refused('attention', { inputs: seedJson('BF16', [1, 0, 1, 0, 0, 1, 0, 1.001]) },
    'invalid-value', '/inputs/0/data/7');
  assert.match(b.errors[0].hint, /nearest BF16 value is 1\b/);
  const big = await refused('attention', { inputs: seedJson('FP16', [70000, 0, 1, 0, 0, 1, 0, 1]) },
    'invalid-value', '/inputs/0/data/0');
  assert.match(big.errors[0].hint, /FP16 holds at most 65504/);
  await refused('attention', { inputs: seedJson('BF16', [[1, 0, 1, 0], [0, 1, 'x', 1]]) },
    'not-a-number', '/inputs/0/data/1/2');
});

test('bad FP16 / BF16 binary pieces, unknown output datatypes and overflow are 400s naming the field', async () => {
  // A byte count that does not fit the shape: 8 elements are 16 bytes, not 32.
  const q = { name: 'Q', shape: [2, 4], datatype: 'FP16', bytes: u16Bytes([0x3c00, 0, 0x3c00, 0, 0, 0x3c00, 0, 0x3c00]) };
  const k = { name: 'K', shape: [2, 4], datatype: 'BF16', bytes: u16Bytes([0x3f80, 0, 0x3f80, 0, 0x3f80, 0x3f80, 0x3f80, 0x3f80]) };
  const v = { name: 'V', shape: [2, 2], datatype: 'FP64', bytes: f64Bytes([10, 0, 0, 10]) };
  const ok = binaryBody([q, k, v], [{ name: 'OUTPUT' }]);
  const good = binaryAnswer(await infer('attention', ok.body, ok.headers));
  // OUTPUT alone is streamed (no weights built): the seed's numbers to 1e-15.
  doubles(good.OUTPUT).forEach((x, i) => assert.ok(
    Math.abs(x - [5, 5, 2.6894142136999513, 7.310585786300049][i]) <= 1e-15 * 8, `OUTPUT[${i}] ${x}`));
  const header = JSON.parse(ok.body.subarray(0, Number(ok.headers['Inference-Header-Content-Length'])));
  header.inputs[0].parameters.binary_data_size = 32;
  header.inputs[1].parameters.binary_data_size = 0;
  const head = Buffer.from(JSON.stringify(header));
  const j = await refused('attention', Buffer.concat([head, q.bytes, k.bytes, v.bytes]), 'shape-mismatch',
    '/inputs/0/parameters/binary_data_size', { 'Inference-Header-Content-Length': String(head.length) });
  assert.match(j.error, /inputs\[0\] is 8 FP16 elements \(16 bytes\) but binary_data_size says 32 bytes/);
  // An odd byte count: never half an element.
  header.inputs[0].parameters.binary_data_size = 15;
  header.inputs[1].parameters.binary_data_size = 16;
  const odd = Buffer.from(JSON.stringify(header));
  await refused('attention', Buffer.concat([odd, q.bytes.subarray(0, 15), k.bytes, v.bytes]), 'shape-mismatch',
    '/inputs/0/parameters/binary_data_size', { 'Inference-Header-Content-Length': String(odd.length) });
  // Infinity and NaN bit patterns are refused as FP32's are.
  for (const bits of [0x7c00, 0x7e00, 0xfc00]) {
    const bad = binaryBody([{ ...q, bytes: u16Bytes([bits, 0, 0, 0, 0, 0, 0, 0]) }, k, v], [{ name: 'OUTPUT' }]);
    await refused('attention', bad.body, 'not-a-number', '/inputs/0/parameters/binary_data_size', bad.headers);
  }
  // An output datatype that is none of the four.
  const fp8 = await refused('attention', { inputs: seedJson('FP64'),
    outputs: [{ name: 'WEIGHTS' }, { name: 'OUTPUT', parameters: { datatype: 'FP8' } }] },
  'invalid-value', '/outputs/1/parameters/datatype');
  assert.match(fp8.error, /FP64, FP32, FP16 or BF16/);
  await refused('attention', { inputs: seedJson('FP64'), outputs: [{ name: 'OUTPUT', parameters: { datatype: 'INT32' } }] },
    'invalid-value', '/outputs/0/parameters/datatype');
  // Scores of 300 · 300 = 90000: past FP16's 65504, within BF16's and FP32's.
  const wide = [{ name: 'Q', shape: [1, 2], datatype: 'FP64', data: [300, 0] },
    { name: 'K', shape: [2, 2], datatype: 'FP64', data: [300, 0, 1, 0] },
    { name: 'V', shape: [2, 1], datatype: 'FP64', data: [1, 2] }];
  const over = await refused('attention', { inputs: wide,
    outputs: [{ name: 'WEIGHTS', parameters: { datatype: 'FP16' } }, { name: 'SCORES', parameters: { datatype: 'FP16' } }] },
  'numeric-overflow', '/outputs/1/parameters/datatype');
  assert.match(over.error, /^output SCORES cell \[0, 0\] is 90000, past FP16's largest finite value \(65504\)/);
  const fine = await infer('attention', Buffer.from(JSON.stringify({ inputs: wide,
    outputs: [{ name: 'SCORES', parameters: { datatype: 'BF16' } }] })), { 'Content-Type': 'application/json' });
  assert.equal(fine.status, 200, fine.body);
  assert.deepEqual(fine.json().outputs[0].data, [90112, 300]); // 90000 to BF16's 8 bits: 90112
  // multihead too: X of 300s makes Q past FP16 with an identity W_Q.
  const eye = (n) => Array.from({ length: n * n }, (_, i) => (i % (n + 1) === 0 ? 1 : 0));
  const mh = [{ name: 'X', shape: [1, 2], datatype: 'FP64', data: [70000, 1] },
    ...['W_Q', 'W_K', 'W_V', 'W_O'].map((name) => ({ name, shape: [2, 2], datatype: 'FP64', data: eye(2) }))];
  await refused('multihead', { inputs: mh, parameters: { heads: 1 },
    outputs: [{ name: 'Q', parameters: { datatype: 'FP16' } }] }, 'numeric-overflow', '/outputs/0/parameters/datatype');
});
