// tests/http/lifecycle.test.mjs — readiness, graceful shutdown, and --probe.

import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';

import {
  SEED, SEED_OUTPUT, closedPort, inFlightReaches, logLinesFor, rawConnect, request, runAttnd, sleep,
  startServer,
} from './lib.mjs';

/** Resolves within ms with {code, signal}, or rejects. */
const exitWithin = (s, ms) =>
  Promise.race([s.exited, sleep(ms).then(() => { throw new Error(`still running after ${ms} ms`); })]);

/** true when a new TCP connection is refused (or reset) instead of answered. */
const connectRefused = (port) =>
  new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.write('GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n');
      let got = '';
      sock.on('data', (d) => { got += d; });
      sock.on('close', () => resolve(!got.startsWith('HTTP/1.1 200')));
      sock.on('error', () => {});
      sock.setTimeout(1000, () => { sock.destroy(); resolve(true); });
    });
    sock.once('error', () => resolve(true));
  });

test('SIGTERM: the request in flight completes with 200, then the process exits 0', async () => {
  const s = await startServer(['--admin-port', '0']);
  const body = JSON.stringify(SEED);
  const half = Math.floor(body.length / 2);
  const c = await rawConnect(s.port);
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `X-Request-Id: inflight-1\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, half)}`);
  await inFlightReaches(s, 1);
  s.proc.kill('SIGTERM');
  await s.waitStderr((e) => /shutting down, 1 request/.test(e));

  // Not ready any more: a new connection is refused, or at least not told "ready".
  assert.ok(await connectRefused(s.port), 'no 200 from /readyz after SIGTERM');
  assert.equal(s.proc.exitCode, null, 'still running while the request is in flight');

  await c.write(body.slice(half));
  const r = await c.nextResponse();
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(JSON.parse(r.body).output, SEED_OUTPUT);
  assert.equal(r.headers.connection, 'close', 'a draining server asks the client to go');

  const { code } = await exitWithin(s, 5000);
  assert.equal(code, 0);
  assert.equal(logLinesFor(s.stderr(), 'inflight-1').length, 1);
});

test('after SIGTERM, a new request on a kept-alive connection gets 503 and Connection: close', async () => {
  const s = await startServer(['--admin-port', '0']);
  // Connection A keeps the server draining: headers and half a body.
  const a = await rawConnect(s.port);
  await a.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    'Content-Length: 200\r\n\r\n{"q":');
  // Connection B has finished one request and stays open.
  const b = await rawConnect(s.port);
  await b.write('GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n');
  assert.equal((await b.nextResponse()).status, 200);
  await inFlightReaches(s, 1);

  s.proc.kill('SIGTERM');
  await s.waitStderr((e) => e.includes('shutting down'));
  await b.write('GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: late-1\r\n\r\n');
  const late = await b.nextResponse();
  assert.equal(late.status, 503);
  assert.match(late.headers['content-type'], /^application\/problem\+json/);
  assert.equal(JSON.parse(late.body).status, 503);
  assert.equal(late.headers.connection, 'close');
  assert.equal(late.headers['x-request-id'], 'late-1');
  await b.waitClosed();

  a.sock.destroy(); // gives up: nothing is in flight any more
  const { code } = await exitWithin(s, 5000);
  assert.equal(code, 0);
});

test('SIGHUP drains as SIGTERM does: the request in flight completes, then exit 0', async () => {
  const s = await startServer(['--admin-port', '0']);
  const body = JSON.stringify(SEED);
  const c = await rawConnect(s.port);
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `X-Request-Id: hup-1\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await inFlightReaches(s, 1);
  s.proc.kill('SIGHUP');
  await s.waitStderr((e) => /SIGHUP: shutting down, 1 request/.test(e));
  assert.ok(await connectRefused(s.port), 'no 200 from /readyz after SIGHUP');
  await c.write(body.slice(10));
  const r = await c.nextResponse();
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(JSON.parse(r.body).output, SEED_OUTPUT);
  const { code, signal } = await exitWithin(s, 5000);
  assert.deepEqual({ code, signal }, { code: 0, signal: null });
  assert.equal(logLinesFor(s.stderr(), 'hup-1').length, 1);
});

test('SIGUSR1 and SIGUSR2 are ignored: the server keeps serving', async () => {
  const s = await startServer();
  try {
    for (let i = 0; i < 3; i++) {
      s.proc.kill('SIGUSR1');
      s.proc.kill('SIGUSR2');
    }
    await sleep(200);
    assert.equal(s.proc.exitCode, null);
    assert.equal(s.proc.signalCode, null);
    assert.equal((await request(s.port, { path: '/healthz' })).status, 200);
  } finally {
    await s.stop();
  }
  const help = runAttnd(['--help']).stdout;
  assert.match(help, /SIGHUP/);
  assert.match(help, /SIGUSR1 and SIGUSR2 are ignored/);
});

test('SIGINT with nothing in flight exits 0 at once', async () => {
  const s = await startServer();
  await request(s.port, { path: '/healthz' });
  s.proc.kill('SIGINT');
  const { code } = await exitWithin(s, 2000);
  assert.equal(code, 0);
});

// Not under ThreadSanitizer (make tsan sets TSAN_OPTIONS): it runs a signal handler
// only when the thread that received the signal next enters an intercepted call, and
// OpenBLAS's idle pool thread waits on a condition variable for good, so a SIGTERM
// that lands there is never handled (seen once in many runs). make test and make asan
// run it with real delivery.
const underTsan = process.env.TSAN_OPTIONS !== undefined;
test('SIGTERM right after start exits 0, whichever thread the signal reaches',
  { skip: underTsan && 'ThreadSanitizer defers signal handlers (see above)' }, async () => {
  // Libraries start threads before main (OpenBLAS does); a signal delivered to one of
  // them must not kill the process with the default action.
  for (let i = 0; i < 10; i++) {
    const s = await startServer();
    s.proc.kill('SIGTERM');
    const { code, signal } = await exitWithin(s, 3000);
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, s.stderr());
  }
});

test('the grace period is bounded by --timeout', async () => {
  const s = await startServer(['--timeout', '1', '--admin-port', '0']);
  const c = await rawConnect(s.port);
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{');
  await inFlightReaches(s, 1);
  const t0 = Date.now();
  s.proc.kill('SIGTERM');
  const { code } = await exitWithin(s, 4000); // the client never finishes
  assert.equal(code, 0);
  assert.ok(Date.now() - t0 < 3500);
  c.sock.destroy();
});

test('--probe against the live server exits 0 silently', async () => {
  const s = await startServer();
  try {
    const r = runAttnd(['--probe', `http://127.0.0.1:${s.port}/healthz`]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, '');
    const ready = runAttnd(['--probe', `http://localhost:${s.port}/readyz`]);
    assert.equal(ready.status, 0, ready.stderr);
  } finally {
    await s.stop();
  }
});

test('--probe of a non-2xx answer exits 1 with one line', async () => {
  const s = await startServer();
  try {
    const r = runAttnd(['--probe', `http://127.0.0.1:${s.port}/nope`]);
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.match(r.stderr, /404/);
  } finally {
    await s.stop();
  }
});

test('--probe against a closed port exits 1 with one line', async () => {
  const port = await closedPort();
  const r = runAttnd(['--probe', `http://127.0.0.1:${port}/healthz`]);
  assert.equal(r.status, 1);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.trim().split('\n').length, 1);
  assert.match(r.stderr, /refused/);
});

test('--probe of a server that never answers gives up within about 3 s', async () => {
  const silent = net.createServer(() => {}); // accepts, says nothing
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    const t0 = Date.now();
    const r = runAttnd(['--probe', `http://127.0.0.1:${silent.address().port}/healthz`]);
    assert.equal(r.status, 1);
    assert.ok(Date.now() - t0 < 5000);
  } finally {
    silent.close();
  }
});

test('--probe refuses what it cannot do', () => {
  for (const url of ['https://127.0.0.1/healthz', 'ftp://x/', 'http://', 'http://h:99999/']) {
    const r = runAttnd(['--probe', url]);
    assert.equal(r.status, 1, url);
    assert.equal(r.stderr.trim().split('\n').length, 1, url);
  }
});

test('--probe ignores a malformed environment', () => {
  const r = runAttnd(['--probe', 'http://127.0.0.1:1/'], { ATTND_PORT: 'nope' });
  assert.equal(r.status, 1); // refused, not a configuration error (2)
});
