// tests/abuse/random.test.mjs — a small body that asks `random` for millions of numbers
// costs the server's workers nothing until it is admitted (api/endpoints/multihead/parse.c).
//
// One client (127.0.0.2) sends, five times a second, the 62-byte /v1/multihead request of
// issue 32 whose b_o is one number where d_model = 2048 wants 2048: each used to fill
// four 2048 x 2048 weights (16.8 M numbers, 134 MB) on a libmicrohttpd worker before
// b_o was read, and another client's small POST went from under a millisecond to a p50
// of 816 ms. Now every field is checked before anything is filled: a fast 422 at /b_o,
// and the other client (127.0.0.3) is served as if alone (its p99 held under 500 ms, a
// bound with room for a loaded machine; before: 3.8 s). Load for several seconds:
// `make abuse`, not `make test`.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SEED, SEED_OUTPUT, request, sleep, startServer } from '../http/lib.mjs';

const ATTACKER = '127.0.0.2';
const VICTIM = '127.0.0.3';
const WIDE_BAD_B_O = JSON.stringify({ heads: 1, random: { seed: 1, n: 1, d_model: 2048 },
  b_o: [1] });

const sorted = (ms) => [...ms].sort((a, b) => a - b);
const p = (s, q) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];

async function timed(fn) {
  const a = performance.now();
  const r = await fn();
  return [r, performance.now() - a];
}

test('wide random requests at 5/s from one client: another client\'s p99 stays under 500 ms', async (t) => {
  const s = await startServer(['--log', 'off', '--threads', '2']);
  t.after(() => s.proc.kill('SIGKILL'));
  // The attacker fires on a clock, whether or not its earlier requests were answered,
  // on fresh connections: what five clicks a second of a script do.
  let stop = false;
  const attacks = [];
  const attacker = (async () => {
    while (!stop) {
      attacks.push(timed(() => request(s.port, {
        method: 'POST', path: '/v1/multihead', localAddress: ATTACKER,
        headers: { 'Content-Type': 'application/json' }, body: WIDE_BAD_B_O,
      })));
      await sleep(200);
    }
  })();
  await sleep(400); // two attacks under way
  const small = [];
  const healthz = [];
  const t0 = Date.now();
  while (Date.now() - t0 < 6000) {
    const [h, hms] = await timed(() => request(s.port, { path: '/healthz', localAddress: VICTIM }));
    assert.equal(h.status, 200);
    healthz.push(hms);
    const [r, rms] = await timed(() => request(s.port, {
      method: 'POST', path: '/v1/attention', localAddress: VICTIM,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...SEED, include: ['output'] }),
    }));
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(JSON.parse(r.body).output, SEED_OUTPUT);
    small.push(rms);
    await sleep(20);
  }
  stop = true;
  await attacker;
  const answered = await Promise.all(attacks);
  for (const [res] of answered) {
    assert.equal(res.status, 422, res.body);
    assert.equal(JSON.parse(res.body).errors[0].pointer, '/b_o');
  }
  const smallS = sorted(small), healthS = sorted(healthz), attackS = sorted(answered.map((a) => a[1]));
  t.diagnostic(`${answered.length} wide requests refused (422 /b_o: p50 ` +
    `${p(attackS, 0.5).toFixed(1)} ms, worst ${attackS[attackS.length - 1].toFixed(1)} ms); ` +
    `victim's ${small.length} small POSTs: p50 ${p(smallS, 0.5).toFixed(1)} ms, p99 ` +
    `${p(smallS, 0.99).toFixed(1)} ms; /healthz worst ${healthS[healthS.length - 1].toFixed(1)} ms`);
  // Margins, from runs on 2 cores with two busy loops beside them (before: the build
  // that filled on the worker): attacks sent 28 to 33 (a timer's count: at least 5);
  // the victim's small POSTs in 6 s 107 to 253 (before: 2; at least 20), their p99 at
  // most 70 ms (before: 3,841 ms; under 500 ms), /healthz at worst 105 ms (under 2 s).
  assert.ok(answered.length >= 5, `${answered.length} attacks sent`);
  assert.ok(small.length >= 20, `${small.length} small requests`);
  assert.ok(p(smallS, 0.99) < 500, `small POST p99 ${p(smallS, 0.99).toFixed(1)} ms`);
  assert.ok(healthS[healthS.length - 1] < 2000, `/healthz worst ${healthS[healthS.length - 1]} ms`);
  await s.stop();
});
