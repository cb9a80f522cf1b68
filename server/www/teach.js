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

async function explainRow(body, row, queryLabel) {
  const box = document.getElementById('explain-box');
  const out = document.getElementById('explain');
  const res = await fetch('/v1/attention?format=text', {
    method: 'POST',
    // The worked row in the page's language (app.js's switch), as every other answer.
    headers: { 'Content-Type': 'application/json', 'Accept-Language': pageLang },
    body: JSON.stringify({ ...body, include: [], pitfall: undefined, explain: { row } }),
  });
  const text = await res.text();
  box.hidden = false;
  document.getElementById('explain-title').textContent = TEACH_WORDS.explainTitle(queryLabel);
  out.textContent = res.status === 200 ? explainLines(text).join('\n') : text;
  out.dataset.row = String(row);
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
function offerExplain(svg, body, queries) {
  const grid = heatmapGrid(svg);
  svg.style.cursor = 'pointer';
  svg.addEventListener('click', (ev) => {
    const row = rowAt(grid, ev.target);
    if (row >= 0 && row < queries.length) explainRow(body, row, queries[row]);
  });
  const bar = document.getElementById('explain-buttons');
  bar.textContent = '';
  bar.append(teachEl('span', TEACH_WORDS.explainHelp, 'note'));
  queries.forEach((q, i) => {
    const b = teachEl('button', TEACH_WORDS.explainButton(q));
    b.type = 'button';
    b.dataset.row = String(i);
    b.addEventListener('click', () => explainRow(body, i, q));
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
