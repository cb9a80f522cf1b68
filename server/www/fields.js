// server/www/fields.js — the multi-head form fields (heads, kv_heads, the random
// sizes, round, mask_semantics) beside the raw JSON of the request, kept in step both
// ways: a field edits its member of the JSON, and editing the JSON (or loading a
// preset, which app.js signals with an input event) fills the fields. The JSON stays
// the request, so anything the fields do not cover (weights, a mask, labels) is still
// written there. In an IIFE so that its names never meet app.js's.
'use strict';

(() => {
  // Each field: its input's id, the member it edits, and whether it holds an integer.
  const FIELDS = [
    { id: 'mh-heads', path: ['heads'], int: true },
    { id: 'mh-kv-heads', path: ['kv_heads'], int: true },
    { id: 'mh-seed', path: ['random', 'seed'], int: true },
    { id: 'mh-n', path: ['random', 'n'], int: true },
    { id: 'mh-n-kv', path: ['random', 'n_kv'], int: true },
    { id: 'mh-d-model', path: ['random', 'd_model'], int: true },
    { id: 'mh-round', path: ['round'], int: true },
    { id: 'mh-mask-semantics', path: ['mask_semantics'], int: false },
    { id: 'mh-prefill', path: ['decode', 'prefill'], int: true },
  ];
  // "Generate (KV cache)": on, the request gains decode (prefill 2 unless one is set) and
  // the causal mask decode needs; off, decode goes (the mask stays as it was).
  const decodeBox = () => document.getElementById('mh-decode');
  const json = () => document.getElementById('f-mh');

  const get = (obj, path) => path.reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);

  // Sets (or, for undefined, deletes) obj's member at path; an emptied `random` goes too.
  function put(obj, path, value) {
    let o = obj;
    for (const k of path.slice(0, -1)) {
      if (typeof o[k] !== 'object' || o[k] === null || Array.isArray(o[k])) {
        if (value === undefined) return;
        o[k] = {};
      }
      o = o[k];
    }
    const last = path[path.length - 1];
    if (value === undefined) delete o[last];
    else o[last] = value;
    if (path.length > 1 && Object.keys(o).length === 0) delete obj[path[0]];
  }

  // What a field's text means: nothing (absent), an integer, or the text itself, so that
  // the server, not the page, says what is wrong with "two" or 1.5.
  function valueOf(f, text) {
    const t = text.trim();
    if (t === '') return undefined;
    if (!f.int) return t;
    return /^-?\d+$/.test(t) ? Number(t) : t;
  }

  function parsed() {
    try {
      const body = JSON.parse(json().value);
      return body && typeof body === 'object' && !Array.isArray(body) ? body : null;
    } catch {
      return null;
    }
  }

  // The fields from the JSON; fields are left alone while the JSON does not read.
  function fromJson() {
    const body = parsed();
    for (const f of FIELDS) {
      const input = document.getElementById(f.id);
      if (!input) continue;
      input.disabled = body === null;
      if (body === null) continue;
      const v = get(body, f.path);
      input.value = v === undefined || v === null ? (f.int ? '' : 'keep') : String(v);
    }
    const box = decodeBox();
    if (box) {
      box.disabled = body === null;
      if (body !== null) box.checked = body.decode !== undefined;
    }
  }

  // The box into the JSON.
  function decodeToJson() {
    const body = parsed();
    if (body === null) return;
    if (decodeBox().checked) {
      const prefill = valueOf({ int: true }, document.getElementById('mh-prefill').value);
      body.decode = { prefill: prefill === undefined ? 2 : prefill };
      body.mask = 'causal';
    } else {
      delete body.decode;
    }
    json().value = JSON.stringify(body, null, 1);
    fromJson();
  }

  // One field into the JSON.
  function toJson(f) {
    const body = parsed();
    if (body === null) return;
    const v = valueOf(f, document.getElementById(f.id).value);
    put(body, f.path, f.path[0] === 'mask_semantics' && v === 'keep' ? undefined : v);
    if (f.path[0] === 'decode' && v !== undefined) body.mask = 'causal'; // decode needs it
    json().value = JSON.stringify(body, null, 1);
    if (decodeBox()) decodeBox().checked = body.decode !== undefined;
  }

  function init() {
    if (!json()) return;
    for (const f of FIELDS) {
      const input = document.getElementById(f.id);
      if (input) input.addEventListener('input', () => toJson(f));
    }
    if (decodeBox()) decodeBox().addEventListener('change', decodeToJson);
    json().addEventListener('input', fromJson);
    fromJson();
  }

  document.addEventListener('DOMContentLoaded', init);
})();
