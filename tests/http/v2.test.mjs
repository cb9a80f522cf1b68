// tests/http/v2.test.mjs — the Open Inference Protocol (KServe / Triton V2) on the wire,
// spoken as the stock clients speak it.
//
// tritonclient.http (src/python/library/tritonclient/http/_utils.py,
// _get_inference_request): the JSON header is rapidjson's compact dump, keys in the
// order id, inputs, outputs, parameters; each input {"name","shape","datatype",
// "parameters":{"binary_data_size":N}}; with no outputs asked it adds
// "parameters":{"binary_data_output":true}; the body is the header's bytes, then every
// input's raw numpy bytes in input order; the request carries
// Inference-Header-Content-Length (the header's length) and no Content-Type. It reads
// the answer's header length from Inference-Header-Content-Length and each output's
// bytes, in order, by parameters.binary_data_size; an error is JSON's "error".
// KServe's InferenceRESTClient (protocol "v2") posts JSON with Content-Type
// application/json, reads {"live"}/{"ready"} and, on an error, "error".
//
// Every answer is checked against api/openapi.yaml (contract.mjs), binary ones too.
// Expected numbers come from the seeds (seed 000: scores [[2, 2], [0, 2]]) and from a
// naive attention loop written here; expected bytes are built with typed arrays.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { after, before, test } from 'node:test';
import zlib from 'node:zlib';

import {
  SEED, SEED_OUTPUT, SEED_WEIGHTS, postJson, rawConnect, request, requestBytes, sleep, startServer,
} from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

const call = requestBytes;

const flat = (m) => m.flat(Infinity);
const INFER = '/v2/models/attention/infer';

// ---- the bytes of each datatype, built independently of the server ----
const ARRAYS = {
  FP64: Float64Array, FP32: Float32Array, INT32: Int32Array, INT64: BigInt64Array,
  INT8: Int8Array, UINT8: Uint8Array, BOOL: Uint8Array,
};
/** Little-endian bytes of values as datatype (this machine is little-endian; checked). */
function bytesOf(datatype, values) {
  const A = ARRAYS[datatype];
  const v = datatype === 'INT64' ? values.map((x) => BigInt(x)) :
    datatype === 'BOOL' ? values.map((x) => (x ? 1 : 0)) : values;
  return Buffer.from(new A(v).buffer);
}
assert.equal(new Uint8Array(new Uint16Array([1]).buffer)[0], 1, 'the test builds little-endian bytes');

/** The body tritonclient.http sends: compact header, then the inputs' bytes in order. */
function tritonBody(inputs, { outputs, id, parameters = {} } = {}) {
  const req = {};
  if (id !== undefined) req.id = id;
  req.inputs = inputs.map(({ name, shape, datatype, values }) => ({
    name, shape, datatype, parameters: { binary_data_size: bytesOf(datatype, values).length },
  }));
  if (outputs) req.outputs = outputs.map((name) => ({ name, parameters: { binary_data: true } }));
  else parameters = { ...parameters, binary_data_output: true };
  if (Object.keys(parameters).length) req.parameters = parameters;
  const header = Buffer.from(JSON.stringify(req));
  const body = Buffer.concat([header, ...inputs.map((i) => bytesOf(i.datatype, i.values))]);
  return { body, headers: { 'Inference-Header-Content-Length': String(header.length) } };
}

/** What tritonclient's InferResult does: the JSON header, and each binary output's bytes. */
function readBinaryAnswer(r) {
  assert.equal(r.status, 200, r.body.slice(0, 400));
  assert.equal(r.headers['content-type'], 'application/octet-stream');
  const n = Number(r.headers['inference-header-content-length']);
  const header = JSON.parse(r.raw.subarray(0, n).toString('utf8'));
  const pieces = {};
  let at = n;
  for (const o of header.outputs) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) continue;
    pieces[o.name] = r.raw.subarray(at, at + size);
    at += size;
  }
  assert.equal(at, r.raw.length, 'the binary pieces fill the body exactly');
  return { header, pieces };
}

/** softmax(Q Kᵀ · scale + bias, masked) V in plain loops (float64). */
function naiveAttention(q, k, v, { scale = 1 / Math.sqrt(q[0].length), mask, bias } = {}) {
  const scores = q.map((qi) => k.map((kj) => qi.reduce((s, x, c) => s + x * kj[c], 0)));
  const scaled = scores.map((r) => r.map((x) => x * scale));
  const masked = scaled.map((r, i) => r.map((x, j) =>
    (mask && !mask[i][j] ? -Infinity : x + (bias ? bias[i][j] : 0))));
  const weights = masked.map((r) => {
    const m = Math.max(...r);
    if (m === -Infinity) return r.map(() => 0);
    const e = r.map((x) => Math.exp(x - m));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  });
  const output = weights.map((w) => v[0].map((_, c) => w.reduce((s, wj, j) => s + wj * v[j][c], 0)));
  return { scores, scaled, masked, weights, output };
}

function assertClose(got, want, tol, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const ok = (got[i] === want[i]) || Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i]));
    assert.ok(ok, `${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}

const seedInputs = (datatype = 'FP64', extra = []) => [
  { name: 'Q', shape: [2, 4], datatype, values: flat(SEED.q) },
  { name: 'K', shape: [2, 4], datatype, values: flat(SEED.k) },
  { name: 'V', shape: [2, 2], datatype, values: flat(SEED.v) },
  ...extra,
];

// ---------------------------------------------------------------- health, metadata

test('KServe reads live and ready; the server metadata names the binary extension', async () => {
  const live = await call(s.port, { method: 'GET', path: '/v2/health/live' });
  assert.deepEqual(live.json(), { live: true });
  assert.match(live.headers['content-type'], /^application\/json/);
  const ready = await call(s.port, { method: 'GET', path: '/v2/health/ready' });
  assert.deepEqual(ready.json(), { ready: true });
  const meta = await call(s.port, { method: 'GET', path: '/v2' });
  assert.equal(meta.json().name, 'attnd');
  assert.ok(meta.json().extensions.includes('binary_tensor_data'));
  const head = await call(s.port, { method: 'HEAD', path: '/v2/health/ready' });
  assert.equal(head.status, 200);
  assert.equal(head.raw.length, 0);
});

test('model metadata and ready, with and without /versions/1; other models and versions 404', async () => {
  for (const model of ['attention', 'multihead']) {
    for (const v of ['', '/versions/1']) {
      const m = await call(s.port, { method: 'GET', path: `/v2/models/${model}${v}` });
      assert.equal(m.status, 200);
      const j = m.json();
      assert.equal(j.name, model);
      assert.deepEqual(j.versions, ['1']);
      assert.equal(j.platform, 'attnd');
      const mask = j.inputs.find((t) => t.name === 'MASK');
      assert.deepEqual(mask, { name: 'MASK', datatype: 'BOOL', shape: [-1, -1] });
      if (model === 'attention') {
        assert.deepEqual(j.inputs.map((t) => t.name), ['Q', 'K', 'V', 'MASK', 'BIAS', 'LENGTHS', 'LENGTHS_Q', 'LENGTHS_K',
          'GRAD_OUTPUT']);
        // the backward pass's outputs follow (v2_backward.test.mjs)
        assert.deepEqual(j.outputs.map((t) => t.name).slice(0, 14), ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'OUTPUT',
          'Q_ROPE', 'K_ROPE', 'SOFTCAPPED', 'DROPOUT_KEEP', 'DROPPED', 'LSE', 'ROW_SUM', 'ROW_MAX', 'BLOCK_MAP']);
        assert.deepEqual(j.inputs[0], { name: 'Q', datatype: 'FP64', shape: [-1, -1] });
        assert.deepEqual(j.outputs.find((t) => t.name === 'LSE'), { name: 'LSE', datatype: 'FP64', shape: [-1] });
      } else {
        assert.ok(j.outputs.some((t) => t.name === 'HEAD_OUTPUTS'));
      }
      const r = await call(s.port, { method: 'GET', path: `/v2/models/${model}${v}/ready` });
      assert.deepEqual(r.json(), { name: model, ready: true });
    }
  }
  for (const path of ['/v2/models/attention/versions/2', '/v2/models/gpt/ready',
    '/v2/models/attention/versions/2/infer', '/v2/models/nope']) {
    const r = await call(s.port, { method: path.endsWith('infer') ? 'POST' : 'GET', path, body: path.endsWith('infer') ? '{}' : undefined });
    assert.equal(r.status, 404, path);
    assert.equal(r.headers['content-type'], 'application/json');
    const j = r.json();
    assert.equal(j.type, '/problems/not-found');
    assert.equal(typeof j.error, 'string');
    assert.equal(j.error, j.detail);
  }
  const wrong = await call(s.port, { method: 'GET', path: INFER });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.allow, 'POST, OPTIONS');
  assert.match(wrong.json().error, /GET is not allowed/);
});

// ------------------------------------------------------------------- JSON tensors

test('KServe JSON: seed 000 with flat and nested data gives the seed weights and output; id echoed', async () => {
  for (const nested of [false, true]) {
    const t = (name, m) => ({ name, shape: [m.length, m[0].length], datatype: 'FP64', data: nested ? m : flat(m) });
    const r = await call(s.port, {
      path: INFER, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: 'req-7', inputs: [t('Q', SEED.q), t('K', SEED.k), t('V', SEED.v)] }),
    });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers['content-type'], 'application/json');
    const j = r.json();
    assert.equal(j.model_name, 'attention');
    assert.equal(j.model_version, '1');
    assert.equal(j.id, 'req-7');
    assert.deepEqual(j.outputs, [
      { name: 'WEIGHTS', datatype: 'FP64', shape: [2, 2], data: flat(SEED_WEIGHTS) },
      { name: 'OUTPUT', datatype: 'FP64', shape: [2, 2], data: flat(SEED_OUTPUT) },
    ]);
  }
});

test('every output is selectable, in the order asked; MASKED blocked cells are null in JSON', async () => {
  const inputs = seedInputs('FP64').map(({ name, shape, datatype, values }) => ({ name, shape, datatype, data: values }));
  inputs.push({ name: 'MASK', shape: [2, 2], datatype: 'BOOL', data: [true, false, true, true] });
  const names = ['OUTPUT', 'MASKED', 'SCORES', 'WEIGHTS', 'SCALED'];
  const r = await postJson(s.port, INFER, { inputs, outputs: names.map((name) => ({ name })),
    parameters: { scale: 1 } });
  assert.equal(r.status, 200, r.body);
  const out = Object.fromEntries(r.json().outputs.map((o) => [o.name, o.data]));
  assert.deepEqual(r.json().outputs.map((o) => o.name), names);
  const want = naiveAttention(SEED.q, SEED.k, SEED.v, { scale: 1, mask: [[1, 0], [1, 1]] });
  assert.deepEqual(out.SCORES, [2, 2, 0, 2]);
  assert.deepEqual(out.SCALED, [2, 2, 0, 2]);
  assert.deepEqual(out.MASKED, [2, null, 0, 2]);
  assertClose(out.WEIGHTS, flat(want.weights), 1e-15, 'WEIGHTS');
  assertClose(out.OUTPUT, flat(want.output), 1e-14, 'OUTPUT');
  assert.deepEqual(out.WEIGHTS.slice(0, 2), [1, 0]);
});

test('a vector Q answers without the leading 1, as /v1 does', async () => {
  const r = await postJson(s.port, INFER, { inputs: [
    { name: 'Q', shape: [4], datatype: 'FP64', data: SEED.q[1] },
    { name: 'K', shape: [2, 4], datatype: 'FP64', data: SEED.k },
    { name: 'V', shape: [2, 2], datatype: 'FP64', data: SEED.v },
  ] });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json().outputs.map((o) => o.shape), [[2], [2]]);
  assert.deepEqual(r.json().outputs[0].data, SEED_WEIGHTS[1]);
});

// ------------------------------------------------------------------ binary tensors

test('tritonclient bytes: FP32 in (no Content-Type), every output binary FP32 out, byte-exact', async () => {
  const { body, headers } = tritonBody(seedInputs('FP32'), { parameters: { scale: 1 } });
  const r = await call(s.port, { path: INFER, headers, body });
  const { header, pieces } = readBinaryAnswer(r);
  assert.deepEqual(header.outputs.map((o) => [o.name, o.datatype, o.shape, o.parameters.binary_data_size]),
    [['WEIGHTS', 'FP32', [2, 2], 16], ['OUTPUT', 'FP32', [2, 2], 16]]);
  const want = naiveAttention(SEED.q, SEED.k, SEED.v, { scale: 1 });
  // FP32 answers are the float64 results rounded once to float32.
  assert.deepEqual(pieces.WEIGHTS, bytesOf('FP32', flat(want.weights)));
  const got = Array.from(new Float32Array(new Uint8Array(pieces.OUTPUT).buffer));
  assertClose(got, flat(want.output).map(Math.fround), 1e-6, 'OUTPUT');
});

test('tritonclient compression: a gzip or deflate request and a gzip answer, the header length uncoded', async () => {
  // tritonclient.http's request_compression_algorithm codes the whole body (gzip.compress
  // or zlib.compress) and keeps Inference-Header-Content-Length as the uncoded header's;
  // response_compression_algorithm sends Accept-Encoding and reads the header length
  // after inflating the answer.
  const { body, headers } = tritonBody(seedInputs('FP64'), { parameters: { scale: 1 } });
  const plain = readBinaryAnswer(await call(s.port, { path: INFER, headers, body }));
  for (const [coding, code] of [['gzip', zlib.gzipSync], ['deflate', zlib.deflateSync]]) {
    const r = await call(s.port, {
      path: INFER, body: code(body),
      headers: { ...headers, 'Content-Encoding': coding, 'Accept-Encoding': 'gzip' },
    });
    assert.equal(r.status, 200, coding);
    assert.equal(r.headers['content-encoding'], undefined, 'a 200 under 1 KiB goes as is');
    const got = readBinaryAnswer(r);
    assert.deepEqual(got.header, plain.header);
    assert.deepEqual(got.pieces, plain.pieces);
  }
  // An answer of 1 KiB or more comes gzip-coded; inflated, it is the uncoded answer.
  const n = 40;
  const big = tritonBody([
    { name: 'Q', shape: [n, 4], datatype: 'FP64', values: Array.from({ length: 4 * n }, (_, i) => (i % 7) / 7) },
    { name: 'K', shape: [n, 4], datatype: 'FP64', values: Array.from({ length: 4 * n }, (_, i) => (i % 5) / 5) },
    { name: 'V', shape: [n, 2], datatype: 'FP64', values: Array.from({ length: 2 * n }, (_, i) => i) },
  ]);
  const uncoded = await call(s.port, { path: INFER, headers: big.headers, body: big.body });
  const coded = await rawCall(s.port, INFER, { ...big.headers, 'Accept-Encoding': 'gzip' }, big.body);
  assert.equal(coded.status, 200);
  assert.equal(coded.headers['content-encoding'], 'gzip');
  assert.match(coded.headers.vary, /Accept-Encoding/);
  assert.equal(coded.headers['inference-header-content-length'],
    uncoded.headers['inference-header-content-length']);
  assert.deepEqual(zlib.gunzipSync(coded.raw), uncoded.raw);
});

/** A request whose answer is kept as the coded bytes on the wire (no contract check). */
function rawCall(port, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: false,
      headers: { ...headers, 'Content-Length': body.length } }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, raw: Buffer.concat(parts) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('every input datatype, binary in, binary FP64 or FP32 out: scores byte for byte', async () => {
  const scores = flat(naiveAttention(SEED.q, SEED.k, SEED.v).scores); // integers: exact anywhere
  for (const datatype of ['FP64', 'FP32', 'INT32', 'INT64']) {
    const out = datatype === 'FP32' ? 'FP32' : 'FP64';
    const { body, headers } = tritonBody(seedInputs(datatype), { outputs: ['SCORES', 'SCALED'] });
    const { header, pieces } = readBinaryAnswer(await call(s.port, { path: INFER, headers, body }));
    assert.equal(header.outputs[0].datatype, out, datatype);
    assert.deepEqual(pieces.SCORES, bytesOf(out, scores), datatype);
    assert.deepEqual(pieces.SCALED, bytesOf(out, scores.map((x) => x * 0.5)), datatype);
  }
});

test('every MASK datatype, binary: MASKED carries -inf bytes where blocked', async () => {
  const cells = [1, 0, 0, 1];
  const scaled = flat(naiveAttention(SEED.q, SEED.k, SEED.v).scaled);
  const want = bytesOf('FP64', scaled.map((x, i) => (cells[i] ? x : -Infinity)));
  for (const datatype of ['BOOL', 'UINT8', 'INT8', 'INT32', 'INT64']) {
    const mask = { name: 'MASK', shape: [2, 2], datatype, values: cells };
    const { body, headers } = tritonBody(seedInputs('FP64', [mask]), { outputs: ['MASKED', 'WEIGHTS'] });
    const { pieces } = readBinaryAnswer(await call(s.port, { path: INFER, headers, body }));
    assert.deepEqual(pieces.MASKED, want, datatype);
    assert.deepEqual(pieces.WEIGHTS, bytesOf('FP64', [1, 0, 0, 1]), datatype);
  }
  // mask_semantics "block" reads the same cells the other way round.
  const mask = { name: 'MASK', shape: [2, 2], datatype: 'BOOL', values: cells.map((c) => 1 - c) };
  const { body, headers } = tritonBody(seedInputs('FP64', [mask]),
    { outputs: ['MASKED'], parameters: { mask_semantics: 'block' } });
  const { pieces } = readBinaryAnswer(await call(s.port, { path: INFER, headers, body }));
  assert.deepEqual(pieces.MASKED, want);
});

test('binary and JSON answers of one request carry the same doubles, bit for bit', async () => {
  const q = [[0.1, -2.5, 3.25, 1e-3], [7, 0.3, -0.7, 2]];
  const k = [[1.5, 0.25, -1, 2], [0.5, 0.5, 0.5, 0.5], [-3, 1, 0, 0.125]];
  const v = [[1, 2], [3, -4], [0.1, 0.2]];
  const inputs = [
    { name: 'Q', shape: [2, 4], datatype: 'FP64', values: flat(q) },
    { name: 'K', shape: [3, 4], datatype: 'FP64', values: flat(k) },
    { name: 'V', shape: [3, 2], datatype: 'FP64', values: flat(v) },
  ];
  const names = ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'OUTPUT'];
  const bin = readBinaryAnswer(await call(s.port, { path: INFER, ...tritonBody(inputs, { outputs: names }) }));
  const json = await postJson(s.port, INFER, {
    inputs: inputs.map(({ values, ...t }) => ({ ...t, data: values })), outputs: names.map((name) => ({ name })),
  });
  const want = naiveAttention(q, k, v);
  for (const o of json.json().outputs) {
    assert.deepEqual(bin.pieces[o.name], bytesOf('FP64', o.data), o.name);
    assertClose(o.data, flat(want[o.name.toLowerCase()]), 1e-13, o.name);
  }
  // A mix: an output's own binary_data wins over binary_data_output.
  const mixed = await call(s.port, { path: INFER, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ inputs: inputs.map(({ values, ...t }) => ({ ...t, data: values })),
      outputs: [{ name: 'WEIGHTS', parameters: { binary_data: false } }, { name: 'OUTPUT' }],
      parameters: { binary_data_output: true } }) });
  const m = readBinaryAnswer(mixed);
  assert.ok(Array.isArray(m.header.outputs[0].data));
  assert.equal(m.header.outputs[1].parameters.binary_data_size, 2 * 2 * 8);
  assert.deepEqual(Object.keys(m.pieces), ['OUTPUT']);
});

test('application/octet-stream bodies are read too; the client-reserved parameters are ignored', async () => {
  const { body, headers } = tritonBody(seedInputs('FP64'), {
    id: 'abc', parameters: { timeout: 5, priority: 1, sequence_id: 3, triton_enable_x: true, headers: 'x' },
  });
  const r = await call(s.port, { path: INFER, headers: { ...headers, 'Content-Type': 'application/octet-stream' }, body });
  const { header, pieces } = readBinaryAnswer(r);
  assert.equal(header.id, 'abc');
  assert.deepEqual(pieces.WEIGHTS, bytesOf('FP64', flat(SEED_WEIGHTS)));
  assert.deepEqual(pieces.OUTPUT, bytesOf('FP64', flat(SEED_OUTPUT)));
});

// ---------------------------------------------------------------- memory

/**
 * attnd_memory_held_bytes once ok(held, answered): answered counts the 200s of the
 * infer route, counted as their answer is queued. Polled for a minute at most
 * (sanitizer builds compute slowly); returns the last held.
 */
async function heldWhen(port, ok) {
  const gauges = async () => {
    const text = (await request(port, { path: '/metrics' })).body;
    const answered = text.match(/^attnd_requests_total\{route="\/v2\/models\/\{model\}\/infer",status="200"\} (\d+)$/m);
    return [Number(text.match(/^attnd_memory_held_bytes (\d+)$/m)[1]), Number(answered?.[1] ?? 0)];
  };
  let [h, answered] = await gauges();
  for (let waited = 0; waited < 60000 && !ok(h, answered); waited += 50) {
    await sleep(50);
    [h, answered] = await gauges();
  }
  return h;
}

// A binary answer is sent from the trace that computed it, which it holds until sent:
// the budget is charged for the trace (8 bytes a cell) besides the FP32 piece made
// from it (4), more than the 4-byte cells the body has, and gets all of it back.
test('an unread binary answer is charged for the trace it holds, and gives it all back', async (t) => {
  const c = await startServer(['--log', 'off']);
  t.after(() => c.proc.kill('SIGKILL'));
  const n = 2048, d = 4;
  const values = Array.from({ length: n * d }, (_, i) => ((i * 7919) % 2003) / 2003 - 0.5);
  const inputs = ['Q', 'K', 'V'].map((name) => ({ name, shape: [n, d], datatype: 'FP32', values }));
  const { body, headers } = tritonBody(inputs, { outputs: ['WEIGHTS'] });
  const slow = await rawConnect(c.port, { contract: false });
  slow.sock.pause(); // read nothing: the answer waits in the server
  await slow.write(Buffer.concat([Buffer.from(`POST ${INFER} HTTP/1.1\r\nHost: attnd\r\n` +
    `Inference-Header-Content-Length: ${headers['Inference-Header-Content-Length']}\r\n` +
    `Content-Length: ${body.length}\r\n\r\n`), body]));
  const cells = n * n;
  // Once the answer is queued (the working set of its computation given back):
  const held = await heldWhen(c.port, (h, answered) => answered === 1);
  assert.ok(held >= cells * 12, `the trace and the FP32 piece are charged (${held} bytes held)`);
  slow.sock.resume();
  const answer = await slow.nextResponse(60000);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers['content-type'], 'application/octet-stream');
  assert.equal(Number(answer.headers['content-length']),
    Number(answer.headers['inference-header-content-length']) + cells * 4);
  assert.equal(await heldWhen(c.port, (h) => h === 0), 0, 'every charge is given back');
  slow.sock.destroy();
  await c.stop();
});

// -------------------------------------------------------------------- batches

test('a leading batch dimension is B problems; MASK shared or per problem', async () => {
  const q2 = [[0, 2, 0, 0], [1, 1, 1, 1]];
  const inputs = [
    { name: 'Q', shape: [2, 2, 4], datatype: 'FP64', values: [...flat(SEED.q), ...flat(q2)] },
    { name: 'K', shape: [2, 2, 4], datatype: 'FP64', values: [...flat(SEED.k), ...flat(SEED.k)] },
    { name: 'V', shape: [2, 2, 2], datatype: 'FP64', values: [...flat(SEED.v), ...flat(SEED.v)] },
  ];
  const { header, pieces } = readBinaryAnswer(await call(s.port, { path: INFER, ...tritonBody(inputs) }));
  assert.deepEqual(header.outputs.map((o) => o.shape), [[2, 2, 2], [2, 2, 2]]);
  const w = Array.from(new Float64Array(new Uint8Array(pieces.WEIGHTS).buffer));
  assert.deepEqual(w.slice(0, 4), flat(SEED_WEIGHTS));
  assertClose(w.slice(4), flat(naiveAttention(q2, SEED.k, SEED.v).weights), 1e-15, 'problem 1');

  for (const [shape, cells] of [[[2, 2], [1, 0, 1, 1]], [[2, 2, 2], [1, 0, 1, 1, 0, 1, 1, 1]]]) {
    const mask = { name: 'MASK', shape, datatype: 'BOOL', values: cells };
    const r = readBinaryAnswer(await call(s.port, { path: INFER, ...tritonBody([...inputs, mask], { outputs: ['MASKED'] }) }));
    const got = Array.from(new Float64Array(new Uint8Array(r.pieces.MASKED).buffer));
    const all = cells.length === 4 ? [...cells, ...cells] : cells;
    all.forEach((c, i) => assert.equal(got[i] === -Infinity, !c, `cell ${i} of ${shape}`));
  }
  const bad = await call(s.port, { path: INFER, ...tritonBody([inputs[0], inputs[1],
    { name: 'V', shape: [3, 2, 2], datatype: 'FP64', values: new Array(12).fill(1) }]) });
  assert.equal(bad.status, 400);
  assert.equal(bad.json().errors[0].pointer, '/inputs/2/shape/0');
});

// -------------------------------------------------------------------- multihead

// 256 heads of d_k = 1, five per-head outputs: an answer of 1,281 pieces (one per head
// and step, each where the trace holds it), more than one vector takes, so the server
// sends it through its reader; plain and gzip, against plain loops and the JSON answer.
test('multihead: 256 heads, five per-head outputs sent from the trace in 1,281 pieces', async () => {
  const h = 256, n = 3;
  const rnd = (len, seed) => Array.from({ length: len }, (_, i) => (((i + 1) * seed) % 1009) / 1009 - 0.5);
  const x = rnd(n * h, 7), w = [rnd(h * h, 11), rnd(h * h, 13), rnd(h * h, 17), rnd(h * h, 19)];
  const inputs = [{ name: 'X', shape: [n, h], datatype: 'FP64', values: x },
    ...['W_Q', 'W_K', 'W_V', 'W_O'].map((name, i) => ({ name, shape: [h, h], datatype: 'FP64', values: w[i] }))];
  const names = ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'HEAD_OUTPUTS'];
  const path = '/v2/models/multihead/infer';
  const req = tritonBody(inputs, { outputs: names, parameters: { heads: h } });
  const r = await call(s.port, { path, ...req });
  const { header, pieces } = readBinaryAnswer(r);
  // X·W (in_out), then head i is column i: scores q_i[r]·k_i[c] (scale 1/√1), softmax, ·v_i.
  const proj = (W) => Array.from({ length: n }, (_, r0) => Array.from({ length: h }, (_, c) => {
    let acc = 0;
    for (let k = 0; k < h; k++) acc += x[r0 * h + k] * W[k * h + c];
    return acc;
  }));
  const [q, k, v] = [proj(w[0]), proj(w[1]), proj(w[2])];
  const want = { SCORES: [], WEIGHTS: [], HEAD_OUTPUTS: [] };
  for (let i = 0; i < h; i++)
    for (let a = 0; a < n; a++) {
      const row = Array.from({ length: n }, (_, b) => q[a][i] * k[b][i]);
      const top = Math.max(...row), e = row.map((z) => Math.exp(z - top)), sum = e.reduce((p, z) => p + z, 0);
      const wts = e.map((z) => z / sum);
      want.SCORES.push(...row);
      want.WEIGHTS.push(...wts);
      want.HEAD_OUTPUTS.push(wts.reduce((p, z, b) => p + z * v[b][i], 0));
    }
  const doubles = (b) => Array.from(new Float64Array(new Uint8Array(b).buffer));
  assertClose(doubles(pieces.SCORES), want.SCORES, 1e-12, 'SCORES');
  assertClose(doubles(pieces.SCALED), want.SCORES, 1e-12, 'SCALED');
  assertClose(doubles(pieces.MASKED), want.SCORES, 1e-12, 'MASKED');
  assertClose(doubles(pieces.WEIGHTS), want.WEIGHTS, 1e-12, 'WEIGHTS');
  assertClose(doubles(pieces.HEAD_OUTPUTS), want.HEAD_OUTPUTS, 1e-12, 'HEAD_OUTPUTS');
  assert.deepEqual(header.outputs[3].shape, [h, n, n]);
  // The same request answered in JSON data carries the same doubles, bit for bit.
  const json = await call(s.port, { path, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ inputs: inputs.map(({ values, ...t }) => ({ ...t, data: values })),
      outputs: names.map((name) => ({ name })), parameters: { heads: h } }) });
  assert.equal(json.status, 200);
  for (const o of json.json().outputs) assert.deepEqual(pieces[o.name], bytesOf('FP64', o.data), o.name);
  // Compressed as it is sent, the pieces never joined: the same bytes once inflated.
  const gz = await call(s.port, { path, headers: { ...req.headers, 'Accept-Encoding': 'gzip' }, body: req.body });
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.deepEqual(zlib.gunzipSync(gz.raw), r.raw);
});

test('multihead: every output matches /v1/multihead on the same numbers, batched too', async () => {
  const x = [[1, 0, 2, -1], [0.5, 1, 0, 0], [0, -1, 1, 3]];
  const eye = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
  const wq = [[0.5, 0, 0, 0.1], [0, 1, 0, 0], [0.2, 0, 1, 0], [0, 0, 0, 1]];
  const v1 = await postJson(s.port, '/v1/multihead', { x, heads: 2, w_q: wq, w_k: eye, w_v: eye, w_o: eye,
    include: ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights', 'head_outputs', 'concat', 'output', 'weights_mean'] });
  assert.equal(v1.status, 200, v1.body);
  const want = v1.json();
  const t = (name, m) => ({ name, shape: [m.length, m[0].length], datatype: 'FP64', values: flat(m) });
  const names = ['OUTPUT', 'WEIGHTS', 'WEIGHTS_MEAN', 'Q', 'K', 'V', 'SCORES', 'SCALED', 'MASKED', 'HEAD_OUTPUTS', 'CONCAT'];
  const inputs = [t('X', x), t('W_Q', wq), t('W_K', eye), t('W_V', eye), t('W_O', eye)];
  const { header, pieces } = readBinaryAnswer(await call(s.port, {
    path: '/v2/models/multihead/versions/1/infer', ...tritonBody(inputs, { outputs: names, parameters: { heads: 2 } }),
  }));
  assert.equal(header.model_name, 'multihead');
  for (const o of header.outputs) {
    const expected = want[o.name.toLowerCase()];
    assert.deepEqual(pieces[o.name], bytesOf('FP64', flat(expected)), o.name);
  }
  assert.deepEqual(header.outputs.find((o) => o.name === 'WEIGHTS').shape, [2, 3, 3]);
  // The same X twice as a batch of 2: each half is the single answer. (WEIGHTS keeps the
  // whole path, whose bits /v1 has; OUTPUT alone is streamed: tests/http/mh_rows.test.mjs.)
  const batched = [{ name: 'X', shape: [2, 3, 4], datatype: 'FP64', values: [...flat(x), ...flat(x)] }, ...inputs.slice(1)];
  const b = readBinaryAnswer(await call(s.port, {
    path: '/v2/models/multihead/infer', ...tritonBody(batched, { outputs: ['OUTPUT', 'WEIGHTS'], parameters: { heads: 2 } }),
  }));
  assert.deepEqual(b.header.outputs[0].shape, [2, 3, 4]);
  const one = bytesOf('FP64', flat(want.output));
  assert.deepEqual(b.pieces.OUTPUT, Buffer.concat([one, one]));
  // heads is required.
  const none = await call(s.port, { path: '/v2/models/multihead/infer', ...tritonBody(inputs) });
  assert.equal(none.status, 400);
  assert.equal(none.json().errors[0].pointer, '/parameters/heads');
});

// -------------------------------------------------------------------- errors

/** Posts a JSON V2 request and checks the V2 error: status, type, pointer, "error". */
async function v2Error(body, status, type, pointer, headers = { 'Content-Type': 'application/json' }) {
  const r = await call(s.port, { path: INFER, headers, body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body) });
  assert.equal(r.status, status, r.body);
  assert.equal(r.headers['content-type'], 'application/json');
  const j = r.json();
  assert.equal(j.type, `/problems/${type}`, r.body);
  assert.equal(j.status, status);
  assert.equal(j.error, j.detail);
  if (pointer !== undefined) assert.equal(j.errors?.[0]?.pointer, pointer, r.body);
  return j;
}

const jsonSeed = () => seedInputs('FP64').map(({ values, ...t }) => ({ ...t, data: values }));

test('FP32 outputs that FP32 cannot hold are a 400 naming the output and cell, not null or inf', async () => {
  // scores 1e20 · 1e20 = 1e40, scaled by 1/√2: finite in float64, past FP32's 3.4e38.
  const fp32 = (name, shape, data) => ({ name, shape, datatype: 'FP32', data });
  const inputs = [fp32('Q', [1, 2], [1e20, 0]), fp32('K', [2, 2], [1e20, 0, 0, 0]), fp32('V', [2, 1], [1, 2])];
  const j = await v2Error({ inputs, outputs: [{ name: 'WEIGHTS' }, { name: 'MASKED' }] }, 400, 'numeric-overflow',
    '/inputs/0/datatype');
  assert.match(j.error, /^output MASKED cell \[0, 0\] is 7\.07107e\+39, past FP32's range/);
  assert.match(j.errors[0].hint, /send Q as FP64/);
  // the outputs FP32 holds are answered as before: key 0 took all the weight
  const ok = await call(s.port, { path: INFER, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ inputs }) });
  assert.equal(ok.status, 200, ok.body);
  assert.deepEqual(ok.json().outputs.map((o) => o.data), [[1, 0], [1]]);
  // and in FP64 the same problem answers MASKED in full
  const f64 = await call(s.port, { path: INFER, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ inputs: inputs.map((t) => ({ ...t, datatype: 'FP64' })), outputs: [{ name: 'MASKED' }] }) });
  assert.equal(f64.status, 200, f64.body);
  assert.deepEqual(f64.json().outputs[0].data, [1e40 / Math.SQRT2, 0]);
});

test('the answers the server gives by itself on /v2 paths carry "error" too (415, corrupt gzip, 414, 501, 404)', async () => {
  const v2Shaped = (r, status, type) => {
    assert.equal(r.status, status, r.body);
    const j = r.json();
    assert.equal(j.type, `/problems/${type}`, r.body);
    assert.equal(typeof j.error, 'string', `"error" in ${r.body}`);
    assert.equal(j.error, j.detail);
  };
  const json = { 'Content-Type': 'application/json' };
  v2Shaped(await call(s.port, { path: INFER, headers: { ...json, 'Content-Encoding': 'br' }, body: '{}' }),
    415, 'unsupported-media-type');
  v2Shaped(await call(s.port, { path: INFER, headers: { ...json, 'Content-Encoding': 'gzip' }, body: 'not gzip' }),
    400, 'invalid-json');
  v2Shaped(await call(s.port, { method: 'GET', path: `/v2/models/attention?${'a'.repeat(20000)}` }), 414, 'uri-too-long');
  v2Shaped(await call(s.port, { method: 'GET', path: '/v2/nothere' }), 404, 'not-found');
  const c = await rawConnect(s.port);
  await c.write(`POST ${INFER} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n{}`);
  const r = await c.nextResponse();
  c.sock.destroy();
  v2Shaped({ ...r, json: () => JSON.parse(r.body) }, 501, 'not-implemented');
  // off /v2 the same answers stay problem+json without "error"
  const v1 = await call(s.port, { path: '/v1/attention', headers: { ...json, 'Content-Encoding': 'br' }, body: '{}' });
  assert.equal(v1.status, 415);
  assert.equal(v1.json().error, undefined);
  const v2x = await call(s.port, { method: 'GET', path: '/v2x' });
  assert.equal(v2x.json().error, undefined);
});

test('bad requests are 400 V2 errors pointing into the JSON header', async () => {
  const seed = jsonSeed();
  const withInput = (i, patch) => ({ inputs: seed.map((t, j) => (j === i ? { ...t, ...patch } : t)) });
  // K with 2 columns where Q has 4 (the shape fits the data): shape-mismatch at K's size.
  await v2Error(withInput(1, { shape: [4, 2] }), 400, 'shape-mismatch', '/inputs/1/shape/1');
  // shape and data disagree
  await v2Error(withInput(0, { shape: [2, 3] }), 400, 'shape-mismatch', '/inputs/0/data');
  await v2Error(withInput(0, { shape: [2, 0] }), 400, 'invalid-value', '/inputs/0/shape/1');
  // 2^62 (which JSON.stringify writes 4611686018427388000) is a size, only too large: not
  // "not a size >= 1", and named as sent; so is 2^63, past a long long, which the reader
  // keeps as a real
  const huge = await v2Error(withInput(0, { shape: [2 ** 62, 4] }), 400, 'limit-exceeded', '/inputs/0/shape/0');
  assert.match(huge.error, /^inputs\[0\]\.shape\[0\] is 4611686018427388000, too large: inputs\[0\] may hold at most \d+ elements$/);
  const real = await v2Error(withInput(0, { shape: [2 ** 63, 4] }), 400, 'limit-exceeded', '/inputs/0/shape/0');
  assert.match(real.error, /^inputs\[0\]\.shape\[0\] is 9223372036854775808, too large/);
  await v2Error(withInput(0, { data: [1, 0, 1, 'x', 0, 1, 0, 1] }), 400, 'not-a-number', '/inputs/0/data/3');
  await v2Error(withInput(0, { data: [[1, 0, 1, 0], [0, 1, 0, true]] }), 400, 'not-a-number', '/inputs/0/data/1/3');
  await v2Error(withInput(0, { datatype: 'INT32', data: [1, 0, 1, 0.5, 0, 1, 0, 1] }), 400, 'not-a-number', '/inputs/0/data/3');
  // wrong datatypes
  await v2Error(withInput(0, { datatype: 'FP8' }), 400, 'invalid-value', '/inputs/0/datatype');
  await v2Error(withInput(0, { datatype: 'BOOL' }), 400, 'invalid-value', '/inputs/0/datatype');
  await v2Error({ inputs: [...seed, { name: 'MASK', shape: [2, 2], datatype: 'FP32', data: [1, 1, 1, 1] }] },
    400, 'invalid-value', '/inputs/3/datatype');
  await v2Error({ inputs: [...seed, { name: 'MASK', shape: [2, 2], datatype: 'INT32', data: [1, 2, 1, 1] }] },
    400, 'invalid-value', '/inputs/3/data');
  // unknown and missing inputs, unknown outputs and parameters
  await v2Error({ inputs: [...seed, { name: 'ATTN_MASK', shape: [2, 2], datatype: 'BOOL', data: [true, true, true, true] }] },
    400, 'unknown-field', '/inputs/3/name');
  await v2Error({ inputs: seed.slice(0, 2) }, 400, 'missing-field', '/inputs');
  await v2Error({ inputs: seed, outputs: [{ name: 'WEIGHT' }] }, 400, 'unknown-field', '/outputs/0/name');
  await v2Error({ inputs: seed, parameters: { scael: 1 } }, 400, 'unknown-field', '/parameters/scael');
  await v2Error({ inputs: seed, parameters: { scale: -1 } }, 400, 'invalid-value', '/parameters/scale');
  await v2Error({ inputs: seed, parameters: { softcap: 0 } }, 400, 'invalid-value', '/parameters/softcap');
  await v2Error({ inputs: seed, extra: 1 }, 400, 'unknown-field', '/extra');
  await v2Error({ inputs: [...seed, { name: 'MASK', shape: [2, 2], datatype: 'BOOL', data: [true, true, true, true] }],
    parameters: { causal: true } }, 400, 'invalid-value', '/parameters/causal');
  await v2Error('{"inputs": [', 400, 'invalid-json', '');
  // a numeric overflow points at the input it came from
  await v2Error({ inputs: [{ ...seed[0], data: [1e200, 0, 0, 0, 0, 1, 0, 1] },
    { ...seed[1], data: [1e200, 0, 0, 0, 1, 1, 1, 1] }, seed[2]] }, 400, 'numeric-overflow', '/inputs/0/data');
});

test('binary framing errors: sizes past the body, header length past the body, leftovers', async () => {
  const { body, headers } = tritonBody(seedInputs('FP64'));
  const n = Number(headers['Inference-Header-Content-Length']);
  const raw = { 'Inference-Header-Content-Length': String(n) };
  // binary_data_size past the body: the last input's bytes are cut short
  await v2Error(body.subarray(0, body.length - 8), 400, 'invalid-value', '/inputs/2/parameters/binary_data_size', raw);
  // header length past the body
  for (const bad of [String(body.length + 1), '-1', '12abc', '', '99999999999999999999999'])
    await v2Error(body, 400, 'invalid-value', undefined, { 'Inference-Header-Content-Length': bad });
  // a header length that cuts the JSON short is not JSON
  await v2Error(body, 400, 'invalid-json', '', { 'Inference-Header-Content-Length': String(n - 5) });
  // bytes left over after the last input
  await v2Error(Buffer.concat([body, Buffer.alloc(8)]), 400, 'invalid-value', '/inputs', raw);
  // a binary size that disagrees with shape × datatype
  const header = JSON.parse(body.subarray(0, n));
  header.inputs[0].parameters.binary_data_size = 56;
  const h2 = Buffer.from(JSON.stringify(header));
  await v2Error(Buffer.concat([h2, body.subarray(n + 8)]), 400, 'shape-mismatch', '/inputs/0/parameters/binary_data_size',
    { 'Inference-Header-Content-Length': String(h2.length) });
  // a BOOL byte that is not 0 or 1
  const mask = { name: 'MASK', shape: [2, 2], datatype: 'UINT8', values: [1, 1, 1, 1] };
  const m = tritonBody(seedInputs('FP64', [mask]));
  m.body[m.body.length - 1] = 2;
  await v2Error(m.body, 400, 'invalid-value', '/inputs/3/data', m.headers);
});

test('415 and 413 on /v2 are V2 errors; the limits hold for binary bodies', async () => {
  await v2Error(JSON.stringify({ inputs: jsonSeed() }), 415, 'unsupported-media-type', undefined,
    { 'Content-Type': 'application/xml' });
  const small = await startServer(['--max-body', '300', '--max-cells', '64']);
  try {
    const { body, headers } = tritonBody([
      { name: 'Q', shape: [9, 4], datatype: 'FP32', values: new Array(36).fill(1) },
      { name: 'K', shape: [1, 4], datatype: 'FP32', values: [1, 1, 1, 1] },
      { name: 'V', shape: [1, 1], datatype: 'FP32', values: [1] },
    ]);
    assert.ok(body.length > 300);
    const r = await call(small.port, { path: INFER, headers, body });
    assert.equal(r.status, 413);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.json().type, '/problems/too-large');
    // The same body chunked (no Content-Length to refuse early): the 413 the server finds
    // while reading is a V2 error too.
    const chunked = await request(small.port, { method: 'POST', path: INFER, headers,
      body: [body.subarray(0, 200), body.subarray(200)] });
    assert.equal(chunked.status, 413);
    assert.equal(chunked.headers['content-type'], 'application/json');
    assert.equal(chunked.json().type, '/problems/too-large');
    // 65 cells in one tensor, in a body under the limit: limit-exceeded, 400 here
    const cells = tritonBody([{ name: 'MASK', shape: [65], datatype: 'INT8', values: new Array(65).fill(1) }]);
    assert.ok(cells.body.length <= 300);
    const c = await call(small.port, { path: INFER, headers: cells.headers, body: cells.body });
    assert.equal(c.status, 400, c.body);
    assert.equal(c.json().type, '/problems/limit-exceeded');
    assert.equal(c.json().errors[0].pointer, '/inputs/0/shape/0');
  } finally {
    await small.stop();
  }
  const tight = await startServer(['--max-request-bytes', '80000']);
  try {
    const n = 40;
    const { body, headers } = tritonBody([
      { name: 'Q', shape: [n, 1], datatype: 'FP64', values: new Array(n).fill(1) },
      { name: 'K', shape: [n, 1], datatype: 'FP64', values: new Array(n).fill(1) },
      { name: 'V', shape: [n, 1], datatype: 'FP64', values: new Array(n).fill(1) },
    ], { outputs: ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'OUTPUT'] });
    const r = await call(tight.port, { path: INFER, headers, body });
    assert.equal(r.status, 400, r.body);
    assert.equal(r.json().type, '/problems/limit-exceeded');
    assert.match(r.json().errors[0].pointer, /^\/inputs\/[01]\/shape$/);
    // One problem of 8 fits; a batch of 64 of them is admitted as 64 problems, and does not.
    const problem = (b) => [
      { name: 'Q', shape: b ? [b, 8, 1] : [8, 1], datatype: 'FP64', values: new Array(8 * (b || 1)).fill(1) },
      { name: 'K', shape: b ? [b, 8, 1] : [8, 1], datatype: 'FP64', values: new Array(8 * (b || 1)).fill(1) },
      { name: 'V', shape: b ? [b, 8, 1] : [8, 1], datatype: 'FP64', values: new Array(8 * (b || 1)).fill(1) },
    ];
    const one = await call(tight.port, { path: INFER, ...tritonBody(problem(0)) });
    assert.equal(one.status, 200);
    const many = await call(tight.port, { path: INFER, ...tritonBody(problem(64)) });
    assert.equal(many.status, 400, many.body);
    assert.equal(many.json().type, '/problems/limit-exceeded');
  } finally {
    await tight.stop();
  }
});

test('an unknown path under /v2 is a 404 in the V2 form', async () => {
  const r = await request(s.port, { path: '/v2/repository/models/attention/load' });
  assert.equal(r.status, 404);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.match(r.json().error, /^nothing is served at \/v2\/repository\/models\/attention\/load/);
});

test("docs/v2.md's Python example (numpy and urllib only) prints what the page says", () => {
  const page = fs.readFileSync(new URL('../../docs/v2.md', import.meta.url), 'utf8');
  const program = page.match(/^```python\n([\s\S]*?)^```$/m)[1];
  const printed = page.match(/It prints:\n\n```text\n([\s\S]*?)^```$/m)[1];
  const out = execFileSync('/usr/bin/python3', ['-c', program], {
    encoding: 'utf8', timeout: 30000, env: { ...process.env, ATTND_URL: `http://127.0.0.1:${s.port}` },
  });
  assert.equal(out, printed);
});
