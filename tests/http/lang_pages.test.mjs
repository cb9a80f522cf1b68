// tests/http/lang_pages.test.mjs — the text and SVG pages in Korean leave no English
// sentence behind: every word that is still Latin is a name the contract keeps as it is
// (steps, fields, functions, the notes' own terms such as head and softmax). The pages
// asked for carry every variant's step, explain, a pitfall, ties and a masked row, so a
// sentence added in English anywhere on them shows up here as a word off the list.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { postJson, request, startServer } from './lib.mjs';

let s;
before(async () => {
  s = await startServer();
});
after(async () => {
  await s.stop();
});

// Names that stay as they are in every language (DESIGN.md: field names, type URIs and
// step names), the formulas' functions and operands, and the terms the notes write in
// English themselves (GLOSSARY.md: head, Multi-Head, softmax, attention).
const KEPT = new Set(`
  attention Attention RoPE ALiBi multi self head heads kv_heads d_model d_k n_q n_k scale mask bias softmax axis
  tanh exp inf nan max
  x q k v scores scaled masked weights output summary row_max shifted head_outputs concat
  split weights_mean explain argmax max_weight entropy in_out lse row_sum logsumexp
  rope q_rope k_rope softcap softcapped alibi slope window sink sink_logit sink_weight logit
  dropout dropout_keep dropped stream no_max_subtraction
  visible block_map B_q B_k tiles rules sum
  X_q X_kv W_Q W_K W_V W_O b_q b_k b_v b_o V_i Q_i K_i dropped_i weights_i
  Q_rope K_rope Q_rope_i K_rope_i
`.split(/\s+/).filter(Boolean));

/** The Latin words of a page that are not kept names, with the line each is on. */
function englishLeft(page) {
  const left = [];
  for (const line of page.split('\n'))
    for (const w of line.match(/[A-Za-z][A-Za-z_]{2,}/g) ?? [])
      if (!KEPT.has(w)) left.push(`${w} in: ${line.trim()}`);
  return left;
}

const VARIANTS = {
  q: [[0, 1], [1, 1], [1, 0]], k: [[1, 1], [0, 2], [1, 0]], v: [[10, 0], [0, 10], [1, 1]],
  rope: {}, softcap: 30, alibi: 0.5, window: { left: 1 }, sink_tokens: 1, sink_logit: 0,
  dropout: { p: 0.1, seed: 1 }, explain: { row: 1 },
  include: ['scores', 'scaled', 'masked', 'weights', 'output', 'summary'],
};
// The second note's tie in row 1, a row of big scores for the pitfall's overflow.
const PITFALL = {
  q: [[0, 1], [0.5, 0.5], [800, 0]], k: [[1, 0], [0, 1]], v: [[10, 0], [0, 10]], scale: 1,
  pitfall: 'no_max_subtraction',
  include: ['scores', 'scaled', 'masked', 'row_max', 'shifted', 'exp', 'weights', 'output', 'summary'],
};
const MULTIHEAD = {
  x: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], heads: 2, random: { seed: 1 },
  rope: {}, window: { left: 1 }, sink_logit: 0, dropout: { p: 0.1 }, mask: [[1, 1, 1], [0, 0, 0], [1, 1, 1]],
  explain: { row: 0, head: 1 },
  include: ['x', 'q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights', 'head_outputs', 'concat',
    'output', 'weights_mean', 'summary', 'q_rope', 'k_rope', 'dropout_keep', 'dropped'],
};

for (const [name, path, body] of [
  ['every variant with explain', '/v1/attention', VARIANTS],
  ['a pitfall, a tie and an overflow', '/v1/attention', PITFALL],
  ['multi-head with variants, a masked row and explain', '/v1/multihead', MULTIHEAD],
]) {
  test(`text in Korean, ${name}: no English word left`, async () => {
    const r = await postJson(s.port, `${path}?format=text&lang=ko`, body);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers['content-language'], 'ko');
    assert.deepEqual(englishLeft(r.body), []);
    assert.match(r.body, /단계 1 /);
    // The same page in English still says its sentences (the list above is not empty-handed).
    const en = await postJson(s.port, `${path}?format=text`, body);
    assert.ok(englishLeft(en.body).length > 0);
  });
}

test('text in Korean: the variants\' steps are numbered as 단계 and say what they do', async () => {
  const r = await postJson(s.port, '/v1/attention?format=text&lang=ko', VARIANTS);
  assert.match(r.body, /\n단계 1 {2}q_rope = q 의 앞 r 열을 회전, c 와 c \+ r\/2 를 짝지어 {2}-> \(3, 2\)\n/);
  assert.match(r.body, /\n단계 6 {2}masked = softcapped \+ bias - slope \* \|i \+ n_k - n_q - j\|, 마스크가 0 인 곳이나 키가 window 밖인 곳은 -inf/);
  assert.match(r.body, /\n {2}sink_weight \(각 행에서 sink logit 이 가져간 몫\): /);
  // The JSON's op says the same words, in the answer's language.
  const j = await postJson(s.port, '/v1/attention?lang=ko', VARIANTS);
  assert.equal(j.json().steps.find((st) => st.name === 'dropout_keep').op,
    'u >= p 인 곳은 1, u 는 생성기에서 (stream 7)');
  const en = await postJson(s.port, '/v1/attention', VARIANTS);
  assert.equal(en.json().steps.find((st) => st.name === 'dropout_keep').op,
    '1 where u >= p, u from the generator (stream 7)');
});

test('SVG in Korean: the subtitle names the variants in Korean', async () => {
  const r = await request(s.port, {
    method: 'POST', path: '/v1/attention?lang=ko', headers: { Accept: 'image/svg+xml' },
    body: JSON.stringify(VARIANTS),
  });
  assert.equal(r.status, 200);
  const title = r.body.match(/<title>([^<]*)<\/title>/)[1];
  assert.match(title, /RoPE \(반씩, r 2\), softcap 30, ALiBi, window 뒤로 1, 앞으로 제한 없음, sink 토큰 1 개, sink logit 하나, dropout 0\.1 \(가중치는 그 앞의 값\)/);
  assert.deepEqual(englishLeft(title), []);
});

test('a particle after a value fits the value as it is read: scale 은, q 는, 2 개', async () => {
  const r = await postJson(s.port, '/v1/attention?lang=ko', { q: [[1]], k: [[1]], v: [[1]], scale: -1 });
  assert.equal(r.status, 422);
  assert.match(r.json().detail, /^scale 은 0 보다 큰 수여야 합니다/); // 스케일: ㄹ takes 은
  assert.match(r.json().errors[0].hint, /^scale 을 빼면/);
  const q = await postJson(s.port, '/v1/attention?lang=ko', { q: [[1, 2]], k: [[1]], v: [[1]] });
  assert.match(q.json().detail, /^q 는 열이 2 개인데 k 는 1 개입니다/); // 큐, 케이: open
  const u = await postJson(s.port, '/v1/attention?lang=ko&fromat=text', { q: [[1]], k: [[1]], v: [[1]] });
  assert.equal(u.json().hint, '"format" 을 뜻했나요?'); // 포맷: closed
  // A word attnd cannot read keeps both forms, as Korean software writes them.
  const w = await postJson(s.port, '/v1/attention?lang=ko', { q: [[1]], k: [[1]], v: [[1]], include: ['wieghts'] });
  assert.equal(w.status, 422);
  assert.match(w.json().detail, /"wieghts" 은\(는\)/);
});

test('/v1/shapes in Korean: every meaning and the table\'s header, the ops as they are', async () => {
  const path = '/v1/shapes?n=10&d_model=512&heads=8&kv_heads=2&variants=rope,softcap,alibi,window,sink,dropout';
  const r = await request(s.port, { path: `${path}&format=text&lang=ko` });
  assert.equal(r.status, 200);
  const extra = new Set(['op', 'shapes', 'n_kv', 'base', 'Gemma', 'keep', 'kv', 'sqrt']);
  assert.deepEqual(englishLeft(r.body).filter((l) => !extra.has(l.split(' ')[0])), []);
  assert.match(r.body, /\nop +왼쪽 +오른쪽 +결과 {2}뜻\n/);
  assert.match(r.body, /head 하나의 키 \(kv head 는 모두 2 개, 하나를 쿼리 head 4 개가 함께 씀\)/);
  const j = await request(s.port, { path: `${path}&lang=ko` });
  const en = await request(s.port, { path });
  // The same rows, ops and shapes in both languages; only the meanings are translated.
  const strip = (rows) => rows.map(({ meaning, ...rest }) => rest);
  assert.deepEqual(strip(j.json().rows).map((row) => row.left), strip(en.json().rows).map((row) => row.left));
  const scores = (rows) => rows.find((row) => row.op === 'Q @ K^T').meaning;
  assert.equal(scores(j.json().rows), '점수: 각 쿼리가 각 키와 얼마나 잘 맞는지');
  assert.equal(scores(en.json().rows), 'scores: how well each query matches each key');
});

test('words put into a Korean sentence are Korean too: 범위 밖, 가장 큰, 점수 행렬, 더 많습니다', async () => {
  const h = await postJson(s.port, '/v1/attention?lang=ko', { q: [[1]], k: [[1]], v: [[1]], heatmap: { vmax: 2 } });
  assert.equal(h.json().detail, 'heatmap.vmax 가 범위 밖 입니다. 0 부터 1 사이의 숫자 (가중치가 그 안에 있습니다) 나 "auto" 여야 합니다');
  assert.equal(h.json().errors[0].hint, '"auto" 는 그리는 가중치의 가장 큰 값을 씁니다. 노트는 0 부터 1 까지 그립니다');
  const v2 = await postJson(s.port, '/v2/models/attention/infer?lang=ko', {
    inputs: [{ name: 'Q', shape: [1, 2], datatype: 'FP64', data: [1, 2, 3] },
      { name: 'K', shape: [1, 2], datatype: 'FP64', data: [1, 2] },
      { name: 'V', shape: [1, 2], datatype: 'FP64', data: [1, 2] }],
  });
  assert.equal(v2.status, 400);
  assert.match(v2.json().error, /data 는 더 많습니다$/);
  for (const r of [h, v2]) assert.deepEqual(englishLeft(r.json().detail ?? r.json().error)
    .filter((l) => !/^(inputs|shape|data|FP64|heatmap|vmax|auto) /.test(l)), []);
});
