// tests/browser/playground.test.mjs — the playground and CORS in a real browser:
// Debian's chromium driven by playwright-core (never a downloaded browser).
//
// The page: the selected example is drawn on load (a failed first request shows its
// problem), every preset runs and shows the API's numbers, the heatmap is drawn, a
// bad request's problem appears next to its field, it works from the keyboard and at
// phone width, the heatmap's checkbox sits on its label's line and the language picker
// is sized like the other fields. CORS: from pages served by small node servers on other ports, a
// cross-origin fetch succeeds for the allowed origin (its preflight seen through CDP
// Network events) and fails for another. A screenshot of the playground is saved as
// an artifact under ATTND_ARTIFACTS (build/artifacts).

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { logLinesFor, postJson, sleep, startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

const ARTIFACTS = process.env.ATTND_ARTIFACTS ?? path.resolve('build/artifacts');

/** A tiny page server on a free port: the "other origin" of the CORS tests. */
function pageServer() {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>another origin</title><p>another origin</p>');
    });
    srv.listen(0, '127.0.0.1', () => resolve({ srv, origin: `http://127.0.0.1:${srv.address().port}` }));
  });
}

let attnd;
let allowed;
let refused;
let ctx;
let browser;

before(async () => {
  allowed = await pageServer();
  refused = await pageServer();
  attnd = await startServer(['--cors-origin', allowed.origin]);
  browser = await launchChromium();
  ctx = browser.ctx;
});

after(async () => {
  await browser?.close();
  allowed?.srv.close();
  refused?.srv.close();
  await attnd?.stop();
});

/**
 * A fresh tab on the playground, ready (its first example drawn on load, or that run's
 * problem shown); console errors and page errors collected, and every POST it sent
 * (path with query, and body) in page.posts. `setup(page)` runs before the page loads
 * (a route that stands in for the server's answer to the run on load).
 */
async function openPlayground(viewport, setup) {
  const page = await ctx.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.problems = [];
  page.posts = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // A bad request's 422, which the page asks for on purpose, is the only 4xx allowed.
    if (m.type() === 'error' && !/status of 422/.test(m.text())) page.problems.push(m.text());
  });
  page.on('request', (r) => {
    if (r.method() === 'POST') {
      const url = new URL(r.url());
      page.posts.push({ path: url.pathname + url.search, body: JSON.parse(r.postData()) });
    }
  });
  if (setup) await setup(page);
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

/** Runs what the form holds (clicking Run) and waits for the page to finish. */
async function runForm(page, how = 'click') {
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  const status = page.locator('#status');
  if (how === 'click') await page.click('#run');
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n ||
    /^(Problem|Fix|The server)/.test(document.getElementById('status').textContent), before);
  return status.textContent();
}

/** The numbers a step's table shows, as rows of strings (sum column excluded). */
function stepTable(page, name) {
  return page.$$eval(`#steps section[data-step="${name}"] table tbody tr`, (rows) =>
    rows.map((tr) => [...tr.querySelectorAll('td:not(.extra)')].map((td) => td.textContent)));
}

const fixed = (x) => (x === null ? '-inf' : x.toFixed(4));
const asRows = (m) => (Array.isArray(m[0]) ? m : [m]);

const PRESETS = ['seed000', 'seed002-one', 'seed002-text', 'seed002-queries', 'exp-magnitude',
  'exp-direction', 'exp-opposite', 'causal'];

describe('the playground', () => {
  test('offers the presets, multi-head among them', async () => {
    const page = await openPlayground();
    const ids = await page.$$eval('#preset option', (os) => os.map((o) => o.value));
    for (const id of [...PRESETS, 'pitfall-kt']) assert.ok(ids.includes(id), id);
    assert.ok(ids.includes('multihead'));
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('draws the selected example on load, without Run: the API\'s numbers and the heatmap', async () => {
    const page = await openPlayground();
    assert.equal(await page.inputValue('#preset'), 'seed000');
    assert.equal(await page.textContent('#status'), 'Done.');
    assert.equal(await page.getAttribute('body', 'data-ran'), '1', 'one run, the one on load');
    // The request on load is the one Run would send for this form.
    const body = await page.evaluate(() => readForm());
    const sent = page.posts.filter((p) => p.path === '/v1/attention');
    assert.equal(sent.length, 1, JSON.stringify(page.posts));
    assert.deepEqual(sent[0].body, body);
    const api = (await postJson(attnd.port, '/v1/attention', body)).json();
    for (const name of ['scores', 'weights', 'output']) {
      assert.deepEqual(await stepTable(page, name), asRows(api[name]).map((r) => r.map(fixed)), name);
    }
    const maxWeights = await page.$$eval('#summary tbody tr', (rows) => rows.map((r) => r.children[2].textContent));
    assert.deepEqual(maxWeights, api.summary.max_weight.map(fixed));
    // The heatmap: the server's SVG of the same body, each cell's weight written in it.
    assert.equal(await page.isVisible('#heatmap-box'), true);
    assert.ok(page.posts.some((p) => p.path === '/v1/attention?format=svg'), JSON.stringify(page.posts));
    const cellTexts = await page.$$eval('#heatmap svg text[text-anchor="middle"][dominant-baseline="central"]',
      (t) => t.map((x) => x.textContent));
    assert.deepEqual(cellTexts, api.weights.flat().map((w) => w.toFixed(2)));
    const box = await page.locator('#heatmap svg').boundingBox();
    assert.ok(box && box.width > 150 && box.height > 100, JSON.stringify(box));
    // The run on load takes no focus from a keyboard user.
    assert.equal(await page.evaluate(() => document.activeElement === document.body), true);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('a first request that fails shows its problem, as Run does, and no page error', async () => {
    // A busy server (503 with its hint and Retry-After), stood in for on the run on load.
    const busy = await openPlayground(null, (p) => p.route('**/v1/attention', (route) => route.fulfill({
      status: 503,
      headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '2' },
      body: JSON.stringify({ type: '/problems/unavailable', title: 'Service unavailable', status: 503,
        detail: 'busy', hint: 'retry after the Retry-After seconds' }),
    })));
    assert.equal(await busy.textContent('#status'), 'Problem: HTTP 503. Try again in 2 s.');
    assert.equal(await busy.textContent('#problem-title'), '503 Service unavailable');
    assert.equal(await busy.textContent('#problem-detail'), 'busy — hint: retry after the Retry-After seconds');
    assert.equal(await busy.isHidden('#heatmap-box'), true);
    assert.equal(await busy.getAttribute('body', 'data-ran'), null);
    assert.deepEqual(busy.problems.filter((x) => x.startsWith('pageerror')), []);
    await busy.unroute('**/v1/attention');
    assert.equal(await runForm(busy), 'Done.'); // Run then goes through
    assert.equal(await busy.isHidden('#problem'), true);
    await busy.close();

    // No server at all.
    const gone = await openPlayground(null, (p) => p.route('**/v1/attention', (route) => route.abort('connectionrefused')));
    assert.match(await gone.textContent('#status'), /^The server could not be reached: /);
    assert.deepEqual(gone.problems.filter((x) => x.startsWith('pageerror')), []);
    await gone.close();

    // The steps' answer arrives, then the connection drops before the heatmap's: the
    // steps stay drawn and the status line says why the run stopped.
    const dropped = await openPlayground(null, (p) => p.route('**/v1/attention?format=svg',
      (route) => route.abort('connectionreset')));
    assert.match(await dropped.textContent('#status'), /^The run stopped: /);
    assert.equal(await dropped.isVisible('#steps section[data-step="weights"]'), true);
    assert.deepEqual(dropped.problems.filter((x) => x.startsWith('pageerror')), []);
    await dropped.close();
  });

  for (const id of PRESETS) {
    test(`preset ${id}: every step shows the API's numbers, and the heatmap is drawn`, async () => {
      const page = await openPlayground();
      await page.selectOption('#preset', id);
      assert.equal(await runForm(page), 'Done.');
      const body = await page.evaluate(() => readForm());
      const api = (await postJson(attnd.port, '/v1/attention', body)).json();
      for (const name of ['scores', 'scaled', 'masked', 'weights', 'output']) {
        const shown = await stepTable(page, name);
        assert.deepEqual(shown, asRows(api[name]).map((r) => r.map(fixed)), `${id}: ${name}`);
        const shapeText = await page.textContent(`#steps section[data-step="${name}"] p.shape`);
        assert.ok(shapeText.endsWith(`(${api.shapes[name === 'output' ? 'output' : 'weights'].join(', ')}${api.shapes.weights.length === 1 ? ',' : ''})`), shapeText);
      }
      // Row sums after the weights, and the summary.
      const sums = await page.$$eval('#steps section[data-step="weights"] td.extra', (t) => t.map((x) => x.textContent));
      assert.deepEqual(sums, [].concat(api.summary.row_sums).map(fixed));
      const winners = await page.$$eval('#summary tbody tr', (rows) => rows.map((r) => r.children[2].textContent));
      assert.deepEqual(winners, [].concat(api.summary.max_weight).map(fixed));
      // The heatmap: the server's SVG, one cell per weight, drawn with a size.
      const cells = await page.$$eval('#heatmap svg rect[fill^="#"], #heatmap svg rect[fill^="url(#attnd-hatch)"]',
        (r) => r.filter((x) => Number(x.getAttribute('width')) === Number(x.getAttribute('height'))).length);
      const nq = api.shapes.weights.length === 1 ? 1 : api.shapes.weights[0];
      const nk = api.shapes.weights.at(-1);
      assert.ok(cells >= nq * nk - 0, `${cells} cells for ${nq} x ${nk}`);
      const box = await page.locator('#heatmap svg').boundingBox();
      assert.ok(box && box.width > 150 && box.height > 100, JSON.stringify(box));
      if (id.startsWith('exp-')) {
        const rows = await page.$$eval('#compare tbody tr', (r) => r.map((x) => x.textContent));
        assert.equal(rows.length, 3);
        assert.ok(rows.some((r) => /changed|tie broken/.test(r)), rows.join(' | '));
      }
      if (id === 'causal') {
        assert.deepEqual((await stepTable(page, 'masked'))[0].slice(1), ['-inf', '-inf']);
      }
      assert.deepEqual(page.problems, []);
      await page.close();
    });
  }

  // Today's models: each variant's preset shows every step the API lists, its numbers
  // as the API computes them (columns numbered for q_rope and k_rope, keys otherwise).
  for (const id of ['variant-rope', 'variant-softcap', 'variant-alibi', 'variant-window',
    'variant-sink', 'variant-dropout']) {
    test(`preset ${id}: the variant's steps are shown with the API's numbers`, async () => {
      const page = await openPlayground();
      await page.selectOption('#preset', id);
      assert.equal(await runForm(page), 'Done.');
      const body = await page.evaluate(() => readForm());
      const api = (await postJson(attnd.port, '/v1/attention', body)).json();
      // the variant is on the page: a step of its own, or the op of the step it changes
      const mark = { 'variant-rope': 'q_rope', 'variant-softcap': 'softcapped', 'variant-alibi': 'slope',
        'variant-window': 'window', 'variant-sink': 'sink_logit', 'variant-dropout': 'dropped' }[id];
      const headings = await page.$$eval('#steps section h3', (hs) => hs.map((h) => h.textContent));
      assert.ok(headings.some((h) => h.includes(mark)), `${id}: ${headings.join(' | ')}`);
      const shownSteps = await page.$$eval('#steps section', (ss) => ss.map((x) => x.dataset.step));
      assert.deepEqual(shownSteps, api.steps.map((st) => st.name));
      for (const { name } of api.steps) {
        const shown = await stepTable(page, name);
        const want = asRows(api[name]).map((r) => r.map(fixed));
        assert.deepEqual(shown.map((row) => row.slice(0, want[0].length)), want, `${id}: ${name}`);
      }
      if (id === 'variant-sink')
        assert.match(await page.textContent('#steps section[data-step="weights"] p.sink'), /sink logit took/);
      assert.deepEqual(page.problems, []);
      await page.close();
    });
  }

  test('the experiments change the winning key or its weight as the lecture says', async () => {
    const page = await openPlayground();
    const summary = async (id) => {
      await page.selectOption('#preset', id);
      await runForm(page);
      return page.$$eval('#summary tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    };
    const base = await summary('seed002-queries');
    const bigger = await summary('exp-magnitude');
    assert.equal(bigger[0][1], base[0][1], 'Q1 keeps its key');
    assert.ok(Number(bigger[0][2]) > Number(base[0][2]), 'with a sharper weight');
    const turned = await summary('exp-direction');
    assert.equal(turned[2][1], '사과');
    const opposite = await summary('exp-opposite');
    assert.notEqual(opposite[0][1], base[0][1], 'Q1 needs another key');
    await page.close();
  });

  test('a tie is shown as a tie, in the summary and in the experiments', async () => {
    const page = await openPlayground();
    const rowsOf = (sel) => page.$$eval(sel, (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    await page.selectOption('#preset', 'seed002-queries');
    await runForm(page);
    // Q3 = [0.5, 0.5] scores 0.5 against every key: no winner to name.
    assert.equal((await rowsOf('#summary tbody tr'))[2][1], 'tie (사과, 사람, 과일)');
    await page.selectOption('#preset', 'exp-direction');
    await runForm(page);
    const turned = await rowsOf('#compare tbody tr');
    assert.deepEqual(turned[2].slice(1, 2), ['tie (사과, 사람, 과일) 0.3333']);
    assert.equal(turned[2][3], 'tie broken');
    assert.equal(turned[0][3], 'no change');
    await page.selectOption('#preset', 'exp-opposite');
    await runForm(page);
    const flipped = await rowsOf('#compare tbody tr');
    assert.equal(flipped[2][2], 'tie (사람, 과일) 0.4223');
    assert.equal(flipped[2][3], 'tied keys changed');
    assert.equal(flipped[0][3], 'winner changed');
    await page.close();
  });

  if (process.env.ATTND_SKIP_MULTIHEAD !== '1') {
    test('multi-head: per-head heatmaps', async () => {
      const page = await openPlayground();
      await page.selectOption('#preset', 'multihead');
      assert.equal(await runForm(page), 'Done.');
      const heads = await page.$$eval('#heatmap figure.head figcaption', (f) => f.map((x) => x.textContent));
      assert.deepEqual(heads, ['head 0', 'head 1', 'mean of the heads']);
      const api = (await postJson(attnd.port, '/v1/multihead', await page.evaluate(() => readForm()))).json();
      const shown = await page.$$eval('#heatmap figure.head:first-child tbody tr',
        (rows) => rows.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
      assert.deepEqual(shown, api.weights[0].map((r) => r.map(fixed)));
      assert.deepEqual(page.problems, []);
      await page.close();
    });
  }

  test('a bad request shows its problem next to the field it points at', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed000');
    await page.fill('#f-k', '[[1,1],[0,1],[1,1],[0,1]]');
    await page.focus('#f-k');
    await page.keyboard.press('Control+Enter');
    await page.waitForSelector('#err-k:not([hidden])');
    assert.match(await page.textContent('#err-k'), /k looks transposed/);
    assert.equal(await page.getAttribute('#f-k', 'aria-invalid'), 'true');
    assert.match(await page.textContent('#problem-title'), /^422 Shapes do not fit/);
    assert.equal(await page.isHidden('#err-q'), true);
    // The problem clears on the next good run.
    await page.fill('#f-k', '[[1,0,1,0],[1,1,1,1]]');
    assert.equal(await runForm(page), 'Done.');
    assert.equal(await page.isHidden('#err-k'), true);
    assert.equal(await page.isHidden('#problem'), true);
    // A field that is not JSON is caught before any request, next to the field.
    await page.fill('#f-v', '[[10,0],[0,10]');
    await runForm(page);
    assert.match(await page.textContent('#err-v'), /^not JSON/);
    // A scale the server refuses: the problem lands on the scale field.
    await page.fill('#f-v', '[[10,0],[0,10]]');
    await page.fill('#f-scale', '-1');
    await runForm(page);
    assert.match(await page.textContent('#err-scale'), /\/scale\)$/);
    await page.close();
  });

  // A server at its memory budget answers 503 with a top-level hint and Retry-After
  // (tests/http/limits.test.mjs makes a real one); the page shows both. The answer is
  // stood in for here, in the words attnd uses, so that no server has to be filled up.
  test('a busy server: the 503 shows its hint and when to try again', async () => {
    const page = await openPlayground();
    await page.route('**/v1/attention', (route) => (route.request().method() !== 'POST'
      ? route.continue()
      : route.fulfill({
        status: 503,
        headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '1' },
        body: JSON.stringify({
          type: '/problems/unavailable', title: 'Service unavailable', status: 503,
          detail: "the server's memory budget is taken (answers waiting for their clients, " +
            'requests being computed) and this request needs about 0.0 MB more',
          hint: 'nothing is wrong with the request: retry after the Retry-After seconds, or ' +
            'on another replica; the operator sets the budget with --max-memory',
        }),
      })));
    await page.selectOption('#preset', 'seed000');
    assert.equal(await runForm(page), 'Problem: HTTP 503. Try again in 1 s.');
    assert.match(await page.textContent('#problem-title'), /^503 Service unavailable/);
    assert.match(await page.textContent('#problem-detail'),
      /memory budget is taken .* — hint: nothing is wrong with the request.*--max-memory$/);
    await page.unroute('**/v1/attention');
    assert.equal(await runForm(page), 'Done.'); // and the next run goes through
    assert.equal(await page.isHidden('#problem'), true);
    await page.close();
  });

  test('warnings are shown, and a fully masked row is drawn as such', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    await page.fill('#f-mask', '[[1,1,0],[0,0,0],[1,1,1]]');
    assert.equal(await runForm(page), 'Done.');
    const warnings = await page.$$eval('#warnings li', (l) => l.map((x) => x.textContent));
    assert.equal(warnings.length, 2);
    assert.match(warnings[0], /^row_fully_masked: query 1 /);
    assert.match(warnings[1], /^tie: query 2 ties keys 0, 1 and 2 /); // Q3 = [0.5, 0.5]
    assert.deepEqual((await stepTable(page, 'masked'))[1], ['-inf', '-inf', '-inf']);
    assert.deepEqual((await stepTable(page, 'weights'))[1], ['0.0000', '0.0000', '0.0000']);
    assert.equal(await page.textContent('#summary tbody tr:nth-child(2) td:nth-child(2)'), '—');
    const notes = await page.$$eval('#heatmap svg text', (t) => t.map((x) => x.textContent));
    assert.ok(notes.includes('every key masked'), notes.join(' | '));
    await page.close();
  });

  test('usable by keyboard alone', async () => {
    const page = await openPlayground();
    await page.focus('#preset');
    await page.keyboard.press('ArrowDown'); // the second preset: one query
    assert.equal(await page.inputValue('#preset'), 'seed002-one');
    let reached = false;
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.id === 'run');
    }
    assert.ok(reached, 'Tab reaches the Run button');
    const ran = Number(await page.getAttribute('body', 'data-ran') ?? 0);
    await page.keyboard.press('Enter');
    await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n, ran);
    assert.deepEqual(await stepTable(page, 'weights'), [['0.4573', '0.1682', '0.3744']]);
    // Focus is visible: the focused control gets an outline.
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, 'none');
    await page.close();
  });

  // The checkbox's box and the first line of its words, as laid out.
  const checkboxLayout = (page) => page.evaluate(() => {
    const label = document.getElementById('f-auto-label');
    const words = [...label.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
    const range = document.createRange();
    range.selectNodeContents(words);
    const line = range.getClientRects()[0];
    const box = document.getElementById('f-auto').getBoundingClientRect();
    return {
      box: { left: box.left, right: box.right, top: box.top, bottom: box.bottom, width: box.width },
      line: { left: line.left, right: line.right, top: line.top, bottom: line.bottom },
      wrapped: document.getElementById('f-auto').closest('label') === label,
    };
  });

  for (const viewport of [{ width: 1280, height: 900 }, { width: 375, height: 740 }]) {
    test(`at ${viewport.width} px the heatmap's checkbox sits first on its label's line, and the label ticks it`, async () => {
      const page = await openPlayground(viewport);
      await page.locator('#f-auto-label').scrollIntoViewIfNeeded();
      const { box, line, wrapped } = await checkboxLayout(page);
      assert.ok(wrapped, 'the label wraps the checkbox');
      assert.ok(box.width > 0 && box.width < 30, `a checkbox's size, not a text field's: ${JSON.stringify(box)}`);
      assert.ok(box.right <= line.left, `the checkbox before its words: ${JSON.stringify({ box, line })}`);
      assert.ok(line.left - box.right < 16, `beside them, not apart: ${JSON.stringify({ box, line })}`);
      const middle = (r) => (r.top + r.bottom) / 2;
      assert.ok(Math.abs(middle(box) - middle(line)) <= 3, `on one line: ${JSON.stringify({ box, line })}`);
      assert.ok(box.top >= line.top - 3 && box.bottom <= line.bottom + 3, JSON.stringify({ box, line }));
      // A click on the words ticks the box (vmax follows), and the keyboard reaches it.
      assert.equal(await page.isChecked('#f-auto'), false);
      await page.mouse.click((line.left + line.right) / 2, middle(line));
      assert.equal(await page.isChecked('#f-auto'), true);
      assert.equal(await page.inputValue('#f-vmax'), 'auto');
      await page.focus('#f-pitfall');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'f-auto');
      await page.keyboard.press('Space');
      assert.equal(await page.isChecked('#f-auto'), false);
      assert.equal(await page.inputValue('#f-vmax'), '');
      assert.deepEqual(page.problems, []);
      await page.close();
    });

    test(`at ${viewport.width} px the language picker is sized like the form's fields`, async () => {
      const page = await openPlayground(viewport);
      const sizes = await page.evaluate(() => Object.fromEntries(['lang', 'preset', 'f-pitfall'].map((id) => {
        const e = document.getElementById(id);
        const s = getComputedStyle(e);
        const r = e.getBoundingClientRect();
        return [id, { height: r.height, width: r.width, right: r.right, font: s.font, padding: s.padding,
          border: s.border, radius: s.borderRadius }];
      })));
      const { lang, preset } = sizes;
      assert.ok(Math.abs(lang.height - preset.height) <= 1, JSON.stringify(sizes));
      assert.ok(Math.abs(lang.height - sizes['f-pitfall'].height) <= 1, JSON.stringify(sizes));
      for (const k of ['font', 'padding', 'border', 'radius']) assert.equal(lang[k], preset[k], k);
      // As wide as a field at most: not the header's whole width.
      assert.ok(lang.width <= preset.width + 1, JSON.stringify(sizes));
      assert.ok(lang.right <= viewport.width, JSON.stringify(sizes));
      await page.close();
    });
  }

  test('readable at phone width: nothing wider than the screen', async () => {
    const page = await openPlayground({ width: 375, height: 740 });
    await page.selectOption('#preset', 'seed002-queries');
    await runForm(page);
    const widths = await page.evaluate(() => ({
      doc: document.documentElement.scrollWidth,
      form: document.getElementById('form').getBoundingClientRect().width,
      svg: document.querySelector('#heatmap svg').getBoundingClientRect().right,
    }));
    assert.ok(widths.doc <= 375, JSON.stringify(widths));
    assert.ok(widths.svg <= 375, JSON.stringify(widths));
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'playground-phone.png'), fullPage: true });
    await page.close();
  });

  test('a screenshot of the playground is saved', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    await runForm(page);
    mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, 'playground.png');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator('#run').blur();
    await page.screenshot({ path: file, fullPage: false });
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

describe('CORS from another origin', () => {
  /** Opens a page of `origin`, then fetches attnd from it; returns what the page saw and CDP's events. */
  async function crossOrigin(origin, id) {
    const page = await ctx.newPage();
    const cdp = await ctx.newCDPSession(page);
    const seen = [];
    cdp.on('Network.requestWillBeSent', (e) => {
      if (e.request.url.includes(`:${attnd.port}/`)) seen.push({ method: e.request.method, type: e.type });
    });
    await cdp.send('Network.enable');
    await page.goto(`${origin}/`);
    const url = `http://127.0.0.1:${attnd.port}/v1/attention?format=text`;
    const result = await page.evaluate(async ([u, rid]) => {
      try {
        const r = await fetch(u, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Request-Id': rid },
          body: JSON.stringify({ q: [[1, 0]], k: [[1, 0], [0, 1]], v: [[1], [2]] }),
        });
        return { ok: true, status: r.status, id: r.headers.get('X-Request-Id'), text: await r.text() };
      } catch (e) {
        return { ok: false, error: String(e) };
      }
    }, [url, id]);
    await cdp.detach();
    await page.close();
    return { result, seen };
  }

  test('an allowed origin fetches, after a preflight', async () => {
    const { result, seen } = await crossOrigin(allowed.origin, 'cross-origin-1');
    assert.equal(result.ok, true, result.error);
    assert.equal(result.status, 200);
    assert.equal(result.id, 'cross-origin-1', 'X-Request-Id is exposed to the page');
    assert.match(result.text, /^attention {2}q \(1, 2\)/);
    assert.ok(seen.some((e) => e.method === 'OPTIONS' || e.type === 'Preflight'), JSON.stringify(seen));
    assert.ok(seen.some((e) => e.method === 'POST'), JSON.stringify(seen));
    await attnd.waitStderr((err) => logLinesFor(err, 'cross-origin-1').length === 1);
    assert.match(logLinesFor(attnd.stderr(), 'cross-origin-1')[0], /method=POST path=\/v1\/attention /);
  });

  test('another origin is refused by the browser', async () => {
    const { result, seen } = await crossOrigin(refused.origin, 'cross-origin-2');
    assert.equal(result.ok, false);
    assert.match(result.error, /TypeError/);
    assert.ok(seen.some((e) => e.method === 'OPTIONS' || e.type === 'Preflight'), JSON.stringify(seen));
    // The preflight was refused, so the POST itself never reached the server.
    await sleep(200);
    assert.deepEqual(logLinesFor(attnd.stderr(), 'cross-origin-2'), []);
    assert.match(attnd.stderr(), /method=OPTIONS path=\/v1\/attention /);
  });
});
