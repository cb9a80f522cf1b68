// tests/abuse/slowbody.test.mjs — the slow-body attack: 45 connections each declare a
// 45th of the memory budget as Content-Length and send a byte a second. The budget
// is charged for bytes that arrive, not for lengths declared, so small requests are
// still served, and promptly.
//
// Before, each declaration was charged in full at its first byte: every POST, even a
// 36-byte one, was a 503 while the process used 17 MB.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SEED, loopbacks, openMany, postJson, request, sleep, startServer } from '../http/lib.mjs';

const BUDGET = 45 * 1024 * 1024;
const ATTACKERS = 45;

test('45 slow bodies declaring the whole budget leave small POSTs served', async (t) => {
  const s = await startServer(['--max-memory', String(BUDGET), '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const slow = await openMany(s.port, ATTACKERS, loopbacks(1));
  for (const c of slow)
    c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${BUDGET / ATTACKERS}\r\n\r\n{`);
  const drip = setInterval(() => { for (const c of slow) if (!c.closedByPeer) c.write(' '); }, 1000);
  try {
    await sleep(1500);
    const ms = [];
    const until = Date.now() + 8000;
    while (Date.now() < until) {
      const a = performance.now();
      const r = await postJson(s.port, '/v1/attention', { ...SEED, include: ['output'] });
      ms.push(performance.now() - a);
      assert.equal(r.status, 200, r.body);
      await sleep(20);
    }
    ms.sort((a, b) => a - b);
    const p99 = ms[Math.ceil(ms.length * 0.99) - 1];
    console.log(`# ${ms.length} small POSTs under the slow-body attack: p99 ${p99.toFixed(1)} ms`);
    assert.ok(p99 < 50, `p99 ${p99} ms`);
    const m = await request(s.port, { path: '/metrics' });
    const held = Number(m.body.match(/^attnd_memory_held_bytes (\d+)/m)[1]);
    assert.ok(held < 2 * 1024 * 1024, `${held} bytes held for ${ATTACKERS} bodies of a few bytes`);
    assert.equal(slow.filter((c) => c.closedByPeer).length, 0, 'an attacker was cut early');
  } finally {
    clearInterval(drip);
  }
  for (const c of slow) c.destroy();
  await s.stop();
});
