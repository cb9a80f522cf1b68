// tests/abuse/headers.test.mjs — the slow-headers attack: a thousand connections that
// send a header byte a second (never idle long enough for --timeout) are reclaimed by
// the deadline on a request's headers, at the defaults; others are served meanwhile.
//
// Before the deadlines (--timeout idle only), such connections were never reclaimed.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { allClosed, loopbacks, openMany, request, sleep, startServer } from '../http/lib.mjs';

const CONNECTIONS = 1000;
const TIMEOUT_S = 5;
const REQUEST_TIMEOUT_S = 60; // the default: headers get a quarter of it after --timeout

test('1,000 connections trickling headers under --timeout 5 are closed by the header deadline', async (t) => {
  const s = await startServer(['--timeout', String(TIMEOUT_S), '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  // Five clients of 200: within the default per-client share (256).
  const slow = await openMany(s.port, CONNECTIONS, loopbacks(5));
  const t0 = Date.now();
  for (const c of slow) c.write('GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ');
  const trickle = setInterval(() => { for (const c of slow) if (!c.closedByPeer) c.write('a'); }, 1000);
  try {
    // Meanwhile another client is answered promptly.
    let worst = 0;
    for (let i = 0; i < 20; i++) {
      const a = performance.now();
      assert.equal((await request(s.port, { path: '/healthz' })).status, 200);
      worst = Math.max(worst, performance.now() - a);
      await sleep(250);
    }
    assert.ok(worst < 1000, `/healthz took ${worst} ms among the trickling connections`);
    const deadline = (TIMEOUT_S + REQUEST_TIMEOUT_S / 4) * 1000;
    await allClosed(slow, deadline + 10000 - (Date.now() - t0));
  } finally {
    clearInterval(trickle);
  }
  const first = Math.min(...slow.map((c) => c.closedAt)) - t0;
  const last = Math.max(...slow.map((c) => c.closedAt)) - t0;
  console.log(`# ${CONNECTIONS} trickling connections closed between ${first} and ${last} ms`);
  assert.ok(first >= 15000, `one was closed after ${first} ms, before its headers' time was up`);
  await s.stop();
});
