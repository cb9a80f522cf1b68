// tests/abuse/flood.test.mjs — connection floods, at the default limits.
//
//   - One client opening thousands of connections gets its share of the slots
//     (--max-client-connections), 503s past it and closed connections past twice it:
//     another client's /healthz stays under a second and its small requests under
//     50 ms at the 99th percentile. Before (512 slots, no per-client limit, a silent
//     backlog), 600 idle connections delayed /healthz by 28 s.
//   - Many clients together filling every slot: the data port answers a new client a
//     fast 503 with Retry-After, and the admin port's /healthz stays under a second.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  SEED, allClosed, assertProblem, loopbacks, openMany, request, sleep, startServer,
} from '../http/lib.mjs';

const SLOTS = 2048; // --max-connections' default

/** p99 of ms. */
const p99 = (ms) => [...ms].sort((a, b) => a - b)[Math.ceil(ms.length * 0.99) - 1];

async function timed(fn) {
  const a = performance.now();
  const r = await fn();
  return [r, performance.now() - a];
}

test('one client with 3,000 connections cannot delay another client\'s requests', async (t) => {
  const s = await startServer(['--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const flood = await openMany(s.port, 3000); // all from 127.0.0.1
  await sleep(500);
  const [other] = loopbacks(1);
  const healthz = [];
  const small = [];
  for (let i = 0; i < 200; i++) {
    const [h, hms] = await timed(() => request(s.port, { path: '/healthz', localAddress: other }));
    assert.equal(h.status, 200);
    healthz.push(hms);
    const [r, rms] = await timed(() => request(s.port, {
      method: 'POST', path: '/v1/attention', localAddress: other,
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(SEED),
    }));
    assert.equal(r.status, 200, r.body);
    small.push(rms);
  }
  const open = flood.filter((c) => !c.closedByPeer).length;
  console.log(`# one client's 3,000 connections: ${open} still open; /healthz worst ` +
    `${Math.max(...healthz).toFixed(1)} ms, small POST p99 ${p99(small).toFixed(1)} ms`);
  assert.ok(Math.max(...healthz) < 1000, `/healthz took ${Math.max(...healthz)} ms`);
  assert.ok(p99(small) < 50, `small POST p99 ${p99(small)} ms`);
  assert.ok(open <= 2 * 256, `${open} connections of one client still open`);
  for (const c of flood) c.destroy();
  await s.stop();
});

test('every slot taken by many clients: a fast 503 on the data port, the admin port answers', async (t) => {
  const s = await startServer(['--admin-port', '0', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const admin = Number(s.stdout().match(/^attnd admin listening on http:\/\/\S+:(\d+)$/m)[1]);
  // 2,048 served and 200 over, from 20 clients of about 112 each (under their share).
  const flood = await openMany(s.port, SLOTS + 200, loopbacks(20));
  await sleep(500);
  const worst = { admin: 0, refused: 0 };
  for (let i = 0; i < 10; i++) {
    const [h, hms] = await timed(() => request(admin, { path: '/healthz' }));
    assert.equal(h.status, 200);
    worst.admin = Math.max(worst.admin, hms);
    const [r, rms] = await timed(() => request(s.port, { path: '/healthz' }));
    const p = assertProblem(assert, r, 503);
    assert.match(p.detail, /--max-connections/);
    assert.equal(r.headers['retry-after'], '1');
    worst.refused = Math.max(worst.refused, rms);
    await sleep(100);
  }
  console.log(`# ${SLOTS + 200} connections from 20 clients: admin /healthz worst ` +
    `${worst.admin.toFixed(1)} ms, the data port's 503 worst ${worst.refused.toFixed(1)} ms`);
  assert.ok(worst.admin < 1000, `admin /healthz took ${worst.admin} ms`);
  assert.ok(worst.refused < 1000, `the 503 took ${worst.refused} ms`);
  for (const c of flood) c.destroy();
  await allClosed(flood, 5000);
  await sleep(500);
  assert.equal((await request(s.port, { path: '/healthz' })).status, 200);
  await s.stop();
});
