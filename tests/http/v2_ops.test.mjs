// tests/http/v2_ops.test.mjs — the operators' side of V2: Triton's statistics extension
// (GET /v2/models[/{model}[/versions/1]]/stats), model configuration
// (GET /v2/models/{model}[/versions/1]/config) and repository index
// (POST /v2/repository/index).
//
// The server is this file's own, and its tests run one after another, so every count it
// reports is what these tests sent. Each test still reads the statistics before and after
// its requests and holds the differences to what it sent: a test does not depend on the
// ones before it. Every answer is checked against api/openapi.yaml (contract.mjs).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postJson, request, requestBytes, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(() => s.stop());

const get = async (path) => {
  const r = await request(s.port, { path });
  assert.equal(r.status, 200, r.body.slice(0, 400));
  return r.json();
};
const statsOf = async (model) => {
  const all = await get(`/v2/models/${model}/stats`);
  assert.equal(all.model_stats.length, 1);
  return all.model_stats[0];
};

/** A V2 attention request of B problems (B = 0: no batch dimension) of n queries and keys. */
function attention(B, n = 3, d = 2) {
  const lead = B > 0 ? [B] : [];
  const count = (B || 1) * n * d;
  const data = Array.from({ length: count }, (_, i) => ((i * 7) % 5) / 4);
  return {
    inputs: [
      { name: 'Q', shape: [...lead, n, d], datatype: 'FP64', data },
      { name: 'K', shape: [...lead, n, d], datatype: 'FP64', data },
      { name: 'V', shape: [...lead, n, d], datatype: 'FP64', data },
    ],
  };
}

const DURATIONS = ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output',
  'cache_hit', 'cache_miss'];

/** after − before for every count and ns of a model's statistics, by name. */
function delta(before_, after_) {
  const d = {
    inference_count: after_.inference_count - before_.inference_count,
    execution_count: after_.execution_count - before_.execution_count,
    batches: {},
  };
  for (const k of DURATIONS) {
    d[k] = {
      count: after_.inference_stats[k].count - before_.inference_stats[k].count,
      ns: after_.inference_stats[k].ns - before_.inference_stats[k].ns,
    };
  }
  for (const row of after_.batch_stats) {
    const was = before_.batch_stats.find((r) => r.batch_size === row.batch_size);
    const d1 = {};
    for (const k of ['compute_input', 'compute_infer', 'compute_output']) {
      d1[k] = { count: row[k].count - (was?.[k].count ?? 0), ns: row[k].ns - (was?.[k].ns ?? 0) };
    }
    if (d1.compute_infer.count > 0) d.batches[row.batch_size] = d1;
  }
  return d;
}

test('after N requests, a batch of B and a failure, the counts are what was sent', async () => {
  const N = 3;
  const B = 4;
  const before_ = await statsOf('attention');
  const otherBefore = await statsOf('multihead');
  const t0 = Date.now();
  for (let i = 0; i < N; i++) {
    const r = await postJson(s.port, '/v2/models/attention/infer', attention(0));
    assert.equal(r.status, 200, r.body);
  }
  const batch = await postJson(s.port, '/v2/models/attention/versions/1/infer', attention(B));
  assert.equal(batch.status, 200, batch.body);
  assert.deepEqual(batch.json().outputs[0].shape.slice(0, 1), [B]);
  // K without V's rows: a 400 once the model is known.
  const bad = attention(0);
  bad.inputs[2].shape = [2, 2];
  bad.inputs[2].data = [1, 2, 3, 4];
  const failed = await postJson(s.port, '/v2/models/attention/infer', bad);
  assert.equal(failed.status, 400);
  const t1 = Date.now();
  const after_ = await statsOf('attention');

  const d = delta(before_, after_);
  assert.equal(d.inference_count, N + B, 'inference_count counts problems');
  assert.equal(d.execution_count, N + 1, 'execution_count counts requests');
  assert.equal(d.success.count, N + 1);
  assert.equal(d.fail.count, 1);
  for (const k of ['queue', 'compute_input', 'compute_infer', 'compute_output']) {
    assert.equal(d[k].count, N + 1, `${k} counts every request answered`);
  }
  assert.deepEqual([d.cache_hit, d.cache_miss], [{ count: 0, ns: 0 }, { count: 0, ns: 0 }]);
  // Batch sizes: N requests of one problem, one of B.
  assert.deepEqual(Object.keys(d.batches).map(Number).sort((a, b) => a - b), [1, B]);
  for (const [size, want] of [[1, N], [B, 1]]) {
    for (const k of ['compute_input', 'compute_infer', 'compute_output']) {
      assert.equal(d.batches[size][k].count, want, `batch ${size} ${k}`);
      assert.ok(d.batches[size][k].ns > 0, `batch ${size} ${k} ns`);
    }
  }
  // Nanoseconds: positive integers; the whole request holds its parts (no queue here: every
  // request was small enough for the worker that read it).
  for (const k of ['success', 'fail', 'compute_input', 'compute_infer', 'compute_output']) {
    assert.ok(Number.isInteger(after_.inference_stats[k].ns), `${k}.ns is an integer`);
    assert.ok(d[k].ns > 0, `${k}.ns grew`);
  }
  assert.equal(d.queue.ns, 0);
  assert.ok(d.success.ns >= d.compute_infer.ns);
  assert.equal(d.success.ns, d.queue.ns + d.compute_input.ns + d.compute_infer.ns + d.compute_output.ns);
  for (const k of ['compute_input', 'compute_infer', 'compute_output']) {
    const sum = Object.values(d.batches).reduce((acc, row) => acc + row[k].ns, 0);
    assert.equal(sum, d[k].ns, `batch_stats' ${k} add up to inference_stats'`);
  }
  assert.ok(after_.last_inference >= t0 && after_.last_inference <= t1,
    `last_inference ${after_.last_inference} within [${t0}, ${t1}]`);
  // The other model saw none of it.
  assert.deepEqual(await statsOf('multihead'), otherBefore);
});

test('a large request answered in the lane counts once, its wait as the queue', async () => {
  const before_ = await statsOf('attention');
  // WEIGHTS of 1200 x 1200 doubles: past the worker's share, so it waits for a lane thread.
  const n = 1200;
  const data = Array.from({ length: n }, (_, i) => (i % 10) / 10);
  const body = {
    inputs: ['Q', 'K', 'V'].map((name) => ({ name, shape: [n, 1], datatype: 'FP64', data })),
    outputs: [{ name: 'WEIGHTS', parameters: { binary_data: true } }],
  };
  const r = await requestBytes(s.port, { path: '/v2/models/attention/infer',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 200, r.body.slice(0, 400));
  const d = delta(before_, await statsOf('attention'));
  assert.equal(d.execution_count, 1);
  assert.equal(d.inference_count, 1);
  assert.equal(d.success.count, 1);
  assert.equal(d.queue.count, 1);
  assert.ok(d.queue.ns > 0, 'the time it waited for the lane is its queue');
  assert.equal(d.success.ns, d.queue.ns + d.compute_input.ns + d.compute_infer.ns + d.compute_output.ns);
});

test('failures count when the model is known: 400s of every kind, not 404s', async () => {
  const before_ = await statsOf('attention');
  const bodies = ['{', '{"inputs": []}', JSON.stringify({ inputs: [{ name: 'Q', shape: [1], datatype: 'FP64', data: [1] }] })];
  for (const body of bodies) {
    const r = await requestBytes(s.port, { path: '/v2/models/attention/infer',
      headers: { 'Content-Type': 'application/json' }, body });
    assert.equal(r.status, 400, body);
  }
  const unknown = await postJson(s.port, '/v2/models/gpt/infer', attention(0));
  assert.equal(unknown.status, 404);
  const d = delta(before_, await statsOf('attention'));
  assert.equal(d.fail.count, bodies.length);
  assert.ok(d.fail.ns > 0);
  assert.equal(d.success.count, 0);
  assert.equal(d.execution_count, 0);
});

test('GET /v2/models/stats lists every model, each as its own path answers it', async () => {
  const all = await get('/v2/models/stats');
  const names = all.model_stats.map((m) => m.name);
  assert.ok(names.includes('attention') && names.includes('multihead'), names.join());
  for (const m of all.model_stats) {
    assert.equal(m.version, '1');
    const meta = await get(`/v2/models/${m.name}`);
    assert.equal(meta.name, m.name);
    for (const path of [`/v2/models/${m.name}/stats`, `/v2/models/${m.name}/versions/1/stats`]) {
      const one = await get(path);
      assert.equal(one.model_stats.length, 1);
      assert.equal(one.model_stats[0].name, m.name);
      assert.deepEqual(Object.keys(one.model_stats[0]), Object.keys(m));
    }
    assert.deepEqual(m.response_stats, {});
    assert.deepEqual(m.memory_usage, []);
  }
  const server = await get('/v2');
  assert.ok(server.extensions.includes('statistics'), server.extensions.join());
});

test('stats: an unknown model or version is 404 in V2 form, another method 405', async () => {
  for (const path of ['/v2/models/gpt/stats', '/v2/models/attention/versions/2/stats',
    '/v2/models/gpt/versions/1/stats']) {
    const r = await request(s.port, { path });
    assert.equal(r.status, 404, path);
    assert.match(r.headers['content-type'], /^application\/json/);
    assert.ok(typeof r.json().error === 'string' && r.json().error.length > 0);
  }
  for (const path of ['/v2/models/stats', '/v2/models/attention/stats']) {
    const r = await request(s.port, { method: 'POST', path, body: '{}' });
    assert.equal(r.status, 405, path);
    assert.equal(r.headers.allow, 'GET, HEAD, OPTIONS');
    assert.ok(r.json().error);
  }
  const head = await requestBytes(s.port, { method: 'HEAD', path: '/v2/models/stats' });
  assert.equal(head.status, 200);
  assert.equal(head.raw.length, 0);
});

// ---------------------------------------------------------------- configuration

const eye = [1, 0, 0, 1];
const t = (name, shape, data, datatype = 'FP64') => ({ name, shape, datatype, data });
/* Requests each model answers; between them every optional input is left out by one. */
const BASES = {
  attention: [{ inputs: [t('Q', [2, 2], eye), t('K', [2, 2], eye), t('V', [2, 2], eye)] }],
  multihead: [
    { inputs: [t('X', [2, 2], eye), t('W_Q', [2, 2], eye), t('W_K', [2, 2], eye),
      t('W_V', [2, 2], eye), t('W_O', [2, 2], eye)], parameters: { heads: 1 } },
    { inputs: [t('X_Q', [2, 2], eye), t('X_KV', [2, 2], eye), t('W_Q', [2, 2], eye),
      t('W_K', [2, 2], eye), t('W_V', [2, 2], eye), t('W_O', [2, 2], eye)],
    parameters: { heads: 1 } },
  ],
};

test("each model's configuration is its metadata in Triton's words", async () => {
  const { model_stats: models } = await get('/v2/models/stats');
  for (const { name } of models) {
    const meta = await get(`/v2/models/${name}`);
    const config = await get(`/v2/models/${name}/config`);
    assert.deepEqual(await get(`/v2/models/${name}/versions/1/config`), config);
    assert.equal(config.name, name);
    assert.equal(config.platform, meta.platform);
    assert.equal(config.backend, 'attnd');
    assert.equal(config.max_batch_size, 0);
    const triton = (datatype) => (datatype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${datatype}`);
    for (const [list, mine] of [[meta.inputs, config.input], [meta.outputs, config.output]]) {
      assert.deepEqual(mine.map((x) => x.name), list.map((x) => x.name), name);
      for (const [i, x] of list.entries()) {
        assert.equal(mine[i].data_type, triton(x.datatype), `${name} ${x.name}`);
        assert.deepEqual(mine[i].dims, x.shape, `${name} ${x.name}`);
      }
    }
    assert.ok(config.input.every((x) => typeof x.optional === 'boolean'));
    assert.ok(config.output.every((x) => !('optional' in x)));
  }
  assert.ok((await get('/v2')).extensions.includes('model_configuration'));
});

test("an input the configuration calls required is required; an optional one is not", async () => {
  for (const [model, bases] of Object.entries(BASES)) {
    const { input } = await get(`/v2/models/${model}/config`);
    for (const base of bases) {
      const r = await postJson(s.port, `/v2/models/${model}/infer`, base);
      assert.equal(r.status, 200, r.body);
    }
    for (const x of input) {
      if (x.optional) {
        assert.ok(bases.some((b) => !b.inputs.some((i) => i.name === x.name)),
          `${model}: a request without ${x.name} is answered`);
        continue;
      }
      for (const base of bases) {
        const without = { ...base, inputs: base.inputs.filter((i) => i.name !== x.name) };
        assert.notEqual(without.inputs.length, base.inputs.length, `${model}: ${x.name} is sent`);
        const r = await postJson(s.port, `/v2/models/${model}/infer`, without);
        assert.equal(r.status, 400, `${model} without ${x.name}`);
        assert.equal(r.json().type, '/problems/missing-field');
        assert.match(r.json().error, new RegExp(`\\b${x.name}\\b`));
      }
    }
  }
});

test('config: an unknown model or version is 404 in V2 form, another method 405', async () => {
  for (const path of ['/v2/models/gpt/config', '/v2/models/attention/versions/2/config']) {
    const r = await request(s.port, { path });
    assert.equal(r.status, 404, path);
    assert.ok(r.json().error);
  }
  const r = await request(s.port, { method: 'POST', path: '/v2/models/attention/config', body: '{}' });
  assert.equal(r.status, 405);
  assert.equal(r.headers.allow, 'GET, HEAD, OPTIONS');
});

// ---------------------------------------------------------------- repository index

const index = (body, headers = {}) => request(s.port, {
  method: 'POST', path: '/v2/repository/index', headers, body,
});

test('the repository index lists every model, each served, READY', async () => {
  const stats = (await get('/v2/models/stats')).model_stats.map((m) => m.name);
  // tritonclient posts no body; KServe-style clients {"ready": true}; both as JSON or not.
  const answers = [
    await index(undefined),
    await index(''),
    await index(' \n'),
    await index('{}', { 'Content-Type': 'application/json' }),
    await index('{"ready": true}', { 'Content-Type': 'application/json' }),
    await index('{"ready": false}'),
  ];
  for (const r of answers) {
    assert.equal(r.status, 200, r.body);
    assert.match(r.headers['content-type'], /^application\/json/);
    assert.deepEqual(r.json(), answers[0].json());
  }
  const list = answers[0].json();
  assert.deepEqual(list.map((m) => m.name), stats);
  assert.ok(['attention', 'multihead'].every((n) => stats.includes(n)), stats.join());
  for (const m of list) {
    assert.deepEqual(m, { name: m.name, version: '1', state: 'READY' });
    for (const path of [`/v2/models/${m.name}`, `/v2/models/${m.name}/ready`,
      `/v2/models/${m.name}/config`]) {
      assert.equal((await request(s.port, { path })).status, 200, path);
    }
  }
  assert.ok((await get('/v2')).extensions.includes('model_repository'));
});

test('repository index: a body that is not {"ready": bool} is a 400 naming what is wrong', async () => {
  const cases = [
    ['{"ready": tru', '/problems/invalid-json', ''],
    ['[true]', '/problems/invalid-value', ''],
    ['"ready"', '/problems/invalid-value', ''],
    ['{"ready": 1}', '/problems/invalid-value', '/ready'],
    ['{"ready": "true"}', '/problems/invalid-value', '/ready'],
    ['{"redy": true}', '/problems/unknown-field', '/redy'],
  ];
  for (const [body, type, pointer] of cases) {
    const r = await index(body, { 'Content-Type': 'application/json' });
    assert.equal(r.status, 400, body);
    const e = r.json();
    assert.equal(e.type, type, body);
    assert.ok(e.error.length > 0);
    assert.equal(e.errors[0].pointer, pointer, body);
  }
});

test('repository index: GET is 405; load and unload are not served (404, V2 form)', async () => {
  const r = await request(s.port, { path: '/v2/repository/index' });
  assert.equal(r.status, 405);
  assert.equal(r.headers.allow, 'POST, OPTIONS');
  assert.ok(r.json().error);
  for (const path of ['/v2/repository/models/attention/load',
    '/v2/repository/models/attention/unload']) {
    const x = await request(s.port, { method: 'POST', path, body: '{}' });
    assert.equal(x.status, 404, path);
    assert.match(x.headers['content-type'], /^application\/json/);
    assert.ok(x.json().error);
  }
  const wrong = await index('{}', { 'Content-Type': 'text/csv' });
  assert.equal(wrong.status, 415);
  assert.ok(wrong.json().error);
});
