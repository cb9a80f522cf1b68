// tests/http/rows.test.mjs — `rows` on /v1/attention and its batch (DESIGN.md, "Row
// statistics, rows, and any length"): the listed query rows only, in their order, repeats
// allowed, with the whole problem's keys, causal offset, masks and variants. Checked
// against the definition written in tests/http/reference.mjs (plain problems) and against
// the same request without rows (variants: the whole answer's rows, bit for bit); the
// warnings, fully_masked_rows and the text and SVG labels name the real query indices;
// each bad `rows` is a 422 at its pointer.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, request, rng, startServer } from './lib.mjs';
import { assertNear, maskedScores, matrix, rowStats, weightsAndOutput } from './reference.mjs';

let s;
before(async () => { s = await startServer(['--log', 'off']); });
after(async () => { await s.stop(); });

const INCLUDE = ['scores', 'masked', 'weights', 'output', 'summary', 'row_max', 'row_sum', 'lse'];

/** Random problems with every mask kind and a bias; some rows fully masked. */
function problems() {
  const r = rng(2);
  const out = [];
  for (const [nQ, nK] of [[1, 3], [5, 5], [7, 4], [6, 9]]) {
    const dK = 1 + Math.floor(r() * 5), dV = 1 + Math.floor(r() * 3);
    const base = { q: matrix(r, nQ, dK), k: matrix(r, nK, dK), v: matrix(r, nK, dV) };
    const cells = Array.from({ length: nQ }, (_, i) =>
      Array.from({ length: nK }, () => (i === nQ - 1 ? 0 : r() < 0.6 ? 1 : 0)));
    out.push({ name: `${nQ}x${nK}`, ...base });
    out.push({ name: `${nQ}x${nK} cells`, ...base, mask: cells });
    out.push({ name: `${nQ}x${nK} causal`, ...base, mask: 'causal' });
    out.push({ name: `${nQ}x${nK} bias`, ...base, bias: matrix(r, nQ, nK, 3), scale: 0.4 });
  }
  return out;
}

/** Some rows of n: the last, the first, one between twice. */
const someRows = (n) => [n - 1, 0, Math.floor(n / 2), Math.floor(n / 2)];

test('rows answers the listed rows in order, each as the definition gives it', async () => {
  for (const { name, ...p } of problems()) {
    const rows = someRows(p.q.length);
    const r = await postJson(s.port, '/v1/attention', { ...p, rows, include: INCLUDE });
    assert.equal(r.status, 200, `${name}: ${r.body}`);
    const a = r.json();
    const masked = maskedScores(p);
    const { weights, output } = weightsAndOutput(masked, p.v);
    const stats = rowStats(masked);
    const nK = p.k.length, dV = p.v[0].length;
    assert.deepEqual(a.shapes.q, [p.q.length, p.q[0].length], `${name}: q is as sent`);
    assert.deepEqual(a.shapes.weights, [rows.length, nK]);
    assert.deepEqual(a.shapes.output, [rows.length, dV]);
    assert.deepEqual(a.shapes.lse, [rows.length]);
    for (const st of a.steps) assert.equal(st.shape[0], rows.length, `${name}: step ${st.name}`);
    assert.equal(a.weights.length, rows.length);
    rows.forEach((i, at) => {
      const what = `${name} rows[${at}] = ${i}`;
      masked[i].forEach((x, j) => assertNear(a.masked[at][j], x, `${what} masked[${j}]`));
      weights[i].forEach((x, j) => assertNear(a.weights[at][j], x, `${what} weights[${j}]`));
      output[i].forEach((x, c) => assertNear(a.output[at][c], x, `${what} output[${c}]`));
      assertNear(a.row_max[at], stats[i][0], `${what} row_max`);
      assertNear(a.row_sum[at], stats[i][1], `${what} row_sum`);
      assertNear(a.lse[at], stats[i][2], `${what} lse`);
      assertNear(a.summary.row_sums[at], stats[i][2] === null ? 0 : 1, `${what} row_sums`);
    });
    const empty = rows.filter((i) => stats[i][2] === null);
    assert.deepEqual(a.summary.fully_masked_rows, empty, `${name}: real indices`);
    assert.deepEqual(a.warnings.filter((w) => w.code === 'row_fully_masked').map((w) => w.row),
      empty, `${name}: warnings name the real rows`);
  }
});

test('with variants, rows are the whole answer\'s rows, bit for bit', async () => {
  const r = rng(9);
  const p = { q: matrix(r, 8, 4), k: matrix(r, 10, 4), v: matrix(r, 10, 3), mask: 'causal' };
  for (const variants of [{ rope: {} }, { alibi: 0.5 }, { window: { left: 2, right: 1 } }, { softcap: 1.5 },
    { sink_logit: 0.5 }, { rope: {}, window: { left: 3, right: 0 }, softcap: 2, sink_logit: -1 }]) {
    const whole = await postJson(s.port, '/v1/attention', { ...p, ...variants });
    assert.equal(whole.status, 200, whole.body);
    const rows = [7, 2, 2, 0];
    const some = await postJson(s.port, '/v1/attention', { ...p, ...variants, rows });
    assert.equal(some.status, 200, some.body);
    const w = whole.json(), a = some.json();
    const what = JSON.stringify(variants);
    for (const key of ['scores', 'scaled', 'masked', 'weights', 'output', 'q_rope', 'softcapped']) {
      if (!(key in w)) continue;
      assert.deepEqual(a[key], rows.map((i) => w[key][i]), `${what}: ${key}`);
    }
    if (w.k_rope) assert.deepEqual(a.k_rope, w.k_rope, `${what}: k_rope is the keys'`);
    for (const key of ['row_sums', 'argmax', 'max_weight', 'entropy', 'tied_keys', 'sink_weight']) {
      if (!(key in w.summary)) continue;
      assert.deepEqual(a.summary[key], rows.map((i) => w.summary[key][i]), `${what}: summary.${key}`);
    }
    assert.deepEqual(a.warnings, w.warnings.filter((x) => rows.includes(x.row))
      .flatMap((x) => rows.filter((i) => i === x.row).map(() => x)), `${what}: warnings`);
  }
});

test('ties are warned about under the real row', async () => {
  const p = { q: [[1, 0], [0, 0], [2, 1]], k: [[1, 0], [1, 0], [0, 1]], v: [[1], [2], [3]] };
  const a = (await postJson(s.port, '/v1/attention', { ...p, rows: [1, 0] })).json();
  const ties = a.warnings.filter((w) => w.code === 'tie');
  assert.deepEqual(ties.map((w) => w.row), [1, 0]);
  assert.match(ties[0].message, /query 1 /);
  assert.deepEqual(a.summary.tied_keys, [[0, 1, 2], [0, 1]]);
});

test('text and SVG label the rows by their real index or their name', async () => {
  const p = { q: [[1, 0], [0, 1], [1, 1], [0, 2]], k: [[1, 0], [0, 1]], v: [[1], [2]],
    mask: 'causal', rows: [3, 1] };
  const text = await request(s.port, { method: 'POST', path: '/v1/attention',
    headers: { 'Content-Type': 'application/json', Accept: 'text/plain' }, body: JSON.stringify(p) });
  assert.equal(text.status, 200, text.body);
  assert.match(text.body, /step 4 {2}weights = [^\n]*-> \(2, 2\)\n\s+k0\s+k1[^\n]*\n\s+q3 [^\n]*\n\s+q1 /);
  assert.match(text.body, /warning: query q1 may attend to no key/);
  assert.doesNotMatch(text.body, /\bq0\b/);
  const named = { ...p, labels: { queries: ['I', 'love', 'cats', 'too'], keys: ['a', 'b'] } };
  const svg = await request(s.port, { method: 'POST', path: '/v1/attention?format=svg',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(named) });
  assert.equal(svg.status, 200, svg.body);
  const rowLabels = [...svg.body.matchAll(/<text[^>]*text-anchor="end"[^>]*>([^<]+)<\/text>/g)]
    .map((m) => m[1]);
  assert.ok(rowLabels.includes('too') && rowLabels.includes('love'), rowLabels.join(', '));
  assert.ok(!rowLabels.includes('I') && !rowLabels.includes('cats'), rowLabels.join(', '));
});

test('a batch item takes rows too', async () => {
  const r = rng(4);
  const p = { q: matrix(r, 5, 3), k: matrix(r, 6, 3), v: matrix(r, 6, 2), mask: 'causal' };
  const b = (await postJson(s.port, '/v1/attention/batch',
    { items: [{ ...p, rows: [4, 0], include: ['lse'] }, { ...p, include: ['lse'] }] })).json();
  const lse = rowStats(maskedScores(p)).map((x) => x[2]);
  assert.deepEqual(b.results[0].body.shapes.lse, [2]);
  assertNear(b.results[0].body.lse[0], lse[4], 'item 0 lse[0]');
  assertNear(b.results[0].body.lse[1], lse[0], 'item 0 lse[1]');
  assert.deepEqual(b.results[1].body.lse.length, 5);
});

test('explain works on a listed row as it does without rows, in JSON and text', async () => {
  const p = { q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1]], v: [[1], [2]], mask: 'causal',
    labels: { queries: ['a', 'b', 'c'] } };
  for (const extra of [{}, { rope: {}, sink_logit: 0.5 }]) {
    const whole = (await postJson(s.port, '/v1/attention', { ...p, ...extra, explain: { row: 1 } })).json();
    const r = await postJson(s.port, '/v1/attention', { ...p, ...extra, rows: [2, 1], explain: { row: 1 } });
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(r.json().explain, whole.explain, JSON.stringify(extra));
    assert.equal(r.json().explain.row, 1);
  }
  const text = (body) => request(s.port, { method: 'POST', path: '/v1/attention?format=text',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const pick = (page) => page.slice(page.indexOf('\nexplain'), page.indexOf('\nwarning')); // the rows' own warnings differ
  const whole = await text({ ...p, explain: { row: 1 } });
  const some = await text({ ...p, rows: [2, 1], explain: { row: 1 } });
  assert.equal(some.status, 200, some.body);
  assert.ok(pick(some.body).length > 100, some.body);
  assert.equal(pick(some.body), pick(whole.body), 'the worked row, labelled b (row 1)');
});

test('bad rows: a 422 naming the culprit', async () => {
  const p = { q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1]], v: [[1], [2]] };
  const cases = [
    [{ rows: 2 }, '/rows', /non-empty list/],
    [{ rows: [] }, '/rows', /non-empty list/],
    [{ rows: [0, 3] }, '/rows/1', /0 to 2/],
    [{ rows: [-1] }, '/rows/0', /0 to 2/],
    [{ rows: [1.5] }, '/rows/0', /0 to 2/],
    [{ rows: ['1'] }, '/rows/0', /0 to 2/],
    [{ rows: [0, 2], explain: { row: 1 } }, '/explain/row', /add 1 to rows/],
    [{ rows: [0], pitfall: 'no_transpose' }, '/rows', /pitfall/],
    [{ q: [1, 0], rows: [0] }, '/rows', /matrix q/],
  ];
  for (const [extra, pointer, words] of cases) {
    const r = await postJson(s.port, '/v1/attention', { ...p, ...extra });
    const e = assertProblem(assert, r, 422);
    assert.equal(e.errors?.[0]?.pointer ?? e.pointer, pointer, `${JSON.stringify(extra)}: ${r.body}`);
    assert.match(`${e.detail} ${e.errors?.[0]?.hint ?? ''}`, words, r.body);
  }
  const viz = await postJson(s.port, '/v1/attention?format=bertviz', { ...p, rows: [0] });
  assertProblem(assert, viz, 422);
  const batch = await postJson(s.port, '/v1/attention/batch', { items: [p, { ...p, rows: [9] }] });
  assert.match(batch.body, /\/items\/1\/rows\/0/);
});

test('rows over --max-cells: 422 limit-exceeded at /rows', async () => {
  const small = await startServer(['--log', 'off', '--max-cells', '64']);
  try {
    const p = { q: [[1, 0], [0, 1]], k: Array.from({ length: 16 }, (_, j) => [j, 1]),
      v: Array.from({ length: 16 }, (_, j) => [j]) };
    assert.equal((await postJson(small.port, '/v1/attention', { ...p, rows: [0, 1, 0, 1] })).status,
      200);
    const r = await postJson(small.port, '/v1/attention', { ...p, rows: [0, 1, 0, 1, 0] });
    const e = assertProblem(assert, r, 422);
    assert.match(e.type, /limit-exceeded/);
    assert.match(r.body, /"\/rows"/);
  } finally {
    await small.stop();
  }
});
