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
  stopped: (message) => `The run stopped: ${message}`,
  problem: (status) => `Problem: HTTP ${status}.`,
  retry: (seconds) => ` Try again in ${seconds} s.`,
  // the masks of training's picture (teach.js)
  blockMapDrawn: 'Drawn below as tiles over visible.',
  maskFigure: (nQ, nK, seen) => `visible: ${nQ} queries by ${nK} keys, ${seen} cells seen, with the block map's tiles over it`,
  sees: 'sees it',
  hidden: 'hidden',
  tileKinds: { full: 'full', partial: 'partial', empty: 'empty' },
  tileTip: (r, c, kind) => `tile (${r}, ${c}): ${kind}`,
  masksNote: (m) => `Tiles of ${m.bq} × ${m.bk}, (${m.rows}, ${m.cols}) of them: ${m.full} full (solid), ` +
    `${m.partial} partial (dashed), ${m.empty} empty (dotted); sparsity ${m.sparsity}. Blue cells are seen.`,
  // the backward pass (teach.js)
  // b: the request's backward ({seed} or {grad_output}); multi: /v1/multihead's.
  backwardNote: (b, multi) => 'L = Σ dO ∘ output, with dO ' +
    (b?.grad_output !== undefined ? 'as typed (grad_output). ' : `made from seed ${b?.seed ?? 0} (amplitude 1). `) +
    'Each gradient below is dL/d(that step), in the order the backward pass computes them, ' +
    (multi ? 'from the output back through W_O and every head to W_Q, W_K, W_V and X.'
      : 'from the output back to Q and K.'),
  gradOutputShape: (multi) => (multi ? '(n_q, d_model)' : '(n_q, d_v) or (d_v)') +
    ', the output\'s shape; empty: dO from the seed',
  softmaxGrad: 'dS = P ∘ (dP − D) is softmax\'s gradient: a row\'s weights always sum to 1, so nudging its ' +
    'scores cannot change that sum, and each row of dS sums to 0 (the row sum column).',
  softmaxGradSink: 'dS = P ∘ (dP − D) is softmax\'s gradient. The sink logit is one more entry of each row\'s ' +
    'softmax, with no value: its own dS is −sink_weight·D, so the keys\' dS sum to sink_weight·D (the row sum ' +
    'column), not 0, and grad_sink_logit adds the sink\'s dS over the rows.',
  rowSum: 'row sum',
  explainBackwardTitle: (q) => `dS of query ${q} by hand: softmax's gradient`,
  deltaLine: (terms, d) => `D = Σ dO·output = ${terms} = ${d}`,
  dsLine: (key, p, dp, d, ds) => `dS[${key}] = weight × (dP − D) = ${p} × (${dp} − ${d}) = ${ds}`,
  dsSum: (sum) => `Σ dS = ${sum}: the row sums to 0`,
  dsSumSink: (sum) => `Σ dS = ${sum} = sink_weight·D: with the sink's own dS, −sink_weight·D, the row sums to 0`,
  // generating with a KV cache (teach.js)
  decodeHelp: (p) => `The first ${p} tokens in one pass (the prefill), then each token alone: its query meets ` +
    'the keys and values of every token so far, kept in a cache that grows by one row a token. ' +
    'Previous and Next (or ← and → here) step through the tokens.',
  decodeAt: (t, i, count) => `token ${t} (${i + 1} of ${count})`,
  decodeCache: (t, s, kv) => `Token ${t}'s query against the cache of keys 0..${t}: cache k, v ${s} × ${kv} kv ` +
    `head${kv === 1 ? '' : 's'}. Keys after ${t} are not in the cache yet.`,
  notCached: 'not in the cache yet',
  decodeOutput: (t, values) => `output of token ${t}: [${values}]`,
  decodeMatch: (d, ok) => `Against the full causal pass: largest relative difference ${d}, ` +
    (ok ? 'within 1e-12: the same weights and output.' : 'more than 1e-12: not the same.'),
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
  stopped: (message) => `실행이 멈췄습니다: ${message}`,
  problem: (status) => `문제: HTTP ${status}.`,
  retry: (seconds) => ` ${seconds} 초 뒤에 다시 해 보세요.`,
  blockMapDrawn: '아래에 visible 위의 타일로 그렸습니다.',
  maskFigure: (nQ, nK, seen) => `visible: 쿼리 ${nQ} 개 × 키 ${nK} 개, 보이는 칸 ${seen} 개, 그 위에 block map 의 타일`,
  sees: '봄',
  hidden: '가림',
  tileKinds: { full: '가득 참', partial: '일부', empty: '비어 있음' },
  tileTip: (r, c, kind) => `타일 (${r}, ${c}): ${kind}`,
  masksNote: (m) => `타일 ${m.bq} × ${m.bk}, 모두 (${m.rows}, ${m.cols}) 개: 가득 참 ${m.full} 개 (실선), ` +
    `일부 ${m.partial} 개 (파선), 비어 있음 ${m.empty} 개 (점선); 희소도 ${m.sparsity}. 파란 칸이 보이는 칸입니다.`,
  backwardNote: (b, multi) => 'L = Σ dO ∘ 출력, dO 는 ' +
    (b?.grad_output !== undefined ? '입력한 값 (grad_output) 입니다. ' : `seed ${b?.seed ?? 0} 으로 만듭니다 (진폭 1). `) +
    '아래의 기울기는 각 단계에 대한 dL/d(그 단계) 이고, 역전파가 계산하는 순서대로 ' +
    (multi ? '출력에서 W_O 와 모든 head 를 지나 W_Q, W_K, W_V 와 X 까지 거슬러 갑니다.'
      : '출력에서 Q 와 K 까지 거슬러 갑니다.'),
  gradOutputShape: (multi) => (multi ? '(n_q, d_model)' : '(n_q, d_v) 또는 (d_v)') +
    ', 출력과 같은 shape. 비우면 seed 로 dO 를 만듭니다',
  softmaxGrad: 'dS = P ∘ (dP − D) 는 softmax 의 기울기입니다: 가중치는 행마다 합이 1 이므로 점수를 조금 바꿔도 ' +
    '그 합은 변하지 않고, dS 는 행마다 합이 0 입니다 (행의 합 열).',
  softmaxGradSink: 'dS = P ∘ (dP − D) 는 softmax 의 기울기입니다. sink logit 은 행마다 softmax 에 더한 칸 하나이고 ' +
    '값(Value)은 없습니다: 그 칸의 dS 는 −sink_weight·D 이므로, 키들의 dS 는 행마다 합이 0 이 아니라 sink_weight·D ' +
    '입니다 (행의 합 열). grad_sink_logit 은 sink 칸의 dS 를 모든 행에 걸쳐 더한 값입니다.',
  rowSum: '행의 합',
  explainBackwardTitle: (q) => `손으로 계산한 쿼리 ${q} 의 dS: softmax 의 기울기`,
  deltaLine: (terms, d) => `D = Σ dO·출력 = ${terms} = ${d}`,
  dsLine: (key, p, dp, d, ds) => `dS[${key}] = 가중치 × (dP − D) = ${p} × (${dp} − ${d}) = ${ds}`,
  dsSum: (sum) => `Σ dS = ${sum}: 행의 합은 0`,
  dsSumSink: (sum) => `Σ dS = ${sum} = sink_weight·D: sink 칸의 dS (−sink_weight·D) 를 더하면 행의 합은 0`,
  decodeHelp: (p) => `처음 ${p} 개 토큰은 한 번에 계산하고 (prefill), 그 뒤 토큰은 하나씩 계산합니다: 쿼리가 ` +
    '지금까지 모든 토큰의 키와 값을 만나고, 이 키와 값은 토큰마다 한 행씩 늘어나는 캐시에 있습니다. ' +
    '이전, 다음 (여기서는 ← 와 → 도) 으로 토큰을 넘깁니다.',
  decodeAt: (t, i, count) => `토큰 ${t} (${count} 개 중 ${i + 1} 번째)`,
  decodeCache: (t, s, kv) => `토큰 ${t} 의 쿼리가 키 0..${t} 의 캐시를 만납니다: 캐시 k, v ${s} × kv head ${kv} 개. ` +
    `${t} 뒤의 키는 아직 캐시에 없습니다.`,
  notCached: '아직 캐시에 없음',
  decodeOutput: (t, values) => `토큰 ${t} 의 출력: [${values}]`,
  decodeMatch: (d, ok) => `전체 causal 계산과 비교: 가장 큰 상대 차이 ${d}, ` +
    (ok ? '1e-12 이내: 같은 가중치와 출력입니다.' : '1e-12 보다 큼: 같지 않습니다.'),
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

// The examples' names and notes that came after app.js's table: the experiments' notes,
// each variant, the multi-head example's note.
Object.assign(KO_TEXT, {
  'A bigger query, same direction: the same key wins, with a sharper weight.':
    '같은 방향의 더 큰 쿼리: 같은 Key 가 최고 가중치를 받고, 그 가중치는 더 뚜렷해집니다.',
  'Q3 turns towards the first axis: the keys it prefers change.':
    'Q3 가 첫 축 쪽으로 돌아섭니다: 높은 가중치를 주는 Key 가 바뀝니다.',
  'Variant: RoPE (rotary positions)': '변형: RoPE (회전 위치)',
  'q and k turn by their positions before the scores (steps q_rope, k_rope): key 1 no longer matches query 0 as well.':
    'q 와 k 가 점수를 내기 전에 위치만큼 회전합니다 (단계 q_rope, k_rope): 키 1 이 쿼리 0 과 예전만큼 맞지 않습니다.',
  'Variant: softcap (Gemma 2)': '변형: softcap (Gemma 2)',
  'softcapped = 0.5·tanh(scaled/0.5): the scores 1 shrink to 0.48, and the weights flatten.':
    'softcapped = 0.5·tanh(scaled/0.5): 조정한 점수 1 이 0.48 로 줄고, 가중치는 고르게 퍼집니다.',
  'Variant: ALiBi with a causal mask': '변형: causal 마스크와 ALiBi',
  'Each key loses 0.5 per position of distance before the softmax: nearer keys weigh more.':
    'softmax 전에 키마다 거리 한 칸에 0.5 씩 점수가 깎입니다: 가까운 키일수록 가중치가 큽니다.',
  'Variant: a sliding window with a sink token': '변형: sink 토큰이 있는 슬라이딩 윈도우',
  'Each query sees itself and one key back, plus key 0 (the sink token) always.':
    '쿼리마다 자기 자리와 바로 앞 키 하나, 그리고 키 0 (sink 토큰) 을 언제나 봅니다.',
  'Variant: a sink logit': '변형: sink logit',
  'An extra logit of 0 in every row takes weight but brings no value: the rows sum to less than 1.':
    '행마다 더한 logit 0 이 가중치를 가져가지만 값(Value)은 가져오지 않습니다: 행의 합이 1 보다 작아집니다.',
  'Variant: dropout (p = 0.5, seed 42)': '변형: dropout (p = 0.5, seed 42)',
  'Some weights are dropped (dropout_keep 0) and the rest doubled; the same seed drops the same cells.':
    '일부 가중치가 빠지고 (dropout_keep 0) 나머지는 두 배가 됩니다. 같은 seed 는 같은 칸을 뺍니다.',
  [DECODE_PRESET.name]: 'KV 캐시로 생성: head 2 개, prefill 2',
  [DECODE_PRESET.note]: '무작위 토큰 6 개의 causal self-attention: 처음 2 개는 한 번에, 그 뒤 토큰은 ' +
    '하나씩 캐시에 있는 키와 값에 쿼리를 맞춥니다. 이전, 다음으로 토큰을 넘겨 보세요.',
  [MULTIHEAD_PRESET.note]:
    'X·W_Q, X·W_K, X·W_V 를 head 2 개로 나누고, head 마다 가중치가 따로 나옵니다. 1/√d_k 대신 ' +
    'scale 4 로 무작위 head 의 가중치를 뚜렷하게 해서 어느 키를 고르는지 보이게 합니다.',
});

// The page's static words that came after app.js's table (index.html's English is the key;
// a third member picks a later text node of the element, around its markup).
KO_PAGE.push(
  ['title', 'attnd 플레이그라운드: scaled dot-product attention, 단계별로'],
  ['#intro', '. 모든 단계를 보여 줍니다. 예제를 고르거나 행렬 (JSON) 을 고친 뒤 실행하세요.'],
  ['header p a', 'API 설명'],
  ['#form-help', '행렬은 행들의 JSON 배열입니다. 예: ', 0],
  ['#form-help', '. 쿼리 하나는 벡터 ', 1],
  ['#form-help', ' 로 써도 됩니다. Ctrl+Enter 로 어느 필드에서나 실행합니다.', 2],
  ['label[for="f-q"] .shape', '(n_q, d_k) 또는 (d_k)'],
  ['label[for="f-scale"]', '점수 조정 (scale) '],
  ['#f-pitfall option[value=""]', '없음'],
  ['#f-pitfall option[value="no_transpose"]', 'Q @ K (.T 없이)'],
  ['#f-pitfall option[value="column_softmax"]', '열 방향 softmax'],
  ['#f-pitfall option[value="no_max_subtraction"]', '최댓값을 빼지 않은 exp'],
  ['label[for="f-variants"]', '변형 '],
  ['label[for="f-variants"] .shape', '선택, JSON 객체: rope, softcap, alibi, window, sink_tokens, sink_logit, dropout'],
  ['label[for="f-round"]', '반올림 '],
  ['label[for="f-round"] .shape', '소수점 0..15 자리'],
  ['label[for="f-mask-semantics"]', '마스크의 뜻'],
  ['#f-mask-semantics option[value="keep"]', 'keep: 1 = 볼 수 있음'],
  ['#f-mask-semantics option[value="block"]', 'block: 1 = 가림'],
  ['label[for="f-bias"]', '편향 (bias) '],
  ['label[for="f-bias"] .shape', '(n_q, n_k), 조정한 점수에 더함, 선택'],
  ['label[for="f-vmin"] .shape', '가장 옅은 색의 가중치: 숫자 또는 auto'],
  ['label[for="f-vmax"] .shape', '가장 진한 색의 가중치: 숫자 또는 auto'],
  ['label[for="f-htitle"]', '히트맵 제목 '],
  ['label[for="f-htitle"] .shape', '선택'],
  ['#f-auto-label', ' 가장 큰 가중치까지 색칠'],
  ['#headview-box h2', 'head 보기'],
  ['#multi-fields .help', '이 필드는 아래 JSON 을 고치고, JSON 은 이 필드를 채웁니다. kv_heads < heads 이면 ' +
    'grouped-query attention, n_kv 를 주면 cross-attention (x_q, x_kv) 입니다.'],
  ['#mh-mask-semantics option[value="keep"]', 'keep: 1 = 볼 수 있음'],
  ['#mh-mask-semantics option[value="block"]', 'block: 1 = 가림'],
  // the masks of training's box and picture
  ['#masks summary', '학습의 마스크 '],
  ['#masks summary .shape', '마스크와 그 타일 보기'],
  ['#masks-help', '규칙마다 키를 가립니다. 열거나 규칙을 정하면 ', 0],
  ['#masks-help', ' 와 ', 1],
  ['#masks-help', ' 도 물어서 그립니다. 무엇이든 바꾸면 다시 실행합니다.', 2],
  ['label[for="f-mask-kind"]', '마스크 종류'],
  ['#f-mask-kind option[value=""]', '없음'],
  ['#f-mask-kind option[value="causal"]', 'causal (오른쪽 아래 맞춤)'],
  ['#f-mask-kind option[value="causal_top_left"]', 'causal, 왼쪽 위 맞춤'],
  ['#f-mask-kind option[value="cells"]', '0/1 칸 (마스크 필드)'],
  ['label[for="f-documents"]', '문서 '],
  ['label[for="f-documents"] .shape', '길이, 예: 2, 4'],
  ['label[for="f-prefix"]', 'prefix (앞부분) '],
  ['label[for="f-prefix"] .shape', '이 앞의 키는 causal 을 통과'],
  ['label[for="f-chunk"]', 'chunk '],
  ['label[for="f-chunk"] .shape', '쿼리의 chunk 안의 키만'],
  ['label[for="f-window-left"]', 'window 왼쪽 '],
  ['label[for="f-window-left"] .shape', '뒤로 몇 키'],
  ['label[for="f-window-right"]', 'window 오른쪽 '],
  ['label[for="f-window-right"] .shape', '앞으로 몇 키'],
  ['label[for="f-block-q"]', '타일 B_q '],
  ['label[for="f-block-q"] .shape', '타일 하나의 쿼리 수'],
  ['label[for="f-block-k"]', '타일 B_k '],
  ['label[for="f-block-k"] .shape', '타일 하나의 키 수'],
  ['#masks-title', '마스크와 그 타일'],
  // the backward pass and generating with a KV cache
  ['#f-backward-label', ' 역전파: 순전파 단계 뒤에 기울기 계산'],
  ['label[for="f-grad-seed"]', 'dO 의 seed '],
  ['label[for="f-grad-seed"] .shape', 'dO = random(seed), 출력과 같은 shape'],
  ['#backward-title', '역전파: 기울기'],
  ['#explain-backward-title', '손으로 계산한 dS: softmax 의 기울기'],
  ['#mh-decode-label', ' 생성 (KV 캐시): 토큰 하나씩'],
  ['label[for="mh-prefill"] .shape', '한 번에 계산하는 토큰 수'],
  ['#decode-title', '생성 (KV 캐시)'],
  ['#decode-prev', '이전'],
  ['#decode-next', '다음'],
);
