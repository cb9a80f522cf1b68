// server/www/app.js — the playground: edit an attention problem, run it against this
// server's API, and show every step, the heatmap, the summary, the warnings, and
// the problem of a bad request next to the field it points at.
//
// No framework and no other host: the page is served with a self-only
// Content-Security-Policy, so everything is built with DOM calls (never innerHTML
// from a response) and the heatmap SVG is parsed as XML, not as HTML.
'use strict';

const SEED002 = {
  k: [[1, 0], [0, 1], [0.8, 0.2]],
  v: [[10, 0], [0, 20], [8, 4]],
  keys: ['사과', '사람', '과일'],
  queries: ['Q1', 'Q2', 'Q3'],
};
const SEED002_Q = [[1, 0], [0, 1], [0.5, 0.5]];
const SEED002_QUERIES = {
  q: SEED002_Q, k: SEED002.k, v: SEED002.v, scale: 1,
  labels: { queries: SEED002.queries, keys: SEED002.keys },
};

// Each preset is a request body (or a multi-head one) and a note on what to look at.
const PRESETS = [
  {
    id: 'seed000', name: 'Lecture 1: the worked example (d_k = 4)',
    body: { q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]] },
    note: 'Scaled by 1/√4 = 0.5: scores [[2,2],[0,2]] become weights ≈ [[0.5,0.5],[0.27,0.73]].',
  },
  {
    id: 'seed002-one', name: 'Lecture 2: one query',
    body: { q: [1, 0], k: SEED002.k, v: SEED002.v, scale: 1, labels: { keys: SEED002.keys } },
    note: 'Unscaled (scale 1): scores [1, 0, 0.8]; q is a vector, so every result is one too.',
  },
  {
    id: 'seed002-text', name: 'Lecture 2: scores [1, 0]',
    body: { q: [1, 0], k: [[1, 0], [0, 1]], v: [[10, 0], [0, 20]], scale: 1 },
    note: 'Weights ≈ [0.73, 0.27], output ≈ [7.3, 5.4].',
  },
  {
    id: 'seed002-queries', name: 'Lecture 2: three queries (the heatmap)',
    body: SEED002_QUERIES,
    note: 'Each row of the weights sums to 1 (see the sum column), not the whole matrix.',
  },
  {
    id: 'exp-magnitude', name: 'Experiment: Q1 [1,0] → [2,0]',
    body: { ...SEED002_QUERIES, q: [[2, 0], [0, 1], [0.5, 0.5]] },
    compare: true,
    note: 'A bigger query, same direction: the same key wins, with a sharper weight.',
  },
  {
    id: 'exp-direction', name: 'Experiment: Q3 [0.5,0.5] → [0.9,0.1]',
    body: { ...SEED002_QUERIES, q: [[1, 0], [0, 1], [0.9, 0.1]] },
    compare: true,
    note: 'Q3 turns towards the first axis: the keys it prefers change.',
  },
  {
    id: 'exp-opposite', name: 'Experiment: first key [1,0] → [-1,0]',
    body: { ...SEED002_QUERIES, k: [[-1, 0], [0, 1], [0.8, 0.2]] },
    compare: true,
    note: 'The first key now points away from Q1: another key takes its place.',
  },
  {
    id: 'causal', name: 'A causal (decoder) mask',
    body: { q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1], [2], [3]], mask: 'causal' },
    note: 'Query i sees keys 0..i: blocked cells are -inf before softmax and 0 after.',
  },
  {
    id: 'pitfall-kt', name: 'Pitfall: K passed transposed',
    body: { q: [[1, 0, 1, 0]], k: [[1, 1], [0, 1], [1, 1], [0, 1]], v: [[1], [2]] },
    note: 'K must be (n_k, d_k); the service computes Kᵀ itself. Run it to see the problem.',
  },
];

// Today's models: one example a variant (DESIGN.md, "Attention variants"), on the first
// lecture's numbers so each step's change can be read against the plain answer.
const SEED000 = { q: [[1, 0, 1, 0], [0, 1, 0, 1]], k: [[1, 0, 1, 0], [1, 1, 1, 1]], v: [[10, 0], [0, 10]] };
const CAUSAL4 = { q: [[1, 0], [0, 1], [1, 1], [1, -1]], k: [[1, 0], [0, 1], [1, 1], [1, -1]], v: [[1], [2], [3], [4]] };
PRESETS.push(
  {
    id: 'variant-rope', name: 'Variant: RoPE (rotary positions)',
    body: { ...SEED000, rope: { layout: 'half' } },
    note: 'q and k turn by their positions before the scores (steps q_rope, k_rope): key 1 no longer matches query 0 as well.',
  },
  {
    id: 'variant-softcap', name: 'Variant: softcap (Gemma 2)',
    body: { ...SEED000, softcap: 0.5 },
    note: 'softcapped = 0.5·tanh(scaled/0.5): the scores 1 shrink to 0.48, and the weights flatten.',
  },
  {
    id: 'variant-alibi', name: 'Variant: ALiBi with a causal mask',
    body: { ...CAUSAL4, mask: 'causal', alibi: 0.5 },
    note: 'Each key loses 0.5 per position of distance before the softmax: nearer keys weigh more.',
  },
  {
    id: 'variant-window', name: 'Variant: a sliding window with a sink token',
    body: { ...CAUSAL4, window: { left: 1, right: 0 }, sink_tokens: 1 },
    note: 'Each query sees itself and one key back, plus key 0 (the sink token) always.',
  },
  {
    id: 'variant-sink', name: 'Variant: a sink logit',
    body: { ...SEED000, sink_logit: 0 },
    note: 'An extra logit of 0 in every row takes weight but brings no value: the rows sum to less than 1.',
  },
  {
    id: 'variant-dropout', name: 'Variant: dropout (p = 0.5, seed 42)',
    body: { ...CAUSAL4, dropout: { p: 0.5, seed: 42 } },
    note: 'Some weights are dropped (dropout_keep 0) and the rest doubled; the same seed drops the same cells.',
  },
);
const VARIANT_FIELDS = ['rope', 'softcap', 'alibi', 'window', 'sink_tokens', 'sink_logit', 'dropout'];

// The masks of training (DESIGN.md, "Masks of today's training, and the block map"): the
// box of rules opens with them, and visible is drawn with the block map's tiles over it.
const TOKENS6 = [[1, 0], [0, 1], [1, 1], [1, -1], [0.5, 0.5], [-1, 1]];
PRESETS.push({
  id: 'masks-documents', name: 'Masks of training: two packed documents, causal, tiles of 2',
  body: { q: TOKENS6, k: TOKENS6, v: [[1], [2], [3], [4], [5], [6]], mask: 'causal', documents: { lengths: [2, 4] }, block: [2, 2] },
  masksOpen: true,
  note: 'Each query sees the keys of its own document up to itself: a kernel skips the empty tiles and masks only the partial ones.',
});

// Multi-head: POST /v1/multihead, its body edited as JSON and through the fields beside it.
const MULTIHEAD_PRESET = {
  id: 'multihead', name: 'Multi-head: 2 heads, random inputs', multihead: true,
  body: { heads: 2, random: { seed: 7, n: 4, d_model: 8 }, scale: 4, round: 4, heatmap: { vmax: 'auto' } },
  note: 'X·W_Q, X·W_K, X·W_V split into 2 heads, each with its own weights. Scale 4 ' +
    '(instead of 1/√d_k) sharpens the random heads so their preferences show.',
};
// Generating with a KV cache: the same random kind of problem, causal, the first 2 tokens in
// one pass (the prefill) and every later one alone against the cache (teach.js draws it).
const DECODE_PRESET = {
  id: 'decode', name: 'Generate with a KV cache: 2 heads, prefill 2', multihead: true,
  body: { heads: 2, random: { seed: 1, n: 6, d_model: 4 }, mask: 'causal', scale: 4, decode: { prefill: 2 } },
  note: 'Causal self-attention over 6 random tokens: the first 2 in one pass, then each token ' +
    'alone, its query against the cached keys and values. Step through them with Previous and Next.',
};

const $ = (id) => document.getElementById(id);
const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
};

const fmt = (x) => (x === null ? '-inf' : Number(x).toFixed(4));
const shape = (s) => (s === null || s === undefined ? PAGE_WORDS.none
  : typeof s === 'string' ? s : `(${s.join(', ')}${s.length === 1 ? ',' : ''})`);

// ---- the form ----

const FIELDS = ['q', 'k', 'v', 'mask', 'scale', 'labels-queries', 'labels-keys', 'multihead', 'variants',
  'round', 'bias', 'mask_semantics', 'heatmap-vmin', 'heatmap-vmax', 'heatmap-title', 'precision',
  'documents', 'prefix', 'chunk', 'window', 'block', 'backward', 'grad-output'];
let current = PRESETS[0];

function fillPresets(list) {
  const sel = $('preset');
  sel.textContent = '';
  const groups = {};
  for (const p of list) {
    const o = el('option', t(p.name));
    o.value = p.id;
    if (!p.group) {
      sel.append(o);
      continue;
    }
    if (!groups[p.group]) {
      groups[p.group] = el('optgroup');
      groups[p.group].label = t(p.group);
      sel.append(groups[p.group]);
    }
    groups[p.group].append(o);
  }
}

// A matrix as a field shows it: a row a line.
const matrixText = (m) => (Array.isArray(m) && Array.isArray(m[0])
  ? '[' + m.map((r) => JSON.stringify(r)).join(',\n ') + ']' : JSON.stringify(m));

function loadPreset(p) {
  current = p;
  $('preset').value = p.id;
  $('preset-note').textContent = t(p.note || '');
  $('single-fields').hidden = !!p.multihead;
  $('multi-fields').hidden = !p.multihead;
  placeBackwardFields(!!p.multihead); // teach.js: the Backward box serves either request
  if (p.multihead) {
    $('f-mh').value = JSON.stringify(p.body, null, 1);
    $('f-mh').dispatchEvent(new Event('input')); // the fields beside it follow (fields.js)
  } else {
    const b = p.body;
    for (const name of ['q', 'k', 'v']) {
      const area = $(`f-${name}`);
      area.value = matrixText(b[name]);
      area.rows = Math.min(8, Math.max(2, area.value.split('\n').length));
    }
    $('f-mask').value = b.mask === undefined ? '' : typeof b.mask === 'string' ? b.mask : JSON.stringify(b.mask);
    $('f-scale').value = b.scale === undefined ? '' : String(b.scale);
    $('f-round').value = b.round === undefined ? '' : String(b.round);
    $('f-bias').value = b.bias === undefined ? '' : JSON.stringify(b.bias);
    $('f-mask-semantics').value = b.mask_semantics || 'keep';
    $('f-lq').value = b.labels?.queries ? b.labels.queries.join(', ') : '';
    $('f-lk').value = b.labels?.keys ? b.labels.keys.join(', ') : '';
    $('f-pitfall').value = b.pitfall || '';
    fillBackwardFields(b.backward); // teach.js
    $('f-precision').value = b.precision?.format || '';
    $('f-accumulate').value = b.precision?.accumulate || 'float32';
    $('f-accumulate').disabled = !b.precision;
    fillHeatmapFields(b.heatmap); // teach.js
    fillMaskFields(b, !!p.masksOpen); // teach.js
    const variants = Object.fromEntries(VARIANT_FIELDS.filter((f) => b[f] !== undefined).map((f) => [f, b[f]]));
    $('f-variants').value = Object.keys(variants).length ? JSON.stringify(variants) : '';
  }
  clearErrors();
}

function clearErrors() {
  for (const f of FIELDS) showFieldError(f, null);
  $('problem').hidden = true;
}

function showFieldError(field, message) {
  const slot = $(`err-${field}`);
  if (!slot) return false;
  const input = document.querySelector(`[aria-describedby="err-${field}"]`);
  slot.hidden = !message;
  slot.textContent = message || '';
  if (input) {
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
  return true;
}

class FieldError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

function parseJsonField(field, text, required) {
  const t = text.trim();
  if (t === '') {
    if (required) throw new FieldError(field, PAGE_WORDS.required(field));
    return undefined;
  }
  try {
    return JSON.parse(t);
  } catch (e) {
    throw new FieldError(field, PAGE_WORDS.notJson(e.message));
  }
}

const splitLabels = (text) => {
  const t = text.trim();
  return t === '' ? undefined : t.split(',').map((s) => s.trim());
};

// The request body from the form; a FieldError names the field that cannot be read.
function readForm() {
  if (current.multihead) {
    const body = parseJsonField('multihead', $('f-mh').value, true);
    // The Backward box wrote body.backward; a dO that does not read is marked on its field.
    if ($('f-backward').checked) readBackwardFields();
    return body;
  }
  const body = {
    q: parseJsonField('q', $('f-q').value, true),
    k: parseJsonField('k', $('f-k').value, true),
    v: parseJsonField('v', $('f-v').value, true),
  };
  const mask = $('f-mask').value.trim();
  const named = mask.match(/^"?(causal|causal_top_left)"?$/);
  if (mask !== '') body.mask = named ? named[1] : parseJsonField('mask', mask, false);
  const scale = $('f-scale').value.trim();
  if (scale !== '') body.scale = Number.isFinite(Number(scale)) ? Number(scale) : scale;
  const variants = parseJsonField('variants', $('f-variants').value, false);
  if (variants !== undefined) {
    if (variants === null || typeof variants !== 'object' || Array.isArray(variants)) {
      throw new FieldError('variants', PAGE_WORDS.variantsObject);
    }
    Object.assign(body, variants);
  }
  const round = $('f-round').value.trim();
  if (round !== '') body.round = /^-?\d+$/.test(round) ? Number(round) : round; // the server judges it
  const bias = parseJsonField('bias', $('f-bias').value, false);
  if (bias !== undefined) body.bias = bias;
  if ($('f-mask-semantics').value !== 'keep') body.mask_semantics = $('f-mask-semantics').value;
  const queries = splitLabels($('f-lq').value);
  const keys = splitLabels($('f-lk').value);
  if (queries || keys) {
    body.labels = {};
    if (queries) body.labels.queries = queries;
    if (keys) body.labels.keys = keys;
  }
  if ($('f-pitfall').value) body.pitfall = $('f-pitfall').value;
  if ($('f-precision').value) {
    body.precision = { format: $('f-precision').value };
    if ($('f-accumulate').value !== 'float32') body.precision.accumulate = $('f-accumulate').value;
  }
  const heatmap = readHeatmapFields(); // teach.js
  if (heatmap) body.heatmap = heatmap;
  Object.assign(body, readMaskFields()); // teach.js: documents, prefix, chunk, window, block
  if ($('f-backward').checked) body.backward = readBackwardFields(); // teach.js
  if (maskPictureWanted()) {
    body.include = maskInclude(body);
    if (body.backward) body.include.push(...backwardInclude(body)); // teach.js
  }
  return body;
}

// Which form field a JSON pointer of a problem points into.
function fieldOf(pointer) {
  const parts = (pointer || '').split('/');
  // The Backward box's fields serve both requests: dO's problem on dO, the rest on the seed.
  if (parts[1] === 'backward') return parts[2] === 'grad_output' ? 'grad-output' : 'backward';
  if (current.multihead) return 'multihead';
  if (parts[1] === 'labels') return parts[2] === 'keys' ? 'labels-keys' : 'labels-queries';
  if (parts[1] === 'window' && windowFieldsSet()) return 'window'; // the box's, not the Variants'
  if (VARIANT_FIELDS.includes(parts[1])) return 'variants';
  if (parts[1] === 'heatmap' && ['vmin', 'vmax', 'title'].includes(parts[2])) return `heatmap-${parts[2]}`;
  return FIELDS.includes(parts[1]) ? parts[1] : null;
}

// ---- talking to the API ----

async function post(path, body, format) {
  const url = format ? `${path}?format=${format}` : path;
  const res = await fetch(url, {
    method: 'POST',
    // The answer's words (problems, hints, warnings, the heatmap's) in the page's language.
    headers: { 'Content-Type': 'application/json', 'Accept-Language': pageLang },
    body: JSON.stringify(body),
  });
  const type = res.headers.get('Content-Type') || '';
  const text = await res.text();
  return {
    status: res.status, type, text, json: type.includes('json') ? JSON.parse(text) : null,
    retryAfter: res.headers.get('Retry-After'), // every 503: the server's passing state
  };
}

// ---- rendering ----

function resetResult() {
  for (const id of ['overview', 'heatmap-box', 'compare-box', 'steps-box', 'summary-box', 'warnings-box',
    'explain-box', 'pitfall-box', 'precision-box', 'masks-box', 'backward-box', 'explain-backward']) {
    $(id).hidden = true;
  }
  for (const id of ['facts', 'heatmap', 'compare', 'steps', 'summary', 'warnings', 'explain',
    'explain-buttons', 'pitfall', 'precision', 'precision-note', 'masks-map', 'masks-note',
    'backward-steps', 'backward-note', 'explain-backward-lines']) $(id).textContent = '';
  hideDecode(); // teach.js
  window.attndHeadView?.clear();
}

function showProblem(p) {
  clearErrors();
  $('problem').hidden = false;
  $('problem-title').textContent = `${p.status} ${p.title}`;
  $('problem-detail').textContent = p.detail;
  const placed = [];
  for (const e of p.errors || []) {
    const field = fieldOf(e.pointer);
    const text = `${e.detail}${e.hint ? `${t(' — hint: ')}${e.hint}` : ''} (${e.pointer})`;
    if (field && showFieldError(field, text)) placed.push(field);
  }
  if (p.parameter) $('problem-detail').textContent += PAGE_WORDS.parameter(p.parameter);
  // A problem with neither pointer nor parameter (a busy server's 503) has its hint here.
  if (p.hint) $('problem-detail').textContent += `${t(' — hint: ')}${p.hint}`;
  if (placed.length) document.querySelector(`[aria-describedby="err-${placed[0]}"]`)?.focus();
}

// A labelled table of numbers: rows (each an array, or one number for a vector).
function matrixTable(values, rowLabels, colLabels, extra, format = fmt) {
  const rows = Array.isArray(values[0]) ? values : [values];
  const table = el('table', null, 'matrix');
  const head = el('tr');
  head.append(el('th', ''));
  for (let j = 0; j < rows[0].length; j++) {
    const th = el('th', colLabels ? colLabels[j] : j);
    th.scope = 'col';
    head.append(th);
  }
  if (extra) head.append(el('th', extra.label, 'extra'));
  const thead = el('thead');
  thead.append(head);
  table.append(thead);
  const tbody = el('tbody');
  rows.forEach((row, i) => {
    const tr = el('tr');
    const th = el('th', rowLabels[i]);
    th.scope = 'row';
    tr.append(th);
    row.forEach((x, j) => {
      const td = el('td', format(x), x === null ? 'blocked' : '');
      td.title = `${rowLabels[i]} → ${colLabels ? colLabels[j] : j}: ${x === null ? '-inf' : x}`; // the exact value
      tr.append(td);
    });
    if (extra) tr.append(el('td', fmt(extra.values[i]), 'extra'));
    tbody.append(tr);
  });
  table.append(tbody);
  const wrap = el('div', null, 'scroll');
  wrap.append(table);
  return wrap;
}

function labelsOf(body, r) {
  const nq = r.shapes.q.length === 1 ? 1 : r.shapes.q[0];
  const nk = r.shapes.k[0];
  const vector = r.shapes.q.length === 1;
  return {
    queries: body.labels?.queries || (vector ? ['q'] : Array.from({ length: nq }, (_, i) => `q${i}`)),
    keys: body.labels?.keys || Array.from({ length: nk }, (_, i) => `k${i}`),
  };
}

function renderAttention(body, r) {
  const L = labelsOf(body, r);
  $('overview').hidden = false;
  const s = r.shapes;
  $('facts').textContent = PAGE_WORDS.facts({
    q: shape(s.q), k: shape(s.k), v: shape(s.v), mask: shape(s.mask), d_k: r.d_k, scale: r.scale,
    weights: shape(s.weights), output: shape(s.output),
  });

  $('steps-box').hidden = false;
  const vector = r.shapes.q.length === 1;
  for (const s of r.steps) {
    if (isBackwardStep(s.name)) continue; // the backward's box draws them (teach.js)
    const sec = el('section', null, 'step');
    sec.dataset.step = s.name;
    const operands = s.operands ? `${s.operands.map(shape).join(' @ ')} → ` : '→ ';
    sec.append(el('h3', `${s.step} · ${s.name} = ${s.op}`));
    sec.append(el('p', `${operands}${shape(s.shape)}`, 'shape'));
    const values = r[s.name];
    if (s.name === 'block_map' && values) {
      sec.append(el('p', PAGE_WORDS.blockMapDrawn, 'note')); // drawn over visible, below
    } else if (values !== undefined) {
      // q_rope and k_rope are (rows, d_k): their columns are numbered, k_rope's rows are keys.
      const cols = ['output', 'q_rope', 'k_rope'].includes(s.name) ? null : L.keys;
      const rows = s.name === 'k_rope' ? L.keys : L.queries;
      const extra = s.name === 'weights' && r.summary
        ? { label: PAGE_WORDS.sum, values: vector ? [r.summary.row_sums] : r.summary.row_sums } : null;
      sec.append(matrixTable(values, rows, cols, extra, s.name === 'visible' ? String : fmt));
      if (s.name === 'weights' && r.summary?.sink_weight !== undefined) {
        const sink = [].concat(r.summary.sink_weight).map(fmt).join(', ');
        sec.append(el('p', PAGE_WORDS.sinkTook(sink), 'note sink'));
      }
    }
    $('steps').append(sec);
  }

  if (r.summary) {
    $('summary-box').hidden = false;
    const t = $('summary');
    const head = el('tr');
    for (const h of PAGE_WORDS.summaryHeads) head.append(el('th', h));
    const thead = el('thead');
    thead.append(head);
    t.append(thead);
    const tb = el('tbody');
    const col = (v) => (vector ? [v] : v);
    const s = r.summary;
    col(s.argmax).forEach((a, i) => {
      const tr = el('tr');
      tr.append(el('th', L.queries[i]));
      tr.append(el('td', a === null ? '—' : winnerText(col(s.tied_keys)[i], a, L.keys)));
      tr.append(el('td', fmt(col(s.max_weight)[i])));
      tr.append(el('td', fmt(col(s.entropy)[i])));
      tr.append(el('td', fmt(col(s.row_sums)[i])));
      tb.append(tr);
    });
    t.append(tb);
  }
  showBackward(r, body, L.queries, L.keys, matrixTable); // teach.js
  showWarnings(r.warnings);
}

// A tie names no winner: the words the playground writes for ties, in one place.
const TIE_WORDS = {
  tie: 'tie',
  nowTie: 'now a tie',
  tieBroken: 'tie broken',
  stillTie: 'still a tie',
  tieChanged: 'tied keys changed',
};

// "사과" when one key wins, "tie (사람, 과일)" when several share the largest weight.
function winnerText(tied, argmax, keys) {
  if (!tied || tied.length < 2) return keys[argmax];
  return `${TIE_WORDS.tie} (${tied.map((k) => keys[k]).join(', ')})`;
}

// What changed between two rows of the experiment table, ties read as ties.
function comparison(beforeTied, afterTied, before, after, wBefore, wAfter) {
  const tiedB = beforeTied && beforeTied.length > 1;
  const tiedA = afterTied && afterTied.length > 1;
  if (tiedB && tiedA) return beforeTied.join() === afterTied.join() ? TIE_WORDS.stillTie : TIE_WORDS.tieChanged;
  if (tiedA) return TIE_WORDS.nowTie;
  if (tiedB) return TIE_WORDS.tieBroken;
  return after !== before ? t('winner changed')
    : Math.abs(wAfter - wBefore) > 5e-5 ? t('same key, weight changed') : t('no change');
}

function showWarnings(warnings) {
  if (!warnings || warnings.length === 0) return;
  $('warnings-box').hidden = false;
  for (const w of warnings) $('warnings').append(el('li', `${w.code}: ${w.message}`));
}

function showSvg(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = doc.documentElement;
  if (svg.nodeName !== 'svg') return;
  $('heatmap-box').hidden = false;
  $('heatmap').append(document.importNode(svg, true));
}

// The experiments: the winning key of each query, before and after the change.
async function renderComparison(body, r) {
  const base = await post('/v1/attention', SEED002_QUERIES);
  if (base.status !== 200 || !r.summary) return;
  const L = labelsOf(body, r);
  $('compare-box').hidden = false;
  $('compare-note').textContent = PAGE_WORDS.compareNote;
  const t = $('compare');
  const head = el('tr');
  for (const h of PAGE_WORDS.compareHeads) head.append(el('th', h));
  const thead = el('thead');
  thead.append(head);
  t.append(thead);
  const tb = el('tbody');
  const b = base.json.summary;
  const a = r.summary;
  a.argmax.forEach((k, i) => {
    const tr = el('tr');
    tr.append(el('th', L.queries[i]));
    tr.append(el('td', `${winnerText(b.tied_keys[i], b.argmax[i], SEED002.keys)} ${fmt(b.max_weight[i])}`));
    tr.append(el('td', `${winnerText(a.tied_keys[i], k, L.keys)} ${fmt(a.max_weight[i])}`));
    tr.append(el('td', comparison(b.tied_keys[i], a.tied_keys[i], b.argmax[i], k,
      b.max_weight[i], a.max_weight[i])));
    tb.append(tr);
  });
  t.append(tb);
}

// Multi-head: per-head weights as coloured tables, the colours of the Blues heatmap.
const BLUES = [[247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225], [107, 174, 214],
  [66, 146, 198], [33, 113, 181], [8, 81, 156], [8, 48, 107]];
function blues(v) {
  const x = Math.min(Math.max(Number(v) || 0, 0), 1) * 8;
  const a = Math.min(Math.floor(x), 7);
  const f = x - a;
  const c = BLUES[a].map((lo, i) => Math.round(lo + (BLUES[a + 1][i] - lo) * f));
  return { rgb: `rgb(${c.join(',')})`, dark: 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2] < 140 };
}

// Names of n rows or columns: q0, q1, … (queries), k0, … (keys), as the heads are drawn.
const numbered = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

// Colours each number cell of a matrixTable by colourOf(its value): {rgb, dark}.
function colourCells(wrap, values, colourOf) {
  wrap.querySelectorAll('tbody tr').forEach((tr, i) => {
    tr.querySelectorAll('td:not(.extra)').forEach((td, j) => {
      const c = colourOf(Number(values[i][j]));
      td.style.backgroundColor = c.rgb;
      td.style.color = c.dark ? '#fff' : '#1a1a1a';
    });
  });
}

// One head's (n_q, n_k) matrix as a captioned, coloured table (queries by keys).
function headHeatmap(title, values, colourOf) {
  const fig = el('figure', null, 'head');
  fig.append(el('figcaption', title));
  const wrap = matrixTable(values, numbered('q', values.length), numbered('k', values[0].length), null);
  colourCells(wrap, values, colourOf);
  fig.append(wrap);
  return fig;
}

function renderMultihead(r, body) {
  $('overview').hidden = false;
  const facts = [];
  for (const [k, v] of Object.entries(r.shapes || {})) facts.push(`${PAGE_WORDS.shapeName(k)} ${shape(v)}`);
  $('facts').textContent = facts.join(' · ');
  $('steps-box').hidden = false;
  for (const s of r.steps || []) {
    if (isBackwardStep(s.name)) continue; // the backward's box draws them (teach.js)
    const sec = el('section', null, 'step');
    sec.dataset.step = s.name;
    const operands = s.operands ? `${s.operands.map(shape).join(' @ ')} → ` : '→ ';
    sec.append(el('h3', `${s.step} · ${s.name} = ${s.op}`));
    sec.append(el('p', `${operands}${shape(s.shape)}`, 'shape'));
    $('steps').append(sec);
  }
  if (Array.isArray(r.weights)) {
    $('heatmap-box').hidden = false;
    const box = el('div', null, 'heads');
    const scale = heatScale(body?.heatmap, [r.weights, r.weights_mean || []]);
    if (body?.heatmap?.title) $('heatmap').append(el('p', body.heatmap.title, 'heatmap-title'));
    const colour = (v) => blues((v - scale[0]) / (scale[1] - scale[0]));
    r.weights.forEach((w, h) => box.append(headHeatmap(PAGE_WORDS.head(h), w, colour)));
    if (r.weights_mean) box.append(headHeatmap(PAGE_WORDS.headsMean, r.weights_mean, colour));
    $('heatmap').append(box);
  }
  showMultiheadBackward(r, body, matrixTable); // teach.js: the gradients, each head's drawn
  showDecode(r.decode); // teach.js: the tokens one at a time, with the cache growing
  showWarnings(r.warnings);
}

// Each run's number: a run started later (a second click, a language switch) supersedes
// one still waiting for the server, whose answers are then dropped, not drawn over it.
let runs = 0;
// The number of the last run that finished: while runs !== settled, one is still waiting.
let settled = 0;

async function run() {
  const mine = ++runs;
  const superseded = () => mine !== runs;
  try {
    await runOnce(superseded);
  } catch (e) {
    // Whatever a run trips over after its first answer (a connection dropped before the
    // heatmap, an answer that does not read) goes on the status line, as a refused request's
    // problem does: never an uncaught error of the page, the run on load included.
    if (!superseded()) $('status').textContent = PAGE_WORDS.stopped(e.message);
  } finally {
    if (!superseded()) settled = mine;
  }
}

// One run of the form against the API, drawn unless `superseded` says a later run took over.
async function runOnce(superseded) {
  clearErrors();
  resetResult();
  let body;
  try {
    body = readForm();
  } catch (e) {
    if (e instanceof FieldError) {
      showFieldError(e.field, e.message);
      $('status').textContent = t('Fix the marked field.');
      return;
    }
    throw e;
  }
  $('status').textContent = t('Running…');
  const path = current.multihead ? '/v1/multihead' : '/v1/attention';
  let res;
  try {
    res = await post(path, body);
  } catch (e) {
    if (!superseded()) $('status').textContent = PAGE_WORDS.unreachable(e.message);
    return;
  }
  if (superseded()) return;
  if (res.status !== 200) {
    if (res.json) showProblem(res.json);
    const retry = res.retryAfter ? PAGE_WORDS.retry(res.retryAfter) : '';
    $('status').textContent = `${PAGE_WORDS.problem(res.status)}${retry}`;
    return;
  }
  if (current.multihead) {
    renderMultihead(res.json, body);
  } else {
    renderAttention(body, res.json);
    const L = labelsOf(body, res.json);
    drawMask(res.json, L.queries, L.keys); // teach.js: visible with its tiles, when asked
    showPitfall(res.json.pitfall, L.queries, L.keys, matrixTable);
    showPrecision(res.json); // teach.js
    const svg = await post(path, body, 'svg');
    if (superseded()) return;
    if (svg.status === 200) showSvg(svg.text);
    const drawn = $('heatmap').querySelector('svg');
    if (drawn) offerExplain(drawn, body, L.queries, L.keys);
    if (current.compare) await renderComparison(body, res.json);
    if (superseded()) return;
  }
  // bertviz's head view of the same weights (a decode's are the full causal pass's: the
  // export has no tokens one at a time, so it is asked for without decode).
  const { decode, ...viewed } = body;
  await window.attndHeadView?.show(path, decode === undefined ? body : viewed);
  if (superseded()) return;
  $('status').textContent = t('Done.');
  document.body.dataset.ran = String(Number(document.body.dataset.ran || 0) + 1);
}

async function init() {
  // This server always has /v1/multihead: no probe (a GET would only log a 405).
  const list = [...PRESETS, ...PITFALL_PRESETS, MULTIHEAD_PRESET, DECODE_PRESET];
  fillPresets(list);
  setupLanguage(list);
  linkHeatmapFields(); // teach.js
  linkMaskFields(() => run()); // teach.js: a changed rule runs again
  linkDecode(); // teach.js: Previous, Next and the arrow keys
  linkBackwardFields(); // teach.js: the seed and dO mean something with the box ticked
  // The accumulator means something only in a low format.
  $('f-precision').addEventListener('change', () => {
    $('f-accumulate').disabled = !$('f-precision').value;
  });
  $('preset').addEventListener('change', () => {
    const p = list.find((x) => x.id === $('preset').value);
    if (p) loadPreset(p);
  });
  $('form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    run();
  });
  $('form').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      run();
    }
  });
  loadPreset(list[0]);
  // A first visit shows an example worked out, not an empty page: the selected example
  // runs as Run would run it, in the chosen language. The page says it is ready once that
  // answer is drawn (or its problem shown), so nothing that waits for it meets half a page.
  run().finally(() => { document.body.dataset.ready = 'true'; });
}

// ---- languages ----
//
// The page's own words in English (as written in index.html and above) or Korean, in
// the lecture notes' words; the API's answers come back in the same language
// (Accept-Language on every request). Static words are found by selector and their
// first text node replaced, so markup inside them (a shape hint, a link) stays.

const KO_TEXT = {
  // the presets and their notes
  'Lecture 1: the worked example (d_k = 4)': '강의 1: 손으로 푼 예제 (d_k = 4)',
  'Lecture 2: one query': '강의 2: 쿼리 하나',
  'Lecture 2: scores [1, 0]': '강의 2: 점수 [1, 0]',
  'Lecture 2: three queries (the heatmap)': '강의 2: 쿼리 셋 (히트맵)',
  'Experiment: Q1 [1,0] → [2,0]': '실험: Q1 [1,0] → [2,0]',
  'Experiment: Q3 [0.5,0.5] → [0.9,0.1]': '실험: Q3 [0.5,0.5] → [0.9,0.1]',
  'Experiment: first key [1,0] → [-1,0]': '실험: 첫 Key [1,0] → [-1,0]',
  'A causal (decoder) mask': 'causal (디코더) 마스크',
  'Masks of training: two packed documents, causal, tiles of 2': '학습의 마스크: 이어 붙인 문서 둘, causal, 타일 2',
  'Each query sees the keys of its own document up to itself: a kernel skips the empty tiles and masks only the partial ones.':
    '쿼리마다 자기 문서의 키를 자기 자리까지만 봅니다: 커널은 빈 타일을 건너뛰고 일부만 보이는 타일에만 마스크를 씁니다.',
  'Pitfall: K passed transposed': '주의할 점: K 를 전치해서 보냄',
  'Multi-head: 2 heads, random inputs': 'Multi-Head: head 2 개, 무작위 입력',
  'Scaled by 1/√4 = 0.5: scores [[2,2],[0,2]] become weights ≈ [[0.5,0.5],[0.27,0.73]].':
    '1/√4 = 0.5 로 눈금 줄이기: 점수 [[2,2],[0,2]] 가 가중치 ≈ [[0.5,0.5],[0.27,0.73]] 이 됩니다.',
  'Unscaled (scale 1): scores [1, 0, 0.8]; q is a vector, so every result is one too.':
    '점수 조정 없음 (scale 1): 점수 [1, 0, 0.8]. q 가 벡터이므로 결과도 모두 벡터입니다.',
  'Weights ≈ [0.73, 0.27], output ≈ [7.3, 5.4].': '가중치 ≈ [0.73, 0.27], 출력 ≈ [7.3, 5.4].',
  'Each row of the weights sums to 1 (see the sum column), not the whole matrix.':
    '가중치는 행마다 합이 1 입니다 (합 열을 보세요). 행렬 전체의 합이 아닙니다.',
  'The first key now points away from Q1: another key takes its place.':
    '첫 Key 가 이제 Q1 과 반대쪽을 가리킵니다: 다른 Key 가 그 자리를 차지합니다.',
  'Query i sees keys 0..i: blocked cells are -inf before softmax and 0 after.':
    '쿼리 i 는 키 0..i 만 봅니다: 가린 칸은 softmax 전에는 -inf, 후에는 0 입니다.',
  'K must be (n_k, d_k); the service computes Kᵀ itself. Run it to see the problem.':
    'K 는 (n_k, d_k) 여야 합니다. 전치 Kᵀ 는 서비스가 직접 계산합니다. 실행해서 문제를 보세요.',
  // the status line and the problem box
  'Fix the marked field.': '표시한 필드를 고치세요.',
  'Running…': '계산 중…',
  'Done.': '완료.',
  ' — hint: ': ' — 힌트: ',
  // the experiment table's changes
  'winner changed': '최고 가중치의 키가 바뀜',
  'same key, weight changed': '같은 키, 가중치가 바뀜',
  'no change': '변화 없음',
  // the notes' pitfalls (teach.js)
  Pitfalls: '주의할 점',
  'Pitfall: Q @ K instead of Q @ K.T': '주의할 점: Q @ K.T 대신 Q @ K',
  'Pitfall: softmax down the columns': '주의할 점: 열 방향 softmax',
  'Pitfall: exp without subtracting the max': '주의할 점: 최댓값을 빼지 않은 지수 함수',
  'Forgetting .T: with these shapes numpy refuses; when n_k = d_k it runs and is silently wrong.':
    '.T (전치) 를 빠뜨림: 이 shape 에서는 numpy 가 거부하고, n_k = d_k 이면 실행되지만 소리 없이 틀립니다.',
  'softmax(axis=0): every column sums to 1, the rows do not.':
    'softmax(axis=0): 열마다 합이 1 이 되고, 행마다 합이 1 이 되지 않습니다.',
  'e^1000 overflows to inf, and inf ÷ inf is nan; subtracting each row\'s max gives the same ratios.':
    'e^1000 은 계산 범위를 넘어 inf 가 되고 inf ÷ inf 는 nan 입니다. 행마다 최댓값을 빼면 같은 비율이 나옵니다.',
};

// teach.js's sentences and the experiment table's tie words in Korean: the switch puts
// them in place of the English ones, which their callers read when they draw.
const TEACH_WORDS_EN = { ...TEACH_WORDS };
const TEACH_WORDS_KO = {
  explainTitle: (q) => `손으로 계산한 쿼리 ${q}`,
  explainHelp: '히트맵의 행이나 버튼을 누르면 그 행의 계산이 보입니다.',
  explainButton: (q) => `${q} 계산 보기`,
  pitfallTitle: (name) => `주의할 점: ${name}`,
  precisionHead: ['단계', '최대 절대 오차', '최대 상대 오차', '그 칸', '유한하지 않은 칸'],
  precisionNote: (f, a, max) => `${f} 로 계산하고 ${a} 에 누적; 가장 큰 유한값 ${max}.`,
  firstNonFinite: (step, cell) => `처음으로 유한하지 않은 칸: ${step} [${cell.join(', ')}]`,
  numpyError: (e) => `numpy 가 ValueError 를 냅니다: ${e}`,
  wrongStep: (s) => `${s}, 잘못된 방법으로 계산`,
  nonFinite: (n) => `유한하지 않은 칸 (inf 나 nan, null 로 표시): ${n}`,
  difference: (what, d) => `${what} 전체에서 가장 큰 |틀린 값 − 맞는 값|: ${d}`,
  noDifference: (what) => `${what} 에 비교할 유한한 칸이 없습니다.`,
};
const TIE_WORDS_EN = { ...TIE_WORDS };
const TIE_WORDS_KO = {
  tie: '동점',
  nowTie: '이제 동점',
  tieBroken: '동점이 깨짐',
  stillTie: '여전히 동점',
  tieChanged: '동점인 키가 바뀜',
};

// The page's static words: [selector, Korean]. The English is what index.html says.
const KO_PAGE = [
  ['header h1', 'attnd 플레이그라운드'],
  ['label[for="lang"]', '언어'],
  ['label[for="preset"]', '예제'],
  ['#single-fields legend', '입력'],
  ['label[for="f-mask"]', '마스크 '],
  ['label[for="f-mask"] .shape', '0/1 로 된 (n_q, n_k), (n_k), "causal", "causal_top_left", 또는 비움'],
  ['label[for="f-scale"] .shape', '비우면 1/√d_k'],
  ['label[for="f-lq"]', '쿼리 이름 '],
  ['label[for="f-lq"] .shape', '쉼표로 구분, 선택'],
  ['label[for="f-lk"]', '키 이름 '],
  ['label[for="f-lk"] .shape', '쉼표로 구분, 선택'],
  ['#multi-fields legend', 'Multi-Head 요청'],
  ['label[for="f-mh"]', 'POST /v1/multihead 본문 (JSON)'],
  ['#run', '실행'],
  ['#problem-title', '문제'],
  ['#overview h2', 'shape'],
  ['#heatmap-box h2', '가중치 히트맵'],
  ['#compare-box h2', '무엇이 바뀌었나'],
  ['#steps-box h2', '단계'],
  ['#summary-box h2', '요약'],
  ['#warnings-box h2', '경고'],
  ['label[for="f-pitfall"]', '주의할 점 '],
  ['label[for="f-pitfall"] .shape', '답 옆에 보이는 실수'],
  ['#explain-title', '한 행을 손으로'],
  ['#pitfall-box h2', '주의할 점'],
  ['label[for="f-precision"]', '형식 '],
  ['label[for="f-precision"] .shape', '커널처럼 계산'],
  ['label[for="f-accumulate"]', '합을 누적할 형식'],
  ['#f-precision option[value=""]', 'float64 (정확히)'],
  ['#f-accumulate option[value="same"]', '형식 그대로'],
  ['#precision-box h2', 'float64 와 비교한 형식'],
];

let pageLang = 'en';
const t = (s) => (pageLang === 'ko' && KO_TEXT[s]) || s;

// The element's first text node (its own words, before any markup inside it), or its
// nth when a sentence runs around markup (a <code> example in the middle).
function ownText(e, nth = 0) {
  let seen = 0;
  for (const n of e.childNodes) {
    if (n.nodeType === Node.TEXT_NODE && n.nodeValue.trim() && seen++ === nth) return n;
  }
  return null;
}

function applyLanguage(lang, list) {
  pageLang = lang;
  document.documentElement.lang = lang;
  Object.assign(TEACH_WORDS, lang === 'ko' ? TEACH_WORDS_KO : TEACH_WORDS_EN);
  Object.assign(TIE_WORDS, lang === 'ko' ? TIE_WORDS_KO : TIE_WORDS_EN);
  applyRunWords(lang); // words.js
  for (const [selector, ko, nth = 0] of KO_PAGE) {
    const e = document.querySelector(selector);
    const node = e && ownText(e, nth);
    if (!node) continue;
    const key = nth ? `en${nth}` : 'en';
    if (e.dataset[key] === undefined) e.dataset[key] = node.nodeValue;
    node.nodeValue = lang === 'ko' ? ko : e.dataset[key];
  }
  showGradOutputShape(); // teach.js
  const chosen = $('preset').value;
  fillPresets(list);
  $('preset').value = chosen;
  $('preset-note').textContent = t(current.note || '');
}

function setupLanguage(list) {
  const sel = $('lang');
  let saved = null;
  try {
    saved = localStorage.getItem('attnd-lang');
  } catch {
    // no storage: English until switched
  }
  sel.value = saved === 'ko' ? 'ko' : 'en';
  if (sel.value !== 'en') applyLanguage(sel.value, list);
  sel.addEventListener('change', () => {
    applyLanguage(sel.value, list);
    try {
      localStorage.setItem('attnd-lang', sel.value);
    } catch {
      // the choice lasts for this page only
    }
    // A result on the page was written by the API in the other language, and one still on
    // its way (the example drawn on load) was asked in it: ask again.
    if (Number(document.body.dataset.ran || 0) > 0 || settled !== runs) run();
  });
}

document.addEventListener('DOMContentLoaded', init);
