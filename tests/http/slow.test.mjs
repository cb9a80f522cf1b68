// tests/http/slow.test.mjs — slow and many clients: the connection limit, the idle
// timeout, and requests answered promptly while hundreds of connections dawdle.
//
// server/http.c sets SRV_CONNECTION_LIMIT (512) and --timeout (idle seconds); these
// tests run with --timeout 2 so that "dropped at the timeout" takes two seconds.

import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';

import { SEED, SEED_OUTPUT, postJson, rawConnect, sleep, startServer } from './lib.mjs';

const CONNECTION_LIMIT = 512; // SRV_CONNECTION_LIMIT in server/http.c

/** n TCP connections, all connected. */
async function openMany(port, n) {
  const socks = await Promise.all(
    Array.from({ length: n }, () => new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1');
      s.closedByPeer = false;
      s.on('close', () => { s.closedByPeer = true; });
      s.on('error', () => {});
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    })),
  );
  return socks;
}

/** Resolves once every socket is closed, or rejects after ms with how many are still open. */
function allClosed(socks, ms) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = setInterval(() => {
      const open = socks.filter((s) => !s.closedByPeer).length;
      if (open === 0) {
        clearInterval(tick);
        resolve(Date.now() - t0);
      } else if (Date.now() - t0 > ms) {
        clearInterval(tick);
        reject(new Error(`${open} of ${socks.length} connections still open after ${ms} ms`));
      }
    }, 50);
  });
}

/** One attention request on a fresh connection; its latency in ms. */
async function timedSeed(port) {
  const t0 = performance.now();
  const r = await postJson(port, '/v1/attention', { ...SEED, include: ['output'] });
  const ms = performance.now() - t0;
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json().output, SEED_OUTPUT);
  return ms;
}

test('500 connections trickling headers do not slow down normal requests', async (t) => {
  const s = await startServer(['--timeout', '2', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL')); // a failed assertion must not leave it running
  const slow = await openMany(s.port, 500);
  // Each sends a request line, then one byte of a header every 500 ms: never idle for
  // the 2 s timeout, never finished. MHD keeps them all, spread over its workers.
  for (const c of slow) c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nX-Slow: ');
  const trickle = setInterval(() => { for (const c of slow) if (!c.closedByPeer) c.write('a'); }, 500);
  try {
    const latencies = [];
    const until = Date.now() + 3000; // past the timeout: activity keeps them alive
    while (Date.now() < until) {
      latencies.push(await timedSeed(s.port));
      await sleep(150);
    }
    const worst = Math.max(...latencies);
    console.log(`# 500 trickling connections held; ${latencies.length} requests answered, ` +
      `worst ${worst.toFixed(1)} ms`);
    assert.ok(worst < 1000, `a request took ${worst} ms`);
    assert.equal(slow.filter((c) => c.closedByPeer).length, 0, 'a trickling client was dropped');
  } finally {
    clearInterval(trickle);
  }
  // Once they stop, they are idle: the timeout drops every one of them.
  const ms = await allClosed(slow, 6000);
  assert.ok(ms > 1000, `dropped after ${ms} ms, before the 2 s timeout`);
  await timedSeed(s.port);
  await s.stop();
});

test('a client that sends half a body and stops is dropped at the timeout', async (t) => {
  const s = await startServer(['--timeout', '2']);
  t.after(() => s.proc.kill('SIGKILL')); // a failed assertion must not leave it running
  const body = JSON.stringify(SEED);
  const c = await rawConnect(s.port);
  const t0 = Date.now();
  await c.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `X-Request-Id: half-body\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`);
  await c.waitClosed(5000);
  const ms = Date.now() - t0;
  assert.ok(ms >= 1500 && ms < 4500, `closed after ${ms} ms, want about 2000`);
  // The server is fine and says what happened in its log.
  await timedSeed(s.port);
  await s.stop();
});

test('a connection that never sends a byte is dropped at the timeout', async (t) => {
  const s = await startServer(['--timeout', '2']);
  t.after(() => s.proc.kill('SIGKILL')); // a failed assertion must not leave it running
  const [idle] = await openMany(s.port, 1);
  const ms = await allClosed([idle], 5000);
  assert.ok(ms >= 1500, `closed after ${ms} ms, want about 2000`);
  await s.stop();
});

test('at the connection limit, a new client waits in the backlog until idle ones time out', async (t) => {
  const s = await startServer(['--timeout', '2', '--log', 'off']);
  t.after(() => s.proc.kill('SIGKILL')); // a failed assertion must not leave it running
  const idle = await openMany(s.port, CONNECTION_LIMIT);
  await sleep(300); // every worker has accepted its share and reached its limit
  const t0 = Date.now();
  const ms = await timedSeed(s.port);
  // Answered only once the idle connections were dropped, not refused or reset.
  assert.ok(Date.now() - t0 >= 1000, `answered after ${ms} ms: the limit did not hold`);
  await allClosed(idle, 5000);
  await s.stop();
});
