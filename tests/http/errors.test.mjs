// tests/http/errors.test.mjs — every error the server path produces has the one
// problem+json shape: 404, 405, 406, 413 (declared and chunked), 415, 400.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import {
  SEED, SEED_WEIGHTS, assertProblem, postJson, rawConnect, request, startServer,
} from './lib.mjs';
import { SPEC } from './contract.mjs';

let s;
before(async () => {
  s = await startServer(['--max-body', '1000']);
});
after(async () => {
  await s.stop();
});

test('404 for an unknown path, as problem+json', async () => {
  const p = assertProblem(assert, await request(s.port, { path: '/no/such/thing' }), 404);
  assert.match(p.type, /not-found/);
});

// The list is made from the route table: every path of the spec is named with its
// method, but the V2 protocol's (named by /v2) and the playground's scripts and icons.
test('the 404 names every path of the spec, with its method, in English and Korean', async () => {
  const listed = (p) => !p.startsWith('/v2/') && !/\.(js|css|svg|ico)$/.test(p);
  for (const lang of ['en', 'ko']) {
    const p = assertProblem(assert, await request(s.port, { path: `/nowhere?lang=${lang}` }), 404);
    const named = new Set([...p.detail.matchAll(/\b(GET|POST) (\/[^ ,(]*)/g)].map((m) => m[2]));
    for (const path of Object.keys(SPEC.paths).filter(listed)) {
      const method = SPEC.paths[path].post ? 'POST' : 'GET';
      assert.ok(p.detail.includes(`${method} ${path}`), `${lang}: ${path} in ${p.detail}`);
    }
    for (const path of named) assert.ok(path in SPEC.paths, `${lang}: ${path} is no path of the spec`);
    assert.match(p.detail, lang === 'ko' ? /GET \/ \(플레이그라운드\)/ : /GET \/ \(the playground\)/);
  }
});

test('405 with an Allow header: DELETE /v1/attention', async () => {
  const r = await request(s.port, { method: 'DELETE', path: '/v1/attention' });
  assertProblem(assert, r, 405);
  assert.match(r.headers.allow, /POST/);
});

test('405 with an Allow header: GET /v1/attention', async () => {
  const r = await request(s.port, { path: '/v1/attention' });
  assertProblem(assert, r, 405);
  assert.match(r.headers.allow, /POST/);
});

test('415 for Content-Type: application/xml', async () => {
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/xml' },
    body: '<q/>',
  });
  const p = assertProblem(assert, r, 415);
  assert.match(p.type, /unsupported-media-type/);
});

test('406 for Accept: image/png', async () => {
  const r = await postJson(s.port, '/v1/attention', SEED, { Accept: 'image/png' });
  const p = assertProblem(assert, r, 406);
  assert.match(p.type, /not-acceptable/);
});

test('400 for a body that is not JSON', async () => {
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' },
    body: '{"q": [',
  });
  assertProblem(assert, r, 400);
});

test('413 when Content-Length is over --max-body, before the body is read', async () => {
  const c = await rawConnect(s.port);
  // Only the headers: the answer must not wait for 5000 bytes that never come.
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    'Content-Length: 5000\r\n\r\n');
  const r = await c.nextResponse();
  assert.equal(r.status, 413);
  assert.match(r.headers['content-type'], /^application\/problem\+json/);
  const p = JSON.parse(r.body);
  assert.equal(p.status, 413);
  assert.match(p.type, /too-large/);
  assert.ok(r.headers['x-request-id']);
  await c.waitClosed(); // the unread body is not taken for a next request
});

test('413 for a chunked body over --max-body', async () => {
  const piece = 'x'.repeat(400);
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' },
    body: [piece, piece, piece, piece],
  });
  const p = assertProblem(assert, r, 413);
  assert.match(p.type, /too-large/);
  assert.equal(r.headers.connection, 'close');
});

test('a chunked body exactly at --max-body is read', async () => {
  const text = JSON.stringify(SEED);
  const padded = text + ' '.repeat(1000 - text.length);
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' },
    body: [padded.slice(0, 500), padded.slice(500)],
  });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json().weights, SEED_WEIGHTS);
});

test('an endless chunked upload is cut off, and the server carries on', async () => {
  const c = await rawConnect(s.port);
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n' +
    'Content-Type: application/json\r\n\r\n');
  const chunk = `10000\r\n${'x'.repeat(0x10000)}\r\n`;
  // Past the limit the server drains up to max(--max-body, 1 MiB), then closes.
  for (let i = 0; i < 40 && !c.isClosed(); i++) await c.write(chunk);
  await c.waitClosed();
  assert.equal((await request(s.port, { path: '/healthz' })).status, 200);
});
