// tests/browser/backward.test.mjs — the playground's backward pass and its generation with
// a KV cache, in Debian's chromium:
//
// - with the Backward box ticked, Run shows every gradient step the API answers, in its
//   order, with its op, its shape and the same numbers (the same body POSTed here); dS
//   (grad_masked) is marked as softmax's gradient with each row's sum ≈ 0; the seed
//   changes dO; an explained row works its dS by hand (D term by term, each key's
//   P × (dP − D)), the numbers those of the API's answer;
// - the "Generate (KV cache)" example steps through every token with Next, Previous and
//   the arrow keys, each token's drawn weights those of decode.tokens[t].weights, the
//   keys after t left empty, and says the tokens match the full pass;
// - both in Korean after the switch; at 375 px nothing is wider than the screen; no
//   console error anywhere.

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { postJson, startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

const ARTIFACTS = process.env.ATTND_ARTIFACTS ?? path.resolve('build/artifacts');
const HANGUL = /[\uAC00-\uD7A3]/;

let attnd;
let browser;

before(async () => {
  attnd = await startServer();
  browser = await launchChromium('attnd-chromium-backward-');
});

after(async () => {
  await browser?.close();
  await attnd?.stop();
});

/** A fresh tab on the playground in English; console errors and failed requests kept. */
async function openPlayground(viewport) {
  const page = await browser.ctx.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') page.errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) page.errors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  if (await page.inputValue('#lang') !== 'en') await switchLanguage(page, 'en');
  return page;
}

async function runForm(page) {
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  await page.click('#run');
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n ||
    /^(Problem|Fix|The server|문제|표시한)/.test(document.getElementById('status').textContent), before);
  return page.textContent('#status');
}

async function switchLanguage(page, lang) {
  const before = Number(await page.getAttribute('body', 'data-ran') ?? 0);
  await page.selectOption('#lang', lang);
  await page.waitForFunction((n) => Number(document.body.dataset.ran ?? 0) > n, before);
}

const fmt = (x) => Number(x).toFixed(4);

/** A step's table as shown: the row labels, the cells' text and their exact tooltips. */
const stepTable = (page, name) => page.$$eval(`#backward-steps section[data-step="${name}"] tbody tr`,
  (rows) => rows.map((tr) => ({
    label: tr.querySelector('th').textContent,
    cells: [...tr.querySelectorAll('td:not(.extra)')].map((td) => td.textContent),
    exact: [...tr.querySelectorAll('td:not(.extra)')].map((td) => Number(td.title.split(': ').pop())),
    sum: tr.querySelector('td.extra') ? { text: tr.querySelector('td.extra').textContent,
      exact: Number(tr.querySelector('td.extra').title) } : null,
  })));

const rows2 = (m) => (Array.isArray(m[0]) ? m : [m]);

describe('the backward pass', () => {
  test('each gradient step in order, its shape and the numbers the API answers', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    assert.equal(await page.isDisabled('#f-grad-seed'), true);
    await page.check('#f-backward');
    assert.equal(await page.isDisabled('#f-grad-seed'), false);
    assert.equal(await page.inputValue('#f-grad-seed'), '0');
    assert.equal(await runForm(page), 'Done.');
    const body = await page.evaluate(() => readForm());
    assert.deepEqual(body.backward, { seed: 0 });
    const api = (await postJson(attnd.port, '/v1/attention', body)).json();
    const grads = api.steps.filter((s) => s.name === 'delta' || s.name.startsWith('grad_'));
    assert.deepEqual(grads.map((s) => s.name), ['grad_output', 'grad_v', 'grad_weights', 'delta',
      'grad_masked', 'grad_scaled', 'grad_scores', 'grad_q', 'grad_k']);
    // In the backward's box, in the API's order, each with its op and shape.
    const shown = await page.$$eval('#backward-steps section.step', (s) => s.map((x) => ({
      name: x.dataset.step, head: x.querySelector('h3').textContent, shape: x.querySelector('p.shape').textContent,
    })));
    assert.deepEqual(shown.map((s) => s.name), grads.map((s) => s.name));
    shown.forEach((s, i) => {
      assert.equal(s.head, `${grads[i].step} · ${grads[i].name} = ${grads[i].op}`);
      assert.ok(s.shape.endsWith(`(${grads[i].shape.join(', ')}${grads[i].shape.length === 1 ? ',' : ''})`), s.shape);
    });
    // The forward steps stay in their own box, without a gradient among them.
    const forward = await page.$$eval('#steps section.step', (s) => s.map((x) => x.dataset.step));
    assert.deepEqual(forward, ['scores', 'scaled', 'masked', 'weights', 'output']);
    // The numbers: each shown cell is the API's, to 4 decimals, and its tooltip exactly.
    for (const name of ['grad_output', 'grad_v', 'grad_weights', 'grad_masked', 'grad_scores', 'grad_q', 'grad_k']) {
      const table = await stepTable(page, name);
      const want = rows2(api[name]);
      assert.equal(table.length, want.length, name);
      table.forEach((row, i) => {
        assert.deepEqual(row.cells, want[i].map(fmt), `${name} row ${i}`);
        assert.deepEqual(row.exact, want[i], `${name} row ${i} exactly`);
      });
    }
    const delta = await stepTable(page, 'delta');
    assert.deepEqual(delta.map((r) => r.label), ['Q1', 'Q2', 'Q3']);
    assert.deepEqual(delta.map((r) => r.cells[0]), api.delta.map(fmt));
    // grad_v and grad_k are per key; dS is queries by keys.
    assert.deepEqual((await stepTable(page, 'grad_v')).map((r) => r.label), ['사과', '사람', '과일']);
    const ds = await stepTable(page, 'grad_masked');
    assert.deepEqual(ds.map((r) => r.label), ['Q1', 'Q2', 'Q3']);
    // dS is softmax's gradient: marked, and each row's sum shown ≈ 0.
    assert.equal(await page.$eval('#backward-steps section[data-step="grad_masked"]',
      (s) => s.classList.contains('softmax-grad')), true);
    assert.match(await page.textContent('#backward-steps section[data-step="grad_masked"] .note'), /sums to 0/);
    assert.equal(await page.textContent('#backward-steps section[data-step="grad_masked"] thead th.extra'), 'row sum');
    ds.forEach((row, i) => {
      assert.ok(Math.abs(row.sum.exact) < 1e-12, `row ${i} sums to ${row.sum.exact}`);
      assert.equal(row.sum.text, '0.0000');
      assertCloseTo(row.sum.exact, api.grad_masked[i].reduce((a, x) => a + x, 0));
    });
    assert.match(await page.textContent('#backward-note'), /seed 0/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('the seed makes dO: another seed, other numbers, the API\'s again', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed000');
    await page.check('#f-backward');
    assert.equal(await runForm(page), 'Done.');
    const first = await stepTable(page, 'grad_output');
    await page.fill('#f-grad-seed', '5');
    assert.equal(await runForm(page), 'Done.');
    const body = await page.evaluate(() => readForm());
    assert.deepEqual(body.backward, { seed: 5 });
    const api = (await postJson(attnd.port, '/v1/attention', body)).json();
    const second = await stepTable(page, 'grad_output');
    assert.notDeepEqual(second.map((r) => r.cells), first.map((r) => r.cells));
    assert.deepEqual(second.map((r) => r.exact), api.grad_output);
    assert.deepEqual((await stepTable(page, 'grad_q')).map((r) => r.exact), api.grad_q);
    // A seed the server refuses lands on the seed's field.
    await page.fill('#f-grad-seed', 'x');
    assert.match(await runForm(page), /^Problem: HTTP 422/);
    assert.match(await page.textContent('#err-backward'), /\/backward\/seed\)$/);
    assert.equal(await page.getAttribute('#f-grad-seed', 'aria-invalid'), 'true');
    // Unticked: no backward, no box.
    await page.fill('#f-grad-seed', '0');
    await page.uncheck('#f-backward');
    assert.equal(await runForm(page), 'Done.');
    assert.equal(await page.isHidden('#backward-box'), true);
    assert.equal('backward' in await page.evaluate(() => readForm()), false);
    assert.deepEqual(page.errors.filter((m) => !/422/.test(m)), []);
    await page.close();
  });

  test('an explained row works its dS by hand: D term by term, each key\'s P × (dP − D)', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    await page.check('#f-backward');
    await page.fill('#f-grad-seed', '3');
    assert.equal(await runForm(page), 'Done.');
    await page.click('#explain-buttons button[data-row="1"]');
    await page.waitForSelector('#explain-backward:not([hidden])');
    const body = await page.evaluate(() => readForm());
    const api = (await postJson(attnd.port, '/v1/attention', { ...body, explain: { row: 1 } })).json();
    const lines = (await page.textContent('#explain-backward-lines')).split('\n');
    assert.equal(await page.getAttribute('#explain-backward-lines', 'data-row'), '1');
    assert.match(await page.textContent('#explain-backward-title'), /Q2/);
    const dO = api.grad_output[1];
    const out = api.output[1];
    assert.equal(lines[0], `dO[Q2] = [${dO.map(fmt).join(', ')}]`);
    assert.equal(lines[1], `D = Σ dO·output = ${dO.map((a, c) => `${fmt(a)}×${fmt(out[c])}`).join(' + ')} = ${fmt(api.delta[1])}`);
    const keys = ['사과', '사람', '과일'];
    keys.forEach((k, j) => {
      assert.equal(lines[2 + j], `dS[${k}] = weight × (dP − D) = ${fmt(api.weights[1][j])} × ` +
        `(${fmt(api.grad_weights[1][j])} − ${fmt(api.delta[1])}) = ${fmt(api.grad_masked[1][j])}`);
    });
    assert.equal(lines[5], 'Σ dS = 0.0000: the row sums to 0');
    // explain.backward, where the server writes it, says the same numbers.
    const x = api.explain.backward;
    if (x) {
      assert.deepEqual(x.grad_output, dO);
      assert.equal(x.delta, api.delta[1]);
      x.keys.forEach((key, j) => assert.equal(key.grad_masked, api.grad_masked[1][j]));
    }
    // The forward row is still worked above it.
    assert.match(await page.textContent('#explain'), /^explain {2}/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

function assertCloseTo(a, b) {
  assert.ok(Math.abs(a - b) < 1e-15, `${a} vs ${b}`);
}

/** The decode view's drawn weights: rows of heads, each the cached keys' exact weights. */
const drawnDecode = (page) => page.$$eval('#decode-weights tbody tr', (rows) => rows.map((tr) => ({
  cached: [...tr.querySelectorAll('td.cached')].map((td) => Number(td.dataset.weight)),
  text: [...tr.querySelectorAll('td.cached')].map((td) => td.textContent),
  empty: tr.querySelectorAll('td.not-cached').length,
})));

describe('generating with a KV cache', () => {
  test('Next, Previous and the arrow keys step through every token, weights as the API answers', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'decode');
    assert.equal(await page.isChecked('#mh-decode'), true);
    assert.equal(await page.inputValue('#mh-prefill'), '2');
    assert.equal(await runForm(page), 'Done.');
    const body = await page.evaluate(() => readForm());
    assert.deepEqual(body.decode, { prefill: 2 });
    const api = (await postJson(attnd.port, '/v1/multihead', body)).json();
    const tokens = api.decode.tokens;
    const n = body.random.n;
    assert.equal(tokens.length, n - 2);
    assert.equal(await page.isVisible('#decode-box'), true);
    assert.match(await page.textContent('#decode-match'), /within 1e-12/);
    assert.equal(await page.getAttribute('#decode-match', 'data-matches'), 'true');
    assert.ok(api.decode.matches_full_pass <= 1e-12);
    const check = async (i) => {
      const tok = tokens[i];
      assert.equal(await page.getAttribute('#decode-weights', 'data-t'), String(tok.t));
      assert.equal(await page.textContent('#decode-at'), `token ${tok.t} (${i + 1} of ${tokens.length})`);
      const drawn = await drawnDecode(page);
      assert.equal(drawn.length, body.heads);
      drawn.forEach((row, h) => {
        assert.deepEqual(row.cached, tok.weights[h], `token ${tok.t} head ${h}`);
        assert.deepEqual(row.text, tok.weights[h].map(fmt));
        assert.equal(row.cached.length, tok.t + 1); // the cache: keys 0..t
        assert.equal(row.empty, n - tok.t - 1); // the keys not cached yet
      });
      assert.match(await page.textContent('#decode-cache'),
        new RegExp(`keys 0\\.\\.${tok.t}: cache k, v \\(${tok.t + 1}, \\d+\\) × ${tok.cache_k.length} kv head`));
    };
    for (let i = 0; i < tokens.length; i++) {
      await check(i);
      if (i < tokens.length - 1) await page.click('#decode-next');
    }
    assert.equal(await page.getAttribute('#decode-next', 'aria-disabled'), 'true');
    await page.click('#decode-next', { force: true }); // past the last (aria-disabled): stays
    await check(tokens.length - 1);
    await page.click('#decode-prev');
    await check(tokens.length - 2);
    // The keyboard: focus the weights, then ←, →, Home, End.
    await page.focus('#decode-weights');
    await page.keyboard.press('ArrowLeft');
    await check(tokens.length - 3);
    await page.keyboard.press('Home');
    await check(0);
    assert.equal(await page.getAttribute('#decode-prev', 'aria-disabled'), 'true');
    await page.keyboard.press('ArrowRight');
    await check(1);
    await page.keyboard.press('End');
    await check(tokens.length - 1);
    // Tab reaches the buttons; Enter on Previous steps back.
    await page.focus('#decode-prev');
    await page.keyboard.press('Enter');
    await check(tokens.length - 2);
    // The head view still draws the full causal pass (asked without decode).
    assert.equal(await page.isVisible('#headview-box'), true);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('the box and prefill edit the JSON; another n and prefill draw their tokens', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'multihead');
    assert.equal(await page.isChecked('#mh-decode'), false);
    await page.check('#mh-decode');
    let body = JSON.parse(await page.inputValue('#f-mh'));
    assert.deepEqual(body.decode, { prefill: 2 });
    assert.equal(body.mask, 'causal');
    await page.fill('#mh-prefill', '3');
    await page.fill('#mh-n', '5');
    body = JSON.parse(await page.inputValue('#f-mh'));
    assert.deepEqual(body.decode, { prefill: 3 });
    assert.equal(await runForm(page), 'Done.');
    const api = (await postJson(attnd.port, '/v1/multihead', body)).json();
    assert.deepEqual(api.decode.tokens.map((t) => t.t), [3, 4]);
    const drawn = await drawnDecode(page);
    drawn.forEach((row, h) => assert.deepEqual(row.cached, api.decode.tokens[0].weights[h]));
    await page.uncheck('#mh-decode');
    body = JSON.parse(await page.inputValue('#f-mh'));
    assert.equal('decode' in body, false);
    assert.equal(await runForm(page), 'Done.');
    assert.equal(await page.isHidden('#decode-box'), true);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe('in Korean, and at phone width', () => {
  test('the backward and the KV cache speak Korean after the switch', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    await page.check('#f-backward');
    assert.equal(await runForm(page), 'Done.');
    await switchLanguage(page, 'ko');
    assert.equal(await page.textContent('#status'), '완료.');
    assert.equal(await page.textContent('#backward-title'), '역전파: 기울기');
    assert.match(await page.innerText('#f-backward-label'), /역전파.*기울기/);
    assert.match(await page.textContent('#backward-note'), /출력/);
    const note = await page.textContent('#backward-steps section[data-step="grad_masked"] .note');
    assert.match(note, /softmax 의 기울기/);
    assert.match(note, /가중치/);
    assert.equal(await page.textContent('#backward-steps section[data-step="grad_masked"] thead th.extra'), '행의 합');
    await page.click('#explain-buttons button[data-row="0"]');
    await page.waitForSelector('#explain-backward:not([hidden])');
    const lines = await page.textContent('#explain-backward-lines');
    assert.match(lines, /D = Σ dO·출력 = /);
    assert.match(lines, /dS\[사과\] = 가중치 × \(dP − D\) = /);
    assert.match(lines, /행의 합은 0/);
    assert.match(await page.textContent('#explain-backward-title'), /기울기/);

    await page.selectOption('#preset', 'decode');
    assert.equal(await runForm(page), '완료.');
    assert.equal(await page.textContent('#decode-title'), '생성 (KV 캐시)');
    assert.equal(await page.textContent('#decode-prev'), '이전');
    assert.equal(await page.textContent('#decode-next'), '다음');
    assert.match(await page.textContent('#decode-at'), /^토큰 2 \(4 개 중 1 번째\)$/);
    assert.match(await page.textContent('#decode-help'), /토큰.*키와 값/);
    assert.match(await page.textContent('#decode-cache'), /캐시/);
    assert.match(await page.textContent('#decode-weights .decode-output'), /출력/);
    assert.match(await page.textContent('#decode-match'), /같은 가중치와 출력/);
    assert.match(await page.innerText('#mh-decode-label'), /생성 \(KV 캐시\): 토큰 하나씩/);
    assert.match(await page.textContent('#preset-note'), HANGUL);
    // Back to English: the English words return.
    await switchLanguage(page, 'en');
    assert.equal(await page.textContent('#decode-next'), 'Next');
    assert.equal(await page.textContent('#decode-title'), 'Generate (KV cache)');
    assert.match(await page.textContent('#decode-at'), /^token 2 \(1 of 4\)$/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('at 375 px the backward and the decode views fit the screen', async () => {
    const page = await openPlayground({ width: 375, height: 800 });
    await page.selectOption('#preset', 'seed002-queries');
    await page.check('#f-backward');
    assert.equal(await runForm(page), 'Done.');
    await page.click('#explain-buttons button[data-row="2"]');
    await page.waitForSelector('#explain-backward:not([hidden])');
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(await wide() <= 375, `page is ${await wide()} px wide`);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.locator('#backward-box').screenshot({ path: path.join(ARTIFACTS, 'playground-backward-375.png') });
    await page.selectOption('#preset', 'decode');
    assert.equal(await runForm(page), 'Done.');
    await page.click('#decode-next');
    assert.ok(await wide() <= 375, `page is ${await wide()} px wide`);
    await page.locator('#decode-box').screenshot({ path: path.join(ARTIFACTS, 'playground-decode-375.png') });
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});
