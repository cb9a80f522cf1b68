// server/www/headview.js — the playground's head view, as bertviz draws one: the query
// tokens on the left, the key tokens on the right, a line from each query to each key
// whose opacity is its attention weight, one colour per head. Hovering (or focusing) a
// token shows only its lines; the head buttons turn heads on and off.
//
// It draws what the server answers to ?format=bertviz (the same request's weights,
// nested [layer][batch][head][n_q][n_k]), so the page shows exactly what a notebook's
// head_view would. Built with DOM calls in the SVG namespace (the page's CSP allows no
// inline script or style and no other host), and kept in an IIFE so that its names
// never meet app.js's: the page sees only window.attndHeadView.
'use strict';

(() => {
  const SVG = 'http://www.w3.org/2000/svg';
  // d3's category10, the colours bertviz gives its heads.
  const COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
    '#7f7f7f', '#bcbd22', '#17becf'];
  const ROW = 26;        // pixels between two tokens
  const TOP = 16;        // the first token's baseline
  const LEFT_X = 150;    // where the query tokens end
  const RIGHT_X = 330;   // where the key tokens start
  const WIDTH = 480;
  const MAX_LINES = 20000; // beyond this a head view is a grey cloud: say so instead

  // Every sentence the head view shows, in English; app.js's language switch puts
  // another language's in their place (words.js, HEAD_WORDS_KO) before it draws.
  const WORDS = {
    token: (side, i, name) => `${side === 'q' ? 'query' : 'key'} ${i}: ${name}`,
    figure: (heads, left, right, cross) => `Head view: ${heads} head${heads === 1 ? '' : 's'}, ` +
      `${left} ${cross ? 'decoder tokens' : 'tokens'} on the left, ` +
      `${right} on the right; line opacity is the attention weight`,
    line: (from, to, w, h) => `${from} → ${to}: ${w} (head ${h})`,
    headsShown: 'Heads shown',
    headButton: (h) => `head ${h}`,
    tooMany: (n) => `${n} lines are too many to draw; the heatmap shows these weights.`,
    help: (cross) => (cross ? 'Queries (decoder) on the left, keys (encoder) on the right. '
      : 'Queries on the left, keys on the right. ') +
      'A line\'s opacity is its weight; hover or focus a token to see only its lines.',
  };
  const ENGLISH = Object.freeze({ ...WORDS });

  const box = () => document.getElementById('headview-box');
  const area = () => document.getElementById('headview');

  const svgEl = (tag, attrs) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  };
  const titled = (e, text) => {
    const t = svgEl('title');
    t.textContent = text;
    e.append(t);
    return e;
  };
  // A token shown on the axis: long ones are cut (the tooltip keeps the whole).
  const shown = (t) => (t.length > 18 ? `${t.slice(0, 17)}…` : t);

  function clear() {
    const b = box();
    if (!b) return;
    b.hidden = true;
    area().textContent = '';
  }

  // {left, right, heads, cross} from a bertviz answer, or null when it is not one.
  function readAnswer(r) {
    const layers = r.attention || r.cross_attention;
    if (!Array.isArray(layers) || !Array.isArray(layers[0]) || !Array.isArray(layers[0][0])) return null;
    if (r.attention) return { left: r.tokens, right: r.tokens, heads: layers[0][0], cross: false };
    return { left: r.decoder_tokens, right: r.encoder_tokens, heads: layers[0][0], cross: true };
  }

  // Shows only the lines of token i on `side` ('q' or 'k'); null shows every line again.
  function focus(svg, side, i) {
    for (const line of svg.querySelectorAll('line.attn')) {
      const on = side === null || line.dataset[side] === String(i);
      line.setAttribute('visibility', on ? 'visible' : 'hidden');
    }
    for (const t of svg.querySelectorAll('text.token')) {
      const me = side !== null && t.dataset.side === side && t.dataset.index === String(i);
      t.setAttribute('font-weight', me ? 'bold' : 'normal');
    }
    svg.dataset.focus = side === null ? '' : `${side}${i}`;
  }

  function tokenText(svg, side, i, name, y) {
    const left = side === 'q';
    const t = svgEl('text', {
      x: left ? LEFT_X : RIGHT_X, y, 'text-anchor': left ? 'end' : 'start',
      'dominant-baseline': 'central', class: 'token', tabindex: 0, 'font-weight': 'normal',
    });
    t.dataset.side = side;
    t.dataset.index = String(i);
    t.textContent = shown(name);
    titled(t, WORDS.token(side, i, name));
    const on = () => focus(svg, side, i);
    const off = () => focus(svg, null, null);
    t.addEventListener('mouseenter', on);
    t.addEventListener('mouseleave', off);
    t.addEventListener('focus', on);
    t.addEventListener('blur', off);
    return t;
  }

  function draw(answer) {
    const { left, right, heads } = answer;
    const rows = Math.max(left.length, right.length);
    const height = TOP * 2 + (rows - 1) * ROW;
    const svg = svgEl('svg', {
      width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`, class: 'headview',
      role: 'img', 'font-size': 14, 'font-family': 'sans-serif',
    });
    titled(svg, WORDS.figure(heads.length, left.length, right.length, answer.cross));
    const y = (i) => TOP + i * ROW;
    heads.forEach((w, h) => {
      const g = svgEl('g', { class: 'head' });
      g.dataset.head = String(h);
      for (let i = 0; i < w.length; i++) {
        for (let j = 0; j < w[i].length; j++) {
          const line = svgEl('line', {
            x1: LEFT_X + 6, y1: y(i), x2: RIGHT_X - 6, y2: y(j),
            stroke: COLOURS[h % COLOURS.length], 'stroke-width': 3, 'stroke-opacity': w[i][j],
            class: 'attn', visibility: 'visible',
          });
          line.dataset.q = String(i);
          line.dataset.k = String(j);
          line.dataset.head = String(h);
          line.dataset.weight = String(w[i][j]);
          titled(line, WORDS.line(left[i], right[j], w[i][j], h));
          g.append(line);
        }
      }
      svg.append(g);
    });
    left.forEach((name, i) => svg.append(tokenText(svg, 'q', i, name, y(i))));
    right.forEach((name, j) => svg.append(tokenText(svg, 'k', j, name, y(j))));
    return svg;
  }

  // One button a head: pressed draws it, in its colour.
  function headButtons(svg, n) {
    const bar = document.createElement('div');
    bar.className = 'headview-heads';
    bar.setAttribute('role', 'group');
    bar.setAttribute('aria-label', WORDS.headsShown);
    for (let h = 0; h < n; h++) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'head-toggle';
      b.dataset.head = String(h);
      b.setAttribute('aria-pressed', 'true');
      b.style.borderColor = COLOURS[h % COLOURS.length];
      b.style.backgroundColor = COLOURS[h % COLOURS.length];
      b.textContent = WORDS.headButton(h);
      b.addEventListener('click', () => {
        const on = b.getAttribute('aria-pressed') !== 'true';
        b.setAttribute('aria-pressed', String(on));
        b.style.backgroundColor = on ? COLOURS[h % COLOURS.length] : '#fff';
        svg.querySelector(`g.head[data-head="${h}"]`).setAttribute('visibility', on ? 'visible' : 'hidden');
      });
      bar.append(b);
    }
    return bar;
  }

  // Asks the server for body's weights as bertviz takes them and draws them.
  async function show(path, body) {
    clear();
    let res;
    try {
      res = await fetch(`${path}?format=bertviz`, {
        method: 'POST',
        // In the page's language (app.js's switch sets <html lang>), as its other requests are.
        headers: { 'Content-Type': 'application/json', 'Accept-Language': document.documentElement.lang || 'en' },
        body: JSON.stringify(body),
      });
    } catch {
      return; // the page's own request already says the server is gone
    }
    if (res.status !== 200) return;
    const answer = readAnswer(await res.json());
    if (!answer) return;
    const lines = answer.heads.length * answer.left.length * answer.right.length;
    const note = document.createElement('p');
    note.className = 'note';
    box().hidden = false;
    if (lines > MAX_LINES) {
      note.textContent = WORDS.tooMany(lines);
      area().append(note);
      return;
    }
    note.textContent = WORDS.help(answer.cross);
    const svg = draw(answer);
    area().append(note);
    if (answer.heads.length > 1) area().append(headButtons(svg, answer.heads.length));
    const wrap = document.createElement('div');
    wrap.className = 'scroll';
    wrap.append(svg);
    area().append(wrap);
  }

  window.attndHeadView = { clear, show, words: WORDS, english: ENGLISH };
})();
