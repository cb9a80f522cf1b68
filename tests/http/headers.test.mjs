// tests/http/headers.test.mjs — X-Request-Id and CORS, on every kind of response.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { CORS_ALLOWED, CORS_EXPOSED, SEED, postJson, request, runAttnd, startServer } from './lib.mjs';

describe('X-Request-Id', () => {
  let s;
  before(async () => {
    s = await startServer();
  });
  after(async () => {
    await s.stop();
  });

  test('a sane id is echoed', async () => {
    const id = 'req-42_a.b:c';
    const r = await request(s.port, { path: '/healthz', headers: { 'X-Request-Id': id } });
    assert.equal(r.headers['x-request-id'], id);
  });

  test('an id of 128 characters is kept, 129 is replaced', async () => {
    const ok = 'a'.repeat(128);
    assert.equal((await request(s.port, { path: '/healthz', headers: { 'X-Request-Id': ok } }))
      .headers['x-request-id'], ok);
    const long = 'a'.repeat(129);
    const r = await request(s.port, { path: '/healthz', headers: { 'X-Request-Id': long } });
    assert.match(r.headers['x-request-id'], /^[0-9a-f]{16}$/);
  });

  for (const unsafe of ['has space', 'semi;colon', '<script>', 'quote"d', 'é']) {
    test(`an unsafe id (${unsafe}) is replaced`, async () => {
      const r = await request(s.port, {
        path: '/healthz', headers: { 'X-Request-Id': Buffer.from(unsafe).toString('latin1') },
      });
      assert.match(r.headers['x-request-id'], /^[0-9a-f]{16}$/);
    });
  }

  test('without one, a fresh id is generated for each request', async () => {
    const ids = new Set();
    for (let i = 0; i < 20; i++) {
      const r = await request(s.port, { path: '/healthz' });
      assert.match(r.headers['x-request-id'], /^[0-9a-f]{16}$/);
      ids.add(r.headers['x-request-id']);
    }
    assert.equal(ids.size, 20);
  });

  test('errors carry the id too', async () => {
    const r = await request(s.port, { path: '/nope', headers: { 'X-Request-Id': 'err-1' } });
    assert.equal(r.status, 404);
    assert.equal(r.headers['x-request-id'], 'err-1');
    const o = await request(s.port, { method: 'OPTIONS', path: '/x', headers: { 'X-Request-Id': 'opt-1' } });
    assert.equal(o.headers['x-request-id'], 'opt-1');
  });
});

describe('CORS with --cors-origin * (the default)', () => {
  let s;
  before(async () => {
    s = await startServer();
  });
  after(async () => {
    await s.stop();
  });

  test('responses allow any origin and expose X-Request-Id and Retry-After', async () => {
    const r = await postJson(s.port, '/v1/attention', SEED, { Origin: 'https://anywhere.example' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], '*');
    assert.equal(r.headers['access-control-expose-headers'], CORS_EXPOSED);
    // Any origin gets the same answer: no Vary: Origin (Vary: Accept-Encoding, which
    // every answer with a body carries, is compression's: compression.test.mjs).
    assert.doesNotMatch(r.headers.vary ?? '', /Origin/);
  });

  test('error responses carry CORS headers too', async () => {
    const r = await request(s.port, { path: '/nope', headers: { Origin: 'https://a.example' } });
    assert.equal(r.status, 404);
    assert.equal(r.headers['access-control-allow-origin'], '*');
  });

  test('OPTIONS on any path is a 204 preflight', async () => {
    for (const path of ['/v1/attention', '/anything/at/all']) {
      const r = await request(s.port, {
        method: 'OPTIONS', path,
        headers: {
          Origin: 'https://a.example',
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type',
        },
      });
      assert.equal(r.status, 204);
      assert.equal(r.body, '');
      assert.equal(r.headers['access-control-allow-origin'], '*');
      assert.equal(r.headers['access-control-allow-methods'], 'GET, POST, HEAD, OPTIONS');
      assert.equal(r.headers['access-control-allow-headers'], CORS_ALLOWED);
      assert.equal(r.headers['access-control-max-age'], '600');
      assert.equal(r.headers['access-control-expose-headers'], CORS_EXPOSED);
    }
  });
});

describe('CORS with a list of origins', () => {
  let s;
  const allowed = 'http://localhost:3000';
  before(async () => {
    s = await startServer(['--cors-origin', `https://app.example, ${allowed}`]);
  });
  after(async () => {
    await s.stop();
  });

  test('an allowed origin is echoed, with Vary: Origin', async () => {
    const r = await request(s.port, { path: '/healthz', headers: { Origin: allowed } });
    assert.equal(r.headers['access-control-allow-origin'], allowed);
    assert.equal(r.headers['access-control-expose-headers'], CORS_EXPOSED);
    assert.match(r.headers.vary, /Origin/);
  });

  test('a disallowed origin gets no CORS headers', async () => {
    for (const origin of ['https://evil.example', 'https://app.example.evil', 'http://localhost:3001']) {
      const r = await request(s.port, { path: '/healthz', headers: { Origin: origin } });
      assert.equal(r.status, 200);
      const cors = Object.keys(r.headers).filter((h) => h.startsWith('access-control-'));
      assert.deepEqual(cors, [], origin);
      assert.match(r.headers.vary, /Origin/, 'caches still learn the answer depends on Origin');
    }
  });

  test('preflight: allowed origin gets the full set, a disallowed one none', async () => {
    const pre = (origin) => request(s.port, {
      method: 'OPTIONS', path: '/v1/attention',
      headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' },
    });
    const ok = await pre('https://app.example');
    assert.equal(ok.status, 204);
    assert.equal(ok.headers['access-control-allow-origin'], 'https://app.example');
    assert.equal(ok.headers['access-control-allow-methods'], 'GET, POST, HEAD, OPTIONS');
    assert.equal(ok.headers['access-control-allow-headers'], CORS_ALLOWED);
    assert.equal(ok.headers['access-control-max-age'], '600');
    const no = await pre('https://evil.example');
    assert.equal(no.status, 204);
    assert.deepEqual(Object.keys(no.headers).filter((h) => h.startsWith('access-control-')), []);
  });
});

describe('--cors-headers: the request headers a preflight allows', () => {
  const preflight = (port, wanted) => request(port, {
    method: 'OPTIONS', path: '/v1/attention',
    headers: {
      Origin: 'https://app.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': wanted,
    },
  });

  test('the default lets an auth proxy, OpenTelemetry, a gzip body and V2 binary through', async () => {
    const s = await startServer();
    try {
      // What a browser asks for before such a fetch; it goes ahead only when each
      // name is in Allow-Headers (case-insensitively).
      const r = await preflight(s.port,
        'authorization,traceparent,tracestate,content-encoding,inference-header-content-length');
      assert.equal(r.status, 204);
      const allowed = r.headers['access-control-allow-headers'].split(', ').map((h) => h.toLowerCase());
      for (const h of ['authorization', 'traceparent', 'tracestate', 'content-encoding',
        'inference-header-content-length', 'content-type', 'accept', 'x-request-id']) {
        assert.ok(allowed.includes(h), `${h} in ${allowed}`);
      }
      // The V2 binary answer's header length is readable by the page's script.
      const e = r.headers['access-control-expose-headers'].split(', ');
      assert.ok(e.includes('Inference-Header-Content-Length'), e);
      assert.ok(e.includes('traceparent'), e);
    } finally {
      await s.stop();
    }
  });

  test('a list replaces the default, trimmed and joined; the environment works too', async () => {
    const s = await startServer(['--cors-headers', ' Content-Type ,X-Api-Key,  Authorization']);
    const t = await startServer([], { ATTND_CORS_HEADERS: 'Content-Type,X-Tenant' });
    try {
      assert.equal((await preflight(s.port, 'x-api-key')).headers['access-control-allow-headers'],
        'Content-Type, X-Api-Key, Authorization');
      assert.equal((await preflight(t.port, 'x-tenant')).headers['access-control-allow-headers'],
        'Content-Type, X-Tenant');
    } finally {
      await s.stop();
      await t.stop();
    }
  });

  test('a list that is not header names exits 2, naming the flag or variable', () => {
    for (const bad of ['', 'Content-Type,,Accept', 'X Api', 'a:b', 'Content-Type, ', 'é']) {
      const r = runAttnd(['--cors-headers', bad]);
      assert.equal(r.status, 2, bad);
      assert.match(r.stderr, /^attnd: --cors-headers: invalid value .*header names/, bad);
    }
    const e = runAttnd([], { ATTND_CORS_HEADERS: 'a;b' });
    assert.equal(e.status, 2);
    assert.match(e.stderr, /^attnd: ATTND_CORS_HEADERS: invalid value "a;b"/);
    const long = Array.from({ length: 200 }, (_, i) => `X-H${i}`).join(',');
    assert.match(runAttnd(['--cors-headers', long]).stderr, /longer than 1023 bytes/);
  });
});
