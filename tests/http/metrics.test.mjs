// tests/http/metrics.test.mjs — GET /metrics: the Prometheus text, and counts that
// follow the requests made between two scrapes.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { after, before, test } from 'node:test';

import { SPEC } from './contract.mjs';
import { SEED, postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

/**
 * Parses the text format: {samples: Map("name{labels}" → number), types: Map(name → type)}.
 * Fails on any line that is not a comment or a well-formed sample.
 */
function parse(text) {
  const samples = new Map();
  const types = new Map();
  assert.ok(text.endsWith('\n'), 'the text ends with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    let m = line.match(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$/);
    if (m) {
      assert.ok(!types.has(m[1]), `one TYPE line for ${m[1]}`);
      types.set(m[1], m[2]);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* \S/.test(line)) continue;
    m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_]+="[^"\\\n]*",?)*\})? (\S+)$/);
    assert.ok(m, `a well-formed sample line: ${JSON.stringify(line)}`);
    const value = m[3] === '+Inf' ? Infinity : Number(m[3]);
    assert.ok(!Number.isNaN(value), line);
    const key = `${m[1]}${m[2] ?? ''}`;
    assert.ok(!samples.has(key), `one sample for ${key}`);
    samples.set(key, value);
  }
  return { samples, types };
}

async function scrape() {
  const r = await request(s.port, { path: '/metrics' });
  assert.equal(r.status, 200, r.body);
  assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  return parse(r.body);
}

const get = (m, key) => m.samples.get(key) ?? 0;
const total = (route, status) => `attnd_requests_total{route="${route}",status="${status}"}`;

test('the text declares every metric and parses', async () => {
  await request(s.port, { path: '/healthz' });
  const m = await scrape();
  assert.deepEqual(Object.fromEntries(m.types), {
    attnd_requests_total: 'counter',
    attnd_responses_cut_total: 'counter',
    attnd_request_duration_seconds: 'histogram',
    attnd_requests_in_flight: 'gauge',
    attnd_memory_held_bytes: 'gauge',
    attnd_memory_budget_bytes: 'gauge',
    attnd_request_bytes_total: 'counter',
    attnd_response_bytes_total: 'counter',
    attnd_connections_open: 'gauge',
    attnd_connections_refused_total: 'counter',
    attnd_connections_timed_out_total: 'counter',
    attnd_lane_queued: 'gauge',
    attnd_lane_running: 'gauge',
    attnd_lane_jobs_dropped_total: 'counter',
    attnd_build_info: 'gauge',
    process_cpu_seconds_total: 'counter', // process.test.mjs checks their values
    process_open_fds: 'gauge',
    process_max_fds: 'gauge',
    process_virtual_memory_bytes: 'gauge',
    process_resident_memory_bytes: 'gauge',
    process_start_time_seconds: 'gauge',
  });
  for (const key of m.samples.keys()) {
    const name = key.split('{')[0].replace(/_(bucket|sum|count)$/, '');
    assert.ok(m.types.has(name) || m.types.has(key.split('{')[0]), `${key} has a TYPE`);
  }
  assert.ok(get(m, 'attnd_requests_in_flight') >= 1, 'the scrape itself is in flight');
});

test('attnd_build_info names the version and build that /version reports', async () => {
  const v = (await request(s.port, { path: '/version' })).json();
  const m = await scrape();
  assert.equal(get(m, `attnd_build_info{version="${v.version}",build="${v.build}"}`), 1);
});

test('counts, bytes and durations follow the requests made between two scrapes', async () => {
  const before = await scrape();
  const body = JSON.stringify(SEED);
  let sent = 0;
  for (let i = 0; i < 3; i++) {
    const r = await postJson(s.port, '/v1/attention', SEED);
    assert.equal(r.status, 200);
    sent += Buffer.byteLength(r.body);
  }
  const bad = await postJson(s.port, '/v1/attention', { q: [[1]], k: [[1, 2]], v: [[1]] });
  assert.equal(bad.status, 422);
  sent += Buffer.byteLength(bad.body);
  await request(s.port, { path: '/nope' });
  await request(s.port, { path: '/v2/attention' });
  await request(s.port, { path: '/problems/shape-mismatch' });
  await request(s.port, { path: '/problems/no-such-thing' });
  await request(s.port, { method: 'HEAD', path: '/healthz' });
  const after = await scrape();

  const delta = (key) => get(after, key) - get(before, key);
  assert.equal(delta(total('/v1/attention', 200)), 3);
  assert.equal(delta(total('/v1/attention', 422)), 1);
  assert.equal(delta(total('other', 404)), 2);
  assert.equal(delta(total('/problems/{type}', 200)), 1);
  assert.equal(delta(total('/problems/{type}', 404)), 1);
  assert.equal(delta(total('/healthz', 200)), 1);
  assert.equal(delta(total('/metrics', 200)), 1, 'the first scrape, not the second');

  const lat = 'attnd_request_duration_seconds';
  assert.equal(delta(`${lat}_count{route="/v1/attention"}`), 4);
  assert.ok(delta(`${lat}_sum{route="/v1/attention"}`) > 0);
  assert.equal(get(after, `${lat}_bucket{route="/v1/attention",le="+Inf"}`),
    get(after, `${lat}_count{route="/v1/attention"}`));
  const buckets = [...after.samples].filter(([k]) => k.startsWith(`${lat}_bucket{route="/v1/attention",`));
  assert.ok(buckets.length >= 10);
  for (let i = 1; i < buckets.length; i++)
    assert.ok(buckets[i][1] >= buckets[i - 1][1], `cumulative: ${buckets[i][0]}`);

  const bytes = (dir, route) => `attnd_${dir}_bytes_total{route="${route}"}`;
  const badBody = JSON.stringify({ q: [[1]], k: [[1, 2]], v: [[1]] });
  assert.equal(delta(bytes('request', '/v1/attention')), 3 * Buffer.byteLength(body) + badBody.length);
  assert.equal(delta(bytes('response', '/v1/attention')), sent);
  assert.equal(delta(bytes('response', '/healthz')), 0, 'HEAD sends no body');
});

test('routes are templates: unknown paths share one label, whatever clients send', async () => {
  for (let i = 0; i < 40; i++) await request(s.port, { path: `/random-${i}-${Math.random()}` });
  const r = await request(s.port, { path: '/metrics' });
  assert.ok(!r.body.includes('random-'), 'no raw path becomes a label');
  const routes = new Set([...r.body.matchAll(/route="([^"]*)"/g)].map((m) => m[1]));
  assert.ok(routes.size <= Object.keys(SPEC.paths).length + 5, [...routes].join(' '));
});

test('every path of the spec has its own route label', async () => {
  const before = await scrape();
  const concrete = (p) => p.replace(/\{[^}]+\}/g, 'shape-mismatch');
  for (const p of Object.keys(SPEC.paths)) {
    const r = await request(s.port, { method: 'OPTIONS', path: concrete(p) });
    assert.equal(r.status, 204);
  }
  const after = await scrape();
  for (const p of Object.keys(SPEC.paths))
    assert.equal(get(after, total(p, 204)) - get(before, total(p, 204)), 1,
      `${p} is counted under its template; add it to api/api.c's route table`);
});

test('HEAD /metrics has no body; other methods are 405 with Allow', async () => {
  const head = await request(s.port, { method: 'HEAD', path: '/metrics' });
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  assert.match(head.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  const post = await request(s.port, { method: 'POST', path: '/metrics', body: '{}' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS');
});

// The default budget: two thirds of what the process may use, the tightest cgroup limit
// from its own cgroup up to the root (a container's, a pod's), else the machine's memory
// (server/host/budget.h).
test('attnd_memory_budget_bytes is 2/3 of the cgroup limit or of the machine', async () => {
  const limitIn = (file) => {
    try {
      const v = readFileSync(file, 'utf8').trim();
      return /^[0-9]+$/.test(v) && Number(v) < 2 ** 62 ? Number(v) : Infinity;
    } catch {
      return Infinity;
    }
  };
  const chain = (mount, path, file) => {
    let best = Infinity;
    for (let dir = path.replace(/\/+$/, ''); ; dir = dir.slice(0, dir.lastIndexOf('/'))) {
      best = Math.min(best, limitIn(`${mount}${dir}/${file}`));
      if (dir === '') return best;
    }
  };
  let limit = Math.min(totalmem(), chain('/sys/fs/cgroup', '', 'memory.max'),
    chain('/sys/fs/cgroup/memory', '', 'memory.limit_in_bytes'));
  for (const line of readFileSync(`/proc/${s.proc.pid}/cgroup`, 'utf8').trim().split('\n')) {
    const [id, controllers, path] = line.split(':');
    if (id === '0' && controllers === '') limit = Math.min(limit, chain('/sys/fs/cgroup', path, 'memory.max'));
    else if (controllers.split(',').includes('memory'))
      limit = Math.min(limit, chain('/sys/fs/cgroup/memory', path, 'memory.limit_in_bytes'));
  }
  const m = await scrape();
  assert.equal(get(m, 'attnd_memory_budget_bytes'), Math.floor(limit / 3) * 2);
});
