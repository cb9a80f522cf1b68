// tests/http/nonfinite.test.mjs — finite input whose arithmetic overflows, on every path
// (docs/reliability.md, "Non-finite values and overflow"). A score, scaled score or
// masked score of ±inf is the 422 numeric-overflow naming its step and cell, with every
// variant (the variants' path once ran the row softmax on it first: an all-NaN row sent
// the argmax scan past the row's end and killed the server), on /v1/attention, its
// batch, its text page, explain and pitfall, /v1/multihead and V2; and the server
// answers /healthz after each.
//
// The expected step and cell follow from the numbers: 1e200·1e200 = 1e400 is past the
// largest double (~1.8e308), so `scores` [0, 0]; a score of ±1e308 plus a bias of
// ±1.7e308 is past it too, so `masked` [0, 0].

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { assertProblem, postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

// Every variant, in its smallest form (d_k = 2 so that rope rotates a pair).
const VARIANTS = {
  alibi: { alibi: 0 },
  'unbounded window': { window: { left: null, right: null } },
  sink_logit: { sink_logit: 0 },
  dropout: { dropout: { p: 0 } },
  rope: { rope: {} },
  softcap: { softcap: 5 },
};

// Overflow at each step a variant's softmax once ran on. RoPE turns q (at position 1)
// by 1 radian, so its score is 1e308·cos 1 ≈ 5.4e307: a bias of 1.7e308 still overflows.
const CASES = {
  'scores +inf': { body: { q: [[1e200, 0]], k: [[1e200, 0], [0, 0]], v: [[0], [0]] }, step: 'scores' },
  'masked +inf': { body: { q: [[1e154, 0]], k: [[1e154, 0], [0, 0]], v: [[0], [0]], scale: 1,
    bias: [[1.7e308, 0]] }, step: 'masked', skip: ['softcap'] }, // the cap keeps the score at 5
  'masked -inf': { body: { q: [[1e154, 0]], k: [[-1e154, 0], [0, 0]], v: [[0], [0]], scale: 1,
    bias: [[-1.7e308, 0]] }, step: 'masked', skip: ['softcap'] },
};

const healthy = async () => {
  const h = await request(s.port, { path: '/healthz' });
  assert.equal(h.status, 200, 'the server still answers');
};

const assertOverflow = (p, step, pointerPrefix = '') => {
  assert.equal(p.type, '/problems/numeric-overflow');
  assert.equal(p.errors[0].step, step);
  assert.deepEqual(p.errors[0].cell, [0, 0]);
  assert.ok(p.errors[0].pointer.startsWith(pointerPrefix), p.errors[0].pointer);
  assert.ok(p.errors[0].hint.length > 0);
};

describe('/v1/attention: overflow is a 422 with every variant, before any row statistic', () => {
  for (const [caseName, c] of Object.entries(CASES)) {
    for (const [name, fields] of Object.entries({ none: {}, ...VARIANTS })) {
      if (c.skip?.includes(name)) continue;
      const body = { ...c.body, ...fields };
      test(`${caseName}, ${name}: JSON, text, explain, pitfall`, async () => {
        assertOverflow(assertProblem(assert, await postJson(s.port, '/v1/attention', body), 422), c.step);
        const text = await postJson(s.port, '/v1/attention?format=text', body);
        assertOverflow(assertProblem(assert, text, 422), c.step);
        const explain = await postJson(s.port, '/v1/attention', { ...body, explain: { row: 0 } });
        assertOverflow(assertProblem(assert, explain, 422), c.step);
        const pitfall = await postJson(s.port, '/v1/attention', { ...body, pitfall: 'no_transpose' });
        assertOverflow(assertProblem(assert, pitfall, 422), c.step);
        await healthy();
      });
      test(`${caseName}, ${name}: a batch item`, async () => {
        const r = await postJson(s.port, '/v1/attention/batch', { items: [{ q: [[1]], k: [[1]], v: [[1]] }, body] });
        assert.equal(r.status, 200, r.body);
        const [ok, bad] = r.json().results;
        assert.equal(ok.status, 200);
        assert.equal(bad.status, 422);
        assertOverflow(bad.body, c.step, '/items/1/');
        await healthy();
      });
    }
  }
});

describe('/v1/multihead: overflow is a 422 with every variant', () => {
  const eye = [[1, 0], [0, 1]];
  // Self-attention, one head, identity projections: q = k = x, so scores[0][0] = 1e400.
  const body = { x: [[1e200, 0], [0, 0]], heads: 1, w_q: eye, w_k: eye, w_v: eye, w_o: eye };
  for (const [name, fields] of Object.entries({ none: {}, ...VARIANTS })) {
    test(`${name}: JSON, text and explain`, async () => {
      const p = assertProblem(assert, await postJson(s.port, '/v1/multihead', { ...body, ...fields }), 422);
      assertOverflow(p, 'scores');
      const text = await postJson(s.port, '/v1/multihead?format=text', { ...body, ...fields });
      assertOverflow(assertProblem(assert, text, 422), 'scores');
      const explain = await postJson(s.port, '/v1/multihead', { ...body, ...fields, explain: { row: 0, head: 0 } });
      assertOverflow(assertProblem(assert, explain, 422), 'scores');
      await healthy();
    });
  }
});

describe('V2: overflow is a 400 with "error" for every variant parameter', () => {
  const tensor = (name, rows) => ({ name, shape: [rows.length, rows[0].length], datatype: 'FP64', data: rows.flat() });
  const inputs = [tensor('Q', [[1e200, 0]]), tensor('K', [[1e200, 0], [0, 0]]), tensor('V', [[0], [0]])];
  const PARAMS = { none: {}, alibi: { alibi: 0 }, 'unbounded window': { window_left: -1, window_right: -1 },
    sink_logit: { sink_logit: 0 }, dropout: { dropout_p: 0 }, rope: { rope_base: 10000 }, softcap: { softcap: 5 } };
  for (const [name, parameters] of Object.entries(PARAMS)) {
    test(`attention, ${name}`, async () => {
      const r = await postJson(s.port, '/v2/models/attention/infer', { inputs, parameters });
      assert.equal(r.status, 400, r.body);
      const b = r.json();
      assert.match(b.error, /scores.*cell \[0, 0\]/);
      assert.equal(b.type, '/problems/numeric-overflow');
      await healthy();
    });
  }
  test('multihead, alibi', async () => {
    const eye = { shape: [2, 2], datatype: 'FP64', data: [1, 0, 0, 1] };
    const r = await postJson(s.port, '/v2/models/multihead/infer', { inputs: [
      { name: 'X', shape: [2, 2], datatype: 'FP64', data: [1e200, 0, 0, 0] },
      ...['W_Q', 'W_K', 'W_V', 'W_O'].map((name) => ({ name, ...eye }))],
    parameters: { heads: 1, alibi: 0 } });
    assert.equal(r.status, 400, r.body);
    assert.match(r.json().error, /scores/);
    await healthy();
  });
});
