// tests/abuse/long.test.mjs — the long problem of DESIGN.md, "Row statistics, rows, and any
// length": n_q = n_k = 32,768, d = 64, one head, Q, K and V sent as V2 BF16 binary
// (12 MiB), OUTPUT and LSE asked, served with the default limits. The answer is checked
// against a float64 loop in this file on a few rows (the first, the last, some between),
// and the process's peak memory against the bound: no more than the body, the
// answer and 64 MiB above what it held idle. A (32,768 × 32,768) matrix of doubles would
// be 8 GiB: the streamed pass (core/stream.h) builds none. The same length on /v1/attention
// (random inputs, causal, lse as JSON) is streamed too, within its inputs and 64 MiB,
// and `rows` alone gives those rows' numbers.
// /v1/multihead streams its heads at n = 16,384 the same way.
// About 15 s of both cores: `make abuse`, not `make test`. Its time against the bare
// products is a figure of `make bench` (docs/performance.md), never asserted here.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { test } from 'node:test';

import { rng, startServer } from '../http/lib.mjs';

const N = 32768;
const D = 64;

/** n·d BF16 numbers in [-1, 1): each a float32's top 16 bits (a BF16 by definition). */
function bf16Tensor(n, seed) {
  const next = rng(seed);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  const bits = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    f32[0] = next() * 2 - 1;
    bits[i] = u32[0] >>> 16;
  }
  return bits;
}

/** A BF16 tensor's values, widened exactly (the bits become a float32's top half). */
function widen(bits) {
  const u32 = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) u32[i] = bits[i] << 16;
  return Float64Array.from(new Float32Array(u32.buffer));
}

/** POSTs a binary V2 body; resolves {status, headers, raw (Buffer)}. */
function postBinary(port, path, body, headLength) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false,
      headers: { 'Content-Length': body.length, 'Inference-Header-Content-Length': headLength } },
    (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
        raw: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(300000, () => req.destroy(new Error('no answer in 300 s')));
    req.end(body);
  });
}

/** Row i's output and log-sum-exp by the definition, in float64: two passes over the keys. */
function referenceRow(q, k, v, i) {
  const scale = 1 / Math.sqrt(D);
  const s = new Float64Array(N);
  let m = -Infinity;
  for (let j = 0; j < N; j++) {
    let dot = 0;
    for (let c = 0; c < D; c++) dot += q[i * D + c] * k[j * D + c];
    s[j] = dot * scale;
    if (s[j] > m) m = s[j];
  }
  let l = 0;
  const out = new Float64Array(D);
  for (let j = 0; j < N; j++) {
    const e = Math.exp(s[j] - m);
    l += e;
    for (let c = 0; c < D; c++) out[c] += e * v[j * D + c];
  }
  for (let c = 0; c < D; c++) out[c] /= l;
  return { out, lse: m + Math.log(l) };
}

const memory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'))[1]);
  return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
};

test('n = 32,768, d = 64 as V2 BF16: OUTPUT and LSE with the default limits, in bounded memory', async (t) => {
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const tensors = [bf16Tensor(N * D, 1), bf16Tensor(N * D, 2), bf16Tensor(N * D, 3)];
  const header = {
    inputs: ['Q', 'K', 'V'].map((name, i) => ({ name, shape: [N, D], datatype: 'BF16',
      parameters: { binary_data_size: tensors[i].byteLength } })),
    outputs: ['OUTPUT', 'LSE'].map((name) => ({ name, parameters: { binary_data: true } })),
  };
  const head = Buffer.from(JSON.stringify(header));
  const body = Buffer.concat([head, ...tensors.map((b) => Buffer.from(b.buffer))]);
  assert.equal(body.length - head.length, 12 << 20, 'Q, K and V are 12 MiB');

  const idle = memory(s.proc.pid).rss;
  const t0 = performance.now();
  const r = await postBinary(s.port, '/v2/models/attention/infer', body, head.length);
  const ms = performance.now() - t0;
  const { peak } = memory(s.proc.pid);
  assert.equal(r.status, 200, r.raw.subarray(0, 400).toString());

  const n = Number(r.headers['inference-header-content-length']);
  const answer = JSON.parse(r.raw.subarray(0, n).toString('utf8'));
  const byName = {};
  let at = n;
  for (const o of answer.outputs) {
    const size = o.parameters.binary_data_size;
    byName[o.name] = { ...o, values: new Float64Array(r.raw.buffer.slice(r.raw.byteOffset + at,
      r.raw.byteOffset + at + size)) };
    at += size;
  }
  assert.equal(at, r.raw.length, 'the binary tensors fill the body');
  assert.deepEqual(byName.OUTPUT.shape, [N, D]);
  assert.deepEqual(byName.LSE.shape, [N]);
  assert.equal(byName.OUTPUT.datatype, 'FP64', 'BF16 inputs answer FP64 by default');

  const [q, k, v] = tensors.map(widen);
  const next = rng(7);
  const rows = [0, 1, 4095, 16384, N - 1, ...Array.from({ length: 3 }, () => Math.floor(next() * N))];
  for (const i of rows) {
    const ref = referenceRow(q, k, v, i);
    const lse = byName.LSE.values[i];
    assert.ok(Math.abs(lse - ref.lse) <= 1e-12 * Math.abs(ref.lse), `LSE[${i}] ${lse} vs ${ref.lse}`);
    for (let c = 0; c < D; c++) {
      const got = byName.OUTPUT.values[i * D + c];
      // outputs are weighted means of values in [-1, 1): an absolute bound is a relative one
      assert.ok(Math.abs(got - ref.out[c]) <= 1e-12, `OUTPUT[${i}][${c}] ${got} vs ${ref.out[c]}`);
    }
  }

  const bound = body.length + r.raw.length + 64 * 2 ** 20;
  t.diagnostic(`answered in ${ms.toFixed(0)} ms; resident idle ${(idle / 2 ** 20).toFixed(1)} MiB, ` +
    `at the peak ${(peak / 2 ** 20).toFixed(1)} MiB: ${((peak - idle) / 2 ** 20).toFixed(1)} MiB above ` +
    `idle against a bound of ${(bound / 2 ** 20).toFixed(1)} MiB (body, answer and 64 MiB)`);
  assert.ok(peak - idle <= bound, `${peak - idle} bytes above idle, over ${bound}`);
});

// POSTs body as JSON to path and resolves { status, text }; a long problem may take minutes.
const postLong = (port, path, body) => new Promise((resolve, reject) => {
  const req = http.request({ host: '127.0.0.1', port, path, method: 'POST',
    agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
    const parts = [];
    res.on('data', (d) => parts.push(d));
    res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(parts).toString() }));
  });
  req.on('error', reject);
  req.setTimeout(300000, () => req.destroy(new Error('no answer in 300 s')));
  req.end(JSON.stringify(body));
});

test('n = 32,768 on /v1/attention: random inputs and lse as JSON, streamed in bounded memory; rows alone agree', async (t) => {
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const problem = { random: { seed: 1, n_q: N, n_k: N, d_k: D, d_v: D }, mask: 'causal', include: ['lse'] };
  const post = (body) => postLong(s.port, '/v1/attention', body);
  const idle = memory(s.proc.pid).rss;
  const whole = await post(problem);
  const { peak } = memory(s.proc.pid);
  assert.equal(whole.status, 200, whole.text.slice(0, 400));
  const lse = JSON.parse(whole.text).lse;
  assert.equal(lse.length, N);
  assert.ok(lse.every(Number.isFinite), 'causal with n_q = n_k: every row sees a key');
  // q, k and v as doubles (48 MiB) and a fixed block per thread; the (n, n) steps would be 32 GiB
  const bound = 3 * N * D * 8 + 64 * 2 ** 20;
  t.diagnostic(`causal n = ${N}, lse: ${((peak - idle) / 2 ** 20).toFixed(1)} MiB above idle at the ` +
    `peak against ${(bound / 2 ** 20).toFixed(1)} MiB`);
  assert.ok(peak - idle <= bound, `${peak - idle} bytes above idle, over ${bound}`);

  const rows = [N - 1, 0, 12345, 12345];
  const some = await post({ ...problem, rows });
  assert.equal(some.status, 200, some.text.slice(0, 400));
  const picked = JSON.parse(some.text).lse;
  rows.forEach((i, at) => assert.ok(Math.abs(picked[at] - lse[i]) <= 1e-12 * Math.abs(lse[i]),
    `rows[${at}] = ${i}: ${picked[at]} vs ${lse[i]}`));
});

test('n = 16,384 on /v1/multihead: two heads streamed head by head in bounded memory; rows alone agree', async (t) => {
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const n = 16384, dModel = 64, heads = 2;
  const problem = { heads, random: { seed: 3, n, d_model: dModel }, mask: 'causal', include: ['lse', 'row_sum'] };
  const post = (body) => postLong(s.port, '/v1/multihead', body);
  const idle = memory(s.proc.pid).rss;
  const whole = await post(problem);
  const { peak } = memory(s.proc.pid);
  assert.equal(whole.status, 200, whole.text.slice(0, 400));
  const { lse, row_sum: rowSum } = JSON.parse(whole.text);
  assert.equal(lse.length, heads);
  for (let h = 0; h < heads; h++) {
    assert.equal(lse[h].length, n);
    assert.ok(lse[h].every(Number.isFinite), `head ${h}: causal, every row sees a key`);
    assert.equal(rowSum[h][0], 1, `head ${h}: query 0 sees key 0 alone, e^0`);
  }
  // x, Q, K and V, and the answer's q, head outputs, concat and output: eight (n, d_model)
  // matrices of doubles; each head's (n, n) steps would be 2 GiB
  const bound = 8 * n * dModel * 8 + 64 * 2 ** 20;
  t.diagnostic(`multihead causal n = ${n}, ${heads} heads, lse: ${((peak - idle) / 2 ** 20).toFixed(1)} MiB ` +
    `above idle at the peak against ${(bound / 2 ** 20).toFixed(1)} MiB`);
  assert.ok(peak - idle <= bound, `${peak - idle} bytes above idle, over ${bound}`);

  const rows = [n - 1, 0, 4321, 4321];
  const some = await post({ ...problem, rows });
  assert.equal(some.status, 200, some.text.slice(0, 400));
  const picked = JSON.parse(some.text).lse;
  for (let h = 0; h < heads; h++)
    rows.forEach((i, at) => assert.ok(Math.abs(picked[h][at] - lse[h][i]) <= 1e-12 * Math.abs(lse[h][i]),
      `head ${h} rows[${at}] = ${i}: ${picked[h][at]} vs ${lse[h][i]}`));
});
