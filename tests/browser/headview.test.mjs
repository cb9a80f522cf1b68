// tests/browser/headview.test.mjs — what the playground adds for bertviz users and for a
// clean load, in Debian's chromium driven by playwright-core:
//
// - the page loads with no console error and no failed request (no GET probe of
//   /v1/multihead, an icon that is served), within its Content-Security-Policy;
// - the head view draws one line per query, key and head, each line's opacity the
//   weight the API answers, one colour a head; hovering a token shows only its lines;
// - heatmap cells carry their exact values as tooltips (the SVG's <title>s for one
//   head, the tables' titles for multi-head);
// - the multi-head fields and the JSON stay in step, and round, bias and
//   mask_semantics reach the request.
// A screenshot with the head view is saved under ATTND_ARTIFACTS (build/artifacts).

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { postJson, startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

const ARTIFACTS = process.env.ATTND_ARTIFACTS ?? path.resolve('build/artifacts');

let attnd;
let browser;
let ctx;

before(async () => {
  attnd = await startServer();
  browser = await launchChromium('attnd-chromium-');
  ctx = browser.ctx;
});

after(async () => {
  await browser?.close();
  await attnd?.stop();
});

/** A fresh tab on the playground; every console message, page error and 4xx/5xx kept. */
async function openPlayground() {
  const page = await ctx.newPage();
  page.errors = [];
  page.failed = [];
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') page.errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) page.failed.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  page.on('requestfailed', (r) => page.failed.push(`failed ${r.url()}: ${r.failure()?.errorText}`));
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

async function runForm(page) {
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  await page.click('#run');
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n ||
    /^(Problem|Fix|The server)/.test(document.getElementById('status').textContent), before);
  return page.textContent('#status');
}

/** The head view's lines: head, query, key, stroke, opacity and visibility of each. */
const lines = (page) => page.$$eval('#headview svg line.attn', (ls) => ls.map((l) => ({
  head: Number(l.dataset.head), q: Number(l.dataset.q), k: Number(l.dataset.k),
  stroke: l.getAttribute('stroke'), opacity: Number(l.getAttribute('stroke-opacity')),
  visible: l.getAttribute('visibility') !== 'hidden',
  title: l.querySelector('title')?.textContent,
})));

/** The tokens as drawn (side and shown text, without the tooltip). */
const tokenNames = (page) => page.$$eval('#headview svg text.token',
  (t) => t.map((x) => `${x.dataset.side}:${x.firstChild.nodeValue}`));

describe('a clean load', () => {
  test('no console error, no failed request, the icon served and linked', async () => {
    const seen = [];
    const page = await ctx.newPage();
    page.on('request', (r) => seen.push(`${r.method()} ${new URL(r.url()).pathname}`));
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    const statuses = [];
    page.on('response', (r) => statuses.push([new URL(r.url()).pathname, r.status()]));
    await page.goto(`http://127.0.0.1:${attnd.port}/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForLoadState('networkidle');
    assert.deepEqual(errors, []);
    assert.ok(!seen.includes('GET /v1/multihead'), seen.join(', '));
    assert.deepEqual(statuses.filter(([, s]) => s >= 400), []);
    const icon = await page.$eval('link[rel="icon"]', (l) => l.href);
    assert.equal(new URL(icon).pathname, '/favicon.svg');
    // The icon is an image of this origin (CSP: default-src 'self'): fetched and decoded.
    const decoded = await page.evaluate(async (src) => {
      const img = new Image();
      img.src = src;
      await img.decode();
      return [img.naturalWidth > 0, img.naturalHeight > 0];
    }, icon);
    assert.deepEqual(decoded, [true, true]);
    for (const p of ['/favicon.svg', '/favicon.ico']) {
      const r = await page.request.get(`http://127.0.0.1:${attnd.port}${p}`);
      assert.equal(r.status(), 200, p);
      assert.equal(r.headers()['content-type'], 'image/svg+xml', p);
      assert.match(await r.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    }
    await page.close();
  });
});

describe('the head view', () => {
  test('seed 000: a line per query and key, opacity the weight, and the same tokens', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed000');
    assert.equal(await runForm(page), 'Done.');
    const drawn = await lines(page);
    assert.equal(drawn.length, 4);
    const api = (await postJson(attnd.port, '/v1/attention', await page.evaluate(() => readForm()))).json();
    for (const l of drawn) {
      assert.equal(l.opacity, api.weights[l.q][l.k], `q${l.q} k${l.k}`);
      assert.equal(l.head, 0);
    }
    // The lecture's numbers: row 1 is softmax([0, 1]) = [0.2689…, 0.7310…].
    const row1 = drawn.filter((l) => l.q === 1).sort((a, b) => a.k - b.k).map((l) => l.opacity);
    assert.ok(Math.abs(row1[0] - 1 / (1 + Math.E)) < 1e-15 && Math.abs(row1[1] - Math.E / (1 + Math.E)) < 1e-15);
    const tokens = await tokenNames(page);
    assert.deepEqual(tokens, ['q:t0', 'q:t1', 'k:t0', 'k:t1']);
    assert.deepEqual(page.errors, []);
    assert.deepEqual(page.failed, []);
    await page.close();
  });

  test('hovering a token shows only its lines; leaving shows them all', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries'); // labels differ: a cross view
    assert.equal(await runForm(page), 'Done.');
    const tokens = await tokenNames(page);
    assert.deepEqual(tokens, ['q:Q1', 'q:Q2', 'q:Q3', 'k:사과', 'k:사람', 'k:과일']);
    await page.hover('#headview svg text.token[data-side="q"][data-index="1"]');
    let drawn = await lines(page);
    assert.deepEqual(drawn.filter((l) => l.visible).map((l) => `${l.q}-${l.k}`), ['1-0', '1-1', '1-2']);
    assert.equal(await page.getAttribute('#headview svg text.token[data-side="q"][data-index="1"]', 'font-weight'), 'bold');
    await page.hover('#headview svg text.token[data-side="k"][data-index="2"]');
    drawn = await lines(page);
    assert.deepEqual(drawn.filter((l) => l.visible).map((l) => `${l.q}-${l.k}`), ['0-2', '1-2', '2-2']);
    await page.hover('#run');
    drawn = await lines(page);
    assert.equal(drawn.filter((l) => l.visible).length, 9);
    // A line's tooltip names its tokens and its exact weight.
    const q1apple = drawn.find((l) => l.q === 0 && l.k === 0);
    const e = [Math.exp(1), 1, Math.exp(0.8)];
    assert.equal(q1apple.title, `Q1 → 사과: ${q1apple.opacity} (head 0)`);
    assert.ok(Math.abs(q1apple.opacity - e[0] / (e[0] + e[1] + e[2])) < 1e-15);
    assert.deepEqual(page.errors.filter((m) => !/status of 422/.test(m)), []);
    await page.close();
  });

  test('multi-head: a colour a head, n × n lines each, equal to the API weights; heads toggle', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'multihead');
    assert.equal(await runForm(page), 'Done.');
    const body = await page.evaluate(() => readForm());
    const api = (await postJson(attnd.port, '/v1/multihead', body)).json();
    const drawn = await lines(page);
    const n = body.random.n;
    assert.equal(drawn.length, body.heads * n * n);
    for (const l of drawn) assert.equal(l.opacity, api.weights[l.head][l.q][l.k]);
    const colours = [...new Set(drawn.map((l) => `${l.head}:${l.stroke}`))];
    assert.equal(colours.length, body.heads);
    assert.equal(new Set(drawn.map((l) => l.stroke)).size, body.heads);
    await page.click('.head-toggle[data-head="1"]');
    assert.equal(await page.getAttribute('#headview svg g.head[data-head="1"]', 'visibility'), 'hidden');
    assert.equal(await page.getAttribute('.head-toggle[data-head="1"]', 'aria-pressed'), 'false');
    // Per-head tables carry each weight exactly as a tooltip.
    const titles = await page.$$eval('#heatmap figure.head:first-child tbody td', (t) => t.map((x) => x.title));
    assert.equal(titles.length, n * n);
    assert.equal(titles[1], `q0 → k1: ${api.weights[0][0][1]}`);
    assert.deepEqual(page.errors, []);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.locator('#headview-box').screenshot({ path: path.join(ARTIFACTS, 'headview-multihead.png') });
    await page.close();
  });
});

describe('tooltips and fields', () => {
  test('each heatmap cell has its exact weight and both labels as a tooltip', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    assert.equal(await runForm(page), 'Done.');
    const tips = await page.$$eval('#heatmap svg g > title', (t) => t.map((x) => x.textContent));
    assert.equal(tips.length, 9);
    const api = (await postJson(attnd.port, '/v1/attention', await page.evaluate(() => readForm()))).json();
    assert.equal(tips[0], `Q1 → 사과: ${api.weights[0][0]}`);
    assert.equal(tips[8], `Q3 → 과일: ${api.weights[2][2]}`);
    // The steps' tables too.
    const cell = await page.getAttribute('#steps section[data-step="weights"] tbody tr:nth-child(2) td', 'title');
    assert.equal(cell, `Q2 → 사과: ${api.weights[1][0]}`);
    await page.close();
  });

  test('multi-head fields edit the JSON, and the JSON fills them', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'multihead');
    assert.equal(await page.inputValue('#mh-heads'), '2');
    assert.equal(await page.inputValue('#mh-n'), '4');
    assert.equal(await page.inputValue('#mh-d-model'), '8');
    await page.fill('#mh-n', '3');
    await page.fill('#mh-kv-heads', '1');
    await page.selectOption('#mh-mask-semantics', 'block');
    let body = JSON.parse(await page.inputValue('#f-mh'));
    assert.deepEqual(body.random, { seed: 7, n: 3, d_model: 8 });
    assert.equal(body.kv_heads, 1);
    assert.equal(body.mask_semantics, 'block');
    await page.fill('#mh-kv-heads', '');
    body = JSON.parse(await page.inputValue('#f-mh'));
    assert.equal('kv_heads' in body, false);
    await page.selectOption('#mh-mask-semantics', 'keep');
    assert.equal(await runForm(page), 'Done.');
    assert.equal((await lines(page)).length, 2 * 3 * 3);
    // Editing the JSON fills the fields.
    await page.fill('#f-mh', JSON.stringify({ heads: 4, kv_heads: 2, random: { seed: 1, n: 2, n_kv: 5, d_model: 8 } }));
    assert.equal(await page.inputValue('#mh-heads'), '4');
    assert.equal(await page.inputValue('#mh-n-kv'), '5');
    assert.equal(await runForm(page), 'Done.');
    const drawn = await lines(page);
    assert.equal(drawn.length, 4 * 2 * 5); // cross-attention: 2 queries, 5 keys, 4 query heads
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('round, bias and mask_semantics reach the request and its answer', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed000');
    await page.fill('#f-round', '3');
    await page.fill('#f-bias', '[[0,1],[0,0]]');
    await page.fill('#f-mask', '[[0,0],[1,0]]');
    await page.selectOption('#f-mask-semantics', 'block');
    assert.equal(await runForm(page), 'Done.');
    const body = await page.evaluate(() => readForm());
    assert.equal(body.round, 3);
    assert.deepEqual(body.bias, [[0, 1], [0, 0]]);
    assert.equal(body.mask_semantics, 'block');
    // Row 0: scaled [1, 1] + bias [0, 1] → softmax [1, e]/(1+e); row 1: key 0 blocked.
    const weights = await page.$$eval('#steps section[data-step="weights"] tbody tr',
      (rows) => rows.map((tr) => [...tr.querySelectorAll('td:not(.extra)')].map((td) => td.textContent)));
    const w01 = Math.round((Math.E / (1 + Math.E)) * 1000) / 1000;
    assert.deepEqual(weights, [[(1 - w01).toFixed(4), w01.toFixed(4)], ['0.0000', '1.0000']]);
    // A bad value lands on its own field.
    await page.fill('#f-round', '99');
    await runForm(page);
    assert.match(await page.textContent('#err-round'), /\/round\)$/);
    await page.close();
  });

  test('a screenshot of the playground with the head view', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    assert.equal(await runForm(page), 'Done.');
    await page.hover('#headview svg text.token[data-side="q"][data-index="0"]');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.locator('#headview-box').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, 'playground-headview.png'), fullPage: true });
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});
