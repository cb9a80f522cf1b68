// tests/browser/lang.test.mjs — the playground's language switch in a real browser
// (Debian's chromium, playwright-core): English/한국어 translates the page's own words,
// and the answers come back in Korean because every request says Accept-Language: ko.
// The choice outlives a reload.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

let attnd;
let browser;
let ctx;

before(async () => {
  attnd = await startServer();
  browser = await launchChromium('attnd-chromium-lang-');
  ctx = browser.ctx;
});

after(async () => {
  await browser?.close();
  await attnd?.stop();
});

async function open() {
  const page = await ctx.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.requestsLanguages = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().includes('/v1/')) page.requestsLanguages.push(r.headers()['accept-language']);
  });
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

test('switching to 한국어 translates the page and the API answers in Korean', async () => {
  const page = await open();
  assert.equal(await page.textContent('label[for="preset"]'), 'Example');
  // The example drawn on load was asked for in English, before any switch.
  const onLoad = page.requestsLanguages.splice(0);
  assert.ok(onLoad.length > 0 && onLoad.every((l) => l === 'en'), onLoad.join(','));
  await page.selectOption('#lang', 'ko');
  // The page's own words: a label, a heading, a preset's name, the Run button.
  assert.equal(await page.textContent('label[for="preset"]'), '예제');
  assert.equal(await page.textContent('#heatmap-box h2'), '가중치 히트맵');
  assert.equal(await page.textContent('#run'), '실행');
  assert.equal(await page.getAttribute('html', 'lang'), 'ko');
  const names = await page.$$eval('#preset option', (os) => os.map((o) => o.textContent));
  assert.ok(names.includes('주의할 점: K 를 전치해서 보냄'), names.join(' | '));

  // The first note's pitfall: its problem comes back in Korean, next to K.
  await page.selectOption('#preset', 'pitfall-kt');
  await page.click('#run');
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await page.textContent('#problem-title'), '422 shape 가 맞지 않습니다');
  assert.equal(await page.textContent('#problem-detail'),
    'q 는 열이 4 개인데 k 는 2 개입니다: Q @ K^T 를 하려면 둘 다 d_k 개의 열이 있어야 합니다');
  const kError = await page.textContent('#err-k');
  assert.match(kError, /— 힌트: k 가 전치된 것 같습니다/);
  assert.ok(page.requestsLanguages.length > 0 && page.requestsLanguages.every((l) => l === 'ko'),
    page.requestsLanguages.join(','));

  // The heatmap of a good request is drawn with Korean axis names.
  await run(page, 'seed002-queries');
  await page.waitForSelector('#heatmap svg');
  assert.match(await page.textContent('#heatmap svg'), /쿼리/);
  assert.equal(await page.textContent('#status'), '완료.');
  assert.deepEqual(page.problems, []);
  await page.close();
});

async function run(page, id) {
  await page.selectOption('#preset', id);
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  await page.click('#run');
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n, before);
}

const rowsOf = (page, sel) => page.$$eval(sel, (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));

test('the teaching parts speak Korean too: ties, a row by hand, the pitfalls', async () => {
  const page = await open(); // the previous test chose 한국어 in this profile
  assert.equal(await page.inputValue('#lang'), 'ko');
  // Q3 = [0.5, 0.5] scores 0.5 against every key of the second note: a tie (동점).
  await run(page, 'seed002-queries');
  assert.equal((await rowsOf(page, '#summary tbody tr'))[2][1], '동점 (사과, 사람, 과일)');
  await run(page, 'exp-direction');
  const turned = await rowsOf(page, '#compare tbody tr');
  assert.equal(turned[2][3], '동점이 깨짐');
  assert.equal(turned[0][3], '변화 없음');
  // The first note's example worked by hand, in the notes' words, from the server.
  await run(page, 'seed000');
  await page.click('#explain-buttons button[data-row="0"]');
  await page.waitForFunction(() => document.getElementById('explain').textContent.includes('5 V 섞기'));
  assert.equal(await page.textContent('#explain-title'), '손으로 계산한 쿼리 q0');
  const text = await page.textContent('#explain');
  assert.match(text, /^explain {2}쿼리 q0 \(행 0\)/);
  assert.ok(text.includes('  1 비교     q0·k0 = 1×1 + 0×0 + 1×1 + 0×0 = 2'), text);
  assert.equal(await page.textContent('#explain-buttons button[data-row="1"]'), 'q1 계산 보기');
  // A pitfall preset: its name, its title and a wrong step's heading.
  const names = await page.$$eval('#preset option', (os) => os.map((o) => o.textContent));
  assert.ok(names.includes('주의할 점: 열 방향 softmax'), names.join(' | '));
  await run(page, 'pitfall-column-softmax');
  assert.equal(await page.textContent('#pitfall h3'), '주의할 점: column_softmax');
  assert.equal(await page.textContent('#pitfall section[data-wrong="weights"] h4'),
    'weights, 잘못된 방법으로 계산');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('the choice outlives a reload, and English comes back when chosen', async () => {
  const page = await open(); // the previous test chose 한국어 in this profile
  assert.equal(await page.inputValue('#lang'), 'ko');
  assert.equal(await page.textContent('label[for="preset"]'), '예제');
  await page.selectOption('#lang', 'en');
  assert.equal(await page.textContent('label[for="preset"]'), 'Example');
  assert.equal(await page.textContent('#run'), 'Run');
  await page.selectOption('#preset', 'pitfall-kt');
  await page.click('#run');
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await page.textContent('#problem-title'), '422 Shapes do not fit');
  assert.deepEqual(page.problems, []);
  await page.close();
});
