// tests/http/experiments.test.mjs — the second note's experiment table and heatmap
// options. /v1/attention/batch?format=text writes a line per item and query (the item's
// name, the query, the winning key or "tie", its weight, the change from the first
// item), here checked against the same table built in this file from a naive softmax;
// `heatmap: {vmin, vmax, title}` sets the SVG's colour scale ("auto": the largest
// weight drawn, every head together) and title, checked against matplotlib's Blues ends.

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

const LABELS = { queries: ['Q1', 'Q2', 'Q3'], keys: ['사과', '사람', '과일'] };
const BASE = {
  q: [[1, 0], [0, 1], [0.5, 0.5]], k: [[1, 0], [0, 1], [0.8, 0.2]], v: [[10, 0], [0, 20], [8, 4]],
  scale: 1, round: 2, labels: LABELS,
};
/* The note's three experiments, named as its table names them. */
const ITEMS = [
  { name: '기본', ...BASE },
  { name: '1 Q1 크기 증가', ...BASE, q: [[2, 0], [0, 1], [0.5, 0.5]] },
  { name: '2 Q3 방향 변경', ...BASE, q: [[1, 0], [0, 1], [0.9, 0.1]] },
  { name: '3 Key 방향 반전', ...BASE, k: [[-1, 0], [0, 1], [0.8, 0.2]] },
];

function naiveWeights({ q, k, scale }) {
  return q.map((row) => {
    const sc = k.map((key) => key.reduce((a, x, c) => a + x * row[c], 0) * scale);
    const m = Math.max(...sc);
    const e = sc.map((x) => Math.exp(x - m));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  });
}
const tiedOf = (row) => {
  const m = Math.max(...row);
  return row.map((w, j) => (m - w <= 1e-9 * m ? j : -1)).filter((j) => j >= 0);
};

/* The table as the note would fill it in by hand, from the naive weights. */
function expectedRows(items) {
  const base = naiveWeights(items[0]);
  const rows = [];
  items.forEach((item, n) => {
    naiveWeights(item).forEach((w, i) => {
      const tied = tiedOf(w);
      const key = tied.length > 1 ? 'tie' : item.labels.keys[tied[0]];
      let change = '(the base)';
      if (n > 0) {
        const bt = tiedOf(base[i]);
        if (bt.length > 1 && tied.length > 1) change = bt.join() === tied.join() ? 'still a tie' : 'tied keys changed';
        else if (bt.length > 1) change = `tie broken: ${key} wins`;
        else if (tied.length > 1) change = 'now a tie';
        else if (bt[0] !== tied[0]) change = `winner changed: ${item.labels.keys[bt[0]]} -> ${key}`;
        else {
          const d = Math.round((w[tied[0]] - base[i][bt[0]]) * 100) / 100;
          change = d === 0 ? 'no change' : `same key, weight ${d > 0 ? '+' : ''}${d.toFixed(2)}`;
        }
      }
      rows.push([item.name, item.labels.queries[i], key, Math.max(...w).toFixed(2), change]);
    });
  });
  return rows;
}

const cellsOf = (line) => line.trim().split(/ {2,}/);

describe('/v1/attention/batch?format=text', () => {
  test("the second note's experiment table, ties as ties", async () => {
    const r = await postJson(s.port, '/v1/attention/batch?format=text', { items: ITEMS });
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /^text\/plain/);
    const lines = r.body.trimEnd().split('\n');
    assert.deepEqual(cellsOf(lines[0]), ['experiment', 'query', 'key', 'weight', 'change']);
    const want = expectedRows(ITEMS);
    assert.deepEqual(lines.slice(1).map(cellsOf), want);
    /* The rows the notes discuss, spelled out. */
    assert.deepEqual(want[2], ['기본', 'Q3', 'tie', '0.33', '(the base)']);
    assert.deepEqual(want[8], ['2 Q3 방향 변경', 'Q3', '사과', '0.43', 'tie broken: 사과 wins']);
    assert.deepEqual(want[9], ['3 Key 방향 반전', 'Q1', '과일', '0.62', 'winner changed: 사과 -> 과일']);
    assert.deepEqual(want[11], ['3 Key 방향 반전', 'Q3', 'tie', '0.42', 'tied keys changed']);
  });

  test('Accept: text/plain too; names echoed in JSON; a failed item is one line', async () => {
    const body = JSON.stringify({ items: [{ name: 'a', q: [[1, 0]], k: [[1, 0], [0, 1]], v: [[1], [2]] },
      { q: [[1, 0]], k: [[1, 0, 0]], v: [[1]] }, { q: [1, 0], k: [[1, 0], [0, 1]], v: [[1], [2]], round: 3 }] });
    const t = await request(s.port, {
      method: 'POST', path: '/v1/attention/batch', headers: { Accept: 'text/plain' }, body,
    });
    assert.equal(t.status, 200);
    const rows = t.body.trimEnd().split('\n').slice(1).map(cellsOf);
    assert.deepEqual(rows[0], ['a', 'q0', 'k0', '0.6698', '(the base)']);
    assert.deepEqual(rows[1], ['item 1', 'failed: 422 shape-mismatch']);
    assert.deepEqual(rows[2], ['item 2', 'q', 'k0', '0.670', 'no change']);
    const j = await request(s.port, { method: 'POST', path: '/v1/attention/batch', body });
    assert.deepEqual(j.json().results.map((x) => [x.status, x.name]), [[200, 'a'], [422, undefined], [200, undefined]]);
    const bad = await postJson(s.port, '/v1/attention/batch', { items: [{ ...BASE, name: 7 }] });
    const item = bad.json().results[0];
    assert.equal(item.status, 422);
    assert.equal(item.body.errors[0].pointer, '/items/0/name');
    assert.ok(item.body.errors[0].hint.length > 0);
    assertProblem(assert, await postJson(s.port, '/v1/attention/batch?format=svg', { items: ITEMS }), 406);
  });
});

const svg = (path, body) => request(s.port, { method: 'POST', path: `${path}?format=svg`, body: JSON.stringify(body) });
const ticks = (text) => [...text.matchAll(/font-size="11" fill="#1a1a1a">([0-9.]+)<\/text>/g)].map((m) => m[1]);
const fills = (text) => [...text.matchAll(/<rect x="\d+" y="\d+" width="(\d+)" height="\1" fill="(#[0-9a-f]{6})"/g)].map((m) => m[2]);
const DARKEST = '#08306b'; // matplotlib's Blues at 1
const PALEST = '#f7fbff'; // and at 0

describe('heatmap options', () => {
  test('the default stays Blues from 0 to 1; vmax "auto" darkens the largest weight drawn', async () => {
    const plain = await svg('/v1/attention', BASE);
    assert.deepEqual(ticks(plain.body), ['0.0', '0.2', '0.4', '0.6', '0.8', '1.0']);
    assert.ok(!fills(plain.body).includes(DARKEST));
    const auto = await svg('/v1/attention', { ...BASE, heatmap: { vmax: 'auto', title: 'Query별 Attention 가중치' } });
    assert.equal(auto.status, 200);
    const largest = Math.max(...naiveWeights(BASE).flat()); // Q2's 0.55
    assert.deepEqual(ticks(auto.body).at(-1), largest.toFixed(2));
    assert.equal(fills(auto.body).filter((f) => f === DARKEST).length, 1);
    assert.match(auto.body, /<title>Query별 Attention 가중치 \(softmax/);
    const both = await svg('/v1/attention', { ...BASE, heatmap: { vmin: 'auto', vmax: 'auto' } });
    assert.equal(fills(both.body).filter((f) => f === PALEST).length, 1); // the smallest weight
    const fixed = await svg('/v1/attention', { ...BASE, heatmap: { vmin: 0.2, vmax: 0.4 } });
    assert.deepEqual(ticks(fixed.body), ['0.20', '0.24', '0.28', '0.32', '0.36', '0.40']);
  });

  test('multi-head: one scale for every panel, "auto" over every head and the mean', async () => {
    const body = { heads: 4, random: { seed: 2, n: 6, d_model: 8 }, include: ['weights', 'weights_mean'] };
    const j = (await postJson(s.port, '/v1/multihead', body)).json();
    const largest = Math.max(...j.weights.flat(2), ...j.weights_mean.flat());
    const r = await svg('/v1/multihead', { ...body, heatmap: { vmax: 'auto' } });
    assert.equal(ticks(r.body).at(-1), largest.toFixed(2));
    assert.equal(fills(r.body).filter((f) => f === DARKEST).length, 1);
    assert.ok(largest < 0.5, 'the default scale would leave these nearly white');
  });

  test('bad heatmap options: 422 naming the member, with a hint', async () => {
    for (const [heatmap, type, pointer] of [
      [{ vmin: 2 }, 'invalid-value', '/heatmap/vmin'],
      [{ vmax: 'max' }, 'invalid-value', '/heatmap/vmax'],
      [{ vmin: 0.5, vmax: 0.4 }, 'invalid-value', '/heatmap/vmax'],
      [{ title: 5 }, 'invalid-value', '/heatmap/title'],
      [{ title: 'x'.repeat(201) }, 'invalid-value', '/heatmap/title'],
      [{ vmid: 0 }, 'unknown-field', '/heatmap/vmid'],
      ['auto', 'invalid-value', '/heatmap'],
    ]) {
      for (const path of ['/v1/attention', '/v1/multihead']) {
        const body = path === '/v1/attention' ? { ...BASE, heatmap } : { heads: 1, random: { seed: 1, n: 2, d_model: 2 }, heatmap };
        const p = assertProblem(assert, await postJson(s.port, path, body), 422);
        assert.equal(p.type, `/problems/${type}`, JSON.stringify(heatmap));
        assert.equal(p.errors[0].pointer, pointer, JSON.stringify(heatmap));
        assert.ok(p.errors[0].hint.length > 0, JSON.stringify(heatmap));
      }
    }
    assert.equal((await postJson(s.port, '/v1/attention', { ...BASE, heatmap: { title: '가'.repeat(200) } })).status, 200);
  });
});
