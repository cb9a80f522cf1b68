// tests/http/explain.test.mjs — `explain`: one query row worked out as the first note
// works it by hand. Seed 000's second row against the note's own numbers (scores 0 and
// 2, ÷ 2, e^0 = 1, e^1 ≈ 2.72, sum 3.72, 0.27 and 0.73, [2.7, 7.3]); other rows, masks,
// biases and heads against a naive recomputation in this file; the NaN pitfall (e^masked
// overflows, the stable way does not); the text page's sentences; every bad explain.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { assertProblem, postJson, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

const SEED000 = {
  q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
};

const near = (got, want, tol, what) =>
  assert.ok(Math.abs(got - want) <= tol, `${what}: ${got} is not within ${tol} of ${want}`);
const close = (got, want, what) => near(got, want, 1e-12 + 1e-12 * Math.abs(want), what);

/* The row worked out in plain loops: what explain must say. */
function naiveRow({ q, k, v, scale, bias, mask }, i) {
  const query = q[i];
  const dot = k.map((key) => key.reduce((a, x, c) => a + query[c] * x, 0));
  const scaled = dot.map((x) => x * scale);
  const masked = scaled.map((x, j) => (mask && !mask[i][j] ? null : x + (bias ? bias[i][j] : 0)));
  const max = Math.max(...masked.filter((x) => x !== null));
  const exp = masked.map((x) => (x === null ? 0 : Math.exp(x - max)));
  const sum = exp.reduce((a, b) => a + b, 0);
  const weight = exp.map((e) => e / sum);
  const output = v[0].map((_, c) => weight.reduce((a, w, j) => a + w * v[j][c], 0));
  return { dot, scaled, masked, max, exp, sum, weight, output };
}

function assertLike(x, want, what) {
  x.keys.forEach((key, j) => {
    close(key.dot, want.dot[j], `${what} dot ${j}`);
    close(key.scaled, want.scaled[j], `${what} scaled ${j}`);
    if (want.masked[j] === null) {
      assert.equal(key.masked, null);
      assert.equal(key.exp_unshifted, null);
      assert.equal(key.shifted, null);
      assert.equal(key.exp, 0);
    } else {
      close(key.masked, want.masked[j], `${what} masked ${j}`);
      close(key.shifted, want.masked[j] - want.max, `${what} shifted ${j}`);
      close(key.exp_unshifted, Math.exp(want.masked[j]), `${what} exp_unshifted ${j}`);
    }
    close(key.exp, want.exp[j], `${what} exp ${j}`);
    close(key.weight, want.weight[j], `${what} weight ${j}`);
  });
  close(x.row_max, want.max, `${what} row_max`);
  close(x.exp_sum, want.sum, `${what} exp_sum`);
  x.output.value.forEach((o, c) => close(o, want.output[c], `${what} output ${c}`));
}

describe('/v1/attention', () => {
  test("seed 000 row 1: the note's own numbers", async () => {
    const r = await postJson(s.port, '/v1/attention', { ...SEED000, explain: { row: 1 } });
    assert.equal(r.status, 200);
    const x = r.json().explain;
    assert.equal(x.row, 1);
    assert.equal(x.head, null);
    assert.deepEqual(x.query, [0, 1, 0, 1]);
    assert.equal(x.scale, 0.5);
    assert.deepEqual(x.keys.map((key) => key.terms), [
      [[0, 1], [1, 0], [0, 1], [1, 0]], [[0, 1], [1, 1], [0, 1], [1, 1]],
    ]);
    assert.deepEqual(x.keys.map((key) => key.dot), [0, 2]); // scores 0 and 2
    assert.deepEqual(x.keys.map((key) => key.scaled), [0, 1]); // ÷ 2
    assert.equal(x.keys[0].exp_unshifted, 1); // e^0 = 1
    near(x.keys[1].exp_unshifted, 2.72, 0.005, 'e^1 ≈ 2.72');
    near(x.exp_unshifted_sum, 3.72, 0.005, 'sum 3.72');
    near(x.keys[0].weight, 0.27, 0.005, '1 ÷ 3.72 ≈ 0.27');
    near(x.keys[1].weight, 0.73, 0.005, '2.72 ÷ 3.72 ≈ 0.73');
    near(x.keys[0].exp_unshifted / x.exp_unshifted_sum, x.keys[0].weight, 1e-15, 'the note\'s way');
    assert.deepEqual(x.output.terms, [
      { key: 0, weight: x.keys[0].weight, value: [10, 0] },
      { key: 1, weight: x.keys[1].weight, value: [0, 10] },
    ]);
    near(x.output.value[0], 2.7, 0.05, 'output 2.7');
    near(x.output.value[1], 7.3, 0.05, 'output 7.3');
    assertLike(x, naiveRow({ ...SEED000, scale: 0.5 }, 1), 'seed 000');
  });

  test('the same bits as the answer\'s matrices; mask and bias against plain loops', async () => {
    const body = {
      q: [[0.3, -1.2, 2], [1.5, 0.25, -0.5], [0, 1, 1]],
      k: [[1, 0.5, -1], [0.2, 0.2, 0.2], [-2, 1, 0.5], [0.7, -0.3, 1.1]],
      v: [[1, 2], [3, -4], [0.5, 0.5], [-1, 7]],
      scale: 0.8,
      mask: [[1, 1, 1, 1], [1, 0, 1, 1], [0, 1, 1, 0]],
      bias: [[0, 0.5, -0.25, 1], [2, 0, -1, 0.125], [0, 0, 3, 0]],
    };
    for (const row of [0, 1, 2]) {
      const r = await postJson(s.port, '/v1/attention', { ...body, explain: { row } });
      const b = r.json();
      const x = b.explain;
      assert.deepEqual(x.keys.map((key) => key.dot), b.scores[row]);
      assert.deepEqual(x.keys.map((key) => key.masked), b.masked[row]);
      assert.deepEqual(x.keys.map((key) => key.weight), b.weights[row]);
      assert.deepEqual(x.output.value, b.output[row]);
      assertLike(x, naiveRow(body, row), `row ${row}`);
    }
  });

  test('the NaN pitfall: e^masked overflows to null, the stable way gives the weights', async () => {
    const body = { q: [[1000]], k: [[1], [0.5]], v: [[1], [3]], scale: 1, explain: { row: 0 } };
    const r = await postJson(s.port, '/v1/attention', body);
    const x = r.json().explain;
    assert.equal(x.keys[0].exp_unshifted, null); // e^1000 overflows
    close(x.keys[1].exp_unshifted, Math.exp(500), 'e^500 does not');
    assert.equal(x.exp_unshifted_sum, null);
    assert.equal(x.row_max, 1000);
    assert.deepEqual(x.keys.map((key) => key.shifted), [0, -500]);
    assert.deepEqual(x.keys.map((key) => key.exp), [1, Math.exp(-500)]);
    close(x.keys[1].weight, Math.exp(-500) / (1 + Math.exp(-500)), 'weight of key 1');
    const t = await postJson(s.port, '/v1/attention?format=text', { ...body, include: [] });
    assert.match(t.body, /e\^1000 overflows to inf, and inf ÷ inf is nan/);
    assert.match(t.body, /\n {13}e\^\(-500\) ≈ 0\n/);
  });

  test('a vector q has row 0; a fully masked row explains zeros', async () => {
    const one = await postJson(s.port, '/v1/attention', {
      q: [1, 0], k: [[1, 0], [0, 1], [0.8, 0.2]], v: [[10, 0], [0, 20], [8, 4]], scale: 1,
      explain: { row: 0 },
    });
    assertLike(one.json().explain, naiveRow({
      q: [[1, 0]], k: [[1, 0], [0, 1], [0.8, 0.2]], v: [[10, 0], [0, 20], [8, 4]], scale: 1,
    }, 0), 'vector q');
    const empty = await postJson(s.port, '/v1/attention', {
      ...SEED000, mask: [[1, 1], [0, 0]], explain: { row: 1 },
    });
    const x = empty.json().explain;
    assert.equal(x.row_max, null);
    assert.equal(x.exp_sum, 0);
    assert.deepEqual(x.keys.map((key) => [key.masked, key.exp, key.weight]), [[null, 0, 0], [null, 0, 0]]);
    assert.deepEqual(x.output.value, [0, 0]);
  });

  test('text: the arithmetic in the note\'s own words', async () => {
    const page = async (round) => (await postJson(s.port, '/v1/attention?format=text',
      { ...SEED000, explain: { row: 1 }, include: [], round })).body;
    const t = await page(2);
    for (const line of [
      'explain  query q1 (row 1), worked by hand as the first note works it\n',
      '  1 compare  q1·k0 = 0×1 + 1×0 + 0×1 + 1×0 = 0\n',
      '             q1·k1 = 0×1 + 1×1 + 0×1 + 1×1 = 2\n',
      '  2 scale    0 × 0.5 = 0\n',
      '             2 × 0.5 = 1\n',
      '  4 softmax  e^0 = 1\n',
      '             e^1 ≈ 2.72\n',
      '             sum 1 + 2.72 ≈ 3.72\n',
      '             1 ÷ 3.72 ≈ 0.27\n',
      '             2.72 ÷ 3.72 ≈ 0.73\n',
      '  5 mix V    0.27×[10, 0] + 0.73×[0, 10] = [2.69, 7.31]\n',
    ]) assert.ok(t.includes(line), `missing ${JSON.stringify(line)} in\n${t}`);
    assert.ok((await page(1)).includes('= [2.7, 7.3]\n'));
    const masked = (await postJson(s.port, '/v1/attention?format=text',
      { ...SEED000, mask: [[1, 1], [1, 0]], explain: { row: 1 }, include: [] })).body;
    assert.ok(masked.includes('  3 mask     k1 is blocked: -inf, and e^-inf = 0\n'), masked);
  });

  test('bad explain: 422 naming the culprit, with a hint', async () => {
    const cases = [
      [{ row: 2 }, 'invalid-value', '/explain/row', /rows 0 to 1/],
      [{ row: -1 }, 'invalid-value', '/explain/row', /rows 0 to 1/],
      [{ row: 0.5 }, 'invalid-value', '/explain/row', /rows 0 to 1/],
      [{}, 'missing-field', '/explain/row', /0 to 1/],
      ['row 1', 'invalid-value', '/explain', /\{"row": 0\}/],
      [{ row: 0, head: 0 }, 'unknown-field', '/explain/head', /multihead/],
      [{ row: 0, rows: 1 }, 'unknown-field', '/explain/rows', /row/],
    ];
    for (const [explain, type, pointer, hint] of cases) {
      const r = await postJson(s.port, '/v1/attention', { ...SEED000, explain });
      const p = assertProblem(assert, r, 422);
      assert.equal(p.type, `/problems/${type}`, JSON.stringify(explain));
      assert.equal(p.errors[0].pointer, pointer, JSON.stringify(explain));
      assert.match(p.errors[0].hint, hint, JSON.stringify(explain));
    }
    const ok = await postJson(s.port, '/v1/attention', { ...SEED000, explain: null });
    assert.equal(ok.status, 200);
    assert.equal('explain' in ok.json(), false);
  });

  test('more than 65,536 terms is limit-exceeded at /explain; in a batch, with its item', async () => {
    /* n_k·(d_k + d_v) = 64·(512 + 513) = 65,600 terms. */
    const row = (n, x) => Array.from({ length: n }, (_, c) => ((c * 7 + x) % 5) - 2);
    const big = {
      q: [row(512, 1)], k: Array.from({ length: 64 }, (_, j) => row(512, j)),
      v: Array.from({ length: 64 }, (_, j) => row(513, j)), explain: { row: 0 },
    };
    const r = await postJson(s.port, '/v1/attention', big);
    const p = assertProblem(assert, r, 422);
    assert.equal(p.type, '/problems/limit-exceeded');
    assert.equal(p.errors[0].pointer, '/explain');
    assert.match(p.detail, /65600|64·\(512 \+ 513\)/);
    big.v = big.v.map((v) => v.slice(0, 512)); // 64·1024 = 65,536: allowed
    assert.equal((await postJson(s.port, '/v1/attention', big)).status, 200);
    const b = await postJson(s.port, '/v1/attention/batch', { items: [SEED000, { ...SEED000, explain: { row: 5 } }] });
    const items = b.json().results;
    assert.equal(items[0].status, 200);
    assert.equal(items[1].status, 422);
    assert.equal(items[1].body.errors[0].pointer, '/items/1/explain/row');
  });
});

describe('/v1/multihead', () => {
  const BODY = {
    heads: 4, kv_heads: 2, random: { seed: 11, n: 5, d_model: 8 },
    include: ['q', 'k', 'v', 'scores', 'weights', 'head_outputs'],
  };

  test('head h, row i: the head\'s slices of q, k, v (kv head ⌊h·kv/h⌋) and its steps', async () => {
    for (const [head, row] of [[0, 0], [3, 4], [1, 2]]) {
      const r = await postJson(s.port, '/v1/multihead', { ...BODY, explain: { row, head } });
      assert.equal(r.status, 200);
      const b = r.json();
      const x = b.explain;
      assert.equal(x.head, head);
      const dk = b.d_k;
      const g = Math.floor((head * b.kv_heads) / b.heads);
      const slice = (m, h) => m.map((rr) => rr.slice(h * dk, (h + 1) * dk));
      assert.deepEqual(x.query, b.q[row].slice(head * dk, (head + 1) * dk));
      x.keys.forEach((key, j) => assert.deepEqual(key.terms.map((t) => t[1]), slice(b.k, g)[j]));
      assert.deepEqual(x.keys.map((key) => key.dot), b.scores[head][row]);
      assert.deepEqual(x.keys.map((key) => key.weight), b.weights[head][row]);
      assert.deepEqual(x.output.value, b.head_outputs[head][row]);
      assert.deepEqual(x.output.terms.map((t) => t.value), slice(b.v, g));
      assertLike(x, naiveRow({ q: slice(b.q, head), k: slice(b.k, g), v: slice(b.v, g), scale: b.scale }, row),
        `head ${head} row ${row}`);
    }
  });

  test('text, and bad heads and rows', async () => {
    const t = await postJson(s.port, '/v1/multihead?format=text', { ...BODY, explain: { row: 1, head: 2 } });
    assert.match(t.body, /\nexplain {2}head 2, query q1 \(row 1\), worked by hand/);
    assert.match(t.body, /\n {2}5 mix V {4}\S+×\[/);
    for (const [explain, type, pointer] of [
      [{ row: 0, head: 4 }, 'invalid-value', '/explain/head'],
      [{ row: 5, head: 0 }, 'invalid-value', '/explain/row'],
      [{ row: 0 }, 'missing-field', '/explain/head'],
    ]) {
      const p = assertProblem(assert, await postJson(s.port, '/v1/multihead', { ...BODY, explain }), 422);
      assert.equal(p.type, `/problems/${type}`);
      assert.equal(p.errors[0].pointer, pointer);
      assert.ok(p.errors[0].hint.length > 0);
    }
  });
});
