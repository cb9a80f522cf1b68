// tests/http/masks_pages.test.mjs — the masks of training on the pages: ?format=text
// prints `visible` as a 0/1 matrix and `block_map` as a character a tile (█ full,
// ▒ partial, · empty) with its block, sparsity and legend, elided as every matrix is;
// ?format=svg outlines each tile of the block map over the heatmap's cells by its kind,
// with a legend, while blocked cells keep their hatching. Every line and every tile is
// counted against the JSON answer to the same request, never written out here; the
// Korean words come back with ?lang=ko.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { postJson, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer(['--log', 'off']);
});
after(async () => {
  await s.stop();
});

const GLYPH = { 0: '·', 1: '▒', 2: '█' };
const KIND = { 0: 'empty', 1: 'partial', 2: 'full' };

/** n rows of 2 numbers each, different enough that no weight ties matter here. */
const rows = (n, off = 0) => Array.from({ length: n }, (_, i) => [Math.sin(i + off), Math.cos(2 * i + off)]);

/** A problem of n_q queries and n_k keys with the rules in `rules`. */
function problem(nQ, nK, rules) {
  return { q: rows(nQ), k: rows(nK, 1), v: rows(nK, 2), ...rules };
}

// One request a rule, each with its own tiles: alone and together, n_q != n_k where allowed.
const RULES = {
  causal: problem(6, 6, { mask: 'causal', block: [2, 2] }),
  'causal top-left, n_q < n_k': problem(4, 7, { mask: 'causal_top_left', block: [2, 3] }),
  documents: problem(7, 7, { mask: 'causal', documents: { lengths: [3, 4] }, block: [2, 2] }),
  'documents with lengths_q and lengths_k': problem(5, 6, {
    documents: { lengths_q: [2, 3], lengths_k: [4, 2] }, block: [2, 2],
  }),
  prefix: problem(6, 6, { mask: 'causal', prefix: 3, block: [3, 2] }),
  chunk: problem(8, 8, { mask: 'causal', chunk: 3, block: [2, 2] }),
  window: problem(8, 8, { window: { left: 2, right: 1 }, block: [4, 4] }),
};

const INCLUDE = ['weights', 'visible', 'block_map'];

async function answers(body, query = '') {
  const full = { ...body, include: INCLUDE };
  const json = await postJson(s.port, `/v1/attention${query}`, full);
  assert.equal(json.status, 200, json.body);
  const sep = query ? '&' : '?';
  const text = await postJson(s.port, `/v1/attention${query}${sep}format=text`, full);
  assert.equal(text.status, 200, text.body);
  const svg = await postJson(s.port, `/v1/attention${query}${sep}format=svg`, full);
  assert.equal(svg.status, 200, svg.body);
  return { r: JSON.parse(json.body), text: text.body, svg: svg.body };
}

/** The lines of the section that starts with `head` up to the blank line after it. */
function section(text, head) {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(head));
  assert.ok(at >= 0, `no "${head}" in\n${text}`);
  const end = lines.findIndex((l, i) => i > at && l === '');
  return lines.slice(at, end < 0 ? undefined : end);
}

/** The text page's visible matrix: the key labels and each row's label and 0/1 cells. */
function textVisible(text) {
  const [head, header, ...body] = section(text, 'visible = ');
  assert.equal(head, 'visible = 1 where every rule lets query i see key j, else 0');
  return {
    keys: header.trim().split(/\s+/),
    rows: body.map((l) => {
      const [label, ...cells] = l.trim().split(/\s+/);
      return { label, cells: cells.map(Number) };
    }),
  };
}

/** The text page's block map: its numbers line, each grid line, and the legend. */
function textBlockMap(text) {
  const [head, numbers, ...rest] = section(text, 'block_map = ');
  assert.equal(head, 'block_map = each tile of visible: 2 full, 1 partial, 0 empty');
  return { numbers, grid: rest.slice(0, -1), legend: rest[rest.length - 1] };
}

/** Every tile rect and hatched cell of an SVG, read by python3's XML parser. */
function svgTiles(text) {
  const script = [
    'import sys, json, xml.dom.minidom as m',
    'd = m.parseString(sys.stdin.buffer.read())',
    'rects = d.getElementsByTagName("rect")',
    'tiles = [{"kind": r.getAttribute("data-kind"), "at": r.getAttribute("data-tile"),',
    '  "x": int(r.getAttribute("x")), "y": int(r.getAttribute("y")),',
    '  "w": int(r.getAttribute("width")), "h": int(r.getAttribute("height")),',
    '  "title": r.getElementsByTagName("title")[0].firstChild.data}',
    '  for r in rects if r.getAttribute("class") == "attnd-tile"]',
    'hatched = len([r for r in rects if r.getAttribute("fill") == "url(#attnd-hatch)"',
    '  and r.getAttribute("y")])',
    'legend = [g for g in d.getElementsByTagName("g") if g.getAttribute("class") == "attnd-tile-legend"]',
    'words = [t.firstChild.data for g in legend for t in g.getElementsByTagName("text")]',
    'print(json.dumps({"tiles": tiles, "hatched": hatched, "legend": words}))',
  ].join('\n');
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script], { input: text, encoding: 'utf8' }));
}

describe('text/plain', () => {
  for (const [name, body] of Object.entries(RULES)) {
    test(`${name}: visible and the tile grid, counted against the JSON`, async () => {
      const { r, text } = await answers(body);
      const vis = textVisible(text);
      assert.deepEqual(vis.keys, r.visible[0].map((_, j) => `k${j}`));
      assert.equal(vis.rows.length, r.visible.length);
      vis.rows.forEach((row, i) => {
        assert.equal(row.label, `q${i}`);
        assert.deepEqual(row.cells, r.visible[i]);
      });

      const bm = r.block_map, tiles = bm.tiles;
      const empty = tiles.flat().filter((t) => t === 0).length;
      const page = textBlockMap(text);
      assert.equal(page.numbers, `  block [${bm.block[0]}, ${bm.block[1]}]  tiles (${tiles.length}, ` +
        `${tiles[0].length})  sparsity ${bm.sparsity.toFixed(4)} (${empty} of ${tiles.flat().length} tiles empty)`);
      assert.equal(page.grid.length, tiles.length);
      page.grid.forEach((line, tr) => {
        const [label, glyphs] = line.trim().split(/\s+/);
        assert.equal(label, `q${tr * bm.block[0]}`, 'a tile row is named as its first query');
        assert.equal(glyphs, tiles[tr].map((t) => GLYPH[t]).join(''));
      });
      assert.equal(page.legend, `  █ full  ▒ partial  · empty; a line is ${bm.block[0]} queries, ` +
        `a character ${bm.block[1]} keys`);
    });
  }

  test('neither is printed unless included', async () => {
    const res = await postJson(s.port, '/v1/attention?format=text', { ...RULES.documents, include: ['weights'] });
    assert.equal(res.status, 200);
    assert.doesNotMatch(res.body, /\nvisible = |\nblock_map = /);
  });

  test('documents or a chunk with block_map alone: a page draws every step, not a 422', async () => {
    // JSON streams such a request (they hide most keys); a page computes it whole.
    for (const format of ['text', 'svg']) {
      const res = await postJson(s.port, `/v1/attention?format=${format}`, { ...RULES.documents, include: ['block_map'] });
      assert.equal(res.status, 200, res.body);
    }
  });

  test('rows: visible has the listed queries, the tile grid the whole problem', async () => {
    const body = { ...RULES.chunk, rows: [5, 1] };
    const { r, text } = await answers(body);
    const vis = textVisible(text);
    assert.deepEqual(vis.rows.map((row) => row.label), ['q5', 'q1']);
    assert.deepEqual(vis.rows.map((row) => row.cells), r.visible);
    assert.equal(textBlockMap(text).grid.length, r.block_map.tiles.length);
  });

  test('a tall grid keeps its first and last three tile rows, a wide one its ends', async () => {
    const body = {
      random: { seed: 3, n_q: 64, n_k: 300, d_k: 2, d_v: 1 },
      mask: 'causal_top_left', chunk: 50, block: [2, 1],
    };
    const { r, text } = await answers(body);
    const tiles = r.block_map.tiles; // (32, 300)
    const { grid } = textBlockMap(text);
    assert.equal(grid.length, 7);
    assert.equal(grid[3], '  ...');
    const shown = [0, 1, 2, tiles.length - 3, tiles.length - 2, tiles.length - 1];
    [0, 1, 2, 4, 5, 6].forEach((g, k) => {
      const tr = shown[k];
      const line = grid[g];
      assert.ok([...line].length <= 100, `${[...line].length} columns: ${line}`);
      const [label, left, dots, right] = line.trim().split(/\s+/);
      assert.equal(label, `q${tr * 2}`);
      assert.equal(dots, '...');
      assert.equal(left.length, right.length);
      const glyphs = tiles[tr].map((t) => GLYPH[t]).join('');
      assert.equal(left, glyphs.slice(0, left.length));
      assert.equal(right, glyphs.slice(glyphs.length - right.length));
    });
    // visible elides as every matrix does: six rows around "..."
    const vis = section(text, 'visible = ');
    assert.equal(vis.length, 1 + 1 + 7);
  });

  test('in Korean with ?lang=ko', async () => {
    const { r, text } = await answers(RULES.documents, '?lang=ko');
    const page = textBlockMap(text);
    const bm = r.block_map;
    assert.match(page.numbers, /^ {2}block \[2, 2\] {2}타일 \(4, 4\) {2}희소도 \d\.\d{4} \(빈 타일 \d+ 개 \/ 전체 16 개\)$/);
    assert.equal(page.legend, `  █ 가득 참  ▒ 일부  · 비어 있음; 한 줄은 쿼리 ${bm.block[0]} 개, 한 글자는 키 ${bm.block[1]} 개`);
  });
});

describe('image/svg+xml', () => {
  for (const [name, body] of Object.entries(RULES)) {
    test(`${name}: a rect a tile, its kind from the JSON's block map, hatching kept`, async () => {
      const { r, svg } = await answers(body);
      const { tiles, hatched, legend } = svgTiles(svg);
      const bm = r.block_map, nQ = r.visible.length, nK = r.visible[0].length;
      assert.equal(tiles.length, bm.tiles.flat().length);
      const seen = new Set();
      const side = tiles.map((t) => t);
      for (const t of side) {
        const [tr, tc] = t.at.split(' ').map(Number);
        seen.add(t.at);
        assert.equal(t.kind, KIND[bm.tiles[tr][tc]], `tile ${t.at}`);
        assert.equal(t.title, `tile (${tr}, ${tc}): ${KIND[bm.tiles[tr][tc]]}`);
      }
      assert.equal(seen.size, tiles.length, 'each tile once');
      // Sizes in cells: the tiles of one row (column) share a height (width) and the last
      // may be smaller, as the map's last tiles are.
      const byAt = Object.fromEntries(tiles.map((t) => [t.at, t]));
      const cellsQ = (tr) => Math.min(bm.block[0], nQ - tr * bm.block[0]);
      const cellsK = (tc) => Math.min(bm.block[1], nK - tc * bm.block[1]);
      const t00 = byAt['0 0'];
      const inset = t00.w < cellsK(0) * 8 ? 0 : 1; // as svg.c: 1 px each side when there is room
      const cell = (t00.w + 2 * inset) / cellsK(0);
      for (const t of tiles) {
        const [tr, tc] = t.at.split(' ').map(Number);
        assert.equal(t.w + 2 * inset, cellsK(tc) * cell, `width of ${t.at}`);
        assert.equal(t.h + 2 * inset, cellsQ(tr) * cell, `height of ${t.at}`);
        assert.equal(t.x - t00.x, tc * bm.block[1] * cell);
        assert.equal(t.y - t00.y, tr * bm.block[0] * cell);
      }
      // Every blocked cell is still hatched (no row here is fully masked).
      assert.equal(hatched, r.visible.flat().filter((x) => x === 0).length);
      assert.deepEqual(legend.slice(0, 3), ['full', 'partial', 'empty']);
      assert.equal(legend[3], `tiles of ${bm.block[0]} x ${bm.block[1]} (block_map); sparsity ` +
        `${Number(bm.sparsity.toFixed(4))}`);
    });
  }

  test('no tiles unless block_map is included, nor with rows', async () => {
    for (const body of [{ ...RULES.chunk, include: ['weights', 'visible'] },
      { ...RULES.chunk, include: ['block_map'], rows: [0, 1] }]) {
      const res = await postJson(s.port, '/v1/attention?format=svg', body);
      assert.equal(res.status, 200);
      const { tiles, legend } = svgTiles(res.body);
      assert.equal(tiles.length, 0);
      assert.equal(legend.length, 0);
    }
  });

  test('in Korean with ?lang=ko', async () => {
    const { r, svg } = await answers(RULES.documents, '?lang=ko');
    const { tiles, legend } = svgTiles(svg);
    const ko = { 0: '비어 있음', 1: '일부', 2: '가득 참' };
    for (const t of tiles) {
      const [tr, tc] = t.at.split(' ').map(Number);
      assert.equal(t.title, `타일 (${tr}, ${tc}): ${ko[r.block_map.tiles[tr][tc]]}`);
    }
    assert.deepEqual(legend.slice(0, 3), ['가득 참', '일부', '비어 있음']);
    assert.match(legend[3], /^타일 2 x 2 \(block_map\), 희소도 0\.\d+$/);
    assert.match(svg, /2 documents|문서 2 개/);
  });
});
