// tests/http/contract.mjs — api/openapi.yaml as a tested contract: every response an
// HTTP test receives is checked against the spec's description of its path, method,
// status and media type. lib.mjs's request helpers call assertContract on each
// response, so a test cannot pass on an answer the spec does not describe.
//
// The rules, beyond JSON Schema:
// - The path is matched against the spec's paths (exact before templated). A path the
//   spec does not have may only answer 404 not-found (503 while shutting down), or 204
//   to OPTIONS (the preflight is answered on every path).
// - A method the path does not have may only answer 405 (or 503), as documented with
//   the path's other operations; OPTIONS, answered on every path, may also answer 204.
// - 400 bad-request, 414 and 501 may answer any request: x-protocol-responses.
// - A status must be listed for the operation, or match its NXX range. `default`
//   covers 500 only: every status the server means to send is listed explicitly.
// - Headers the response marks `required` must be present; every documented header
//   that is present must fit its schema.
// - HEAD, 204 and a response without `content` have no body. Otherwise the
//   Content-Type must be one of the response's media types (parameters in the spec's
//   key, such as `version=0.0.4`, must be present too), and the body must validate:
//   parsed for JSON types, as a string for the others. Only a 503 may have no body
//   (the server could not even write the problem).
//
// Schemas are compiled with ajv 8 (JSON Schema 2020-12, as OpenAPI 3.1 uses) from the
// whole document, registered under an http-style $id so that '#/components/...'
// references resolve.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SPEC_FILE = path.join(ROOT, 'api/openapi.yaml');
export const SPEC = YAML.parse(fs.readFileSync(SPEC_FILE, 'utf8'), { version: '1.2' });
export const SPEC_ID = 'http://attnd.invalid/openapi.json';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// strict: false because the document around the schemas has OpenAPI's own keys
// (paths, info, example, ...), which are not JSON Schema keywords.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...SPEC, $id: SPEC_ID });

const compiled = new Map();
/** The validator for the schema at JSON pointer segments `ptr` of the spec. */
function validatorAt(ptr) {
  const fragment = ptr
    .map((s) => encodeURIComponent(String(s).replace(/~/g, '~0').replace(/\//g, '~1')))
    .join('/');
  const ref = `${SPEC_ID}#/${fragment}`;
  if (!compiled.has(ref)) compiled.set(ref, ajv.compile({ $ref: ref }));
  return compiled.get(ref);
}

/** Follows OpenAPI $refs ('#/components/...'): {obj, ptr} of the object itself. */
function deref(obj, ptr) {
  for (let hops = 0; obj && typeof obj.$ref === 'string' && hops < 10; hops++) {
    if (!obj.$ref.startsWith('#/')) throw new Error(`unsupported $ref ${obj.$ref}`);
    ptr = obj.$ref.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    obj = ptr.reduce((o, k) => (o == null ? undefined : o[k]), SPEC);
  }
  return { obj, ptr };
}

const escapeRe = (s) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
const PATHS = Object.keys(SPEC.paths)
  .map((p) => ({
    p,
    templated: p.includes('{'),
    // A segment may be empty: the server routes /problems/ as /problems/{type} with an
    // empty (hence unknown) type.
    re: new RegExp(`^${escapeRe(p).replace(/\{[^}/]+\}/g, '[^/]*')}$`),
  }))
  .sort((a, b) => Number(a.templated) - Number(b.templated));

/** The spec's path template for a request path (query string ignored), or undefined. */
export function specPath(reqPath) {
  // An absolute-form target (http://host:port/path) is routed by its path.
  let p = reqPath.replace(/^https?:\/\/[^/?]*/i, '').split('?')[0] || '/';
  try {
    p = decodeURIComponent(p);
  } catch {
    /* keep it raw */
  }
  return PATHS.find((x) => x.re.test(p))?.p;
}

const header = (headers, name) => headers[name.toLowerCase()];

/** Splits a media type into its lower-case base and its parameters. */
function mediaType(s) {
  const [base, ...params] = s.split(';').map((x) => x.trim());
  return {
    base: base.toLowerCase(),
    params: params.filter(Boolean).map((x) => x.replace(/\s*=\s*/, '=').toLowerCase()),
  };
}

/** The spec's Response object (and its pointer) for this request and status; or an error. */
function findResponse(method, reqPath, status) {
  const m = method.toLowerCase();
  const template = specPath(reqPath);
  if (template === undefined) {
    if (m === 'options' && status === 204) return { ptr: ['components', 'responses', 'Preflight'] };
    if (status === 404) return { ptr: ['components', 'responses', m === 'head' ? 'NotFoundHead' : 'NotFound'] };
    if (status === 503) return { ptr: ['components', 'responses', m === 'head' ? 'UnavailableHead' : 'Unavailable'] };
    return { error: `the spec has no path for ${reqPath}: only 404 (or 204 to OPTIONS, 503 when shutting down) may answer it` };
  }
  const item = SPEC.paths[template];
  // The preflight is answered on every path (the spec says so once, in its description).
  if (m === 'options' && !(m in item) && status === 204)
    return { ptr: ['components', 'responses', 'Preflight'] };
  if (!(m in item)) {
    if (status !== 405 && status !== 503)
      return { error: `${template} has no ${method} operation, so only 405 (or 503) may answer, not ${status}` };
    for (const other of METHODS) {
      if (item[other]?.responses?.[status])
        return { ptr: ['paths', template, other, 'responses', String(status)] };
    }
    return { error: `${template}: no operation documents ${status}` };
  }
  const rs = item[m].responses ?? {};
  const key = [String(status), `${String(status)[0]}XX`].find((k) => k in rs) ??
    (status === 500 && 'default' in rs ? 'default' : undefined);
  if (key === undefined)
    return { error: `status ${status} is not documented for ${method} ${template} (documented: ${Object.keys(rs).join(', ')})` };
  return { ptr: ['paths', template, m, 'responses', key] };
}

// The answers to malformed HTTP, which any path and method may give, are listed once
// under the spec's `x-protocol-responses` (by status). One is chosen when the answer's
// problem type is that response's (or the answer has no body, as for HEAD); a status
// the operation documents itself (400 invalid-json) is looked up there otherwise.
const PROTOCOL = Object.fromEntries(Object.entries(SPEC['x-protocol-responses'] ?? {}).map(
  ([status, ref]) => {
    const { obj, ptr } = deref(ref, ['x-protocol-responses', status]);
    const type = obj.content?.['application/problem+json']?.schema?.allOf
      ?.find((s) => s.properties?.type)?.properties.type.const;
    return [status, { ptr, type }];
  }));

/** {ptr} of the protocol response this answer is, or undefined. */
function protocolResponse(res) {
  const p = PROTOCOL[String(res.status)];
  if (!p) return undefined;
  if (!res.body) return { ptr: p.ptr };
  try {
    return JSON.parse(res.body).type === p.type ? { ptr: p.ptr } : undefined;
  } catch {
    return undefined;
  }
}

function ajvText(validate) {
  return ajv.errorsText(validate.errors, { dataVar: 'body', separator: '; ' });
}

/** Why a value fails a header's schema, or null. Header values arrive as strings. */
function headerError(schemaPtr, schema, value) {
  let v = value;
  const types = [].concat(schema?.type ?? []);
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(value))
    v = Number(value);
  const validate = validatorAt(schemaPtr);
  return validate(v) ? null : ajvText(validate);
}

/**
 * Every way this response departs from the spec, as a list of sentences (empty when it
 * conforms). req: {method, path}; res: {status, headers (lower-case names), body (string)}.
 */
export function contractErrors(req, res) {
  const method = (req.method ?? 'GET').toUpperCase();
  const found = protocolResponse(res) ?? findResponse(method, req.path, res.status);
  if (found.error) return [found.error];
  const { obj: response, ptr } = deref(found.ptr.reduce((o, k) => o[k], SPEC), found.ptr);
  const errors = [];

  for (const [name, h0] of Object.entries(response.headers ?? {})) {
    const { obj: h, ptr: hptr } = deref(h0, [...ptr, 'headers', name]);
    const value = header(res.headers, name);
    if (value === undefined) {
      if (h.required) errors.push(`the ${name} header is required but absent`);
      continue;
    }
    if (h.schema) {
      const { obj: schema } = deref(h.schema, [...hptr, 'schema']);
      const why = headerError([...hptr, 'schema'], schema, value);
      if (why) errors.push(`the ${name} header (${JSON.stringify(value)}) does not fit: ${why}`);
    }
  }

  const body = res.body ?? '';
  const noBody = method === 'HEAD' || res.status === 204 || res.status === 304;
  if (noBody || !response.content) {
    if (body.length > 0)
      errors.push(`a body of ${body.length} bytes where the spec documents none`);
    return errors;
  }
  if (body.length === 0) {
    if (res.status !== 503) errors.push('an empty body where the spec documents content');
    return errors;
  }
  const ct = header(res.headers, 'content-type');
  if (!ct) return [...errors, 'a body without a Content-Type'];
  const got = mediaType(ct);
  const key = Object.keys(response.content).find((k) => {
    const want = mediaType(k);
    return want.base === got.base && want.params.every((p) => got.params.includes(p));
  });
  if (key === undefined) {
    errors.push(`Content-Type ${ct} is not one the spec lists (${Object.keys(response.content).join(', ')})`);
    return errors;
  }
  const media = response.content[key];
  if (!media.schema) return errors;
  let data = body;
  if (got.base === 'application/json' || got.base.endsWith('+json')) {
    try {
      data = JSON.parse(body);
    } catch (e) {
      errors.push(`the body is not JSON (${e.message})`);
      return errors;
    }
  }
  const validate = validatorAt([...ptr, 'content', key, 'schema']);
  if (!validate(data)) errors.push(`the body does not fit ${key}: ${ajvText(validate)}`);
  return errors;
}

/** Throws when the response departs from the spec. */
export function assertContract(req, res) {
  const errors = contractErrors(req, res);
  if (errors.length === 0) return;
  const shown = (res.body ?? '').length > 600 ? `${res.body.slice(0, 600)}...` : res.body;
  throw new Error(`contract: ${req.method ?? 'GET'} ${req.path} answered ${res.status}, ` +
    `which api/openapi.yaml does not describe:\n  - ${errors.join('\n  - ')}\n  body: ${shown}`);
}
