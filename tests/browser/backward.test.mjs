// tests/browser/backward.test.mjs — the playground's backward pass and its generation with
// a KV cache, in Debian's chromium:
//
// - with the Backward box ticked, Run shows every gradient step the API answers, in its
//   order, with its op, its shape and the same numbers (the same body POSTed here); dS
//   (grad_masked) is marked as softmax's gradient with each row's sum ≈ 0; the seed
//   changes dO; an explained row works its dS by hand (D term by term, each key's
//   P × (dP − D)), the numbers those of the API's answer;
// - a typed dO is the request's backward.grad_output, as sent (the request caught on its
//   way), every gradient the API's for it and grad_v = Pᵀ·dO by a loop here; a dO of
//   another shape gets the API's 422 on the dO field, one that is not JSON the page's;
// - with the multi-head fields the box writes the JSON's backward and Run shows
//   /v1/multihead's gradient steps, each (h, n_q, n_k) one a table a head, delta a column
//   a head, all the numbers of the same body POSTed here (self- and cross-attention, GQA,
//   biases, sink logit, bias; seed and typed dO), grad_b_o the column sums of dO, each
//   head's dS rows summing to 0, or with a sink logit to sink_weight·D (the API's numbers),
//   as the single-head explained row says too;
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

/** The POST of the form's own request (not the svg, bertviz or comparison ones) to `path`. */
const formRequest = (page, path) => page.waitForRequest((r) => r.method() === 'POST' &&
  new URL(r.url()).pathname === path && new URL(r.url()).search === '');

/** Every gradient section as shown: its head, shape and tables (one a head, or one). */
const shownBackward = (page) => page.$$eval('#backward-steps section.step', (secs) => secs.map((sec) => {
  const read = (t) => ({
    cols: [...t.querySelectorAll('thead th')].slice(1).map((th) => th.textContent),
    rows: [...t.querySelectorAll('tbody tr')].map((tr) => ({
      label: tr.querySelector('th').textContent,
      exact: [...tr.querySelectorAll('td:not(.extra)')].map((td) => Number(td.title.split(': ').pop())),
      text: [...tr.querySelectorAll('td:not(.extra)')].map((td) => td.textContent),
      sum: tr.querySelector('td.extra') ? Number(tr.querySelector('td.extra').title) : null,
    })),
  });
  const figs = [...sec.querySelectorAll('figure.head')];
  return {
    name: sec.dataset.step,
    head: sec.querySelector('h3').textContent,
    shape: sec.querySelector('p.shape').textContent,
    heads: figs.map((f) => ({ head: f.dataset.head, caption: f.querySelector('figcaption').textContent, ...read(f.querySelector('table')) })),
    table: figs.length ? null : sec.querySelector('table') && read(sec.querySelector('table')),
  };
}));

/**
 * The page's multi-head gradients hold the API's for body: every step in order, each number
 * exact, each head's dS row summing to 0 (to the rounding of `round`, when it is sent).
 */
async function assertMultiheadBackward(page, body, api) {
  const grads = api.steps.filter((s) => s.name === 'delta' || s.name.startsWith('grad_'));
  const shown = await shownBackward(page);
  assert.deepEqual(shown.map((s) => s.name), grads.map((s) => s.name));
  const [h, nQ, nK] = api.shapes.weights;
  const q = Array.from({ length: nQ }, (_, i) => `q${i}`);
  const k = Array.from({ length: nK }, (_, j) => `k${j}`);
  shown.forEach((s, i) => {
    const want = api[s.name];
    assert.equal(s.head, `${grads[i].step} · ${s.name} = ${grads[i].op}`);
    assert.ok(s.shape.endsWith(`(${grads[i].shape.join(', ')}${grads[i].shape.length === 1 ? ',' : ''})`), s.shape);
    assert.deepEqual(grads[i].shape, shapeOf(want), `${s.name}: the step's shape is its numbers'`);
    if (grads[i].shape.length === 3) {
      // a table a head, queries by keys, as the heads' weights are drawn
      assert.equal(s.heads.length, h, s.name);
      s.heads.forEach((fig, hh) => {
        assert.equal(fig.caption, `head ${hh}`);
        assert.deepEqual(fig.rows.map((r) => r.label), q);
        assert.deepEqual(fig.cols, s.name === 'grad_masked' ? [...k, 'row sum'] : k);
        assert.deepEqual(fig.rows.map((r) => r.exact), want[hh], `${s.name} head ${hh}`);
        assert.deepEqual(fig.rows.map((r) => r.text), want[hh].map((r) => r.map(fmt)));
        if (s.name === 'grad_masked') {
          // 0, or with a sink logit sink_weight·D (the sink's own dS makes the row's 0)
          const tol = body.round === undefined ? 1e-12 : nK * 0.5 * 10 ** -body.round;
          const sink = (i) => (body.sink_logit === undefined ? 0 : api.summary.sink_weight[hh][i] * api.delta[hh][i]);
          fig.rows.forEach((r, i) => {
            assert.ok(Math.abs(r.sum - sink(i)) <= tol, `dS row ${i} sums to ${r.sum}, not ${sink(i)}`);
            assertNear(r.sum, r.exact.reduce((a, x) => a + x, 0));
          });
        }
      });
    } else if (s.name === 'delta') {
      // D: the queries down, a column a head
      assert.deepEqual(s.table.cols, Array.from({ length: h }, (_, hh) => `head ${hh}`));
      assert.deepEqual(s.table.rows.map((r) => r.label), q);
      assert.deepEqual(s.table.rows.map((r) => r.exact), q.map((_, i) => want.map((d) => d[i])));
    } else {
      assert.deepEqual(s.table.rows.map((r) => r.exact), rows2(want), s.name);
      if (['grad_output', 'grad_q', 'grad_x', 'grad_x_q'].includes(s.name)) assert.deepEqual(s.table.rows.map((r) => r.label), q);
      if (['grad_k', 'grad_v', 'grad_x_kv'].includes(s.name)) assert.deepEqual(s.table.rows.map((r) => r.label), k);
      if (s.name === 'grad_bias') assert.deepEqual(s.table.cols, k);
      if (s.name === 'grad_sink_logit') assert.deepEqual(s.table.cols, Array.from({ length: h }, (_, hh) => `head ${hh}`));
    }
  });
  // The forward steps keep their own box, without a gradient among them.
  const forward = await page.$$eval('#steps section.step', (x) => x.map((e) => e.dataset.step));
  assert.ok(forward.includes('output') && !forward.some((n) => n === 'delta' || n.startsWith('grad_')), forward.join());
}

const shapeOf = (m) => (Array.isArray(m) ? [m.length, ...shapeOf(m[0])] : []);

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
    // With a sink logit the keys' dS sum to sink_weight·D: the sink's own dS makes the 0.
    await page.fill('#f-variants', '{"sink_logit": 0}');
    assert.equal(await runForm(page), 'Done.');
    assert.match(await page.textContent('#backward-steps section[data-step="grad_masked"] .note'), /sum to sink_weight·D/);
    await page.click('#explain-buttons button[data-row="0"]');
    await page.waitForSelector('#explain-backward:not([hidden])');
    const sunk = (await postJson(attnd.port, '/v1/attention', await page.evaluate(() => readForm()))).json();
    const sum = sunk.grad_masked[0].reduce((a, x) => a + x, 0);
    assertNear(sum, sunk.summary.sink_weight[0] * sunk.delta[0]);
    assert.equal((await page.textContent('#explain-backward-lines')).split('\n').pop(),
      `Σ dS = ${fmt(sum)} = sink_weight·D: with the sink's own dS, −sink_weight·D, the row sums to 0`);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe('dO typed, and the multi-head backward', () => {
  test('a typed dO is what is sent, its gradients the API\'s; a dO of another shape is marked on dO', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'seed002-queries');
    assert.equal(await page.isDisabled('#f-grad-output'), true);
    await page.check('#f-backward');
    assert.equal(await page.isDisabled('#f-grad-output'), false);
    assert.match(await page.textContent('label[for="f-grad-output"]'), /^dO \(n_q, d_v\) or \(d_v\), the output's shape/);
    const dO = [[1, -0.5], [0, 2], [0.25, 0.75]];
    await page.fill('#f-grad-output', '[[1, -0.5],\n [0, 2],\n [0.25, 0.75]]');
    const sent = formRequest(page, '/v1/attention');
    assert.equal(await runForm(page), 'Done.');
    const body = (await sent).postDataJSON();
    assert.deepEqual(body.backward, { grad_output: dO });
    const api = (await postJson(attnd.port, '/v1/attention', body)).json();
    assert.deepEqual((await stepTable(page, 'grad_output')).map((r) => r.exact), dO);
    for (const s of api.steps.filter((x) => x.name.startsWith('grad_'))) {
      assert.deepEqual((await stepTable(page, s.name)).map((r) => r.exact), rows2(api[s.name]), s.name);
    }
    // grad_v = weightsᵀ·dO, by a loop over the weights the API answers.
    const gradV = api.weights[0].map((_, j) => dO[0].map((_, c) => api.weights.reduce((a, w, i) => a + w[j] * dO[i][c], 0)));
    (await stepTable(page, 'grad_v')).forEach((row, j) => row.exact.forEach((x, c) => assertNear(x, gradV[j][c])));
    assert.match(await page.textContent('#backward-note'), /with dO as typed \(grad_output\)/);
    // Another shape: the API's 422 on the dO field, the seed's left alone.
    await page.fill('#f-grad-output', '[[1, 0], [0, 1]]');
    assert.match(await runForm(page), /^Problem: HTTP 422/);
    assert.match(await page.textContent('#err-grad-output'),
      /^backward\.grad_output is \(2, 2\) but must be the output's shape \(n_q, d_v\) = \(3, 2\).* \(\/backward\/grad_output\)$/);
    assert.equal(await page.getAttribute('#f-grad-output', 'aria-invalid'), 'true');
    assert.equal(await page.isHidden('#err-backward'), true);
    // Not JSON: the page's own complaint, nothing sent.
    await page.fill('#f-grad-output', '[[1, 0], [0');
    assert.equal(await runForm(page), 'Fix the marked field.');
    assert.match(await page.textContent('#err-grad-output'), /^not JSON/);
    // Emptied: the seed makes dO again.
    await page.fill('#f-grad-output', '');
    assert.equal(await runForm(page), 'Done.');
    assert.equal(await page.isHidden('#err-grad-output'), true);
    assert.deepEqual((await page.evaluate(() => readForm())).backward, { seed: 0 });
    assert.deepEqual(page.errors.filter((m) => !/422/.test(m)), []);
    await page.close();
  });

  test('with the multi-head fields: /v1/multihead\'s gradients, each head drawn, the API\'s numbers', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'multihead');
    assert.equal(await page.$eval('#backward-fields', (e) => e.closest('fieldset').id), 'multi-fields');
    await page.check('#f-backward');
    assert.deepEqual(JSON.parse(await page.inputValue('#f-mh')).backward, { seed: 0 });
    assert.match(await page.textContent('label[for="f-grad-output"]'), /^dO \(n_q, d_model\), the output's shape/);
    let sent = formRequest(page, '/v1/multihead');
    assert.equal(await runForm(page), 'Done.');
    let body = (await sent).postDataJSON();
    assert.deepEqual(body.backward, { seed: 0 });
    await assertMultiheadBackward(page, body, (await postJson(attnd.port, '/v1/multihead', body)).json());
    assert.match(await page.textContent('#backward-note'), /seed 0 .*through W_O and every head/);

    // Cross-attention, GQA, every bias, a sink logit and a bias, with dO typed.
    const cross = {
      heads: 2, kv_heads: 1, random: { seed: 3, n: 3, n_kv: 4, d_model: 4 }, scale: 2,
      b_q: [0.1, 0, -0.1, 0.2], b_k: [0, 0.5], b_v: [1, -1], b_o: [0, 1, 2, 3], sink_logit: 0,
      bias: [[0, -1, 0, 0], [0, 0, -1, 0], [0.5, 0, 0, 0]],
    };
    await page.fill('#f-mh', JSON.stringify(cross));
    assert.equal(await page.isChecked('#f-backward'), false); // the JSON fills the box
    await page.check('#f-backward');
    const dO = [[1, 0, -1, 0.5], [0, 2, 0, 0], [0.25, 0, 0, -1]];
    await page.fill('#f-grad-output', JSON.stringify(dO));
    assert.deepEqual(JSON.parse(await page.inputValue('#f-mh')).backward, { grad_output: dO });
    sent = formRequest(page, '/v1/multihead');
    assert.equal(await runForm(page), 'Done.');
    body = (await sent).postDataJSON();
    assert.deepEqual(body, { ...cross, backward: { grad_output: dO } });
    const api = (await postJson(attnd.port, '/v1/multihead', body)).json();
    for (const name of ['grad_b_o', 'grad_b_q', 'grad_b_k', 'grad_b_v', 'grad_x_q', 'grad_x_kv', 'grad_sink_logit', 'grad_bias']) {
      assert.ok(api.steps.some((s) => s.name === name), name);
    }
    await assertMultiheadBackward(page, body, api);
    assert.match(await page.textContent('#backward-steps section[data-step="grad_masked"] .note'), /sum to sink_weight·D/);
    // grad_b_o: each column of dO summed over the queries.
    const bo = (await shownBackward(page)).find((s) => s.name === 'grad_b_o').table.rows[0].exact;
    bo.forEach((x, c) => assertNear(x, dO.reduce((a, row) => a + row[c], 0)));
    // The JSON edited by hand fills the box; a dO of another shape gets the 422 on dO.
    await page.fill('#f-mh', JSON.stringify({ ...cross, backward: { grad_output: [[1, 2], [3, 4]] } }));
    assert.equal(await page.inputValue('#f-grad-output'), '[[1,2],\n [3,4]]');
    assert.match(await runForm(page), /^Problem: HTTP 422/);
    assert.match(await page.textContent('#err-grad-output'), /\(n_q, d_model\) = \(3, 4\).* \(\/backward\/grad_output\)$/);
    // Back to a single-head example: the box returns to its inputs, unticked.
    await page.selectOption('#preset', 'seed000');
    assert.equal(await page.$eval('#backward-fields', (e) => e.closest('fieldset').id), 'single-fields');
    assert.equal(await page.isChecked('#f-backward'), false);
    assert.deepEqual(page.errors.filter((m) => !/422/.test(m)), []);
    await page.close();
  });
});

function assertNear(a, b) {
  assert.ok(Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b)), `${a} vs ${b}`);
}

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

  test('the typed dO and the multi-head gradients speak Korean after the switch', async () => {
    const page = await openPlayground();
    await page.selectOption('#preset', 'multihead');
    await page.check('#f-backward');
    assert.equal(await runForm(page), 'Done.');
    await switchLanguage(page, 'ko');
    assert.equal(await page.textContent('#status'), '완료.');
    const note = await page.textContent('#backward-note');
    assert.match(note, /^L = Σ dO ∘ 출력, dO 는 seed 0 으로 만듭니다 .*출력에서 W_O 와 모든 head 를 지나 W_Q, W_K, W_V 와 X 까지/);
    assert.doesNotMatch(note, /made from|gradient|every head/);
    assert.equal(await page.textContent('label[for="f-grad-output"] .shape'), '(n_q, d_model), 출력과 같은 shape. 비우면 seed 로 dO 를 만듭니다');
    const ds = '#backward-steps section[data-step="grad_masked"]';
    assert.match(await page.textContent(`${ds} .note`), /softmax 의 기울기/);
    assert.deepEqual(await page.$$eval(`${ds} figcaption`, (f) => f.map((x) => x.textContent)), ['head 0', 'head 1']);
    assert.equal(await page.textContent(`${ds} figure.head thead th.extra`), '행의 합');
    // A typed dO in Korean: the note says so, and a dO of another shape gets Korean on dO.
    await page.fill('#f-grad-output', JSON.stringify([[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0],
      [0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0, 0]]));
    assert.equal(await runForm(page), '완료.');
    assert.match(await page.textContent('#backward-note'), /dO 는 입력한 값 \(grad_output\) 입니다/);
    await page.fill('#f-grad-output', '[[1]]');
    assert.equal(await runForm(page), '문제: HTTP 422.');
    assert.match(await page.textContent('#err-grad-output'), /출력의 모양 \(n_q, d_model\) = \(4, 8\)/);
    await page.selectOption('#preset', 'seed000');
    assert.equal(await page.textContent('label[for="f-grad-output"] .shape'), '(n_q, d_v) 또는 (d_v), 출력과 같은 shape. 비우면 seed 로 dO 를 만듭니다');
    await switchLanguage(page, 'en');
    assert.equal(await page.textContent('label[for="f-grad-output"] .shape'), '(n_q, d_v) or (d_v), the output\'s shape; empty: dO from the seed');
    assert.deepEqual(page.errors.filter((m) => !/422/.test(m)), []);
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
    // The multi-head gradients: each head's table and the wide ones scroll within.
    await page.selectOption('#preset', 'multihead');
    await page.check('#f-backward');
    assert.equal(await runForm(page), 'Done.');
    assert.equal(await page.isVisible('#backward-steps section[data-step="grad_masked"] figure.head'), true);
    assert.ok(await wide() <= 375, `page is ${await wide()} px wide`);
    await page.locator('#backward-box').screenshot({ path: path.join(ARTIFACTS, 'playground-backward-multihead-375.png') });
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});
