// tests/load/drain.mjs ATTND — SIGTERM under load, watched from the clients' side.
//
// 64 clients send attention requests back to back (keep-alive, each its own socket).
// After a second of load the server gets SIGTERM. From then on every request must end
// in one of these ways, never another:
//   - 200 with a complete JSON body (it was in flight, or already read),
//   - 503 problem+json, sent with Connection: close (it came in while draining),
//   - a connection refused or reset before any response byte (the server had stopped
//     accepting): the client may retry elsewhere.
// A truncated body, a reset after response bytes, or any other status is a failure,
// and so is an exit code other than 0 or an exit later than the grace period.

import { spawn } from 'node:child_process';
import http from 'node:http';

const bin = process.argv[2];
if (!bin) throw new Error('usage: node tests/load/drain.mjs ATTND');
const CLIENTS = 64;
const GRACE_MS = 30000; // SRV_GRACE_MAX, with the default --timeout of 30 s

const rows = (n, m, f) => Array.from({ length: n }, (_, i) => Array.from({ length: m }, (_, j) => f(i, j)));
const BODY = JSON.stringify({
  q: rows(48, 32, (i, j) => ((i * 7 + j) % 11) / 10),
  k: rows(64, 32, (i, j) => ((i + j * 3) % 13) / 10),
  v: rows(64, 16, (i, j) => ((i * j) % 5) - 2),
});

const proc = spawn(bin, ['--port', '0', '--log', 'off'], { stdio: ['ignore', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
const port = await new Promise((resolve, reject) => {
  let out = '';
  proc.stdout.on('data', (d) => {
    out += d;
    const m = out.match(/listening on http:\/\/\S+:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  setTimeout(() => reject(new Error('attnd did not start')), 5000);
});

const counts = { ok: 0, okAfterTerm: 0, unavailable: 0, refused: 0, bad: 0 };
const bad = [];
let termAt = 0;
let stopped = false;

function once(agent) {
  return new Promise((resolve) => {
    let gotBytes = false;
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path: '/v1/attention', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(BODY) },
    }, (res) => {
      gotBytes = true;
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('aborted', () => resolve(['bad', `aborted mid-body after status ${res.statusCode}`]));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let doc = null;
        try { doc = JSON.parse(text); } catch { return resolve(['bad', `status ${res.statusCode}, body not JSON`]); }
        if (res.statusCode === 200 && Array.isArray(doc.output)) return resolve(['ok']);
        if (res.statusCode === 503 && doc.type === '/problems/unavailable' &&
            res.headers.connection === 'close') return resolve(['unavailable']);
        resolve(['bad', `status ${res.statusCode}: ${text.slice(0, 200)}`]);
      });
    });
    req.on('error', (e) => {
      if (!gotBytes && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes(e.code)) resolve(['refused']);
      else resolve(['bad', `${e.code ?? e.message}${gotBytes ? ' after response bytes' : ''}`]);
    });
    req.end(BODY);
  });
}

async function client() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (!stopped) {
    const [kind, why] = await once(agent);
    if (kind === 'refused' && termAt === 0) { counts.bad++; bad.push('refused before SIGTERM'); continue; }
    counts[kind]++;
    if (kind === 'ok' && termAt !== 0) counts.okAfterTerm++;
    if (kind === 'bad') bad.push(why);
    if (kind === 'refused') await new Promise((r) => setTimeout(r, 20)); // no busy loop
  }
  agent.destroy();
}

const clients = Array.from({ length: CLIENTS }, client);
await new Promise((r) => setTimeout(r, 1000));
termAt = Date.now();
proc.kill('SIGTERM');
const how = await Promise.race([exited, new Promise((r) => setTimeout(() => r(null), GRACE_MS + 5000))]);
stopped = true;
await Promise.all(clients);

const ms = how ? how.at - termAt : null;
console.log(`drain: SIGTERM under ${CLIENTS} clients; exit ${how ? JSON.stringify({ code: how.code, signal: how.signal }) : 'never'} ` +
  `after ${ms} ms; ${counts.ok} answered 200 (${counts.okAfterTerm} of them after SIGTERM), ` +
  `${counts.unavailable} refused with 503, ${counts.refused} refused at connect, ${counts.bad} bad`);
let failed = false;
if (!how || how.code !== 0) { console.error('FAIL: attnd did not exit 0 within the grace period'); failed = true; }
else if (ms > GRACE_MS) { console.error(`FAIL: exit took ${ms} ms`); failed = true; }
if (counts.bad > 0) { console.error(`FAIL: ${bad.slice(0, 10).join('; ')}`); failed = true; }
if (counts.okAfterTerm === 0) { console.error('FAIL: no request in flight completed after SIGTERM'); failed = true; }
process.exit(failed ? 1 : 0);
