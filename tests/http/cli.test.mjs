// tests/http/cli.test.mjs — the command line: --help, --version, bad values, precedence.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { request, runAttnd, startServer } from './lib.mjs';

test('--help prints the usage on stdout and exits 0', () => {
  const r = runAttnd(['--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^usage: attnd/);
  for (const flag of ['--bind', '--port', '--threads', '--max-body', '--max-cells', '--max-work',
    '--max-batch', '--max-memory', '--max-request-bytes', '--timeout', '--request-timeout',
    '--max-connections', '--max-client-connections', '--admin-port', '--cors-origin', '--log',
    '--probe',
    '--version']) {
    assert.ok(r.stdout.includes(flag), `usage mentions ${flag}`);
  }
  assert.equal(r.stderr, '');
});

test('--version prints name, version and build', () => {
  const r = runAttnd(['--version']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^attnd \d+\.\d+\.\d+\S* \(build \S+\)\n$/);
});

const bad = [
  [['--port', '-1'], '--port', '"-1"', /0 to 65535/],
  [['--port', '70000'], '--port', '"70000"', /0 to 65535/],
  [['--port=70000'], '--port', '"70000"', /0 to 65535/],
  [['--threads', '0'], '--threads', '"0"', /1 to 1024/],
  [['--max-body', 'abc'], '--max-body', '"abc"', /integer from 1 to/],
  [['--max-cells', '1e6'], '--max-cells', '"1e6"', /integer from 1 to/],
  [['--max-work', '0'], '--max-work', '"0"', /integer from 1 to .*multiply-adds/],
  [['--max-batch', '0'], '--max-batch', '"0"', /1 to 4096/],
  [['--max-memory', '-1'], '--max-memory', '"-1"', /integer from 0 to .*0 = two thirds/],
  [['--max-memory', '1G'], '--max-memory', '"1G"', /integer from 0 to/],
  [['--max-request-bytes', '-5'], '--max-request-bytes', '"-5"', /integer from 0 to .*0 = 512 MiB/],
  [['--log', 'loud'], '--log', '"loud"', /text, json or off/],
  [['--timeout', '1x'], '--timeout', '"1x"', /1 to 86400/],
  [['--timeout', ' 5'], '--timeout', '" 5"', /1 to 86400/],
  [['--request-timeout', '0'], '--request-timeout', '"0"', /1 to 86400/],
  [['--max-connections', '0'], '--max-connections', '"0"', /1 to 65536/],
  [['--max-client-connections', '-1'], '--max-client-connections', '"-1"', /0 to 65536.*0 = no limit/],
  [['--admin-port', 'on'], '--admin-port', '"on"', /0 to 65535.*off = none/],
  [['--bind', 'localhost:80'], '--bind', '"localhost:80"', /IPv4 or IPv6/],
  [['--cors-origin', 'example.org'], '--cors-origin', '"example.org"', /origins/],
  [['--bogus'], '"--bogus"', 'unknown option', /see --help/],
  [['--port'], '--port', 'needs a value', /see --help/],
  [['serve'], '"serve"', 'unexpected argument', /see --help/],
];

for (const [args, names, value, range] of bad) {
  test(`bad value: attnd ${args.join(' ')} exits 2 naming the flag`, () => {
    const r = runAttnd(args);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stdout, '');
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, 'one line of explanation');
    assert.ok(lines[0].startsWith('attnd: '), lines[0]);
    assert.ok(lines[0].includes(names), lines[0]);
    assert.ok(lines[0].includes(value), lines[0]);
    assert.match(lines[0], range);
  });
}

test('a bad environment variable exits 2 naming the variable', () => {
  const r = runAttnd([], { ATTND_MAX_BATCH: 'lots' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^attnd: ATTND_MAX_BATCH: invalid value "lots": expected an integer from 1 to 4096/);
});

test('a value that is not printable is not echoed raw', () => {
  const r = runAttnd(['--log', 'a\u001b[31mred']);
  assert.equal(r.status, 2);
  assert.ok(!r.stderr.includes('\u001b'), r.stderr);
});

test('environment beats default, flag beats environment', async () => {
  const body = 'x'.repeat(2000); // over 1000, under 5000
  const post = (port) => request(port, {
    method: 'POST', path: '/v1/attention', headers: { 'Content-Type': 'application/json' }, body,
  });

  let s = await startServer([], { ATTND_MAX_BODY: '1000' });
  try {
    assert.equal((await post(s.port)).status, 413, 'env lowers the default');
  } finally {
    await s.stop();
  }

  s = await startServer(['--max-body', '5000'], { ATTND_MAX_BODY: '1000' });
  try {
    assert.equal((await post(s.port)).status, 400, 'the flag wins: the body is read, and is not JSON');
  } finally {
    await s.stop();
  }

  // --log text is given by the helper; ATTND_LOG=json must lose against it.
  s = await startServer([], { ATTND_LOG: 'json' });
  try {
    const r = await request(s.port, { path: '/healthz', headers: { 'X-Request-Id': 'prec-1' } });
    assert.equal(r.status, 200);
    const err = await s.waitStderr((e) => e.includes('prec-1'));
    assert.match(err, /id=prec-1 method=GET path=\/healthz status=200/);
  } finally {
    await s.stop();
  }
});

test('ATTND_MAX_MEMORY sets the memory budget, and --max-memory beats it', async () => {
  const budget = async (args, env) => {
    const s = await startServer(args, env);
    try {
      const text = (await request(s.port, { path: '/metrics' })).body;
      return Number(text.match(/^attnd_memory_budget_bytes (\d+)$/m)[1]);
    } finally {
      await s.stop();
    }
  };
  assert.equal(await budget([], { ATTND_MAX_MEMORY: '123456789' }), 123456789);
  assert.equal(await budget(['--max-memory', '987654321'], { ATTND_MAX_MEMORY: '123456789' }),
    987654321);
});

test('a flag overrides even a malformed variable', async () => {
  const s = await startServer([], { ATTND_PORT: 'eighty' }); // the helper passes --port 0
  try {
    assert.equal((await request(s.port, { path: '/healthz' })).status, 200);
  } finally {
    await s.stop();
  }
});

test('--port=N and --port N both work; the real port is printed', async () => {
  const s = await startServer(['--threads=2', '--timeout', '5']);
  try {
    assert.ok(s.port > 0);
    assert.equal(s.host, '127.0.0.1');
    assert.match(s.stdout(), /^attnd listening on http:\/\/127\.0\.0\.1:\d+\n$/);
  } finally {
    await s.stop();
  }
});
