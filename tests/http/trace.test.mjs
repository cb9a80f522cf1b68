// tests/http/trace.test.mjs — following one request through: the W3C traceparent (echoed,
// logged, or ignored when invalid), the request id as every problem's `instance`, and an
// access log that a path cannot turn around (bidi and C1 controls escaped).

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import { SEED, assertProblem, logLinesFor, postJson, request, startServer } from './lib.mjs';

// The example of the W3C Trace Context specification (section 3.2.2).
const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceparent', () => {
  let s;
  before(async () => {
    s = await startServer();
  });
  after(async () => {
    await s.stop();
  });

  test('a valid one is echoed on the answer and written to the access log', async () => {
    const r = await postJson(s.port, '/v1/attention', SEED, { traceparent: VALID, 'X-Request-Id': 'tp-ok' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.traceparent, VALID);
    const unsampled = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
    const u = await request(s.port, { path: '/healthz', headers: { traceparent: unsampled } });
    assert.equal(u.headers.traceparent, unsampled);
    const err = await s.waitStderr((e) => e.includes('id=tp-ok '));
    const line = logLinesFor(err, 'tp-ok');
    assert.equal(line.length, 1);
    assert.ok(line[0].endsWith(` traceparent=${VALID}`), line[0]);
  });

  test('an invalid one is ignored: the request is served, nothing echoed or logged', async () => {
    const bad = {
      'uppercase hex': '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01',
      'all-zero trace-id': '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      'all-zero parent-id': '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      'version ff': 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'a version other than 00': '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'trace-id one short': '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      'a byte too many': `${VALID}0`,
      'underscores for dashes': VALID.replaceAll('-', '_'),
      'not hex': '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01',
      empty: '',
    };
    for (const [why, value] of Object.entries(bad)) {
      const id = `tp-bad-${why.replaceAll(' ', '-')}`;
      const r = await postJson(s.port, '/v1/attention', SEED, { traceparent: value, 'X-Request-Id': id });
      assert.equal(r.status, 200, why);
      assert.equal(r.headers.traceparent, undefined, why);
      const err = await s.waitStderr((e) => e.includes(`id=${id} `));
      assert.doesNotMatch(logLinesFor(err, id)[0], /traceparent/, why);
    }
  });
});

describe('instance: every problem names its request', () => {
  let s;
  before(async () => {
    s = await startServer(['--max-body', '64', '--admin-port', '0']);
  });
  after(async () => {
    await s.stop();
  });

  test('/v1 problems of each kind, with a sent id and with a generated one', async () => {
    const sent = await request(s.port, { path: '/nope', headers: { 'X-Request-Id': 'inst-404' } });
    assert.equal(assertProblem(assert, sent, 404).instance, 'inst-404');
    const made = await request(s.port, { path: '/nope' });
    assert.match(assertProblem(assert, made, 404).instance, /^[0-9a-f]{16}$/);
    assertProblem(assert, await postJson(s.port, '/v1/attention', { q: 1 }), 422);
    assertProblem(assert, await request(s.port, { method: 'DELETE', path: '/v1/attention' }), 405);
    assertProblem(assert, await postJson(s.port, '/v1/attention', { q: Array(40).fill(1) }), 413);
    assertProblem(assert, await request(s.port, {
      method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'image/png' }, body: '{}',
    }), 415);
  });

  test('V2 errors and the admin port\'s problems carry it too', async () => {
    const v2 = await request(s.port, {
      method: 'POST', path: '/v2/models/attention/infer',
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'inst-v2' }, body: '{}',
    });
    assert.equal(v2.status, 400);
    assert.equal(v2.json().instance, 'inst-v2');
    assert.equal(typeof v2.json().error, 'string');
    const m = s.stdout().match(/^attnd admin listening on http:\/\/\S+:(\d+)$/m);
    const admin = await request(Number(m[1]), { path: '/nope', headers: { 'X-Request-Id': 'inst-admin' } });
    assert.equal(assertProblem(assert, admin, 404).instance, 'inst-admin');
  });

  test('malformed HTTP answered by the server itself has it', async () => {
    const sock = net.connect(s.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nX-Request-Id: inst-400\r\n\r\n');
    let text = '';
    sock.setEncoding('utf8');
    for await (const d of sock) text += d;
    assert.match(text, /^HTTP\/1\.1 400 /);
    assert.equal(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).instance, 'inst-400');
  });
});

describe('the JSON access log escapes what would turn a line around', () => {
  test('C1 controls, bidi controls and line separators become \\u escapes', async () => {
    const s = await startServer(['--log', 'json']);
    try {
      // U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, U+0085 NEXT LINE (C1),
      // U+2028 LINE SEPARATOR, U+200F RIGHT-TO-LEFT MARK; é stays as it is.
      const path = '/x%E2%80%AEgpj.exe%E2%81%A6%C2%85%E2%80%A8%E2%80%8F%C3%A9';
      const r = await request(s.port, { path, headers: { 'X-Request-Id': 'esc-1' } });
      assert.equal(r.status, 404);
      const err = await s.waitStderr((e) => e.includes('"id":"esc-1"'));
      const raw = err.split('\n').find((l) => l.includes('"id":"esc-1"'));
      assert.ok(raw.includes('"path":"/x\\u202egpj.exe\\u2066\\u0085\\u2028\\u200f\u00e9"'), raw);
      for (const ch of ['\u202e', '\u2066', '\u0085', '\u2028', '\u200f']) {
        assert.ok(!raw.includes(ch), `raw U+${ch.codePointAt(0).toString(16)} in ${raw}`);
      }
      assert.equal(JSON.parse(raw).path, '/x\u202egpj.exe\u2066\u0085\u2028\u200f\u00e9');
    } finally {
      await s.stop();
    }
  });
});
