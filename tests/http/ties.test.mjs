// tests/http/ties.test.mjs — a tie is taught as a tie: the second note's Q3 = [0.5, 0.5]
// scores 0.5 against all three keys, its third experiment (the first key flipped) ties
// 사람 and 과일, and the first note's row 0 scores 2 against both keys. summary.tied_keys
// lists the tied keys, a "tie" warning says so, and the text and SVG pages write "tie"
// instead of a winner, on /v1/attention and in every head of /v1/multihead.
//
// The expected ties come from the scores themselves (equal dot products, worked out by
// hand below), and the weights are checked against a naive softmax in this file.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

const NOTE2 = {
  q: [[1, 0], [0, 1], [0.5, 0.5]],
  k: [[1, 0], [0, 1], [0.8, 0.2]],
  v: [[10, 0], [0, 20], [8, 4]],
  scale: 1,
};
const FLIPPED = { ...NOTE2, k: [[-1, 0], [0, 1], [0.8, 0.2]] };
const SEED000 = {
  q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
};
const LABELS = { queries: ['Q1', 'Q2', 'Q3'], keys: ['사과', '사람', '과일'] };

/* softmax(q·kᵀ·scale) row by row, in plain loops. */
function naiveWeights({ q, k, scale }) {
  return q.map((row) => {
    const s = k.map((key) => key.reduce((acc, x, c) => acc + x * row[c], 0) * scale);
    const m = Math.max(...s);
    const e = s.map((x) => Math.exp(x - m));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  });
}

const MESSAGE = (query, keys) =>
  `query ${query} ties keys ${keys} for the largest weight: no key wins, and argmax names only the lowest index`;

describe('/v1/attention', () => {
  test("the second note's Q3 = [0.5, 0.5] ties all three keys; Q1 and Q2 have winners", async () => {
    const r = await postJson(s.port, '/v1/attention', { ...NOTE2, include: ['weights', 'summary'] });
    assert.equal(r.status, 200);
    const b = r.json();
    const want = naiveWeights(NOTE2);
    b.weights.forEach((row, i) => row.forEach((w, j) =>
      assert.ok(Math.abs(w - want[i][j]) <= 1e-15, `weights[${i}][${j}]`)));
    assert.ok(Math.abs(b.weights[2][0] - 1 / 3) <= 1e-15);
    assert.deepEqual(b.summary.tied_keys, [[0], [1], [0, 1, 2]]);
    assert.deepEqual(b.summary.argmax, [0, 1, 0]); /* still the lowest index */
    assert.deepEqual(b.warnings, [
      { code: 'tie', row: 2, keys: [0, 1, 2], message: MESSAGE('2', '0, 1 and 2') },
    ]);
  });

  test('the third experiment (first key flipped to [-1, 0]) ties 사람 and 과일 for Q3', async () => {
    /* Q3·k = [-0.5, 0.5, 0.5]: keys 1 and 2 tie; Q1·k = [-1, 0, 0.8]: 과일 wins. */
    const r = await postJson(s.port, '/v1/attention', { ...FLIPPED, include: ['summary'] });
    const b = r.json();
    assert.deepEqual(b.summary.tied_keys, [[2], [1], [1, 2]]);
    assert.deepEqual(b.warnings.map((w) => [w.code, w.row, w.keys]), [['tie', 2, [1, 2]]]);
  });

  test("the first note's own example ties in row 0 (both keys score 2)", async () => {
    const r = await postJson(s.port, '/v1/attention', SEED000);
    const b = r.json();
    assert.deepEqual(b.scores[0], [2, 2]);
    assert.deepEqual(b.summary.tied_keys, [[0, 1], [1]]);
    assert.deepEqual(b.warnings, [
      { code: 'tie', row: 0, keys: [0, 1], message: MESSAGE('0', '0 and 1') },
    ]);
  });

  test('a near tie (scores 1e-6 apart) is no tie; a vector q gives one list', async () => {
    let r = await postJson(s.port, '/v1/attention', {
      q: [1, 0], k: [[1, 0], [1 + 1e-6, 0]], v: [[1], [2]], scale: 1, include: ['summary'],
    });
    assert.deepEqual(r.json().summary.tied_keys, [1]);
    assert.deepEqual(r.json().warnings, []);
    r = await postJson(s.port, '/v1/attention', { ...NOTE2, q: [0.5, 0.5], include: ['summary'] });
    assert.deepEqual(r.json().summary.tied_keys, [0, 1, 2]);
    assert.deepEqual(r.json().warnings.map((w) => w.row), [0]);
  });

  test('a fully masked row ties nothing: [] and only its own warning', async () => {
    const r = await postJson(s.port, '/v1/attention', {
      ...NOTE2, mask: [[1, 1, 1], [0, 0, 0], [1, 1, 1]], include: ['summary'],
    });
    const b = r.json();
    assert.deepEqual(b.summary.tied_keys, [[0], [], [0, 1, 2]]);
    assert.deepEqual(b.warnings.map((w) => [w.code, w.row]), [['row_fully_masked', 1], ['tie', 2]]);
  });

  test('text: "tie" in the summary instead of a winner, and the warning by label', async () => {
    const r = await postJson(s.port, '/v1/attention?format=text',
      { ...NOTE2, labels: LABELS, include: ['summary'] });
    assert.equal(r.status, 200);
    assert.match(r.body, /\n {2}Q3 {5}tie {9}0\.3333 {3}1\.0986\n/);
    assert.match(r.body, /\n {2}Q1 {5}사과 {8}0\.4573/);
    assert.ok(r.body.includes(`warning: ${MESSAGE('Q3', '사과, 사람 and 과일')}\n`), r.body);
  });

  test('text in Korean: 동점 in the summary, and the warning line says 경고', async () => {
    const r = await postJson(s.port, '/v1/attention?format=text&lang=ko',
      { ...NOTE2, labels: LABELS, include: ['summary'] });
    assert.equal(r.status, 200);
    assert.match(r.body, /\n {2}Q3 +동점 +0\.3333 +1\.0986\n/);
    assert.match(r.body, /\n경고: 쿼리 Q3 에서 키 사과, 사람, 과일 의 가중치가 가장 높은 값으로 같습니다 \(동점\)/);
    assert.doesNotMatch(r.body, /warning|tie\b/);
  });

  test('SVG: the heatmap says which row ties', async () => {
    const r = await request(s.port, {
      method: 'POST', path: '/v1/attention', headers: { Accept: 'image/svg+xml' },
      body: JSON.stringify({ ...FLIPPED, labels: LABELS }),
    });
    assert.equal(r.status, 200);
    assert.match(r.body, /<title>[^<]*; tie in Q3\)<\/title>/);
    const none = await request(s.port, {
      method: 'POST', path: '/v1/attention', headers: { Accept: 'image/svg+xml' },
      body: JSON.stringify({ ...NOTE2, q: [[1, 0], [0, 1]] }),
    });
    assert.doesNotMatch(none.body, /tie in/);
  });
});

describe('/v1/multihead', () => {
  /* Two equal rows of x: every key of every head is the same, so every row ties both. */
  const SAME = { x: [[1, 2, 3, 4], [1, 2, 3, 4]], heads: 2, random: { seed: 3 } };

  test('every head ties: tied_keys [h][n_q], a warning per head and row naming the head', async () => {
    const r = await postJson(s.port, '/v1/multihead', { ...SAME, include: ['weights', 'summary'] });
    assert.equal(r.status, 200);
    const b = r.json();
    for (const head of b.weights) for (const row of head) assert.deepEqual(row, [0.5, 0.5]);
    assert.deepEqual(b.summary.tied_keys, [[[0, 1], [0, 1]], [[0, 1], [0, 1]]]);
    assert.deepEqual(b.warnings.map((w) => [w.code, w.head, w.row, w.keys]), [
      ['tie', 0, 0, [0, 1]], ['tie', 0, 1, [0, 1]], ['tie', 1, 0, [0, 1]], ['tie', 1, 1, [0, 1]],
    ]);
    assert.equal(b.warnings[2].message,
      'head 1: query 0 ties keys 0 and 1 for the largest weight: no key wins, and argmax names only the lowest index');
  });

  test('distinct rows tie nothing; text says tie per head', async () => {
    const r = await postJson(s.port, '/v1/multihead', {
      x: [[1, 0, 0, 0], [0, 3, 0, 1]], heads: 2, random: { seed: 3 }, include: ['summary'],
    });
    const b = r.json();
    for (const head of b.summary.tied_keys) for (const row of head) assert.equal(row.length, 1);
    assert.deepEqual(b.warnings, []);
    const t = await postJson(s.port, '/v1/multihead?format=text', { ...SAME, include: ['summary'] });
    assert.match(t.body, /\n {2}q0: {2}h0 tie 0\.5000 {2}h1 tie 0\.5000\n/);
    assert.ok(t.body.includes('warning: head 1: query q1 ties keys k0 and k1'), t.body);
  });
});
