// tests/http/warnings.test.mjs — a query whose mask row blocks every key, as the
// contract describes it: its weights and output are 0 (no NaN from softmax of all
// -inf), the summary says so (row sum 0, argmax null, fully_masked_rows), and a
// warning names the query, in the same words in JSON and on the text page, for
// /v1/attention and for every head of /v1/multihead.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { postJson, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

/* The contract's sentence for a fully masked query (DESIGN.md, the warnings). */
const sentence = (query, zeroed) =>
  `query ${query} may attend to no key (its mask row blocks every key): its weights and ${zeroed}`;

const ATTENTION = {
  q: [[1, 0], [0, 1], [1, 1]],
  k: [[1, 0], [0, 1]],
  v: [[1, 2], [3, 4]],
  mask: [[1, 1], [0, 0], [1, 0]],
  include: ['weights', 'output', 'summary'],
};

describe('/v1/attention', () => {
  test('JSON: zero weights and output, the summary and one warning for query 1', async () => {
    const r = await postJson(s.port, '/v1/attention', ATTENTION);
    assert.equal(r.status, 200);
    const b = r.json();
    assert.deepEqual(b.weights[1], [0, 0]);
    assert.deepEqual(b.output[1], [0, 0]);
    assert.deepEqual(b.weights[2], [1, 0]);
    assert.deepEqual(b.summary.row_sums.map((x) => Math.round(x * 1e12) / 1e12), [1, 0, 1]);
    assert.deepEqual(b.summary.argmax, [b.summary.argmax[0], null, 0]);
    assert.deepEqual(b.summary.fully_masked_rows, [1]);
    assert.equal(b.summary.max_weight[1], 0);
    assert.equal(b.summary.entropy[1], 0);
    assert.deepEqual(b.warnings, [
      { code: 'row_fully_masked', row: 1, message: sentence('1', 'output are 0') },
    ]);
  });

  test('JSON for one query sent as a vector: scalars in the summary', async () => {
    const r = await postJson(s.port, '/v1/attention', {
      q: [1, 0], k: [[1, 0], [0, 1]], v: [[1, 2], [3, 4]], mask: [0, 0], include: ['summary'],
    });
    assert.equal(r.status, 200);
    const b = r.json();
    assert.deepEqual(b.summary, {
      row_sums: 0, argmax: null, max_weight: 0, entropy: 0, fully_masked_rows: [0], tied_keys: [],
    });
    assert.deepEqual(b.warnings.map((w) => w.message), [sentence('0', 'output are 0')]);
  });

  test('text: the same warning, the query named by its label', async () => {
    const r = await postJson(s.port, '/v1/attention?format=text', ATTENTION);
    assert.equal(r.status, 200);
    const lines = r.body.split('\n').filter((l) => l.startsWith('warning: '));
    assert.deepEqual(lines, [`warning: ${sentence('q1', 'output are 0')}`]);
  });
});

describe('/v1/multihead', () => {
  const MULTIHEAD = {
    heads: 2,
    random: { seed: 7, n: 3, d_model: 4 },
    mask: [[1, 1, 1], [0, 0, 0], [1, 0, 0]],
    include: ['weights', 'summary'],
  };

  test('JSON: every head zero for query 1, the summary per head, one warning', async () => {
    const r = await postJson(s.port, '/v1/multihead', MULTIHEAD);
    assert.equal(r.status, 200);
    const b = r.json();
    for (let h = 0; h < 2; h++) {
      assert.deepEqual(b.weights[h][1], [0, 0, 0]);
      assert.deepEqual(b.weights[h][2], [1, 0, 0]);
      assert.equal(b.summary.row_sums[h][1], 0);
      assert.equal(b.summary.argmax[h][1], null);
      assert.equal(b.summary.argmax[h][2], 0);
      assert.equal(b.summary.max_weight[h][2], 1);
      assert.equal(b.summary.entropy[h][1], 0);
    }
    assert.equal(b.summary.row_sums.length, 2);
    assert.deepEqual(b.summary.fully_masked_rows, [1]);
    assert.deepEqual(b.warnings, [{
      code: 'row_fully_masked', row: 1, message: sentence('1', 'head outputs are 0 in every head'),
    }]);
  });

  test('text: the same warning', async () => {
    const r = await postJson(s.port, '/v1/multihead?format=text', MULTIHEAD);
    assert.equal(r.status, 200);
    const lines = r.body.split('\n').filter((l) => l.startsWith('warning: '));
    assert.deepEqual(lines, [`warning: ${sentence('q1', 'head outputs are 0 in every head')}`]);
  });
});
