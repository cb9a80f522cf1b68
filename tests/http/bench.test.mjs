// tests/http/bench.test.mjs — what `make bench` times is the right answer.
//
// The bench's medium payload (bench/gen_payloads.py: n = 64, d = 64, every step) is
// sent to attnd, and its weights and output are compared with a naive reference
// computed here in plain loops; the V2 binary payloads are checked byte by byte and
// answered; bench/report.py's verdicts are checked on made-up runs; the Python V2
// service is compared with attnd. The bench itself is never run by the tests.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

import { postBytes, request, startServer } from './lib.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let server;
let dir;

before(async () => {
  server = await startServer(['--log', 'off']);
  dir = mkdtempSync(path.join(tmpdir(), 'attnd-bench-'));
});
after(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** softmax(Q·Kᵀ·scale) row by row, max first, then ·V: the textbook loops. */
function reference(q, k, v, scale) {
  const weights = q.map((qi) => {
    const x = k.map((kj) => qi.reduce((s, c, i) => s + c * kj[i], 0) * scale);
    const max = Math.max(...x);
    const e = x.map((xj) => Math.exp(xj - max));
    const sum = e.reduce((s, y) => s + y, 0);
    return e.map((y) => y / sum);
  });
  const output = weights.map((w) => v[0].map((_, c) => w.reduce((s, wj, j) => s + wj * v[j][c], 0)));
  return { weights, output };
}

function maxAbsDiff(a, b) {
  const x = a.flat();
  const y = b.flat();
  assert.equal(x.length, y.length);
  return x.reduce((m, xi, i) => Math.max(m, Math.abs(xi - y[i])), 0);
}

test('the bench medium payload: attnd agrees with a naive reference to 1e-12', async () => {
  execFileSync('/usr/bin/python3', [path.join(root, 'bench', 'gen_payloads.py'), dir, 'medium'], {
    stdio: 'ignore',
  });
  const body = readFileSync(path.join(dir, 'medium.json'));
  const req = JSON.parse(body);
  assert.equal(req.q.length, 64);
  assert.equal(req.q[0].length, 64);

  const res = await request(server.port, {
    method: 'POST',
    path: '/v1/attention',
    headers: { 'Content-Type': 'application/json' },
    body,
  });
  assert.equal(res.status, 200);
  const got = res.json();
  for (const part of ['scores', 'scaled', 'masked', 'weights', 'output', 'summary']) {
    assert.ok(part in got, `${part} is in the response`);
  }
  assert.deepEqual(got.shapes.weights, [64, 64]);

  const want = reference(req.q, req.k, req.v, 1 / 8);
  assert.ok(maxAbsDiff(got.weights, want.weights) <= 1e-12, 'weights');
  assert.ok(maxAbsDiff(got.output, want.output) <= 1e-12, 'output');
});

// An idle server with two workers lends both to a large request: it reads the body in
// two halves (api/json/read.c, from 128 KiB; this one is about 500 KB), runs the
// forward pass on two threads (core/attention.c) and writes the answer's matrices on
// two (api/json/matrix_write.c). The answer must still be one valid document with every
// row in its place; rows are told apart by their values, so a misplaced or lost half,
// read or written, would not match the reference. (make tsan runs this too.)
test('a large request read, computed and written on two threads: as the naive reference', async () => {
  const s = await startServer(['--log', 'off', '--threads', '2']);
  try {
    let seed = 11;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648 - 0.5;
    };
    const mat = (rows, cols) => Array.from({ length: rows }, () => Array.from({ length: cols }, rnd));
    const req = { q: mat(256, 32), k: mat(256, 32), v: mat(256, 32) };
    assert.ok(JSON.stringify(req).length > 128 * 1024, 'past the two-halves threshold');
    const res = await request(s.port, {
      method: 'POST',
      path: '/v1/attention',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(req),
    });
    assert.equal(res.status, 200);
    const got = res.json();
    assert.equal(got.scores.length, 256);
    assert.equal(got.weights.length, 256);
    const want = reference(req.q, req.k, req.v, 1 / Math.sqrt(32));
    assert.ok(maxAbsDiff(got.weights, want.weights) <= 1e-12, 'weights');
    assert.ok(maxAbsDiff(got.output, want.output) <= 1e-12, 'output');
    const scores = req.q.map((qi) => req.k.map((kj) => qi.reduce((a, c, i) => a + c * kj[i], 0)));
    assert.ok(maxAbsDiff(got.scores, scores) <= 1e-12, 'scores');
  } finally {
    await s.stop();
  }
});

// The report's bound under a floor target (bench/report.py): what the target leaves
// attnd a request on these cores with a free client, against the floor's own CPU a
// request plus api_handle in process. Two made-up runs, one the bound rules out and
// one it does not; the numbers are worked out here, not read from the report.
test('the bench report: the bound under each floor target', () => {
  const tsv = path.join(dir, 'http.tsv');
  const meta = path.join(dir, 'meta.txt');
  writeFileSync(tsv, [
    'payload conns target requests seconds rps p50_ms p99_ms errors cpu_ms',
    'tiny 64 attnd 150000 5.000 30000.00 1.5 6.0 0 5400',
    'tiny 64 fixed 250000 5.000 50000.00 1.2 5.0 0 4750', // 0.019 ms a request
    'medium 8 attnd 7000 5.000 1400.00 5.5 10.0 0 7700',
    'medium 8 replay 30000 5.000 6000.00 1.2 3.0 0 3900', // 0.130 ms a request
    '',
  ].join('\n'));
  writeFileSync(meta, 'seconds=5\nhandle_ms_tiny=0.007\nhandle_ms_medium=0.9\n');
  const out = execFileSync('/usr/bin/python3', [path.join(root, 'bench', 'report.py'), 'table', tsv, meta], {
    encoding: 'utf8',
  });
  const ms = (x) => (x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
  const cores = cpus().length;
  const bounds = out.split('\n').filter((l) => l.trim().startsWith('bound:'));
  assert.equal(bounds.length, 2, out);

  const tinyBudget = (1000 * cores) / (0.8 * 50000);
  assert.match(bounds[0], new RegExp(`^ +bound: 80% of fixed is 40,000 req/s; on ${cores} cores`));
  assert.ok(bounds[0].includes(`at most ${ms(tinyBudget)} ms of CPU a request`), bounds[0]);
  assert.ok(bounds[0].includes('take 0.026 ms'), bounds[0]); // 0.019 + 0.007
  assert.equal(bounds[0].endsWith('does not rule it out'), 0.026 <= tinyBudget, bounds[0]);

  const mediumBudget = (1000 * cores) / (0.6 * 6000);
  assert.ok(bounds[1].includes(`60% of replay is 3,600 req/s`), bounds[1]);
  assert.ok(bounds[1].includes(`at most ${ms(mediumBudget)} ms of CPU a request`), bounds[1]);
  assert.ok(bounds[1].includes('take 1.03 ms'), bounds[1]); // 0.130 + 0.9
  assert.equal(bounds[1].includes('out of reach'), 1.03 > mediumBudget, bounds[1]);
});

// ---- the binary path (V2): the payloads, the report's target lines, the Python V2 service ----

/** A V2 binary body or answer split as tritonclient.http splits it: {header, pieces (Buffers, by name)}. */
function splitV2(raw, headerLength, list) {
  const header = JSON.parse(raw.subarray(0, headerLength).toString('utf8'));
  const pieces = {};
  let at = headerLength;
  for (const t of header[list]) {
    const size = t.parameters.binary_data_size;
    pieces[t.name] = raw.subarray(at, at + size);
    at += size;
  }
  assert.equal(at, raw.length, 'the binary pieces fill the body exactly');
  return { header, pieces };
}

const doubles = (buf) => Array.from({ length: buf.length / 8 }, (_, i) => buf.readDoubleLE(8 * i));
const STEPS = ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'OUTPUT'];
const V2_PATH = '/v2/models/attention/infer';

// What the bench posts to /v2 (bench/gen_payloads.py NAME.v2.bin): tritonclient.http's
// bytes (compact header, Inference-Header-Content-Length, no Content-Type), Q, K, V as
// binary FP64 holding the JSON payload's own numbers, every step asked as binary. attnd
// answers each 200 with the five steps in order, FP64, (n, n) four times and (n, d),
// 8 bytes a cell. xl's answer (every step of n = 2048, sent from its trace) fits the
// default --max-request-bytes, as the bench runs it.
test('the bench V2 payloads: tritonclient bytes of the JSON numbers, every step answered in binary', async () => {
  execFileSync('/usr/bin/python3', [path.join(root, 'bench', 'gen_payloads.py'), dir], { stdio: 'ignore' });
  const s = await startServer(['--log', 'off']);
  try {
    const dims = { tiny: [2, 4, 2], medium: [64, 64, 64], large: [512, 64, 64], xl: [2048, 64, 64] };
    for (const [name, [n, d, dv]] of Object.entries(dims)) {
      const body = readFileSync(path.join(dir, `${name}.v2.bin`));
      const hlen = Number(readFileSync(path.join(dir, `${name}.v2.hlen`), 'utf8'));
      const head = body.subarray(0, hlen).toString('utf8');
      assert.equal(head, JSON.stringify(JSON.parse(head)), `${name}: the header is compact JSON`);
      const { header, pieces } = splitV2(body, hlen, 'inputs');
      assert.deepEqual(header.inputs.map((i) => [i.name, i.datatype, i.shape]),
        [['Q', 'FP64', [n, d]], ['K', 'FP64', [n, d]], ['V', 'FP64', [n, dv]]], name);
      assert.deepEqual(header.outputs, STEPS.map((o) => ({ name: o, parameters: { binary_data: true } })), name);
      const json = JSON.parse(readFileSync(path.join(dir, `${name}.json`), 'utf8'));
      for (const [t, m] of [['Q', json.q], ['K', json.k], ['V', json.v]])
        assert.deepEqual(doubles(pieces[t]), m.flat(), `${name}: ${t} holds the JSON payload's numbers`);

      const r = await postBytes(s.port, V2_PATH, body, { 'Inference-Header-Content-Length': String(hlen) });
      assert.equal(r.status, 200, `${name}: ${r.raw.subarray(0, 300)}`);
      assert.equal(r.headers['content-type'], 'application/octet-stream');
      const answer = splitV2(r.raw, Number(r.headers['inference-header-content-length']), 'outputs');
      assert.deepEqual(answer.header.outputs.map((o) => [o.name, o.datatype, o.shape, o.parameters.binary_data_size]),
        [...STEPS.slice(0, 4).map((o) => [o, 'FP64', [n, n], 8 * n * n]), ['OUTPUT', 'FP64', [n, dv], 8 * n * dv]], name);
      if (name === 'medium') {
        const want = reference(json.q, json.k, json.v, 1 / 8);
        const w = doubles(answer.pieces.WEIGHTS);
        assert.ok(w.every((x, i) => Math.abs(x - want.weights.flat()[i]) <= 1e-12), 'medium: weights');
      }
    }
  } finally {
    await s.stop();
  }
});

// The report's lines for the binary path and the JSON path's CPU a request
// (bench/report.py table): one made-up run of each target, each verdict worked out here.
test('the bench report: the V2 targets and JSON CPU a request, PASS or MISS', () => {
  const tsv = path.join(dir, 'http-v2.tsv');
  const meta = path.join(dir, 'meta-v2.txt');
  // payload conns target requests seconds rps p50 p99 errors cpu_ms
  const row = (p, c, t, rps, cpuMs) => `${p} ${c} ${t} ${rps * 5} 5.000 ${rps.toFixed(2)} 1.0 2.0 0 ${cpuMs}`;
  writeFileSync(tsv, [
    'payload conns target requests seconds rps p50_ms p99_ms errors cpu_ms',
    row('tiny', 64, 'attnd', 30000, 4500), // 0.030 ms a request
    row('tiny', 64, 'fixed', 50000, 4750),
    row('tiny', 64, 'python', 5000, 7500), // 0.300 ms a request: 10.0x
    row('tiny', 64, 'v2', 30000, 4500),
    row('tiny', 64, 'python_v2', 5000, 7500), // 6.0x in req/s
    row('medium', 8, 'attnd', 1400, 7000), // 1.0 ms a request
    row('medium', 8, 'replay', 6000, 3900),
    row('medium', 8, 'python', 180, 8100), // 9.0 ms a request: 9.0x
    row('medium', 8, 'v2', 3000, 2400), // 0.16 ms a request
    row('medium', 8, 'replay_v2', 6000, 1500),
    row('medium', 8, 'python_v2', 1000, 8000), // 3.0x, both cores busy
    row('large', 1, 'attnd', 10, 1800),
    row('large', 1, 'python', 2, 4100),
    row('large', 1, 'v2', 40, 4000),
    row('large', 1, 'replay_v2', 60, 1000), // 67%
    row('large', 1, 'python_v2', 20, 4500), // 2.0x
    row('xl', 1, 'attnd', 1, 1000),
    row('xl', 1, 'python', 0.6, 4500), // 3 requests, 1,500 ms each
    row('xl', 1, 'v2', 5, 4000),
    row('xl', 1, 'replay_v2', 12, 800), // 42%
    row('xl', 1, 'python_v2', 1, 4500), // 5.0x
    '',
  ].join('\n'));
  writeFileSync(meta, ['seconds=5', 'handle_ms_tiny=0.007', 'handle_ms_medium=0.9',
    'hwm_v2_xl=200000000', 'req_v2_xl=3000000', 'resp_v2_xl=135000000', ''].join('\n'));
  const out = execFileSync('/usr/bin/python3', [path.join(root, 'bench', 'report.py'), 'table', tsv, meta], {
    encoding: 'utf8',
  });
  const lines = out.split('\n');
  /** The one target line holding every piece; its verdict. */
  const verdict = (...pieces) => {
    const found = lines.filter((l) => pieces.every((p) => l.includes(p)));
    assert.equal(found.length, 1, `${pieces.join(' | ')}:\n${out}`);
    return found[0].trim().slice(0, 4);
  };
  const cores = cpus().length;
  const ms = (x) => (x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));

  assert.equal(verdict('medium @8: attnd V2 3,000 req/s is 50% of the binary replay floor'), 'MISS');
  assert.equal(verdict('medium @8: attnd V2 3,000 req/s is 3.0x the Python V2 service (want >= 2x)'), 'PASS');
  assert.equal(verdict('large @1: attnd V2 40.00 req/s is 67% of the binary replay floor'), 'PASS');
  assert.equal(verdict('large @1: attnd V2 40.00 req/s is 4.0x attnd\'s own JSON (want >= 3x)'), 'PASS');
  assert.equal(verdict('large @1: attnd V2 40.00 req/s is 2.0x the Python V2 service (want >= 3x)'), 'MISS');
  assert.equal(verdict('xl @1: attnd V2 5.00 req/s is 42% of the binary replay floor'), 'MISS');
  assert.equal(verdict('xl @1: attnd V2 5.00 req/s is 5.0x attnd\'s own JSON'), 'PASS');
  assert.equal(verdict('xl @1: attnd V2 5.00 req/s is 5.0x the Python V2 service'), 'PASS');
  assert.equal(verdict('tiny @64: attnd V2 30,000 req/s is 6.0x the Python V2 service (want >= 5x)'), 'PASS');
  // 2 x (3.0 + 135.0) MB = 276 MB, and 200 MB is under it
  assert.equal(verdict('xl V2 binary request 200 MB', '= 276 MB'), 'PASS');

  // The JSON floor targets as the CPU a request they leave: cores / (share x floor's req/s).
  const tinyBudget = (1000 * cores) / (0.8 * 50000);
  assert.equal(verdict(`tiny @64: attnd's CPU a request 0.030 ms against the ${ms(tinyBudget)} ms`),
    0.030 <= tinyBudget ? 'PASS' : 'MISS');
  const mediumBudget = (1000 * cores) / (0.6 * 6000);
  assert.equal(verdict(`medium @8: attnd's CPU a request 1.00 ms against the ${ms(mediumBudget)} ms`),
    1.0 <= mediumBudget ? 'PASS' : 'MISS');
  // The Python service's CPU a request over attnd's, want >= 10x, beside req/s.
  assert.equal(verdict('tiny @64: the Python service spends 10.0x attnd\'s CPU a request', 'in req/s 6.0x'), 'PASS');
  assert.equal(verdict('medium @8: the Python service spends 9.0x attnd\'s CPU a request', 'in req/s 7.8x'), 'MISS');
  assert.equal(verdict('large @1: the Python service spends 11.4x attnd\'s CPU a request', 'in req/s 5.0x'), 'PASS');
  assert.equal(verdict('xl @1: the Python service spends 7.5x attnd\'s CPU a request', 'in req/s 1.7x'), 'MISS');
  // a bound under each floor target of the binary path
  const bounds = lines.filter((l) => l.trim().startsWith('bound:') && l.includes('replay_v2'));
  assert.equal(bounds.length, 3, out);
  assert.ok(bounds[0].includes(`at most ${ms((1000 * cores) / (0.6 * 6000))} ms of CPU a request`), bounds[0]);
  assert.ok(bounds[0].includes('attnd V2 spent 0.160 ms a request'), bounds[0]);
});

/** Whether Debian's FastAPI stack is here (tools/deps.sh bench installs it). */
function haveFastApi() {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import fastapi, uvicorn, numpy, ujson'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// What the bench times as Python's V2 service (bench/pyservice.py's V2 route) answers
// the medium V2 payload as attnd does: the same outputs, datatypes, shapes and sizes in
// the same order, and the same numbers (weights to 1e-9, as the bench checks before timing).
test('the bench Python V2 service agrees with attnd on the medium payload', { skip: !haveFastApi() && 'FastAPI is not installed' }, async () => {
  execFileSync('/usr/bin/python3', [path.join(root, 'bench', 'gen_payloads.py'), dir, 'medium'], { stdio: 'ignore' });
  const body = readFileSync(path.join(dir, 'medium.v2.bin'));
  const headers = { 'Inference-Header-Content-Length': readFileSync(path.join(dir, 'medium.v2.hlen'), 'utf8').trim() };
  const py = spawn('/usr/bin/python3', [path.join(root, 'bench', 'pyservice.py'), '--port', '0', '--workers', '1'], {
    env: { ...process.env, OPENBLAS_NUM_THREADS: '1', PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error(`pyservice did not start: ${text}`)), 20000);
      py.stdout.on('data', (d) => {
        text += d;
        const m = /listening on port (\d+)/.exec(text);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
      py.on('exit', (code) => reject(new Error(`pyservice exited with ${code}`)));
    });
    let got;
    for (let i = 0; i < 100 && got === undefined; i++) {
      got = await new Promise((resolve) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: V2_PATH, agent: false,
          headers: { ...headers, 'Content-Length': body.length } }, (res) => {
          const parts = [];
          res.on('data', (d) => parts.push(d));
          res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, raw: Buffer.concat(parts) }));
        });
        req.on('error', () => setTimeout(resolve, 100)); // the worker is still starting
        req.end(body);
      });
    }
    assert.ok(got, 'the Python service answered');
    assert.equal(got.status, 200, got.raw.subarray(0, 300).toString());
    assert.equal(got.headers['content-type'], 'application/octet-stream');
    const want = await postBytes(server.port, V2_PATH, body, headers);
    const a = splitV2(want.raw, Number(want.headers['inference-header-content-length']), 'outputs');
    const b = splitV2(got.raw, Number(got.headers['inference-header-content-length']), 'outputs');
    assert.deepEqual(b.header.outputs, a.header.outputs, 'the same layout');
    for (const name of STEPS) {
      const x = doubles(a.pieces[name]);
      const y = doubles(b.pieces[name]);
      const worst = x.reduce((m, xi, i) => Math.max(m, Math.abs(xi - y[i])), 0);
      assert.ok(worst <= 1e-9, `${name}: ${worst}`);
    }
  } finally {
    py.kill('SIGTERM');
    await new Promise((resolve) => (py.exitCode !== null ? resolve() : py.on('exit', resolve)));
  }
});
