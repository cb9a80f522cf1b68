// tests/http/endpoints.test.mjs — every endpoint api/ serves, over real HTTP.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { SEED, SEED_OUTPUT, SEED_WEIGHTS, postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

test('GET /healthz is 200 JSON', async () => {
  const r = await request(s.port, { path: '/healthz' });
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^application\/json/);
  r.json();
});

test('GET /readyz is 200 while serving', async () => {
  const r = await request(s.port, { path: '/readyz' });
  assert.equal(r.status, 200);
  r.json();
});

test('GET /version names the build and the libraries', async () => {
  const r = await request(s.port, { path: '/version' });
  assert.equal(r.status, 200);
  const v = r.json();
  assert.equal(v.name, 'attnd');
  for (const f of ['version', 'build', 'blas']) assert.equal(typeof v[f], 'string', f);
  assert.match(v.libraries.microhttpd, /^\d+\.\d+\.\d+$/);
  assert.equal(typeof v.libraries.jansson, 'string');
});

test('GET /openapi.yaml serves the spec', async () => {
  const r = await request(s.port, { path: '/openapi.yaml' });
  assert.equal(r.status, 200);
  assert.match(r.body, /^openapi: /m);
  assert.ok(r.body.includes('/v1/attention'));
});

test('POST /v1/attention with the seed example gives its exact numbers', async () => {
  const r = await postJson(s.port, '/v1/attention', SEED);
  assert.equal(r.status, 200, r.body);
  assert.match(r.headers['content-type'], /^application\/json/);
  const body = r.json();
  assert.deepEqual(body.weights, SEED_WEIGHTS);
  assert.deepEqual(body.output, SEED_OUTPUT);
  assert.equal(body.scale, 0.5);
  assert.equal(Number(r.headers['content-length']), Buffer.byteLength(r.body));
});

test('POST with curl -d\'s form content type is read as JSON', async () => {
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: JSON.stringify(SEED),
  });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json().weights, SEED_WEIGHTS);
});

test('a body sent chunked is read whole', async () => {
  const text = JSON.stringify(SEED);
  const pieces = [text.slice(0, 10), text.slice(10, 40), text.slice(40)];
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' },
    body: pieces,
  });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json().output, SEED_OUTPUT);
});

test('HEAD /healthz has the headers of GET and no body', async () => {
  const get = await request(s.port, { path: '/healthz' });
  const head = await request(s.port, { method: 'HEAD', path: '/healthz' });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.equal(head.headers['content-type'], get.headers['content-type']);
  assert.equal(head.headers['content-length'], get.headers['content-length']);
  assert.ok(head.headers['x-request-id']);
});

test('HEAD /version works where GET does', async () => {
  const head = await request(s.port, { method: 'HEAD', path: '/version' });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
});

test('query parameters reach api (?format)', async () => {
  const ok = await postJson(s.port, '/v1/attention?format=json', SEED);
  assert.equal(ok.status, 200, ok.body);
  const bad = await postJson(s.port, '/v1/attention?format=nonsense', SEED);
  assert.equal(bad.status, 422, bad.body);
  assert.equal(bad.json().parameter ?? bad.json().errors?.[0]?.parameter, 'format');
  // A bare name is a parameter too, and one attnd does not take is refused, not ignored.
  const bare = await postJson(s.port, '/v1/attention?format=json&x', SEED);
  assert.equal(bare.status, 422, bare.body);
  assert.equal(bare.json().type, '/problems/unknown-field');
  assert.equal(bare.json().parameter, 'x');
});
