// tests/http/reader_lang.test.mjs — the JSON reader's own words (what it found, where it
// stopped) inside a Korean invalid-json: no English is left of them, the line, column
// and byte are the same numbers as in English, and English is as it was.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

const post = (body, headers = {}) => request(s.port, { method: 'POST', path: '/v1/attention',
  body, headers: { 'Content-Type': 'application/json', ...headers } });

/** The words of a detail once the kept names (JSON, UTF-8) and quoted data are taken out. */
const englishLeft = (detail) =>
  detail.replace(/JSON|UTF-8|'[^']*'|"[^"]*"/g, '').match(/[A-Za-z]{2,}/g);

const CASES = [
  {
    name: 'a body cut short',
    body: '{"q": [[1, 0], [0, 1]',
    ko: "본문이 올바른 JSON 이 아닙니다: 여기에는 ',' 또는 ']' 만 올 수 있는데 본문의 끝 입니다 (줄 1, 열 22, 바이트 21)",
    en: "the body is not valid JSON: ',' or ']' expected, not the end of the body at line 1, column 22 (byte 21)",
  },
  {
    name: 'a character that is no JSON',
    body: '{"q": [[1, 0]],\n "k": [[1, 0]], v: [[1]]}',
    ko: "본문이 올바른 JSON 이 아닙니다: 문자열 키가 와야 하는데 'v' 입니다 (줄 2, 열 17, 바이트 32)",
    en: "the body is not valid JSON: a string key expected, not 'v' at line 2, column 17 (byte 32)",
  },
  {
    name: 'a form feed after the object',
    body: '{"q": [[1]]}\f',
    ko: '본문이 올바른 JSON 이 아닙니다: JSON 값 뒤에 남는 데이터가 있습니다: 바이트 0x0c (줄 1, 열 13, 바이트 12)',
    en: 'the body is not valid JSON: extra data after the JSON value: byte 0x0c at line 1, column 13 (byte 12)',
  },
];

for (const c of CASES) {
  test(`${c.name}: the reader speaks Korean with Accept-Language: ko`, async () => {
    const ko = await post(c.body, { 'Accept-Language': 'ko' });
    const p = assertProblem(assert, ko, 400);
    assert.equal(p.type, '/problems/invalid-json');
    assert.equal(ko.headers['content-language'], 'ko');
    assert.equal(p.detail, c.ko);
    assert.equal(englishLeft(p.detail), null, p.detail);
    const en = assertProblem(assert, await post(c.body), 400);
    assert.equal(en.detail, c.en);
  });
}

test('?lang=ko does the same for a V2 request\'s JSON header', async () => {
  const r = await request(s.port, { method: 'POST', path: '/v2/models/attention/infer?lang=ko',
    body: '{"inputs": [', headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 400);
  const p = JSON.parse(r.body);
  assert.equal(p.type, '/problems/invalid-json');
  assert.match(p.detail, /^본문이 올바른 JSON 이 아닙니다: 값이 와야 하는데 본문의 끝 입니다 /);
  assert.equal(englishLeft(p.detail), null, p.detail);
});
