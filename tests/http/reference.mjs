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
