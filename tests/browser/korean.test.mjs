// tests/browser/korean.test.mjs — the playground in Korean throughout, in Debian's
// chromium: with 한국어 chosen, what the page writes while it runs (the shapes line, the
// summary and experiment tables, the status line of a failing or unreachable request)
// reads in the notes' words, with none of the English those regions said before; and
// choosing English brings every English word back. The numbers shown are checked too,
// against softmax worked out here by a plain loop.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startServer } from '../http/lib.mjs';
import { launchChromium } from './lib.mjs';

let attnd;
let browser;

before(async () => {
  attnd = await startServer();
  browser = await launchChromium('attnd-chromium-korean-');
});

after(async () => {
  await browser?.close();
  await attnd?.stop();
});

const HANGUL = /[\uAC00-\uD7A3]/;
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** text has Hangul and none of `english` (each a whole word or phrase, case as shown). */
function assertKorean(text, english, where) {
  assert.match(text, HANGUL, `${where}: no Hangul in ${JSON.stringify(text)}`);
  for (const w of english) {
    assert.doesNotMatch(text, new RegExp(`(^|[^A-Za-z_])${escape(w)}($|[^A-Za-z_])`),
      `${where} still says "${w}": ${JSON.stringify(text)}`);
  }
}

/** The row-wise softmax of q·kᵀ·scale, by a plain loop (the reference, not the page). */
function softmaxRows(q, k, scale) {
  return q.map((qi) => {
    const s = k.map((kj) => qi.reduce((acc, x, c) => acc + x * kj[c], 0) * scale);
    const m = Math.max(...s);
    const e = s.map((x) => Math.exp(x - m));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  });
}

const K2 = [[1, 0], [0, 1], [0.8, 0.2]];
const KEYS2 = ['사과', '사람', '과일'];

async function open(lang) {
  const page = await browser.ctx.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  await page.goto(`http://127.0.0.1:${attnd.port}/`);
  await page.waitForSelector('body[data-ready="true"]');
  if (lang) {
    // The example drawn on load is asked for again in the language chosen: wait for it.
    const ran = Number(await page.getAttribute('body', 'data-ran'));
    await page.selectOption('#lang', lang);
    await page.waitForFunction((n) => Number(document.body.dataset.ran) > n, ran);
  }
  return page;
}

/** Runs the form and waits for its status line to settle (done, a problem or no server). */
async function runForm(page) {
  await page.evaluate(() => { document.getElementById('status').textContent = ''; });
  await page.click('#run');
  await page.waitForFunction(() => {
    const s = document.getElementById('status').textContent;
    return s !== '' && !/^(Running…|계산 중…)$/.test(s);
  });
  return page.textContent('#status');
}

async function runPreset(page, id) {
  await page.selectOption('#preset', id);
  return runForm(page);
}

const rowsOf = (page, sel) => page.$$eval(sel, (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));

// What each region said in English before the switch covered it.
const ENGLISH = {
  facts: ['mask', 'none', 'scale', 'weights', 'output'],
  summary: ['query', 'winning key', 'its weight', 'entropy', 'row sum'],
  weightsHead: ['sum'],
  compare: ['Against', 'Lecture', 'query', 'before', 'after', 'changed', 'highest weight'],
  status: ['Problem', 'Done', 'The server could not be reached', 'Try again'],
  fieldError: ['is required', 'not JSON'],
  autoLabel: ['colours up to the largest weight'],
  variantName: ['Variant', 'rotary positions', 'with a causal mask', 'a sliding window', 'with a sink token', 'a sink logit'],
  variantNote: ['the', 'scores', 'weights', 'Each', 'key', 'query', 'rows', 'turn', 'shrink', 'dropped', 'seed drops'],
  form: ['Inputs', 'Mask', 'Scale', 'Pitfall', 'none', 'Variants', 'Round', 'decimals', 'Mask semantics', 'attend',
    'blocked', 'Bias', 'optional', 'Query labels', 'Key labels', 'comma-separated'],
  headView: ['Head view', 'Heads shown', 'query', 'key', 'tokens', 'Queries', 'keys', 'on the left',
    'on the right', 'opacity', 'hover', 'weight'],
};

describe('한국어: what the page writes while it runs', () => {
  test('a single-head example: the shapes line, the summary and the weights table', async () => {
    const page = await open('ko');
    assert.equal(await runPreset(page, 'seed002-queries'), '완료.');
    const facts = await page.innerText('#facts');
    assert.equal(facts, 'Q (3, 2) · K (3, 2) · V (3, 2) · 마스크 없음 · d_k 2 · 점수 조정 ×1 → 가중치 (3, 3), 출력 (3, 2)');
    assertKorean(facts, ENGLISH.facts, '#facts');

    const summary = await page.innerText('#summary-box');
    assertKorean(summary, ENGLISH.summary, '#summary-box');
    const [head, ...rows] = await rowsOf(page, '#summary tr');
    assert.deepEqual(head, ['쿼리', '가장 높은 가중치의 Key', '최고 가중치', '엔트로피 (nats)', '행의 합']);
    const w = softmaxRows([[1, 0], [0, 1], [0.5, 0.5]], K2, 1);
    assert.deepEqual(rows[0].slice(0, 3), ['Q1', '사과', Math.max(...w[0]).toFixed(4)]);
    assert.deepEqual(rows[1].slice(0, 3), ['Q2', '사람', Math.max(...w[1]).toFixed(4)]);
    assert.equal(rows[0][4], '1.0000');

    const weightsHead = await rowsOf(page, '#steps section[data-step="weights"] thead tr');
    assert.deepEqual(weightsHead[0], ['', ...KEYS2, '합']);
    assertKorean(weightsHead[0].join(' '), ENGLISH.weightsHead, 'the weights table');
    assertKorean(await page.innerText('#f-auto-label'), ENGLISH.autoLabel, 'the vmax auto box');
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('an experiment: the comparison table, its note, headers and changes', async () => {
    const page = await open('ko');
    assert.equal(await runPreset(page, 'exp-magnitude'), '완료.');
    const compare = await page.innerText('#compare-box');
    assertKorean(compare, ENGLISH.compare, '#compare-box');
    const [head, q1] = await rowsOf(page, '#compare tr');
    assert.deepEqual(head, ['쿼리', '실험 전', '실험 후', '변화']);
    const before = Math.max(...softmaxRows([[1, 0]], K2, 1)[0]);
    const afterW = Math.max(...softmaxRows([[2, 0]], K2, 1)[0]);
    assert.deepEqual(q1, ['Q1', `사과 ${before.toFixed(4)}`, `사과 ${afterW.toFixed(4)}`, '같은 키, 가중치가 바뀜']);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('a failing request, a field the page cannot read, and a server out of reach', async () => {
    const page = await open('ko');
    assert.equal(await runPreset(page, 'pitfall-kt'), '문제: HTTP 422.');
    assertKorean(await page.innerText('#problem'), [], '#problem');

    await page.fill('#f-q', '');
    assert.equal(await runForm(page), '표시한 필드를 고치세요.');
    assert.equal(await page.textContent('#err-q'), 'q 는 꼭 있어야 합니다');
    await page.fill('#f-q', '[[1, 0');
    await runForm(page);
    const notJson = await page.textContent('#err-q');
    assert.match(notJson, /^JSON 이 아닙니다: /);
    assertKorean(notJson, ENGLISH.fieldError, '#err-q');

    // A busy server's 503 (its Retry-After is the contract) and no server at all.
    await page.selectOption('#preset', 'seed000');
    await page.route('**/v1/attention', (r) => r.fulfill({
      status: 503, headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '3' },
      body: JSON.stringify({ type: '/problems/unavailable', title: '사용할 수 없습니다', status: 503, detail: '바쁨' }),
    }));
    assert.equal(await runForm(page), '문제: HTTP 503. 3 초 뒤에 다시 해 보세요.');
    await page.unroute('**/v1/attention');
    await page.route('**/v1/attention', (r) => r.abort('connectionrefused'));
    const gone = await runForm(page);
    assert.match(gone, /^서버에 연결할 수 없습니다: /);
    assertKorean(gone, ENGLISH.status, '#status');
    await page.close();
  });
});

describe('한국어: the multi-head example and its head view', () => {
  test('the shapes, the heads\' captions, the head view\'s note, buttons, titles and tooltips', async () => {
    const page = await open('ko');
    assert.equal(await runPreset(page, 'multihead'), '완료.');
    await page.waitForSelector('#headview svg');
    assert.equal(await page.innerText('#facts'), 'x (4, 8) · w_q (8, 8) · w_k (8, 8) · w_v (8, 8) · w_o (8, 8) · ' +
      'q (4, 8) · k (4, 8) · v (4, 8) · 마스크 없음 · 편향 (bias) 없음 · 가중치 (2, 4, 4) · head 출력 (2, 4, 4) · ' +
      'concat (4, 8) · 출력 (4, 8)');
    assertKorean(await page.innerText('#facts'), ENGLISH.facts, '#facts');
    assert.deepEqual(await page.$$eval('#heatmap figcaption', (f) => f.map((x) => x.textContent)),
      ['head 0', 'head 1', 'head 전체의 평균']);

    const view = await page.innerText('#headview-box');
    assertKorean(view, ENGLISH.headView, '#headview-box');
    assert.match(view, /^head 보기\n/);
    assert.deepEqual(await page.$$eval('#headview button.head-toggle', (b) => b.map((x) => x.textContent)),
      ['head 0', 'head 1']);
    assert.equal(await page.getAttribute('#headview .headview-heads', 'aria-label'), '보이는 head');
    const figure = await page.textContent('#headview svg > title');
    assert.equal(figure, 'head 보기: head 2 개, 왼쪽에 토큰 4 개, 오른쪽에 4 개. 선의 진하기가 Attention 가중치입니다');
    const tokens = await page.$$eval('#headview svg text.token title', (t) => t.map((x) => x.textContent));
    assert.deepEqual(tokens, ['쿼리 0: t0', '쿼리 1: t1', '쿼리 2: t2', '쿼리 3: t3', '키 0: t0', '키 1: t1', '키 2: t2', '키 3: t3']);
    // One line a head, query and key (2 × 4 × 4), each titled with its head.
    const lines = await page.$$eval('#headview svg line.attn title', (t) => t.map((x) => x.textContent));
    assert.equal(lines.length, 32);
    assert.ok(lines.every((l) => /^t\d → t\d: [\d.e-]+ \(head [01]\)$/.test(l)), lines[0]);
    for (const text of [figure, ...tokens]) assertKorean(text, ENGLISH.headView, 'a head view title');
    assert.equal(await page.innerText('#multi-fields .help').then((t) => HANGUL.test(t)), true);
    assert.equal(await page.textContent('#mh-mask-semantics option[value="block"]'), 'block: 1 = 가림');
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

const VARIANTS = ['variant-rope', 'variant-softcap', 'variant-alibi', 'variant-window', 'variant-sink', 'variant-dropout'];

describe('한국어: the variants and the form around them', () => {
  test('every variant example\'s name and note, the Variants field, and softcap run', async () => {
    const page = await open('ko');
    const names = await page.$$eval('#preset option', (os) => Object.fromEntries(os.map((o) => [o.value, o.textContent])));
    for (const id of VARIANTS) {
      assertKorean(names[id], ENGLISH.variantName, `the name of ${id}`);
      await page.selectOption('#preset', id);
      assertKorean(await page.textContent('#preset-note'), ENGLISH.variantNote, `the note of ${id}`);
    }
    assert.equal(names['variant-softcap'], '변형: softcap (Gemma 2)');
    assertKorean(await page.innerText('label[for="f-variants"]'), ['Variants', 'optional JSON object'], 'the Variants label');
    assertKorean(await page.innerText('#form-help'), ['Matrices are JSON arrays', 'a single query may be', 'runs from any field'], '#form-help');
    assertKorean(await page.innerText('#single-fields'), ENGLISH.form, '#single-fields');
    assertKorean(await page.innerText('header'), ['every step shown', 'Pick an example', 'API description'], 'header');
    assert.equal(await page.title(), 'attnd 플레이그라운드: scaled dot-product attention, 단계별로');

    // softcap's step, in Korean around it, with c·tanh(scaled/c) worked out here.
    assert.equal(await runPreset(page, 'variant-softcap'), '완료.');
    assert.equal(await page.innerText('#facts'),
      'Q (2, 4) · K (2, 4) · V (2, 2) · 마스크 없음 · d_k 4 · 점수 조정 ×0.5 → 가중치 (2, 2), 출력 (2, 2)');
    const capped = await rowsOf(page, '#steps section[data-step="softcapped"] tbody tr');
    const cap = (x) => (0.5 * Math.tanh(x / 0.5)).toFixed(4);
    assert.deepEqual(capped, [['q0', cap(1), cap(1)], ['q1', cap(0), cap(1)]]);
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

/** The drawn SVG's colour bar: its tick labels, bottom (vmin) to top (vmax). */
const colourBar = (page) => page.$$eval('#heatmap svg rect[fill="url(#attnd-blues)"]',
  (bars) => [...bars[0].parentNode.querySelectorAll('text')].map((t) => t.textContent));

describe('the heatmap\'s vmin, vmax and title fields', () => {
  test('vmax auto and a title reach the SVG: the title drawn, the colour bar ending at the largest weight', async () => {
    const page = await open('ko');
    await page.selectOption('#preset', 'seed002-queries');
    assert.equal(await page.inputValue('#f-vmax'), '');
    await page.check('#f-auto');
    assert.equal(await page.inputValue('#f-vmax'), 'auto', 'the box writes vmax "auto"');
    await page.fill('#f-htitle', '사과 실험');
    const sent = page.waitForRequest((r) => r.url().includes('format=svg'));
    assert.equal(await runForm(page), '완료.');
    assert.deepEqual(JSON.parse((await sent).postData()).heatmap, { vmax: 'auto', title: '사과 실험' });
    await page.waitForSelector('#heatmap svg');
    assert.match(await page.textContent('#heatmap svg > title'), /^사과 실험 /);
    const texts = await page.$$eval('#heatmap svg text', (t) => t.map((x) => x.textContent));
    assert.ok(texts.includes('사과 실험'), texts.join(' | '));
    // The second note's three queries: Q2's weight of 사람 is the largest of all.
    const largest = Math.max(...softmaxRows([[1, 0], [0, 1], [0.5, 0.5]], K2, 1).flat());
    assert.equal(largest.toFixed(2), '0.55');
    const ticks = await colourBar(page);
    assert.equal(ticks[0], '0.00');
    assert.equal(ticks.at(-1), largest.toFixed(2));
    assertKorean(await page.innerText('#heatmap-fields'), ['palest weight', 'darkest weight', 'a number or auto',
      'Heatmap title', 'optional'], '#heatmap-fields');

    // Numbers of one's own: the bar runs from vmin to vmax, and typing "auto" ticks the box.
    await page.fill('#f-vmin', '0.2');
    await page.fill('#f-vmax', '0.6');
    assert.equal(await page.isChecked('#f-auto'), false);
    await runForm(page);
    await page.waitForSelector('#heatmap svg');
    assert.deepEqual(await colourBar(page), ['0.20', '0.28', '0.36', '0.44', '0.52', '0.60']);
    await page.fill('#f-vmax', 'auto');
    assert.equal(await page.isChecked('#f-auto'), true);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('a bad vmax is the server\'s 422, shown beside the vmax field, in the page\'s language', async () => {
    const page = await open('ko');
    await page.selectOption('#preset', 'seed000');
    await page.fill('#f-vmax', 'big');
    assert.equal(await runForm(page), '문제: HTTP 422.');
    const err = await page.textContent('#err-heatmap-vmax');
    assert.match(err, /^heatmap\.vmax .*문자열/); // the value's kind, in Korean
    assertKorean(err, ['is a string', 'must be a number'], '#err-heatmap-vmax');
    assert.match(err, /\(\/heatmap\/vmax\)$/);
    assert.equal(await page.getAttribute('#f-vmax', 'aria-invalid'), 'true');
    await page.fill('#f-vmin', '0.5');
    await page.fill('#f-vmax', '0.5');
    assert.equal(await runForm(page), '문제: HTTP 422.');
    assert.match(await page.textContent('#err-heatmap-vmax'), /\(\/heatmap\/vmax\)$/);
    await page.selectOption('#lang', 'en');
    await page.fill('#f-vmax', 'big');
    assert.equal(await runForm(page), 'Problem: HTTP 422.');
    assert.match(await page.textContent('#err-heatmap-vmax'), /^heatmap\.vmax is a string/);
    assert.equal(await page.textContent('label[for="f-htitle"]'), 'Heatmap title optional');
    await page.close();
  });

  test('a multi-head request\'s title is shown above its heads', async () => {
    const page = await open('en');
    await page.selectOption('#preset', 'multihead');
    const body = JSON.parse(await page.inputValue('#f-mh'));
    await page.fill('#f-mh', JSON.stringify({ ...body, heatmap: { vmax: 'auto', title: 'two heads' } }));
    assert.equal(await runForm(page), 'Done.');
    assert.equal(await page.textContent('#heatmap p.heatmap-title'), 'two heads');
    await page.close();
  });
});

describe('a result on the page follows the switch', () => {
  test('switching the language asks again: the warnings and status speak the new language at once', async () => {
    const page = await open('en');
    assert.equal(await runPreset(page, 'seed000'), 'Done.');
    // The first note's row 0 ties both keys: its warning comes from the API.
    assert.match(await page.innerText('#warnings'), /query 0 ties keys 0 and 1 for the largest weight/);
    const ran = Number(await page.getAttribute('body', 'data-ran'));
    await page.selectOption('#lang', 'ko');
    await page.waitForFunction((n) => Number(document.body.dataset.ran) > n, ran);
    assert.equal(await page.textContent('#status'), '완료.');
    const warnings = await page.innerText('#warnings');
    assert.match(warnings, /쿼리 0 에서 키 0, 1 의 가중치가 가장 높은 값으로 같습니다/);
    assertKorean(warnings, ['ties keys', 'largest weight', 'no key wins'], '#warnings');
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('the example drawn on load follows the switch too, even while it is on its way', async () => {
    await (await open('en')).close(); // this profile's choice: English
    // Only the run on load, no Run pressed: its warning came in English, and is asked again.
    const fresh = await open();
    assert.equal(await fresh.getAttribute('body', 'data-ran'), '1');
    assert.match(await fresh.innerText('#warnings'), /query 0 ties keys 0 and 1 for the largest weight/);
    await fresh.selectOption('#lang', 'ko');
    await fresh.waitForFunction(() => Number(document.body.dataset.ran) > 1);
    assert.equal(await fresh.textContent('#status'), '완료.');
    assertKorean(await fresh.innerText('#warnings'), ['ties keys', 'largest weight'], '#warnings');
    assert.deepEqual(fresh.problems, []);
    await fresh.close();

    // The run on load asked in Korean (the choice just kept) is held back; English is
    // chosen before it is answered: the page asks again in English, and draws that.
    const page = await browser.ctx.newPage();
    page.problems = [];
    page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
    const asked = [];
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route('**/v1/attention', async (route) => {
      asked.push(route.request().headers()['accept-language']);
      if (asked.length === 1) await held;
      await route.continue();
    });
    await page.goto(`http://127.0.0.1:${attnd.port}/`);
    await page.waitForFunction(() => document.getElementById('status').textContent === '계산 중…');
    await page.selectOption('#lang', 'en');
    release();
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForFunction(() => document.getElementById('status').textContent === 'Done.');
    assert.deepEqual(asked, ['ko', 'en']);
    assert.equal(await page.getAttribute('body', 'data-ran'), '1', 'the Korean answer was dropped, not drawn');
    assert.match(await page.innerText('#warnings'), /query 0 ties keys 0 and 1 for the largest weight/);
    assert.match(await page.innerText('#facts'), / · mask none · /);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  test('a second run started before the first is answered is the one drawn', async () => {
    const page = await open('en');
    await page.selectOption('#preset', 'seed000');
    // The first request is held back until the second has been drawn.
    let release;
    const held = new Promise((r) => { release = r; });
    let first = true;
    await page.route('**/v1/attention', async (route) => {
      if (first) {
        first = false;
        await held;
      }
      await route.continue();
    });
    await page.click('#run');
    await page.fill('#f-q', '[[0,1,0,1],[1,0,1,0]]');
    assert.equal(await runForm(page), 'Done.');
    const drawn = await page.innerText('#steps section[data-step="scores"]');
    release();
    await page.waitForTimeout(500); // the first answer arrives, and is dropped
    assert.equal(await page.innerText('#steps section[data-step="scores"]'), drawn);
    // q0 = [0,1,0,1]: · [1,0,1,0] = 0 and · [1,1,1,1] = 2 (the first run's q0 scores 2 and 2).
    assert.match(drawn, /q0\s+0\.0000\s+2\.0000/);
    await page.unroute('**/v1/attention');
    await page.close();
  });
});

describe('English comes back', () => {
  test('switching back restores every English word the Korean replaced', async () => {
    const page = await open('ko');
    await page.selectOption('#lang', 'en');
    assert.equal(await runPreset(page, 'seed002-queries'), 'Done.');
    assert.equal(await page.innerText('#facts'),
      'Q (3, 2) · K (3, 2) · V (3, 2) · mask none · d_k 2 · scale 1 → weights (3, 3), output (3, 2)');
    const [head] = await rowsOf(page, '#summary tr');
    assert.deepEqual(head, ['query', 'winning key', 'its weight', 'entropy (nats)', 'row sum']);
    const weightsHead = await rowsOf(page, '#steps section[data-step="weights"] thead tr');
    assert.equal(weightsHead[0].at(-1), 'sum');
    assert.equal((await page.innerText('#f-auto-label')).trim(), 'colours up to the largest weight');
    assert.equal(await runPreset(page, 'exp-magnitude'), 'Done.');
    assert.deepEqual((await rowsOf(page, '#compare tr'))[0], ['query', 'before', 'after', 'changed']);
    assert.match(await page.innerText('#compare-note'), /^Against "Lecture 2: three queries"/);
    assert.equal(await runPreset(page, 'pitfall-kt'), 'Problem: HTTP 422.');
    await page.fill('#f-q', '');
    await runForm(page);
    assert.equal(await page.textContent('#err-q'), 'q is required');
    await page.fill('#f-q', '[[1,0,1,0]]');
    await page.route('**/v1/attention', (r) => r.abort('connectionrefused'));
    assert.match(await runForm(page), /^The server could not be reached: /);
    await page.unroute('**/v1/attention');
    await page.selectOption('#preset', 'variant-softcap');
    assert.equal(await page.textContent('#preset option[value="variant-softcap"]'), 'Variant: softcap (Gemma 2)');
    assert.match(await page.textContent('#preset-note'), /the scores 1 shrink to 0\.48, and the weights flatten\.$/);
    assert.equal((await page.innerText('label[for="f-variants"]')).split('\n')[0].trim(),
      'Variants optional JSON object: rope, softcap, alibi, window, sink_tokens, sink_logit, dropout');
    assert.match(await page.innerText('#form-help'), /^Matrices are JSON arrays of rows, e\.g\. \[\[1,0\],\[0,1\]\];/);
    assert.equal(await page.textContent('#f-pitfall option[value=""]'), 'none');
    assert.equal(await page.textContent('#f-mask-semantics option[value="keep"]'), 'keep: 1 = attend');
    assert.match(await page.title(), /^attnd playground: /);
    assert.match(await page.innerText('header'), /, every step shown\.\s+Pick an example or edit the matrices \(JSON\), then run\.\s+API description/);
    assert.equal(await runPreset(page, 'multihead'), 'Done.');
    await page.waitForSelector('#headview svg');
    assert.match(await page.innerText('#facts'), / · mask none · bias none · weights \(2, 4, 4\) · head_outputs \(2, 4, 4\) · /);
    assert.equal((await page.$$eval('#heatmap figcaption', (f) => f.map((x) => x.textContent)))[2], 'mean of the heads');
    assert.match(await page.innerText('#headview-box'), /^Head view\n+Queries on the left, keys on the right\. /);
    assert.equal(await page.getAttribute('#headview .headview-heads', 'aria-label'), 'Heads shown');
    assert.equal(await page.textContent('#headview svg text.token title'), 'query 0: t0');
    assert.match(await page.textContent('#headview svg > title'), /^Head view: 2 heads, 4 tokens on the left/);
    assert.equal(await page.textContent('#mh-mask-semantics option[value="block"]'), 'block: 1 = blocked');
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});
