// tests/http/process.test.mjs — what operators' dashboards read first: the process_*
// series of /metrics against /proc itself, the worker count's startup line, and a
// startup line that is JSON under --log json.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';

import { BIN, cleanEnv, request, startServer } from './lib.mjs';
import { spawn } from 'node:child_process';

const TICK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
const PAGE = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }));
const BTIME = Number(readFileSync('/proc/stat', 'utf8').match(/^btime (\d+)$/m)[1]);

/** /proc/PID/stat's fields, numbered as proc(5) numbers them (1 = pid). */
function stat(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = text.slice(text.lastIndexOf(')') + 2).trim().split(' ');
  const field = (n) => Number(rest[n - 3]); // rest[0] is field 3 (state)
  return {
    cpu: (field(14) + field(15)) / TICK,
    start: BTIME + field(22) / TICK,
    vsize: field(23),
    rss: field(24) * PAGE,
  };
}

/** The value of an unlabelled series, after checking its HELP and TYPE lines. */
function series(text, name, type) {
  assert.match(text, new RegExp(`^# HELP ${name} \\S.*$`, 'm'), `${name} has HELP`);
  assert.match(text, new RegExp(`^# TYPE ${name} ${type}$`, 'm'), `${name} is a ${type}`);
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  assert.ok(m, `${name} has a value`);
  return Number(m[1]);
}

async function checkAgainstProc(port, pid, dataPort = port) {
  // Some CPU first, so that the counter has something to count.
  for (let i = 0; i < 20; i++) await request(dataPort, { path: '/v1/shapes?n=64&d_model=512&heads=8' });
  const before = stat(pid);
  const fdsBefore = readdirSync(`/proc/${pid}/fd`).length;
  const r = await request(port, { path: '/metrics' });
  const after = stat(pid);
  const fdsAfter = readdirSync(`/proc/${pid}/fd`).length;
  assert.equal(r.status, 200);
  const t = r.body;

  const cpu = series(t, 'process_cpu_seconds_total', 'counter');
  assert.ok(cpu >= before.cpu - 1e-9 && cpu <= after.cpu + 1e-9, `${before.cpu} <= ${cpu} <= ${after.cpu}`);
  const start = series(t, 'process_start_time_seconds', 'gauge');
  assert.ok(Math.abs(start - before.start) < 1e-6, `start ${start} vs /proc ${before.start}`);
  assert.ok(Math.abs(start - Date.now() / 1000) < 60, 'started within the last minute');
  const rss = series(t, 'process_resident_memory_bytes', 'gauge');
  const lo = Math.min(before.rss, after.rss), hi = Math.max(before.rss, after.rss);
  assert.ok(rss >= lo * 0.9 && rss <= hi * 1.1, `rss ${rss} vs /proc ${lo}..${hi}`);
  assert.equal(rss % PAGE, 0, 'whole pages');
  const vsz = series(t, 'process_virtual_memory_bytes', 'gauge');
  assert.ok(vsz >= Math.min(before.vsize, after.vsize) * 0.9 &&
            vsz <= Math.max(before.vsize, after.vsize) * 1.1, `vsize ${vsz} vs /proc ${before.vsize}`);
  // The scrape's own connection, and the descriptor reading the directory, come and go.
  const fds = series(t, 'process_open_fds', 'gauge');
  assert.ok(fds >= Math.min(fdsBefore, fdsAfter) - 1 && fds <= Math.max(fdsBefore, fdsAfter) + 2,
    `open fds ${fds} vs /proc ${fdsBefore}, ${fdsAfter}`);
  const limits = readFileSync(`/proc/${pid}/limits`, 'utf8').match(/^Max open files\s+(\d+)/m);
  assert.equal(series(t, 'process_max_fds', 'gauge'), Number(limits[1]));
}

test('process_* series as the Prometheus client libraries name them, equal to /proc', async () => {
  const s = await startServer(['--admin-port', '0']);
  try {
    await checkAgainstProc(s.port, s.proc.pid);
    const admin = Number(s.stdout().match(/^attnd admin listening on http:\/\/\S+:(\d+)$/m)[1]);
    await checkAgainstProc(admin, s.proc.pid, s.port); // the admin port's scrape has them too
  } finally {
    await s.stop();
  }
});

test('the worker count and where it came from are logged at start', async () => {
  const s = await startServer([], {});
  const t = await startServer(['--threads', '3']);
  try {
    // The CPUs this process may run on: online, within its affinity (nproc reads both).
    const online = Number(execFileSync('nproc', { encoding: 'utf8', env: { PATH: process.env.PATH } }));
    const err = await s.waitStderr((e) => e.includes('worker threads'));
    const line = err.split('\n').find((l) => l.includes('worker threads'));
    // This machine's cgroup may set a quota: the line then says so, with the count rounded up.
    const quota = line.match(/(\d+) worker threads: the cgroup's CPU quota of ([\d.]+) CPUs/);
    if (quota) assert.equal(Number(quota[1]), Math.ceil(Number(quota[2]) - 1e-9));
    else assert.match(line, new RegExp(`level=info ${online} worker threads: one per CPU to run on \\(online, within this process's CPU affinity\\)$`));
    assert.match(await t.waitStderr((e) => e.includes('worker threads')), /level=info 3 worker threads, as set \(\d+ CPUs to run on\)/);
  } finally {
    await s.stop();
    await t.stop();
  }
});

test('a process held to one CPU (taskset, a cpuset) starts one worker, not one per CPU online', async (t) => {
  const online = Number(execFileSync('getconf', ['_NPROCESSORS_ONLN'], { encoding: 'utf8' }));
  if (online < 2) {
    t.skip('one CPU online: nothing to narrow');
    return;
  }
  const proc = spawn('taskset', ['-c', '0', BIN, '--port', '0', '--admin-port', '0'],
    { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  try {
    for (let i = 0; i < 100 && !err.includes('worker threads'); i++) await new Promise((r) => setTimeout(r, 50));
    const line = err.split('\n').find((l) => l.includes('worker threads'));
    assert.match(line ?? err, /level=info 1 worker threads: /);
    assert.doesNotMatch(line, new RegExp(`${online} CPUs`));
  } finally {
    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
});

test('--log json: the startup lines on stdout are JSON too', async () => {
  const proc = spawn(BIN, ['--port', '0', '--admin-port', '0', '--log', 'json'],
    { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  try {
    for (let i = 0; i < 100 && out.split('\n').length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    const lines = out.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.length, 2, out);
    for (const l of lines) {
      assert.equal(l.level, 'info');
      assert.match(l.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.match(l.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    }
    assert.equal(lines[0].message, `attnd admin listening on ${lines[0].url}`);
    assert.equal(lines[1].message, `attnd listening on ${lines[1].url}`);
    const port = Number(lines[1].url.split(':')[2]);
    assert.equal((await request(port, { path: '/healthz' })).status, 200);
  } finally {
    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
  for (const l of err.trim().split('\n')) JSON.parse(l); // stderr: every line JSON as well
});
