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

// Sentences a condition picks between: each is its own catalogued message, so each has
// its Korean (they once reached Korean clients in English).
test('the sentences a condition picks between are Korean too', async () => {
  const q = (data = [1], datatype = 'FP64', name = 'Q') => ({ name, shape: [1, 1], datatype, data });
  const qkv = [q(), q([1], 'FP64', 'K'), q([1], 'FP64', 'V')];
  const cases = [
    ['/v1/attention', { q: [[1]], k: [[1]], v: [[1]], explain: 1 },
      'hint', '풀어 볼 쿼리 행을 지정하세요: {"row": 0}'],
    ['/v1/multihead', { heads: 2, random: { seed: 3, n: 3, d_model: 4 }, explain: 1 },
      'hint', '쿼리 행과 헤드를 지정하세요: {"row": 0, "head": 0}'],
    ['/v2/models/attention/infer', { inputs: [{ name: 'Q', shape: [1, 1], data: [1] }] },
      'detail', 'inputs[0] 에 datatype 이 없습니다'],
    ['/v2/models/attention/infer', { inputs: [q([1], 'FP8')] },
      'detail', 'inputs[0].datatype 은 attnd 가 읽는 형식이 아닙니다'],
    ['/v2/models/attention/infer', { inputs: [{ ...q(), shape: [0, 1], data: [] }] },
      'detail', 'inputs[0].shape[0] 은 1 이상의 크기가 아닙니다'],
    ['/v2/models/attention/infer', { inputs: [{ ...q(), shape: [4194304, 4194304], data: [] }] },
      'detail', 'inputs[0] 의 원소가 4194304 개보다 많습니다'],
    ['/v2/models/attention/infer', { inputs: [q([true], 'BOOL'), ...qkv.slice(1)] },
      'hint', 'FP32, FP64, FP16, BF16 중 하나로 보내세요 (INT32 와 INT64 도 읽습니다)'],
    ['/v2/models/attention/infer', { inputs: [...qkv, q([1], 'FP32', 'MASK')] },
      'hint', '마스크는 BOOL 이거나, 0 과 1 로 된 UINT8, INT8, INT32, INT64 입니다'],
  ];
  for (const [path, body, part, korean] of cases) {
    const r = await postJson(s.port, `${path}?lang=ko`, body);
    assert.ok(r.status === 400 || r.status === 422, `${path} ${r.status}`);
    assert.equal(r.json().errors[0][part], korean, JSON.stringify(body));
  }
});
