// tests/http/v2_masks.test.mjs — the masks of training on both V2 models: causal
// "top_left", prefix, chunk, block_q and block_k as parameters; LENGTHS, or LENGTHS_Q
// with LENGTHS_K, as INT32 or INT64 inputs a batch shares; the output BLOCK_MAP (INT8)
// with its sparsity. Every answer is held to /v1's for the same problem (POST
// /v1/attention or /v1/multihead with the same numbers, documents, prefix, chunk and
// mask): OUTPUT, LSE and WEIGHTS to 1e-12, BLOCK_MAP tile for tile and its sparsity
// exactly; in JSON and in binary. Each bad input is a 400 naming its parameter or input.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postBytes, postJson, requestBytes, startServer } from './lib.mjs';
import { body } from './v2_helpers.mjs';

let s;
let small; // --max-cells 64: a block map of more tiles is refused
before(async () => {
  s = await startServer(['--log', 'off']);
  small = await startServer(['--log', 'off', '--max-cells', '64']);
});
after(async () => {
  await s.stop();
  await small.stop();
});

assert.equal(new Uint8Array(new Uint16Array([1]).buffer)[0], 1, 'the test builds little-endian bytes');

const flat = (m) => m.flat(Infinity);
const ARRAYS = { FP64: Float64Array, INT32: Int32Array, INT64: BigInt64Array, INT8: Int8Array };

/** numbers of a binary piece as the datatype says. */
function valuesOf(datatype, piece) {
  const A = ARRAYS[datatype];
  const copy = new Uint8Array(piece); // aligned
  return Array.from(new A(copy.buffer), (x) => Number(x));
}

/** {NAME: {datatype, shape, parameters, data}} of a V2 answer, JSON or binary. */
function outputsOf(r) {
  assert.equal(r.status, 200, r.body.slice(0, 600));
  const binary = r.headers['content-type'] === 'application/octet-stream';
  const n = binary ? Number(r.headers['inference-header-content-length']) : r.raw.length;
  const header = JSON.parse(r.raw.subarray(0, n).toString('utf8'));
  const out = {};
  let at = n;
  for (const o of header.outputs) {
    let data = o.data;
    if (binary) {
      const size = o.parameters.binary_data_size;
      data = valuesOf(o.datatype, r.raw.subarray(at, at + size));
      at += size;
    }
    out[o.name] = { ...o, data: data.map((x) => (x === null ? -Infinity : x)) };
  }
  if (binary) assert.equal(at, r.raw.length, 'the binary pieces fill the body exactly');
  return out;
}

async function infer(model, inputs, outputs, parameters, binary, server = s) {
  const b = body(inputs, outputs, parameters, binary);
  return postBytes(server.port, `/v2/models/${model}/infer`, b.body, b.headers);
}

async function v1(path, req) {
  const r = await postJson(s.port, path, req);
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

function assertClose(got, want, what) {
  const w = flat(want).map((x) => (x === null ? -Infinity : x));
  assert.equal(got.length, w.length, `${what}: length`);
  for (let i = 0; i < w.length; i++) {
    const ok = got[i] === w[i] || Math.abs(got[i] - w[i]) <= 1e-12 * (1 + Math.abs(w[i]));
    assert.ok(ok, `${what}[${i}]: ${got[i]} vs ${w[i]}`);
  }
}

/** A matrix of rows × cols with small deterministic values. */
const fill = (rows, cols, seed) => Array.from({ length: rows }, (_, i) =>
  Array.from({ length: cols }, (_, j) => ((((i + 1) * 7 + (j + 1) * seed) % 13) - 6) / 4));

const tensor = (name, m) => ({ name, shape: [m.length, m[0].length], datatype: 'FP64', values: flat(m) });

/** The tiles of a 0/1 visible matrix, counted cell by cell: 2 full, 1 partial, 0 empty. */
function tilesOf(visible, bq, bk) {
  const tiles = [];
  for (let r = 0; r < visible.length; r += bq) {
    const row = [];
    for (let c = 0; c < visible[0].length; c += bk) {
      let seen = 0, all = 0;
      for (let i = r; i < Math.min(r + bq, visible.length); i++)
        for (let j = c; j < Math.min(c + bk, visible[0].length); j++) { seen += visible[i][j]; all++; }
      row.push(seen === all ? 2 : seen === 0 ? 0 : 1);
    }
    tiles.push(row);
  }
  return tiles;
}

// The problems: each with its /v1 fields and its V2 parameters and lengths inputs.
const PROBLEMS = [
  {
    what: 'packed self-attention, causal bottom-right, LENGTHS [3, 5], tiles 4 x 4',
    nQ: 8, nK: 8,
    v1: { mask: 'causal', documents: { lengths: [3, 5] }, block: [4, 4] },
    params: { causal: true, block_q: 4, block_k: 4 },
    lengths: { LENGTHS: [3, 5] },
  },
  {
    what: 'varlen (n_q 5, n_k 7), causal top-left, prefix 1, tiles 2 x 3',
    nQ: 5, nK: 7,
    v1: { mask: 'causal_top_left', documents: { lengths_q: [2, 3], lengths_k: [3, 4] }, prefix: 1, block: [2, 3] },
    params: { causal: 'top_left', prefix: 1, block_q: 2, block_k: 3 },
    lengths: { LENGTHS_Q: [2, 3], LENGTHS_K: [3, 4] },
  },
  {
    what: 'chunk 3 with causal, no documents, the default tiles (128)',
    nQ: 7, nK: 7,
    v1: { mask: 'causal', chunk: 3 },
    params: { causal: true, chunk: 3 },
    lengths: {},
  },
  {
    what: 'documents alone (a row of keys its document hides), block_k alone',
    nQ: 6, nK: 6,
    v1: { documents: { lengths: [1, 2, 3] }, block: [128, 2] },
    params: { block_k: 2 },
    lengths: { LENGTHS: [1, 2, 3] },
  },
];

const lengthInputs = (lengths, datatype) => Object.entries(lengths).map(([name, values]) =>
  ({ name, shape: [values.length], datatype, values }));

test('attention: OUTPUT, LSE, WEIGHTS and BLOCK_MAP are /v1\'s, JSON and binary, INT32 and INT64 lengths', async () => {
  for (const p of PROBLEMS) {
    const q = fill(p.nQ, 4, 3), k = fill(p.nK, 4, 5), v = fill(p.nK, 2, 11);
    const want = await v1('/v1/attention', { q, k, v, ...p.v1, include: ['output', 'lse', 'visible', 'block_map'] });
    const wantW = await v1('/v1/attention', { q, k, v, ...p.v1, include: ['weights', 'output'] });
    const [bq, bk] = p.v1.block ?? [128, 128];
    assert.deepEqual(want.block_map.tiles, tilesOf(want.visible, bq, bk), `${p.what}: /v1's tiles`);
    for (const datatype of ['INT32', 'INT64']) {
      for (const binary of [false, true]) {
        const at = `${p.what}, ${datatype}, ${binary ? 'binary' : 'JSON'}`;
        const inputs = [tensor('Q', q), tensor('K', k), tensor('V', v), ...lengthInputs(p.lengths, datatype)];
        // OUTPUT, LSE and BLOCK_MAP only: streamed, no (n_q, n_k) matrix
        const o = outputsOf(await infer('attention', inputs, ['OUTPUT', 'LSE', 'BLOCK_MAP'], p.params, binary));
        assertClose(o.OUTPUT.data, want.output, `${at} OUTPUT`);
        assertClose(o.LSE.data, want.lse, `${at} LSE`);
        assert.equal(o.BLOCK_MAP.datatype, 'INT8');
        assert.deepEqual(o.BLOCK_MAP.shape, [want.block_map.tiles.length, want.block_map.tiles[0].length], at);
        assert.deepEqual(o.BLOCK_MAP.data, flat(want.block_map.tiles), `${at} BLOCK_MAP`);
        assert.equal(o.BLOCK_MAP.parameters.sparsity, want.block_map.sparsity, `${at} sparsity`);
        // WEIGHTS: the whole path on both sides
        const w = outputsOf(await infer('attention', inputs, ['WEIGHTS', 'OUTPUT'], p.params, binary));
        assertClose(w.WEIGHTS.data, wantW.weights, `${at} WEIGHTS`);
        assertClose(w.OUTPUT.data, wantW.output, `${at} OUTPUT (whole path)`);
      }
    }
  }
});

test('BLOCK_MAP sent as asked: FP64 by its datatype parameter, binary bytes of INT8 by default', async () => {
  const p = PROBLEMS[0], q = fill(8, 4, 3);
  const inputs = [tensor('Q', q), tensor('K', q), tensor('V', fill(8, 2, 1)), ...lengthInputs(p.lengths, 'INT64')];
  const b = body(inputs, ['BLOCK_MAP'], p.params, true);
  const r = await postBytes(s.port, '/v2/models/attention/infer', b.body, b.headers);
  const n = Number(r.headers['inference-header-content-length']);
  assert.deepEqual(r.raw.subarray(n), Buffer.from([1, 0, 1, 1]), 'four INT8 tiles: [[1, 0], [1, 1]]');
  const f = await postBytes(s.port, '/v2/models/attention/infer', JSON.stringify({
    inputs: inputs.map(({ values, ...t }) => ({ ...t, data: values })),
    outputs: [{ name: 'BLOCK_MAP', parameters: { datatype: 'FP64' } }], parameters: p.params,
  }), { 'Content-Type': 'application/json' });
  const o = outputsOf(f).BLOCK_MAP;
  assert.deepEqual([o.datatype, o.data, o.parameters.sparsity], ['FP64', [1, 0, 1, 1], 0.25]);
});

test('a batch shares LENGTHS: each problem is /v1\'s, BLOCK_MAP (B, rows, cols) with one sparsity', async () => {
  const p = PROBLEMS[1];
  const qs = [fill(5, 4, 3), fill(5, 4, 8)], ks = [fill(7, 4, 5), fill(7, 4, 2)], vs = [fill(7, 2, 11), fill(7, 2, 6)];
  const want = [];
  for (let b = 0; b < 2; b++)
    want.push(await v1('/v1/attention', { q: qs[b], k: ks[b], v: vs[b], ...p.v1, include: ['output', 'lse', 'block_map'] }));
  const batch = (name, ms) => ({ name, shape: [2, ms[0].length, ms[0][0].length], datatype: 'FP64', values: flat(ms) });
  for (const binary of [false, true]) {
    const inputs = [batch('Q', qs), batch('K', ks), batch('V', vs), ...lengthInputs(p.lengths, 'INT32')];
    const o = outputsOf(await infer('attention', inputs, ['OUTPUT', 'LSE', 'BLOCK_MAP'], p.params, binary));
    assert.deepEqual(o.OUTPUT.shape, [2, 5, 2]);
    assert.deepEqual(o.LSE.shape, [2, 5]);
    assertClose(o.OUTPUT.data, [want[0].output, want[1].output], 'batch OUTPUT');
    assertClose(o.LSE.data, [want[0].lse, want[1].lse], 'batch LSE');
    const tiles = want[0].block_map.tiles;
    assert.deepEqual(o.BLOCK_MAP.shape, [2, tiles.length, tiles[0].length]);
    assert.deepEqual(o.BLOCK_MAP.data, [...flat(tiles), ...flat(want[1].block_map.tiles)]);
    assert.equal(o.BLOCK_MAP.parameters.sparsity, want[0].block_map.sparsity);
    // the whole path, batched: WEIGHTS
    const wantW = [];
    for (let b = 0; b < 2; b++)
      wantW.push((await v1('/v1/attention', { q: qs[b], k: ks[b], v: vs[b], ...p.v1, include: ['weights'] })).weights);
    const w = outputsOf(await infer('attention', inputs, ['WEIGHTS', 'BLOCK_MAP'], p.params, binary));
    assertClose(w.WEIGHTS.data, wantW, 'batch WEIGHTS');
    assert.deepEqual(w.BLOCK_MAP.data, o.BLOCK_MAP.data);
  }
});

test('multihead: OUTPUT, LSE and WEIGHTS are /v1/multihead\'s, BLOCK_MAP /v1/attention\'s, batched too', async () => {
  const x = fill(6, 4, 3), wq = fill(4, 4, 5), wk = fill(4, 4, 7), wv = fill(4, 4, 2), wo = fill(4, 4, 9);
  const weights = [tensor('W_Q', wq), tensor('W_K', wk), tensor('W_V', wv), tensor('W_O', wo)];
  const cases = [
    { v1: { mask: 'causal_top_left', documents: { lengths: [2, 4] }, chunk: 3 },
      params: { heads: 2, causal: 'top_left', chunk: 3, block_q: 2, block_k: 2 }, lengths: { LENGTHS: [2, 4] }, block: [2, 2] },
    { v1: { mask: 'causal', documents: { lengths_q: [4, 2], lengths_k: [3, 3] }, prefix: 2 },
      params: { heads: 2, causal: true, prefix: 2, block_q: 3, block_k: 4 }, lengths: { LENGTHS_Q: [4, 2], LENGTHS_K: [3, 3] }, block: [3, 4] },
  ];
  for (const c of cases) {
    const want = await v1('/v1/multihead', { x, heads: 2, w_q: wq, w_k: wk, w_v: wv, w_o: wo, ...c.v1,
      include: ['output', 'lse', 'weights'] });
    const rules = await v1('/v1/attention', { q: fill(6, 1, 1), k: fill(6, 1, 2), v: fill(6, 1, 3), ...c.v1,
      block: c.block, include: ['block_map'] });
    for (const datatype of ['INT32', 'INT64']) {
      for (const binary of [false, true]) {
        const at = `multihead ${JSON.stringify(c.params)} ${datatype} ${binary ? 'binary' : 'JSON'}`;
        const inputs = [tensor('X', x), ...weights, ...lengthInputs(c.lengths, datatype)];
        const o = outputsOf(await infer('multihead', inputs, ['OUTPUT', 'LSE', 'BLOCK_MAP'], c.params, binary));
        assertClose(o.OUTPUT.data, want.output, `${at} OUTPUT`);
        assertClose(o.LSE.data, want.lse, `${at} LSE`);
        assert.deepEqual(o.BLOCK_MAP.data, flat(rules.block_map.tiles), `${at} BLOCK_MAP`);
        assert.equal(o.BLOCK_MAP.parameters.sparsity, rules.block_map.sparsity);
        const w = outputsOf(await infer('multihead', inputs, ['WEIGHTS', 'BLOCK_MAP'], c.params, binary));
        assertClose(w.WEIGHTS.data, want.weights, `${at} WEIGHTS`);
        assert.deepEqual(w.BLOCK_MAP.data, o.BLOCK_MAP.data);
      }
    }
    // X twice as a batch of 2, one list of lengths for both
    const inputs = [{ name: 'X', shape: [2, 6, 4], datatype: 'FP64', values: [...flat(x), ...flat(x)] },
      ...weights, ...lengthInputs(c.lengths, 'INT64')];
    const b = outputsOf(await infer('multihead', inputs, ['OUTPUT', 'BLOCK_MAP'], c.params, true));
    assertClose(b.OUTPUT.data, [want.output, want.output], 'batched OUTPUT');
    assert.deepEqual(b.BLOCK_MAP.shape, [2, rules.block_map.tiles.length, rules.block_map.tiles[0].length]);
    assert.deepEqual(b.BLOCK_MAP.data, [...flat(rules.block_map.tiles), ...flat(rules.block_map.tiles)]);
  }
});

test('the model metadata lists LENGTHS, LENGTHS_Q, LENGTHS_K and BLOCK_MAP on both models', async () => {
  for (const model of ['attention', 'multihead']) {
    const m = await requestBytes(s.port, { method: 'GET', path: `/v2/models/${model}` });
    assert.equal(m.status, 200);
    const j = m.json();
    for (const name of ['LENGTHS', 'LENGTHS_Q', 'LENGTHS_K'])
      assert.deepEqual(j.inputs.find((t) => t.name === name), { name, datatype: 'INT64', shape: [-1] }, `${model} ${name}`);
    assert.deepEqual(j.outputs.find((t) => t.name === 'BLOCK_MAP'), { name: 'BLOCK_MAP', datatype: 'INT8', shape: [-1, -1] });
  }
});

/** A bad request's V2 error: status, type, pointer, and its message. */
async function refused(model, inputs, parameters, { type, pointer, message, binary = false, server = s, outputs = ['OUTPUT'] }) {
  const r = await infer(model, inputs, outputs, parameters, binary, server);
  assert.equal(r.status, 400, r.body);
  const j = r.json();
  assert.equal(j.type, `/problems/${type}`, r.body);
  assert.equal(j.error, j.detail);
  assert.equal(j.errors?.[0]?.pointer, pointer, r.body);
  assert.match(j.error, message, r.body);
  return j;
}

test('each bad mask input or parameter is a 400 naming it, with /v1\'s words', async () => {
  const q = fill(5, 4, 3);
  const qkv = [tensor('Q', q), tensor('K', q), tensor('V', fill(5, 2, 1))];
  const L = (name, values, datatype = 'INT32', shape = [values.length]) => ({ name, shape, datatype, values });
  const A = (inputs, parameters, expect) => refused('attention', inputs, parameters, expect);
  await A([...qkv, L('LENGTHS', [2, 2])], {}, { type: 'invalid-value', pointer: '/inputs/3',
    message: /^documents\.lengths adds up to 4, but there are 5 queries$/ });
  await A([...qkv, L('LENGTHS', [2, 0, 3])], {}, { type: 'invalid-value', pointer: '/inputs/3/data/1',
    message: /^lengths must be an integer from 1 to 2147483647, not a number 0$/ });
  await A([...qkv, L('LENGTHS', [2, -1, 4], 'INT64')], {}, { type: 'invalid-value', binary: true,
    pointer: '/inputs/3/parameters/binary_data_size', message: /not a number -1$/ });
  const fp = await A([...qkv, { name: 'LENGTHS', shape: [2], datatype: 'FP64', values: [2, 3] }], {},
    { type: 'invalid-value', pointer: '/inputs/3/datatype', message: /^inputs\[3\] \(LENGTHS\) is FP64, which LENGTHS is not read as$/ });
  assert.equal(fp.errors[0].hint, 'document lengths are integers: send INT32 or INT64');
  await A([...qkv, L('LENGTHS', [2, 3], 'INT32', [1, 2])], {}, { type: 'shape-mismatch', pointer: '/inputs/3/shape',
    message: /^inputs\[3\] \(LENGTHS\) has rank 2; document lengths are one list \(rank 1\), shared by every problem of a batch$/ });
  await A([...qkv, L('LENGTHS', [1, 1, 1, 1, 1, 1])], {}, { type: 'invalid-value', pointer: '/inputs/3/shape/0',
    message: /^documents\.lengths lists 6 documents, but 5 queries hold at most 5 of one token or more$/ });
  await A([...qkv, L('LENGTHS', [2, 3]), L('LENGTHS_Q', [2, 3]), L('LENGTHS_K', [2, 3])], {},
    { type: 'invalid-value', pointer: '/inputs/5', message: /^documents takes lengths, or lengths_q with lengths_k, not both$/ });
  await A([...qkv, L('LENGTHS_Q', [2, 3])], {}, { type: 'missing-field', pointer: '/inputs',
    message: /^documents\.lengths_k is required with documents\.lengths_q$/ });
  await A([...qkv, L('LENGTHS_Q', [2, 3]), L('LENGTHS_K', [1, 1, 3])], {}, { type: 'invalid-value', pointer: '/inputs/4',
    message: /^documents\.lengths_q lists 2 documents and documents\.lengths_k 3$/ });
  // LENGTHS splits queries and keys alike: n_q = n_k
  await A([tensor('Q', fill(4, 4, 3)), ...qkv.slice(1), L('LENGTHS', [2, 3])], {}, { type: 'invalid-value', pointer: '/inputs/3',
    message: /^documents\.lengths splits queries and keys alike, but n_q = 4 and n_k = 5$/ });
  await A(qkv, { causal: true, prefix: 6 }, { type: 'invalid-value', pointer: '/parameters/prefix',
    message: /^prefix must be an integer from 0 to 5, not a number 6$/ });
  await A(qkv, { chunk: 0 }, { type: 'invalid-value', pointer: '/parameters/chunk', message: /^chunk must be an integer from 1/ });
  await A(qkv, { block_q: 0 }, { type: 'invalid-value', pointer: '/parameters/block_q', message: /^block must be an integer from 1/ });
  await A(qkv, { block_k: 2.5 }, { type: 'invalid-value', pointer: '/parameters/block_k', message: /^block must be an integer from 1/ });
  await A(qkv, { causal: 'bottom_right' }, { type: 'invalid-value', pointer: '/parameters/causal',
    message: /^parameters\.causal is true, false or "top_left", not "bottom_right"$/ });
  // a block map of 81 tiles where --max-cells is 64 (the rest streams within it)
  const nine = fill(9, 1, 3);
  await refused('attention', [tensor('Q', nine), tensor('K', nine), tensor('V', nine)], { block_q: 1, block_k: 1 },
    { type: 'limit-exceeded', pointer: '/parameters/block_q', server: small, outputs: ['OUTPUT', 'BLOCK_MAP'],
      message: /^block_map would have 9 x 9 tiles; this server computes at most 64 cells in one matrix$/ });
  // multihead names them the same way
  const x = fill(5, 4, 3), eye = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
  const mh = [tensor('X', x), ...['W_Q', 'W_K', 'W_V', 'W_O'].map((n) => tensor(n, eye))];
  await refused('multihead', [...mh, L('LENGTHS', [2, 2])], { heads: 2 }, { type: 'invalid-value', pointer: '/inputs/5',
    message: /^documents\.lengths adds up to 4, but there are 5 queries$/ });
  await refused('multihead', [...mh, { name: 'LENGTHS_Q', shape: [1], datatype: 'FP64', values: [5] }], { heads: 2 },
    { type: 'invalid-value', pointer: '/inputs/5/datatype', message: /is FP64, which LENGTHS_Q is not read as$/ });
  await refused('multihead', mh, { heads: 2, chunk: 0 }, { type: 'invalid-value', pointer: '/parameters/chunk', message: /^chunk must be/ });
  await refused('multihead', mh, { heads: 2, causal: 'top-left' }, { type: 'invalid-value', pointer: '/parameters/causal', message: /"top_left"/ });
});
