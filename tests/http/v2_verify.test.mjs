// tests/http/v2_verify.test.mjs — the V2 model `verify` (DESIGN.md, "Verify: a kernel's answer
// against the oracle"). Every expectation comes from /v1: a problem's REPORT is held byte for
// byte to /v1/verify's answer for that problem sent alone as JSON (the candidate's FP16 or BF16
// values widened exactly to the numbers JSON writes), GOLD bit for bit to /v1/attention's float64
// output; the candidates are /v1/attention's naive answers in the format (which pass) and the
// same without the scale (which fails), their bytes built here from reference.mjs's roundings.
// Batches, NaN, JSON data, float64 gradients, the metadata and every bad input are covered;
// and low-format gradients: a float16 REPORT with GRAD_Q, GRAD_K, GRAD_V is /v1/verify's answer.
// docs/verify.md's two Python scripts run here against the server: the float16 kernel passes,
// the one without the scale fails with its worst cells; the code the page shows is theirs.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { postBytes, postJson, request, rng, startServer } from './lib.mjs';
import { bf16Bits, fp16Bits, matrix } from './reference.mjs';
import { binaryAnswer, binaryBody, f64Bytes, u16Bytes } from './v2_binary.mjs';

let srv;
before(async () => {
  srv = await startServer(['--log', 'off']);
});
after(() => srv.stop());

const infer = (body, headers = {}) => postBytes(srv.port, '/v2/models/verify/infer', body, headers);
const inferJson = (header) => infer(JSON.stringify(header), { 'Content-Type': 'application/json' });

const v1 = async (path, body, status = 200) => {
  const res = await postJson(srv.port, path, body);
  assert.equal(res.status, status, res.body);
  return res;
};

/** A problem whose inputs every format holds exactly (multiples of 1/16 in [-2, 2]). */
function problem(seed, nQ = 5, nK = 7, d = 4) {
  const r = rng(seed);
  const exact = (m) => m.map((row) => row.map((x) => Math.round(x * 16) / 16));
  return { q: exact(matrix(r, nQ, d)), k: exact(matrix(r, nK, d)), v: exact(matrix(r, nK, d)) };
}

/** /v1/attention's output and lse of p in `format` (float64: gold). */
async function answer(p, format, extra = {}) {
  const precision = format === 'float64' ? {} : { precision: { format, accumulate: 'float32' } };
  return (await v1('/v1/attention', { ...p, ...precision, ...extra, include: ['output', 'lse'] })).json();
}

const FORMAT_OF = { FP16: 'float16', BF16: 'bfloat16' };
const BITS_OF = { FP16: fp16Bits, BF16: bf16Bits };

/** Values of a 16-bit format as its little-endian bytes (each must be exactly a value). */
function halfBytes(datatype, values) {
  return u16Bytes(values.map((x) => {
    const b = BITS_OF[datatype](x);
    assert.notEqual(b, null, `${x} overflows ${datatype}`);
    return b;
  }));
}

/** A batch of problems as V2 binary inputs (Q, K, V in `datatype`). */
function problemInputs(datatype, ps) {
  const B = ps.length, nQ = ps[0].q.length, nK = ps[0].k.length, d = ps[0].q[0].length;
  const tensor = (name, rows, key) => ({
    name, shape: [B, rows, d], datatype, bytes: halfBytes(datatype, ps.flatMap((p) => p[key].flat())) });
  return [tensor('Q', nQ, 'q'), tensor('K', nK, 'k'), tensor('V', nK, 'v')];
}

/** REPORT's elements from its binary bytes: each a 4-byte little-endian length, then its bytes. */
function elements(piece) {
  const out = [];
  for (let at = 0; at < piece.bytes.length;) {
    const len = piece.bytes.readUInt32LE(at);
    out.push(piece.bytes.subarray(at + 4, at + 4 + len).toString('utf8'));
    at += 4 + len;
  }
  return out;
}

const doubles = (piece) => Array.from(new Float64Array(piece.bytes.buffer.slice(
  piece.bytes.byteOffset, piece.bytes.byteOffset + piece.bytes.length)));

for (const datatype of ['FP16', 'BF16']) {
  test(`${datatype} binary: a batch of 3, the middle one a missing scale; each REPORT is /v1/verify's answer`, async () => {
    const format = FORMAT_OF[datatype];
    const ps = [problem(1), problem(2), problem(3)];
    const good = await Promise.all(ps.map((p) => answer(p, format)));
    const noScale = await answer(ps[1], format, { scale: 1 });
    const candidates = [good[0].output, noScale.output, good[2].output];
    const inputs = [...problemInputs(datatype, ps),
      { name: 'OUTPUT', shape: [3, 5, 4], datatype, bytes: halfBytes(datatype, candidates.flat(2)) }];
    const { body, headers } = binaryBody(inputs, [{ name: 'VERDICT' }, { name: 'REPORT' },
      { name: 'GOLD' }]);
    const a = binaryAnswer(await infer(body, headers));
    assert.equal(a.VERDICT.datatype, 'BOOL');
    assert.deepEqual(a.VERDICT.shape, [3]);
    assert.deepEqual([...a.VERDICT.bytes], [1, 0, 1]);
    assert.equal(a.REPORT.datatype, 'BYTES');
    assert.deepEqual(a.REPORT.shape, [3]);
    const reports = elements(a.REPORT);
    assert.equal(reports.length, 3);
    for (let b = 0; b < 3; b++) {
      const alone = await v1('/v1/verify', { ...ps[b], format, candidate: { output: candidates[b] } });
      assert.equal(`${reports[b]}\n`, alone.body, `problem ${b}'s REPORT is /v1/verify's answer`);
    }
    const bad = JSON.parse(reports[1]);
    assert.equal(bad.verdict, 'fail');
    assert.ok(bad.checks[0].worst.length > 0);
    // GOLD: /v1/attention's float64 output, bit for bit, in OUTPUT's shape.
    assert.equal(a.GOLD.datatype, 'FP64');
    assert.deepEqual(a.GOLD.shape, [3, 5, 4]);
    const gold = await Promise.all(ps.map((p) => answer(p, 'float64')));
    assert.deepEqual(doubles(a.GOLD), gold.flatMap((g) => g.output.flat()));
  });
}

test('no batch: VERDICT and REPORT of shape [1] by default, LSE judged too, GOLD_LSE on request', async () => {
  const p = problem(4, 3, 6, 4);
  const n = await answer(p, 'bfloat16');
  const inputs = [
    { name: 'Q', shape: [3, 4], datatype: 'BF16', bytes: halfBytes('BF16', p.q.flat()) },
    { name: 'K', shape: [6, 4], datatype: 'BF16', bytes: halfBytes('BF16', p.k.flat()) },
    { name: 'V', shape: [6, 4], datatype: 'BF16', bytes: halfBytes('BF16', p.v.flat()) },
    { name: 'OUTPUT', shape: [3, 4], datatype: 'BF16', bytes: halfBytes('BF16', n.output.flat()) },
    // the naive lse is a float32 sum: FP32 holds it exactly
    { name: 'LSE', shape: [3], datatype: 'FP32', bytes: Buffer.from(new Float32Array(n.lse).buffer) },
  ];
  const plain = binaryBody(inputs, []); // none asked: VERDICT and REPORT, as JSON data
  const res = await infer(plain.body, plain.headers);
  assert.equal(res.status, 200, res.body);
  const out = res.json().outputs;
  assert.deepEqual(out.map((o) => [o.name, o.datatype, o.shape]), [['VERDICT', 'BOOL', [1]], ['REPORT', 'BYTES', [1]]]);
  assert.deepEqual(out[0].data, [true]);
  const alone = await v1('/v1/verify', { ...p, format: 'bfloat16', candidate: { output: n.output, lse: n.lse } });
  assert.equal(`${out[1].data[0]}\n`, alone.body);
  assert.deepEqual(JSON.parse(out[1].data[0]).checks.map((c) => [c.name, c.pass]), [['output', true], ['lse', true]]);
  // GOLD_LSE: /v1/attention's float64 lse
  const withGold = binaryBody(inputs, [{ name: 'GOLD_LSE' }, { name: 'VERDICT' }]);
  const g = binaryAnswer(await infer(withGold.body, withGold.headers));
  assert.deepEqual(g.GOLD_LSE.shape, [3]);
  assert.deepEqual(doubles(g.GOLD_LSE), (await answer(p, 'float64')).lse);
  assert.deepEqual([...g.VERDICT.bytes], [1]);
});

test('NaN in a candidate fails with its cells counted, in binary and as JSON words', async () => {
  const p = problem(5, 4, 4, 4);
  const n = await answer(p, 'float16');
  const cells = n.output.flat();
  const bits = cells.map(fp16Bits);
  bits[6] = 0x7e00; // a quiet NaN at [1, 2]
  const inputs = [...problemInputs('FP16', [p]).map((t) => ({ ...t, shape: t.shape.slice(1) })),
    { name: 'OUTPUT', shape: [4, 4], datatype: 'FP16', bytes: u16Bytes(bits) }];
  const { body, headers } = binaryBody(inputs, [{ name: 'VERDICT' }, { name: 'REPORT' }]);
  const a = binaryAnswer(await infer(body, headers));
  assert.deepEqual([...a.VERDICT.bytes], [0]);
  const report = JSON.parse(elements(a.REPORT)[0]);
  assert.equal(report.verdict, 'fail');
  assert.equal(report.checks[0].nan_cells, 1);
  assert.deepEqual(report.checks[0].worst[0].cell, [1, 2]);
  assert.equal(report.checks[0].worst[0].candidate, 'NaN');
  // The same request as JSON data, the NaN as the word: the same report, /v1's too.
  const words = cells.map((x, i) => (i === 6 ? 'NaN' : x));
  const json = await inferJson({
    parameters: { format: 'float16' },
    inputs: [
      { name: 'Q', shape: [4, 4], datatype: 'FP64', data: p.q.flat() },
      { name: 'K', shape: [4, 4], datatype: 'FP64', data: p.k.flat() },
      { name: 'V', shape: [4, 4], datatype: 'FP64', data: p.v },
      { name: 'OUTPUT', shape: [4, 4], datatype: 'FP16', data: words },
    ],
  });
  assert.equal(json.status, 200, json.body);
  const outs = json.json().outputs;
  assert.deepEqual(outs[0].data, [false]);
  assert.equal(outs[1].data[0], elements(a.REPORT)[0]);
  const alone = await v1('/v1/verify', { ...p, format: 'float16',
    candidate: { output: [0, 1, 2, 3].map((i) => words.slice(4 * i, 4 * i + 4)) } });
  assert.equal(`${outs[1].data[0]}\n`, alone.body);
});

test('rules: flex with fudge and allclose with rtol and atol, as /v1/verify judges them', async () => {
  const p = problem(6, 3, 5, 4);
  const g = await answer(p, 'float64');
  const off = g.output.map((row) => row.map((x) => x + 1e-3));
  const cases = [
    [{ rule: 'flex', fudge: 2 }, { rule: 'flex', fudge: 2 }],
    [{ rule: 'allclose', rtol: 0, atol: 2e-3 }, { rule: { rtol: 0, atol: 2e-3 } }],
    [{ rule: 'allclose' }, { rule: {} }],
  ];
  for (const [params, fields] of cases) {
    const res = await inferJson({
      parameters: { ...params, format: 'float32' },
      inputs: [
        { name: 'Q', shape: [3, 4], datatype: 'FP64', data: p.q.flat() },
        { name: 'K', shape: [5, 4], datatype: 'FP64', data: p.k.flat() },
        { name: 'V', shape: [5, 4], datatype: 'FP64', data: p.v.flat() },
        { name: 'OUTPUT', shape: [3, 4], datatype: 'FP64', data: off.flat() },
      ],
      outputs: [{ name: 'REPORT' }],
    });
    assert.equal(res.status, 200, res.body);
    const alone = await v1('/v1/verify', { ...p, format: 'float32', ...fields, candidate: { output: off } });
    assert.equal(`${res.json().outputs[0].data[0]}\n`, alone.body, JSON.stringify(params));
  }
});

/** The problem with dO for a float64 backward, and gold's gradients from /v1/attention. */
async function backwardCase(seed) {
  const p = problem(seed, 4, 5, 3);
  const dO = matrix(rng(seed + 100), 4, 3).map((row) => row.map((x) => Math.round(x * 8) / 8));
  const g = (await v1('/v1/attention', { ...p, backward: { grad_output: dO },
    include: ['output', 'grad_q', 'grad_k', 'grad_v'] })).json();
  return { p, dO, g: { output: g.output, grad_q: g.grad_q, grad_k: g.grad_k, grad_v: g.grad_v } };
}

test('float64 gradients: GRAD_OUTPUT with GRAD_Q, GRAD_K, GRAD_V, gold passes and a scaled dV fails', async () => {
  const { p, dO, g } = await backwardCase(7);
  const badV = g.grad_v.map((row) => row.map((x) => x * 1.01));
  const t = (name, m) => ({ name, shape: [m.length, m[0].length], datatype: 'FP64', bytes: f64Bytes(m.flat()) });
  for (const [what, gradV, pass] of [['gold', g.grad_v, true], ['dV 1% off', badV, false]]) {
    const inputs = [t('Q', p.q), t('K', p.k), t('V', p.v), t('GRAD_OUTPUT', dO), t('OUTPUT', g.output),
      t('GRAD_Q', g.grad_q), t('GRAD_K', g.grad_k), t('GRAD_V', gradV)];
    const { body, headers } = binaryBody(inputs, [{ name: 'VERDICT' }, { name: 'REPORT' },
      { name: 'GOLD_GRAD_V' }]);
    const a = binaryAnswer(await infer(body, headers));
    assert.deepEqual([...a.VERDICT.bytes], [pass ? 1 : 0], what);
    const alone = await v1('/v1/verify', { ...p, format: 'float64', backward: { grad_output: dO },
      candidate: { output: g.output, grad_q: g.grad_q, grad_k: g.grad_k, grad_v: gradV } });
    assert.equal(`${elements(a.REPORT)[0]}\n`, alone.body, what);
    assert.deepEqual(JSON.parse(alone.body).checks.map((c) => c.name), ['output', 'grad_q', 'grad_k', 'grad_v']);
    assert.deepEqual(doubles(a.GOLD_GRAD_V), g.grad_v.flat());
  }
});

test('float16 gradients: the naive backward in the format, as /v1/verify judges them', async () => {
  const { p, dO, g } = await backwardCase(8);
  const body = { ...p, format: 'float16', backward: { grad_output: dO },
    candidate: { output: g.output, grad_q: g.grad_q, grad_k: g.grad_k, grad_v: g.grad_v } };
  const alone = await postJson(srv.port, '/v1/verify', body);
  const header = {
    inputs: [
      { name: 'Q', shape: [4, 3], datatype: 'FP64', data: p.q.flat() },
      { name: 'K', shape: [5, 3], datatype: 'FP64', data: p.k.flat() },
      { name: 'V', shape: [5, 3], datatype: 'FP64', data: p.v.flat() },
      { name: 'GRAD_OUTPUT', shape: [4, 3], datatype: 'FP64', data: dO.flat() },
      { name: 'OUTPUT', shape: [4, 3], datatype: 'FP64', data: g.output.flat() },
      { name: 'GRAD_Q', shape: [4, 3], datatype: 'FP64', data: g.grad_q.flat() },
      { name: 'GRAD_K', shape: [5, 3], datatype: 'FP64', data: g.grad_k.flat() },
      { name: 'GRAD_V', shape: [5, 3], datatype: 'FP64', data: g.grad_v.flat() },
    ],
    parameters: { format: 'float16' },
    outputs: [{ name: 'REPORT' }],
  };
  const res = await inferJson(header);
  assert.equal(alone.status, 200, alone.body);
  assert.equal(res.status, 200, res.body);
  assert.equal(`${res.json().outputs[0].data[0]}\n`, alone.body);
});

test('metadata and readiness list the model', async () => {
  const meta = await request(srv.port, { path: '/v2/models/verify' });
  assert.equal(meta.status, 200);
  const m = JSON.parse(meta.body);
  assert.equal(m.name, 'verify');
  assert.deepEqual(m.inputs.map((i) => i.name), ['Q', 'K', 'V', 'MASK', 'BIAS', 'LENGTHS', 'LENGTHS_Q',
    'LENGTHS_K', 'GRAD_OUTPUT', 'OUTPUT', 'LSE', 'GRAD_Q', 'GRAD_K', 'GRAD_V']);
  assert.deepEqual(m.outputs.map((o) => [o.name, o.datatype]), [['VERDICT', 'BOOL'], ['REPORT', 'BYTES'],
    ['GOLD', 'FP64'], ['GOLD_LSE', 'FP64'], ['GOLD_GRAD_Q', 'FP64'], ['GOLD_GRAD_K', 'FP64'],
    ['GOLD_GRAD_V', 'FP64']]);
  const ready = await request(srv.port, { path: '/v2/models/verify/ready' });
  assert.equal(ready.status, 200);
  const none = await request(srv.port, { path: '/v2/models/nope' });
  assert.equal(none.status, 404);
  assert.match(JSON.parse(none.body).error, /attention, multihead and verify/);
});

test('bad inputs are 400s naming the input or parameter', async () => {
  const Q = { name: 'Q', shape: [2, 5, 3], datatype: 'FP64', data: new Array(30).fill(0.5) };
  const K = { name: 'K', shape: [2, 4, 3], datatype: 'FP64', data: new Array(24).fill(0.25) };
  const V = { name: 'V', shape: [2, 4, 3], datatype: 'FP64', data: new Array(24).fill(1) };
  const out = (shape, datatype = 'FP64') => ({ name: 'OUTPUT', shape, datatype,
    data: new Array(shape.reduce((a, b) => a * b, 1)).fill(datatype === 'INT32' ? 1 : 0.5) });
  const dO = { name: 'GRAD_OUTPUT', shape: [2, 5, 3], datatype: 'FP64', data: new Array(30).fill(1) };
  const gq = { name: 'GRAD_Q', shape: [2, 5, 3], datatype: 'FP64', data: new Array(30).fill(0) };
  const cases = [
    ['an OUTPUT of another shape', { inputs: [Q, K, V, out([2, 5, 4])] }, '/inputs/3/shape',
      /OUTPUT has shape \[2, 5, 4\] but Q, K and V make it \[2, 5, 3\]/],
    ['no OUTPUT', { inputs: [Q, K, V] }, '/inputs', /needs an input called OUTPUT/],
    ['a gradient without GRAD_OUTPUT', { inputs: [Q, K, V, out([2, 5, 3]), gq] }, '/inputs/4/name',
      /GRAD_Q is a gradient, but the request has no GRAD_OUTPUT/],
    ['an unknown rule', { inputs: [Q, K, V, out([2, 5, 3])], parameters: { rule: 'strict' } },
      '/parameters/rule', /flash, flex or allclose/],
    ['fudge without flex', { inputs: [Q, K, V, out([2, 5, 3])], parameters: { fudge: 2 } },
      '/parameters/fudge', /belongs to the flex rule/],
    ['atol without allclose', { inputs: [Q, K, V, out([2, 5, 3])], parameters: { rule: 'flex', atol: 1 } },
      '/parameters/atol', /belongs to the allclose rule/],
    ['a negative rtol', { inputs: [Q, K, V, out([2, 5, 3])], parameters: { rule: 'allclose', rtol: -1 } },
      '/parameters/rtol', /at least 0/],
    ['an unknown format', { inputs: [Q, K, V, out([2, 5, 3])], parameters: { format: 'FP16' } },
      '/parameters/format', /float16, bfloat16, float32 or float64/],
    ['precision is verify\'s own', { inputs: [Q, K, V, out([2, 5, 3])], parameters: { precision: 'float16' } },
      '/parameters/precision', /not a parameter of this model/],
    ['an INT32 OUTPUT', { inputs: [Q, K, V, out([2, 5, 3], 'INT32')] }, '/inputs/3/datatype',
      /read as FP16, BF16, FP32 or FP64/],
    ['a BYTES input', { inputs: [Q, K, V, { ...out([2, 5, 3]), datatype: 'BYTES' }] }, '/inputs/3/datatype',
      /not one attnd reads/],
    ['GOLD_LSE without LSE', { inputs: [Q, K, V, out([2, 5, 3])], outputs: [{ name: 'GOLD_LSE' }] },
      '/outputs/0/name', /GOLD_LSE is gold of the candidate's LSE/],
    ['a datatype for VERDICT', { inputs: [Q, K, V, out([2, 5, 3])],
      outputs: [{ name: 'VERDICT', parameters: { datatype: 'FP32' } }] }, '/outputs/0/parameters/datatype',
    /VERDICT is sent as BOOL only/],
    ['a candidate word that is none', { inputs: [Q, K, V, { ...out([2, 5, 3]), data: ['x', ...new Array(29).fill(0)] }] },
      '/inputs/3/data/0', /neither a number nor a word/],
  ];
  for (const [what, header, pointer, detail] of cases) {
    const res = await inferJson(header);
    assert.equal(res.status, 400, `${what}: ${res.body}`);
    const e = res.json();
    assert.equal(typeof e.error, 'string', what);
    assert.equal(e.errors?.[0]?.pointer, pointer, `${what}: ${res.body}`);
    assert.match(e.detail, detail, what);
  }
});

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const script = (name) => spawnSync('/usr/bin/python3', [path.join(root, 'docs/examples', name),
  `127.0.0.1:${srv.port}`], { encoding: 'utf8', timeout: 60000 });

test('docs/examples: the float16 kernel passes, the one without the scale fails with its worst cells', () => {
  const good = script('verify_fp16.py');
  assert.equal(good.status, 0, good.stderr);
  const lines = good.stdout.trim().split('\n');
  assert.equal(lines.length, 2);
  for (const [b, line] of lines.entries())
    assert.match(line, new RegExp(`^problem ${b}: pass  max \\|candidate - gold\\| \\S+ <= bound \\S+$`));
  const bad = script('verify_broken.py');
  assert.equal(bad.status, 1, bad.stderr);
  const text = bad.stdout.trim().split('\n');
  assert.equal(text.filter((l) => /^problem \d: fail  max \|candidate - gold\| \S+ > bound \S+$/.test(l)).length, 2);
  assert.equal(text.filter((l) => /^ {2}worst \[\d+, \d+\]: candidate \S+ {2}gold \S+ {2}naive \S+$/.test(l)).length, 6);
  // The page shows the scripts' own code.
  const files = ['verify_fp16.py', 'verify_broken.py'].map((f) => readFileSync(path.join(root, 'docs/examples', f), 'utf8'));
  const page = readFileSync(path.join(root, 'docs/verify.md'), 'utf8');
  const blocks = [...page.matchAll(/^```python\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.ok(blocks.length >= 3);
  for (const block of blocks)
    assert.ok(files.some((f) => f.includes(block)), `docs/verify.md shows code the scripts do not hold:\n${block}`);
});
