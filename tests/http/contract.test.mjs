// tests/http/contract.test.mjs — the contract checker itself, and the spec as served:
// /openapi.json and /openapi.yaml are api/openapi.yaml, every documented operation
// answers as documented, and contract.mjs does catch a response that departs from it.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';

import { SPEC, SPEC_FILE, contractErrors } from './contract.mjs';
import { request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

test('GET /openapi.json is api/openapi.yaml as JSON; /openapi.yaml is the file itself', async () => {
  const json = await request(s.port, { path: '/openapi.json' });
  assert.deepEqual(json.json(), SPEC);
  const yaml = await request(s.port, { path: '/openapi.yaml' });
  assert.equal(yaml.body, fs.readFileSync(SPEC_FILE, 'utf8'));
});

test('every documented operation answers as documented', async () => {
  const concrete = (p) => p.replace(/\{[^}]+\}/g, 'shape-mismatch');
  let n = 0;
  for (const [p, item] of Object.entries(SPEC.paths)) {
    for (const m of ['get', 'head', 'options', 'post']) {
      if (!item[m]) continue;
      const media = item[m].requestBody?.content?.['application/json'];
      const example = Object.values(media?.examples ?? {})[0];
      const value = example?.$ref
        ? SPEC.components.examples[example.$ref.split('/').pop()].value
        : example?.value;
      const query = (item[m].parameters ?? []).filter((x) => x.in === 'query' && x.required)
        .map((x) => `${x.name}=${x.example ?? x.schema?.example ?? 1}`).join('&');
      const r = await request(s.port, { // lib.mjs checks the answer against the spec
        method: m.toUpperCase(),
        path: query ? `${concrete(p)}?${query}` : concrete(p),
        headers: media ? { 'Content-Type': 'application/json' } : {},
        body: media ? JSON.stringify(value ?? {}) : undefined,
      });
      assert.ok(r.status < 500, `${m} ${p}: ${r.status}`);
      n++;
    }
  }
  assert.ok(n >= 20, `${n} operations`);
});

// The checker must fail what it should: each case departs from the spec in one way.
const SEED_OK = { status: 200, headers: { 'x-request-id': 'a', 'content-type': 'application/json' } };
test('the checker refuses what the spec does not describe', () => {
  const post = { method: 'POST', path: '/v1/attention' };
  const cases = [
    [post, { ...SEED_OK, body: '{"weights": 1}' }, /does not fit/],
    [post, { ...SEED_OK, status: 404, body: '{}' }, /not documented/],
    [post, { ...SEED_OK, headers: { 'content-type': 'application/json' }, body: '{}' }, /X-Request-Id header is required/],
    [post, { ...SEED_OK, headers: { ...SEED_OK.headers, 'content-type': 'text/html' }, body: '<p>' }, /Content-Type text\/html/],
    [post, { ...SEED_OK, status: 405, headers: { 'x-request-id': 'a', 'content-type': 'application/problem+json' },
      body: JSON.stringify({ type: '/problems/method-not-allowed', title: 't', status: 405, detail: 'd' }) }, /Allow header is required/],
    [{ method: 'HEAD', path: '/healthz' }, { ...SEED_OK, body: '{"status":"ok"}' }, /a body of 15 bytes/],
    [{ method: 'GET', path: '/nowhere' }, { ...SEED_OK, body: '{}' }, /no path for \/nowhere/],
    [{ method: 'PUT', path: '/healthz' }, { ...SEED_OK, body: '{"status":"ok"}' }, /no PUT operation/],
    [{ method: 'GET', path: '/healthz' }, { ...SEED_OK, body: '{"status":"fine"}' }, /does not fit/],
  ];
  for (const [req, res, why] of cases) {
    const errors = contractErrors(req, res);
    assert.ok(errors.some((e) => why.test(e)), `${req.method} ${req.path}: ${JSON.stringify(errors)}`);
  }
  assert.deepEqual(contractErrors({ method: 'GET', path: '/healthz' },
    { ...SEED_OK, body: '{"status":"ok"}' }), []);
});
