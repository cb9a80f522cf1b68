// tests/browser/masks.test.mjs — the masks of training in the playground, in Debian's
// chromium: the learner picks each rule (the mask kind, documents, a prefix, a chunk, the
// window, the tile size) in the "Masks of training" box, the page runs again by itself,
// and the picture of visible with its tiles, and the server's heatmap with the same tiles,
// hold the API's visible and block_map for the very request the page sent. From the
// keyboard, at phone width, in Korean, and without a console error.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { postJson, startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

let attnd;
let browser;

before(async () => {
  attnd = await startServer();
  browser = await launchChromium('attnd-chromium-masks-');
});

after(async () => {
  await browser?.close();
  await attnd?.stop();
});

const KIND = ['empty', 'partial', 'full'];

async function open(viewport) {
  const page = await browser.ctx.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.problems = [];
  page.posts = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 422/.test(m.text())) page.problems.push(m.text());
  });
  page.on('request', (r) => {
    if (r.method() === 'POST') {
      const url = new URL(r.url());
      page.posts.push({ path: url.pathname + url.search, body: JSON.parse(r.postData()) });
    }
  });
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

/** Does `act` and waits for the run it starts (the box runs again on any change). */
async function afterRun(page, act) {
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  await act();
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n ||
    /^(Problem|문제)/.test(document.getElementById('status').textContent), before);
  // A later change may have superseded it: wait until nothing is running.
  await page.waitForFunction(() => !/^(Running…|계산 중…)$/.test(document.getElementById('status').textContent));
}

/** The last JSON request the page sent, and the API's answer to it. */
async function lastAnswer(page) {
  const sent = page.posts.filter((p) => p.path === '/v1/attention').at(-1);
  const api = (await postJson(attnd.port, '/v1/attention', sent.body)).json();
  return { body: sent.body, api };
}

/** The drawn tiles of a picture: [tile "r c", kind] in the order of the map. */
const tilesOf = (page, sel) => page.$$eval(sel, (rs) => rs.map((r) => [r.getAttribute('data-tile'), r.getAttribute('data-kind')]));

function expectedTiles(api) {
  const out = [];
  api.block_map.tiles.forEach((row, r) => row.forEach((t, c) => out.push([`${r} ${c}`, KIND[t]])));
  return out.sort();
}

/** The picture of visible and the heatmap both hold the API's answer to what was sent. */
async function assertPictures(page, what) {
  const { body, api } = await lastAnswer(page);
  assert.ok(body.include.includes('visible') && body.include.includes('block_map'), `${what}: ${JSON.stringify(body)}`);
  const want = expectedTiles(api);
  assert.deepEqual((await tilesOf(page, '#masks-figure svg rect.tile')).sort(), want, `${what}: the picture`);
  assert.deepEqual((await tilesOf(page, '#heatmap svg rect.attnd-tile')).sort(), want, `${what}: the heatmap`);
  const cells = await page.$$eval('#masks-figure svg rect:not(.tile)', (rs) => rs.map((r) => (r.classList.contains('seen') ? 1 : 0)));
  const visible = Array.isArray(api.visible[0]) ? api.visible : [api.visible];
  assert.deepEqual(cells, visible.flat(), `${what}: visible`);
  // the visible step's table shows the same 0/1
  const table = await page.$$eval('#steps section[data-step="visible"] tbody tr', (rows) =>
    rows.map((tr) => [...tr.querySelectorAll('td')].map((td) => Number(td.textContent))));
  assert.deepEqual(table, visible, `${what}: the visible step`);
  const note = await page.textContent('#masks-note');
  assert.ok(note.includes(api.block_map.sparsity.toFixed(4)), `${what}: ${note}`);
  return { body, api };
}

describe('the masks of training in the playground', () => {
  test('the example opens the box and draws visible with its tiles, as the API has them', async () => {
    const page = await open();
    await afterRun(page, () => page.selectOption('#preset', 'masks-documents').then(() => page.click('#run')));
    assert.equal(await page.getAttribute('#masks', 'open'), '');
    const { body } = await assertPictures(page, 'the example');
    assert.deepEqual(body.documents, { lengths: [2, 4] });
    assert.deepEqual(body.block, [2, 2]);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('each rule picked in the box changes the request, the mask and its tiles', async () => {
    const page = await open();
    await afterRun(page, () => page.selectOption('#preset', 'causal').then(() => page.click('#run')));
    await afterRun(page, () => page.click('#masks summary'));
    const steps = [
      ['causal', () => page.selectOption('#f-mask-kind', 'causal'), (b) => b.mask === 'causal'],
      ['causal top-left', () => page.selectOption('#f-mask-kind', 'causal_top_left'), (b) => b.mask === 'causal_top_left'],
      ['no mask', () => page.selectOption('#f-mask-kind', ''), (b) => b.mask === undefined],
      ['tiles of 1 x 2', async () => { await page.fill('#f-block-q', '1'); await page.fill('#f-block-k', '2'); await page.press('#f-block-k', 'Tab'); },
        (b) => b.block[0] === 1 && b.block[1] === 2],
      ['documents', async () => { await page.fill('#f-documents', '1, 2'); await page.press('#f-documents', 'Tab'); },
        (b) => b.documents.lengths.join() === '1,2'],
      ['prefix', async () => {
        await page.fill('#f-documents', ''); await page.selectOption('#f-mask-kind', 'causal');
        await page.fill('#f-prefix', '2'); await page.press('#f-prefix', 'Tab');
      }, (b) => b.prefix === 2 && b.mask === 'causal'],
      ['chunk', async () => { await page.fill('#f-prefix', ''); await page.fill('#f-chunk', '2'); await page.press('#f-chunk', 'Tab'); },
        (b) => b.chunk === 2],
      ['window', async () => {
        await page.fill('#f-chunk', ''); await page.selectOption('#f-mask-kind', '');
        await page.fill('#f-window-left', '1'); await page.fill('#f-window-right', '0'); await page.press('#f-window-right', 'Tab');
      }, (b) => b.window.left === 1 && b.window.right === 0],
    ];
    let previous = null;
    const pictures = new Set();
    for (const [what, act, check] of steps) {
      await afterRun(page, act);
      const { body, api } = await assertPictures(page, what);
      assert.ok(check(body), `${what}: ${JSON.stringify(body)}`);
      assert.notDeepEqual(body, previous, `${what}: the request changed`);
      previous = body;
      pictures.add(JSON.stringify([api.visible, api.block_map.tiles]));
    }
    assert.ok(pictures.size >= 6, `the rules drew ${pictures.size} different masks`);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('a bad rule\'s problem appears next to its field', async () => {
    const page = await open();
    await afterRun(page, () => page.selectOption('#preset', 'masks-documents').then(() => page.click('#run')));
    await afterRun(page, async () => { await page.fill('#f-documents', '2, 5'); await page.press('#f-documents', 'Tab'); });
    assert.equal(await page.isVisible('#err-documents'), true);
    assert.match(await page.textContent('#err-documents'), /\/documents/);
    assert.equal(await page.getAttribute('#f-documents', 'aria-invalid'), 'true');
    await page.close();
  });

  test('from the keyboard, at phone width, in Korean', async () => {
    const page = await open({ width: 375, height: 800 });
    await page.selectOption('#lang', 'ko');
    await page.waitForFunction(() => document.getElementById('status').textContent === '완료.');
    await afterRun(page, () => page.selectOption('#preset', 'masks-documents').then(() => page.click('#run')));
    // the box's summary takes the focus and closes and opens with the keyboard
    await page.focus('#masks summary');
    await afterRun(page, () => page.keyboard.press('Enter'));
    assert.equal(await page.getAttribute('#masks', 'open'), null);
    await afterRun(page, () => page.keyboard.press('Enter'));
    assert.equal(await page.getAttribute('#masks', 'open'), '');
    await page.focus('#f-mask-kind');
    await afterRun(page, () => page.selectOption('#f-mask-kind', 'causal_top_left'));
    await assertPictures(page, 'in Korean');
    const summary = await page.innerText('#masks summary');
    assert.match(summary, /학습의 마스크/);
    assert.match(await page.textContent('#masks-note'), /희소도/);
    const tip = await page.textContent('#masks-figure svg rect.tile title');
    assert.match(tip, /^타일 \(0, 0\): (가득 참|일부|비어 있음)$/);
    assert.match(await page.textContent('#heatmap svg g.attnd-tile-legend'), /가득 참/);
    // nothing wider than the phone
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 375, `the page is ${wide} px wide`);
    const fig = await page.locator('#masks-figure svg').boundingBox();
    assert.ok(fig && fig.width <= 375 && fig.width > 100, JSON.stringify(fig));
    assert.deepEqual(page.problems, []);
    await page.selectOption('#lang', 'en');
    await page.close();
  });
});
