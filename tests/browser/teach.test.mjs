// tests/browser/teach.test.mjs — the playground's teaching parts in a real browser
// (Debian's chromium driven by playwright-core): a click on a heatmap row shows that
// row worked out by hand (the first note's e^1 ≈ 2.72, sum 3.72, 0.27 and 0.73), the
// "Pitfalls" presets show the mistake beside the answer (numpy's error, the columns
// that sum to 1, inf and nan), and multi-head colours reach the darkest blue with
// vmax "auto".

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { postJson, request, startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

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

async function openPlayground() {
  const page = await ctx.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (405|404|422)/.test(m.text())) page.problems.push(m.text());
  });
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

async function runPreset(page, id) {
  await page.selectOption('#preset', id);
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  await page.click('#run');
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n, before);
}

describe('the playground teaches', () => {
  test("a click on the heatmap's second row works it out as the first note does", async () => {
    const page = await openPlayground();
    await runPreset(page, 'seed000');
    assert.equal(await page.isHidden('#explain-box'), true);
    // The second row's first cell, where a learner clicks: on its number, 0.27.
    await page.locator('#heatmap svg text', { hasText: /^0\.27$/ }).click();
    await page.waitForSelector('#explain-box:not([hidden])');
    await page.waitForFunction(() => document.getElementById('explain').textContent.includes('5 mix V'));
    const text = await page.textContent('#explain');
    assert.match(text, /^explain {2}query q1 \(row 1\)/);
    for (const line of ['q1·k1 = 0×1 + 1×1 + 0×1 + 1×1 = 2', 'e^1 ≈ 2.7183', 'sum 1 + 2.7183 ≈ 3.7183',
      '1 ÷ 3.7183 ≈ 0.2689', '0.2689×[10, 0] + 0.7311×[0, 10] = [2.6894, 7.3106]']) {
      assert.ok(text.includes(line), `${line} in\n${text}`);
    }
    assert.equal(await page.textContent('#explain-title'), 'Query q1 worked out by hand');
    // The keyboard's way: a button per query.
    await page.click('#explain-buttons button[data-row="0"]');
    await page.waitForFunction(() => document.getElementById('explain').dataset.row === '0');
    assert.match(await page.textContent('#explain'), /e\^1 ≈ 2\.7183\n/);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('the Pitfalls presets show the mistake beside the answer', async () => {
    const page = await openPlayground();
    const groups = await page.$$eval('#preset optgroup', (gs) => gs.map((g) => [g.label, g.children.length]));
    assert.deepEqual(groups, [['Pitfalls', 3]]);
    await runPreset(page, 'pitfall-no-transpose');
    const numpy = (await postJson(attnd.port, '/v1/attention', {
      q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]], pitfall: 'no_transpose',
    })).json().pitfall.error;
    assert.equal(await page.textContent('#pitfall .pitfall-error'), `numpy raises ValueError: ${numpy}`);
    assert.match(numpy, /size 2 is different from 4/);

    await runPreset(page, 'pitfall-column-softmax');
    const wrong = await page.$$eval('#pitfall section[data-wrong="weights"] tbody tr',
      (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => Number(td.textContent))));
    for (let j = 0; j < 3; j++) assert.ok(Math.abs(wrong[0][j] + wrong[1][j] + wrong[2][j] - 1) < 2e-4, `column ${j}`);
    assert.ok(Math.abs(wrong[2].reduce((a, b) => a + b, 0) - 1) > 0.01, 'a row that does not sum to 1');

    await runPreset(page, 'pitfall-no-max');
    const exp = await page.$$eval('#pitfall section[data-wrong="exp"] tbody tr td', (t) => t.map((x) => x.textContent));
    assert.deepEqual(exp, ['inf/nan', '1.0000', '1.0000', '2.7183']);
    assert.ok((await page.textContent('#pitfall')).includes('(inf or nan, shown as null): 4'));
    // The right weights are there too, finite.
    const right = await page.$$eval('#steps section[data-step="weights"] tbody tr td:not(.extra)', (t) => t.map((x) => x.textContent));
    assert.deepEqual(right, ['1.0000', '0.0000', '0.2689', '0.7311']);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('multi-head heatmaps use the whole colour scale (vmax "auto")', async (t) => {
    if ((await request(attnd.port, { path: '/v1/multihead' })).status !== 405) {
      t.skip('this server has no /v1/multihead');
      return;
    }
    const page = await openPlayground();
    await runPreset(page, 'multihead');
    const colours = await page.$$eval('#heatmap td', (tds) => tds.map((td) => td.style.backgroundColor));
    assert.ok(colours.includes('rgb(8, 48, 107)'), 'the largest weight is the darkest blue');
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

describe('the playground computes in a kernel\'s format', () => {
  test('float16 beside float64: the report beside the steps, and where the format lost a number', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed000');
    assert.equal(await page.isDisabled('#f-accumulate'), true, 'no accumulator for float64');
    await page.selectOption('#f-precision', 'float16');
    assert.equal(await page.isDisabled('#f-accumulate'), false);
    const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
    await page.click('#run');
    await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n, before);
    await page.waitForSelector('#precision-box:not([hidden])');
    // The same request over HTTP: the table holds its report, step by step.
    const body = { q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
      precision: { format: 'float16' } };
    const want = (await postJson(attnd.port, '/v1/attention', body)).json().precision_report;
    const rows = await page.$$eval('#precision tr[data-step]', (trs) => trs.map((tr) =>
      [tr.dataset.step, ...[...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)]));
    assert.deepEqual(rows.map((r) => r[0]), Object.keys(want));
    const w = want.weights, got = rows.find((r) => r[0] === 'weights');
    assert.equal(got[1], w.max_abs_error === 0 ? '0' : w.max_abs_error.toPrecision(3));
    assert.equal(got[3], w.max_rel_cell ? `[${w.max_rel_cell.join(', ')}]` : '-');
    assert.match(await page.textContent('#precision-note'), /Computed in float16, sums in float32; the largest finite value 65504/);
    // Summed in float16, a sum past 65504 is named, in red.
    await page.fill('#f-q', '[[200, 200, 0, 0], [0, 1, 0, 1]]');
    await page.fill('#f-k', '[[200, 200, 0, 0], [1, 1, 1, 1]]');
    await page.selectOption('#f-accumulate', 'same');
    const again = Number(await page.getAttribute('body', 'data-ran') ?? 0);
    await page.click('#run');
    await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n, again);
    assert.match(await page.textContent('#precision-note'), /The first cell that is not finite: scores \[0, 0\]/);
    assert.equal(await page.$$eval('#precision tr.non-finite[data-step="scores"]', (x) => x.length), 1);
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});
