// tests/http/lang.test.mjs — attnd in Korean over real HTTP: Accept-Language (q values,
// ko-KR is ko) or ?lang (which wins); English by default and for languages attnd lacks;
// ?lang=fr refused; Content-Language and Vary: Accept-Language on every answer api
// makes. The Korean words are the notes' (점수, 가중치, 전치, 마스크).

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

// Seed 000 with k passed transposed: the first note's pitfall, Q @ K without .T.
const K_TRANSPOSED = { q: SEED.q, k: [[1, 1], [0, 1], [1, 1], [0, 1]], v: SEED.v };

test('Accept-Language: ko-KR gives the problem in Korean, and says so', async () => {
  const r = await postJson(s.port, '/v1/attention', K_TRANSPOSED,
    { 'Accept-Language': 'ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7' });
  assert.equal(r.status, 422);
  assert.equal(r.headers['content-language'], 'ko');
  assert.match(r.headers.vary, /Accept-Language/);
  const p = r.json();
  assert.equal(p.type, '/problems/shape-mismatch'); // type URIs stay as they are
  assert.equal(p.title, 'shape 가 맞지 않습니다');
  assert.equal(p.detail, 'q 는 열이 4 개인데 k 는 2 개입니다: Q @ K^T 를 하려면 둘 다 d_k 개의 열이 있어야 합니다');
  assert.equal(p.errors[0].pointer, '/k');
  assert.match(p.errors[0].hint, /전치/);
});

test('?lang wins over Accept-Language, both ways', async () => {
  const ko = await postJson(s.port, '/v1/attention?lang=ko', { q: [[1]], k: [[1]] },
    { 'Accept-Language': 'en' });
  assert.equal(ko.headers['content-language'], 'ko');
  assert.equal(ko.json().title, '필수 필드가 없습니다');
  const en = await postJson(s.port, '/v1/attention?lang=en', { q: [[1]], k: [[1]] },
    { 'Accept-Language': 'ko' });
  assert.equal(en.headers['content-language'], 'en');
  assert.equal(en.json().title, 'A required field is missing');
});

test('English by default and for a language attnd lacks; q=0 refuses Korean', async () => {
  for (const al of [undefined, 'fr-FR, de;q=0.9', 'ko;q=0, en;q=0.1', '*']) {
    const headers = al === undefined ? {} : { 'Accept-Language': al };
    const r = await postJson(s.port, '/v1/attention', { q: [[1]], k: [[1]] }, headers);
    assert.equal(r.headers['content-language'], 'en', String(al));
    assert.equal(r.json().title, 'A required field is missing', String(al));
  }
  // The first language listed that attnd has.
  const r = await postJson(s.port, '/v1/attention', { q: [[1]], k: [[1]] },
    { 'Accept-Language': 'fr, ja;q=0.9, ko;q=0.5, en;q=0.4' });
  assert.equal(r.headers['content-language'], 'ko');
});

test('?lang=fr is 422 invalid-value naming lang', async () => {
  const r = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&lang=fr' });
  assert.equal(r.status, 422);
  assert.equal(r.json().type, '/problems/invalid-value');
  assert.equal(r.json().parameter, 'lang');
});

test('a 200 says its language too, and the warning speaks it', async () => {
  const body = { ...SEED, mask: [[1, 1], [0, 0]] };
  const r = await postJson(s.port, '/v1/attention', body, { 'Accept-Language': 'ko' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-language'], 'ko');
  assert.match(r.headers.vary, /Accept-Language/);
  const w = r.json().warnings[0];
  assert.equal(w.code, 'row_fully_masked'); // codes stay as they are
  assert.equal(w.message, '쿼리 1: 어떤 키도 볼 수 없습니다 (마스크 행이 모든 키를 가립니다). 가중치와 출력은 0 입니다');
  // The numbers do not change with the language.
  const en = await postJson(s.port, '/v1/attention', body);
  assert.deepEqual(r.json().weights, en.json().weights);
  assert.equal(en.headers['content-language'], 'en');
});

test('/problems pages in Korean', async () => {
  const r = await request(s.port, { path: '/problems/numeric-overflow', headers: { 'Accept-Language': 'ko' } });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-language'], 'ko');
  assert.match(r.body, /<html lang="ko">/);
  assert.match(r.body, /<h1>단계가 계산 범위를 넘었습니다<\/h1>/);
  assert.match(r.body, /각 행의 최댓값을 먼저 빼기 때문입니다/);
});

test('a 404 speaks Korean too, and V2 errors keep their shape', async () => {
  const r = await request(s.port, { path: '/nowhere?lang=ko' });
  assert.equal(r.status, 404);
  assert.equal(r.json().title, '그런 엔드포인트는 없습니다');
  const v2 = await request(s.port, { path: '/v2/models/nope?lang=ko' });
  assert.equal(v2.status, 404);
  assert.equal(typeof v2.json().error, 'string');
  assert.equal(v2.headers['content-language'], 'ko');
});
