// tests/http/compression.test.mjs — gzip and deflate on the wire, both ways, as
// tritonclient (gzip.compress / zlib.compress), curl --compressed and browsers speak
// them: coded request bodies give the same answers as plain ones, a gzip bomb is a 413
// that never inflates past --max-body, damaged streams and unknown codings are refused
// with words that name the coding, and answers of 1 KiB or more are compressed as
// Accept-Encoding allows (q-values, `*`, identity;q=0), with Vary: Accept-Encoding on
// every answer that has a body.
//
// The requests here speak raw bytes (node's zlib makes the bodies and undoes the
// answers); every answer is checked against api/openapi.yaml once it is undone.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';

import { assertContract } from './contract.mjs';
import { SEED, assertProblem, logLinesFor, request, startServer } from './lib.mjs';

/** The process's peak resident set, in KiB. */
const peakKiB = (pid) =>
  Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m)[1]);

/** Undoes an answer's Content-Encoding (gzip, deflate as zlib format, or none). */
function undo(coding, raw) {
  if (coding === 'gzip') return zlib.gunzipSync(raw);
  if (coding === 'deflate') return zlib.inflateSync(raw);
  assert.equal(coding, undefined, `an unexpected Content-Encoding ${coding}`);
  return raw;
}

/**
 * One request on a fresh connection with the body as given: a Buffer (sent with its
 * Content-Length) or an array of Buffers (chunked, one write each). Resolves
 * {status, headers, raw (the bytes as sent), bytes (undone), body (undone, utf8), json()}.
 */
function send(port, { method = 'GET', path = '/', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const chunked = Array.isArray(body);
    const h = { ...headers };
    if (body !== undefined && !chunked) h['Content-Length'] = body.length;
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: h, agent: false },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          try {
            const raw = Buffer.concat(parts);
            const bytes = method === 'HEAD' ? raw : undo(res.headers['content-encoding'], raw);
            const out = { status: res.statusCode, headers: res.headers, body: bytes.toString('utf8') };
            assertContract({ method, path }, out);
            resolve({ ...out, raw, bytes, json: () => JSON.parse(out.body) });
          } catch (e) {
            reject(e);
          }
        });
        res.on('error', reject);
      });
    req.on('error', reject);
    if (chunked) for (const piece of body) req.write(piece);
    else if (body !== undefined) req.write(body);
    req.end();
  });
}

const JSON_TYPE = { 'Content-Type': 'application/json' };
const varyHasCoding = (r) => /(^|,)\s*Accept-Encoding\s*(,|$)/i.test(r.headers.vary ?? '');

/** A /v1/attention problem of n queries and keys (d 64), numbers as a numpy client writes them. */
function problem(n) {
  let x = 12345;
  const next = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648 - 0.5;
  };
  const m = () => Array.from({ length: n }, () => Array.from({ length: 64 }, next));
  return { q: m(), k: m(), v: m() };
}

describe('coded request bodies', () => {
  let s;
  before(async () => {
    s = await startServer();
  });
  after(async () => {
    await s.stop();
  });

  const bodies = [
    ['/v1/attention', SEED],
    ['/v1/attention/batch', { items: [SEED, { ...SEED, scale: 1 }] }],
    ['/v1/multihead', { heads: 2, random: { seed: 3, n: 3, d_model: 4 } }],
  ];

  test('gzip and deflate (zlib format) bodies give the plain body\'s answer, byte for byte', async () => {
    for (const [path, obj] of bodies) {
      const plain = Buffer.from(JSON.stringify(obj));
      const want = await send(s.port, { method: 'POST', path, headers: JSON_TYPE, body: plain });
      assert.equal(want.status, 200, want.body);
      const coded = [
        ['gzip', zlib.gzipSync(plain)], // tritonclient: gzip.compress
        ['deflate', zlib.deflateSync(plain)], // tritonclient: zlib.compress
        ['x-gzip', zlib.gzipSync(plain)],
        ['GZIP', zlib.gzipSync(plain, { level: 1 })],
        ['gzip, identity', zlib.gzipSync(plain)],
        ['identity', plain],
      ];
      for (const [coding, body] of coded) {
        const r = await send(s.port, {
          method: 'POST', path, headers: { ...JSON_TYPE, 'Content-Encoding': coding }, body,
        });
        assert.equal(r.status, 200, `${path} ${coding}: ${r.body}`);
        assert.ok(r.bytes.equals(want.bytes), `${path} ${coding}: the same answer`);
      }
    }
  });

  test('a coded body in chunks of every size, and as gzip members back to back', async () => {
    const plain = Buffer.from(JSON.stringify(problem(40)));
    const want = await send(s.port, { method: 'POST', path: '/v1/attention', headers: JSON_TYPE, body: plain });
    const z = zlib.gzipSync(plain);
    for (const size of [1, 7, 1000, 65536]) {
      const pieces = [];
      for (let i = 0; i < z.length; i += size) pieces.push(z.subarray(i, i + size));
      const r = await send(s.port, {
        method: 'POST', path: '/v1/attention', headers: { 'Content-Encoding': 'gzip' }, body: pieces,
      });
      assert.equal(r.status, 200, r.body);
      assert.ok(r.bytes.equals(want.bytes), `pieces of ${size}`);
    }
    const half = plain.length >> 1; // gzip(1) concatenates members; RFC 1952 allows it
    const members = Buffer.concat([zlib.gzipSync(plain.subarray(0, half)), zlib.gzipSync(plain.subarray(half))]);
    const r = await send(s.port, {
      method: 'POST', path: '/v1/attention', headers: { 'Content-Encoding': 'gzip' }, body: members,
    });
    assert.equal(r.status, 200, r.body);
    assert.ok(r.bytes.equals(want.bytes));
  });

  test('another coding, or two stacked, is 415 naming it', async () => {
    const plain = Buffer.from(JSON.stringify(SEED));
    for (const [coding, named] of [['br', 'br'], ['zstd', 'zstd'], ['compress', 'compress'],
      ['gzip, gzip', 'gzip'], ['gzip, br', 'br']]) {
      const r = await send(s.port, {
        method: 'POST', path: '/v1/attention', headers: { ...JSON_TYPE, 'Content-Encoding': coding }, body: plain,
      });
      const p = assertProblem(assert, r, 415);
      assert.equal(p.type, '/problems/unsupported-media-type');
      assert.ok(p.detail.includes(named), `${coding}: ${p.detail}`);
    }
  });

  test('a damaged, cut or mislabelled stream is 400 invalid-json naming the coding', async () => {
    const plain = Buffer.from(JSON.stringify(problem(8)));
    const gz = zlib.gzipSync(plain);
    const damaged = Buffer.from(gz);
    damaged[damaged.length >> 1] ^= 0xff;
    const cases = [
      ['gzip', Buffer.from(JSON.stringify(SEED))], // not coded at all
      ['gzip', gz.subarray(0, gz.length - 6)], // cut: the trailer is missing
      ['gzip', damaged],
      ['deflate', zlib.deflateRawSync(plain)], // raw deflate: HTTP's deflate is the zlib format
      ['deflate', zlib.deflateSync(plain).subarray(0, 20)],
      ['deflate', Buffer.concat([zlib.deflateSync(plain), Buffer.from('{}')])], // bytes after the end
      ['gzip', Buffer.alloc(0)],
    ];
    for (const [coding, body] of cases) {
      const r = await send(s.port, {
        method: 'POST', path: '/v1/attention', headers: { ...JSON_TYPE, 'Content-Encoding': coding }, body,
      });
      const p = assertProblem(assert, r, 400);
      assert.equal(p.type, '/problems/invalid-json');
      assert.ok(p.detail.includes(coding), `${coding} (${body.length} bytes): ${p.detail}`);
    }
    const ok = await request(s.port, { path: '/healthz' });
    assert.equal(ok.status, 200);
  });

  test('Content-Length counts the coded bytes: a coded body declared past --max-body is 413', async () => {
    const small = await startServer(['--max-body', '1000']);
    try {
      const plain = Buffer.from(JSON.stringify(problem(4))); // about 7 KB: over the limit
      const z = zlib.gzipSync(plain); // about 3 KB, still over
      const r = await send(small.port, {
        method: 'POST', path: '/v1/attention', headers: { 'Content-Encoding': 'gzip' }, body: z,
      });
      assert.equal(assertProblem(assert, r, 413).type, '/problems/too-large');
      // A coded body within the limit whose inflated size is not: 413 all the same.
      const tight = zlib.gzipSync(Buffer.from(JSON.stringify({ ...SEED, labels: { queries: ['a'.repeat(600), 'b'.repeat(600)] } })));
      assert.ok(tight.length < 1000);
      const r2 = await send(small.port, {
        method: 'POST', path: '/v1/attention', headers: { 'Content-Encoding': 'gzip' }, body: tight,
      });
      assert.equal(assertProblem(assert, r2, 413).type, '/problems/too-large');
    } finally {
      await small.stop();
    }
  });
});

describe('a gzip bomb', () => {
  let s;
  before(async () => {
    s = await startServer(['--max-body', String(2 << 20)]);
  });
  after(async () => {
    await s.stop();
  });

  test('1 GiB of zeros in about 1 MB is a 413 and the server never holds more than the limit', async () => {
    // Made here, as an attacker would: gzip -9 of 1 GiB of zeros, in about a megabyte.
    const gz = zlib.createGzip({ level: 9 });
    const out = [];
    gz.on('data', (d) => out.push(d));
    const done = new Promise((resolve, reject) => { gz.on('end', resolve); gz.on('error', reject); });
    const zeros = Buffer.alloc(1 << 20);
    for (let i = 0; i < 1024; i++) if (!gz.write(zeros)) await new Promise((r) => gz.once('drain', r));
    gz.end();
    await done;
    const bomb = Buffer.concat(out);
    assert.ok(bomb.length < (2 << 20), `the bomb is ${bomb.length} bytes: under the limit as sent`);

    const before0 = peakKiB(s.proc.pid);
    for (const body of [bomb, [bomb.subarray(0, 4096), bomb.subarray(4096)]]) { // declared, then chunked
      const r = await send(s.port, {
        method: 'POST', path: '/v1/attention',
        headers: { ...JSON_TYPE, 'Content-Encoding': 'gzip', 'X-Request-Id': 'bomb' }, body,
      });
      assert.equal(assertProblem(assert, r, 413).type, '/problems/too-large');
    }
    const grew = peakKiB(s.proc.pid) - before0;
    // 1 GiB inflated would be a million KiB; the limit is 2 MiB. A generous bound: 64 MiB.
    assert.ok(grew < 64 * 1024, `peak RSS grew by ${grew} KiB`);
    const lines = logLinesFor(await s.waitStderr((e) => logLinesFor(e, 'bomb').length === 2), 'bomb');
    for (const l of lines) assert.match(l, /status=413 /);
    assert.equal((await request(s.port, { path: '/healthz' })).status, 200);
  });
});

describe('coded answers', () => {
  let s;
  before(async () => {
    s = await startServer(['--threads', '2']);
  });
  after(async () => {
    await s.stop();
  });

  // /openapi.json is tens of KiB; /healthz is a few dozen bytes.
  const negotiation = [
    [undefined, undefined],
    ['gzip', 'gzip'],
    ['deflate', 'deflate'],
    ['gzip, deflate, br', 'gzip'],
    ['br', undefined],
    ['gzip;q=0', undefined],
    ['gzip;q=0, deflate', 'deflate'],
    ['gzip;q=0.5, deflate;q=0.8', 'deflate'],
    ['deflate;q=0.5, gzip;q=0.9', 'gzip'],
    ['*', 'gzip'],
    ['*;q=0.1, gzip;q=0', 'deflate'],
    ['identity', undefined],
    ['identity;q=0', undefined], // nothing else allowed: as is, rather than nothing
    ['gzip;q=2', undefined], // not a q-value: as if not sent
  ];

  test('Accept-Encoding chooses the coding (q-values, *, q=0), and every answer varies on it', async () => {
    const plain = await send(s.port, { path: '/openapi.json' });
    assert.ok(plain.bytes.length >= 1024);
    for (const [accept, want] of negotiation) {
      const headers = accept === undefined ? {} : { 'Accept-Encoding': accept };
      const r = await send(s.port, { path: '/openapi.json', headers });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-encoding'], want, `Accept-Encoding: ${accept}`);
      assert.ok(varyHasCoding(r), `Vary for ${accept}: ${r.headers.vary}`);
      assert.ok(r.bytes.equals(plain.bytes), `${accept}: the same bytes once undone`);
      if (want !== undefined) assert.ok(r.raw.length < plain.bytes.length / 2, `${accept}: compressed`);
    }
  });

  test('below 1 KiB nothing is compressed (unless identity is refused); Vary is still sent', async () => {
    for (const path of ['/healthz', '/version']) {
      const r = await send(s.port, { path, headers: { 'Accept-Encoding': 'gzip' } });
      assert.ok(r.bytes.length < 1024);
      assert.equal(r.headers['content-encoding'], undefined, path);
      assert.ok(varyHasCoding(r), path);
      const refused = await send(s.port, { path, headers: { 'Accept-Encoding': 'gzip, identity;q=0' } });
      assert.equal(refused.headers['content-encoding'], 'gzip', path);
      assert.ok(refused.bytes.equals(r.bytes));
    }
    // A problem is an answer like the others.
    const nf = await send(s.port, { path: '/nowhere', headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(nf.status, 404);
    assert.ok(varyHasCoding(nf));
    assert.equal(nf.headers['content-encoding'], nf.bytes.length >= 1024 ? 'gzip' : undefined);
  });

  test('HEAD gets the headers GET gets, coded, without a body; 204 has neither', async () => {
    const h = { 'Accept-Encoding': 'gzip' };
    const get = await send(s.port, { path: '/openapi.json', headers: h });
    const head = await send(s.port, { method: 'HEAD', path: '/openapi.json', headers: h });
    assert.equal(head.status, 200);
    assert.equal(head.raw.length, 0);
    for (const name of ['content-type', 'content-encoding', 'vary'])
      assert.equal(head.headers[name], get.headers[name], name);
    // GET's coded length, which a large answer's chunks do not announce: HEAD tells it.
    assert.equal(Number(head.headers['content-length']), get.raw.length);
    const small = await send(s.port, { path: '/v1/shapes?n=4&d_model=8&heads=2', headers: h });
    const smallHead = await send(s.port, { method: 'HEAD', path: '/v1/shapes?n=4&d_model=8&heads=2', headers: h });
    assert.equal(small.headers['content-encoding'], 'gzip');
    assert.equal(small.headers['content-length'], String(small.raw.length));
    assert.equal(smallHead.headers['content-length'], small.headers['content-length']);
    assert.equal(smallHead.headers['content-encoding'], 'gzip');
    const pre = await send(s.port, {
      method: 'OPTIONS', path: '/v1/attention',
      headers: { ...h, Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['content-encoding'], undefined);
    assert.ok(!varyHasCoding(pre));
  });

  test('a large answer in pieces is compressed as it is sent, and undoes to the same bytes', async () => {
    const body = Buffer.from(JSON.stringify(problem(512))); // an answer of about 20 MB
    const plain = await send(s.port, { method: 'POST', path: '/v1/attention', headers: JSON_TYPE, body });
    assert.equal(plain.status, 200);
    assert.ok(plain.bytes.length > 10e6);
    for (const coding of ['gzip', 'deflate']) {
      const id = `large-${coding}`;
      const r = await send(s.port, {
        method: 'POST', path: '/v1/attention',
        headers: { ...JSON_TYPE, 'Accept-Encoding': coding, 'X-Request-Id': id }, body,
      });
      assert.equal(r.headers['content-encoding'], coding);
      assert.equal(r.headers['transfer-encoding'], 'chunked');
      assert.ok(r.bytes.equals(plain.bytes), `${coding}: byte for byte`);
      assert.ok(r.raw.length < plain.bytes.length * 0.7, `${coding}: ${r.raw.length} bytes`);
      // The access log tells the coded bytes that went out, not the answer's size.
      const [line] = logLinesFor(await s.waitStderr((e) => logLinesFor(e, id).length > 0), id);
      assert.match(line, new RegExp(` status=200 bytes=${r.raw.length} `));
    }
  });

  test('a coded answer cut off by --timeout is logged as cut with the coded bytes known sent, and its memory given back', async () => {
    const c = await startServer(['--timeout', '1', '--log', 'json']);
    try {
      const body = '{"heads":1,"random":{"seed":1,"n":512,"d_model":8}}'; // an answer of about 28 MB
      const whole = await send(c.port, {
        method: 'POST', path: '/v1/multihead', headers: { ...JSON_TYPE, 'Accept-Encoding': 'gzip' }, body: Buffer.from(body),
      });
      assert.equal(whole.headers['content-encoding'], 'gzip');
      const sock = net.connect(c.port, '127.0.0.1', () => {
        sock.write(`POST /v1/multihead HTTP/1.1\r\nHost: t\r\nX-Request-Id: cut-gz\r\nAccept-Encoding: gzip\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      });
      sock.on('error', () => {});
      sock.once('data', () => sock.pause()); // read the first piece, then stop reading
      const err = await c.waitStderr((e) => e.includes('"id":"cut-gz"'), 15000);
      sock.destroy();
      const line = JSON.parse(err.split('\n').find((l) => l.includes('"id":"cut-gz"')));
      assert.equal(line.status, 200);
      assert.equal(line.outcome, 'cut');
      assert.ok(line.bytes > 0 && line.bytes < whole.raw.length, `${line.bytes} of ${whole.raw.length} coded bytes`);
      let held;
      for (let i = 0; i < 40; i++) {
        const m = (await request(c.port, { path: '/metrics' })).body.match(/^attnd_memory_held_bytes (\d+)$/m);
        held = Number(m[1]);
        if (held === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(held, 0, 'the answer, zlib\'s state and its block are given back');
    } finally {
      await c.stop();
    }
  });

  test('curl --compressed gets gzip and undoes it', async () => {
    const plain = await send(s.port, { path: '/openapi.yaml' });
    const r = spawnSync('curl', ['-sS', '--compressed', '-D', '-', `http://127.0.0.1:${s.port}/openapi.yaml`],
      { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 0, r.stderr);
    const [head, ...rest] = r.stdout.split('\r\n\r\n');
    assert.match(head, /^content-encoding: gzip$/im);
    assert.match(head, /^vary: .*Accept-Encoding/im);
    assert.equal(rest.join('\r\n\r\n'), plain.body);
  });

  test('with a list of origins, Vary names both', async () => {
    const c = await startServer(['--cors-origin', 'http://localhost:3000, https://app.example']);
    try {
      const r = await send(c.port, { path: '/openapi.json', headers: { Origin: 'https://app.example', 'Accept-Encoding': 'gzip' } });
      assert.equal(r.headers['content-encoding'], 'gzip');
      assert.match(r.headers.vary, /\bOrigin\b/);
      assert.ok(varyHasCoding(r));
    } finally {
      await c.stop();
    }
  });
});
