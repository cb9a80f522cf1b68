// tests/http/decode.test.mjs — `decode` on /v1/multihead (DESIGN.md, "The KV cache, one token
// at a time"): the tokens after the prefill generated one at a time against a KV cache.
// On random problems (several n, p, heads, kv_heads; with and without RoPE, ALiBi, a
// window, softcap and a sink logit), each token's weights and output equal the rows of the
// full causal pass (the same body POSTed without decode) to 1e-12; matches_full_pass is
// the comparison recomputed here from the two answers; the shapes are the contract's;
// the caches are the full pass's k (or, with RoPE, each kv head's k_rope) and v. Each bad
// input is a 422 with its pointer and message; the text page shows a line a token.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, rng, startServer } from './lib.mjs';
import { matrix } from './reference.mjs';

let srv;
before(async () => {
  srv = await startServer(['--log', 'off']);
});
after(async () => {
  await srv.stop();
});

const near = (got, want, what) =>
  assert.ok(Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)), `${what}: ${got} vs ${want}`);

/** A random causal self-attention problem with the given sizes and variants. */
function problem(seed, { n, dModel, heads, kvHeads, extra = {} }) {
  const r = rng(seed), dK = dModel / heads, kvCols = dK * kvHeads;
  return { heads, kv_heads: kvHeads, mask: 'causal', x: matrix(r, n, dModel),
    w_q: matrix(r, dModel, dModel, 0.6), w_k: matrix(r, dModel, kvCols, 0.6),
    w_v: matrix(r, dModel, kvCols, 0.6), w_o: matrix(r, dModel, dModel, 0.6),
    b_k: matrix(r, 1, kvCols, 0.3)[0], ...extra };
}

const VARIANTS = [
  {},
  { rope: {} },
  { alibi: 'auto' },
  { window: { left: 2 } },
  { rope: { layout: 'interleaved' }, alibi: 'auto', window: { left: 1 }, sink_tokens: 1 },
  { softcap: 1.5, sink_logit: 0.3 },
];

const SIZES = [
  { n: 2, p: 1, dModel: 4, heads: 1, kvHeads: 1 },
  { n: 6, p: 3, dModel: 8, heads: 2, kvHeads: 1 },
  { n: 9, p: 1, dModel: 8, heads: 4, kvHeads: 2 },
  { n: 11, p: 10, dModel: 12, heads: 3, kvHeads: 3 },
  { n: 13, p: 5, dModel: 8, heads: 4, kvHeads: 1 },
];

test('each token equals the full causal pass to 1e-12, with shapes and caches', async () => {
  let seed = 1;
  for (const size of SIZES) {
    for (const extra of VARIANTS) {
      const body = problem(seed++, { ...size, extra: { ...extra, include: ['weights', 'output', 'q', 'k', 'v', 'k_rope'].filter((p) => p !== 'k_rope' || extra.rope) } });
      const what = JSON.stringify({ ...size, ...extra });
      const full = (await postJson(srv.port, '/v1/multihead', body)).json();
      const res = await postJson(srv.port, '/v1/multihead', { ...body, decode: { prefill: size.p } });
      assert.equal(res.status, 200, res.body);
      const dec = res.json().decode;
      const { n, p, heads: h, kvHeads: kv, dModel } = size, dK = dModel / h;
      assert.equal(dec.prefill, p);
      assert.equal(dec.tokens.length, n - p, what);
      let dw = 0, tw = 0, dout = 0, tout = 0;
      dec.tokens.forEach((tok, s) => {
        const t = p + s;
        assert.equal(tok.t, t);
        assert.deepEqual(tok.cache_k, Array(kv).fill([t + 1, dK]), what);
        assert.deepEqual(tok.cache_v, Array(kv).fill([t + 1, dK]), what);
        assert.equal(tok.q.length, h);
        assert.equal(tok.weights.length, h);
        assert.equal(tok.output.length, dModel);
        for (let i = 0; i < h; i++) {
          assert.equal(tok.q[i].length, dK);
          assert.equal(tok.weights[i].length, t + 1);
          tok.q[i].forEach((x, c) => near(x, full.q[t][i * dK + c], `${what} q t${t} h${i}`));
          full.weights[i][t].forEach((want, j) => {
            if (j > t) return assert.equal(want, 0); // causal hides what is not generated yet
            near(tok.weights[i][j], want, `${what} weights t${t} h${i} j${j}`);
            dw = Math.max(dw, Math.abs(tok.weights[i][j] - want));
            tw = Math.max(tw, Math.abs(want));
          });
        }
        tok.output.forEach((x, c) => {
          const want = full.output[t][c];
          near(x, want, `${what} output t${t} c${c}`);
          dout = Math.max(dout, Math.abs(x - want));
          tout = Math.max(tout, Math.abs(want));
        });
      });
      // The comparison as the contract says it, from the two answers (the decode answer's
      // own full pass is the one it is measured against: it must be this one's too).
      const mine = Math.max(tout > 0 ? dout / tout : dout, tw > 0 ? dw / tw : dw);
      assert.ok(dec.matches_full_pass <= 1e-12, what);
      assert.ok(Math.abs(dec.matches_full_pass - mine) <= 1e-15, `${what}: ${dec.matches_full_pass} vs ${mine}`);
      // The caches after the last token: v as projected, k as the scores read it.
      assert.equal(dec.cache_k.length, kv);
      for (let g = 0; g < kv; g++) {
        const headOf = Math.ceil((g * h) / kv); // the first query head of kv head g
        for (let j = 0; j < n; j++)
          for (let c = 0; c < dK; c++) {
            const k = extra.rope ? full.k_rope[g][j][c] : full.k[j][g * dK + c];
            near(dec.cache_k[g][j][c], k, `${what} cache_k g${g} j${j} (head ${headOf})`);
            near(dec.cache_v[g][j][c], full.v[j][g * dK + c], `${what} cache_v`);
          }
      }
    }
  }
});

test('matches_full_pass is a real comparison: some problem differs in its last bits', async () => {
  let seen = 0;
  for (let seed = 100; seed < 110; seed++) {
    const body = problem(seed, { n: 16, dModel: 8, heads: 2, kvHeads: 1, extra: { rope: {}, decode: { prefill: 4 }, include: ['output'] } });
    seen = Math.max(seen, (await postJson(srv.port, '/v1/multihead', body)).json().decode.matches_full_pass);
  }
  assert.ok(seen > 0 && seen <= 1e-12, `largest ${seen}`);
});

test('bad input: status, pointer and message', async () => {
  const base = { heads: 2, random: { seed: 1, n: 5, d_model: 4 }, mask: 'causal' };
  const cases = [
    [{ decode: 3 }, '/decode', /decode is a number; it must be an object/],
    [{ decode: {} }, '/decode/prefill', /decode\.prefill is required/],
    [{ decode: { prefill: 2, step: 1 } }, '/decode/step', /./],
    [{ decode: { prefill: 0 } }, '/decode/prefill', /integer from 1 to 4/],
    [{ decode: { prefill: 5 } }, '/decode/prefill', /integer from 1 to 4.*0 < prefill < n = 5/],
    [{ random: { seed: 1, n: 1, d_model: 4 }, decode: { prefill: 1 } }, '/decode/prefill', /at least 2 tokens, and x has 1/],
    [{ mask: undefined, decode: { prefill: 2 } }, '/mask', /decode needs mask "causal"/],
    [{ mask: 'causal_top_left', decode: { prefill: 2 } }, '/mask', /decode needs mask "causal"/],
    [{ random: { seed: 1, n: 5, n_kv: 5, d_model: 4 }, decode: { prefill: 2 } }, '/random/n_kv', /needs self-attention/],
    [{ rows: [1], decode: { prefill: 2 } }, '/rows', /rows cannot be combined with decode.*leave rows out/],
    [{ dropout: { p: 0.1, seed: 1 }, decode: { prefill: 2 } }, '/dropout', /dropout cannot be combined with decode.*leave dropout out/],
    [{ chunk: 2, decode: { prefill: 2 } }, '/chunk', /chunk cannot be combined with decode/],
    [{ precision: { format: 'float16' }, decode: { prefill: 2 } }, '/precision', /precision cannot be combined with decode: decode runs in float64/],
  ];
  for (const [extra, pointer, message] of cases) {
    const res = await postJson(srv.port, '/v1/multihead', { ...base, ...extra });
    const e = assertProblem(assert, res, 422);
    assert.equal(e.errors[0].pointer, pointer, JSON.stringify(extra));
    assert.match(`${e.detail} ${e.errors[0].hint ?? ''}`, message, JSON.stringify(extra));
  }
  const x = matrix(rng(3), 4, 4);
  const cross = await postJson(srv.port, '/v1/multihead', { heads: 2, x_q: x, x_kv: x, mask: 'causal', random: { seed: 1 }, decode: { prefill: 2 } });
  assert.equal(assertProblem(assert, cross, 422).errors[0].pointer, '/x_q');
  const svg = await postJson(srv.port, '/v1/multihead?format=svg', { ...base, decode: { prefill: 2 } });
  const e = assertProblem(assert, svg, 422);
  assert.equal(e.errors[0].pointer, '/decode');
  assert.match(e.errors[0].hint, /\?format=text/);
  const ko = await postJson(srv.port, '/v1/multihead?lang=ko', { ...base, rows: [1], decode: { prefill: 2 } });
  assert.match(assertProblem(assert, ko, 422).detail, /^rows \S+ decode 와 함께 쓸 수 없습니다: decode 는 prefill 뒤의 모든 토큰에 답합니다$/);
});

test('text: a line a token, the cache growing, in English and Korean', async () => {
  const body = problem(7, { n: 12, dModel: 8, heads: 2, kvHeads: 1, extra: { decode: { prefill: 2 }, include: [], round: 3 } });
  const json = (await postJson(srv.port, '/v1/multihead', body)).json().decode;
  for (const [lang, head, line, match] of [
    ['en', /^decode: the first 2 tokens in one pass/m, (t, len) => `  t ${t}  cache k, v (${len}, 4) x 1 kv heads  weights  h0 `, /matches the full pass: /],
    ['ko', /^decode: 처음 2 개 토큰은 한 번에/m, (t, len) => `  t ${t}  캐시 k, v (${len}, 4) x kv head 1 개  가중치  h0 `, /전체 계산과의 차이: /],
  ]) {
    const res = await postJson(srv.port, `/v1/multihead?format=text&lang=${lang}`, body);
    assert.equal(res.status, 200);
    assert.match(res.body, head);
    assert.match(res.body, match);
    const lines = res.body.split('\n').filter((l) => /^ {2}t \d+ /.test(l));
    assert.equal(lines.length, 10);
    lines.forEach((l, s) => {
      const t = 2 + s;
      assert.ok(l.startsWith(line(t, t + 1)), l);
      // each head's weights: all of them up to 8, else the first and last four around …
      const h1 = l.split('  h1 ')[1].split(' ');
      const want = json.tokens[s].weights[1].map((w) => w.toFixed(3));
      assert.deepEqual(h1, t + 1 <= 8 ? want : [...want.slice(0, 4), '…', ...want.slice(-4)], l);
    });
  }
});
