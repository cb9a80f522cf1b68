// tests/http/verify.test.mjs — POST /v1/verify (DESIGN.md, "Verify: a kernel's answer against
// the oracle"). Gold and naive come from /v1/attention (float64, and the same problem with
// precision {format, accumulate: "float32"}); each rule's verdict, bound and errors are
// recomputed here from DESIGN.md's formulas (atol from this file's own float16 and bfloat16
// rounding) and held against the answer. Candidates that must pass: the naive answer, gold
// rounded to the format. Candidates that must fail: zeros, a missing scale, a transposed K,
// one cell 10% off, a NaN. A loose allclose draws inadequate-tolerance; inputs the format
// cannot hold draw input-not-in-format. Bad input is a 422 naming the field.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { assertProblem, postJson, rng, startServer } from './lib.mjs';
import { matrix, roundTo } from './reference.mjs';

let srv;
before(async () => {
  srv = await startServer(['--log', 'off']);
});
after(async () => {
  await srv.stop();
});

const FORMATS = ['float16', 'bfloat16', 'float32'];

/** A problem whose inputs every format holds exactly (multiples of 1/16 in [-2, 2]). */
function problem(seed, nQ = 5, nK = 7, d = 4) {
  const r = rng(seed);
  const exact = (m) => m.map((row) => row.map((x) => Math.round(x * 16) / 16));
  return { q: exact(matrix(r, nQ, d)), k: exact(matrix(r, nK, d)), v: exact(matrix(r, nK, d)) };
}

const attention = async (body) => {
  const res = await postJson(srv.port, '/v1/attention', body);
  assert.equal(res.status, 200, res.body);
  return res.json();
};
const gold = (p) => attention({ ...p, include: ['output', 'lse'] });
const naive = (p, format) =>
  attention({ ...p, include: ['output', 'lse'], precision: { format, accumulate: 'float32' } });

const verify = async (body, status = 200) => {
  const res = await postJson(srv.port, '/v1/verify', body);
  assert.equal(res.status, status, res.body);
  return res.json();
};

const flat = (m) => (Array.isArray(m[0]) ? m.flat() : m);
const maxAbs = (a, b) => Math.max(...flat(a).map((x, i) => Math.abs(x - flat(b)[i])));
const meanAbs = (a, b) => flat(a).reduce((s, x, i) => s + Math.abs(x - flat(b)[i]), 0) / flat(a).length;
const mapCells = (m, f) => m.map((row, i) => row.map((x, j) => f(x, i, j)));

/** DESIGN.md's atol: 2·max|((g ⊕ 0.3) ⊖ 0.3) − g| over gold rounded to the format. */
function flashAtol(g, format) {
  let worst = 0;
  for (const x of flat(g)) {
    if (x === null) continue;
    const r = roundTo(x, format);
    const back = roundTo(roundTo(r + 0.3, format) - 0.3, format);
    worst = Math.max(worst, Math.abs(back - r));
  }
  return 2 * worst;
}

const near = (got, want, what) =>
  assert.ok(Math.abs(got - want) <= 1e-15 * Math.max(1, Math.abs(want)), `${what}: ${got} vs ${want}`);

test('flash: the naive answer and gold in the format pass, by the bound recomputed here', async () => {
  for (const [i, format] of FORMATS.entries()) {
    const p = problem(10 + i);
    const g = await gold(p), n = await naive(p, format);
    const bound = 2 * maxAbs(n.output, g.output) + flashAtol(g.output, format);
    for (const [what, cand] of [['naive', n.output], ['gold in the format', mapCells(g.output, (x) => roundTo(x, format))]]) {
      const ans = await verify({ ...p, format, candidate: { output: cand, lse: n.lse } });
      const c = ans.checks[0];
      assert.equal(c.name, 'output');
      assert.deepEqual(c.shape, [5, 4]);
      near(c.bound, bound, `${format} ${what} bound`);
      near(c.max_abs_error, maxAbs(cand, g.output), `${format} ${what} max error`);
      near(c.mean_abs_error, meanAbs(cand, g.output), `${format} ${what} mean error`);
      near(c.naive_max_abs_error, maxAbs(n.output, g.output), `${format} naive error`);
      assert.equal(c.pass, c.max_abs_error <= bound, `${format} ${what}`);
      assert.equal(ans.verdict, 'pass', `${format} ${what}: ${JSON.stringify(c)}`);
      assert.equal(ans.checks[1].name, 'lse');
      assert.equal(ans.checks[1].pass, true);
      assert.deepEqual(ans.warnings, []);
    }
  }
});

test('flash: zeros, a missing scale, a transposed K, one cell 10% off and a NaN fail', async () => {
  const format = 'float16';
  const p = problem(20, 4, 4, 4);
  const g = await gold(p), n = await naive(p, format);
  const noScale = await naive({ ...p, scale: 1 }, format);
  const kT = await naive({ ...p, k: p.k[0].map((_, c) => p.k.map((row) => row[c])) }, format);
  const off = mapCells(n.output, (x, i, j) => (i === 2 && j === 1 ? x * 1.1 + 0.01 : x));
  const nan = mapCells(n.output, (x, i, j) => (i === 3 && j === 0 ? 'NaN' : x));
  const bound = 2 * maxAbs(n.output, g.output) + flashAtol(g.output, format);
  const cases = [
    ['zeros', mapCells(n.output, () => 0)],
    ['no scale', noScale.output],
    ['K transposed', kT.output],
    ['one cell off', off],
  ];
  for (const [what, cand] of cases) {
    const ans = await verify({ ...p, format, candidate: { output: cand } });
    const c = ans.checks[0];
    assert.equal(ans.verdict, 'fail', what);
    assert.ok(maxAbs(cand, g.output) > bound, `${what} is outside the bound`);
    near(c.max_abs_error, maxAbs(cand, g.output), `${what} max error`);
    // the worst cell is the largest |cand − gold| found here
    const errs = flat(cand).map((x, k) => [Math.abs(x - flat(g.output)[k]), k]).sort((a, b) => b[0] - a[0]);
    assert.deepEqual(c.worst[0].cell, [Math.floor(errs[0][1] / 4), errs[0][1] % 4], what);
    assert.equal(c.worst[0].gold, flat(g.output)[errs[0][1]]);
    assert.equal(c.worst[0].naive, flat(n.output)[errs[0][1]]);
    assert.ok(c.worst.length <= 10);
  }
  const ans = await verify({ ...p, format, candidate: { output: nan } });
  const c = ans.checks[0];
  assert.equal(ans.verdict, 'fail');
  assert.equal(c.nan_cells, 1);
  assert.equal(c.max_abs_error, 'Infinity');
  assert.deepEqual(c.worst[0].cell, [3, 0]);
  assert.equal(c.worst[0].candidate, 'NaN');
  // JSON.stringify writes NaN as null: the same cell, the same verdict
  const viaNull = await verify({ ...p, format, candidate: { output: JSON.parse(JSON.stringify(mapCells(nan, (x) => (x === 'NaN' ? NaN : x)))) } });
  assert.equal(viaNull.checks[0].nan_cells, 1);
});

test('flex: mean errors against fudge times the naive mean', async () => {
  const format = 'bfloat16';
  const p = problem(30);
  const g = await gold(p), n = await naive(p, format);
  const scaled = (t) => mapCells(g.output, (x, i, j) => x + t * (n.output[i][j] - x));
  const naiveMean = meanAbs(n.output, g.output);
  assert.ok(naiveMean > 0);
  for (const [t, fudge] of [[1, undefined], [1.05, undefined], [1.2, undefined], [1.2, 1.3], [2, 1.5]]) {
    const cand = scaled(t);
    const body = { ...p, format, rule: 'flex', candidate: { output: cand } };
    if (fudge !== undefined) body.fudge = fudge;
    const ans = await verify(body);
    const c = ans.checks[0];
    const allowed = (fudge ?? 1.1) * naiveMean;
    near(c.bound, allowed, `t ${t} bound`);
    near(c.measured, meanAbs(cand, g.output), `t ${t} measured`);
    assert.equal(c.pass, meanAbs(cand, g.output) <= allowed, `t ${t} fudge ${fudge}`);
    assert.deepEqual(ans.rule, { name: 'flex', fudge: fudge ?? 1.1 });
  }
});

test('allclose: cell by cell; a loose atol draws inadequate-tolerance', async () => {
  const format = 'float16';
  const p = problem(40);
  const small = { ...p, v: p.v.map((row) => row.map((x) => x / 4)) }; // |output| ≤ 0.5
  const g = await gold(small), n = await naive(small, format);
  const tight = await verify({ ...small, format, rule: { rtol: 1e-3, atol: 1e-3 }, candidate: { output: n.output } });
  const ok = flat(n.output).every((x, k) => Math.abs(x - flat(g.output)[k]) <= 1e-3 + 1e-3 * Math.abs(flat(g.output)[k]));
  assert.equal(tight.checks[0].pass, ok);
  assert.deepEqual(tight.warnings, []);
  const loose = await verify({ ...small, format, rule: { atol: 1 }, candidate: { output: mapCells(g.output, () => 0) } });
  assert.equal(loose.verdict, 'pass', 'an all-zero output passes atol 1');
  assert.deepEqual(loose.rule, { name: 'allclose', rtol: 1e-5, atol: 1 });
  const w = loose.warnings.find((x) => x.code === 'inadequate-tolerance');
  assert.ok(w, JSON.stringify(loose.warnings));
  assert.equal(w.tensor, 'output');
  assert.equal(w.constant, 0);
  // flash on the same problem is not fooled
  const flash = await verify({ ...small, format, candidate: { output: mapCells(g.output, () => 0) } });
  assert.equal(flash.verdict, 'fail');
  assert.deepEqual(flash.warnings, []);
});

test('lse: a fully masked row is −inf, and FlashAttention 2\'s +inf is accepted too', async () => {
  const p = { ...problem(50, 3, 4, 4), mask: [[1, 1, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]] };
  const g = await gold(p), n = await naive(p, 'float16');
  assert.equal(g.lse[1], null);
  for (const row1 of [null, '-Infinity', 'Infinity']) {
    const lse = n.lse.map((x, i) => (i === 1 ? row1 : x));
    const ans = await verify({ ...p, format: 'float16', candidate: { output: n.output, lse }, include: ['gold'] });
    assert.equal(ans.checks[1].pass, true, `row 1 as ${row1}`);
    assert.deepEqual(ans.gold.lse, g.lse);
    assert.deepEqual(ans.gold.output, g.output);
  }
  const wrong = await verify({ ...p, format: 'float16', candidate: { output: n.output, lse: n.lse.map((x) => x ?? 0) } });
  assert.equal(wrong.checks[1].pass, false);
  assert.deepEqual(wrong.checks[1].worst[0].cell, [1]);
  assert.equal(wrong.checks[1].worst[0].gold, '-Infinity');
});

test('input-not-in-format names the first input cell the format cannot hold', async () => {
  const p = problem(60);
  p.k[2][3] = 0.1;
  const n = await naive(p, 'float16');
  const ans = await verify({ ...p, format: 'float16', candidate: { output: n.output } });
  const w = ans.warnings.filter((x) => x.code === 'input-not-in-format');
  assert.equal(w.length, 1, JSON.stringify(ans.warnings));
  assert.equal(w[0].input, 'k');
  assert.deepEqual(w[0].cell, [2, 3]);
  assert.equal(w[0].value, 0.1);
  const exact = await verify({ ...p, format: 'float64', candidate: { output: (await gold(p)).output } });
  assert.deepEqual(exact.warnings, []);
  assert.equal(exact.verdict, 'pass');
  assert.equal(exact.checks[0].max_abs_error, 0);
});

test('float64 gradients: the float64 backward itself passes, a gradient off fails', async () => {
  const p = problem(70);
  const dO = matrix(rng(71), 5, 4, 1);
  const back = await attention({ ...p, backward: { grad_output: dO }, include: ['output', 'grad_q', 'grad_k', 'grad_v'] });
  const body = { ...p, backward: { grad_output: dO }, format: 'float64',
    candidate: { output: back.output, grad_q: back.grad_q, grad_k: back.grad_k, grad_v: back.grad_v } };
  const ans = await verify(body);
  assert.equal(ans.verdict, 'pass');
  assert.deepEqual(ans.checks.map((c) => c.name), ['output', 'grad_q', 'grad_k', 'grad_v']);
  assert.deepEqual(ans.checks[2].shape, [7, 4]);
  const bad = await verify({ ...body, candidate: { ...body.candidate, grad_k: mapCells(back.grad_k, (x, i, j) => (i === 6 && j === 2 ? x + 1e-3 : x)) } });
  assert.equal(bad.verdict, 'fail');
  assert.deepEqual(bad.checks[2].worst[0].cell, [6, 2]);
});

test('float16 gradients: 3 times the naive error plus atol; the naive backward passes, one cell off fails', async () => {
  const p = problem(75);
  const dO = matrix(rng(76), 5, 4, 1).map((row) => row.map((x) => Math.round(x * 16) / 16));
  const grads = ['grad_q', 'grad_k', 'grad_v'];
  const ask = (extra) => attention({ ...p, backward: { grad_output: dO }, include: ['output', ...grads], ...extra });
  const g = await ask({}), n = await ask({ precision: { format: 'float16', accumulate: 'float32' } });
  const candidate = { output: n.output, grad_q: n.grad_q, grad_k: n.grad_k, grad_v: n.grad_v };
  const ans = await verify({ ...p, backward: { grad_output: dO }, format: 'float16', candidate });
  assert.equal(ans.verdict, 'pass', JSON.stringify(ans.checks.map((c) => [c.name, c.measured, c.bound])));
  for (const [i, name] of grads.entries()) {
    const c = ans.checks[i + 1];
    assert.equal(c.name, name);
    near(c.bound, 3 * maxAbs(n[name], g[name]) + flashAtol(g[name], 'float16'), `${name} bound`);
    near(c.max_abs_error, maxAbs(n[name], g[name]), `${name} error`);
  }
  const off = mapCells(n.grad_v, (x, i, j) => (i === 4 && j === 1 ? x * 1.1 + 0.05 : x));
  const bad = await verify({ ...p, backward: { grad_output: dO }, format: 'float16', candidate: { ...candidate, grad_v: off } });
  assert.equal(bad.verdict, 'fail');
  assert.deepEqual(bad.checks.map((c) => c.pass), [true, true, true, false]);
  assert.deepEqual(bad.checks[3].worst[0].cell, [4, 1]);
});

test('any length in float64 (gold streams); a low format within --max-cells, said with the way out', async () => {
  const random = { seed: 3, n_q: 4096, n_k: 4096, d_k: 2, d_v: 2 }; // 2^24 cells > --max-cells
  const zeros = Array.from({ length: 4096 }, () => [0, 0]);
  const g = await attention({ random, include: ['output'] });
  const exact = await verify({ random, format: 'float64', candidate: { output: g.output } });
  assert.equal(exact.verdict, 'pass');
  assert.equal(exact.checks[0].max_abs_error, 0);
  const gb = await attention({ random, backward: { seed: 5 }, include: ['output', 'lse', 'grad_q', 'grad_k', 'grad_v'] });
  const grads = await verify({ random, backward: { seed: 5 }, format: 'float64',
    candidate: { output: gb.output, lse: gb.lse, grad_q: gb.grad_q, grad_k: gb.grad_k, grad_v: gb.grad_v } });
  assert.equal(grads.verdict, 'pass', 'the streamed backward is its own gold');
  const off = await verify({ random, format: 'float64', candidate: { output: zeros } });
  assert.equal(off.verdict, 'fail');
  near(off.checks[0].max_abs_error, maxAbs(zeros, g.output), 'zeros at n = 4096');
  const res = await postJson(srv.port, '/v1/verify', { random, format: 'float16', candidate: { output: zeros } });
  const prob = assertProblem(assert, res, 422);
  assert.ok(prob.type.endsWith('limit-exceeded'));
  assert.equal(prob.errors[0].pointer, '/random/n_q');
  assert.match(prob.errors[0].hint, /naive reference in float16 keeps every \(n_q, n_k\) step.*float64 candidate/);
});

test('the text verdict fits a CI log, in English and Korean', async () => {
  const p = problem(80);
  const n = await naive(p, 'float16');
  const body = JSON.stringify({ ...p, format: 'float16', candidate: { output: mapCells(n.output, () => 0) } });
  for (const [lang, first, fail] of [['en', 'verify  FAIL  (rule flash, format float16)', 'FAIL'], ['ko', '검증  실패  (규칙 flash, 형식 float16)', '실패']]) {
    const res = await postJson(srv.port, `/v1/verify?format=text&lang=${lang}`, JSON.parse(body));
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^text\/plain/);
    const lines = res.body.trimEnd().split('\n');
    assert.equal(lines[0], first);
    assert.match(lines[1], new RegExp(`^output +\\(5, 4\\) +${fail}$`));
    assert.ok(lines.length <= 24, `one screen: ${lines.length} lines`);
  }
});

test('bad input: each a 4xx naming the field', async () => {
  const p = problem(90);
  const n = await naive(p, 'float16');
  const good = { ...p, format: 'float16', candidate: { output: n.output } };
  const cases = [
    [{ ...good, candidate: { output: n.output.slice(1) } }, '/candidate/output', 'shape-mismatch'],
    [{ ...good, candidate: { output: n.output, lse: [1, 2] } }, '/candidate/lse', 'shape-mismatch'],
    [{ ...good, candidate: { output: n.output, grad_q: n.output } }, '/candidate/grad_q', 'invalid-value'],
    [{ ...good, candidate: { lse: n.lse } }, '/candidate/output', 'missing-field'],
    [{ ...good, candidate: { output: n.output, dq: 1 } }, '/candidate/dq', 'unknown-field'],
    [{ ...good, candidate: { output: mapCells(n.output, (x, i) => (i === 1 ? 'big' : x)) } }, '/candidate/output/1/0', 'not-a-number'],
    [{ ...good, rule: 'strict' }, '/rule', 'invalid-value'],
    [{ ...good, rule: { rtol: -1 } }, '/rule/rtol', 'invalid-value'],
    [{ ...good, fudge: 2 }, '/fudge', 'invalid-value'],
    [{ ...good, rule: 'flex', fudge: 0 }, '/fudge', 'invalid-value'],
    [{ ...good, format: 'fp16' }, '/format', 'invalid-value'],
    [{ ...p, candidate: { output: n.output } }, '/format', 'missing-field'],
    [{ ...good, precision: { format: 'float16' } }, '/precision', 'invalid-value'],
    [{ ...good, rows: [0] }, '/rows', 'invalid-value'],
    [{ ...good, include: ['weights'] }, '/include/0', 'invalid-value'],
    [{ ...good, candidat: {} }, '/candidat', 'unknown-field'],
    [{ ...good, k: p.k.slice(1) }, '/v', 'shape-mismatch'],
  ];
  for (const [body, pointer, type] of cases) {
    const res = await postJson(srv.port, '/v1/verify', body);
    const prob = assertProblem(assert, res, 422);
    assert.equal(prob.errors[0].pointer, pointer, `${pointer}: ${prob.detail}`);
    assert.ok(prob.type.endsWith(type), `${pointer}: ${prob.type}`);
    assert.ok(prob.errors[0].hint || pointer === '/v', `${pointer} has a hint`);
  }
});
