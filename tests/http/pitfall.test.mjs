// tests/http/pitfall.test.mjs — `pitfall`: the learner's mistakes from the notes, computed
// beside the right answer, checked against numpy itself (/usr/bin/python3 with Debian's
// python3-numpy): Q @ K's shape error word for word as numpy raises it, or its silently
// wrong numbers when the shapes fit; softmax down the columns; e^score without the max
// subtracted (inf and NaN as null, counted); and `include`'s row_max, shifted and exp.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { assertProblem, postJson, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

/*
 * What numpy makes of the request's mistake: {error} or {steps, right} with NaN and ±inf
 * as null (as JSON writes them). The learner's code, as the notes write it.
 */
const NUMPY = String.raw`
import json, sys
import numpy as np
r = json.load(sys.stdin)
q, k, v = (np.array(r[x], dtype=float) for x in ("q", "k", "v"))
scale = r.get("scale", 1 / np.sqrt(q.shape[-1]))
def masked_of(scores):
    m = scores * scale + (np.array(r["bias"]) if "bias" in r else 0)
    if "mask" in r:
        m = np.where(np.array(r["mask"], dtype=bool), m, -np.inf)
    return m
def softmax(m, axis):
    e = np.exp(m - np.max(m, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
def clean(a):
    a = np.asarray(a, dtype=float)
    return json.loads(json.dumps(np.where(np.isfinite(a), a, np.nan).tolist()).replace("NaN", "null"))
out = {}
with np.errstate(all="ignore"):
    right_w = softmax(masked_of(q @ k.T), -1)
    right_o = right_w @ v
    out["right"] = {"weights": clean(right_w), "output": clean(right_o)}
    m = masked_of(q @ k.T)
    out["row_max"] = clean(np.max(m, axis=-1))
    out["shifted"] = clean(m - np.max(m, axis=-1, keepdims=True))
    out["exp"] = clean(np.exp(m - np.max(m, axis=-1, keepdims=True)))
    p = r.get("pitfall")
    if p == "no_transpose":
        try:
            scores = q @ k
            w = softmax(masked_of(scores), -1)
            out["steps"] = {"scores": clean(scores), "weights": clean(w), "output": clean(w @ v)}
        except ValueError as e:
            out["error"] = str(e)
    elif p == "column_softmax":
        w = softmax(m, 0)
        out["steps"] = {"weights": clean(w), "output": clean(w @ v)}
    elif p == "no_max_subtraction":
        e = np.exp(m)
        w = e / np.sum(e, axis=-1, keepdims=True)
        out["steps"] = {"exp": clean(e), "weights": clean(w), "output": clean(w @ v)}
print(json.dumps(out))
`;

const numpy = (body) =>
  JSON.parse(execFileSync('/usr/bin/python3', ['-c', NUMPY], { input: JSON.stringify(body), encoding: 'utf8' }));

const flat = (x) => (Array.isArray(x) ? x.flat(Infinity) : [x]);

/* Same shape, null where numpy's is non-finite, else within 1e-12 relative. */
function assertCells(got, want, what) {
  const g = flat(got);
  const w = flat(want);
  assert.equal(g.length, w.length, `${what}: ${g.length} cells, numpy has ${w.length}`);
  g.forEach((x, i) => {
    if (w[i] === null) assert.equal(x, null, `${what}[${i}] should be null`);
    else assert.ok(x !== null && Math.abs(x - w[i]) <= 1e-12 + 1e-12 * Math.abs(w[i]), `${what}[${i}]: ${x} vs numpy ${w[i]}`);
  });
}

const nulls = (steps) => Object.values(steps).map(flat).flat().filter((x) => x === null).length;

function maxDiff(wrong, right) {
  const w = flat(wrong);
  const r = flat(right);
  let best = null;
  w.forEach((x, i) => {
    if (x !== null && (best === null || Math.abs(x - r[i]) > best)) best = Math.abs(x - r[i]);
  });
  return best;
}

async function assertPitfall(body, compared) {
  const r = await postJson(s.port, '/v1/attention', body);
  assert.equal(r.status, 200, r.body);
  const p = r.json().pitfall;
  const want = numpy(body);
  assert.equal(p.name, body.pitfall);
  assert.ok(p.what.length > 40);
  if (want.error) {
    assert.equal(p.error, want.error);
    assert.deepEqual(p.steps, {});
    assert.equal(p.non_finite, 0);
    assert.equal(p.max_abs_difference, null);
    return p;
  }
  assert.equal(p.error, null);
  assert.deepEqual(Object.keys(p.steps), Object.keys(want.steps));
  for (const name of Object.keys(want.steps)) assertCells(p.steps[name], want.steps[name], name);
  assert.equal(p.non_finite, nulls(want.steps));
  const d = maxDiff(want.steps[compared], want.right[compared]);
  if (d === null) assert.equal(p.max_abs_difference, null);
  else assert.ok(Math.abs(p.max_abs_difference - d) <= 1e-12, `${p.max_abs_difference} vs ${d}`);
  return p;
}

const SEED000 = {
  q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
};
const NOTE2 = {
  q: [[1, 0], [0, 1], [0.5, 0.5]], k: [[1, 0], [0, 1], [0.8, 0.2]], v: [[10, 0], [0, 20], [8, 4]], scale: 1,
};

describe('pitfall', () => {
  test("no_transpose on seed 000: numpy's own error, word for word", async () => {
    const p = await assertPitfall({ ...SEED000, pitfall: 'no_transpose' }, 'output');
    assert.match(p.error, /^matmul: Input operand 1 has a mismatch in its core dimension 0, .* \(size 2 is different from 4\)$/);
    const one = await assertPitfall({ ...NOTE2, q: [1, 0], pitfall: 'no_transpose' }, 'output');
    assert.match(one.error, /size 3 is different from 2/);
  });

  test('no_transpose when the shapes happen to fit: silently wrong, as numpy computes it', async () => {
    const body = {
      q: [[1, 0.5], [0, 2], [-1, 1]], k: [[1, 2], [0.5, -1]], v: [[1, 0, 2], [0, 3, -1]],
      bias: [[0, 0.5], [1, 0], [0, 0]], mask: [[1, 1], [1, 1], [1, 0]], pitfall: 'no_transpose',
    };
    const p = await assertPitfall(body, 'output');
    assert.ok(p.max_abs_difference > 0.1, 'the wrong output differs');
  });

  test('column_softmax: columns sum to 1, rows do not', async () => {
    const p = await assertPitfall({ ...NOTE2, pitfall: 'column_softmax' }, 'weights');
    const w = p.steps.weights;
    for (let j = 0; j < 3; j++) assert.ok(Math.abs(w[0][j] + w[1][j] + w[2][j] - 1) < 1e-12, `column ${j}`);
    assert.ok(w.some((row) => Math.abs(row[0] + row[1] + row[2] - 1) > 0.01), 'some row does not sum to 1');
    /* A key blocked for every query: its column is 0/0, NaN in numpy, null here. */
    const masked = await assertPitfall({ ...NOTE2, mask: [[1, 0, 1], [1, 0, 1], [1, 0, 1]], pitfall: 'column_softmax' }, 'weights');
    assert.equal(masked.non_finite, 3 + 6);
  });

  test('no_max_subtraction: e^1000 is inf, inf / inf is nan; small scores give the right weights', async () => {
    const big = await assertPitfall({ q: [[1000, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[10, 0], [0, 20]], scale: 1, pitfall: 'no_max_subtraction' }, 'weights');
    assert.deepEqual(big.steps.exp[0], [null, 1]);
    assert.deepEqual(big.steps.weights[0], [null, 0]);
    assert.deepEqual(big.steps.output[0], [null, null]);
    assert.equal(big.non_finite, 4);
    const small = await assertPitfall({ ...NOTE2, pitfall: 'no_max_subtraction' }, 'weights');
    assert.equal(small.non_finite, 0);
    assert.ok(small.max_abs_difference < 1e-15);
  });

  test('text: the sentence, numpy\'s error or the wrong steps, and the counts', async () => {
    const t = await postJson(s.port, '/v1/attention?format=text', { ...SEED000, include: [], pitfall: 'no_transpose' });
    assert.ok(t.body.includes('\npitfall  no_transpose\n  Q @ K instead of Q @ K.T'), t.body);
    assert.ok(t.body.includes(`  numpy raises ValueError: ${numpy({ ...SEED000, pitfall: 'no_transpose' }).error}\n`), t.body);
    const c = await postJson(s.port, '/v1/attention?format=text', {
      q: [[1000, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[10, 0], [0, 20]], scale: 1, include: [], pitfall: 'no_max_subtraction',
    });
    assert.match(c.body, /\n {2}exp \(wrong\)\n {12}k0 {6}k1\n {4}q0 {5}inf {2}1\.0000\n/);
    assert.ok(c.body.includes('  non-finite cells (inf, nan): 4\n'), c.body);
  });

  test('a bad pitfall is 422 invalid-value at /pitfall, with a hint', async () => {
    for (const pitfall of ['transpose', 3, ['no_transpose']]) {
      const p = assertProblem(assert, await postJson(s.port, '/v1/attention', { ...SEED000, pitfall }), 422);
      assert.equal(p.type, '/problems/invalid-value');
      assert.equal(p.errors[0].pointer, '/pitfall');
      assert.ok(p.errors[0].hint.length > 0, JSON.stringify(pitfall));
    }
  });
});

describe('include row_max, shifted, exp', () => {
  test('softmax\'s inner steps against numpy, only when asked for', async () => {
    const body = { ...NOTE2, mask: [[1, 1, 0], [0, 0, 0], [1, 1, 1]], bias: [[0, 1, 0], [0, 0, 0], [2, 0, 0]] };
    const r = await postJson(s.port, '/v1/attention', { ...body, include: ['row_max', 'shifted', 'exp', 'weights'] });
    const b = r.json();
    const want = numpy(body);
    assertCells(b.row_max, want.row_max, 'row_max'); // row 1 is fully masked: null
    assertCells(b.shifted, want.shifted, 'shifted');
    assertCells(b.exp.map((row, i) => (i === 1 ? [null, null, null] : row)), want.exp, 'exp');
    assert.deepEqual(b.exp[1], [0, 0, 0]); // blocked cells: e^-inf = 0, never NaN
    b.exp.forEach((row, i) => {
      const sum = row.reduce((a, x) => a + x, 0);
      if (sum > 0) row.forEach((x, j) => assert.ok(Math.abs(x / sum - b.weights[i][j]) < 1e-15));
    });
    const plain = (await postJson(s.port, '/v1/attention', body)).json();
    for (const part of ['row_max', 'shifted', 'exp']) assert.equal(part in plain, false, `${part} not by default`);
    const vec = (await postJson(s.port, '/v1/attention', { ...NOTE2, q: [0.5, 0.5], include: ['row_max'] })).json();
    assert.equal(vec.row_max, 0.5);
  });
});
