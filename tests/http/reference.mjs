// tests/http/reference.mjs — attention by its definition, written as plainly as the
// lecture notes write it, for tests to compare attnd's answers with: the masked scores,
// each row's max, sum and log-sum-exp, the weights and the output.

import assert from 'node:assert/strict';

/** A random (n, m) matrix in [-amp, amp) from the generator r. */
export const matrix = (r, n, m, amp = 2) =>
  Array.from({ length: n }, () => Array.from({ length: m }, () => (r() * 2 - 1) * amp));

/**
 * The masked scores of a problem as the contract defines them: q·kᵀ·scale + bias, null
 * where the mask blocks (keep semantics; a vector mask is key padding; "causal" is
 * bottom-right aligned).
 */
export function maskedScores({ q, k, bias, mask, scale }) {
  const nQ = q.length, nK = k.length, dK = q[0].length;
  const s = scale ?? 1 / Math.sqrt(dK);
  return q.map((qi, i) => k.map((kj, j) => {
    let dot = 0;
    for (let c = 0; c < dK; c++) dot += qi[c] * kj[c];
    const allowed = mask === undefined ? true
      : mask === 'causal' ? j <= i + (nK - nQ)
        : Array.isArray(mask[0]) ? mask[i][j] !== 0 : mask[j] !== 0;
    return allowed ? dot * s + (bias ? bias[i][j] : 0) : null;
  }));
}

/** Each row's [row_max, row_sum, lse], with an optional sink logit z counted. */
export function rowStats(masked, z) {
  return masked.map((row) => {
    const seen = row.filter((x) => x !== null);
    if (z !== undefined) seen.push(z);
    if (seen.length === 0) return [null, 0, null];
    const max = Math.max(...seen);
    const sum = seen.reduce((acc, x) => acc + Math.exp(x - max), 0);
    return [max, sum, max + Math.log(sum)];
  });
}

/** Each row's softmax weights (zeros for a fully masked row) and output, from maskedScores. */
export function weightsAndOutput(masked, v) {
  const weights = masked.map((row) => {
    const seen = row.filter((x) => x !== null);
    if (seen.length === 0) return row.map(() => 0);
    const max = Math.max(...seen);
    const e = row.map((x) => (x === null ? 0 : Math.exp(x - max)));
    const sum = e.reduce((acc, x) => acc + x, 0);
    return e.map((x) => x / sum);
  });
  const output = weights.map((w) => v[0].map((_, c) => w.reduce((acc, x, j) => acc + x * v[j][c], 0)));
  return { weights, output };
}

/** got within 1e-12 of want, relative (absolute below 1); null wants null. */
export function assertNear(got, want, what) {
  if (want === null) {
    assert.equal(got, null, `${what}: want null`);
    return;
  }
  assert.ok(Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)),
    `${what}: got ${got}, want ${want}`);
}

// ---- the low formats, by definition ----

export function fp16Value(b) {
  const e = (b >> 10) & 31, f = b & 1023, sign = b & 0x8000 ? -1 : 1;
  if (e === 31) return f ? NaN : sign * Infinity;
  return e === 0 ? sign * f * 2 ** -24 : sign * (1024 + f) * 2 ** (e - 25);
}

export function bf16Value(b) {
  const u = new Uint32Array([b << 16 >>> 0]);
  return new Float32Array(u.buffer)[0];
}

/** The double's unbiased exponent, from its bits (subnormal doubles never occur here). */
function exponentOf(x) {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  return ((dv.getUint16(0) >> 4) & 0x7ff) - 1023;
}

/**
 * x rounded to nearest, ties to even, into a format of `fraction` bits and exponent
 * `bias`; the bit pattern, or null when a finite x rounds past the largest value.
 */
export function narrowBits(x, fraction, bias) {
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  const maxField = (1 << (15 - fraction)) - 1;
  if (a === 0) return sign;
  const e = Math.max(exponentOf(a), 1 - bias);
  const y = a * 2 ** (fraction - e);             // exact: a power of two
  let n = Math.floor(y);
  const rest = y - n;                             // exact: y has few integer bits
  if (rest > 0.5 || (rest === 0.5 && n % 2 === 1)) n += 1;
  let exp = e;
  if (n === 2 ** (fraction + 1)) { n /= 2; exp += 1; }
  const field = n < 2 ** fraction ? 0 : exp + bias;
  if (field >= maxField) return null;
  return sign | (field << fraction) | (n & ((1 << fraction) - 1));
}
export const fp16Bits = (x) => narrowBits(x, 10, 15);
export const bf16Bits = (x) => narrowBits(x, 7, 127);

/** x rounded once to `format` ("float16", "bfloat16", "float32", "float64"); ±inf past
 * the largest finite value. */
export function roundTo(x, format) {
  if (format === 'float64' || !Number.isFinite(x)) return x;
  if (format === 'float32') return Math.fround(x);
  const bits = format === 'float16' ? fp16Bits(x) : bf16Bits(x);
  if (bits === null) return x < 0 ? -Infinity : Infinity;
  return format === 'float16' ? fp16Value(bits) : bf16Value(bits);
}
