// tests/http/teaching_errors.test.mjs — the errors a learner hits first, over real HTTP:
// a typo in the query string is refused as one in the body is, every unknown field is
// named at once, a "did you mean" only when the name is close, a number beyond a double
// and an additive mask each get their own hint, and every JSON answer ends with a
// newline so the shell prompt starts on a line of its own.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { SEED, postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

test('?fromat=text is 422 unknown-field naming the parameter and "format"', async () => {
  const r = await postJson(s.port, '/v1/attention?fromat=text', SEED);
  assert.equal(r.status, 422, r.body);
  const p = r.json();
  assert.equal(p.type, '/problems/unknown-field');
  assert.equal(p.parameter, 'fromat');
  assert.match(p.hint, /did you mean "format"/);
});

test('an unknown parameter is refused on every endpoint attnd routes', async () => {
  for (const path of ['/healthz?pretty=1', '/readyz?pretty=1', '/version?pretty=1',
    '/openapi.json?pretty=1', '/problems/unknown-field?pretty=1',
    '/v1/shapes?n=10&d_model=512&heads=8&pretty=1']) {
    const r = await request(s.port, { path });
    assert.equal(r.status, 422, `${path}: ${r.body}`);
    assert.equal(r.json().parameter, 'pretty', path);
    assert.match(r.json().hint, /the parameters are .*format, lang/, path);
  }
  const sizes = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&nkv=4' });
  assert.equal(sizes.status, 422);
  assert.match(sizes.json().hint, /did you mean "n_kv"/);
  // V2 clients read 400 and "error", as for every V2 bad request.
  const v2 = await request(s.port, { path: '/v2/health/live?x=1' });
  assert.equal(v2.status, 400);
  assert.equal(v2.json().parameter, 'x');
  assert.match(v2.json().error, /unknown query parameter "x"/);
});

test('{"Q", "K", "V"} names all three at once, each with the field meant', async () => {
  const r = await postJson(s.port, '/v1/attention', { Q: [[1]], K: [[1]], V: [[1]] });
  assert.equal(r.status, 422, r.body);
  const errors = r.json().errors;
  assert.deepEqual(errors.map((e) => e.pointer), ['/Q', '/K', '/V']);
  // The problem's detail sums them up; each culprit's detail names that one alone.
  assert.match(r.json().detail, /^unknown fields "Q", "K", "V"; known fields: q, k, v, /);
  assert.deepEqual(errors.map((e) => e.detail),
    ['unknown field "Q"', 'unknown field "K"', 'unknown field "V"']);
  assert.match(errors[0].hint, /did you mean "q"/);
  assert.match(errors[1].hint, /did you mean "k"/);
  assert.match(errors[2].hint, /did you mean "v"/);
});

test('dropout and dtype get the list of fields, not round and scale', async () => {
  const r = await postJson(s.port, '/v1/attention', { ...SEED, dropout: 0.1, dtype: 'fp32' });
  assert.equal(r.status, 422, r.body);
  for (const e of r.json().errors) {
    assert.doesNotMatch(e.hint, /did you mean/);
    assert.match(e.hint, /the fields are q, k, v, mask/);
  }
});

test('1e400 says it does not fit in a double, not brackets and commas', async () => {
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' },
    body: '{"q": [[1e400]], "k": [[1]], "v": [[1]]}',
  });
  assert.equal(r.status, 400);
  assert.match(r.json().detail, /does not fit in a double at line 1, column 9/);
  assert.match(r.json().errors[0].hint, /1\.8e308/);
  assert.doesNotMatch(r.json().errors[0].hint, /brackets/);
});

test('a 0/-1e9 mask is pointed to bias, which computes it', async () => {
  const mask = [[0, -1e9], [0, 0]];
  const r = await postJson(s.port, '/v1/attention', { ...SEED, mask });
  assert.equal(r.status, 422, r.body);
  assert.equal(r.json().errors[0].pointer, '/mask/0/1');
  assert.match(r.json().errors[0].hint, /send it as bias/);
  const b = await postJson(s.port, '/v1/attention', { ...SEED, bias: mask });
  assert.equal(b.status, 200, b.body);
  // Row 0: scores 2, 2 scaled by 1/2 to 1, 1; -1e9 on key 1 leaves all weight on key 0.
  assert.deepEqual(b.json().weights[0], [1, 0]);
});

test('JSON answers end with exactly one newline; V2 binary headers keep their length', async () => {
  const answers = [
    await postJson(s.port, '/v1/attention', SEED),
    await postJson(s.port, '/v1/attention', { q: 1 }),
    await postJson(s.port, '/v1/attention/batch', { items: [SEED] }),
    await request(s.port, { path: '/healthz' }),
    await request(s.port, { path: '/version' }),
    await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8' }),
    await request(s.port, { path: '/nowhere' }),
    await request(s.port, { path: '/v2' }),
  ];
  for (const r of answers) {
    assert.match(r.body, /\}\n$/, r.body.slice(-40));
    assert.doesNotMatch(r.body, /\n\n$/);
  }
  // Text answers already ended with a newline, and still do so once.
  const text = await postJson(s.port, '/v1/attention?format=text', SEED);
  assert.match(text.body, /[^\n]\n$/);
});
