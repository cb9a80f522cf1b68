// server/www/words.js — the sentences the playground writes while it runs (the shapes
// line, the summary and experiment tables, the status line, a form field's own
// complaint), in English and in Korean, one table a language, in the lecture notes'
// words (점수, 가중치, 출력, 마스크, 행, 쿼리, 키 …).
//
// Served as part of /playground.js, after teach.js and app.js (server/www.S), so it
// also adds its rows to app.js's tables of static words (KO_TEXT, KO_PAGE) before the
// page is ready; app.js's language switch puts PAGE_WORDS_KO (or the English back) in
// place, and the drawing functions read PAGE_WORDS when they draw. Field names, step
// names, ops and warning codes stay as the API spells them, in both languages.
'use strict';

const PAGE_WORDS = {
  none: 'none',
  // s: every shape already written as "(2, 4)"; scale and d_k as numbers.
  facts: (s) => `Q ${s.q} · K ${s.k} · V ${s.v} · mask ${s.mask} · d_k ${s.d_k} · scale ${s.scale}` +
    ` → weights ${s.weights}, output ${s.output}`,
  // A multi-head answer's shapes are named by their fields; these have the notes' words.
  shapeName: (name) => name,
  sum: 'sum',
  sinkTook: (sink) => `the sink logit took ${sink} of each row`,
  summaryHeads: ['query', 'winning key', 'its weight', 'entropy (nats)', 'row sum'],
  compareNote: 'Against "Lecture 2: three queries": the key with the highest weight, and that weight.',
  compareHeads: ['query', 'before', 'after', 'changed'],
  head: (h) => `head ${h}`,
  headsMean: 'mean of the heads',
  required: (field) => `${field} is required`,
  notJson: (message) => `not JSON: ${message}`,
  variantsObject: 'an object such as {"softcap": 30}',
  parameter: (name) => ` (parameter ${name})`,
  unreachable: (message) => `The server could not be reached: ${message}`,
  problem: (status) => `Problem: HTTP ${status}.`,
  retry: (seconds) => ` Try again in ${seconds} s.`,
};
const PAGE_WORDS_EN = { ...PAGE_WORDS };

const SHAPE_NAMES_KO = {
  mask: '마스크', scores: '점수', weights: '가중치', weights_mean: '가중치 평균 (head 전체)',
  head_outputs: 'head 출력', output: '출력', bias: '편향 (bias)',
};
const PAGE_WORDS_KO = {
  none: '없음',
  facts: (s) => `Q ${s.q} · K ${s.k} · V ${s.v} · 마스크 ${s.mask} · d_k ${s.d_k} · 점수 조정 ×${s.scale}` +
    ` → 가중치 ${s.weights}, 출력 ${s.output}`,
  shapeName: (name) => SHAPE_NAMES_KO[name] || name,
  sum: '합',
  sinkTook: (sink) => `sink logit 이 각 행에서 가져간 가중치: ${sink}`,
  summaryHeads: ['쿼리', '가장 높은 가중치의 Key', '최고 가중치', '엔트로피 (nats)', '행의 합'],
  compareNote: '"강의 2: 쿼리 셋" 과 비교: 가장 높은 가중치의 Key 와 그 가중치.',
  compareHeads: ['쿼리', '실험 전', '실험 후', '변화'],
  head: (h) => `head ${h}`,
  headsMean: 'head 전체의 평균',
  required: (field) => `${field} 는 꼭 있어야 합니다`,
  notJson: (message) => `JSON 이 아닙니다: ${message}`,
  variantsObject: '{"softcap": 30} 같은 객체여야 합니다',
  parameter: (name) => ` (매개변수 ${name})`,
  unreachable: (message) => `서버에 연결할 수 없습니다: ${message}`,
  problem: (status) => `문제: HTTP ${status}.`,
  retry: (seconds) => ` ${seconds} 초 뒤에 다시 해 보세요.`,
};

// The head view's sentences (headview.js keeps the English: window.attndHeadView).
const HEAD_WORDS_KO = {
  token: (side, i, name) => `${side === 'q' ? '쿼리' : '키'} ${i}: ${name}`,
  figure: (heads, left, right, cross) => `head 보기: head ${heads} 개, 왼쪽에 ` +
    `${cross ? '디코더 토큰' : '토큰'} ${left} 개, 오른쪽에 ${right} 개. 선의 진하기가 Attention 가중치입니다`,
  line: (from, to, w, h) => `${from} → ${to}: ${w} (head ${h})`,
  headsShown: '보이는 head',
  headButton: (h) => `head ${h}`,
  tooMany: (n) => `선이 ${n} 개라 너무 많아 그리지 않습니다. 이 가중치는 히트맵에 있습니다.`,
  help: (cross) => (cross ? '왼쪽은 쿼리 (디코더), 오른쪽은 키 (인코더) 입니다. ' : '왼쪽은 쿼리, 오른쪽은 키입니다. ') +
    '선의 진하기가 가중치입니다. 토큰에 마우스를 올리거나 포커스하면 그 토큰의 선만 보입니다.',
};

// Puts lang's run-time words in place (app.js's switch calls it), English for any but ko.
function applyRunWords(lang) {
  const ko = lang === 'ko';
  Object.assign(PAGE_WORDS, ko ? PAGE_WORDS_KO : PAGE_WORDS_EN);
  const headView = window.attndHeadView;
  if (headView) Object.assign(headView.words, ko ? HEAD_WORDS_KO : headView.english);
}

// The page's static words that came after app.js's table (index.html's English is the key).
KO_PAGE.push(
  ['label:has(> #f-auto)', ' 가장 큰 가중치까지 색칠'],
  ['#headview-box h2', 'head 보기'],
  ['#multi-fields .help', '이 필드는 아래 JSON 을 고치고, JSON 은 이 필드를 채웁니다. kv_heads < heads 이면 ' +
    'grouped-query attention, n_kv 를 주면 cross-attention (x_q, x_kv) 입니다.'],
  ['#mh-mask-semantics option[value="keep"]', 'keep: 1 = 볼 수 있음'],
  ['#mh-mask-semantics option[value="block"]', 'block: 1 = 가림'],
);
