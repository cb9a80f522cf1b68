// tests/http/variants.test.mjs — the attention variants over HTTP (DESIGN.md, "Attention
// variants, each its own step"): RoPE, softcap, ALiBi, the window and sinks, the sink
// logit and dropout on /v1/attention and its batch items; each step in `steps` with its
// shape; the text page; and every bad value a 422 naming its pointer with a hint.
//
// Expected numbers come from the formulas, computed here (Math.tanh, Math.exp, the
// generator in BigInt) or by numpy (quoted with the expression that gave them); never
// from attnd.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { SEED, SEED_OUTPUT, SEED_WEIGHTS, assertProblem, postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

const near = (got, want, tol = 1e-12) =>
  assert.ok(Math.abs(got - want) <= tol * (1 + Math.abs(want)), `${got} vs ${want}`);
const nearAll = (got, want, tol) => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => (Array.isArray(g) ? nearAll(g, want[i], tol) : near(g, want[i], tol)));
};

const attention = async (body) => {
  const r = await postJson(s.port, '/v1/attention', body);
  assert.equal(r.status, 200, r.body);
  return r.json();
};

/* The documented generator (core/random.h), value k of stream 7, as u in [0, 1). */
const M = (1n << 64n) - 1n;
const mix = (z) => {
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M;
  return z ^ (z >> 31n);
};
const unit = (seed, stream, k) =>
  Number(mix((BigInt(seed) + (BigInt(stream) << 40n) + (BigInt(k) + 1n) * 0x9E3779B97F4A7C15n) & M) >> 11n) * 2 ** -53;

describe('RoPE', () => {
  // x = [1, 2, 3, 4] at position 1 (n_q = 1, n_k = 2: off = 1), base 10000, r = 4.
  // numpy, Hugging Face's rotate_half: x*cos(cat(θ,θ)) + cat(-x[2:], x[:2])*sin(cat(θ,θ))
  const HALF = [-1.9841106485555495, 1.9599006674966641, 2.4623779024123156, 4.019799668334995];
  // numpy, Meta's complex form: (x[0::2] + 1j*x[1::2]) * exp(1j*θ), interleaved back
  const INTER = [-1.1426396637476532, 1.922075596544176, 2.9598506679133294, 4.029799501669161];
  const body = (layout) => ({ q: [1, 2, 3, 4], k: [[1, 2, 3, 4], [1, 2, 3, 4]], v: [[1], [2]], rope: { layout } });

  test('"half" matches rotate_half, "interleaved" the complex form, and they differ', async () => {
    const half = await attention(body('half'));
    const inter = await attention(body('interleaved'));
    nearAll(half.q_rope, HALF, 1e-15);
    nearAll(inter.q_rope, INTER, 1e-15);
    nearAll(half.k_rope[1], HALF, 1e-15); // key 1 sits at position 1 too
    assert.deepEqual(half.k_rope[0], [1, 2, 3, 4]); // key 0 at position 0: unturned
    assert.ok(Math.abs(half.q_rope[0] - inter.q_rope[0]) > 0.8);
    // its steps, with their shapes (a vector q drops the leading 1)
    assert.deepEqual(half.steps.map((st) => [st.step, st.name]),
      [[1, 'q_rope'], [2, 'k_rope'], [3, 'scores'], [4, 'scaled'], [5, 'masked'], [6, 'weights'], [7, 'output']]);
    assert.deepEqual(half.steps[0].shape, [4]);
    assert.deepEqual(half.steps[1].shape, [2, 4]);
    assert.equal(half.steps[2].op, 'Q_rope @ K_rope^T');
  });

  test('fraction 0.5 of d_k = 4 turns the first pair only', async () => {
    const b = await attention({ ...body('half'), rope: { fraction: 0.5 } });
    near(b.q_rope[0], Math.cos(1) - 2 * Math.sin(1), 1e-15);
    near(b.q_rope[1], 2 * Math.cos(1) + Math.sin(1), 1e-15);
    assert.deepEqual(b.q_rope.slice(2), [3, 4]);
  });
});

describe('softcap', () => {
  test('c·tanh(scaled/c) on the seed, before the mask', async () => {
    const b = await attention({ ...SEED, softcap: 0.5 });
    const cap = (x) => 0.5 * Math.tanh(x / 0.5);
    nearAll(b.softcapped, [[cap(1), cap(1)], [cap(0), cap(1)]], 1e-15);
    nearAll(b.masked, b.softcapped, 0);
    // numpy softmax of [0, 0.5·tanh(2)]: [0.3817767109287995, 0.6182232890712004]
    nearAll(b.weights[1], [0.3817767109287995, 0.6182232890712004], 1e-15);
    assert.deepEqual(b.steps.map((st) => st.name), ['scores', 'scaled', 'softcapped', 'masked', 'weights', 'output']);
    assert.deepEqual(b.steps[2].shape, [2, 2]);
  });
});

describe('ALiBi', () => {
  test('"auto" for one head is 2^-8, times |i + n_k - n_q - j|, with causal', async () => {
    const b = await attention({ q: [[0], [0]], k: [[1], [2], [3]], v: [[1], [2], [3]], alibi: 'auto', mask: 'causal' });
    const m = 2 ** -8; // off = 1
    assert.deepEqual(b.masked, [[-m, 0, null], [-2 * m, -m, 0]]);
  });
  test('a slope given as a number', async () => {
    const b = await attention({ q: [[0], [0]], k: [[1], [2], [3]], v: [[1], [2], [3]], alibi: 0.5 });
    assert.deepEqual(b.masked, [[-0.5, 0, -0.5], [-1, -0.5, 0]]);
    near(b.weights[0][0], Math.exp(-0.5) / (2 * Math.exp(-0.5) + 1));
  });
});

describe('window and sinks', () => {
  // FlashAttention's window_size (1, 0) with n_q = 3, n_k = 5, bottom-right aligned (off = 2):
  // query i sees keys i + 1 and i + 2.
  const body = { q: [[0], [0], [0]], k: [[0], [0], [0], [0], [0]], v: [[1], [2], [3], [4], [5]], window: { left: 1, right: 0 } };
  test('n_q != n_k: the window of FlashAttention, bottom-right aligned', async () => {
    const b = await attention(body);
    assert.deepEqual(b.masked, [[null, 0, 0, null, null], [null, null, 0, 0, null], [null, null, null, 0, 0]]);
    assert.deepEqual(b.output, [[2.5], [3.5], [4.5]]);
    // without scores, scaled or softcapped asked for, only the window's band is multiplied
    const band = await attention({ ...body, include: ['masked', 'weights', 'output'] });
    assert.deepEqual([band.masked, band.weights, band.output], [b.masked, b.weights, b.output]);
  });
  test('sink_tokens 1 keeps key 0 visible through the window', async () => {
    const b = await attention({ ...body, sink_tokens: 1 });
    assert.deepEqual(b.masked.map((row) => row.map((x) => x !== null)), [
      [true, true, true, false, false], [true, false, true, true, false], [true, false, false, true, true]]);
  });
  test('a window that empties a row is a fully masked row, not an error', async () => {
    const b = await attention({ q: [[1], [1], [1]], k: [[1], [1]], v: [[3], [5]], window: { left: 0, right: 0 } });
    assert.deepEqual(b.output, [[0], [3], [5]]);
    assert.deepEqual(b.summary.fully_masked_rows, [0]);
    assert.equal(b.warnings[0].code, 'row_fully_masked');
    assert.equal(b.warnings[0].row, 0);
    // the window emptied it (no mask was sent): the warning blames the window
    assert.match(b.warnings[0].message, /its window and sink tokens show none of the keys its mask allows/);
    const text = await postJson(s.port, '/v1/attention?format=text',
      { q: [[1], [1], [1]], k: [[1], [1]], v: [[3], [5]], window: { left: 0, right: 0 } });
    assert.match(text.body, /warning: query q0 may attend to no key \(its window/);
    // a row the mask empties still blames the mask, window or not
    const m = await attention({ q: [[1], [1]], k: [[1], [1]], v: [[3], [5]], mask: [[0, 0], [1, 1]], window: { left: 1, right: 1 } });
    assert.match(m.warnings[0].message, /its mask row blocks every key/);
  });
  test('null sides are unbounded: {left: null, right: 0} is causal', async () => {
    const w = await attention({ ...SEED, window: { left: null, right: 0 } });
    const c = await attention({ ...SEED, mask: 'causal' });
    assert.deepEqual(w.weights, c.weights);
  });
});

describe('sink logit', () => {
  test('rows sum to 1 - sink_weight; the sink carries no value', async () => {
    const b = await attention({ ...SEED, sink_logit: 0 });
    const e = Math.E;
    // masked [[1, 1], [0, 1]] with z = 0: row 0 sink 1/(2e + 1), row 1 1/(e + 2)
    nearAll(b.summary.sink_weight, [1 / (2 * e + 1), 1 / (e + 2)], 1e-15);
    nearAll(b.weights, [[e / (2 * e + 1), e / (2 * e + 1)], [1 / (e + 2), e / (e + 2)]], 1e-15);
    b.summary.row_sums.forEach((sum, i) => near(sum, 1 - b.summary.sink_weight[i], 1e-15));
    nearAll(b.output[0], [10 * e / (2 * e + 1), 10 * e / (2 * e + 1)], 1e-14);
  });
  test('a sink logit far above every score takes the whole weight: argmax null, a warning, no tie', async () => {
    // e^(1 - 1e308) is 0 for both keys: the sink's term is the whole sum
    const b = await attention({ q: [[1, 0]], k: [[1, 0], [0, 1]], v: [[1], [2]], sink_logit: 1e308 });
    assert.deepEqual(b.weights, [[0, 0]]);
    assert.deepEqual(b.summary.argmax, [null]);
    assert.deepEqual(b.summary.sink_weight, [1]);
    assert.deepEqual(b.summary.tied_keys, [[]]);
    assert.deepEqual(b.summary.fully_masked_rows, []);
    assert.deepEqual(b.warnings.map((w) => [w.code, w.row]), [['sink_took_all', 0]]);
    assert.match(b.warnings[0].message, /^query 0 gives its whole weight to the sink/);
  });
  test('a fully masked row gives all to the sink', async () => {
    const b = await attention({ ...SEED, sink_logit: 2, mask: [[0, 0], [1, 1]] });
    assert.equal(b.summary.sink_weight[0], 1);
    assert.deepEqual(b.weights[0], [0, 0]);
    assert.equal(b.warnings[0].row, 0);
  });
});

describe('dropout', () => {
  const body = { q: [[0], [0], [0]], k: [[0], [0], [0], [0]], v: [[1], [2], [3], [4]] };
  test('keep from the documented generator (stream 7), scaled by 1/(1 - p)', async () => {
    const p = 0.5, seed = 42;
    const b = await attention({ ...body, dropout: { p, seed } });
    const keep = [0, 1, 2].map((i) => [0, 1, 2, 3].map((j) => (unit(seed, 7, i * 4 + j) >= p ? 1 : 0)));
    assert.deepEqual(keep, [[1, 1, 0, 1], [0, 1, 0, 1], [0, 0, 0, 1]]); // numpy agrees
    assert.deepEqual(b.dropout_keep, keep);
    assert.deepEqual(b.dropped, keep.map((row) => row.map((x) => (x * 0.25) / (1 - p))));
    assert.deepEqual(b.weights, keep.map((row) => row.map(() => 0.25))); // the weights stay
    nearAll(b.output, [[3.5], [3], [2]], 1e-15);
    assert.deepEqual(b.steps.map((st) => st.name).slice(-3), ['dropout_keep', 'dropped', 'output']);
    assert.equal(b.steps.at(-1).op, 'dropped @ V');
  });
  test('the same seed gives the same draws; p = 0 is no dropout', async () => {
    const a = await attention({ ...body, dropout: { p: 0.3, seed: 7 } });
    const b = await attention({ ...body, dropout: { p: 0.3, seed: 7 } });
    assert.deepEqual(a.dropout_keep, b.dropout_keep);
    const zero = await attention({ ...SEED, dropout: { p: 0, seed: 3 } });
    assert.deepEqual(zero.weights, SEED_WEIGHTS);
    assert.deepEqual(zero.output, SEED_OUTPUT);
  });
});

describe('every variant at once', () => {
  test('ten steps in order, include picks among them, the text page shows each', async () => {
    const all = { ...SEED, rope: {}, softcap: 5, alibi: 'auto', window: { left: 1, right: 0 },
      sink_tokens: 1, sink_logit: -1, dropout: { p: 0.1, seed: 1 } };
    const b = await attention(all);
    assert.deepEqual(b.steps.map((st) => st.step), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(b.steps.map((st) => st.name), ['q_rope', 'k_rope', 'scores', 'scaled',
      'softcapped', 'masked', 'weights', 'dropout_keep', 'dropped', 'output']);
    const only = await attention({ ...all, include: ['softcapped', 'weights'] });
    assert.deepEqual(Object.keys(only).filter((k) => !['d_k', 'scale', 'mask_semantics', 'shapes', 'steps', 'warnings'].includes(k)),
      ['weights', 'softcapped']);
    assert.deepEqual(only.weights, b.weights);
    const r = await request(s.port, { method: 'POST', path: '/v1/attention?format=text', body: JSON.stringify(all) });
    assert.equal(r.status, 200);
    for (const line of ['step 1  q_rope', 'step 5  softcapped = softcap * tanh(scaled / softcap)',
      'step 8  dropout_keep', 'step 10  output = dropped @ V', 'sink_weight'])
      assert.ok(r.body.includes(line), line);
  });
  test('the heatmap says which variants shaped its weights', async () => {
    const r = await request(s.port, { method: 'POST', path: '/v1/attention?format=svg',
      body: JSON.stringify({ ...SEED, softcap: 0.5, window: { left: 1, right: null }, sink_tokens: 1, dropout: { p: 0.1 } }) });
    assert.equal(r.status, 200);
    assert.match(r.body, /<title>Attention weights \(softmax\(Q @ K\^T \* scale\) with scale 0\.5; 2 x 2; softcap 0\.5, window 1 back, unbounded ahead, 1 sink token, dropout 0\.1 \(weights before it\); tie in q0\)<\/title>/); // seed 000's row 0 ties
    const plain = await request(s.port, { method: 'POST', path: '/v1/attention?format=svg', body: JSON.stringify(SEED) });
    assert.match(plain.body, /<title>Attention weights \(softmax\(Q @ K\^T \* scale\) with scale 0\.5; 2 x 2; tie in q0\)<\/title>/);
  });
  test('without variants the answer is the seed\'s, bit for bit', async () => {
    const b = await attention(SEED);
    assert.deepEqual(b.weights, SEED_WEIGHTS);
    assert.deepEqual(b.steps.map((st) => st.name), ['scores', 'scaled', 'masked', 'weights', 'output']);
  });
});

describe('bad values: 422 naming the pointer, with a hint', () => {
  const cases = [
    [{ rope: { fraction: 0.25 } }, 'invalid-value', '/rope/fraction', /rotate no column/],
    [{ rope: { fraction: 1.5 } }, 'invalid-value', '/rope/fraction', /\(0, 1\]/],
    [{ rope: { base: 0 } }, 'invalid-value', '/rope/base', /above 0/],
    [{ rope: { layout: 'interleave' } }, 'invalid-value', '/rope/layout', /did you mean "interleaved"/],
    [{ rope: { bse: 10 } }, 'unknown-field', '/rope/bse', /base/],
    [{ rope: { positions_q: [1, 2, 3] } }, 'invalid-value', '/rope/positions_q', /needs 2, one per query/],
    [{ rope: 1 }, 'invalid-value', '/rope', /object/],
    [{ softcap: 0 }, 'invalid-value', '/softcap', /above 0/],
    [{ softcap: -1 }, 'invalid-value', '/softcap', /above 0/],
    [{ alibi: [0.5, 0.25] }, 'invalid-value', '/alibi', /2 numbers but needs 1, one per head/],
    [{ alibi: 'sometimes' }, 'invalid-value', '/alibi', /auto/],
    [{ alibi: -1 }, 'invalid-value', '/alibi', /negative/],
    [{ window: { left: -1 } }, 'invalid-value', '/window/left', /window|left/],
    [{ window: { left: 1.5 } }, 'invalid-value', '/window/left', /left/],
    [{ window: { top: 1 } }, 'unknown-field', '/window/top', /left|right/],
    [{ sink_tokens: -2 }, 'invalid-value', '/sink_tokens', /sink_tokens/],
    [{ sink_logit: 'big' }, 'invalid-value', '/sink_logit', /sink_logit/],
    [{ dropout: { p: 1 } }, 'invalid-value', '/dropout/p', /^dropout\.p is 1, but it must be in \[0, 1\): at least 0 and below 1 /],
    [{ dropout: { p: -0.1 } }, 'invalid-value', '/dropout/p', /\[0, 1\)/],
    [{ dropout: { seed: 1 } }, 'missing-field', '/dropout/p', /p/],
    [{ dropout: { p: 0.1, seed: -1 } }, 'invalid-value', '/dropout/seed', /seed/],
    [{ windw: { left: 1 } }, 'unknown-field', '/windw', /window/],
  ];
  for (const [extra, type, pointer, detail] of cases)
    test(`${JSON.stringify(extra)} → ${type} at ${pointer}`, async () => {
      const p = assertProblem(assert, await postJson(s.port, '/v1/attention', { ...SEED, ...extra }), 422);
      assert.equal(p.type, `/problems/${type}`);
      assert.equal(p.errors[0].pointer, pointer);
      assert.ok(p.errors[0].hint, 'a hint');
      assert.match(`${p.detail} ${p.errors[0].hint}`, detail);
    });

  test('a base so small that a rotation angle overflows blames /rope/base, even for a q of zeros', async () => {
    // base^(-2c/r) for c = 31, r = 64 is 1e-320^(-0.97) ≈ 1e310: past the largest double
    const zeros = Array(64).fill(0);
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention', {
      q: [zeros], k: [zeros, zeros], v: [[1], [2]], rope: { base: 1e-320 } }), 422);
    assert.equal(p.type, '/problems/invalid-value');
    assert.equal(p.errors[0].pointer, '/rope/base');
    assert.match(p.detail, /rotation angle .* overflow/);
    assert.doesNotMatch(p.errors[0].hint, /scale q/);
    assert.match(p.errors[0].hint, /below 1/);
  });

  test('overflow in q_rope names that step and q\'s row', async () => {
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention', {
      q: [[1.7e308, 1.7e308]], k: [[1, 1]], v: [[1]], rope: { positions_q: [1] } }), 422);
    assert.equal(p.type, '/problems/numeric-overflow');
    assert.equal(p.errors[0].step, 'q_rope');
    assert.deepEqual(p.errors[0].cell, [0, 1]);
    assert.equal(p.errors[0].pointer, '/q/0');
  });

  test('overflow in the scores of a vector q with a variant points at /q, as without one', async () => {
    for (const extra of [{}, { softcap: 30 }]) {
      const p = assertProblem(assert, await postJson(s.port, '/v1/attention', {
        q: [1e200, 1e200], k: [[1e200, 1e200]], v: [[1]], ...extra }), 422);
      assert.equal(p.type, '/problems/numeric-overflow', JSON.stringify(extra));
      assert.equal(p.errors[0].step, 'scores');
      assert.equal(p.errors[0].pointer, '/q', JSON.stringify(extra)); // a vector has no row 0
      assert.match(p.errors[0].hint, /^q row 0 \. k row 0 is beyond the largest double/);
    }
  });
});

describe('batch items', () => {
  test('each item with its own variants; a bad one fails alone, with its absolute pointer', async () => {
    const r = await postJson(s.port, '/v1/attention/batch', { items: [
      { ...SEED, softcap: 0.5 }, { ...SEED, dropout: { p: 2 } }, SEED] });
    assert.equal(r.status, 200);
    const [a, bad, plain] = r.json().results;
    assert.equal(a.status, 200);
    nearAll(a.body.weights[1], [0.3817767109287995, 0.6182232890712004], 1e-15);
    assert.equal(bad.status, 422);
    assert.equal(bad.body.errors[0].pointer, '/items/1/dropout/p');
    assert.deepEqual(plain.body.weights, SEED_WEIGHTS);
  });
});

describe('/v1/multihead: per head', () => {
  const eye = (n) => [...Array(n)].map((_, i) => [...Array(n)].map((_, j) => (i === j ? 1 : 0)));
  const zeros = (r, c) => [...Array(r)].map(() => Array(c).fill(0));
  // q = k = 0, so every score is 0 and masked is the ALiBi bias alone; v = x.
  const body = (heads, d) => ({ x: [[1, ...Array(d - 1).fill(0)], [0, 1, ...Array(d - 2).fill(0)], Array(d).fill(0.5)],
    heads, w_q: zeros(d, d), w_k: zeros(d, d), w_v: eye(d), w_o: eye(d) });
  // The ALiBi paper's get_slopes (Press et al., the code released with the paper).
  const getSlopes = (n) => {
    const pow2 = (m) => { const start = 2 ** (-(2 ** -(Math.log2(m) - 3))); return [...Array(m)].map((_, i) => start * start ** i); };
    if (Number.isInteger(Math.log2(n))) return pow2(n);
    const c = 2 ** Math.floor(Math.log2(n));
    return [...pow2(c), ...getSlopes(2 * c).filter((_, i) => i % 2 === 0).slice(0, n - c)];
  };
  for (const heads of [8, 6]) {
    test(`alibi "auto" for ${heads} heads is the paper's slopes, each head its own`, async () => {
      const r = await postJson(s.port, '/v1/multihead', { ...body(heads, heads), alibi: 'auto', include: ['masked'] });
      assert.equal(r.status, 200, r.body);
      const slopes = getSlopes(heads);
      if (heads === 6) assert.deepEqual(slopes, [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]);
      r.json().masked.forEach((m, h) => {
        for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) near(m[i][j], -slopes[h] * Math.abs(i - j) + 0, 1e-15);
      });
    });
  }
  test('sink_logit per head: each row gives e^z/(n_k + e^z) to the sink', async () => {
    const r = await postJson(s.port, '/v1/multihead', { ...body(2, 4), sink_logit: [0, 1], include: ['weights', 'summary'] });
    assert.equal(r.status, 200, r.body);
    const b = r.json();
    [0, 1].forEach((z, h) => b.summary.sink_weight[h].forEach((w) => near(w, Math.exp(z) / (3 + Math.exp(z)), 1e-15)));
    b.weights[1].forEach((row) => row.forEach((w) => near(w, 1 / (3 + Math.E), 1e-15)));
  });
  test('dropout per head reads k over (h, n_q, n_k); rope rotates q per head, k per kv head', async () => {
    const p = 0.4, seed = 5;
    const r = await postJson(s.port, '/v1/multihead', { random: { seed: 2, n: 3, d_model: 4 }, heads: 2, kv_heads: 1,
      dropout: { p, seed }, rope: {}, include: ['dropout_keep', 'q_rope', 'k_rope', 'q', 'k'] });
    assert.equal(r.status, 200, r.body);
    const b = r.json();
    b.dropout_keep.forEach((m, h) => m.forEach((row, i) => row.forEach((x, j) =>
      assert.equal(x, unit(seed, 7, h * 9 + i * 3 + j) >= p ? 1 : 0))));
    assert.equal(b.q_rope.length, 2);
    assert.equal(b.k_rope.length, 1);
    // head 1's query 2 (position 2): its pair (q[2][2], q[2][3]) turned by 2 radians
    const [a, c] = [b.q[2][2], b.q[2][3]];
    nearAll(b.q_rope[1][2], [a * Math.cos(2) - c * Math.sin(2), c * Math.cos(2) + a * Math.sin(2)], 1e-14);
    assert.deepEqual(b.k_rope[0][0], b.k[0]); // key 0 at position 0
    const names = b.steps.map((st) => st.name);
    assert.deepEqual(names.slice(3, 7), ['split', 'q_rope', 'k_rope', 'scores']);
    assert.deepEqual(b.steps.find((st) => st.name === 'k_rope').shape, [1, 3, 2]);
    assert.deepEqual(names.slice(-5, -2), ['dropout_keep', 'dropped', 'head_outputs']);
  });
  test('the text page numbers the variants\' steps among the eleven', async () => {
    const r = await request(s.port, { method: 'POST', path: '/v1/multihead?format=text',
      body: JSON.stringify({ random: { seed: 1, n: 2, d_model: 4 }, heads: 2, softcap: 1, sink_logit: 0 }) });
    assert.equal(r.status, 200);
    assert.ok(r.body.includes('step 7  softcapped = softcap * tanh(scaled / softcap)  -> (2, 2, 2)'), r.body);
    assert.ok(r.body.includes('step 12  output'));
    assert.ok(r.body.includes('sink_weight'));
  });
  test('per-head lists of the wrong length are 422 at their pointer', async () => {
    for (const [extra, pointer] of [[{ alibi: [0.5] }, '/alibi'], [{ sink_logit: [1, 2, 3] }, '/sink_logit']]) {
      const p = assertProblem(assert, await postJson(s.port, '/v1/multihead', { ...body(2, 4), ...extra }), 422);
      assert.equal(p.errors[0].pointer, pointer);
      assert.match(p.errors[0].hint, /one per head/);
    }
  });
});

describe('V2 parameters', () => {
  const tensor = (name, rows) => ({ name, shape: Array.isArray(rows[0]) ? [rows.length, rows[0].length] : [rows.length], datatype: 'FP64', data: rows.flat() });
  const infer = (model, body) => postJson(s.port, `/v2/models/${model}/infer`, body);
  const seedInputs = [tensor('Q', SEED.q), tensor('K', SEED.k), tensor('V', SEED.v)];
  const outputOf = (r, name) => r.json().outputs.find((o) => o.name === name).data;

  test('softcap, window_left -1 (unbounded) and window_right 0 as /v1 computes them', async () => {
    const r = await infer('attention', { inputs: seedInputs, parameters: { softcap: 0.5 }, outputs: [{ name: 'WEIGHTS' }] });
    assert.equal(r.status, 200, r.body);
    nearAll(outputOf(r, 'WEIGHTS').slice(2), [0.3817767109287995, 0.6182232890712004], 1e-15);
    const w = await infer('attention', { inputs: seedInputs, parameters: { window_left: -1, window_right: 0 } });
    const c = await infer('attention', { inputs: seedInputs, parameters: { causal: true } });
    assert.deepEqual(outputOf(w, 'WEIGHTS'), outputOf(c, 'WEIGHTS'));
  });
  test('dropout over a batch draws (B, n_q, n_k) row-major', async () => {
    const B = 2, p = 0.5, seed = 42;
    const q = [0, 0, 0], k = [0, 0, 0, 0], v = [1, 2, 3, 4];
    const r = await infer('attention', { inputs: [
      { name: 'Q', shape: [B, 3, 1], datatype: 'FP64', data: [...q, ...q] },
      { name: 'K', shape: [B, 4, 1], datatype: 'FP64', data: [...k, ...k] },
      { name: 'V', shape: [B, 4, 1], datatype: 'FP64', data: [...v, ...v] }],
    parameters: { dropout_p: p, dropout_seed: seed }, outputs: [{ name: 'OUTPUT' }] });
    assert.equal(r.status, 200, r.body);
    const want = [];
    for (let b = 0; b < B; b++)
      for (let i = 0; i < 3; i++) {
        let sum = 0;
        for (let j = 0; j < 4; j++) sum += unit(seed, 7, b * 12 + i * 4 + j) >= p ? (0.25 / (1 - p)) * v[j] : 0;
        want.push(sum);
      }
    nearAll(outputOf(r, 'OUTPUT'), want, 1e-15);
    assert.deepEqual(want.slice(0, 3), [3.5, 3, 2]); // the /v1 example's first problem
  });
  test('multihead: alibi "auto" and a sink logit per request', async () => {
    const zeros = (n) => Array(n * n).fill(0);
    const eye = (n) => [...Array(n * n)].map((_, c) => (c % (n + 1) === 0 ? 1 : 0));
    const r = await infer('multihead', { inputs: [
      { name: 'X', shape: [2, 2], datatype: 'FP64', data: [1, 0, 0, 1] },
      { name: 'W_Q', shape: [2, 2], datatype: 'FP64', data: zeros(2) },
      { name: 'W_K', shape: [2, 2], datatype: 'FP64', data: zeros(2) },
      { name: 'W_V', shape: [2, 2], datatype: 'FP64', data: eye(2) },
      { name: 'W_O', shape: [2, 2], datatype: 'FP64', data: eye(2) }],
    parameters: { heads: 2, alibi: 'auto', sink_logit: 0 }, outputs: [{ name: 'MASKED' }, { name: 'WEIGHTS' }] });
    assert.equal(r.status, 200, r.body);
    // two heads: slopes 2^-4 and 2^-8; row 1 sees key 0 one position back
    assert.deepEqual(outputOf(r, 'MASKED'), [0, -(2 ** -4), -(2 ** -4), 0, 0, -(2 ** -8), -(2 ** -8), 0]);
    const w = outputOf(r, 'WEIGHTS');
    near(w[0], 1 / (2 + Math.exp(-(2 ** -4))), 1e-15); // e^0 / (e^0 + e^-m + e^0 of the sink)
  });
  test('the variants\' steps as outputs: SOFTCAPPED, Q_ROPE, K_ROPE, DROPOUT_KEEP', async () => {
    const r = await infer('attention', { inputs: seedInputs, parameters: { softcap: 0.5, rope_layout: 'interleaved' },
      outputs: [{ name: 'SOFTCAPPED' }, { name: 'Q_ROPE' }, { name: 'K_ROPE' }] });
    assert.equal(r.status, 200, r.body);
    const v1 = await attention({ ...SEED, softcap: 0.5, rope: { layout: 'interleaved' } });
    assert.deepEqual(outputOf(r, 'SOFTCAPPED'), v1.softcapped.flat());
    assert.deepEqual(outputOf(r, 'Q_ROPE'), v1.q_rope.flat());
    assert.deepEqual(r.json().outputs.map((o) => o.shape), [[2, 2], [2, 4], [2, 4]]);
    const one = await infer('attention', { inputs: [tensor('Q', [1, 2, 3, 4]), tensor('K', [[1, 2, 3, 4], [1, 2, 3, 4]]), tensor('V', [[1], [2]])],
      parameters: { rope_base: 10000 }, outputs: [{ name: 'Q_ROPE' }, { name: 'K_ROPE' }] });
    assert.equal(one.status, 200, one.body);
    assert.deepEqual(one.json().outputs.map((o) => o.shape), [[4], [2, 4]]); // a vector Q: [d_k]
    nearAll(outputOf(one, 'Q_ROPE'), [-1.9841106485555495, 1.9599006674966641, 2.4623779024123156, 4.019799668334995], 1e-15);
    const d = await infer('attention', { inputs: seedInputs, parameters: { dropout_p: 0.5, dropout_seed: 42 },
      outputs: [{ name: 'DROPOUT_KEEP' }] });
    assert.deepEqual(outputOf(d, 'DROPOUT_KEEP'), [0, 1, 2, 3].map((k) => (unit(42, 7, k) >= 0.5 ? 1 : 0)));
    const off = await infer('attention', { inputs: seedInputs, outputs: [{ name: 'WEIGHTS' }, { name: 'SOFTCAPPED' }] });
    assert.equal(off.status, 400, off.body);
    assert.equal(off.json().errors[0].pointer, '/outputs/1/name');
  });
  test('bad variant parameters are 400 at /parameters/<name>', async () => {
    for (const [parameters, type, pointer] of [
      [{ rope_fraction: 0.25 }, 'invalid-value', '/parameters/rope_fraction'],
      [{ rope_layout: 'diagonal' }, 'invalid-value', '/parameters/rope_layout'],
      [{ dropout_seed: 3 }, 'missing-field', '/parameters/dropout_p'],
      [{ dropout_p: 1 }, 'invalid-value', '/parameters/dropout_p'],
      [{ window_left: -2 }, 'invalid-value', '/parameters/window_left'],
      [{ alibi: 'sometimes' }, 'invalid-value', '/parameters/alibi'],
      [{ softcp: 1 }, 'unknown-field', '/parameters/softcp'],
    ]) {
      const r = await infer('attention', { inputs: seedInputs, parameters });
      assert.equal(r.status, 400, r.body);
      const j = r.json();
      assert.equal(j.type, `/problems/${type}`, r.body);
      assert.equal(j.errors[0].pointer, pointer, r.body);
    }
  });
});

describe('/v1/shapes?variants=', () => {
  test('each variant adds its rows where its step stands, with its shapes', async () => {
    const r = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&n_kv=12&variants=rope,softcap,alibi,window,sink,dropout' });
    assert.equal(r.status, 200, r.body);
    const b = r.json();
    assert.deepEqual(b.variants, ['rope', 'softcap', 'alibi', 'window', 'sink', 'dropout']);
    const ops = b.rows.map((row) => row.op);
    assert.deepEqual(ops.slice(3, 5), ['rope(Q)', 'rope(K)']);
    assert.equal(ops[5], 'Q @ K^T');
    assert.deepEqual(ops.slice(6, 9), ['scores * scale', 'softcap * tanh(scaled / softcap)',
      '+ bias - slope * |i + n_kv - n - j|, -inf outside the window']);
    // after masked: the rules' visible and its block map, then softmax
    assert.deepEqual(ops.slice(9, 11), ['rules(i, j)', 'tiles(visible, B_q, B_k)']);
    assert.deepEqual(ops.slice(11, 16), ['softmax(axis=-1)', 'softmax([masked, sink_logit])',
      'sum(exp(masked - row_max), axis=-1)', 'logsumexp(axis=-1)', 'weights * keep / (1 - p)']);
    assert.equal(b.rows.length, 19);
    assert.deepEqual([b.rows[13].result, b.rows[14].result], [[10], [10]]); // row_sum, lse
    // rope keeps (n, d_k) and (n_kv, d_k); the grid steps keep (n, n_kv)
    assert.deepEqual([b.rows[3].result, b.rows[4].result, b.rows[7].result, b.rows[15].result],
      [[10, 64], [12, 64], [10, 12], [10, 12]]);
  });
  test('without variants the table is the lecture\'s nine rows, visible, its block map and the row statistics', async () => {
    const r = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8' });
    assert.equal(r.json().rows.length, 13);
    assert.deepEqual(r.json().rows[9], { op: 'logsumexp(axis=-1)', left: [10, 10], right: null,
      result: [10], meaning: 'lse: the log of each row\'s softmax denominator, what a fast kernel returns beside its output' });
    assert.equal(r.json().variants, undefined);
  });
  test('an unknown variant is 422 naming the parameter, with the nearest name', async () => {
    const r = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&variants=rope,windw' });
    const p = assertProblem(assert, r, 422);
    assert.equal(p.type, '/problems/invalid-value');
    assert.equal(p.parameter, 'variants');
    assert.match(p.errors?.[0]?.hint ?? p.hint ?? JSON.stringify(p), /window/);
  });
});

test('a dropout seed is taken exactly up to 2^63 - 1: 2^53 and 2^53 + 1 draw different cells', async () => {
  const n = 16;
  const eye = Array.from({ length: n }, (_, i) => Array.from({ length: 2 }, (_, c) => (i + c) % 3));
  const keep = async (seed) => {
    const body = `{"q":${JSON.stringify(eye)},"k":${JSON.stringify(eye)},"v":${JSON.stringify(eye)},` +
      `"dropout":{"p":0.5,"seed":${seed}},"include":["dropout_keep"]}`;
    const r = await request(s.port, { method: 'POST', path: '/v1/attention', body,
      headers: { 'Content-Type': 'application/json' } });
    assert.equal(r.status, 200, r.body);
    return JSON.stringify(r.json().dropout_keep);
  };
  // Through a double the two seeds were one number, and drew the same cells.
  assert.notEqual(await keep('9007199254740992'), await keep('9007199254740993'));
  assert.equal((await keep('9223372036854775807')).length > 0, true);
  const over = await request(s.port, { method: 'POST', path: '/v1/attention',
    body: '{"q":[[1]],"k":[[1]],"v":[[1]],"dropout":{"p":0.5,"seed":9223372036854775808}}',
    headers: { 'Content-Type': 'application/json' } });
  assert.equal(assertProblem(assert, over, 422).errors[0].pointer, '/dropout/seed');
});
