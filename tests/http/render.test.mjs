// tests/http/render.test.mjs — text/plain and image/svg+xml over HTTP, the playground's
// files, and CORS on both.
//
// Every SVG is checked by a real XML parser (Debian's python3 xml.dom.minidom), and
// the seed 002 heatmap is compared byte for byte with tests/data/seed002_heatmap.svg.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { CORS_EXPOSED, SEED, assertProblem, postJson, request, startServer } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const REFERENCE = path.join(here, '..', 'data', 'seed002_heatmap.svg');
const SEED002 = {
  q: [[1, 0], [0, 1], [0.5, 0.5]],
  k: [[1, 0], [0, 1], [0.8, 0.2]],
  v: [[10, 0], [0, 20], [8, 4]],
  scale: 1,
  labels: { queries: ['Q1', 'Q2', 'Q3'], keys: ['사과', '사람', '과일'] },
};

/** Parses an XML document with python3's parser; returns the root's name and every text. */
function parseXml(text) {
  const script = [
    'import sys, json, xml.dom.minidom as m',
    'd = m.parseString(sys.stdin.buffer.read())',
    'texts = [t.firstChild.data for t in d.getElementsByTagName("text") if t.firstChild]',
    'print(json.dumps({"root": d.documentElement.tagName, "texts": texts,',
    '  "rects": len(d.getElementsByTagName("rect"))}))',
  ].join('\n');
  const out = execFileSync('/usr/bin/python3', ['-c', script], { input: text, encoding: 'utf8' });
  return JSON.parse(out);
}

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

describe('text/plain', () => {
  test('Accept: text/plain and ?format=text give the same aligned page', async () => {
    const a = await postJson(s.port, '/v1/attention', SEED, { Accept: 'text/plain' });
    const b = await postJson(s.port, '/v1/attention?format=text', SEED);
    for (const r of [a, b]) {
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    }
    assert.equal(a.body, b.body);
    assert.match(a.body, /^attention {2}q \(2, 4\) {2}k \(2, 4\) {2}v \(2, 2\) {2}mask none {2}d_k 4 {2}scale 0\.5\n/);
    assert.match(a.body, /\n {2}q1 {2}0\.2689 {2}0\.7311 \| 1\.0000\n/);
    assert.match(a.body, /\nsummary\n {2}query {2}argmax {2}max_weight {2}entropy\n/);
    for (let step = 1; step <= 5; step++) assert.match(a.body, new RegExp(`\\nstep ${step} `));
  });

  test('Korean labels line up by display width', async () => {
    const r = await postJson(s.port, '/v1/attention?format=text', { ...SEED002, include: ['weights'] });
    assert.equal(r.status, 200);
    const block = r.body.split('\n').filter((l) => /^ {2}(Q\d| {4})/.test(l));
    assert.equal(block[0], '        사과    사람    과일 |    sum');
    assert.equal(block[1], '  Q1  0.4573  0.1682  0.3744 | 1.0000');
  });

  test('a 512-wide result stays within 100 columns', async () => {
    const n = 512;
    const k = Array.from({ length: n }, (_, i) => [Math.cos(i), Math.sin(i)]);
    const body = { q: [[1, 0], [0, 1]], k, v: k, include: ['weights'] };
    const r = await postJson(s.port, '/v1/attention?format=text', body);
    assert.equal(r.status, 200);
    for (const line of r.body.split('\n')) assert.ok(line.length <= 100, `too long: ${line}`);
    assert.match(r.body, / k2 {2}\.\.\. {4}k509 /);
  });

  test('problems stay problem+json whatever Accept says', async () => {
    const bad = { q: [[1, 0, 1, 0]], k: [[1, 1], [0, 1], [1, 1], [0, 1]], v: [[1], [2]] };
    for (const headers of [{ Accept: 'text/plain' }, { Accept: 'image/svg+xml' }]) {
      const p = assertProblem(assert, await postJson(s.port, '/v1/attention', bad, headers), 422);
      assert.equal(p.errors[0].pointer, '/k');
    }
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention?format=svg', bad), 422);
    assert.equal(p.type, '/problems/shape-mismatch');
  });
});

describe('image/svg+xml', () => {
  test('the seed 002 heatmap is the reference picture, byte for byte', async () => {
    const r = await postJson(s.port, '/v1/attention', SEED002, { Accept: 'image/svg+xml' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.equal(r.body, readFileSync(REFERENCE, 'utf8'));
    const doc = parseXml(r.body);
    assert.equal(doc.root, 'svg');
    for (const t of ['0.46', '0.17', '0.37', '0.20', '0.55', '0.25', '0.33', '사과', '사람', '과일', 'Q1', 'Q2', 'Q3', '0.0', '1.0', 'Attention weights']) {
      assert.ok(doc.texts.includes(t), `the picture shows ${t}`);
    }
  });

  test('?format=svg wins over Accept', async () => {
    const r = await postJson(s.port, '/v1/attention?format=svg', SEED, { Accept: 'text/plain' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.equal(parseXml(r.body).root, 'svg');
  });

  test('hostile labels are escaped and the document stays valid', async () => {
    const labels = { queries: ['<b>&amp;</b>', '"]]>\'', 'x\u0007y'], keys: ['<!--', '-->', '<?xml?>'] };
    const r = await postJson(s.port, '/v1/attention?format=svg', { ...SEED002, labels });
    assert.equal(r.status, 200);
    const doc = parseXml(r.body);
    for (const t of ['<b>&amp;</b>', '"]]>\'', 'x<U+0007>y', '<!--', '-->', '<?xml?>']) assert.ok(doc.texts.includes(t), t);
  });

  test('a big matrix is still valid, without annotations', async () => {
    const n = 100;
    const k = Array.from({ length: n }, (_, i) => [Math.cos(i), Math.sin(i)]);
    const r = await postJson(s.port, '/v1/attention?format=svg', { q: k, k, v: k });
    assert.equal(r.status, 200);
    const doc = parseXml(r.body);
    assert.ok(doc.rects >= n * n);
    assert.ok(!doc.texts.some((t) => /^\d\.\d\d$/.test(t)), 'no cell annotations');
  });

  test('a fully masked row is drawn as such', async () => {
    const r = await postJson(s.port, '/v1/attention?format=svg', { ...SEED002, mask: [[1, 1, 0], [0, 0, 0], [1, 1, 1]] });
    assert.equal(r.status, 200);
    const doc = parseXml(r.body);
    assert.ok(doc.texts.includes('every key masked'));
    assert.ok(doc.texts.some((t) => t.startsWith('hatched:')));
  });

  test('what cannot be served is 406', async () => {
    assertProblem(assert, await postJson(s.port, '/v1/attention', SEED, { Accept: 'image/png' }), 406);
    assertProblem(assert, await request(s.port, { path: '/healthz?format=svg' }), 406);
    assertProblem(assert, await request(s.port, { path: '/version', headers: { Accept: 'image/svg+xml' } }), 406);
    assertProblem(assert, await postJson(s.port, '/v1/attention/batch?format=svg', { items: [SEED] }), 406);
    assertProblem(assert, await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&format=svg' }), 406);
  });
});

describe('labels with bidi and format controls', () => {
  // U+202E (right-to-left override) and U+200F (right-to-left mark) reorder what a
  // terminal or an SVG viewer shows; the renderings write them as visible escapes.
  const labels = { queries: ['\u202Eevil', 'a\u200Fb', '사람'], keys: ['k\u202E', '\u200F', '과일'] };
  const shown = ['<U+202E>evil', 'a<U+200F>b', '사람', 'k<U+202E>', '<U+200F>', '과일'];
  const hidden = /[\u202E\u200F]/u;
  const multihead = {
    heads: 2, random: { seed: 2, n: 3, d_model: 4 }, include: ['weights'], labels,
  };

  for (const [route, body] of [['/v1/attention', { ...SEED002, labels }], ['/v1/multihead', multihead]]) {
    test(`${route}: text and SVG show them as <U+XXXX>, JSON echoes them as sent`, async () => {
      const text = await postJson(s.port, `${route}?format=text`, body);
      assert.equal(text.status, 200);
      assert.doesNotMatch(text.body, hidden);
      for (const t of shown) assert.ok(text.body.includes(t), `the text shows ${t}`);

      const svg = await postJson(s.port, `${route}?format=svg`, body);
      assert.equal(svg.status, 200);
      assert.doesNotMatch(svg.body, hidden);
      const doc = parseXml(svg.body);
      for (const t of shown) assert.ok(doc.texts.includes(t), `the picture shows ${t}`);

      const json = await postJson(s.port, route, body);
      assert.equal(json.status, 200);
      assert.deepEqual(json.json().labels, labels);
    });
  }
});

describe('the playground', () => {
  test('GET / is the page, with a self-only Content-Security-Policy', async () => {
    const r = await request(s.port, { path: '/' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(r.headers['content-security-policy'], /^default-src 'self';/);
    assert.doesNotMatch(r.headers['content-security-policy'], /unsafe|https?:/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.match(r.body, /<script src="\/playground\.js" defer><\/script>/);
    assert.doesNotMatch(r.body, /<script>|<style>|style="|\son\w+="|https?:\/\/(?!www\.w3)/, 'nothing inline, no other host');
  });

  test('its script and style are served with their types; HEAD works', async () => {
    const js = await request(s.port, { path: '/playground.js' });
    assert.equal(js.status, 200);
    assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.doesNotMatch(js.body, /\.innerHTML\s*=|\beval\(|https?:\/\//);
    const css = await request(s.port, { path: '/playground.css' });
    assert.equal(css.status, 200);
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
    const head = await request(s.port, { method: 'HEAD', path: '/' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(Number(head.headers['content-length']), Buffer.byteLength((await request(s.port, { path: '/' })).body));
  });

  test('other methods on / are 405 with Allow', async () => {
    const r = await request(s.port, { method: 'POST', path: '/', body: '{}' });
    assertProblem(assert, r, 405);
    assert.equal(r.headers.allow, 'GET, HEAD, OPTIONS');
  });

  test('the 404 detail lists the playground', async () => {
    const p = assertProblem(assert, await request(s.port, { path: '/nope' }), 404);
    assert.match(p.detail, /GET \/ \(the playground\)/);
  });
});

describe('CORS with a list of origins, on every kind of answer', () => {
  let c;
  const allowed = 'http://127.0.0.1:5173';
  before(async () => {
    c = await startServer(['--cors-origin', `${allowed},https://labs.example`]);
  });
  after(async () => {
    await c.stop();
  });

  test('text, SVG and the page carry the allowed origin and Vary: Origin', async () => {
    const answers = [
      await postJson(c.port, '/v1/attention?format=text', SEED, { Origin: allowed }),
      await postJson(c.port, '/v1/attention?format=svg', SEED, { Origin: allowed }),
      await request(c.port, { path: '/', headers: { Origin: allowed } }),
    ];
    for (const r of answers) {
      assert.equal(r.status, 200);
      assert.equal(r.headers['access-control-allow-origin'], allowed);
      assert.equal(r.headers['access-control-expose-headers'], CORS_EXPOSED);
      assert.match(r.headers.vary, /\bOrigin\b/);
    }
  });

  test('a preflight asking for X-Request-Id and Accept is granted to an allowed origin only', async () => {
    const pre = (origin) => request(c.port, {
      method: 'OPTIONS', path: '/v1/attention?format=svg',
      headers: {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-request-id,accept',
      },
    });
    const ok = await pre('https://labs.example');
    assert.equal(ok.status, 204);
    assert.equal(ok.headers['access-control-allow-origin'], 'https://labs.example');
    for (const h of ['Content-Type', 'Accept', 'X-Request-Id']) {
      assert.ok(ok.headers['access-control-allow-headers'].split(', ').includes(h), h);
    }
    assert.match(ok.headers['access-control-allow-methods'], /\bPOST\b/);
    assert.ok(Number(ok.headers['access-control-max-age']) > 0);
    const no = await pre('https://labs.example.evil');
    assert.deepEqual(Object.keys(no.headers).filter((h) => h.startsWith('access-control-')), []);
    assert.match(no.headers.vary, /\bOrigin\b/);
  });
});
