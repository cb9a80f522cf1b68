// tests/abuse/answer.test.mjs — an answer of hundreds of megabytes is sent whole and
// the server lives: libmicrohttpd 0.9.75 copies a vectored answer's list of pieces into
// the connection's 64 KiB memory pool, and an answer in over 4,000 pieces (about 700 MB)
// used to close the connection "out of memory" and then abort the process
// (server/exchange.c, SRV_IOV_MAX). Heavy (a 703 MB answer): `make abuse`, not `make test`.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { test } from 'node:test';

import { request, startServer } from '../http/lib.mjs';

const peakKiB = (pid) =>
  Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m)[1]);

/** POSTs body and streams the answer: status, headers, byte count, its first and last bytes. */
function streamPost(port, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST',
      headers: { 'Content-Type': 'application/json' } }, (res) => {
      let bytes = 0;
      let head = '';
      let tail = Buffer.alloc(0);
      res.on('data', (d) => {
        if (head.length < 64) head += d.subarray(0, 64).toString('latin1');
        bytes += d.length;
        tail = Buffer.concat([tail, d]).subarray(-64);
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, bytes, head,
        tail: tail.toString('latin1') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(120000, () => req.destroy(new Error('no answer in 120 s')));
    req.end(body);
  });
}

test('the 55-byte request with a 703 MB answer, allowed on purpose: sent whole, server alive', async (t) => {
  const s = await startServer(['--log', 'text', '--max-request-bytes', String(2 * 2 ** 30)]);
  t.after(() => s.proc.kill('SIGKILL'));
  const body = JSON.stringify({ heads: 1, random: { seed: 1, n: 2048, d_model: 1024 } });
  assert.equal(body.length, 55);
  const r = await streamPost(s.port, '/v1/multihead', body);
  assert.equal(r.status, 200);
  assert.equal(Number(r.headers['content-length']), r.bytes, 'every byte announced arrived');
  assert.ok(r.bytes > 700e6, `${r.bytes} bytes`);
  assert.ok(r.head.startsWith('{"d_model":1024,"heads":1,'), r.head);
  // The summary ends with tied_keys ([head][query] lists of keys), and a JSON answer
  // with a newline.
  assert.match(r.tail, /,\[\d+\]\]\]\},"warnings":\[\]\}\n$/, r.tail);
  const health = await request(s.port, { path: '/healthz' });
  assert.equal(health.status, 200, 'the server still answers');
  assert.equal(s.proc.exitCode, null, 'and is still running');
  // Its working set is estimated at 1.28 GB (admission's upper bound); the peak stays under it.
  const peak = peakKiB(s.proc.pid) * 1024;
  console.log(`# peak RSS ${(peak / 1e6).toFixed(0)} MB for a ${(r.bytes / 1e6).toFixed(0)} MB answer`);
  assert.ok(peak < 1.28e9, `peak RSS ${peak}`);
  assert.doesNotMatch(s.stderr(), /out of memory|Fatal error/);
  await s.stop();
});
