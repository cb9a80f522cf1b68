// tests/http/bertviz.test.mjs — ?format=bertviz on /v1/attention and /v1/multihead: the
// weights as bertviz's head_view takes them (DESIGN.md, "Export for bertviz").
//
// For each case (self, cross by n_q ≠ n_k, cross by labels, cross by x_q/x_kv, GQA)
// the export's weights are compared with the JSON answer's weights for the same body,
// value for value, and the nesting is read by numpy (Debian's python3) as bertviz's
// own format_attention reads it: each layer a (batch 1, heads, n_q, n_k) array whose
// last two sizes match the tokens. Admission counts the export's answer: a request
// limit that the JSON answer fits but the export (which echoes long labels) does not
// is a 422 limit-exceeded.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { SEED, SEED_WEIGHTS, assertProblem, postJson, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

/** The JSON answer and the bertviz answer to the same body. */
async function both(path, body) {
  const json = await postJson(s.port, path, body);
  const viz = await postJson(s.port, `${path}?format=bertviz`, body);
  assert.equal(json.status, 200, json.body);
  assert.equal(viz.status, 200, viz.body);
  assert.equal(viz.headers['content-type'], 'application/json');
  return { json: json.json(), viz: viz.json() };
}

/**
 * The shapes numpy gives each layer of `layers`, and the squeezed stack bertviz's
 * format_attention builds ((layers, heads, n_q, n_k)), as JSON.
 */
function numpyShapes(layers) {
  const script = [
    'import sys, json, numpy as np',
    'layers = json.load(sys.stdin)',
    'arrays = [np.array(a, dtype=float) for a in layers]',
    'stacked = np.stack([a.squeeze(0) for a in arrays])',
    'print(json.dumps({"layers": [list(a.shape) for a in arrays], "stacked": list(stacked.shape),',
    '  "row_sums": np.round(stacked.sum(-1), 12).tolist()}))',
  ].join('\n');
  const out = execFileSync('/usr/bin/python3', ['-c', script],
    { input: JSON.stringify(layers), encoding: 'utf8' });
  return JSON.parse(out);
}

const SEED002 = {
  q: [[1, 0], [0, 1], [0.5, 0.5]],
  k: [[1, 0], [0, 1], [0.8, 0.2]],
  v: [[10, 0], [0, 20], [8, 4]],
  scale: 1,
};

describe('/v1/attention?format=bertviz', () => {
  test('self-attention: tokens t0, t1 and the seed weights as [1][1][1][2][2]', async () => {
    const { json, viz } = await both('/v1/attention', SEED);
    assert.deepEqual(Object.keys(viz), ['tokens', 'attention']);
    assert.deepEqual(viz.tokens, ['t0', 't1']);
    assert.deepEqual(viz.attention, [[[SEED_WEIGHTS]]]);
    assert.deepEqual(viz.attention[0][0][0], json.weights);
    const np = numpyShapes(viz.attention);
    assert.deepEqual(np.layers, [[1, 1, 2, 2]]);
    assert.deepEqual(np.stacked, [1, 1, 2, 2]);
    assert.deepEqual(np.row_sums, [[[1, 1]]]);
  });

  test('self-attention tokens are the key labels, else the query labels', async () => {
    const same = { ...SEED002, labels: { queries: ['a', 'b', 'c'], keys: ['a', 'b', 'c'] } };
    let r = await both('/v1/attention', same);
    assert.deepEqual(r.viz.tokens, ['a', 'b', 'c']);
    assert.deepEqual(r.viz.attention[0][0][0], r.json.weights);
    r = await both('/v1/attention', { ...SEED002, labels: { keys: ['사과', '사람', '과일'] } });
    assert.deepEqual(r.viz.tokens, ['사과', '사람', '과일']);
    r = await both('/v1/attention', { ...SEED002, labels: { queries: ['Q1', 'Q2', 'Q3'] } });
    assert.deepEqual(r.viz.tokens, ['Q1', 'Q2', 'Q3']);
  });

  test('query labels that differ from the key labels make it cross-attention', async () => {
    const body = { ...SEED002, labels: { queries: ['Q1', 'Q2', 'Q3'], keys: ['사과', '사람', '과일'] } };
    const { json, viz } = await both('/v1/attention', body);
    assert.deepEqual(Object.keys(viz), ['encoder_tokens', 'decoder_tokens', 'cross_attention']);
    assert.deepEqual(viz.encoder_tokens, ['사과', '사람', '과일']);
    assert.deepEqual(viz.decoder_tokens, ['Q1', 'Q2', 'Q3']);
    assert.deepEqual(viz.cross_attention, [[[json.weights]]]);
    // seed 002's first query: softmax([1, 0, 0.8]) (the note's unscaled scores)
    const e = [Math.exp(1), 1, Math.exp(0.8)];
    const sum = e[0] + e[1] + e[2];
    e.forEach((x, j) => assert.ok(Math.abs(viz.cross_attention[0][0][0][0][j] - x / sum) < 1e-15));
  });

  test('n_q ≠ n_k is cross-attention; a vector q is one decoder token', async () => {
    const body = { q: [1, 0], k: SEED002.k, v: SEED002.v, scale: 1, labels: { keys: ['사과', '사람', '과일'] } };
    const { json, viz } = await both('/v1/attention', body);
    assert.deepEqual(viz.encoder_tokens, ['사과', '사람', '과일']);
    assert.deepEqual(viz.decoder_tokens, ['t0']);
    assert.deepEqual(viz.cross_attention, [[[[json.weights]]]]); // the vector as a (1, n_k) row
    const np = numpyShapes(viz.cross_attention);
    assert.deepEqual(np.layers, [[1, 1, 1, 3]]);
  });

  test('round and a mask give the JSON answer\'s numbers, zeros where blocked', async () => {
    const body = { ...SEED002, mask: 'causal', round: 3 };
    const { json, viz } = await both('/v1/attention', body);
    assert.deepEqual(viz.attention[0][0][0], json.weights);
    assert.deepEqual(viz.attention[0][0][0][0], [1, 0, 0]);
    assert.deepEqual(viz.attention[0][0][0][1], [0.269, 0.731, 0]);
  });

  test('a bad request is the same problem as for JSON', async () => {
    const res = await postJson(s.port, '/v1/attention?format=bertviz', { q: [[1, 0]], k: [[1, 0, 0]], v: [[1]] });
    const p = assertProblem(assert, res, 422);
    assert.equal(p.type, '/problems/shape-mismatch');
  });
});

describe('/v1/multihead?format=bertviz', () => {
  test('GQA: 4 query heads over 2 kv heads give 4 maps, equal to the JSON weights', async () => {
    const body = { heads: 4, kv_heads: 2, random: { seed: 3, n: 5, d_model: 8 } };
    const { json, viz } = await both('/v1/multihead', body);
    assert.deepEqual(viz.tokens, ['t0', 't1', 't2', 't3', 't4']);
    assert.equal(json.weights.length, 4);
    assert.deepEqual(viz.attention, [[json.weights]]);
    const np = numpyShapes(viz.attention);
    assert.deepEqual(np.layers, [[1, 4, 5, 5]]);
    for (const row of np.row_sums[0].flat()) assert.equal(row, 1);
  });

  test('x_q with x_kv is cross-attention even when n_q = n_k', async () => {
    const body = { heads: 2, random: { seed: 1, n: 3, n_kv: 3, d_model: 4 }, round: 6,
      labels: { queries: ['je', 'suis', 'là'], keys: ['I', 'am', 'here'] } };
    const { json, viz } = await both('/v1/multihead', body);
    assert.deepEqual(viz.encoder_tokens, ['I', 'am', 'here']);
    assert.deepEqual(viz.decoder_tokens, ['je', 'suis', 'là']);
    assert.deepEqual(viz.cross_attention, [[json.weights]]);
    assert.deepEqual(numpyShapes(viz.cross_attention).layers, [[1, 2, 3, 3]]);
    // x_q/x_kv with no labels at all: still cross
    const bare = await postJson(s.port, '/v1/multihead?format=bertviz',
      { heads: 2, random: { seed: 1, n: 3, n_kv: 3, d_model: 4 } });
    assert.deepEqual(Object.keys(bare.json()), ['encoder_tokens', 'decoder_tokens', 'cross_attention']);
  });

  test('a cross-attention with n_kv ≠ n: decoder rows, encoder columns', async () => {
    const body = { heads: 2, kv_heads: 1, random: { seed: 2, n: 2, n_kv: 4, d_model: 4 } };
    const { json, viz } = await both('/v1/multihead', body);
    assert.deepEqual(viz.decoder_tokens, ['t0', 't1']);
    assert.deepEqual(viz.encoder_tokens, ['t0', 't1', 't2', 't3']);
    assert.deepEqual(viz.cross_attention, [[json.weights]]);
    assert.deepEqual(numpyShapes(viz.cross_attention).layers, [[1, 2, 2, 4]]);
  });
});

describe('negotiation and admission', () => {
  test('batch and shapes cannot answer bertviz (406); an unknown format names it', async () => {
    let p = assertProblem(assert, await postJson(s.port, '/v1/attention/batch?format=bertviz',
      { items: [SEED] }), 406);
    assert.equal(p.parameter, 'format');
    p = assertProblem(assert, await postJson(s.port, '/v1/attention?format=bertvis', SEED), 422);
    assert.equal(p.parameter, 'format');
    assert.match(p.detail, /use json, text, svg or bertviz/);
  });

  test('the export\'s echoed labels count against the request limit', async () => {
    const limited = await startServer(['--max-request-bytes', '300000']);
    try {
      const long = (c) => c.repeat(60000);
      const body = { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[1], [2]],
        labels: { queries: [long('a'), long('b')], keys: [long('c'), long('d')] } };
      const json = await postJson(limited.port, '/v1/attention', body);
      assert.equal(json.status, 200, json.body);
      const viz = await postJson(limited.port, '/v1/attention?format=bertviz', body);
      const p = assertProblem(assert, viz, 422);
      assert.equal(p.type, '/problems/limit-exceeded');
      assert.equal(p.errors[0].pointer, '/q');
    } finally {
      await limited.stop();
    }
  });
});
