// tests/http/lib.mjs — shared helpers for the HTTP tests: start attnd on a free port,
// talk to it over plain node:http or raw sockets, stop it.
//
// The binary comes from ATTND_BIN. Each server runs with --port 0 and --log text;
// its "attnd listening on http://ADDR:PORT" line (a JSON one under --log json) gives
// the port. ATTND_* variables of the calling shell are not passed on, so a developer's
// environment cannot change what a test sees.
//
// Every response that request(), postJson(), postBytes() and rawConnect()'s nextResponse() receive
// is checked against api/openapi.yaml (contract.mjs): a response the spec does not
// describe fails the test that received it.

import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';

import { assertContract } from './contract.mjs';

export const BIN = process.env.ATTND_BIN;
if (!BIN) throw new Error('ATTND_BIN must name the attnd binary');

export const SEED = {
  q: [[1, 0, 1, 0], [0, 1, 0, 1]],
  k: [[1, 0, 1, 0], [1, 1, 1, 1]],
  v: [[10, 0], [0, 10]],
};
export const SEED_WEIGHTS = [[0.5, 0.5], [0.2689414213699951, 0.7310585786300049]];
export const SEED_OUTPUT = [[5, 5], [2.6894142136999513, 7.310585786300049]];

// CORS, as docs/deployment.md promises it: what a page's script may read, and the request
// headers a preflight allows by default (auth proxies, OpenTelemetry, coded and V2 bodies).
export const CORS_EXPOSED = 'X-Request-Id, Retry-After, Inference-Header-Content-Length, traceparent';
export const CORS_ALLOWED = 'Content-Type, Accept, X-Request-Id, Authorization, traceparent, ' +
  'tracestate, Content-Encoding, Inference-Header-Content-Length';

/** process.env without ATTND_* (plus `extra`). */
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ATTND_')) env[k] = v;
  return { ...env, ...extra };
}

/** Runs attnd to completion (for --help, --version, bad flags, --probe). */
export function runAttnd(args, env = {}) {
  const r = spawnSync(BIN, args, { env: cleanEnv(env), encoding: 'utf8', timeout: 10000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}

/**
 * Starts attnd and resolves once it listens. The result:
 *   port, proc, stderr() (everything so far), waitStderr(pred, ms), stop(), exited
 */
export function startServer(args = [], env = {}) {
  const proc = spawn(BIN, ['--port', '0', '--log', 'text', ...args], {
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters = [];
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => {
    err += d;
    for (const w of [...waiters]) w();
  });
  const exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return new Promise((resolve, reject) => {
    // A server that never says it listens is killed, not left to hold the run open.
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`attnd did not start within 15 s: ${err}`));
    }, 15000);
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (d) => {
      out += d;
      // Plain, or under --log json an object whose message says the same.
      const m = out.match(/^attnd listening on http:\/\/(\S+):(\d+)\n/m) ??
        out.match(/^\{.*"message":"attnd listening on http:\/\/([^"]+):(\d+)".*\}\n/m);
      if (!m) return;
      clearTimeout(timer);
      const server = {
        proc,
        host: m[1],
        port: Number(m[2]),
        exited,
        stdout: () => out,
        stderr: () => err,
        /** Resolves with stderr once pred(stderr) holds; rejects after ms. */
        waitStderr(pred, ms = 3000) {
          return new Promise((res, rej) => {
            const check = () => {
              if (!pred(err)) return false;
              waiters.splice(waiters.indexOf(check), 1);
              clearTimeout(t);
              res(err);
              return true;
            };
            const t = setTimeout(() => {
              waiters.splice(waiters.indexOf(check), 1);
              rej(new Error(`stderr never matched; it was:\n${err}`));
            }, ms);
            waiters.push(check);
            check();
          });
        },
        /** SIGTERM, then the exit; rejects unless it is a clean 0 (sanitizer reports are not). */
        async stop() {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
          const how = await exited;
          if (how.code !== 0) throw new Error(`attnd exited with ${JSON.stringify(how)}:\n${err}`);
          if (/Sanitizer|runtime error:/.test(err)) throw new Error(`sanitizer report:\n${err}`);
          return how;
        },
      };
      resolve(server);
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`attnd exited with ${code} before listening: ${err}`));
    });
  });
}

/**
 * One request on a fresh connection. body: string or Buffer (sent with Content-Length)
 * or an array of strings (sent chunked, one write each); localAddress: the loopback
 * address to send from (another client). Resolves {status, headers, body (string), json()}.
 */
export function request(port, { method = 'GET', path = '/', headers = {}, body, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const chunked = Array.isArray(body);
    const h = { ...headers };
    if (body !== undefined && !chunked) h['Content-Length'] = Buffer.byteLength(body);
    const req = http.request(
      { host: '127.0.0.1', port, method, path, headers: h, agent: false, localAddress },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          const out = { status: res.statusCode, headers: res.headers, body: text };
          try {
            assertContract({ method, path }, out);
          } catch (e) {
            reject(e);
            return;
          }
          resolve({ ...out, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (chunked) for (const piece of body) req.write(piece);
    else if (body !== undefined) req.write(body);
    req.end();
  });
}

export const postJson = (port, path, obj, headers = {}) =>
  request(port, {
    method: 'POST',
    path,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(obj),
  });

/**
 * One request of any method whose answer is kept as bytes (a V2 binary or JSON body);
 * resolves {status, headers, body, raw, json()} once the answer passes the contract
 * check. raw keeps the answer's bytes; body is their text, latin1 for
 * application/octet-stream so that binary pieces survive the check.
 */
export function requestBytes(port, { method = 'POST', path, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (body !== undefined) h['Content-Length'] = Buffer.byteLength(body);
    const req = http.request({ host: '127.0.0.1', port, method, path, agent: false, headers: h },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          const raw = Buffer.concat(parts);
          const binary = /octet-stream/.test(res.headers['content-type'] ?? '');
          const out = { status: res.statusCode, headers: res.headers,
            body: raw.toString(binary ? 'latin1' : 'utf8') };
          try {
            assertContract({ method, path }, out);
          } catch (e) {
            reject(e);
            return;
          }
          resolve({ ...out, raw, json: () => JSON.parse(raw.toString('utf8')) });
        });
        res.on('error', reject);
      });
    req.on('error', reject);
    req.end(body);
  });
}

/** POSTs bytes: requestBytes with method POST. */
export const postBytes = (port, path, body, headers = {}) =>
  requestBytes(port, { path, body, headers });

/**
 * A raw TCP connection with a promise for "the next complete HTTP response". The
 * request lines written are remembered so each response is checked against the spec;
 * { contract: false } is for deliberately malformed HTTP that libmicrohttpd answers
 * itself (its own 400 pages are not attnd's contract); { localAddress } sends from
 * another loopback address (another client).
 */
export function rawConnect(port, { contract = true, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: '127.0.0.1', localAddress });
    let buf = Buffer.alloc(0);
    let closed = false;
    const sent = []; // {method, path} of each request line written, in order
    const waiters = [];
    const notify = () => waiters.splice(0).forEach((w) => w());
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      notify();
    });
    sock.on('close', () => {
      closed = true;
      notify();
    });
    sock.on('error', () => {});
    sock.once('connect', () =>
      resolve({
        sock,
        write: (s) => {
          for (const m of String(s).matchAll(/(?:^|\r\n)([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/g))
            sent.push({ method: m[1], path: m[2] });
          return new Promise((res) => sock.write(s, res));
        },
        isClosed: () => closed,
        /** Resolves the next response {status, headers, body}; needs Content-Length. */
        nextResponse(ms = 5000) {
          return new Promise((res, rej) => {
            const t = setTimeout(() => rej(new Error(`no response; have: ${buf}`)), ms);
            const tryParse = () => {
              const end = buf.indexOf('\r\n\r\n');
              if (end < 0) {
                if (closed) {
                  clearTimeout(t);
                  rej(new Error('connection closed without a response'));
                  return;
                }
                waiters.push(tryParse);
                return;
              }
              const head = buf.subarray(0, end).toString('latin1').split('\r\n');
              const status = Number(head[0].split(' ')[1]);
              const headers = {};
              for (const line of head.slice(1)) {
                const i = line.indexOf(':');
                headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
              }
              const len = Number(headers['content-length'] ?? 0);
              if (buf.length < end + 4 + len) {
                if (closed) {
                  clearTimeout(t);
                  rej(new Error('connection closed mid-body'));
                  return;
                }
                waiters.push(tryParse);
                return;
              }
              const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
              buf = buf.subarray(end + 4 + len);
              clearTimeout(t);
              const req = sent.shift();
              if (contract && req) {
                try {
                  assertContract(req, { status, headers, body });
                } catch (e) {
                  rej(e);
                  return;
                }
              }
              res({ status, headers, body });
            };
            tryParse();
          });
        },
        /** Resolves once the server has closed the connection. */
        waitClosed(ms = 5000) {
          return new Promise((res, rej) => {
            const t = setTimeout(() => rej(new Error('connection still open')), ms);
            const check = () => {
              if (!closed) return waiters.push(check);
              clearTimeout(t);
              res();
            };
            check();
          });
        },
      }),
    );
    sock.once('error', reject);
  });
}

/** A port nothing listens on (bound then released). */
export function closedPort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The admin port a server started with --admin-port printed, or null. */
export const adminPort = (s) => {
  const m = s.stdout().match(/^attnd admin listening on http:\/\/\S+:(\d+)$/m);
  return m ? Number(m[1]) : null;
};

/**
 * Resolves once n requests are in flight on the data port of a server started with
 * --admin-port (its /metrics, polled, counts the data port's requests, not itself). A
 * request half sent is begun only once attnd has read its head: a test that signals a
 * drain waits for this, not for a guessed time.
 */
export async function inFlightReaches(s, n, ms = 5000) {
  const port = adminPort(s);
  if (port === null) throw new Error('inFlightReaches needs a server with --admin-port');
  const until = Date.now() + ms;
  for (;;) {
    const m = (await request(port, { path: '/metrics' })).body;
    const seen = m.match(/^attnd_requests_in_flight (\S+)$/m)?.[1];
    if (Number(seen) === n) return;
    if (Date.now() > until) throw new Error(`attnd_requests_in_flight is ${seen}, never ${n}`);
    await sleep(10);
  }
}

/** The access-log lines (text format) that carry request id `id`. */
export const logLinesFor = (stderr, id) =>
  stderr.split('\n').filter((l) => l.includes(`id=${id} `));

/** Asserts the RFC 9457 shape every error shares. */
export function assertProblem(assert, res, status) {
  assert.equal(res.status, status, res.body);
  assert.match(res.headers['content-type'], /^application\/problem\+json/);
  const p = res.json();
  for (const f of ['type', 'title', 'status', 'detail']) assert.ok(f in p, `problem has ${f}`);
  assert.equal(p.status, status);
  // Every problem names its request: the id the response carries (and the log writes).
  assert.equal(p.instance, res.headers['x-request-id'], 'instance is the request id');
  return p;
}

/**
 * n TCP connections, all connected, spread round-robin over the loopback source
 * `addresses` (127.0.0.2 and so on are other clients to a per-client limit). Each
 * socket gets closedByPeer (set on close) and closedAt (Date.now() then).
 */
export async function openMany(port, n, addresses = ['127.0.0.1']) {
  const socks = [];
  for (let i = 0; i < n; i += 200) // in batches: a burst of thousands overflows the backlog
    socks.push(...await Promise.all(
      Array.from({ length: Math.min(200, n - i) }, (_, j) => new Promise((resolve, reject) => {
        const s = net.connect({ port, host: '127.0.0.1',
          localAddress: addresses[(i + j) % addresses.length] });
        s.closedByPeer = false;
        s.on('close', () => { s.closedByPeer = true; s.closedAt = Date.now(); });
        s.on('error', () => {});
        s.once('connect', () => resolve(s));
        s.once('error', reject);
      })),
    ));
  return socks;
}

/** Resolves once every socket is closed, or rejects after ms with how many are still open. */
export function allClosed(socks, ms) {
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

/** `count` loopback source addresses, none of them 127.0.0.1: as many other clients. */
export const loopbacks = (count, offset = 0) =>
  Array.from({ length: count }, (_, i) => offset + i)
    .map((n) => `127.${1 + Math.floor(n / 250)}.0.${(n % 250) + 1}`);

/** A small deterministic generator (mulberry32): random test problems a failure can replay. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
