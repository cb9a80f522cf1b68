// tests/http/teaching_masks.test.mjs — docs/teaching.md's masks of training, as three
// libraries write them, hold to attnd's answer.
//
// Each `<!-- mask: NAME -->` python block of the page is run as printed by
// tests/http/mask_tools.py: its FlexAttention mask_mod over every (q_idx, kv_idx) with
// plain Python ints, its FlashAttention call through that library's documented rule
// (bottom-right causal, window_size, cu_seqlens), its SDPA attn_mask (or is_causal) with
// numpy standing in for torch. Each mask must equal attnd's `visible` for the request of
// the curl shown just above the block, cell by cell, and SDPA's weights (a numpy softmax
// over the masked scores) attnd's weights on the same problem with explicit q, k, v.
// The block map shown on the page is held to the tiles of the mask_mod's mask.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { postJson, rng, startServer } from './lib.mjs';
import { matrix } from './reference.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const page = readFileSync(path.join(here, '..', '..', 'docs', 'teaching.md'), 'utf8');

let s;
before(async () => {
  s = await startServer(['--log', 'off']);
});
after(async () => {
  await s.stop();
});

// Every mask the page draws, in its order.
const NAMES = ['causal', 'causal_top_left', 'documents', 'varlen', 'prefix', 'chunk',
  'window_sink', 'combination'];
// FlashAttention has no argument for these: the page says so and calls nothing.
const NO_FLASH = new Set(['causal_top_left', 'prefix']);
// FlashAttention's part writes only some of the rules: the request its mask must match.
const FLASH_REQUEST = {
  window_sink: (req) => { const r = { ...req }; delete r.sink_tokens; return r; },
};

/** The JSON body of each curl in the page's ```console blocks, with its offset. */
function curls(text) {
  const out = [];
  for (const m of text.matchAll(/^\$ curl -s localhost:8080\/v1\/attention -d '([^']*)'/gm)) {
    out.push({ at: m.index, body: JSON.parse(m[1]) });
  }
  return out;
}

const imports = page.match(/<!-- masks-imports -->\n```python\n([\s\S]*?)```/);
const snippets = [...page.matchAll(/<!-- mask: (\w+) -->\n```python\n([\s\S]*?)```/g)]
  .map((m) => {
    const before = curls(page.slice(0, m.index));
    return { name: m[1], code: m[2], request: before.at(-1)?.body };
  });

test('docs/teaching.md draws every mask, each after its request', () => {
  assert.ok(imports, 'the page has its import block');
  assert.deepEqual(snippets.map((x) => x.name), NAMES);
  for (const x of snippets) {
    assert.ok(x.request?.random, `${x.name}: a curl with random inputs above its snippet`);
    assert.ok(x.request.include.includes('visible'), `${x.name}: its curl draws visible`);
  }
});

/** Runs one snippet with these inputs (mask_tools.py). */
function runSnippet(code, q, k, v) {
  const out = execFileSync('/usr/bin/python3', ['-W', 'error', path.join(here, 'mask_tools.py')], {
    input: JSON.stringify({ imports: imports[1], snippet: code, q, k, v }),
    encoding: 'utf8',
    timeout: 20000,
  });
  return JSON.parse(out);
}

/** The problem of a doc request with explicit inputs (mulberry32), asking for weights. */
function explicit(request, seed) {
  const { n_q: nQ, n_k: nK, d_k: dK, d_v: dV } = request.random;
  const r = rng(seed);
  const body = { ...request, q: matrix(r, nQ, dK), k: matrix(r, nK, dK), v: matrix(r, nK, dV) };
  delete body.random;
  body.include = ['visible', 'weights'];
  return body;
}

async function visibleOf(body) {
  const res = await postJson(s.port, '/v1/attention', body);
  assert.equal(res.status, 200, res.body);
  return res.json();
}

for (const [n, x] of snippets.entries()) {
  test(`${x.name}: mask_mod, FlashAttention's arguments, SDPA's attn_mask are attnd's visible`, async () => {
    const body = explicit(x.request, 1000 + n);
    const got = await visibleOf(body);
    const py = runSnippet(x.code, body.q, body.k, body.v);
    assert.deepEqual([py.L, py.S], [body.q.length, body.k.length], 'L, S: n_q, n_k');
    assert.deepEqual(py.mask_mod, got.visible, 'FlexAttention mask_mod');
    assert.deepEqual(py.sdpa, got.visible, 'SDPA attn_mask');
    if (NO_FLASH.has(x.name)) {
      assert.equal(py.flash, null, 'FlashAttention has no argument for this mask');
    } else {
      const want = FLASH_REQUEST[x.name] ? (await visibleOf(FLASH_REQUEST[x.name](body))).visible
        : got.visible;
      assert.deepEqual(py.flash, want, 'FlashAttention');
    }
    // attnd's weights against SDPA's reference softmax, 1e-12 relative
    assert.ok(got.weights.every((row) => row.some((w) => w > 0)), 'no row empty');
    for (let i = 0; i < got.weights.length; i++) {
      for (let j = 0; j < got.weights[i].length; j++) {
        const a = got.weights[i][j], b = py.weights[i][j];
        assert.ok(Math.abs(a - b) <= 1e-12 * Math.abs(b), `weights[${i}][${j}]: ${a} vs ${b}`);
      }
    }
  });
}

test('the page\'s block map is the tiles of the window\'s mask_mod', async () => {
  const shown = curls(page).filter((c) => c.body.include?.includes('block_map'));
  assert.equal(shown.length, 1, 'one block map drawn in the masks section');
  const req = shown[0].body;
  const x = snippets.find((y) => y.name === 'window_sink');
  const { block, ...rest } = req;
  assert.deepEqual({ ...rest, include: x.request.include }, x.request, 'the window, tiled');
  const body = explicit(x.request, 7);
  const py = runSnippet(x.code, body.q, body.k, body.v);
  const [bq, bk] = block;
  const tiles = [];
  let empty = 0;
  for (let r = 0; r < py.L; r += bq) {
    const line = [];
    for (let c = 0; c < py.S; c += bk) {
      let seen = 0, cells = 0;
      for (let i = r; i < Math.min(r + bq, py.L); i++) {
        for (let j = c; j < Math.min(c + bk, py.S); j++) { cells++; seen += py.mask_mod[i][j]; }
      }
      const kind = seen === 0 ? 0 : seen === cells ? 2 : 1;
      empty += kind === 0;
      line.push(kind);
    }
    tiles.push(line);
  }
  const res = await postJson(s.port, '/v1/attention', req);
  assert.equal(res.status, 200);
  assert.deepEqual(res.json().block_map,
    { block, tiles, sparsity: empty / (tiles.length * tiles[0].length) });
});

// Beyond the page's examples: FlashAttention's rule (flash_attn_varlen_func: causal
// bottom-right in each sequence, window_size with -1 open, cu_seqlens) against attnd's
// documents, causal and window on random problems, sequences with fewer or more queries
// than keys (rows left empty included).
test("random varlen problems: FlashAttention's documented rule is attnd's visible", async () => {
  const r = rng(2024);
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const cases = [], bodies = [];
  for (let n = 0; n < 40; n++) {
    const parts = int(1, 3);
    const lq = Array.from({ length: parts }, () => int(1, 5));
    const lk = Array.from({ length: parts }, () => int(1, 5));
    const causal = r() < 0.6;
    const side = () => (r() < 0.3 ? -1 : int(0, 3));
    const window = r() < 0.6 ? [side(), side()] : [-1, -1];
    const sum = (a) => a.reduce((x, y) => x + y, 0);
    const cu = (a) => a.reduce((acc, x) => [...acc, acc.at(-1) + x], [0]);
    cases.push({ cu_seqlens_q: cu(lq), cu_seqlens_k: cu(lk), causal, window_size: window });
    const body = {
      random: { seed: n, n_q: sum(lq), n_k: sum(lk), d_k: 2, d_v: 1 },
      documents: { lengths_q: lq, lengths_k: lk },
      include: ['visible'],
    };
    if (causal) body.mask = 'causal';
    if (window[0] !== -1 || window[1] !== -1) {
      const open = (w) => (w === -1 ? null : w);
      body.window = { left: open(window[0]), right: open(window[1]) };
    }
    bodies.push(body);
  }
  const want = JSON.parse(execFileSync('/usr/bin/python3',
    ['-W', 'error', path.join(here, 'mask_tools.py')],
    { input: JSON.stringify({ flash_cases: cases }), encoding: 'utf8', timeout: 20000 }));
  for (const [n, body] of bodies.entries()) {
    const got = await visibleOf(body);
    assert.deepEqual(got.visible, want[n], `case ${n}: ${JSON.stringify(cases[n])}`);
  }
});
