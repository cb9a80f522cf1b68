// tests/http/admin.test.mjs — --admin-port: /healthz, /readyz and /metrics on a listener
// of their own, answering while the data port is full, and through a drain until exit.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  adminPort, assertProblem, inFlightReaches, openMany, rawConnect, request, runAttnd, sleep,
  startServer,
} from './lib.mjs';

test('off by default; --admin-port 0 picks a free port and prints it first', async () => {
  const plain = await startServer();
  assert.equal(adminPort(plain), null);
  await plain.stop();
  const s = await startServer(['--admin-port', '0']);
  const port = adminPort(s);
  assert.ok(port > 0 && port !== s.port, s.stdout());
  assert.ok(s.stdout().indexOf('admin listening') < s.stdout().indexOf('attnd listening'));
  await s.stop();
  const off = await startServer([], { ATTND_ADMIN_PORT: 'off' });
  assert.equal(adminPort(off), null);
  await off.stop();
  const bad = runAttnd(['--admin-port', '70000']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--admin-port: invalid value "70000": .*0 to 65535.*off/);
});

test('the admin port serves GET and HEAD of /healthz, /readyz and /metrics only', async (t) => {
  const s = await startServer(['--admin-port', '0']);
  t.after(() => s.proc.kill('SIGKILL'));
  const port = adminPort(s);
  const h = await request(port, { path: '/healthz', headers: { 'X-Request-Id': 'probe-1' } });
  assert.equal(h.status, 200);
  assert.deepEqual(h.json(), { status: 'ok' });
  assert.equal(h.headers['x-request-id'], 'probe-1');
  assert.equal((await request(port, { path: '/readyz' })).status, 200);
  assert.equal((await request(port, { method: 'HEAD', path: '/healthz' })).status, 200);
  const m = await request(port, { path: '/metrics' });
  assert.equal(m.status, 200);
  assert.match(m.body, /^attnd_requests_total\{route="\/healthz",status="200"\} 2$/m);
  const post = await request(port, { method: 'POST', path: '/healthz', body: '{}' });
  assert.equal(post.status, 405);
  assert.match(post.headers.allow, /GET/);
  assertProblem(assert, await request(port, { path: '/nothing' }), 404);
  // A data endpoint is not there (raw: the spec's /v1/shapes has no 404 of this kind).
  const c = await rawConnect(port, { contract: false });
  await c.write('GET /v1/shapes?n=2&d_model=4&heads=1 HTTP/1.1\r\nHost: t\r\n\r\n');
  const r = await c.nextResponse();
  assert.equal(r.status, 404);
  assert.match(JSON.parse(r.body).detail, /admin port serves/);
  c.sock.destroy();
  await s.stop();
});

test('with every slot of the data port taken, the admin port still answers at once', async (t) => {
  const s = await startServer(['--admin-port', '0', '--max-connections', '16',
    '--max-client-connections', '0', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const port = adminPort(s);
  const flood = await openMany(s.port, 60); // 16 slots, 4 spare, the rest in the backlog
  await sleep(300);
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const r = await request(port, { path: '/healthz' });
    const ms = performance.now() - t0;
    assert.equal(r.status, 200);
    assert.ok(ms < 1000, `/healthz on the admin port took ${ms} ms`);
  }
  for (const c of flood) c.destroy();
  await s.stop();
});

test('while draining, /readyz is 503 on both ports; the admin port answers until exit', async (t) => {
  const s = await startServer(['--admin-port', '0', '--timeout', '5']);
  t.after(() => s.proc.kill('SIGKILL'));
  const port = adminPort(s);
  // A request in flight: its body half sent. And a kept-alive connection, used once.
  const body = JSON.stringify({ q: [[1, 0]], k: [[1, 0]], v: [[1, 2]] });
  const inFlight = await rawConnect(s.port);
  await inFlight.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await inFlightReaches(s, 1); // begun before the signal
  const kept = await rawConnect(s.port);
  await kept.write('GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n');
  assert.equal((await kept.nextResponse()).status, 200);

  s.proc.kill('SIGTERM');
  await s.waitStderr((e) => /shutting down/.test(e));
  const ready = await request(port, { path: '/readyz' });
  assertProblem(assert, ready, 503);
  assert.equal(ready.headers['retry-after'], '1');
  assert.equal((await request(port, { path: '/healthz' })).status, 200); // alive: not restarted
  await kept.write('GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n');
  const mainReady = await kept.nextResponse();
  assert.equal(mainReady.status, 503);
  assert.equal(mainReady.headers.connection, 'close');

  await inFlight.write(body.slice(10)); // the request in flight completes, then attnd exits
  assert.equal((await inFlight.nextResponse()).status, 200);
  const how = await s.exited;
  assert.deepEqual(how, { code: 0, signal: null });
  await assert.rejects(request(port, { path: '/healthz' }), /ECONNREFUSED/);
});

test('the admin port gives one client 8 connections: its 9th is a fast 503, another is served', async (t) => {
  const s = await startServer(['--admin-port', '0', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const port = adminPort(s);
  // Connected one after another, so the admin thread accepts the 8 before the 9th.
  const held = await openMany(port, 8, ['127.0.0.2']);
  const ninth = await rawConnect(port, { localAddress: '127.0.0.2' });
  await ninth.write('GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n');
  const r = await ninth.nextResponse();
  assert.equal(r.status, 503);
  assert.equal(r.headers['retry-after'], '1');
  assert.equal(r.headers.connection, 'close');
  assert.match(JSON.parse(r.body).detail, /connections open to the admin port/);
  await ninth.waitClosed();
  // A probe from another address finds a connection at once.
  const probe = await request(port, { path: '/healthz', localAddress: '127.0.0.3' });
  assert.equal(probe.status, 200);
  // The data port's connection counters are not the admin port's.
  const m = await request(port, { path: '/metrics' });
  assert.match(m.body, /^attnd_connections_refused_total\{reason="client"\} 0$/m);
  for (const c of held) c.destroy();
  await s.stop();
});

test('the admin port closes a connection trickling its headers past their deadline', async (t) => {
  // --timeout 1: the headers are due within 1 s plus a quarter of the admin port's 8 s.
  const s = await startServer(['--admin-port', '0', '--timeout', '1', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const port = adminPort(s);
  const c = await rawConnect(port, { contract: false });
  const t0 = Date.now();
  await c.write('GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ');
  // A byte every 200 ms: never idle for --timeout, so only the deadline closes it.
  const trickle = setInterval(() => { if (!c.isClosed()) c.sock.write('a'); }, 200);
  try {
    await c.waitClosed(15000); // due at 3 s: five times that before calling it held
  } finally {
    clearInterval(trickle);
  }
  const ms = Date.now() - t0;
  assert.ok(ms >= 1000, `closed after ${ms} ms, before the idle time was up`);
  assert.equal((await request(port, { path: '/healthz' })).status, 200);
  await s.stop();
});
