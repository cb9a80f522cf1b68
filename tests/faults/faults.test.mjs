// tests/faults/faults.test.mjs — what a client sees when replicas fail behind a load
// balancer: two attnd replicas behind HAProxy (tests/faults/haproxy.mjs), on loopback
// ports only, under wrk load of mixed valid requests (tests/load/mixed.lua):
//
//   (a) a rolling restart: SIGTERM one, wait until it is back and ready, then the other:
//       no request fails;
//   (b) SIGKILL of one replica mid-load: the failures are counted and printed, first
//       with HAProxy's health checks alone, then with the retries and redispatch
//       docs/deployment.md recommends, where none may fail but an answer the killed
//       replica was in the middle of sending (no balancer can resend half an answer;
//       HAProxy logs those SD, and the test counts them apart);
//   (c) a drain: while a replica finishes a request in flight, its /readyz is 503 and
//       HAProxy has marked it DOWN (and sends it nothing) before it exits.
//
// Each check asserts its counts and prints them. About a minute in all (`make faults`).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { serverStates, startHaproxy } from './haproxy.mjs';

const BIN = process.env.ATTND_BIN;
if (!BIN) throw new Error('ATTND_BIN must name the attnd binary');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LUA = path.join(ROOT, 'tests/load/mixed.lua');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SEED = '{"q":[[1,0,1,0],[0,1,0,1]],"k":[[1,0,1,0],[1,1,1,1]],"v":[[10,0],[0,10]]}';

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function status(port, p) {
  try {
    return (await fetch(`http://127.0.0.1:${port}${p}`, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}

/** One replica: fixed ports (HAProxy knows them), so a restart comes back at the same place. */
class Replica {
  constructor(name, port, admin) {
    Object.assign(this, { name, port, admin, proc: null, log: '' });
  }

  async start() {
    this.log = '';
    // Behind a balancer every client has its address: no per-client limit (deployment.md).
    this.proc = spawn(BIN, ['--port', String(this.port), '--admin-port', String(this.admin),
      '--max-client-connections', '0', '--timeout', '10', '--threads', '2', '--log', 'text'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
    this.exited = new Promise((r) => this.proc.on('exit', (code, signal) => r({ code, signal })));
    let out = '';
    this.proc.stdout.on('data', (d) => { out += d; });
    this.proc.stderr.on('data', (d) => { this.log += d; });
    for (let i = 0; i < 100 && !/^attnd listening on /m.test(out); i++) await sleep(50);
    assert.match(out, /^attnd listening on /m, `${this.name} did not start: ${this.log}`);
  }

  alive() {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Access-log lines (text format) after `since` (ms since epoch), not the probes. */
  requestsSince(since) {
    return this.log.split('\n').filter((l) => {
      const m = l.match(/^(\S+Z) id=\S+ method=\S+ path=(\S+) status=/);
      return m && Date.parse(m[1]) > since && !['/readyz', '/healthz'].includes(m[2]);
    });
  }
}

let dir, replicas, front, haproxy;

/** Resolves once HAProxy sees every replica UP. */
async function allUp(ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const s = await serverStates(haproxy.socket);
    if (replicas.every((r) => s[r.name] === 'UP')) return;
    assert.ok(Date.now() < end, `not all UP: ${JSON.stringify(s)}`);
    await sleep(50);
  }
}

async function useHaproxy(recommended) {
  if (haproxy) {
    haproxy.proc.kill('SIGTERM');
    await haproxy.exited;
  }
  haproxy = await startHaproxy(dir, {
    port: front, recommended, socket: path.join(dir, 'haproxy.sock'),
    servers: replicas.map((r) => ({ name: r.name, port: r.port, admin: r.admin })),
  });
  await allUp();
}

/** wrk through HAProxy for `seconds`; resolves with its counts once it ends. */
function load(seconds) {
  const wrk = spawn('wrk', ['-t2', '-c16', `-d${seconds}s`, '--timeout', '5s', '-s', LUA,
    `http://127.0.0.1:${front}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  wrk.stdout.on('data', (d) => { out += d; });
  return new Promise((resolve) => wrk.on('exit', () => {
    const m = out.match(/^load: requests (\d+), errors connect (\d+) read (\d+) write (\d+) timeout (\d+), unexpected statuses (\d+)$/m);
    assert.ok(m, `wrk printed no summary:\n${out}`);
    const [requests, connect, read, write, timeout, statuses] = m.slice(1).map(Number);
    resolve({ requests, connect, read, write, timeout, statuses,
      failed: connect + read + write + timeout + statuses });
  }));
}

/** HAProxy's log lines of requests that did not end in a 200 (option httplog). */
// (The <BADREQ> of a connection opened and closed empty is startHaproxy's own probe.)
const badLines = () => haproxy.stderr().split('\n')
  .filter((l) => /\] \S+ \S+ \S+ (?!200 )\d{3} /.test(l) && !l.includes('<BADREQ>'));

const show = (what, c) => {
  console.log(`faults: ${what}: ${c.requests} requests, ${c.failed} failed (connect ${c.connect}, ` +
    `read ${c.read}, write ${c.write}, timeout ${c.timeout}, non-200 ${c.statuses})`);
  for (const l of badLines()) console.log(`faults:   haproxy: ${l}`);
};

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attnd-faults-'));
  front = await freePort();
  replicas = [];
  for (const name of ['a', 'b']) replicas.push(new Replica(name, await freePort(), await freePort()));
  for (const r of replicas) await r.start();
});

after(async () => {
  if (haproxy) {
    haproxy.proc.kill('SIGTERM');
    await haproxy.exited;
  }
  for (const r of replicas) if (r.alive()) { r.proc.kill('SIGKILL'); await r.exited; }
  fs.rmSync(dir, { recursive: true, force: true });
});

/** SIGTERM, wait for exit 0, start again, wait until HAProxy has it UP. */
async function restart(r) {
  r.proc.kill('SIGTERM');
  const how = await r.exited;
  assert.deepEqual(how, { code: 0, signal: null }, `${r.name} exits 0 on SIGTERM`);
  await r.start();
  await allUp();
}

test('(a) a rolling restart under load: zero failed requests', async () => {
  await useHaproxy(true);
  const running = load(12);
  await sleep(2000);
  for (const r of replicas) await restart(r);
  const c = await running;
  show('rolling restart (SIGTERM a, back, then b)', c);
  assert.ok(c.requests > 100, `load ran: ${c.requests}`);
  assert.equal(c.failed, 0);
});

async function killOneUnderLoad(recommended) {
  await useHaproxy(recommended);
  const running = load(7);
  await sleep(2000);
  const [a] = replicas;
  a.proc.kill('SIGKILL');
  await a.exited;
  const c = await running;
  await a.start();
  await allUp();
  return c;
}

test('(b) SIGKILL of a replica mid-load: counted; zero with retries and redispatch', async () => {
  const plain = await killOneUnderLoad(false);
  show('SIGKILL a, health checks alone', plain);
  const retried = await killOneUnderLoad(true);
  show('SIGKILL a, retries and redispatch (docs/deployment.md)', retried);
  // An answer a was in the middle of sending when it died cannot be sent again by any
  // balancer (part of it is already the client's): HAProxy logs those SD. Every other
  // request must have been retried on b.
  const cut = haproxy.stderr().split('\n').filter((l) => / SD.. \d/.test(l));
  console.log(`faults:   of those, cut mid-answer by the kill (HAProxy's SD): ${cut.length}`);
  assert.ok(retried.requests > 100, `load ran: ${retried.requests}`);
  assert.ok(cut.length <= 16, 'at most one answer per connection was being sent');
  assert.equal(retried.failed, cut.length, 'every failure is an answer cut mid-transfer');
  assert.ok(plain.failed > retried.failed, 'the retries saved requests');
});

test('(c) a draining replica: /readyz 503 and DOWN in HAProxy before it exits', async () => {
  await useHaproxy(true);
  const [a] = replicas;
  const running = load(8);
  await sleep(1500);
  // A request in flight on a, its body half sent: a drains until it is done.
  const slow = net.connect(a.port, '127.0.0.1');
  await new Promise((r) => slow.once('connect', r));
  let answer = '';
  slow.on('data', (d) => { answer += d; });
  // Expect: 100-continue: the 100 comes once attnd has taken the request up (it is in
  // flight from then on, and the drain waits for it), however busy the machine is.
  slow.write(`POST /v1/attention HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n` +
    `X-Request-Id: in-flight\r\nExpect: 100-continue\r\nContent-Length: ${SEED.length}\r\n\r\n`);
  for (let i = 0; i < 250 && !answer.startsWith('HTTP/1.1 100 '); i++) await sleep(20);
  assert.match(answer, /^HTTP\/1\.1 100 /, 'attnd took the request up');
  slow.write(SEED.slice(0, 10));
  const signalled = Date.now();
  a.proc.kill('SIGTERM');
  let notReady = null, down = null;
  while (down === null || notReady === null) {
    if (notReady === null && await status(a.admin, '/readyz') === 503) notReady = Date.now();
    if (down === null && (await serverStates(haproxy.socket)).a?.startsWith('DOWN')) down = Date.now();
    assert.ok(Date.now() - signalled < 5000, 'a turned not ready and DOWN within 5 s');
    await sleep(20);
  }
  const aliveAtDown = a.alive();
  // Load keeps coming through HAProxy, to b alone. A request HAProxy sent a just
  // before marking it DOWN may be read a moment later on a busy machine: a second's
  // margin, then two seconds in which a must get nothing.
  await sleep(3000);
  const sent = a.requestsSince(down + 1000).filter((l) => !l.includes('id=in-flight'));
  const aliveLater = a.alive();
  slow.write(SEED.slice(10));
  let exitedAt = 0;
  const how = await a.exited.then((h) => { exitedAt = Date.now(); return h; });
  const c = await running;
  console.log(`faults: drain: /readyz 503 after ${notReady - signalled} ms, DOWN in HAProxy after ` +
    `${down - signalled} ms, exit after ${exitedAt - signalled} ms (when the request in flight ` +
    `was done); requests a took from 1 s after DOWN: ${sent.length}; the request in flight: ` +
    `${answer.split('\r\n\r\n')[1]?.split('\r\n')[0]}`);
  show('drain', c);
  assert.ok(aliveAtDown, 'a is still draining when HAProxy has it DOWN');
  assert.ok(aliveLater, 'a is still draining 3 s later');
  assert.deepEqual(how, { code: 0, signal: null });
  assert.equal(sent.length, 0, sent.join('\n'));
  assert.match(answer, /^HTTP\/1\.1 100 [^]*\r\n\r\nHTTP\/1\.1 200 /, 'the request in flight was answered');
  assert.equal(c.failed, 0);
  await a.start();
});
