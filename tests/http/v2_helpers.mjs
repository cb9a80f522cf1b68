// tests/http/v2_helpers.mjs — what the V2 tests build and read: bodies with JSON or binary
// tensors (FP64, FP16, BF16, BOOL bytes by their definitions, exact values only), the
// outputs of an answer (FP64 bytes kept for bit-for-bit comparisons), small deterministic
// matrices, and a tolerance check.

import assert from 'node:assert/strict';

import { postBytes } from './lib.mjs';

export const flat = (m) => (Array.isArray(m) ? m.flat(Infinity) : [m]);

// ---- the formats' bytes, by their definitions (exact values only) ----

/** FP16 bits of x, which FP16 holds exactly (a normal number or 0). */
export function fp16Bits(x) {
  if (x === 0) return Object.is(x, -0) ? 0x8000 : 0;
  const sign = x < 0 ? 0x8000 : 0, a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  const fraction = (a / 2 ** e - 1) * 1024;
  assert.ok(Number.isInteger(fraction) && e >= -14 && e <= 15, `${x} is an FP16 normal`);
  return sign | ((e + 15) << 10) | fraction;
}

/** BF16 bits of x: a float32's top half, when its low half is 0. */
export function bf16Bits(x) {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  assert.equal(u & 0xffff, 0, `${x} is a BF16 value`);
  return u >>> 16;
}

export function bytesOf(datatype, values) {
  if (datatype === 'FP16') return Buffer.from(new Uint16Array(values.map(fp16Bits)).buffer);
  if (datatype === 'BF16') return Buffer.from(new Uint16Array(values.map(bf16Bits)).buffer);
  if (datatype === 'BOOL') return Buffer.from(new Uint8Array(values.map((x) => (x ? 1 : 0))).buffer);
  if (datatype === 'INT64') return Buffer.from(new BigInt64Array(values.map((x) => BigInt(x))).buffer);
  if (datatype === 'INT32') return Buffer.from(new Int32Array(values).buffer);
  if (datatype === 'INT8') return Buffer.from(new Int8Array(values).buffer);
  return Buffer.from(new Float64Array(values).buffer);
}

/** A V2 body: JSON data, or every input and output binary (tritonclient's form). */
export function body(inputs, outputs, parameters, binary) {
  if (!binary) {
    return {
      body: JSON.stringify({
        inputs: inputs.map(({ values, ...t }) => ({ ...t, data: values })),
        outputs: outputs.map((name) => ({ name })), parameters,
      }),
      headers: { 'Content-Type': 'application/json' },
    };
  }
  const header = Buffer.from(JSON.stringify({
    inputs: inputs.map(({ name, shape, datatype, values }) => ({
      name, shape, datatype, parameters: { binary_data_size: bytesOf(datatype, values).length },
    })),
    outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
    parameters,
  }));
  return {
    body: Buffer.concat([header, ...inputs.map((i) => bytesOf(i.datatype, i.values))]),
    headers: { 'Inference-Header-Content-Length': String(header.length) },
  };
}

/** {NAME: {datatype, shape, data, bytes}} of a V2 answer, JSON or binary (FP64 bytes kept). */
export function outputsOf(r) {
  assert.equal(r.status, 200, r.body.slice(0, 600));
  const binary = r.headers['content-type'] === 'application/octet-stream';
  const n = binary ? Number(r.headers['inference-header-content-length']) : r.raw.length;
  const header = JSON.parse(r.raw.subarray(0, n).toString('utf8'));
  const out = {};
  let at = n;
  for (const o of header.outputs) {
    let data = o.data, bytes;
    if (binary) {
      const size = o.parameters.binary_data_size;
      assert.equal(o.datatype, 'FP64');
      bytes = Buffer.from(r.raw.subarray(at, at + size));
      data = Array.from(new Float64Array(new Uint8Array(bytes).buffer));
      at += size;
    }
    out[o.name] = { ...o, data, bytes };
  }
  if (binary) assert.equal(at, r.raw.length, 'the binary pieces fill the body exactly');
  return out;
}

export function assertClose(got, want, tol, what) {
  const w = flat(want);
  assert.equal(got.length, w.length, `${what}: length`);
  for (let i = 0; i < w.length; i++) {
    const ok = got[i] === w[i] || Math.abs(got[i] - w[i]) <= tol * (1 + Math.abs(w[i]));
    assert.ok(ok, `${what}[${i}]: ${got[i]} vs ${w[i]}`);
  }
}

/** want's doubles as FP64 bytes, for a bit-for-bit comparison. */
export const fp64Bytes = (want) => Buffer.from(new Float64Array(flat(want)).buffer);

/** A matrix of rows × cols with small deterministic values (multiples of 1/8: FP16 and
 * BF16 hold them exactly). */
export const fill = (rows, cols, seed) => Array.from({ length: rows }, (_, i) =>
  Array.from({ length: cols }, (_, j) => ((((i + 1) * 7 + (j + 1) * seed) % 13) - 6) / 8));

export const tensor = (name, m, datatype = 'FP64') => ({ name, shape: [m.length, m[0].length], datatype, values: flat(m) });
export const batched = (name, ms, datatype = 'FP64') =>
  ({ name, shape: [ms.length, ms[0].length, ms[0][0].length], datatype, values: flat(ms) });

/** POST a V2 body (body()) to `model` on the server at port. */
export const inferAt = (port, model, inputs, outputs, parameters, binary = false) => {
  const b = body(inputs, outputs, parameters, binary);
  return postBytes(port, `/v2/models/${model}/infer`, b.body, b.headers);
};

/** A bad request's V2 error: status 400, type, pointer, message, and a hint. */
export async function refusedAt(port, model, inputs, outputs, parameters, { type, pointer, message }) {
  const r = await inferAt(port, model, inputs, outputs, parameters);
  assert.equal(r.status, 400, r.body);
  assert.equal(r.headers['content-type'], 'application/json');
  const j = r.json();
  assert.equal(j.type, `/problems/${type}`, r.body);
  assert.equal(j.error, j.detail);
  assert.equal(j.errors?.[0]?.pointer, pointer, r.body);
  assert.match(j.error, message, r.body);
  assert.ok(j.errors[0].hint, `${r.body} has a hint`);
  return j;
}

