// tests/contract/property.test.mjs — property-based: requests generated from the spec's
// own request schemas, examples and parameters, mixed with junk (wrong methods, paths,
// content types, Accept headers, bodies that are not JSON), sent to the real binary.
// For every one: no 5xx, the status is documented for that path and method, and the
// headers and body fit the spec (tests/http/contract.mjs, through lib.mjs's request).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import SwaggerParser from '@apidevtools/swagger-parser';
import fc from 'fast-check';

import { SPEC, contractErrors } from '../http/contract.mjs';
import { request, startServer } from '../http/lib.mjs';

const RUNS = Number(process.env.CONTRACT_RUNS ?? 600);
let s;
let api; // the spec with every $ref resolved
before(async () => {
  s = await startServer(['--max-cells', '512', '--max-body', '65536']);
  api = await SwaggerParser.dereference(structuredClone(SPEC));
});
after(() => s.stop());

const NUMBER = fc.oneof(fc.integer({ min: -4, max: 4 }), fc.double({ min: -10, max: 10, noNaN: true }),
  fc.constantFrom(1e300, -1e300, 5e-324));

/** An arbitrary for a JSON Schema (the subset OpenAPI 3.1 documents use). */
function arb(sc, depth = 0) {
  if (!sc || depth > 8) return fc.constant(null);
  if ('const' in sc) return fc.constant(sc.const);
  if (sc.enum) return fc.constantFrom(...sc.enum);
  if (sc.oneOf || sc.anyOf) return fc.oneof(...(sc.oneOf ?? sc.anyOf).map((x) => arb(x, depth + 1)));
  if (sc.allOf) return arb(Object.assign({}, ...sc.allOf), depth + 1);
  const types = [].concat(sc.type ?? (sc.properties ? 'object' : sc.items ? 'array' : 'string'));
  if (types.length > 1) return fc.oneof(...types.map((t) => arb({ ...sc, type: t }, depth)));
  switch (types[0]) {
    case 'null': return fc.constant(null);
    case 'boolean': return fc.boolean();
    case 'integer': { // small, near the lower bound: where the interesting values are
      const min = Math.max(sc.minimum ?? -3, -(2 ** 31));
      return fc.integer({ min, max: Math.min(sc.maximum ?? min + 24, min + 1000) });
    }
    case 'number': return sc.exclusiveMinimum === undefined ? NUMBER : NUMBER.filter((x) => x > sc.exclusiveMinimum);
    case 'array': return fc.array(arb(sc.items, depth + 1), { minLength: sc.minItems ?? 0, maxLength: Math.min(sc.maxItems ?? 4, 4) });
    case 'object': {
      const props = Object.fromEntries(Object.entries(sc.properties ?? {}).map(([k, v]) => [k, arb(v, depth + 1)]));
      return fc.record(props, { requiredKeys: (sc.required ?? []).filter((k) => k in props) });
    }
    default: return fc.string({ maxLength: 8 });
  }
}

// Every operation of the spec, with what a request to it can carry.
const ops = () => Object.entries(api.paths).flatMap(([p, item]) =>
  ['get', 'head', 'post', 'options'].filter((m) => item[m]).map((m) => {
    const op = item[m];
    const params = [...(item.parameters ?? []), ...(op.parameters ?? [])];
    const media = op.requestBody?.content?.['application/json'];
    const examples = Object.values(media?.examples ?? {}).map((e) => e.value);
    return { p, m: m.toUpperCase(), params, schema: media?.schema, examples };
  }));

const JUNK_BODY = fc.oneof(fc.string({ maxLength: 40 }), fc.json({ maxDepth: 3 }), fc.constantFrom(
  '', '{', '{"q": [[1]], "q": [[2]]}', '\ufeff{}', '[]', 'null', '{"q": [[1, "0"]]}', 'x'.repeat(70000)));

/** One request: {method, path, headers, body}, built from an operation or plain junk. */
function requestArb(op) {
  const keys = Object.keys(op.schema?.properties ?? {});
  const bodyFromSpec = op.schema ? fc.oneof(
    { weight: 3, arbitrary: arb(op.schema) },
    ...(op.examples.length ? [{ weight: 4, arbitrary: fc.constantFrom(...op.examples) }] : []),
    ...(op.examples.length && keys.length ? [{ weight: 3, arbitrary: fc.tuple(fc.constantFrom(...op.examples),
      fc.constantFrom(...keys), arb(op.schema)).map(([ex, k, gen]) =>
      ({ ...ex, [k]: gen[k] ?? 'junk' })) }] : []),
  ).map((b) => JSON.stringify(b)) : fc.constant(undefined);
  const query = fc.array(fc.oneof(
    ...op.params.filter((x) => x.in === 'query').map((x) => arb(x.schema).map((v) => `${x.name}=${encodeURIComponent(v)}`)),
    fc.constantFrom('format=json', 'format=text', 'format=svg', 'format=png', 'x=1')), { maxLength: 2 });
  const path = op.p.includes('{') ? fc.oneof(fc.constantFrom('shape-mismatch', 'invalid-json', 'nope', '%2e%2e'))
    .map((v) => op.p.replace(/\{[^}]+\}/, v)) : fc.constant(op.p);
  return fc.record({
    method: fc.oneof({ weight: 5, arbitrary: fc.constant(op.m) }, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS')),
    path: fc.oneof({ weight: 8, arbitrary: fc.tuple(path, query).map(([p, q]) => (q.length ? `${p}?${q.join('&')}` : p)) },
      fc.constantFrom('/', '/nope', '/v1/attention/', '/v1', '/problems/', '/metrics', '/healthz/x')),
    headers: fc.record({
      'Content-Type': fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/json; charset=utf-8'),
      Accept: fc.constantFrom('*/*', 'application/json', 'application/problem+json', 'text/plain', 'image/svg+xml', 'image/png', 'text/html', 'application/*'),
    }, { requiredKeys: [] }),
    body: fc.oneof({ weight: 6, arbitrary: bodyFromSpec }, JUNK_BODY),
  });
}

test(`${RUNS} generated requests: no 5xx, every status documented, every response valid`, async (t) => {
  const statuses = new Map();
  // Operations that take a body get more of the runs: they have the most to get wrong.
  const gen = fc.oneof(...ops().map((op) => ({ weight: op.schema ? 4 : 1, arbitrary: requestArb(op) })));
  await fc.assert(fc.asyncProperty(gen, async (req) => {
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : req.body;
    let timer;
    const res = await Promise.race([ // lib.mjs checks the contract
      request(s.port, { ...req, body }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5000);
      }),
    ]).finally(() => clearTimeout(timer));
    assert.ok(res.status < 500, `${req.method} ${req.path} → ${res.status}: ${res.body}`);
    assert.deepEqual(contractErrors(req, res), []);
    const key = `${req.method} ${req.path.split('?')[0]} ${res.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }), { numRuns: RUNS, includeErrorInReport: true, seed: Number(process.env.CONTRACT_SEED ?? Date.now() % 2 ** 31) });
  const n = [...statuses.values()].reduce((a, b) => a + b, 0);
  assert.ok(n >= RUNS, `${n} requests sent`);
  const ok = [...statuses.keys()].filter((k) => / 200$/.test(k) && k.startsWith('POST /v1/'));
  assert.ok(ok.length > 0, 'some generated problems were computed (200), not only refused');
  const byStatus = {};
  for (const [k, v] of statuses) byStatus[k.split(' ')[2]] = (byStatus[k.split(' ')[2]] ?? 0) + v;
  t.diagnostic(`${n} requests; statuses: ${JSON.stringify(byStatus)}`);
});
