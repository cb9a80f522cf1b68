// tests/http/limits.test.mjs — small bodies that ask for huge work are refused before
// any memory is spent on them: 422 in a blink, and the server's peak RSS (VmHWM) stays
// where it was. Every allocation that a request's numbers size is checked against
// --max-cells first (api/request/fields.c for inputs, check_limits for the trace), and their
// sum with the answer against --max-request-bytes (api/http/admission.h).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import {
  SEED, assertProblem, postJson, rawConnect, request, requestBytes, sleep, startServer,
} from './lib.mjs';
import { body as v2Body, tensor as v2Tensor } from './v2_helpers.mjs';

/** The process's peak resident set, in KiB. */
const peakKiB = (pid) =>
  Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m)[1]);

/** The process's resident set now, in KiB. */
const residentKiB = (pid) =>
  Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m)[1]);

const rows = (n, row) => Array.from({ length: n }, () => row);

// Each body is at most a few dozen KiB; honoured, each would need hundreds of MiB.
const HUGE = [
  ['scores of 3000 x 3000', '/v1/attention',
    { q: rows(3000, [0]), k: rows(3000, [0]), v: rows(3000, [0]) }, '/q'],
  ['an output of 3000 x 3000', '/v1/attention',
    { q: rows(3000, [0]), k: [[0]], v: [Array(3000).fill(0)] }, '/q'],
  ['a multihead input made up by random, 10^6 x 4096', '/v1/multihead',
    { heads: 1, random: { seed: 1, n: 1000000, d_model: 4096 } }, null],
  ['multihead scores of 100000 x 100000', '/v1/multihead',
    { heads: 1, random: { seed: 1, n: 100000, d_model: 1 } }, null],
  ['a batch of 8 items, each over the limit', '/v1/attention/batch',
    { items: rows(8, { q: rows(2100, [0]), k: rows(2100, [0]), v: rows(2100, [0]) }) }, null],
  // Every matrix of these is within --max-cells; their sum with the answer is not
  // (--max-request-bytes, 512 MiB by default). The first is 55 bytes whose answer alone
  // is 703 MB; served, the second peaked at 803 MB of RSS.
  ['the 55-byte multihead with a 703 MB answer', '/v1/multihead',
    { heads: 1, random: { seed: 1, n: 2048, d_model: 1024 } }, '/random/n'],
  ['multihead n = 1536, d_model = 1536', '/v1/multihead',
    { heads: 1, random: { seed: 1, n: 1536, d_model: 1536 } }, '/random/n'],
  // About 250 MB each (four 1400 x 1400 steps held and written): two fit, the third passes.
  ['a batch whose items fit alone but not together', '/v1/attention/batch',
    { items: rows(3, { q: rows(1400, [0]), k: rows(1400, [0]), v: rows(1400, [0]) }) },
    '/items/2'],
];

test('small bodies that ask for huge work: 422 at once, peak memory unchanged', async (t) => {
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL')); // a failed assertion must not leave it running
  // Warm up: the first request maps OpenBLAS's buffers and the like.
  await postJson(s.port, '/v1/attention', { q: [[1]], k: [[1]], v: [[1]] });
  const before = peakKiB(s.proc.pid);
  for (const [what, path, body, pointer] of HUGE) {
    const text = JSON.stringify(body);
    assert.ok(text.length < 256 * 1024, `${what}: the body is small (${text.length} bytes)`);
    const t0 = performance.now();
    const r = await request(s.port, {
      method: 'POST', path, headers: { 'Content-Type': 'application/json' }, body: text,
    });
    const ms = performance.now() - t0;
    assert.ok(r.status === 422 || r.status === 200, `${what}: ${r.status} ${r.body.slice(0, 300)}`);
    if (path === '/v1/attention/batch' && r.status === 200) {
      // A batch answers per item: each item must be the 422, not a result.
      for (const item of r.json().results) assert.equal(item.status, 422, what);
    } else {
      const p = assertProblem(assert, r, 422);
      if (pointer) {
        assert.equal(p.type, '/problems/limit-exceeded', `${what}: ${r.body}`);
        assert.equal(p.errors[0].pointer, pointer, what);
      }
    }
    assert.ok(ms < 2000, `${what}: answered in ${ms.toFixed(0)} ms`);
  }
  const health = await request(s.port, { path: '/healthz' });
  assert.equal(health.status, 200, 'the server still answers');
  const grown = peakKiB(s.proc.pid) - before;
  console.log(`# peak RSS grew by ${grown} KiB over ${HUGE.length} huge asks`);
  // Honoured, the smallest of these asks would touch over 280 MiB (3000 x 3000 doubles, four
  // times); the bound leaves room for sanitizer builds, whose shadow memory adds tens of MiB.
  assert.ok(grown < 128 * 1024, `peak RSS grew by ${grown} KiB`);
  await s.stop();
});

test('--max-cells is the limit: one cell over it is refused, the limit itself is served', async (t) => {
  const s = await startServer(['--max-cells', '1600', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const at = await postJson(s.port, '/v1/attention',
    { q: rows(40, [1]), k: rows(40, [1]), v: rows(40, [1]), include: ['output'] });
  assert.equal(at.status, 200, at.body);
  const over = await postJson(s.port, '/v1/attention',
    { q: rows(41, [1]), k: rows(40, [1]), v: rows(40, [1]) });
  const p = assertProblem(assert, over, 422);
  assert.equal(p.type, '/problems/limit-exceeded');
  assert.match(p.detail, /1640 cells/);
  assert.match(p.detail, /1600/);
  await s.stop();
});

// The heap is kept between requests (server/main.c, srv_malloc_policy), but a burst of
// concurrent large answers leaves the arenas holding what it needed at once, free but
// resident. After a quiet second the server gives it back (malloc_trim). Twelve answers
// of 26 MB at once (multihead, n = 360, from a body of a few dozen bytes; under the
// 32 MiB past which glibc maps a block on its own) take the peak past 200 MiB; within
// five quiet seconds the resident set must be under 64 MiB. Not under the
// sanitizers: their allocators keep freed memory in pools of their own (ASan's
// quarantine), which malloc_trim does not reach.
test('after a burst, a quiet server gives its free memory back', {
  skip: process.env.ATTND_SANITIZER ? `${process.env.ATTND_SANITIZER}'s allocator is not glibc's` : false,
}, async (t) => {
  const s = await startServer(['--log', 'off', '--threads', '2']);
  t.after(() => s.proc.kill('SIGKILL'));
  const body = JSON.stringify({ heads: 2, random: { seed: 1, n: 360, d_model: 64 } });
  const answers = await Promise.all(Array.from({ length: 12 }, () => request(s.port, {
    method: 'POST', path: '/v1/multihead', headers: { 'Content-Type': 'application/json' }, body,
  })));
  for (const a of answers) assert.equal(a.status, 200);
  const peak = peakKiB(s.proc.pid);
  assert.ok(peak > 200 * 1024, `the burst peaked at only ${peak} KiB: nothing to show`);
  let now = residentKiB(s.proc.pid);
  for (let waited = 0; waited < 5000 && now >= 64 * 1024; waited += 100) {
    await sleep(100);
    now = residentKiB(s.proc.pid);
  }
  console.log(`# resident at the burst's peak ${peak} KiB, after a quiet while ${now} KiB`);
  assert.ok(now < 64 * 1024, `still ${now} KiB resident five seconds after the burst`);
  // And the server still answers.
  assert.equal((await postJson(s.port, '/v1/attention', { q: [[1]], k: [[1]], v: [[1]] })).status, 200);
  await s.stop();
});

// A trace of 32 MiB or more is kept when freed, for the next request that fits in it
// (core/memory.h: glibc would unmap it, and the kernel zero fresh pages for the next),
// and given back with the rest after a quiet second. n = 1,100, every step asked of
// V2 in binary: a 38.7 MB trace from a 1.7 MB body. Not under the sanitizers (their
// allocators keep freed memory in pools of their own).
test('a large trace is kept for the next request, and given back after a quiet second', {
  skip: process.env.ATTND_SANITIZER ? `${process.env.ATTND_SANITIZER}'s allocator is not glibc's` : false,
}, async (t) => {
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const n = 1100, d = 64;
  const m = (seed) => Array.from({ length: n }, (_, i) =>
    Array.from({ length: d }, (_, j) => ((((i + 1) * 7 + (j + 1) * seed) % 13) - 6) / 8));
  const b = v2Body([v2Tensor('Q', m(3)), v2Tensor('K', m(5)), v2Tensor('V', m(11))],
    ['SCORES', 'SCALED', 'MASKED', 'WEIGHTS', 'OUTPUT'], undefined, true);
  const idle = residentKiB(s.proc.pid);
  const first = await requestBytes(s.port, { path: '/v2/models/attention/infer', ...b });
  assert.equal(first.status, 200);
  const kept = residentKiB(s.proc.pid) - idle;
  assert.ok(kept > 30 * 1024, `only ${kept} KiB more resident after the answer: the trace was not kept`);
  const again = await requestBytes(s.port, { path: '/v2/models/attention/infer', ...b });
  assert.ok(again.status === 200 && Buffer.compare(again.raw, first.raw) === 0,
    'the second answer, from the kept block, is the first byte for byte');
  let now = residentKiB(s.proc.pid) - idle;
  for (let waited = 0; waited < 5000 && now >= 16 * 1024; waited += 100) {
    await sleep(100);
    now = residentKiB(s.proc.pid) - idle;
  }
  console.log(`# resident above idle: ${kept} KiB after the answer, ${now} KiB after a quiet while`);
  assert.ok(now < 16 * 1024, `still ${now} KiB above idle five seconds after the answer`);
  await s.stop();
});

/** attnd_memory_held_bytes and attnd_memory_budget_bytes from /metrics. */
async function memoryGauges(port) {
  const text = (await request(port, { path: '/metrics' })).body;
  const gauge = (name) => Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))[1]);
  return { held: gauge('attnd_memory_held_bytes'), budget: gauge('attnd_memory_budget_bytes') };
}

/**
 * Polls the gauges until ok(held) or a minute passes (the sanitizers' builds compute
 * the 26 MB answer below in seconds, not milliseconds); returns the last held.
 */
async function heldWhen(port, ok) {
  let { held } = await memoryGauges(port);
  for (let waited = 0; waited < 60000 && !ok(held); waited += 50) {
    await sleep(50);
    ({ held } = await memoryGauges(port));
  }
  return held;
}

// An answer a client does not read stays in memory, charged to the budget until it is
// sent. With a budget of 8 MiB, one unread answer of 26 MB (multihead, n = 360, from a
// body of a few dozen bytes: admitted, since it is alone) leaves no room: new work is
// 503 with Retry-After, whether it is refused before its body is stored or once it is
// parsed; once the slow client reads, the memory is given back and work is taken again.
test('--max-memory: unread answers make new work wait, 503 with Retry-After', async (t) => {
  // A request limit above the budget, set on purpose: such a request is served alone.
  const s = await startServer(['--log', 'off', '--threads', '2', '--max-memory', String(8 << 20),
    '--max-request-bytes', String(64 << 20)]);
  t.after(() => s.proc.kill('SIGKILL'));
  const slow = await rawConnect(s.port);
  slow.sock.pause(); // read nothing: the answer waits in the server
  const body = JSON.stringify({ heads: 2, random: { seed: 1, n: 360, d_model: 64 } });
  await slow.write('POST /v1/multihead HTTP/1.1\r\nHost: attnd\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n\r\n${body}`);
  const held = await heldWhen(s.port, (h) => h > 20e6);
  assert.ok(held > 20e6, `the unread answer is charged (${held} bytes held)`);
  assert.equal((await memoryGauges(s.port)).budget, 8 << 20);

  // Parsed, then refused: its working set would pass the budget.
  const refused = await postJson(s.port, '/v1/attention', SEED);
  const p = assertProblem(assert, refused, 503);
  assert.equal(p.type, '/problems/unavailable');
  assert.equal(refused.headers['retry-after'], '1');
  assert.match(p.detail, /memory budget/);
  assert.match(p.hint, /--max-memory/);
  // Refused before its 1 MiB body is stored (and the connection closed after it).
  const big = await request(s.port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' },
    body: ' '.repeat(1 << 20),
  });
  const q = assertProblem(assert, big, 503);
  assert.equal(big.headers['retry-after'], '1');
  assert.match(q.detail, /1\.0 MB more/);
  // Pages, health and metrics cost nothing to hold: still served.
  assert.equal((await request(s.port, { path: '/healthz' })).status, 200);

  slow.sock.resume();
  const answer = await slow.nextResponse(60000);
  assert.equal(answer.status, 200);
  assert.equal(JSON.parse(answer.body).shapes.weights.join(','), '2,360,360');
  const after = await heldWhen(s.port, (h) => h === 0);
  assert.equal(after, 0, 'every charge is given back');
  assert.equal((await postJson(s.port, '/v1/attention', SEED)).status, 200);
  slow.sock.destroy();
  await s.stop();
});

test('--max-request-bytes: one request is held to it, and by default to the budget too', async (t) => {
  const body = { heads: 2, random: { seed: 1, n: 360, d_model: 64 } }; // about 40 MB held
  // The default under a budget of 8 MiB: the budget itself, since a request alone is
  // always admitted by the budget and would otherwise take the process past it.
  const small = await startServer(['--log', 'off', '--max-memory', String(8 << 20)]);
  t.after(() => small.proc.kill('SIGKILL'));
  const r = await postJson(small.port, '/v1/multihead', body);
  const p = assertProblem(assert, r, 422);
  assert.equal(p.type, '/problems/limit-exceeded');
  assert.equal(p.errors[0].pointer, '/random/n');
  assert.match(p.detail, /at most 8\.4 MB for one request/);
  assert.match(p.errors[0].hint, /--max-request-bytes/);
  assert.equal((await postJson(small.port, '/v1/attention', SEED)).status, 200);
  await small.stop();
  // Set on purpose, it is the limit whatever the budget: the same request passes at
  // 64 MiB and is refused at 16 MiB.
  for (const [limit, status] of [[64 << 20, 200], [16 << 20, 422]]) {
    const s = await startServer(['--log', 'off', '--max-request-bytes', String(limit)]);
    t.after(() => s.proc.kill('SIGKILL'));
    const a = await postJson(s.port, '/v1/multihead', body);
    assert.equal(a.status, status, `--max-request-bytes ${limit}: ${a.body.slice(0, 200)}`);
    await s.stop();
  }
});

test('the limit counts the answer in the format asked: text and bertviz at n = 2048 are served', async (t) => {
  // One head, n = 2048, d_model 64: its JSON (every step) is 749 MB and refused; its text
  // elides every matrix (about 60 kB), and bertviz writes the weights alone (93 MB), so
  // both fit the default limit. Before, both were refused as if they were the JSON.
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const body = { heads: 1, random: { seed: 1, n: 2048, d_model: 64 } };
  const json = await postJson(s.port, '/v1/multihead', body);
  assert.equal(assertProblem(assert, json, 422).type, '/problems/limit-exceeded');
  const text = await request(s.port, { method: 'POST', path: '/v1/multihead?format=text',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(text.status, 200, text.body.slice(0, 300));
  assert.match(text.headers['content-type'], /^text\/plain/);
  assert.match(text.body, /^multi-head self-attention {2}n_q 2048 {2}n_k 2048 {2}d_model 64/);
  assert.ok(text.body.length < 1e6, `${text.body.length} bytes of text`);
  const bertviz = await request(s.port, { method: 'POST', path: '/v1/multihead?format=bertviz',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(bertviz.status, 200, bertviz.body.slice(0, 300));
  const v = JSON.parse(bertviz.body);
  // [layer][batch][head][query][key]: one layer, one head, 2048 x 2048 weights.
  assert.equal(v.tokens.length, 2048);
  assert.equal(v.attention[0][0].length, 1);
  assert.equal(v.attention[0][0][0].length, 2048);
  assert.equal(v.attention[0][0][0][0].length, 2048);
  await s.stop();
});
