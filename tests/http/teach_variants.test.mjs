// tests/http/teach_variants.test.mjs — `explain` and `pitfall` with the attention variants (DESIGN.md,
// "Teaching what the notes teach" and "Attention variants, each its own step"): the row
// worked by hand carries each variant step that runs by its step name (q_rope's row as
// "query", "softcapped", masked with ALiBi and the window, the sink's share in exp_sum
// and "sink_weight", "dropout_keep" and "dropped" with the output mixed by dropped).
//
// Every number is checked twice: against a naive reference computed here from the
// formulas of DESIGN.md (RoPE's rotation, c·tanh(s/c), −m·|i + off − j|, the window
// with sink tokens, e^z/(Σe^m + e^z), the documented generator for dropout), and cell
// for cell against the answer's own step matrices, for each variant alone and all of
// them together, on /v1/attention and /v1/multihead. pitfall: no_transpose with rope is
// Q_rope @ K_rope (the mistake is the transpose, not the rotation) run through the same
// variants; column_softmax and no_max_subtraction work on masked, which holds softcap,
// ALiBi and the window.

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

const near = (got, want, tol = 1e-12, what = '') =>
  assert.ok(Math.abs(got - want) <= tol * (1 + Math.abs(want)), `${what}: ${got} vs ${want}`);

/* The documented generator (core/random.h), value k of stream 7, as u in [0, 1). */
const M = (1n << 64n) - 1n;
const mix = (z) => {
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M;
  return z ^ (z >> 31n);
};
const unit = (seed, k) =>
  Number(mix((BigInt(seed) + (7n << 40n) + (BigInt(k) + 1n) * 0x9E3779B97F4A7C15n) & M) >> 11n) * 2 ** -53;

/* RoPE, layout "half", fraction 1: pair c with c + d/2, θ_c = pos·base^(−2c/d). */
const rotate = (x, pos, base = 10000) => {
  const d = x.length, h = d / 2, out = [...x];
  for (let c = 0; c < h; c++) {
    const th = pos * base ** (-2 * c / d);
    out[c] = x[c] * Math.cos(th) - x[c + h] * Math.sin(th);
    out[c + h] = x[c + h] * Math.cos(th) + x[c] * Math.sin(th);
  }
  return out;
};

/* One head's forward pass in plain loops, from DESIGN.md's formulas. */
function naive({ q, k, v, scale, rope, softcap, slope, window, sinkTokens = 0, z, p, seed, first = 0 }) {
  const nq = q.length, nk = k.length, off = nk - nq;
  const qr = rope ? q.map((row, i) => rotate(row, off + i)) : q;
  const kr = rope ? k.map((row, j) => rotate(row, j)) : k;
  const dot = (a, b) => a.reduce((acc, x, c) => acc + x * b[c], 0);
  const scores = qr.map((qi) => kr.map((kj) => dot(qi, kj)));
  const scaled = scores.map((r) => r.map((x) => x * scale));
  const capped = softcap ? scaled.map((r) => r.map((x) => softcap * Math.tanh(x / softcap))) : scaled;
  const visible = (i, j) => !window || j < sinkTokens ||
    ((window.left == null || i + off - window.left <= j) && (window.right == null || j <= i + off + window.right));
  const masked = capped.map((r, i) => r.map((x, j) =>
    (visible(i, j) ? x - (slope ? slope * Math.abs(i + off - j) : 0) : -Infinity)));
  const sink = [], rowMax = [], expSum = [];
  const weights = masked.map((r, i) => {
    const mx = Math.max(z ?? -Infinity, ...r);
    const e = r.map((m) => (m === -Infinity ? 0 : Math.exp(m - mx)));
    const zs = z == null ? 0 : Math.exp(z - mx);
    const sum = e.reduce((a, b) => a + b, 0) + zs;
    sink.push(zs / sum);
    rowMax.push(mx);
    expSum.push(sum);
    return e.map((x) => x / sum);
  });
  const keep = weights.map((r, i) => r.map((_, j) => (p == null ? 1 : unit(seed, first + i * nk + j) >= p ? 1 : 0)));
  const dropped = weights.map((r, i) => r.map((w, j) => (p == null ? w : (w * keep[i][j]) / (1 - p))));
  const output = dropped.map((r) => v[0].map((_, c) => r.reduce((a, w, j) => a + w * v[j][c], 0)));
  return { qr, kr, scores, scaled, capped, masked, weights, sink, rowMax, expSum, keep, dropped, output };
}

/* explain's row against the reference and against the answer's own steps (steps[name][i]). */
function checkExplain(x, ref, row, steps, what) {
  const t = 1e-12;
  x.query.forEach((c, i) => near(c, ref.qr[row][i], t, `${what} query`));
  x.keys.forEach((key, j) => {
    const w = `${what} key ${j}`;
    key.terms.forEach(([qc, kc], c) => {
      assert.equal(qc, x.query[c]);
      near(kc, ref.kr[j][c], t, `${w} term ${c}`);
    });
    near(key.dot, ref.scores[row][j], t, `${w} dot`);
    near(key.scaled, ref.scaled[row][j], t, `${w} scaled`);
    const m = ref.masked[row][j];
    assert.equal(key.masked === null, m === -Infinity, `${w} masked ${key.masked}`);
    if (m !== -Infinity) near(key.masked, m, t, `${w} masked`);
    near(key.weight, ref.weights[row][j], t, `${w} weight`);
    // cell for cell with the answer's matrices: the same bits
    assert.equal(key.dot, steps.scores[row][j], `${w} dot vs scores`);
    assert.equal(key.scaled, steps.scaled[row][j], `${w} scaled vs scaled`);
    assert.equal(key.masked, steps.masked[row][j], `${w} masked vs masked`);
    assert.equal(key.weight, steps.weights[row][j], `${w} weight vs weights`);
    if (steps.k_rope) assert.deepEqual(key.terms.map((tt) => tt[1]), steps.k_rope[j], `${w} k_rope`);
    if (steps.softcapped) {
      near(key.softcapped, ref.capped[row][j], t, `${w} softcapped`);
      assert.equal(key.softcapped, steps.softcapped[row][j]);
      assert.deepEqual(Object.keys(key).slice(3, 6), ['scaled', 'softcapped', 'masked'], `${w} order`);
    } else {
      assert.equal(key.softcapped, undefined);
    }
    if (steps.dropped) {
      assert.equal(key.dropout_keep, ref.keep[row][j], `${w} keep`);
      near(key.dropped, ref.dropped[row][j], t, `${w} dropped`);
      assert.equal(key.dropout_keep, steps.dropout_keep[row][j]);
      assert.equal(key.dropped, steps.dropped[row][j]);
      assert.equal(x.output.terms[j].dropped, key.dropped);
    } else {
      assert.equal(key.dropped, undefined);
      assert.equal(key.dropout_keep, undefined);
    }
  });
  if (steps.q_rope) {
    assert.deepEqual(x.query, steps.q_rope[row], `${what} query vs q_rope`);
    assert.deepEqual(x.query_before_rope, steps.q[row], `${what} query_before_rope`);
  } else {
    assert.equal(x.query_before_rope, undefined);
  }
  near(x.row_max, ref.rowMax[row], t, `${what} row_max`);
  near(x.exp_sum, ref.expSum[row], t, `${what} exp_sum`);
  if (steps.sink_weight) {
    near(x.sink_weight, ref.sink[row], t, `${what} sink_weight`);
    assert.equal(x.sink_weight, steps.sink_weight[row]);
    // the sink's share: what the keys leave, 1 − Σ weights
    near(x.sink_weight, 1 - x.keys.reduce((a, key) => a + key.weight, 0), 1e-12, `${what} 1 − Σw`);
  } else {
    assert.equal(x.sink_weight, undefined);
  }
  x.output.value.forEach((o, c) => near(o, ref.output[row][c], 1e-12, `${what} output ${c}`));
  assert.deepEqual(x.output.value, steps.output[row], `${what} output vs the answer's`);
}

const Q = [[1, 0, 1, 0], [0, 1, 0, 1], [0.5, -1, 2, 0.25]];
const K = [[1, 0, 1, 0], [1, 1, 1, 1], [-0.5, 2, 0, 1], [0.3, 0.3, -1, 2]];
const V = [[10, 0], [0, 10], [1, 2], [-3, 4]];
const SCALE = 0.5;
const VARIANTS = {
  rope: [{ rope: {} }, { rope: true }],
  softcap: [{ softcap: 0.5 }, { softcap: 0.5 }],
  alibi: [{ alibi: 0.75 }, { slope: 0.75 }],
  window: [{ window: { left: 1, right: 0 }, sink_tokens: 1 }, { window: { left: 1, right: 0 }, sinkTokens: 1 }],
  sink_logit: [{ sink_logit: 0.3 }, { z: 0.3 }],
  dropout: [{ dropout: { p: 0.4, seed: 9 } }, { p: 0.4, seed: 9 }],
};
const ALL = Object.keys(VARIANTS);

const attention = async (fields, row) => {
  const r = await postJson(s.port, '/v1/attention', {
    q: Q, k: K, v: V, ...fields, explain: { row },
    include: ['scores', 'scaled', 'masked', 'weights', 'output', 'summary', 'q_rope', 'k_rope',
      'softcapped', 'dropout_keep', 'dropped'].filter((n) => n !== 'q_rope' && n !== 'k_rope' || fields.rope)
      .filter((n) => n !== 'softcapped' || fields.softcap)
      .filter((n) => !['dropout_keep', 'dropped'].includes(n) || fields.dropout),
  });
  assert.equal(r.status, 200, r.body);
  return r.json();
};

describe('/v1/attention: explain carries each variant step', () => {
  test('the brief\'s softcap example: "softcapped" 0.5·tanh(1/0.5) between scaled and masked', async () => {
    const r = await postJson(s.port, '/v1/attention', {
      q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
      softcap: 0.5, explain: { row: 1 },
    });
    assert.equal(r.status, 200);
    const key = r.json().explain.keys[1];
    assert.equal(key.scaled, 1);
    near(key.softcapped, 0.5 * Math.tanh(2), 1e-15);
    near(key.softcapped, 0.48201379003790845, 1e-15);
    assert.equal(key.masked, key.softcapped);
  });

  for (const name of [...ALL, 'all']) {
    test(`${name}: every row against the formulas and the answer's own steps`, async () => {
      const names = name === 'all' ? ALL : [name];
      const fields = Object.assign({}, ...names.map((n) => VARIANTS[n][0]));
      const opts = Object.assign({}, ...names.map((n) => VARIANTS[n][1]));
      const ref = naive({ q: Q, k: K, v: V, scale: SCALE, ...opts });
      for (let row = 0; row < Q.length; row++) {
        const b = await attention({ ...fields, scale: SCALE }, row);
        const steps = { ...b, q: Q, sink_weight: b.summary.sink_weight };
        checkExplain(b.explain, ref, row, steps, `${name} row ${row}`);
      }
    });
  }

  test('the window empties no row here, but blocks: masked null, exp 0, weight 0', async () => {
    const b = await attention({ window: { left: 0, right: 0 }, scale: SCALE }, 0);
    // row 0 sits at position 1 (off = 1): only key 1 is visible
    assert.deepEqual(b.explain.keys.map((key) => key.masked === null), [true, false, true, true]);
    assert.deepEqual(b.explain.keys.map((key) => key.exp), [0, 1, 0, 0]);
    assert.deepEqual(b.explain.keys.map((key) => key.weight), [0, 1, 0, 0]);
  });

  test('a row the window empties gives all to the sink: sink_weight 1, exp_sum e^0 = 1', async () => {
    // three queries, one key: off = −2, so row 0 sits at −2 and its window [−2, −2] holds no key
    const b = await attention({ window: { left: 0, right: 0 }, sink_logit: 2, q: Q, k: K.slice(0, 1),
      v: V.slice(0, 1), scale: SCALE }, 0);
    assert.deepEqual(b.explain.keys.map((key) => [key.masked, key.exp, key.weight]), [[null, 0, 0]]);
    assert.equal(b.explain.sink_weight, 1);
    assert.equal(b.explain.row_max, 2);
    assert.equal(b.explain.exp_sum, 1);
    near(b.explain.exp_unshifted_sum, Math.exp(2), 1e-15);
  });

  test('text: a line per variant step, in the notes\' style', async () => {
    const body = { q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]],
      rope: {}, softcap: 0.5, alibi: 0.5, sink_logit: 0.3, dropout: { p: 0.5, seed: 3 }, explain: { row: 1 } };
    const r = await postJson(s.port, '/v1/attention?format=text', body);
    assert.equal(r.status, 200);
    const t = r.body;
    // q1 = [0, 1, 0, 1] at position 1: pair (1, 3) turns by 1 radian, pair (0, 2) by 0.01
    const q1 = rotate([0, 1, 0, 1], 1);
    assert.match(t, /\n {2}rope {7}q1 turned by its position \(the first 4 columns\): \[0, 1, 0, 1\] → \[0, 0\.99, 0, 1\.0099\]\n/);
    near(q1[1], 0.99, 1e-4);
    assert.match(t, /\n {2}softcap {4}0\.5·tanh\(0 ÷ 0\.5\) = 0\n {13}0\.5·tanh\(1 ÷ 0\.5\) ≈ 0\.482\n/); // 0.5·tanh(2) = 0.48201
    assert.match(t, /\n {2}3 mask {5}k0: 0 \+ bias \+ alibi -0\.5 = -0\.5\n/); // −0.5·|1 + 0 − 0|
    assert.match(t, /\n {2}sink {7}e\^0\.3 ≈ 1\.3499\n/); // e^0.3 = 1.34986
    // the sink's share e^z/(Σe^m + e^z), from this test's own loops
    const ref = naive({ q: body.q, k: body.k, v: body.v, scale: 0.5, rope: true, softcap: 0.5, slope: 0.5, z: 0.3, p: 0.5, seed: 3 });
    const share = ref.sink[1].toFixed(4);
    assert.ok(t.includes(`the sink takes ${share} of the row and carries no value`), t);
    assert.match(t, /\n {2}dropout {4}k0: 0\.1696 ÷ 0\.5 ≈ 0\.3392\n/);
    assert.match(t, /\n {2}5 mix V {4}0\.3392×\[10, 0\] \+ 0\.9057×\[0, 10\] = \[3\.3925, 9\.0574\]\n/);
    near(ref.weights[1][0], 0.1696, 1e-4);
    near(ref.dropped[1][1], 0.9057, 1e-4);
  });
});

describe('/v1/multihead: explain per head with the head\'s variants', () => {
  const HEADS = 2, KV = 1;
  const base = { random: { seed: 4, n: 4, d_model: 4 }, heads: HEADS, kv_heads: KV,
    include: ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights', 'head_outputs', 'summary'] };
  const MH = {
    rope: [{ rope: {} }, () => ({ rope: true }), ['q_rope', 'k_rope']],
    softcap: [{ softcap: 0.7 }, () => ({ softcap: 0.7 }), ['softcapped']],
    alibi: [{ alibi: [0.5, 0.25] }, (h) => ({ slope: [0.5, 0.25][h] }), []],
    window: [{ window: { left: 1, right: null }, sink_tokens: 1 }, () => ({ window: { left: 1, right: null }, sinkTokens: 1 }), []],
    sink_logit: [{ sink_logit: [0.2, -1] }, (h) => ({ z: [0.2, -1][h] }), []],
    dropout: [{ dropout: { p: 0.3, seed: 12 } }, (h) => ({ p: 0.3, seed: 12, first: h * 16 }), ['dropout_keep', 'dropped']],
  };
  for (const name of [...Object.keys(MH), 'all']) {
    test(`${name}: each head's row against the formulas and the answer's steps`, async () => {
      const names = name === 'all' ? Object.keys(MH) : [name];
      const fields = Object.assign({}, ...names.map((n) => MH[n][0]));
      const include = [...base.include, ...names.flatMap((n) => MH[n][2])];
      for (const [head, row] of [[0, 3], [1, 2], [1, 0]]) {
        const r = await postJson(s.port, '/v1/multihead', { ...base, ...fields, include, explain: { row, head } });
        assert.equal(r.status, 200, r.body);
        const b = r.json();
        const dk = b.d_k, g = Math.floor((head * KV) / HEADS);
        const slice = (m, h) => m.map((rr) => rr.slice(h * dk, (h + 1) * dk));
        const opts = Object.assign({}, ...names.map((n) => MH[n][1](head)));
        const ref = naive({ q: slice(b.q, head), k: slice(b.k, g), v: slice(b.v, g), scale: b.scale, ...opts });
        const steps = {
          q: slice(b.q, head), scores: b.scores[head], scaled: b.scaled[head], masked: b.masked[head],
          weights: b.weights[head], output: b.head_outputs[head],
          q_rope: b.q_rope?.[head], k_rope: b.k_rope?.[g], softcapped: b.softcapped?.[head],
          dropout_keep: b.dropout_keep?.[head], dropped: b.dropped?.[head],
          sink_weight: b.summary.sink_weight?.[head],
        };
        checkExplain(b.explain, ref, row, steps, `${name} head ${head} row ${row}`);
      }
    });
  }
});

describe('pitfall with the variants', () => {
  const transpose = (m) => m[0].map((_, c) => m.map((r) => r[c]));
  // K is 4 × 4, so Q @ K runs (n_k = d_k) and gives silently wrong numbers
  for (const name of ['rope', 'all']) {
    test(`no_transpose with ${name}: Q_rope @ K_rope, then the same variants; the missing transpose alone`, async () => {
      const names = name === 'all' ? ALL : [name];
      const fields = Object.assign({}, ...names.map((n) => VARIANTS[n][0]));
      const opts = Object.assign({}, ...names.map((n) => VARIANTS[n][1]));
      const r = await postJson(s.port, '/v1/attention', { q: Q, k: K, v: V, scale: SCALE, ...fields, pitfall: 'no_transpose' });
      assert.equal(r.status, 200, r.body);
      const b = r.json();
      const right = naive({ q: Q, k: K, v: V, scale: SCALE, ...opts });
      // the learner's product: rows of Q_rope times the columns of K_rope, i.e. keys = K_ropeᵀ
      const wrong = naive({ q: right.qr, k: transpose(right.kr), v: V, scale: SCALE, ...opts, rope: false });
      assert.equal(b.pitfall.error, null);
      for (const [step, want] of [['scores', wrong.scores], ['weights', wrong.weights], ['output', wrong.output]])
        b.pitfall.steps[step].forEach((row, i) => row.forEach((x, j) => near(x, want[i][j], 1e-12, `${name} ${step}[${i}][${j}]`)));
      let diff = 0;
      wrong.output.forEach((row, i) => row.forEach((x, c) => { diff = Math.max(diff, Math.abs(x - right.output[i][c])); }));
      near(b.pitfall.max_abs_difference, diff, 1e-12, 'max_abs_difference');
      assert.ok(diff > 0.1);
    });
  }

  test('column_softmax and no_max_subtraction work on masked, softcap, ALiBi and the window in it', async () => {
    const fields = { softcap: 0.5, alibi: 0.75, window: { left: 1, right: 0 }, sink_tokens: 1, scale: SCALE };
    const ref = naive({ q: Q, k: K, v: V, scale: SCALE, softcap: 0.5, slope: 0.75, window: { left: 1, right: 0 }, sinkTokens: 1 });
    const mixV = (w) => w.map((r) => V[0].map((_, c) => r.reduce((a, x, j) => a + x * V[j][c], 0)));
    // down each column: e^(m − column max) / Σ over the column
    const cols = transpose(ref.masked).map((col) => {
      const mx = Math.max(...col);
      const e = col.map((m) => Math.exp(m - mx));
      const sum = e.reduce((a, x) => a + x, 0);
      return e.map((x) => x / sum);
    });
    const colW = transpose(cols);
    // along each row without the max: e^m / Σ e^m
    const rowW = ref.masked.map((r) => {
      const e = r.map((m) => Math.exp(m));
      const sum = e.reduce((a, x) => a + x, 0);
      return e.map((x) => x / sum);
    });
    for (const [pitfall, w] of [['column_softmax', colW], ['no_max_subtraction', rowW]]) {
      const r = await postJson(s.port, '/v1/attention', { q: Q, k: K, v: V, ...fields, pitfall });
      assert.equal(r.status, 200, r.body);
      const p = r.json().pitfall;
      p.steps.weights.forEach((row, i) => row.forEach((x, j) => near(x, w[i][j], 1e-12, `${pitfall} weights[${i}][${j}]`)));
      const out = mixV(w);
      p.steps.output.forEach((row, i) => row.forEach((x, c) => near(x, out[i][c], 1e-12, `${pitfall} output[${i}][${c}]`)));
      assert.equal(p.non_finite, 0);
    }
  });
});

test('/v1/multihead text: the head\'s variant lines, its own sink logit', async () => {
  const r = await postJson(s.port, '/v1/multihead?format=text', { random: { seed: 4, n: 3, d_model: 4 }, heads: 2,
    rope: {}, softcap: 0.7, sink_logit: [0.2, -1], dropout: { p: 0.3, seed: 12 }, explain: { row: 2, head: 1 } });
  assert.equal(r.status, 200);
  const t = r.body.slice(r.body.indexOf('\nexplain  head 1'));
  assert.match(t, /\n {2}rope {7}q2 turned by its position \(the first 2 columns\): /);
  assert.match(t, /\n {2}softcap {4}0\.7·tanh\(/);
  assert.match(t, /\n {2}sink {7}e\^-1 ≈ 0\.3679\n/); // head 1's z = −1: e^−1 = 0.36788
  assert.match(t, /\n {2}dropout {4}k0: /);
});

describe('include naming a step whose variant is off', () => {
  const STEPS = [['q_rope', 'rope'], ['k_rope', 'rope'], ['softcapped', 'softcap'], ['dropout_keep', 'dropout'], ['dropped', 'dropout']];
  const ATT = { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[1], [2]] };
  const MHB = { random: { seed: 1, n: 2, d_model: 4 }, heads: 2 };
  for (const [path, body] of [['/v1/attention', ATT], ['/v1/multihead', MHB]]) {
    test(`${path}: 422 invalid-value at /include/<i>, the hint names the field`, async () => {
      for (const [step, field] of STEPS) {
        const r = await postJson(s.port, path, { ...body, include: ['weights', step] });
        assert.equal(r.status, 422, `${step}: ${r.body}`);
        const p = r.json();
        assert.equal(p.type, '/problems/invalid-value');
        assert.equal(p.errors[0].pointer, '/include/1');
        assert.ok(p.errors[0].hint.includes(`"${field}"`), p.errors[0].hint);
      }
      // with its variant on, the same include is answered
      const on = { rope: {}, softcap: 1, dropout: { p: 0.5, seed: 1 } };
      const r = await postJson(s.port, path, { ...body, ...on, include: ['weights', ...STEPS.map(([st]) => st)] });
      assert.equal(r.status, 200, r.body);
      for (const [st] of STEPS) assert.ok(Array.isArray(r.json()[st]), st);
    });
  }
  test('a batch item points into its item', async () => {
    const r = await postJson(s.port, '/v1/attention/batch', { items: [ATT, { ...ATT, include: ['softcapped'] }] });
    const items = r.json().results;
    assert.equal(items[0].status, 200);
    assert.equal(items[1].status, 422);
    assert.equal(items[1].body.errors[0].pointer, '/items/1/include/0');
  });
});
