// tests/http/framing.test.mjs — requests whose framing is ambiguous (RFC 9112) are
// refused and their connection closed, so that a request hidden in a body can never be
// answered (request smuggling); the request target's own rules (NUL, absolute form,
// an over-long query). Raw sockets throughout: node:http would not send these.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { logLinesFor, rawConnect, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

// What a proxy that reads the framing the other way would forward as a second request.
const HIDDEN = 'GET /metrics HTTP/1.1\r\nHost: t\r\nX-Request-Id: smuggled\r\n\r\n';

/** Sends head (+ body) on a fresh connection; the one answer, and proof nothing followed. */
async function refusedOnce(raw) {
  const c = await rawConnect(s.port);
  await c.write(raw);
  const r = await c.nextResponse(3000);
  await c.waitClosed(3000);
  await assert.rejects(c.nextResponse(500), /closed without a response/, 'a second response');
  return r;
}

function assertRefused(r, status, type) {
  assert.equal(r.status, status, r.body);
  assert.match(r.headers['content-type'], /^application\/problem\+json/);
  assert.equal(r.headers.connection, 'close');
  const p = JSON.parse(r.body);
  assert.equal(p.type, `/problems/${type}`);
  assert.equal(p.status, status);
  return p;
}

const SMUGGLING = {
  'two different Content-Lengths':
    'POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `Content-Length: 2\r\nContent-Length: ${2 + HIDDEN.length}\r\n\r\n{}${HIDDEN}`,
  'two equal Content-Lengths':
    'POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n' +
    `{}${HIDDEN}`,
  'Content-Length with Transfer-Encoding: chunked':
    'POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${10 + HIDDEN.length}\r\nTransfer-Encoding: chunked\r\n\r\n` +
    `2\r\n{}\r\n0\r\n\r\n${HIDDEN}`,
  'an obs-folded Content-Length':
    'POST /v1/attention HTTP/1.1\r\nHost: t\r\nX-Pad: a\r\n Content-Length: ' +
    `${2 + HIDDEN.length}\r\n\r\n{}${HIDDEN}`,
  'an obs-folded header':
    `GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: a\r\n\tb\r\n\r\n${HIDDEN}`,
  'two Host headers': `GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n${HIDDEN}`,
  'no Host in HTTP/1.1': `GET /healthz HTTP/1.1\r\n\r\n${HIDDEN}`,
  'whitespace before a colon': `GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length : 5\r\n\r\n${HIDDEN}`,
  'chunked not the last coding':
    `POST /v1/attention HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n${HIDDEN}`,
  'Transfer-Encoding in HTTP/1.0':
    `POST /v1/attention HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${HIDDEN}`,
};

for (const [name, raw] of Object.entries(SMUGGLING)) {
  test(`${name}: 400 bad-request, closed, the request in the body never answered`, async () => {
    const r = await refusedOnce(raw);
    const p = assertRefused(r, 400, 'bad-request');
    assert.match(p.detail, /RFC 9112/);
  });
}

test('the smuggled request is neither answered nor logged', async () => {
  await refusedOnce(SMUGGLING['two different Content-Lengths']);
  await refusedOnce(SMUGGLING['Content-Length with Transfer-Encoding: chunked']);
  await refusedOnce(SMUGGLING['an obs-folded Content-Length']);
  const c = await rawConnect(s.port); // a request after them: its line is written last
  await c.write('GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: after-smuggling\r\n\r\n');
  assert.equal((await c.nextResponse()).status, 200);
  c.sock.destroy();
  const err = await s.waitStderr((e) => e.includes('id=after-smuggling '));
  assert.deepEqual(logLinesFor(err, 'smuggled'), []);
  assert.doesNotMatch(err, /path=\/metrics/);
});

for (const coding of ['identity', 'gzip, chunked', 'gzip']) {
  test(`Transfer-Encoding: ${coding} is 501 not-implemented at once, and closed`, async () => {
    const t0 = Date.now();
    const r = await refusedOnce('POST /v1/attention HTTP/1.1\r\nHost: t\r\n' +
      `Transfer-Encoding: ${coding}\r\n\r\n{}`);
    assertRefused(r, 501, 'not-implemented');
    assert.ok(Date.now() - t0 < 2000, 'answered, not left to the timeout');
  });
}

test('well-formed requests keep their connection (HTTP/1.1 with Host, HTTP/1.0 without)', async () => {
  const c = await rawConnect(s.port);
  for (let i = 0; i < 2; i++) {
    await c.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const r = await c.nextResponse();
    assert.equal(r.status, 200);
    assert.notEqual(r.headers.connection, 'close');
  }
  c.sock.destroy();
  const old = await rawConnect(s.port);
  await old.write('GET /healthz HTTP/1.0\r\n\r\n');
  assert.equal((await old.nextResponse()).status, 200);
  old.sock.destroy();
});

test('a chunked body alone is still read', async () => {
  const body = '{"q":[[1,0]],"k":[[1,0]],"v":[[1]]}';
  const c = await rawConnect(s.port);
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  const r = await c.nextResponse();
  assert.equal(r.status, 200, r.body);
  c.sock.destroy();
});

// libmicrohttpd 0.9.75 refuses a Content-Length that is not a number itself, before
// attnd's handler runs, and writes its status line and headers twice, then its HTML
// body once. No call pattern of the handler can avoid it (the handler is never called
// for such a request): this test pins exactly what a client gets, and that the
// connection is closed, so nothing after it is read as a request.
for (const value of ['-1', '+36', '0x24', '36, 36']) {
  test(`Content-Length: ${value}: libmicrohttpd's own 400 (head written twice), then closed`, async () => {
    const c = await rawConnect(s.port, { contract: false });
    let got = '';
    c.sock.on('data', (d) => { got += d.toString('latin1'); });
    await c.write(`POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Length: ${value}\r\n\r\n` +
      `{"q":1}${HIDDEN}`);
    await c.waitClosed(3000);
    const head = 'HTTP/1.1 400 Bad Request\r\nDate: [^\r]+\r\nConnection: close\r\n' +
      'Content-Length: (\\d+)\r\n\r\n';
    const m = got.match(new RegExp(`^${head}${head}(<html>.*</html>)$`, 's'));
    assert.ok(m, JSON.stringify(got));
    assert.equal(Number(m[1]), Buffer.byteLength(m[3]));
    assert.match(m[3], /Content-Length/);
  });
}

test('a NUL in the path is 400, logged with the path as sent', async () => {
  const c = await rawConnect(s.port);
  await c.write('GET /healthz%00anything HTTP/1.1\r\nHost: t\r\nX-Request-Id: nul-path\r\n\r\n');
  const p = assertRefused(await c.nextResponse(), 400, 'bad-request');
  assert.match(p.detail, /NUL/);
  await c.waitClosed();
  const err = await s.waitStderr((e) => e.includes('id=nul-path '));
  assert.match(logLinesFor(err, 'nul-path')[0], / path=\/healthz%00anything status=400 /);
});

test('a NUL in a query value is 400', async () => {
  const c = await rawConnect(s.port);
  await c.write('GET /v1/shapes?n=2%00&d_model=4&heads=1 HTTP/1.1\r\nHost: t\r\n\r\n');
  assertRefused(await c.nextResponse(), 400, 'bad-request');
  c.sock.destroy();
});

test('an absolute-form target is routed by its path', async () => {
  const c = await rawConnect(s.port);
  await c.write(`GET http://127.0.0.1:${s.port}/healthz HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n\r\n`);
  const r = await c.nextResponse();
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(JSON.parse(r.body), { status: 'ok' });
  await c.write(`GET http://127.0.0.1:${s.port}/v1/shapes?n=2&d_model=4&heads=2 HTTP/1.1\r\n` +
    `Host: 127.0.0.1:${s.port}\r\n\r\n`);
  const shapes = await c.nextResponse();
  assert.equal(shapes.status, 200, shapes.body);
  assert.ok(Array.isArray(JSON.parse(shapes.body).rows));
  c.sock.destroy();
});

test('5,000 query parameters: 414 uri-too-long, and closed', async () => {
  const query = Array.from({ length: 5000 }, (_, i) => `a${i}=1`).join('&');
  const r = await refusedOnce(`GET /v1/shapes?${query} HTTP/1.1\r\nHost: t\r\n\r\n`);
  const p = assertRefused(r, 414, 'uri-too-long');
  assert.match(p.detail, /256 parameters/);
});

test('256 query parameters are parsed (and judged by the endpoint)', async () => {
  const pad = Array.from({ length: 253 }, (_, i) => `x${i}=1`).join('&');
  const c = await rawConnect(s.port);
  await c.write(`GET /v1/shapes?n=2&d_model=4&${pad} HTTP/1.1\r\nHost: t\r\n\r\n`);
  const r = await c.nextResponse();
  assert.equal(r.status, 422, r.body); // heads is missing, or x0 unknown: the endpoint's own answer
  c.sock.destroy();
});

test('every framing problem type has its page', async () => {
  for (const type of ['bad-request', 'uri-too-long', 'not-implemented']) {
    const c = await rawConnect(s.port);
    await c.write(`GET /problems/${type} HTTP/1.1\r\nHost: t\r\n\r\n`);
    const r = await c.nextResponse();
    assert.equal(r.status, 200, type);
    assert.match(r.headers['content-type'], /^text\/html/);
    c.sock.destroy();
  }
});
