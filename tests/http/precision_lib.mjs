// tests/http/precision_lib.mjs — what the precision tests share: the Python reference
// (precision_reference.py) run on a list of problems, a bit-for-bit comparison of a step
// against it, and a step's error as the report computes it.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

/** The reference's answers for problems (precision_reference.py's input), in order. */
export const reference = (problems) => JSON.parse(execFileSync('/usr/bin/python3',
  [new URL('./precision_reference.py', import.meta.url).pathname],
  { input: JSON.stringify(problems), encoding: 'utf8' }));

/** Bits of a JSON number (null for a cell that is not finite, as attnd writes it). */
const bits = (x) => (x === null ? 'null' : Buffer.from(new Float64Array([x]).buffer).toString('hex'));

/** got and want (numbers, or nested lists of them) cell for cell, bit for bit. */
export function sameBits(got, want, what) {
  const g = [got].flat(Infinity), w = [want].flat(Infinity);
  assert.equal(g.length, w.length, `${what}: ${g.length} cells, not ${w.length}`);
  for (let c = 0; c < g.length; c++)
    assert.equal(bits(g[c]), bits(w[c]), `${what}[${c}]: ${g[c]}, the reference ${w[c]}`);
}

/** Every format with each accumulator it takes. */
export const FORMS = [['float16', 'float32'], ['bfloat16', 'float32'], ['float32', 'float32'],
  ['float16', 'same'], ['bfloat16', 'same']];

/** |low − exact| over a step's cells (heads flattened in order), as attn_step_error_of and
 * the report's merge over heads take them; a cell's index is split by dims (the step's
 * shape, or [rows, cols] to name a vector's cell [i, 0]). */
export function stepError(low, exact, dims) {
  const l = [low].flat(Infinity), e = [exact].flat(Infinity);
  let maxAbs = 0, maxRel = 0, cell = null;
  for (let c = 0; c < l.length; c++) {
    const d = Math.abs(l[c] - e[c]);
    maxAbs = Math.max(maxAbs, d);
    if (d !== 0 && e[c] !== 0 && d / Math.abs(e[c]) > maxRel) {
      maxRel = d / Math.abs(e[c]);
      let rest = c;
      cell = dims.map((_, k) => dims.slice(k + 1).reduce((x, y) => x * y, 1))
        .map((size) => { const at = Math.floor(rest / size); rest %= size; return at; });
    }
  }
  return { max_abs_error: maxAbs, max_rel_error: maxRel, max_rel_cell: cell, non_finite: 0 };
}
