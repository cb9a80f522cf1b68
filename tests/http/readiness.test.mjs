// tests/http/readiness.test.mjs — /readyz turns 503 the moment shutdown begins, so a
// load balancer (a Kubernetes Service) stops routing to the instance while its
// requests in flight finish; /metrics is still answered on an open connection until then.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SEED, inFlightReaches, rawConnect, startServer } from './lib.mjs';

test('after SIGTERM: /readyz is 503 unavailable at once, the request in flight still completes', async () => {
  const s = await startServer(['--admin-port', '0']);
  const probe = await rawConnect(s.port); // a kept-alive connection, as a prober's may be
  await probe.write('GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n');
  assert.equal((await probe.nextResponse()).status, 200);

  // A request in flight keeps the server draining.
  const body = JSON.stringify(SEED);
  const busy = await rawConnect(s.port);
  await busy.write('POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await inFlightReaches(s, 1);

  s.proc.kill('SIGTERM');
  await s.waitStderr((e) => e.includes('shutting down'));
  await probe.write('GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n');
  const r = await probe.nextResponse(); // checked against the spec's 503 for /readyz
  assert.equal(r.status, 503);
  assert.equal(JSON.parse(r.body).type, '/problems/unavailable');
  assert.equal(r.headers.connection, 'close');

  await busy.write(body.slice(10));
  const done = await busy.nextResponse();
  assert.equal(done.status, 200);
  const how = await s.exited;
  assert.deepEqual(how, { code: 0, signal: null });
});
