// tests/abuse/admin.test.mjs — the admin port cannot be held: one client keeping 48
// connections open by trickling header bytes (reopening each one the server closes)
// does not keep probes from another address from being answered. Before the admin
// port had a per-client limit and header deadlines, its 32 slots were all the
// attacker's and no probe was answered for as long as the trickle went on, which is
// how the manifests' liveness probe got the pod restarted.

import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';

import { request, sleep, startServer } from '../http/lib.mjs';

const ATTACKER = '127.0.0.2';
const PROBER = '127.0.0.3';
const TRICKLING = 48;
const SECONDS = 16; // past the admin port's header deadline (10 s idle + 2 s) at the defaults

/** A probe with a deadline of its own: resolves { status, ms }, status 0 when unanswered. */
async function probe(port) {
  const t0 = performance.now();
  const answer = request(port, { path: '/healthz', localAddress: PROBER })
    .then((r) => r.status, () => 0);
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve(0), 3000); });
  const status = await Promise.race([answer, late]);
  clearTimeout(timer); // a pending timer would hold the test file open
  return { status, ms: performance.now() - t0 };
}

/** One trickling connection, reopened 200 ms after the server closes it, until stop(). */
function trickler(port, state) {
  const open = () => {
    if (state.stopped) return;
    const s = net.connect({ port, host: '127.0.0.1', localAddress: ATTACKER });
    state.socks.add(s);
    s.on('error', () => {});
    s.on('connect', () => s.write('GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: '));
    s.on('close', () => { state.socks.delete(s); state.closed++; setTimeout(open, 200); });
  };
  open();
}

test('48 connections trickling headers from one client: probes from another all answered', async (t) => {
  const s = await startServer(['--admin-port', '0', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL'));
  const port = Number(s.stdout().match(/^attnd admin listening on http:\/\/\S+:(\d+)$/m)[1]);
  const state = { socks: new Set(), closed: 0, stopped: false };
  for (let i = 0; i < TRICKLING; i++) trickler(port, state);
  const drip = setInterval(() => { for (const c of state.socks) c.write('a'); }, 1000);
  await sleep(1000); // the trickle is on before the first probe
  const probes = [];
  const t0 = Date.now();
  try {
    while (Date.now() - t0 < SECONDS * 1000) {
      probes.push(await probe(port));
      await sleep(250);
    }
  } finally {
    state.stopped = true;
    clearInterval(drip);
    for (const c of state.socks) c.destroy();
  }
  const answered = probes.filter((p) => p.status === 200).length;
  const worst = Math.max(...probes.map((p) => p.ms));
  t.diagnostic(`${answered}/${probes.length} probes answered, worst ${worst.toFixed(1)} ms; ` +
    `the attacker's connections were closed ${state.closed} times`);
  assert.equal(answered, probes.length, `${answered} of ${probes.length} probes answered`);
  assert.ok(worst < 1000, `a probe took ${worst} ms`);
  await s.stop();
});
