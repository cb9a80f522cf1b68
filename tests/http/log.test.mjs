// tests/http/log.test.mjs — the access log: one line per request on stderr, text or JSON.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import net from 'node:net';

import { SEED, logLinesFor, postJson, rawConnect, request, sleep, startServer } from './lib.mjs';

// A line ends with outcome=cut when its answer was queued but not all sent.
const TEXT_LINE =
  /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z id=(\S+) method=(\S+) path=(\S+) status=(\d+) bytes=(\d+) duration_ms=\d+\.\d{3}( outcome=cut)?$/;

test('text: one line per request, with time, id, method, path, status, bytes, duration', async () => {
  const s = await startServer();
  try {
    const a = await postJson(s.port, '/v1/attention', SEED, { 'X-Request-Id': 'log-post' });
    await request(s.port, { path: '/nope', headers: { 'X-Request-Id': 'log-404' } });
    const g = await request(s.port, { path: '/healthz' });
    const generated = g.headers['x-request-id'];
    // A line is written when MHD reports the request complete, which may be just after
    // the client has its answer, and requests on other threads may finish in any order.
    const err = await s.waitStderr((e) =>
      ['log-post', 'log-404', generated].every((id) => e.includes(`id=${id} `)));

    const post = logLinesFor(err, 'log-post');
    assert.equal(post.length, 1, err);
    const m = post[0].match(TEXT_LINE);
    assert.ok(m, post[0]);
    assert.deepEqual(m.slice(1, 6),
      ['log-post', 'POST', '/v1/attention', '200', String(Buffer.byteLength(a.body))]);
    assert.match(logLinesFor(err, 'log-404')[0], /status=404/);
    assert.equal(logLinesFor(err, generated).length, 1);
  } finally {
    await s.stop();
  }
});

test('text: a path cannot forge a log line', async () => {
  const s = await startServer();
  try {
    const c = await rawConnect(s.port);
    await c.write('GET /a%0a2024-01-01T00:00:00.000Z%20id=forged HTTP/1.1\r\nHost: t\r\n' +
      'X-Request-Id: inject-1\r\n\r\n');
    await c.nextResponse();
    const err = await s.waitStderr((e) => e.includes('id=inject-1 '));
    const line = logLinesFor(err, 'inject-1');
    assert.equal(line.length, 1);
    assert.ok(!err.split('\n').some((l) => l.startsWith('2024-01-01')), err);
    c.sock.destroy();
  } finally {
    await s.stop();
  }
});

test('keep-alive: each request on one connection gets its own line', async () => {
  const s = await startServer();
  try {
    const c = await rawConnect(s.port);
    for (const id of ['ka-1', 'ka-2', 'ka-3']) {
      await c.write(`GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: ${id}\r\n\r\n`);
      const r = await c.nextResponse();
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-request-id'], id);
    }
    const err = await s.waitStderr((e) => ['ka-1', 'ka-2', 'ka-3'].every((id) => e.includes(`id=${id} `)));
    for (const id of ['ka-1', 'ka-2', 'ka-3']) assert.equal(logLinesFor(err, id).length, 1);
    c.sock.destroy();
  } finally {
    await s.stop();
  }
});

test('json: every line parses, with the same fields', async () => {
  const s = await startServer(['--log', 'json']);
  try {
    await postJson(s.port, '/v1/attention', SEED, { 'X-Request-Id': 'j-1' });
    const c = await rawConnect(s.port);
    await c.write('GET /odd%22path%5C%01%ff HTTP/1.1\r\nHost: t\r\nX-Request-Id: j-2\r\n\r\n');
    await c.nextResponse();
    c.sock.destroy();
    const err = await s.waitStderr((e) => e.includes('"id":"j-1"') && e.includes('"id":"j-2"'));
    const lines = err.trim().split('\n').map((l) => JSON.parse(l));
    const one = lines.find((l) => l.id === 'j-1');
    assert.equal(one.method, 'POST');
    assert.equal(one.path, '/v1/attention');
    assert.equal(one.status, 200);
    assert.equal(typeof one.bytes, 'number');
    assert.equal(typeof one.duration_ms, 'number');
    assert.match(one.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const two = lines.find((l) => l.id === 'j-2');
    assert.equal(two.status, 404);
    assert.ok(two.path.startsWith('/odd"path\\\u0001'), JSON.stringify(two.path));
  } finally {
    await s.stop();
  }
});

/**
 * Asks for a large answer (about 28 MB) and reads only its first piece, then stops
 * reading: the kernel's buffers fill, and --timeout 1 closes the connection with most
 * of the answer unsent. Resolves the answer's Content-Length.
 */
function readerThatStops(port, id) {
  return new Promise((resolve, reject) => {
    const body = '{"heads":1,"random":{"seed":1,"n":512,"d_model":8}}';
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write(`POST /v1/multihead HTTP/1.1\r\nHost: t\r\nX-Request-Id: ${id}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    });
    sock.once('data', (d) => {
      sock.pause();
      const m = d.toString('latin1').match(/\r\nContent-Length: (\d+)\r\n/i);
      if (!m) reject(new Error(`no Content-Length in ${d.subarray(0, 300)}`));
      else resolve({ sock, length: Number(m[1]) });
    });
    sock.on('error', () => {});
  });
}

test('an answer cut off by --timeout is logged as cut, with the bytes known to be sent', async () => {
  const s = await startServer(['--timeout', '1', '--log', 'json']);
  try {
    const { sock, length } = await readerThatStops(s.port, 'cut-1');
    const err = await s.waitStderr((e) => e.includes('"id":"cut-1"'), 15000);
    sock.destroy();
    const line = JSON.parse(err.split('\n').find((l) => l.includes('"id":"cut-1"')));
    assert.equal(line.status, 200); // the status sent in the head
    assert.equal(line.outcome, 'cut');
    assert.ok(length > 20e6, `a large answer: ${length}`);
    assert.ok(line.bytes < length, `${line.bytes} of ${length} bytes`);
    const full = await postJson(s.port, '/v1/attention', SEED, { 'X-Request-Id': 'whole-1' });
    assert.equal(full.status, 200);
    const done = await s.waitStderr((e) => e.includes('"id":"whole-1"'));
    const whole = JSON.parse(done.split('\n').find((l) => l.includes('"id":"whole-1"')));
    assert.equal(whole.outcome, undefined); // delivered: no outcome field
    assert.equal(whole.bytes, Buffer.byteLength(full.body));
    const metrics = (await request(s.port, { path: '/metrics' })).body;
    assert.match(metrics, /^attnd_responses_cut_total\{route="\/v1\/multihead",status="200"\} 1$/m);
    assert.doesNotMatch(metrics, /^attnd_responses_cut_total\{route="\/v1\/attention"/m);
  } finally {
    await s.stop();
  }
});

test('text: a cut answer ends its line with outcome=cut', async () => {
  const s = await startServer(['--timeout', '1']);
  try {
    const { sock, length } = await readerThatStops(s.port, 'cut-2');
    const err = await s.waitStderr((e) => e.includes('id=cut-2 '), 15000);
    sock.destroy();
    const m = logLinesFor(err, 'cut-2')[0].match(TEXT_LINE);
    assert.ok(m, err);
    assert.equal(m[4], '200');
    assert.ok(Number(m[5]) < length);
    assert.equal(m[6], ' outcome=cut');
  } finally {
    await s.stop();
  }
});

test('off: nothing on stderr', async () => {
  const s = await startServer(['--log', 'off']);
  try {
    await request(s.port, { path: '/healthz' });
    await postJson(s.port, '/v1/attention', SEED);
    await sleep(200);
    assert.equal(s.stderr(), '');
  } finally {
    const { code } = await s.stop();
    assert.equal(code, 0);
    assert.equal(s.stderr(), '');
  }
});

// OpenBLAS picks its kernels by CPU model; on a CPU it cannot place (virtual machines
// often report one) it falls back to generic SSE3 kernels. attnd then says which
// OPENBLAS_CORETYPE the CPU supports, and with that variable set, says nothing.
function expectedCoreAdvice(blas) {
  const flags = new Set((fs.readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m) ?? ['', ''])[1]
    .trim().split(/\s+/));
  const generic = /\b(Prescott|Core2|Penryn|Dunnington|Nehalem|Sandybridge|Atom|Katmai|Coppermine|Northwood|Banias)\b/i;
  if (process.arch !== 'x64' || !generic.test(blas)) return null;
  if (['avx512f', 'avx512dq', 'avx512bw', 'avx512vl'].every((f) => flags.has(f))) return 'SkylakeX';
  if (flags.has('avx2') && flags.has('fma')) return 'Haswell';
  return null;
}

test('startup: advice on OPENBLAS_CORETYPE exactly when OpenBLAS runs generic kernels on a better CPU', async () => {
  const s = await startServer(); // with the environment's OPENBLAS_CORETYPE, usually none
  let advice;
  try {
    const blas = (await request(s.port, { path: '/version' })).json().blas;
    advice = 'OPENBLAS_CORETYPE' in process.env ? null : expectedCoreAdvice(blas);
    const warned = s.stderr().match(/level=warn OpenBLAS chose generic kernels .*OPENBLAS_CORETYPE=(\w+)/);
    assert.equal(warned?.[1] ?? null, advice, `${blas}\n${s.stderr()}`);
  } finally {
    await s.stop();
  }
  if (advice === null) return;
  // Following the advice: OpenBLAS runs the named kernels and attnd has nothing to add.
  const t = await startServer([], { OPENBLAS_CORETYPE: advice });
  try {
    const blas = (await request(t.port, { path: '/version' })).json().blas;
    assert.match(blas, new RegExp(`\\b${advice}\\b`, 'i'));
    assert.doesNotMatch(t.stderr(), /OpenBLAS chose/);
  } finally {
    await t.stop();
  }
});

/** n connections that send half a request head each, then are reset: one libmicrohttpd error each. */
async function resetMidHead(port, n) {
  const socks = await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => {
      c.write('GET /healthz HTTP/1.1\r\nHo');
      resolve(c);
    });
    c.on('error', () => {});
    c.once('error', reject);
  })));
  await sleep(200); // each half head is read before the reset
  for (const c of socks) c.resetAndDestroy();
}

test('libmicrohttpd\'s lines cannot flood the log: ten a second, the rest counted', async (t) => {
  const s = await startServer();
  t.after(() => s.proc.kill('SIGKILL'));
  const errors = (e) => e.split('\n').filter((l) => / level=error Socket has been disconnected/.test(l));
  await resetMidHead(s.port, 40);
  // A second later, the next line says how many were dropped.
  await sleep(1700);
  await resetMidHead(s.port, 1);
  const err = await s.waitStderr((e) => /more libmicrohttpd messages were not logged/.test(e));
  const counts = [...err.matchAll(/level=warn (\d+) more libmicrohttpd messages were not logged \(at most 10 a second\)/g)];
  assert.ok(counts.length > 0, err);
  // The burst's lines are those before the last count, which the lone reset brought (a
  // busy server may write some of them well after the resets, or in a second window).
  const last = counts[counts.length - 1];
  const first = errors(err.slice(0, last.index));
  assert.ok(first.length >= 1 && first.length <= 10 * (counts.length + 1),
    `${first.length} lines for 40 resets`);
  const dropped = counts.reduce((sum, m) => sum + Number(m[1]), 0);
  assert.equal(dropped + first.length, 40, 'every line is written or counted');
  await s.stop();
});
