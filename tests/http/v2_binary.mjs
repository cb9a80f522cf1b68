// tests/http/v2_binary.mjs — V2 binary tensor bodies for the tests, built by hand as
// Triton's binary tensor data extension lays them out: the JSON header, then each
// input's bytes, little-endian, its length in parameters.binary_data_size.

import assert from 'node:assert/strict';

assert.equal(new Uint8Array(new Uint16Array([1]).buffer)[0], 1, 'the tests build little-endian bytes');

export function u16Bytes(bits) {
  return Buffer.from(new Uint16Array(bits).buffer);
}
export function f64Bytes(values) {
  return Buffer.from(new Float64Array(values).buffer);
}

/** A binary request: inputs [{name, shape, datatype, bytes}], outputs [{name, datatype?}]. */
export function binaryBody(inputs, outputs, parameters) {
  const header = {
    inputs: inputs.map(({ name, shape, datatype, bytes }) => ({
      name, shape, datatype, parameters: { binary_data_size: bytes.length } })),
    outputs: outputs.map(({ name, datatype }) => ({
      name, parameters: { binary_data: true, ...(datatype ? { datatype } : {}) } })),
  };
  if (parameters) header.parameters = parameters;
  const head = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([head, ...inputs.map((i) => i.bytes)]),
    headers: { 'Inference-Header-Content-Length': String(head.length) } };
}

/** The answer's JSON header and its binary tensors' bytes by name. */
export function binaryAnswer(r) {
  assert.equal(r.status, 200, r.body.slice(0, 400));
  const n = Number(r.headers['inference-header-content-length']);
  const header = JSON.parse(r.raw.subarray(0, n).toString('utf8'));
  const pieces = {};
  let at = n;
  for (const o of header.outputs) {
    const size = o.parameters.binary_data_size;
    pieces[o.name] = { datatype: o.datatype, shape: o.shape, bytes: r.raw.subarray(at, at + size) };
    at += size;
  }
  assert.equal(at, r.raw.length);
  return pieces;
}
