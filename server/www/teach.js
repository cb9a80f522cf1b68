// server/www/teach.js — the playground's teaching parts, beside app.js: one heatmap row
// worked out by hand (`explain`, as the first note works it), the notes' pitfalls as
// presets with the mistake shown beside the right answer (`pitfall`), and the heatmap's
// colour scale ("auto": the largest weight drawn, every head together).
//
// Loaded before app.js, which calls these functions; the same rules hold: DOM calls
// only, never innerHTML from a response, and no other host.
'use strict';

// Every sentence this file shows, in English; app.js's language switch puts another
// language's words in their place (TEACH_WORDS_KO).
const TEACH_WORDS = {
  explainTitle: (q) => `Query ${q} worked out by hand`,
  explainHelp: 'Click a row of the heatmap, or a button, to see its arithmetic.',
  explainButton: (q) => `Explain ${q}`,
  pitfallTitle: (name) => `Pitfall: ${name}`,
  precisionHead: ['step', 'max abs error', 'max rel error', 'at cell', 'not finite'],
  precisionNote: (f, a, max) => `Computed in ${f}, sums in ${a}; the largest finite value ${max}.`,
  firstNonFinite: (step, cell) => `The first cell that is not finite: ${step} [${cell.join(', ')}]`,
  numpyError: (e) => `numpy raises ValueError: ${e}`,
  wrongStep: (s) => `${s}, computed the wrong way`,
  nonFinite: (n) => `Cells that are not finite (inf or nan, shown as null): ${n}`,
  difference: (what, d) => `Largest |wrong − right| over the ${what}: ${d}`,
  noDifference: (what) => `No finite cell of the ${what} to compare.`,
};

// The notes' pitfalls, a group of presets of their own.
const PITFALL_PRESETS = [
  {
    id: 'pitfall-no-transpose', group: 'Pitfalls', name: 'Pitfall: Q @ K instead of Q @ K.T',
    body: { q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]], pitfall: 'no_transpose' },
    note: 'Forgetting .T: with these shapes numpy refuses; when n_k = d_k it runs and is silently wrong.',
  },
  {
    id: 'pitfall-column-softmax', group: 'Pitfalls', name: 'Pitfall: softmax down the columns',
    body: {
      q: [[1, 0], [0, 1], [0.5, 0.5]], k: [[1, 0], [0, 1], [0.8, 0.2]], v: [[10, 0], [0, 20], [8, 4]],
      scale: 1, labels: { queries: ['Q1', 'Q2', 'Q3'], keys: ['사과', '사람', '과일'] }, pitfall: 'column_softmax',
    },
    note: 'softmax(axis=0): every column sums to 1, the rows do not.',
  },
  {
    id: 'pitfall-no-max', group: 'Pitfalls', name: 'Pitfall: exp without subtracting the max',
    body: { q: [[1000, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[10, 0], [0, 20]], scale: 1, pitfall: 'no_max_subtraction' },
    note: 'e^1000 overflows to inf, and inf ÷ inf is nan; subtracting each row\'s max gives the same ratios.',
  },
];

const teachEl = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
};

// ---- one row by hand ----

// The explain lines of a text page: from "explain" to the blank line after it.
function explainLines(text) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('explain  '));
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && l === '');
  return lines.slice(start, end < 0 ? undefined : end);
}

async function explainRow(body, row, queryLabel, keys = []) {
  const box = document.getElementById('explain-box');
  const out = document.getElementById('explain');
  const res = await fetch('/v1/attention?format=text', {
    method: 'POST',
    // The worked row in the page's language (app.js's switch), as every other answer.
    headers: { 'Content-Type': 'application/json', 'Accept-Language': pageLang },
    // The forward row only: with backward on, its dS is worked below from the JSON answer.
    body: JSON.stringify({ ...body, include: [], pitfall: undefined, backward: undefined, explain: { row } }),
  });
  const text = await res.text();
  document.getElementById('explain-backward').hidden = true;
  box.hidden = false;
  document.getElementById('explain-title').textContent = TEACH_WORDS.explainTitle(queryLabel);
  out.textContent = res.status === 200 ? explainLines(text).join('\n') : text;
  out.dataset.row = String(row);
  if (res.status === 200 && body.backward) await explainBackward(body, row, queryLabel, keys);
}

// The server's heatmap cells (square rects): each row's top and the cells' side.
function heatmapGrid(svg) {
  const rects = [...svg.querySelectorAll('rect')].filter((r) => r.getAttribute('y') !== null);
  const square = rects.find((r) => r.getAttribute('width') === r.getAttribute('height'));
  const side = square ? Number(square.getAttribute('height')) : 0;
  // Cells and the hatched band of a fully masked row are all one cell high.
  const ys = new Set(rects.filter((r) => Number(r.getAttribute('height')) === side)
    .map((r) => Number(r.getAttribute('y'))));
  return { tops: [...ys].sort((a, b) => a - b), side };
}

// The row under a click: a cell, its number or the query's label (all at the row's y).
function rowAt(grid, target) {
  if (!target.getAttribute || target.getAttribute('y') === null) return -1;
  const y = Number(target.getAttribute('y'));
  return grid.tops.findIndex((top) => y >= top && y < top + grid.side);
}

// A click on a row of the heatmap, or a button per query, explains that row.
function offerExplain(svg, body, queries, keys) {
  const grid = heatmapGrid(svg);
  svg.style.cursor = 'pointer';
  svg.addEventListener('click', (ev) => {
    const row = rowAt(grid, ev.target);
    if (row >= 0 && row < queries.length) explainRow(body, row, queries[row], keys);
  });
  const bar = document.getElementById('explain-buttons');
  bar.textContent = '';
  bar.append(teachEl('span', TEACH_WORDS.explainHelp, 'note'));
  queries.forEach((q, i) => {
    const b = teachEl('button', TEACH_WORDS.explainButton(q));
    b.type = 'button';
    b.dataset.row = String(i);
    b.addEventListener('click', () => explainRow(body, i, q, keys));
    bar.append(b);
  });
}

// ---- pitfalls ----

function showPitfall(p, queries, keys, table) {
  const box = document.getElementById('pitfall-box');
  const out = document.getElementById('pitfall');
  if (!p) return;
  box.hidden = false;
  out.textContent = '';
  out.append(teachEl('h3', TEACH_WORDS.pitfallTitle(p.name)));
  out.append(teachEl('p', p.what, 'note'));
  if (p.error) {
    out.append(teachEl('p', TEACH_WORDS.numpyError(p.error), 'pitfall-error'));
    return;
  }
  for (const [name, values] of Object.entries(p.steps)) {
    const sec = teachEl('section', null, 'step');
    sec.dataset.wrong = name;
    sec.append(teachEl('h4', TEACH_WORDS.wrongStep(name)));
    const byKey = p.name !== 'no_transpose' && name !== 'output';
    const t = table(values, queries, byKey ? keys : null, null);
    t.querySelectorAll('td.blocked').forEach((td) => { td.textContent = 'inf/nan'; });
    sec.append(t);
    out.append(sec);
  }
  const compared = p.name === 'no_transpose' ? 'output' : 'weights';
  out.append(teachEl('p', TEACH_WORDS.nonFinite(p.non_finite), 'note'));
  out.append(teachEl('p', p.max_abs_difference === null ? TEACH_WORDS.noDifference(compared)
    : TEACH_WORDS.difference(compared, p.max_abs_difference.toFixed(4)), 'note'));
}

// ---- the colour scale ----

// The request's `heatmap` from the fields under the pitfall: vmin and vmax as numbers or
// "auto" (anything else is sent as typed, so the server names what is wrong with it), the
// title as typed; undefined when every field is empty (the note's Blues 0…1).
function readHeatmapFields() {
  const bound = (id) => {
    const t = document.getElementById(id).value.trim();
    if (t === '') return undefined;
    return t === 'auto' || !Number.isFinite(Number(t)) ? t : Number(t);
  };
  const title = document.getElementById('f-htitle').value;
  const heatmap = { vmin: bound('f-vmin'), vmax: bound('f-vmax'), title: title.trim() ? title : undefined };
  for (const k of Object.keys(heatmap)) if (heatmap[k] === undefined) delete heatmap[k];
  return Object.keys(heatmap).length ? heatmap : undefined;
}

// An example's heatmap into the fields; the "largest weight" box is vmax "auto".
function fillHeatmapFields(heatmap) {
  const text = (v) => (v === undefined || v === null ? '' : String(v));
  document.getElementById('f-vmin').value = text(heatmap?.vmin);
  document.getElementById('f-vmax').value = text(heatmap?.vmax);
  document.getElementById('f-htitle').value = text(heatmap?.title);
  document.getElementById('f-auto').checked = heatmap?.vmax === 'auto';
}

// The box and the vmax field say the same thing: each follows the other.
function linkHeatmapFields() {
  const box = document.getElementById('f-auto');
  const vmax = document.getElementById('f-vmax');
  box.addEventListener('change', () => { vmax.value = box.checked ? 'auto' : ''; });
  vmax.addEventListener('input', () => { box.checked = vmax.value.trim() === 'auto'; });
}

// The [vmin, vmax] to colour weights with: the note's 0..1, or "auto" over every panel.
function heatScale(heatmap, panels) {
  const all = panels.flat(2).filter((x) => typeof x === 'number');
  const lo = heatmap?.vmin === 'auto' ? Math.min(...all) : heatmap?.vmin ?? 0;
  const hi = heatmap?.vmax === 'auto' ? Math.max(...all) : heatmap?.vmax ?? 1;
  return hi > lo ? [lo, hi] : [lo, lo + 1];
}

// ---- a kernel's format (`precision`) ----

// The report beside the steps: each step's error against float64, and where the format
// first lost a number.
function showPrecision(r) {
  const rep = r.precision_report;
  if (!rep) return;
  document.getElementById('precision-box').hidden = false;
  const acc = r.precision.accumulate === 'same' ? r.precision.format : 'float32';
  let note = TEACH_WORDS.precisionNote(r.precision.format, acc, r.precision.max_finite);
  if (r.first_non_finite) note += ' ' + TEACH_WORDS.firstNonFinite(r.first_non_finite.step, r.first_non_finite.cell);
  document.getElementById('precision-note').textContent = note;
  const table = document.getElementById('precision');
  table.textContent = '';
  const head = document.createElement('tr');
  for (const h of TEACH_WORDS.precisionHead) head.append(teachEl('th', h));
  table.append(head);
  const num = (x) => (x === 0 ? '0' : Number(x).toPrecision(3));
  for (const [step, e] of Object.entries(rep)) {
    const tr = document.createElement('tr');
    tr.dataset.step = step;
    for (const v of [step, num(e.max_abs_error), num(e.max_rel_error),
      e.max_rel_cell ? `[${e.max_rel_cell.join(', ')}]` : '-', String(e.non_finite)]) {
      tr.append(teachEl('td', v));
    }
    if (e.non_finite > 0) tr.classList.add('non-finite');
    table.append(tr);
  }
}

// ---- the masks of training: the rules' fields, and visible drawn with its tiles ----
//
// The Mask kind writes the Mask field ("causal", "causal_top_left" or empty) and follows
// it; documents, prefix, chunk, the window and the tile size are fields of their own. With
// the box open or a rule set, the request asks for visible and block_map as well, and the
// page draws visible with each tile of the block map over it (and the server's heatmap
// draws the same tiles): the learner changes a rule and sees both change.

const MASK_RULES = ['documents', 'prefix', 'chunk', 'window-left', 'window-right', 'block-q', 'block-k'];
const TILE_KINDS = ['empty', 'partial', 'full'];
// The server's outlines (api/render/svg.c), so the two pictures read alike.
const TILE_STROKE = {
  empty: ['#737373', 1, '2 2'], partial: ['#d94801', 2, '6 3'], full: ['#08306b', 2, 'none'],
};

const maskField = (name) => document.getElementById(`f-${name}`);

// The Mask kind as the Mask field says it.
function maskKindOf(text) {
  const t = text.trim().replace(/^"(.*)"$/, '$1');
  if (t === '' || t === 'causal' || t === 'causal_top_left') return t;
  return 'cells';
}

// A whole number as a number; anything else as it was typed, for the server to judge.
function wholeOr(text) {
  const t = text.trim();
  return /^-?\d+$/.test(t) ? Number(t) : t;
}

// Whether a rule of the box is set: then its picture is drawn even with the box closed.
const maskRulesSet = () => MASK_RULES.some((name) => maskField(name).value.trim() !== '');
const maskPictureWanted = () => document.getElementById('masks').open || maskRulesSet();
const windowFieldsSet = () => ['window-left', 'window-right'].some((n) => maskField(n).value.trim() !== '');

// The rules of the box as request members (the window here wins over the Variants field's).
function readMaskFields() {
  const rules = {};
  const docs = maskField('documents').value.trim();
  if (docs !== '') rules.documents = { lengths: docs.split(/[\s,]+/).filter((x) => x !== '').map(wholeOr) };
  for (const name of ['prefix', 'chunk']) {
    if (maskField(name).value.trim() !== '') rules[name] = wholeOr(maskField(name).value);
  }
  if (windowFieldsSet()) {
    rules.window = {};
    for (const side of ['left', 'right']) {
      const v = maskField(`window-${side}`).value.trim();
      if (v !== '') rules.window[side] = wholeOr(v);
    }
  }
  const bq = maskField('block-q').value.trim(), bk = maskField('block-k').value.trim();
  // Without a size the picture uses tiles of 2: the API's 128 would make one tile here.
  if (bq !== '' || bk !== '' || maskPictureWanted()) rules.block = [wholeOr(bq || '2'), wholeOr(bk || '2')];
  return rules;
}

// The steps to ask for beside the default ones: every step the request's variants make
// (an explicit include lists them), then visible and block_map.
function maskInclude(body) {
  const include = ['scores', 'scaled', 'masked', 'weights', 'output', 'summary'];
  if (body.rope !== undefined) include.push('q_rope', 'k_rope');
  if (body.softcap !== undefined) include.push('softcapped');
  if (body.dropout !== undefined) include.push('dropout_keep', 'dropped');
  return [...include, 'visible', 'block_map'];
}

// Set when a preset opens or closes the box: the toggle that follows is the preset's, not
// the learner's, and runs nothing.
let presetToggle = null;

// A preset's rules into the box (a preset without them empties it), the box open or not.
function fillMaskFields(b, open) {
  const lengths = b.documents?.lengths;
  maskField('documents').value = Array.isArray(lengths) ? lengths.join(', ') : '';
  maskField('prefix').value = b.prefix === undefined ? '' : String(b.prefix);
  maskField('chunk').value = b.chunk === undefined ? '' : String(b.chunk);
  maskField('window-left').value = '';  // a preset's window stays in the Variants field
  maskField('window-right').value = '';
  maskField('block-q').value = b.block ? String(b.block[0]) : '';
  maskField('block-k').value = b.block ? String(b.block[1]) : '';
  maskField('mask-kind').value = maskKindOf(maskField('mask').value);
  const box = document.getElementById('masks');
  presetToggle = box.open !== open ? open : null;
  box.open = open;
}

// The Mask kind and the Mask field kept in step; any change in the box runs again.
function linkMaskFields(rerun) {
  const kind = maskField('mask-kind');
  kind.addEventListener('change', () => {
    maskField('mask').value = kind.value === 'cells' ? maskField('mask').value : kind.value;
  });
  maskField('mask').addEventListener('input', () => { kind.value = maskKindOf(maskField('mask').value); });
  const box = document.getElementById('masks');
  box.addEventListener('change', rerun);
  box.addEventListener('toggle', () => {
    const mine = presetToggle === box.open;
    presetToggle = null;
    if (!mine) rerun();
  });
}

// The picture's <svg> is in index.html, so the HTML parser gives it SVG's namespace and
// this file names no address.
const maskMap = () => document.getElementById('masks-map');
function svgEl(tag, attrs) {
  const e = document.createElementNS(maskMap().namespaceURI, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// visible (rows of 0/1) with the block map's tiles over it: a picture of its own.
function drawMask(r, queries, keys) {
  const box = document.getElementById('masks-box');
  const svg = maskMap();
  svg.textContent = '';
  document.getElementById('masks-note').textContent = '';
  if (r.visible === undefined || !r.block_map) return;
  const visible = Array.isArray(r.visible[0]) ? r.visible : [r.visible];
  const nQ = visible.length, nK = visible[0].length;
  const { block: [bq, bk], tiles, sparsity } = r.block_map;
  const side = Math.max(6, Math.min(28, Math.floor(320 / Math.max(nQ, nK))));
  const pad = 2;
  for (const [k, v] of Object.entries({
    width: nK * side + 2 * pad, height: nQ * side + 2 * pad, viewBox: `0 0 ${nK * side + 2 * pad} ${nQ * side + 2 * pad}`,
  })) svg.setAttribute(k, String(v));
  const seen = visible.flat().filter((x) => x === 1).length;
  svg.setAttribute('aria-label', PAGE_WORDS.maskFigure(nQ, nK, seen));
  visible.forEach((row, i) => row.forEach((x, j) => {
    const cell = svgEl('rect', {
      class: x ? 'seen' : 'hidden', x: pad + j * side, y: pad + i * side, width: side, height: side,
      fill: x ? '#6baed6' : '#f0f0f0', stroke: '#ffffff',
    });
    const tip = svgEl('title', {});
    tip.textContent = `${queries[i]} → ${keys[j]}: ${x ? PAGE_WORDS.sees : PAGE_WORDS.hidden}`;
    cell.append(tip);
    svg.append(cell);
  }));
  tiles.forEach((row, tr) => row.forEach((t, tc) => {
    const kind = TILE_KINDS[t];
    const [stroke, width, dash] = TILE_STROKE[kind];
    const rows = Math.min(bq, nQ - tr * bq), cols = Math.min(bk, nK - tc * bk);
    const rect = svgEl('rect', {
      class: 'tile', 'data-kind': kind, 'data-tile': `${tr} ${tc}`,
      x: pad + tc * bk * side + 1, y: pad + tr * bq * side + 1, width: cols * side - 2, height: rows * side - 2,
      fill: 'none', stroke, 'stroke-width': width, 'stroke-dasharray': dash,
    });
    const tip = svgEl('title', {});
    tip.textContent = PAGE_WORDS.tileTip(tr, tc, PAGE_WORDS.tileKinds[kind]);
    rect.append(tip);
    svg.append(rect);
  }));
  const all = tiles.flat();
  const count = (k) => all.filter((t) => t === k).length;
  document.getElementById('masks-note').textContent = PAGE_WORDS.masksNote({
    bq, bk, rows: tiles.length, cols: tiles[0].length, full: count(2), partial: count(1), empty: count(0),
    sparsity: Number(sparsity).toFixed(4),
  });
  box.hidden = false;
}

// ---- the backward pass (`backward`) ----
//
// With the Backward box ticked the request carries backward: {grad_output} when dO is
// typed, else {seed}, and the answer's steps go on after the forward ones with the
// gradients (grad_output … grad_k, delta among them). They are drawn in their own box, in
// the order the backward pass runs them, each with its op, its shape and its numbers; dS
// (grad_masked) is marked as softmax's gradient, with each row's sum beside it (0, as it
// must be, or with a sink logit the sink's share, sink_weight·D). The same box serves /v1/multihead: there it writes the JSON's backward (as the
// multi-head fields write theirs) and each head's (n_q, n_k) gradients are drawn as its
// weights are. PAGE_WORDS (words.js) has the sentences.

const isBackwardStep = (name) => name === 'delta' || name.startsWith('grad_');
const backwardField = (name) => document.getElementById(name);
const multiheadShown = () => !document.getElementById('multi-fields').hidden;

// The request's backward from the box: dO as typed (read as the other matrix fields are: a
// FieldError when it is not JSON, its shape the server's to judge), or the seed that makes
// it when dO is empty (anything but a whole number sent as typed, for the server to judge).
function readBackwardFields() {
  const dO = parseJsonField('grad-output', backwardField('f-grad-output').value, false);
  if (dO !== undefined) return { grad_output: dO };
  const seed = backwardField('f-grad-seed').value.trim();
  return { seed: seed === '' ? 0 : /^\d+$/.test(seed) ? Number(seed) : seed };
}

// A request's backward (or none) into the box.
function fillBackwardFields(b) {
  backwardField('f-backward').checked = b !== undefined;
  backwardField('f-grad-seed').value = String(b?.seed ?? 0);
  const dO = b?.grad_output;
  backwardField('f-grad-output').value = dO === undefined ? '' : typeof dO === 'string' ? dO : matrixText(dO);
  enableBackwardFields();
}

function enableBackwardFields() {
  const off = !backwardField('f-backward').checked;
  backwardField('f-grad-seed').disabled = off;
  backwardField('f-grad-output').disabled = off;
}

// dO's shape as the request being edited has it: the output's.
function showGradOutputShape() {
  backwardField('grad-output-shape').textContent = PAGE_WORDS.gradOutputShape(multiheadShown());
}

// The box among the single-head inputs (before the masks of training) or the multi-head
// fields (before the JSON it writes).
function placeBackwardFields(multihead) {
  const box = backwardField('backward-fields');
  if (multihead) backwardField('f-mh').closest('.field').before(box);
  else backwardField('masks').before(box);
  showGradOutputShape();
}

// The multi-head JSON, when it reads as an object.
function multiheadJson() {
  try {
    const body = JSON.parse(backwardField('f-mh').value);
    return body && typeof body === 'object' && !Array.isArray(body) ? body : null;
  } catch {
    return null;
  }
}

// The box into the multi-head JSON: a dO that does not read goes in as typed, and
// readForm marks it on its field before anything is sent.
function backwardToJson() {
  const body = multiheadJson();
  if (body === null) return;
  if (!backwardField('f-backward').checked) {
    delete body.backward;
  } else {
    try {
      body.backward = readBackwardFields();
    } catch (e) {
      if (!(e instanceof FieldError)) throw e;
      body.backward = { grad_output: backwardField('f-grad-output').value };
    }
  }
  backwardField('f-mh').value = JSON.stringify(body, null, 1);
}

// The box's fields, once (init): each edit writes the multi-head JSON while it is the
// request, and the JSON (typed, or a preset's) fills the box.
function linkBackwardFields() {
  const edited = () => { if (multiheadShown()) backwardToJson(); };
  backwardField('f-backward').addEventListener('change', () => {
    enableBackwardFields();
    edited();
  });
  backwardField('f-grad-seed').addEventListener('input', edited);
  backwardField('f-grad-output').addEventListener('input', edited);
  backwardField('f-mh').addEventListener('input', () => {
    const body = multiheadJson();
    if (multiheadShown() && body !== null) fillBackwardFields(body.backward);
  });
}

// The step names a backward request asks for beside an explicit include (the masks'
// pictures make one): every gradient the request's fields make.
function backwardInclude(body) {
  const names = ['grad_output', 'grad_v', 'grad_weights', 'delta', 'grad_masked', 'grad_scaled', 'grad_scores'];
  if (body.rope !== undefined) names.push('grad_q_rope', 'grad_k_rope');
  names.push('grad_q', 'grad_k');
  if (body.sink_logit !== undefined) names.push('grad_sink_logit');
  if (body.bias !== undefined) names.push('grad_bias');
  return names;
}

// Which labels name a gradient's rows and columns: keys for what is per key (grad_v,
// grad_k), queries by keys for the (n_q, n_k) ones, numbered columns for the widths.
function backwardAxes(name, queries, keys) {
  if (['grad_v', 'grad_k', 'grad_k_rope'].includes(name)) return { rows: keys, cols: null };
  if (['grad_weights', 'grad_masked', 'grad_scaled', 'grad_scores', 'grad_bias'].includes(name)) {
    return { rows: queries, cols: keys };
  }
  return { rows: queries, cols: null };
}

// A row sum as shown: -0 reads as 0 (the exact sum is the cell's tooltip).
const sumText = (x) => {
  const s = Number(x).toFixed(4);
  return /^-0\.0+$/.test(s) ? s.slice(1) : s;
};

// rows of a (n_q, n_k) step, or the one row of a vector query's.
const rowsOf = (values) => (Array.isArray(values[0]) ? values : [values]);

// Each of the answer's gradient steps in a section of the box, its note written: one
// number (delta of a vector query, grad_sink_logit of one head) as itself, any other
// values by draw(sec, name, values).
function drawBackward(r, body, multihead, draw) {
  const steps = (r.steps || []).filter((s) => isBackwardStep(s.name));
  if (steps.length === 0) return;
  document.getElementById('backward-box').hidden = false;
  document.getElementById('backward-note').textContent = PAGE_WORDS.backwardNote(body.backward, multihead);
  const out = document.getElementById('backward-steps');
  for (const s of steps) {
    const sec = backwardSection(s);
    const values = r[s.name];
    if (typeof values === 'number' || values === null) {
      const p = teachEl('p', fmt(values), 'scalar');
      p.title = String(values);
      sec.append(p);
    } else if (values !== undefined) {
      draw(sec, s.name, values);
    }
    out.append(sec);
  }
}

// A step's section: its number, name and op, then its operands' shapes and its own.
function backwardSection(s) {
  const sec = teachEl('section', null, 'step');
  sec.dataset.step = s.name;
  const operands = s.operands ? `${s.operands.map(shape).join(' @ ')} → ` : '→ ';
  sec.append(teachEl('h3', `${s.step} · ${s.name} = ${s.op}`));
  sec.append(teachEl('p', `${operands}${shape(s.shape)}`, 'shape'));
  return sec;
}

// What dS's rows sum to: 0, or with a sink logit the sink's share (it takes the rest).
const softmaxGradNote = (body) => (body.sink_logit === undefined ? PAGE_WORDS.softmaxGrad : PAGE_WORDS.softmaxGradSink);

// dS marked as softmax's gradient: the table's extra column of row sums.
function softmaxGradTable(sec, values, rows, cols, table) {
  sec.classList.add('softmax-grad');
  const sums = rowsOf(values).map((row) => row.reduce((a, x) => a + x, 0));
  const t = table(values, rows, cols, { label: PAGE_WORDS.rowSum, values: sums });
  t.querySelectorAll('tbody td.extra').forEach((td, i) => {
    td.textContent = sumText(sums[i]);
    td.title = String(sums[i]);
    td.classList.add('row-sum');
  });
  return t;
}

function showBackward(r, body, queries, keys, table) {
  drawBackward(r, body, false, (sec, name, values) => {
    if (name === 'delta') {
      // D, one number a query: a column beside the queries' names
      sec.append(table(values.map((x) => [x]), queries, ['D'], null));
      return;
    }
    const axes = backwardAxes(name, queries, keys);
    if (name === 'grad_masked') sec.append(teachEl('p', softmaxGradNote(body), 'note'));
    sec.append(name === 'grad_masked' ? softmaxGradTable(sec, values, axes.rows, axes.cols, table)
      : table(values, axes.rows, axes.cols, null));
  });
}

// A gradient's colour: blue for positive, red for negative, white at 0, deeper with |v|
// against the largest |value| of every head (so the heads read on one scale).
function signedColour(v, max) {
  const x = max > 0 ? Math.min(Math.abs(v) / max, 1) : 0;
  const end = v < 0 ? [203, 24, 29] : [33, 113, 181];
  const c = end.map((e) => Math.round(255 + (e - 255) * x));
  return { rgb: `rgb(${c.join(',')})`, dark: x > 0.6 };
}

// Which labels name a multi-head gradient's rows and columns, as the heads' weights are
// named: queries (q0 …) for what is per query or per token, keys (k0 …) for what is per
// key, numbers for the weights' rows and for every width.
function multiheadAxes(name, n, queries, keys) {
  if (['grad_k', 'grad_v', 'grad_x_kv', 'grad_k_rope'].includes(name)) return { rows: keys, cols: null };
  if (name === 'grad_bias') return { rows: queries, cols: keys };
  if (['grad_output', 'grad_q', 'grad_x', 'grad_x_q', 'grad_q_rope'].includes(name)) return { rows: queries, cols: null };
  return { rows: numbered('', n), cols: null };
}

// /v1/multihead's gradients: (h, n_q, n_k) steps a table a head, coloured as the heads'
// weights are drawn (dS with each row's sum); delta (h, n_q) a column a head beside the
// queries; grad_sink_logit a number a head; every other step a labelled matrix or vector.
function showMultiheadBackward(r, body, table) {
  const [heads, nQ, nK] = r.shapes?.weights ?? [0, 0, 0];
  const queries = numbered('q', nQ), keys = numbered('k', nK);
  const headNames = Array.from({ length: heads }, (_, h) => PAGE_WORDS.head(h));
  drawBackward(r, body, true, (sec, name, values) => {
    if (Array.isArray(values[0]?.[0])) {
      if (name === 'grad_masked') sec.append(teachEl('p', softmaxGradNote(body), 'note'));
      const max = Math.max(...values.flat(2).map((x) => Math.abs(Number(x))));
      const box = teachEl('div', null, 'heads');
      values.forEach((m, h) => {
        const fig = teachEl('figure', null, 'head');
        fig.dataset.head = String(h);
        fig.append(teachEl('figcaption', PAGE_WORDS.head(h)));
        const t = name === 'grad_masked' ? softmaxGradTable(sec, m, queries, keys, table) : table(m, queries, keys, null);
        colourCells(t, m, (v) => signedColour(v, max));
        fig.append(t);
        box.append(fig);
      });
      sec.append(box);
    } else if (name === 'delta' && Array.isArray(values[0])) {
      // D per head and query: the queries down, a column a head
      sec.append(table(queries.map((_, i) => values.map((d) => d[i])), queries, headNames, null));
    } else if (!Array.isArray(values[0])) {
      // a vector: a bias's gradient, or grad_sink_logit's number a head
      sec.append(table([values], [name], name === 'grad_sink_logit' ? headNames : null, null));
    } else {
      const axes = multiheadAxes(name, values.length, queries, keys);
      sec.append(table(values, axes.rows, axes.cols, null));
    }
  });
}

// The explained row's backward: explain.backward when the server writes it, else the same
// numbers read from the answer's own steps (the row of dO, output, P, dP, dS and its D).
function backwardRowOf(r, row) {
  if (r.explain?.backward) return r.explain.backward;
  const pick = (m) => [].concat(Array.isArray(m?.[0]) ? m[row] : m);
  const dO = pick(r.grad_output);
  const out = pick(r.output);
  const P = pick(r.weights);
  const dP = pick(r.grad_weights);
  const dS = pick(r.grad_masked);
  return {
    grad_output: dO,
    delta_terms: dO.map((a, c) => a * out[c]),
    delta: Array.isArray(r.delta) ? r.delta[row] : r.delta,
    keys: P.map((p, j) => ({ key: j, weight: p, grad_weight: dP[j], grad_masked: dS[j] })),
  };
}

// One row's dS by hand: D term by term, then each key's P·(dP − D), then their sum.
async function explainBackward(body, row, queryLabel, keys) {
  const box = document.getElementById('explain-backward');
  const out = document.getElementById('explain-backward-lines');
  const res = await fetch('/v1/attention', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Accept-Language': pageLang },
    body: JSON.stringify({ ...body, include: undefined, pitfall: undefined, explain: { row } }),
  });
  if (res.status !== 200) return;
  const r = await res.json();
  const x = backwardRowOf(r, row);
  const num = (v) => fmt(v);
  // D term by term: dO_c × output_c (the output's row from the answer), or each term alone.
  const outRow = [].concat(Array.isArray(r.output?.[0]) ? r.output[row] : r.output);
  const terms = outRow.length === x.grad_output.length
    ? x.grad_output.map((a, c) => `${num(a)}×${num(outRow[c])}`) : x.delta_terms.map(num);
  const lines = [
    `dO[${queryLabel}] = [${x.grad_output.map(num).join(', ')}]`,
    PAGE_WORDS.deltaLine(terms.join(' + '), num(x.delta)),
  ];
  for (const k of x.keys) {
    const line = PAGE_WORDS.dsLine(keys[k.key] ?? `k${k.key}`, num(k.weight), num(k.grad_weight), num(x.delta), num(k.grad_masked));
    lines.push(line);
  }
  const sum = sumText(x.keys.reduce((a, k) => a + k.grad_masked, 0));
  lines.push(body.sink_logit === undefined ? PAGE_WORDS.dsSum(sum) : PAGE_WORDS.dsSumSink(sum));
  out.textContent = lines.join('\n');
  out.dataset.row = String(row);
  document.getElementById('explain-backward-title').textContent = PAGE_WORDS.explainBackwardTitle(queryLabel);
  box.hidden = false;
}

// ---- generating with a KV cache (/v1/multihead's `decode`) ----
//
// The answer's decode.tokens, one at a time: for token t each head's weights over keys
// 0..t (the cache so far; the keys after t drawn empty, not cached yet), the cache's shape,
// and whether every token matches the full causal pass. Previous and Next, or the arrow
// keys inside the box, step through the tokens.

const decodeState = { tokens: [], at: 0, n: 0, kvHeads: 0, prefill: 0, match: null };

function drawDecodeToken() {
  const { tokens, at, n } = decodeState;
  const tok = tokens[at];
  if (!tok) return;
  document.getElementById('decode-at').textContent = PAGE_WORDS.decodeAt(tok.t, at, tokens.length);
  document.getElementById('decode-prev').setAttribute('aria-disabled', String(at === 0));
  document.getElementById('decode-next').setAttribute('aria-disabled', String(at === tokens.length - 1));
  const cache = tok.cache_k?.[0];
  document.getElementById('decode-cache').textContent =
    PAGE_WORDS.decodeCache(tok.t, cache ? shape(cache) : '', tok.cache_k?.length ?? 0);
  const area = document.getElementById('decode-weights');
  area.textContent = '';
  area.dataset.t = String(tok.t);
  const table = teachEl('table', null, 'matrix decode');
  const head = teachEl('tr');
  head.append(teachEl('th', ''));
  for (let j = 0; j < n; j++) {
    const th = teachEl('th', `k${j}`, j > tok.t ? 'not-cached' : j === tok.t ? 'newest' : '');
    th.scope = 'col';
    head.append(th);
  }
  const thead = teachEl('thead');
  thead.append(head);
  table.append(thead);
  const tbody = teachEl('tbody');
  tok.weights.forEach((w, h) => {
    const tr = teachEl('tr');
    tr.dataset.head = String(h);
    const th = teachEl('th', PAGE_WORDS.head(h));
    th.scope = 'row';
    tr.append(th);
    for (let j = 0; j < n; j++) {
      if (j >= w.length) {
        const td = teachEl('td', '', 'not-cached');
        td.title = PAGE_WORDS.notCached;
        tr.append(td);
        continue;
      }
      const td = teachEl('td', fmt(w[j]), 'cached');
      td.dataset.head = String(h);
      td.dataset.key = String(j);
      td.dataset.weight = String(w[j]);
      td.title = `${PAGE_WORDS.head(h)}, t${tok.t} → k${j}: ${w[j]}`;
      const c = blues(w[j]);
      td.style.backgroundColor = c.rgb;
      td.style.color = c.dark ? '#fff' : '#1a1a1a';
      tr.append(td);
    }
    tbody.append(tr);
  });
  table.append(tbody);
  area.append(table);
  area.append(teachEl('p', PAGE_WORDS.decodeOutput(tok.t, tok.output.map(fmt).join(', ')), 'note decode-output'));
}

function stepDecode(to) {
  const last = decodeState.tokens.length - 1;
  const at = Math.max(0, Math.min(last, to));
  if (at === decodeState.at && document.getElementById('decode-at').textContent) return;
  decodeState.at = at;
  drawDecodeToken();
}

function showDecode(d) {
  if (!d || !Array.isArray(d.tokens) || d.tokens.length === 0) return;
  const keep = decodeState.tokens.length === d.tokens.length ? decodeState.at : 0;
  Object.assign(decodeState, {
    tokens: d.tokens, at: keep, n: d.tokens[d.tokens.length - 1].t + 1, prefill: d.prefill, match: d.matches_full_pass,
  });
  document.getElementById('decode-box').hidden = false;
  document.getElementById('decode-help').textContent = PAGE_WORDS.decodeHelp(d.prefill);
  const m = Number(d.matches_full_pass);
  const match = document.getElementById('decode-match');
  match.textContent = PAGE_WORDS.decodeMatch(m.toExponential(2), m <= 1e-12);
  match.dataset.matches = String(m <= 1e-12);
  drawDecodeToken();
}

function hideDecode() {
  document.getElementById('decode-box').hidden = true;
  document.getElementById('decode-weights').textContent = '';
  document.getElementById('decode-at').textContent = '';
}

// The buttons and the keys, once (init).
function linkDecode() {
  document.getElementById('decode-prev').addEventListener('click', () => stepDecode(decodeState.at - 1));
  document.getElementById('decode-next').addEventListener('click', () => stepDecode(decodeState.at + 1));
  document.getElementById('decode-box').addEventListener('keydown', (ev) => {
    const to = { ArrowLeft: decodeState.at - 1, ArrowRight: decodeState.at + 1, Home: 0,
      End: decodeState.tokens.length - 1 }[ev.key];
    if (to === undefined || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    ev.preventDefault();
    stepDecode(to);
  });
}
