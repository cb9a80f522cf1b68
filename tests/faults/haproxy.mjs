// tests/faults/haproxy.mjs — HAProxy in front of attnd replicas, for the fault tests:
// its configuration as docs/deployment.md recommends it (or a plain one, to count what
// the recommendation saves), started in the foreground on loopback ports, its servers'
// states read from its stats socket, stopped by its PID.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * The configuration. servers: [{name, port, admin}]; recommended: retries on another
 * replica (docs/deployment.md, "Behind HAProxy"); otherwise only health checks.
 */
export function haproxyConfig({ port, servers, socket, recommended }) {
  const retry = recommended
    ? [
      // Every request attnd can be sent again: it keeps no state, so a POST retried on
      // another replica computes the same answer. What is retried: a connection refused
      // or reset, an answer that never came or came empty (a replica killed), and 503
      // (a replica draining answers requests on open connections so).
      '  retries 3',
      '  option redispatch 1',
      '  retry-on all-retryable-errors',
    ]
    : ['  retries 0'];
  return [
    'global',
    `  stats socket ${socket} mode 600 level admin`,
    '  maxconn 4096',
    // A request is retried only when it fits in one buffer (HAProxy keeps the copy
    // there): room for the largest body clients send (tests/load/mixed.lua's is 60 kB).
    ...(recommended ? ['  tune.bufsize 131072'] : []),
    // Every request that went wrong, and only those, on stderr (stderr() below).
    '  log stderr format raw local0 info',
    'defaults',
    '  mode http',
    '  log global',
    '  option httplog',
    '  option dontlog-normal',
    '  timeout connect 1s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout queue 5s',
    ...retry,
    'frontend attnd_in',
    `  bind 127.0.0.1:${port}`,
    '  default_backend attnd',
    'backend attnd',
    '  balance roundrobin',
    // Readiness on the admin port: 503 from the moment a replica starts draining.
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  default-server inter 200ms fastinter 100ms downinter 200ms fall 1 rise 2',
    ...servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check port ${s.admin}`),
    '',
  ].join('\n');
}

/**
 * Starts haproxy -db (foreground) with the configuration; resolves once both its
 * frontend and its stats socket accept: HAProxy opens its listeners one by one, so the
 * port may take connections while the socket file does not exist yet.
 */
export async function startHaproxy(dir, opts) {
  const conf = path.join(dir, opts.recommended ? 'recommended.cfg' : 'plain.cfg');
  fs.writeFileSync(conf, haproxyConfig(opts));
  const proc = spawn('haproxy', ['-f', conf, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  for (let i = 0; i < 100; i++) {
    if (await accepts(opts.port) && await accepts(opts.socket)) return { proc, exited, stderr: () => err, socket: opts.socket };
    if (proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`haproxy did not start: ${err}`);
}

/** Whether a loopback port (a number) or a Unix socket (a path) takes a connection. */
function accepts(where) {
  return new Promise((resolve) => {
    const s = typeof where === 'number' ? net.connect(where, '127.0.0.1') : net.connect(where);
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/** {name: status} of the backend's servers ("UP", "DOWN", "UP 1/2", ...), from `show stat`. */
export function serverStates(socket) {
  return new Promise((resolve, reject) => {
    const s = net.connect(socket);
    let out = '';
    s.on('data', (d) => { out += d; });
    s.on('error', reject);
    s.on('end', () => {
      const lines = out.trim().split('\n');
      const head = lines[0].replace(/^# /, '').split(',');
      const col = (n) => head.indexOf(n);
      const states = {};
      for (const l of lines.slice(1)) {
        const f = l.split(',');
        if (f[col('pxname')] === 'attnd' && !['BACKEND', 'FRONTEND'].includes(f[col('svname')]))
          states[f[col('svname')]] = f[col('status')];
      }
      resolve(states);
    });
    s.write('show stat\n');
  });
}
