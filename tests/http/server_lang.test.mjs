// tests/http/server_lang.test.mjs — the server's own problems (malformed HTTP, an unknown
// transfer or content coding, a coded body that does not inflate, the over-long query, a
// refused connection, the admin port's 404) speak the request's language as api/'s
// answers do: with Accept-Language: ko or ?lang=ko the status and type are unchanged,
// Content-Language is ko (with Vary: Accept-Language), and the title and detail are the
// Korean rows of api/i18n/messages_ko.c; in English they are as they always were.

import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';

import { assertProblem, inFlightReaches, openMany, rawConnect, request, sleep, startServer } from './lib.mjs';

let s;
let admin;
before(async () => {
  s = await startServer(['--admin-port', '0']);
  admin = Number(s.stdout().match(/^attnd admin listening on http:\/\/\S+:(\d+)$/m)[1]);
});
after(async () => {
  await s.stop();
});

const HANGUL = /[\uac00-\ud7a3]/;
// What stays as it is in Korean: header and field names, RFC numbers, codings, flags.
const KEPT = /RFC|section|Host|HTTP|Content-Length|Transfer-Encoding|Content-Encoding|Content-Type|chunked|attnd|NUL|POST|GET|HEAD|gzip|deflate|zlib|format|JSON|healthz|readyz|metrics|max-client-connections/g;

/** p's title and detail are Korean: Hangul, and no English word but the kept ones. */
function assertKorean(p) {
  for (const text of [p.title, p.detail]) {
    assert.match(text, HANGUL);
    const english = text.replace(/"incorrect header check"/, '').replace(KEPT, '').match(/[A-Za-z]{2,}/g);
    assert.equal(english, null, `English left in ${JSON.stringify(text)}`);
  }
}

/** The one answer to raw on a fresh connection (which the server closes after it). */
async function rawAnswer(raw) {
  const c = await rawConnect(s.port);
  await c.write(raw);
  const r = await c.nextResponse(3000);
  c.sock.destroy();
  return r;
}

/** r is a problem of status and type in language lang; its body, parsed. */
function assertSpoken(r, status, type, lang) {
  assert.equal(r.status, status, r.body);
  assert.match(r.headers['content-type'], /^application\/problem\+json/);
  assert.equal(r.headers['content-language'], lang);
  assert.match(r.headers.vary, /Accept-Language/);
  const p = JSON.parse(r.body);
  assert.equal(p.type, `/problems/${type}`);
  assert.equal(p.status, status);
  return p;
}

// Each case: the request in either language, and the words expected in each.
const FRAMING = [
  {
    name: 'two Host headers (400)',
    raw: (lang) => `GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n${lang}\r\n`,
    status: 400,
    type: 'bad-request',
    en: ['The request is malformed HTTP',
      'the request has more than one Host header (RFC 9112 section 3.2)'],
    ko: ['요청이 잘못된 HTTP 입니다', '요청에 Host 헤더가 둘 이상 있습니다 (RFC 9112 section 3.2)'],
  },
  {
    name: 'Content-Length with Transfer-Encoding (400)',
    raw: (lang) => 'POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Length: 7\r\n' +
      `Transfer-Encoding: chunked\r\n${lang}\r\n2\r\n{}\r\n0\r\n\r\n`,
    status: 400,
    type: 'bad-request',
    en: ['The request is malformed HTTP', 'the request has both Content-Length and ' +
      'Transfer-Encoding (RFC 9112 section 6.3): send one of them'],
    ko: ['요청이 잘못된 HTTP 입니다', '요청에 Content-Length 와 Transfer-Encoding 이 함께 ' +
      '있습니다 (RFC 9112 section 6.3): 둘 중 하나만 보내세요'],
  },
  {
    name: 'an unknown transfer coding (501)',
    raw: (lang) => `POST /v1/attention HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n${lang}\r\n{}`,
    status: 501,
    type: 'not-implemented',
    en: ['Transfer coding not implemented', 'attnd reads the chunked transfer coding alone: ' +
      'send "Transfer-Encoding: chunked" or a Content-Length'],
    ko: ['구현하지 않은 전송 코딩입니다', 'attnd 는 chunked 전송 코딩만 읽습니다: ' +
      '"Transfer-Encoding: chunked" 나 Content-Length 로 보내세요'],
  },
  {
    name: 'a NUL in the target (400)',
    raw: (lang) => `GET /healthz%00x HTTP/1.1\r\nHost: t\r\n${lang}\r\n`,
    status: 400,
    type: 'bad-request',
    en: ['The request is malformed HTTP', 'the target has a NUL byte (%00), which would cut ' +
      'the path or a parameter short: leave it out'],
    ko: ['요청이 잘못된 HTTP 입니다', '요청 대상에 NUL 바이트 (%00) 가 있어 경로나 매개변수가 ' +
      '중간에 잘립니다: 빼고 보내세요'],
  },
  {
    name: '300 query parameters (414)',
    raw: (lang) => `GET /v1/shapes?${'a=1&'.repeat(300)}n=2 HTTP/1.1\r\nHost: t\r\n${lang}\r\n`,
    status: 414,
    type: 'uri-too-long',
    en: ['The query is too long',
      'the query has more than 256 parameters or 16384 bytes: send the data in a POST body'],
    ko: ['쿼리가 너무 깁니다', '쿼리 문자열의 매개변수가 256 개보다 많거나 16384 바이트보다 ' +
      '깁니다: 데이터는 POST 본문으로 보내세요'],
  },
];

for (const c of FRAMING) {
  test(`${c.name}: Korean with Accept-Language: ko, English without`, async () => {
    const ko = assertSpoken(await rawAnswer(c.raw('Accept-Language: ko-KR, en;q=0.5\r\n')),
      c.status, c.type, 'ko');
    assert.deepEqual([ko.title, ko.detail], c.ko);
    assertKorean(ko);
    const en = assertSpoken(await rawAnswer(c.raw('')), c.status, c.type, 'en');
    assert.deepEqual([en.title, en.detail], c.en);
  });
}

test('?lang=ko speaks Korean on a framing problem; ?lang=fr there is English, not a 422', async () => {
  const ko = assertSpoken(await rawAnswer('GET /healthz?lang=ko HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'),
    400, 'bad-request', 'ko');
  assert.equal(ko.detail, FRAMING[0].ko[1]);
  // The framing is what is wrong: the answer says so, in English, rather than refuse the lang.
  const fr = assertSpoken(await rawAnswer('GET /healthz?lang=fr HTTP/1.1\r\nHost: a\r\nHost: b\r\n' +
    'Accept-Language: ko\r\n\r\n'), 400, 'bad-request', 'en');
  assert.equal(fr.detail, FRAMING[0].en[1]);
});

test('an unknown Content-Encoding (415) in Korean names the coding as sent', async () => {
  const post = (path, headers) => request(s.port, { method: 'POST', path, body: '{}',
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'br', ...headers } });
  const ko = assertSpoken(await post('/v1/attention?lang=ko', {}), 415, 'unsupported-media-type', 'ko');
  assert.equal(ko.title, '지원하지 않는 Content-Type 입니다');
  assertKorean({ title: ko.title, detail: ko.detail.replace('br', '') });
  assert.equal(ko.detail, 'attnd 가 풀 수 없는 Content-Encoding 입니다 (br): 본문을 그대로, ' +
    '또는 gzip 이나 deflate 로 보내세요');
  const en = assertSpoken(await post('/v1/attention', {}), 415, 'unsupported-media-type', 'en');
  assert.equal(en.detail, 'Content-Encoding br is not a coding attnd can undo: send the body as ' +
    'is, or as gzip or deflate');
});

test('a gzip body cut short (400 invalid-json) says where it ended, in Korean', async () => {
  const whole = zlib.gzipSync(Buffer.from('{"q": [[1, 0]], "k": [[1, 0]], "v": [[1, 2]]}'));
  const cut = whole.subarray(0, whole.length - 6); // the trailer's checksum is missing
  const post = (headers) => request(s.port, { method: 'POST', path: '/v1/attention', body: cut,
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...headers } });
  const ko = assertSpoken(await post({ 'Accept-Language': 'ko' }), 400, 'invalid-json', 'ko');
  assert.equal(ko.title, '본문이 올바른 JSON 이 아닙니다');
  assert.equal(ko.detail, 'gzip 본문 (Content-Encoding: gzip) 의 스트림이 끝나기 전에 본문이 ' +
    `${cut.length} 바이트에서 끝납니다: 중간에 잘렸거나, 애초에 gzip 형식이 아닙니다`);
  assertKorean(ko);
  const en = assertSpoken(await post({}), 400, 'invalid-json', 'en');
  assert.equal(en.detail, `the gzip body (Content-Encoding: gzip) ends before its stream does, ` +
    `after ${cut.length} bytes: it was cut short, or is not gzip at all`);
});

test('a body that is not gzip at all: Korean words around zlib\'s own', async () => {
  const post = (headers) => request(s.port, { method: 'POST', path: '/v1/attention', body: '{"q": 1}',
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', ...headers } });
  const ko = assertSpoken(await post({ 'Accept-Language': 'ko' }), 400, 'invalid-json', 'ko');
  // '{' is no gzip magic: zlib stops at the header's second byte.
  assert.equal(ko.detail, '본문이 올바른 gzip 형식이 아닙니다 (Content-Encoding: gzip): zlib 의 ' +
    '말로 "incorrect header check", 본문의 2 바이트를 읽은 뒤입니다');
  assertKorean(ko); // zlib's own words are quoted, as zlib says them
  const en = assertSpoken(await post({}), 400, 'invalid-json', 'en');
  assert.equal(en.detail, 'the body is not valid gzip (Content-Encoding: gzip): incorrect header ' +
    'check, after 2 bytes of it');
});

test('bytes after a deflate stream: every word Korean', async () => {
  const body = Buffer.concat([zlib.deflateSync(Buffer.from('{}')), Buffer.from('x')]);
  const r = await request(s.port, { method: 'POST', path: '/v1/attention?lang=ko', body,
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'deflate' } });
  const p = assertSpoken(r, 400, 'invalid-json', 'ko');
  assert.equal(p.detail, '본문이 올바른 deflate (zlib format) 형식이 아닙니다 (Content-Encoding: ' +
    `deflate): 스트림이 끝난 뒤에도 바이트가 있습니다. 본문의 ${body.length - 1} 바이트를 읽은 뒤입니다`);
  assertKorean(p);
});

test('the admin port\'s 404 speaks Korean too', async () => {
  const ko = await request(admin, { path: '/elsewhere', headers: { 'Accept-Language': 'ko' } });
  const p = assertSpoken(ko, 404, 'not-found', 'ko');
  assert.equal(p.title, '그런 엔드포인트는 없습니다');
  assert.equal(p.detail, '관리 포트는 /healthz, /readyz, /metrics 의 GET 과 HEAD 만 받습니다. ' +
    '나머지는 모두 주 포트에 있습니다');
  assertKorean(p);
  const en = assertSpoken(await request(admin, { path: '/elsewhere' }), 404, 'not-found', 'en');
  assert.equal(en.detail, 'the admin port serves GET and HEAD of /healthz, /readyz and /metrics ' +
    'only; everything else is on the main port');
});

test('the 503 for one connection too many, in Korean, with Retry-After', async (t) => {
  const one = await startServer(['--max-client-connections', '1', '--log', 'off']);
  t.after(() => one.proc.kill('SIGKILL'));
  const [held] = await openMany(one.port, 1);
  await sleep(200);
  const ko = await request(one.port, { path: '/healthz', headers: { 'Accept-Language': 'ko' } });
  const p = assertProblem(assert, ko, 503);
  assert.equal(ko.headers['content-language'], 'ko');
  assert.equal(ko.headers['retry-after'], '1');
  assert.equal(p.title, '서비스를 쓸 수 없습니다');
  assert.equal(p.detail, '이 클라이언트는 서버가 클라이언트 하나에 허용하는 만큼 연결을 이미 ' +
    '열었습니다 (--max-client-connections): 다음 요청은 열린 연결 가운데 하나로 보내세요');
  assertKorean(p);
  const en = await request(one.port, { path: '/healthz' });
  assert.equal(assertProblem(assert, en, 503).detail, 'this client has as many connections open ' +
    'as the server allows one client (--max-client-connections): send the next request on one of them');
  assert.equal(en.headers['content-language'], 'en');
  held.destroy();
  await one.stop();
});

test('the memory budget\'s 503 for a body it cannot store, in Korean with its hint', async (t) => {
  // As in limits.test.mjs: one unread answer of 26 MB holds an 8 MiB budget, so a 1 MiB
  // body is refused as it arrives, by the server (not api/'s admission).
  const s2 = await startServer(['--log', 'off', '--threads', '2', '--max-memory', String(8 << 20),
    '--max-request-bytes', String(64 << 20)]);
  t.after(() => s2.proc.kill('SIGKILL'));
  const held = async () => Number((await request(s2.port, { path: '/metrics' })).body
    .match(/^attnd_memory_held_bytes (\d+)$/m)[1]);
  const slow = await rawConnect(s2.port);
  slow.sock.pause(); // read nothing: the answer waits in the server
  const body = JSON.stringify({ heads: 2, random: { seed: 1, n: 360, d_model: 64 } });
  await slow.write('POST /v1/multihead HTTP/1.1\r\nHost: attnd\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n\r\n${body}`);
  for (let waited = 0; waited < 60000 && await held() <= 20e6; waited += 50) await sleep(50);
  const big = await request(s2.port, { method: 'POST', path: '/v1/attention',
    headers: { 'Content-Type': 'application/json', 'Accept-Language': 'ko' }, body: ' '.repeat(1 << 20) });
  const p = assertProblem(assert, big, 503);
  assert.equal(big.headers['content-language'], 'ko');
  assert.equal(big.headers['retry-after'], '1');
  assert.equal(p.title, '서비스를 쓸 수 없습니다');
  assert.equal(p.detail, '서버의 메모리 예산이 차 있습니다 (클라이언트를 기다리는 응답, 계산 중인 ' +
    '요청). 이 요청은 약 1.0 MB 가 더 필요합니다');
  assert.equal(p.hint, '요청에는 잘못이 없습니다: Retry-After 초 뒤에, 또는 다른 복제본에서 다시 ' +
    '시도하세요. 예산은 운영자가 --max-memory 로 정합니다');
  slow.sock.destroy();
  await s2.stop();
});

test('after SIGTERM, the 503 on a kept-alive connection speaks Korean when asked', async () => {
  const s3 = await startServer(['--admin-port', '0']);
  // A keeps the server draining (half a body); B has had one answer and stays open.
  const a = await rawConnect(s3.port);
  await a.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    'Content-Length: 200\r\n\r\n{"q":');
  const b = await rawConnect(s3.port);
  await b.write('GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n');
  assert.equal((await b.nextResponse()).status, 200);
  await inFlightReaches(s3, 1);
  s3.proc.kill('SIGTERM');
  await s3.waitStderr((e) => e.includes('shutting down'));
  await b.write('GET /healthz?lang=ko HTTP/1.1\r\nHost: t\r\n\r\n');
  const p = assertSpoken(await b.nextResponse(), 503, 'unavailable', 'ko');
  assert.equal(p.title, '서비스를 쓸 수 없습니다');
  assert.equal(p.detail, '서버가 종료하는 중입니다');
  a.sock.destroy(); // nothing is in flight any more: the server exits
  await s3.stop();
});

test('on a V2 path too: the server\'s 415 for a Content-Encoding is in Korean, in the V2 form', async () => {
  const r = await request(s.port, { method: 'POST', path: '/v2/models/attention/infer',
    body: '{}', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'br',
      'Accept-Language': 'ko' } });
  assert.equal(r.status, 415, r.body);
  assert.equal(r.headers['content-type'], 'application/json'); // every answer on /v2 carries "error"
  assert.equal(r.headers['content-language'], 'ko');
  const p = JSON.parse(r.body);
  assert.equal(p.type, '/problems/unsupported-media-type');
  assert.equal(p.detail, 'attnd 가 풀 수 없는 Content-Encoding 입니다 (br): 본문을 그대로, ' +
    '또는 gzip 이나 deflate 로 보내세요');
  assert.equal(p.error, p.detail);
});
