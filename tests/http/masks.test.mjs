// tests/http/masks.test.mjs — the masks of training over HTTP: mask "causal_top_left",
// `documents`, `prefix` and `chunk`, alone and with the mask, padding, causal, the window,
// sink tokens, a bias and ALiBi; `visible` and `block_map`. Every answer is held to
// sees(), a loop written here from DESIGN.md's words ("Masks of today's training"), and
// attention computed from it; the block map to tiles counted cell by cell; the streamed
// path to the full one; each bad field to a 422 that names it.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, request, rng, startServer } from './lib.mjs';
import { assertNear, matrix } from './reference.mjs';

let s;
let small; // --max-cells 64: larger problems stream
before(async () => {
  s = await startServer(['--log', 'off']);
  small = await startServer(['--log', 'off', '--max-cells', '64']);
});
after(async () => {
  await s.stop();
  await small.stop();
});

/** Which document query i falls in: {q0, k0, lq, lk}, or the whole problem. */
function documentOf(req, nQ, nK, i) {
  const d = req.documents;
  if (!d) return { q0: 0, k0: 0, lq: nQ, lk: nK };
  const lq = d.lengths ?? d.lengths_q, lk = d.lengths ?? d.lengths_k;
  let q0 = 0, k0 = 0, n = 0;
  while (i >= q0 + lq[n]) { q0 += lq[n]; k0 += lk[n]; n++; }
  return { q0, k0, lq: lq[n], lk: lk[n] };
}

/** Whether query i sees key j: every rule of the request, as the contract states them. */
function sees(req, nQ, nK, i, j) {
  const m = req.mask;
  if (Array.isArray(m) && !(Array.isArray(m[0]) ? m[i][j] : m[j])) return false;
  const d = documentOf(req, nQ, nK, i);
  if (j < d.k0 || j >= d.k0 + d.lk) return false;
  const qi = i - d.q0, kj = j - d.k0, at = qi + d.lk - d.lq;
  const exempt = kj < (req.prefix ?? 0);
  if (m === 'causal' && !exempt && kj > at) return false;
  if (m === 'causal_top_left' && !exempt && kj > qi) return false;
  if (req.window && kj >= (req.sink_tokens ?? 0)) {
    const { left, right } = req.window;
    if (left != null && kj < at - left) return false;
    if (right != null && kj > at + right) return false;
  }
  if (req.chunk && Math.floor(at / req.chunk) !== Math.floor(kj / req.chunk)) return false;
  return true;
}

/** visible, weights, output and lse of a request, from sees(). */
function expected(req) {
  const { q, k, v } = req, nQ = q.length, nK = k.length, dK = q[0].length;
  const scale = 1 / Math.sqrt(dK);
  const visible = [], weights = [], output = [], lse = [];
  for (let i = 0; i < nQ; i++) {
    const d = documentOf(req, nQ, nK, i);
    const at = i - d.q0 + d.lk - d.lq;
    const row = [], seen = [];
    for (let j = 0; j < nK; j++) {
      const ok = sees(req, nQ, nK, i, j);
      row.push(ok ? 1 : 0);
      if (!ok) { seen.push(null); continue; }
      let x = 0;
      for (let c = 0; c < dK; c++) x += q[i][c] * k[j][c];
      x *= scale;
      if (req.bias) x += req.bias[i][j];
      if (req.alibi !== undefined) x -= req.alibi * Math.abs(at - (j - d.k0));
      seen.push(x);
    }
    visible.push(row);
    const xs = seen.filter((x) => x !== null);
    if (xs.length === 0) {
      weights.push(row.map(() => 0));
      output.push(v[0].map(() => 0));
      lse.push(null);
      continue;
    }
    const max = Math.max(...xs);
    const e = seen.map((x) => (x === null ? 0 : Math.exp(x - max)));
    const sum = e.reduce((a, x) => a + x, 0);
    const w = e.map((x) => x / sum);
    weights.push(w);
    output.push(v[0].map((_, c) => w.reduce((a, x, j) => a + x * v[j][c], 0)));
    lse.push(max + Math.log(sum));
  }
  return { visible, weights, output, lse };
}

/** The block map of a visible matrix in tiles of bq by bk, counted cell by cell. */
function tilesOf(visible, bq, bk) {
  const nQ = visible.length, nK = visible[0].length, tiles = [];
  let empty = 0;
  for (let r = 0; r < nQ; r += bq) {
    const line = [];
    for (let c = 0; c < nK; c += bk) {
      let seen = 0, cells = 0;
      for (let i = r; i < Math.min(r + bq, nQ); i++)
        for (let j = c; j < Math.min(c + bk, nK); j++) { cells++; seen += visible[i][j]; }
      const kind = seen === 0 ? 0 : seen === cells ? 2 : 1;
      empty += kind === 0;
      line.push(kind);
    }
    tiles.push(line);
  }
  return { tiles, sparsity: empty / (tiles.length * tiles[0].length) };
}

function split(r, n, parts) {
  const out = [];
  let left = n;
  for (let d = 0; d < parts; d++) {
    const room = left - (parts - d - 1);
    const len = d + 1 === parts ? left : 1 + Math.floor(r() * room);
    out.push(len);
    left -= len;
  }
  return out;
}

/** Random requests: each rule alone, then together with the others and the old rules. */
function problems() {
  const r = rng(36);
  const out = [];
  const rules = ['top_left', 'documents', 'varlen', 'prefix', 'chunk', 'all'];
  for (let round = 0; round < 36; round++) {
    const rule = rules[round % rules.length];
    const nQ = 1 + Math.floor(r() * 12), nK = rule === 'documents' ? nQ : 1 + Math.floor(r() * 14);
    const dK = 1 + Math.floor(r() * 4), dV = 1 + Math.floor(r() * 3);
    const req = { q: matrix(r, nQ, dK), k: matrix(r, nK, dK), v: matrix(r, nK, dV) };
    const causal = r() < 0.5 ? 'causal' : 'causal_top_left';
    if (rule === 'top_left') req.mask = 'causal_top_left';
    if (rule === 'documents' || (rule === 'all' && nQ === nK && r() < 0.5)) {
      req.documents = { lengths: split(r, nQ, 1 + Math.floor(r() * Math.min(nQ, 4))) };
      req.mask = causal;
    }
    if (rule === 'varlen' || (rule === 'all' && !req.documents)) {
      const parts = 1 + Math.floor(r() * Math.min(nQ, nK, 4));
      req.documents = { lengths_q: split(r, nQ, parts), lengths_k: split(r, nK, parts) };
      req.mask = causal;
    }
    if (rule === 'prefix' || rule === 'all') {
      req.prefix = Math.floor(r() * (nK + 1));
      req.mask = req.mask ?? causal;
    }
    if (rule === 'chunk' || rule === 'all') req.chunk = 1 + Math.floor(r() * 5);
    if (rule === 'all') {
      if (round % 4 === 3) req.mask = Array.from({ length: nK }, (_, j) => (j === 0 || r() < 0.7 ? 1 : 0));
      req.window = { left: Math.floor(r() * 4), right: r() < 0.5 ? null : Math.floor(r() * 2) };
      req.sink_tokens = Math.floor(r() * 2);
      req.bias = matrix(r, nQ, nK, 1);
      req.alibi = 0.25;
    }
    out.push({ name: `${rule} ${nQ}x${nK} #${round}`, req });
  }
  return out;
}

const INCLUDE = ['weights', 'output', 'lse', 'visible', 'block_map'];

test('every rule alone and together: visible, weights, output, lse and the block map as the rules say', async () => {
  for (const { name, req } of problems()) {
    const block = [1 + (req.q.length % 3), 2];
    const res = await postJson(s.port, '/v1/attention', { ...req, include: INCLUDE, block });
    assert.equal(res.status, 200, `${name}: ${res.body}`);
    const got = res.json(), want = expected(req);
    assert.deepEqual(got.visible, want.visible, `${name}: visible`);
    want.weights.forEach((row, i) => row.forEach((w, j) =>
      assertNear(got.weights[i][j], w, `${name} weights[${i}][${j}]`)));
    want.output.forEach((row, i) => row.forEach((o, c) =>
      assertNear(got.output[i][c], o, `${name} output[${i}][${c}]`)));
    want.lse.forEach((l, i) => assertNear(got.lse[i], l, `${name} lse[${i}]`));
    const map = tilesOf(want.visible, block[0], block[1]);
    assert.deepEqual(got.block_map, { block, tiles: map.tiles, sparsity: map.sparsity }, `${name}: block_map`);
    assert.deepEqual(got.shapes.visible, [req.q.length, req.k.length]);
    assert.deepEqual(got.shapes.block_map, [map.tiles.length, map.tiles[0].length]);
    const empty = want.lse.map((l, i) => (l === null ? i : -1)).filter((i) => i >= 0);
    assert.deepEqual(got.warnings.filter((w) => w.code === 'row_fully_masked').map((w) => w.row),
      empty, `${name}: a warning a fully masked row`);
  }
});

test("FlashAttention's varlen: each document causal bottom-right on its own (its README's picture)", async () => {
  // Two documents: queries 2 and 5 against keys 5 and 2. Inside the first, seqlen_q = 2,
  // seqlen_k = 5 gives [[1 1 1 1 0], [1 1 1 1 1]]; inside the second, seqlen_q = 5,
  // seqlen_k = 2 leaves three rows empty and gives [1 0], [1 1].
  const r = rng(5);
  const req = { q: matrix(r, 7, 2), k: matrix(r, 7, 2), v: matrix(r, 7, 1), mask: 'causal',
    documents: { lengths_q: [2, 5], lengths_k: [5, 2] }, include: ['visible', 'lse'] };
  const got = (await postJson(s.port, '/v1/attention', req)).json();
  assert.deepEqual(got.visible, [
    [1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0],
    [0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1, 1]]);
  assert.deepEqual(got.lse.map((x) => x === null), [false, false, true, true, true, false, false]);
  const tl = (await postJson(s.port, '/v1/attention', { ...req, mask: 'causal_top_left' })).json();
  assert.deepEqual(tl.visible[1], [1, 1, 0, 0, 0, 0, 0], 'top-left: SDPA tril inside the document');
  assert.deepEqual(tl.visible[6], [0, 0, 0, 0, 0, 1, 1]);
  assert.equal(tl.shapes.mask, 'causal_top_left');
});

test('the streamed path answers the same output, lse and block map with no (n_q, n_k) matrix', async () => {
  const r = rng(9);
  const req = { q: matrix(r, 20, 3), k: matrix(r, 20, 3), v: matrix(r, 20, 2), mask: 'causal',
    documents: { lengths: [6, 9, 5] }, chunk: 4, prefix: 2,
    include: ['output', 'lse', 'block_map'], block: [4, 4] };
  const streamed = await postJson(small.port, '/v1/attention', req); // 400 cells > 64
  assert.equal(streamed.status, 200, streamed.body);
  const full = (await postJson(s.port, '/v1/attention', req)).json(), got = streamed.json();
  const want = expected(req);
  want.output.forEach((row, i) => row.forEach((o, c) => assertNear(got.output[i][c], o, `output[${i}][${c}]`)));
  want.lse.forEach((l, i) => assertNear(got.lse[i], l, `lse[${i}]`));
  assert.deepEqual(got.block_map, full.block_map);
  // With weights asked the full pass runs: the same output and lse to 1e-12.
  const whole = (await postJson(s.port, '/v1/attention', { ...req, include: ['weights', 'output', 'lse'] })).json();
  whole.output.forEach((row, i) => row.forEach((o, c) => assertNear(got.output[i][c], o, `full output[${i}][${c}]`)));
  whole.lse.forEach((l, i) => assertNear(got.lse[i], l, `full lse[${i}]`));
  assert.deepEqual(full.output, got.output, 'documents stream on the default server too: the same bits');
  assert.deepEqual(got.block_map.tiles, tilesOf(want.visible, 4, 4).tiles);
  // visible is an (n_q, n_k) matrix: over --max-cells it is refused, naming q.
  const refused = await postJson(small.port, '/v1/attention', { ...req, include: ['visible'] });
  assert.equal(assertProblem(assert, refused, 422).type, '/problems/limit-exceeded');
});

test('a batch item and every head of /v1/multihead keep the rules', async () => {
  const r = rng(11);
  const item = { q: matrix(r, 5, 2), k: matrix(r, 5, 2), v: matrix(r, 5, 2), mask: 'causal',
    documents: { lengths: [2, 3] }, include: ['visible', 'weights'] };
  const batch = (await postJson(s.port, '/v1/attention/batch', { items: [item, { ...item, chunk: 2 }] })).json();
  assert.deepEqual(batch.results[0].body.visible, expected(item).visible);
  assert.deepEqual(batch.results[1].body.visible, expected({ ...item, chunk: 2 }).visible);
  const mh = await postJson(s.port, '/v1/multihead', { heads: 2, random: { seed: 3, n: 6, d_model: 4 },
    mask: 'causal_top_left', documents: { lengths: [4, 2] }, chunk: 3, block: [4, 4],
    include: ['weights', 'visible', 'block_map'] });
  assert.equal(mh.status, 200, mh.body);
  const sized = { q: matrix(r, 6, 1), k: matrix(r, 6, 1), mask: 'causal_top_left', documents: { lengths: [4, 2] }, chunk: 3 };
  const answer = mh.json();
  answer.weights.forEach((head, h) => head.forEach((row, i) => row.forEach((w, j) =>
    assert.equal(w > 0, sees(sized, 6, 6, i, j) === true, `head ${h} weight [${i}][${j}]`))));
  const visible = Array.from({ length: 6 }, (_, i) => Array.from({ length: 6 }, (_, j) => (sees(sized, 6, 6, i, j) ? 1 : 0)));
  assert.deepEqual(answer.visible, visible, 'multihead visible: the same in every head');
  assert.deepEqual(answer.block_map, { block: [4, 4], ...tilesOf(visible, 4, 4) });
  assert.deepEqual([answer.shapes.visible, answer.shapes.block_map], [[6, 6], [2, 2]]);
  const names = answer.steps.map((x) => x.name);
  assert.deepEqual(names.slice(-2), ['visible', 'block_map']);
});

test('a bad field is a 422 that names it, with a hint', async () => {
  const base = { q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1], [2], [3]] };
  const cases = [
    [{ documents: { lengths: [1, 1] } }, '/documents/lengths', /adds up to 2, but there are 3 queries/],
    [{ documents: { lengths: [1, 0, 2] } }, '/documents/lengths/1', /integer from 1/],
    [{ documents: { lengths: [2, -1, 2] } }, '/documents/lengths/1', /integer from 1/],
    [{ documents: { lengths: [1, 1, 1, 1] } }, '/documents/lengths', /lists 4 documents/],
    [{ documents: { lengths_q: [1, 2] } }, '/documents/lengths_k', /lengths_k is required/],
    [{ documents: { lengths: [3], lengths_q: [3] } }, '/documents', /not both/],
    [{ documents: { lengths_q: [1, 2], lengths_k: [3] } }, '/documents/lengths_k', /lists 2 documents and/],
    [{ documents: [3] }, '/documents', /must be an object/],
    [{ prefix: 4 }, '/prefix', /from 0 to 3/],
    [{ chunk: 0 }, '/chunk', /from 1 to/],
    [{ block: [0, 4] }, '/block/0', /from 1 to/],
    [{ block: [4] }, '/block', /two integers/],
    [{ mask: 'causal_bottom_right' }, '/mask', /"causal" and "causal_top_left"/],
  ];
  for (const [extra, pointer, detail] of cases) {
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention', { ...base, ...extra }), 422);
    assert.equal(p.errors[0].pointer, pointer, JSON.stringify(extra));
    assert.match(p.errors[0].detail, detail, JSON.stringify(extra));
    assert.ok(p.errors[0].hint, `${JSON.stringify(extra)} has a hint`);
  }
  const sq = { q: [[1, 0]], k: [[1, 0], [0, 1]], v: [[1], [2]], documents: { lengths: [1] } };
  const p = assertProblem(assert, await postJson(s.port, '/v1/attention', sq), 422);
  assert.match(p.errors[0].detail, /n_q = 1 and n_k = 2/);
  assert.match(p.errors[0].hint, /lengths_q and lengths_k/);
  // The block map's tiles are a matrix of their own, within --max-cells.
  const wide = { ...base, q: matrix(rng(1), 9, 2), k: matrix(rng(2), 9, 2), v: matrix(rng(3), 9, 1) };
  const over = await postJson(small.port, '/v1/attention', { ...wide, include: ['output', 'block_map'], block: [1, 1] });
  const lim = assertProblem(assert, over, 422);
  assert.equal(lim.type, '/problems/limit-exceeded');
  assert.equal(lim.errors[0].pointer, '/block');
  const ko = await postJson(s.port, '/v1/attention?lang=ko', { ...base, chunk: 0 });
  assert.match(assertProblem(assert, ko, 422).errors[0].hint, /chunk 의 키만/);
});

test('a vector field says how many numbers it needs, not a cell limit', async () => {
  const one = { q: [[1, 0]], k: [[1, 0], [0, 1]], v: [[1], [2]] };
  const cases = [
    [{ rope: { positions_q: [0, 1, 2] } }, '/rope/positions_q', /has 3 numbers but needs 1, one per query/],
    [{ rope: { positions_k: [0, 1, 2, 3, 4] } }, '/rope/positions_k', /has 5 numbers but needs 2, one per key/],
    [{ rope: { positions_k: [[0, 1], [2, 3]] } }, '/rope/positions_k', /has more than 3 numbers but needs 2/],
    [{ sink_logit: [0, 1, 2] }, '/sink_logit', /has 3 numbers but needs 1, one per head/],
  ];
  for (const [extra, pointer, detail] of cases) {
    const p = assertProblem(assert, await postJson(s.port, '/v1/attention', { ...one, ...extra }), 422);
    assert.equal(p.type, '/problems/invalid-value', JSON.stringify(extra));
    assert.equal(p.errors[0].pointer, pointer);
    assert.match(p.errors[0].detail, detail);
  }
  const mh = await postJson(s.port, '/v1/multihead', { heads: 2, random: { seed: 1, n: 2, d_model: 4 },
    alibi: [0.5, 0.25, 0.125] });
  assert.match(assertProblem(assert, mh, 422).errors[0].detail, /has 3 numbers but needs 2, one per head/);
});

test('/v1/shapes lists visible and its block map in tiles of block_q by block_k, and row_sum', async () => {
  const r = await request(s.port, { path: '/v1/shapes?n=1000&d_model=512&heads=8&n_kv=300&block_q=64' });
  assert.equal(r.status, 200, r.body);
  const rows = Object.fromEntries(r.json().rows.map((x) => [x.op, x.result]));
  assert.deepEqual(rows['rules(i, j)'], [1000, 300]);
  assert.deepEqual(rows['tiles(visible, B_q, B_k)'], [Math.ceil(1000 / 64), Math.ceil(300 / 128)]);
  assert.deepEqual(rows['sum(exp(masked - row_max), axis=-1)'], [1000]);
  const bad = await request(s.port, { path: '/v1/shapes?n=10&d_model=512&heads=8&block_k=0' });
  assert.equal(assertProblem(assert, bad, 422).parameter, 'block_k');
});
