/*
 * api/http/messages_ko.c — attnd in Korean: one row per message, {English as the code
 * writes it, Korean}, in the lecture notes' own words (점수, 가중치, 전치, 내적, 가중합,
 * 행, 열, 마스크, 눈금 줄이기; ../shared/seeds/GLOSSARY.md) and one style throughout
 * (-습니다). Field names, type URIs, step names and numbers stay as they are. Each
 * Korean keeps its English's printf conversions in the same order (check_lang tests it).
 */
#include "api/http/messages.h"

const struct api_message api_messages_ko[] = {
    { "nothing is served at %.100s; attnd serves GET / (the playground), POST "
      "/v1/attention, /v1/attention/batch, /v1/multihead, GET /v1/shapes, /healthz, "
      "/readyz, /version, /metrics, the V2 inference protocol under /v2, /openapi.yaml, "
      "/openapi.json and /problems/<type>",
      "%.100s 에서는 아무것도 제공하지 않습니다. attnd 가 제공하는 것: GET / (플레이그라운드), POST /v1/attention, "
      "/v1/attention/batch, /v1/multihead, GET /v1/shapes, /healthz, /readyz, /version, "
      "/metrics, /v2 아래의 V2 추론 프로토콜, /openapi.yaml, /openapi.json, /problems/<type>" },
    { "%.16s is not allowed on %.100s; allowed: %s",
      "%.16s 메서드는 %.100s 에서 쓸 수 없습니다. 쓸 수 있는 메서드: %s" },
    { "Content-Type %.100s is not read; send application/json%s (text/plain, "
      "application/x-www-form-urlencoded or no Content-Type are read as JSON too)",
      "Content-Type %.100s 는 읽지 않습니다. application/json%s 로 보내세요 (text/plain, "
      "application/x-www-form-urlencoded, Content-Type 없음도 JSON 으로 읽습니다)" },
    { "the body is larger than this server accepts (%zu bytes)",
      "본문이 이 서버가 받는 크기(%zu 바이트)보다 큽니다" },
    { "query %s may attend to no key (its mask row blocks every key): its weights and "
      "%s",
      "쿼리 %s: 어떤 키도 볼 수 없습니다 (마스크 행이 모든 키를 가립니다). 가중치와 %s" },
    { "\nwarning: %s\n",
      "\n경고: %s\n" },
    { "output are 0",
      "출력은 0 입니다" },
    { "head outputs are 0 in every head",
      "모든 head 의 head 출력은 0 입니다" },
    { "%s is required: %s %s",
      "%s 가 필요합니다: %s %s" },
    { "attention needs q, k and v: softmax(q @ k^T * scale) @ v",
      "attention 에는 q, k, v 가 필요합니다: softmax(q @ k^T * scale) @ v" },
    { "q has %zu columns but k has %zu: Q @ K^T needs both to have d_k columns",
      "q 는 열이 %zu 개인데 k 는 %zu 개입니다: Q @ K^T 를 하려면 둘 다 d_k 개의 열이 있어야 합니다" },
    { "k looks transposed: pass k as (n_k, d_k), one row per key; attnd computes the "
      "transpose itself",
      "k 가 전치된 것 같습니다: k 는 (n_k, d_k), 키 하나에 행 하나로 보내세요. 전치(K.T)는 attnd 가 직접 계산합니다" },
    { "each key needs as many numbers as each query (d_k = %zu)",
      "각 키에는 각 쿼리와 같은 개수의 숫자가 있어야 합니다 (d_k = %zu)" },
    { "k has %zu rows (keys) but v has %zu: weights @ V needs one row of v per key",
      "k 는 행(키)이 %zu 개인데 v 는 %zu 개입니다: 가중치 @ V 를 하려면 키마다 v 의 행이 하나씩 있어야 합니다" },
    { "v looks transposed: pass v as (n_k, d_v), one row per key",
      "v 가 전치된 것 같습니다: v 는 (n_k, d_v), 키 하나에 행 하나로 보내세요" },
    { "v needs one row per key: give it %zu rows, in the order of k's rows",
      "v 에는 키마다 행이 하나 있어야 합니다: k 의 행 순서대로 %zu 개의 행을 주세요" },
    { "%s would make a %s of %zu cells (%zu x %zu); this server computes at most %zu "
      "cells in one matrix",
      "%s 는 %s 를 %zu 칸 (%zu x %zu) 으로 만듭니다. 이 서버는 행렬 하나에 최대 %zu 칸까지 계산합니다" },
    { "send fewer queries or keys, or split the work with a batch",
      "쿼리나 키를 줄이거나, batch 로 일을 나누세요" },
    { "the body is %s; it must be a JSON object such as {\"q\": [[1, 0]], \"k\": [[1, "
      "0]], \"v\": [[1]]}",
      "본문이 %s 입니다. {\"q\": [[1, 0]], \"k\": [[1, 0]], \"v\": [[1]]} 같은 JSON 객체여야 합니다" },
    { "no memory for a %zu x %zu attention",
      "%zu x %zu attention 을 계산할 메모리가 없습니다" },
    { "step %d (%s) produced a non-finite number at cell [%zu, %zu]",
      "%d 단계 (%s) 에서 칸 [%zu, %zu] 에 유한하지 않은 수가 나왔습니다" },
    { "q row %zu . k row %zu is beyond the largest double (~1.8e308): scale q and k "
      "down",
      "q 의 %zu 행과 k 의 %zu 행의 내적이 double 의 최댓값(~1.8e308)을 넘습니다: q 와 k 를 작게 줄이세요" },
    { "scores * scale overflows: use a smaller scale",
      "점수 * scale 이 계산 범위를 넘습니다: 더 작은 scale 을 쓰세요" },
    { "scaled + bias overflows: use smaller bias values",
      "scaled + bias 가 계산 범위를 넘습니다: 더 작은 bias 값을 쓰세요" },
    { "the weighted sum of v's rows overflows: scale v down",
      "v 의 행들의 가중합이 계산 범위를 넘습니다: v 를 작게 줄이세요" },
    { "the computation failed: %s",
      "계산에 실패했습니다: %s" },
    { "the body is %s; it must be an object {\"items\": [request, ...]}",
      "본문이 %s 입니다. {\"items\": [request, ...]} 같은 객체여야 합니다" },
    { "items is required: a list of /v1/attention requests",
      "items 가 필요합니다: /v1/attention 요청의 목록" },
    { "items must be a non-empty array of requests, not %s%s",
      "items 는 요청이 하나 이상 든 배열이어야 합니다. 지금은 %s%s 입니다" },
    { "items has %zu requests; this server takes at most %zu in one batch",
      "items 에 요청이 %zu 개 있습니다. 이 서버는 batch 하나에 최대 %zu 개를 받습니다" },
    { "split the items over several batches",
      "items 를 여러 batch 로 나누세요" },
    { "the items up to /items/%zu ask for %zu cells together; this server computes at "
      "most %zu cells in one request",
      "/items/%zu 까지의 항목이 모두 %zu 칸을 요구합니다. 이 서버는 요청 하나에 최대 %zu 칸까지 계산합니다" },
    { "no memory for %zu batch items",
      "batch 항목 %zu 개를 위한 메모리가 없습니다" },
    { "shutting down: finishing the requests in flight",
      "종료하는 중입니다: 처리 중인 요청을 마무리하고 있습니다" },
    { "there is no problem type \"%.64s\"; the types are listed in /openapi.yaml",
      "\"%.64s\" 라는 문제 유형은 없습니다. 유형 목록은 /openapi.yaml 에 있습니다" },
    { "See <a href=\"/openapi.yaml\">the API description</a>.",
      "<a href=\"/openapi.yaml\">API 설명</a>을 보세요." },
    { "/metrics is answered by the server, which keeps the counters; api/ alone has "
      "none",
      "/metrics 는 카운터를 가진 서버가 답합니다. api/ 혼자서는 카운터가 없습니다" },
    { "the playground page is served by the server, which holds its files; api/ alone "
      "has none",
      "플레이그라운드 페이지는 파일을 가진 서버가 제공합니다. api/ 혼자서는 파일이 없습니다" },
    { "random is %s; it must be an object such as {\"seed\": 0, \"n\": 10, \"d_model\": "
      "512}",
      "random 이 %s 입니다. {\"seed\": 0, \"n\": 10, \"d_model\": 512} 같은 객체여야 합니다" },
    { "random.seed is required: the same seed gives the same numbers",
      "random.seed 가 필요합니다: 같은 seed 는 같은 숫자를 줍니다" },
    { "random.seed must be an integer from 0 to 9223372036854775807, not %s",
      "random.seed 는 0 부터 9223372036854775807 까지의 정수여야 합니다. 지금은 %s 입니다" },
    { "no memory for %zu random numbers",
      "난수 %zu 개를 위한 메모리가 없습니다" },
    { "%s is required: %s",
      "%s 가 필요합니다: %s" },
    { "or add \"random\": {\"seed\": 0, ...} to fill every input not given",
      "또는 \"random\": {\"seed\": 0, ...} 을 더해 주지 않은 입력을 모두 채우세요" },
    { "x is the input of self-attention; x_q and x_kv are those of cross-attention: "
      "send x alone, or x_q with x_kv",
      "x 는 self-attention 의 입력이고, x_q 와 x_kv 는 cross-attention 의 입력입니다: x 만 보내거나, x_q 와 "
      "x_kv 를 함께 보내세요" },
    { "x_q has %zu columns but x_kv has %zu: both are (rows, d_model)",
      "x_q 는 열이 %zu 개인데 x_kv 는 %zu 개입니다: 둘 다 (행, d_model) 입니다" },
    { "queries and keys come from inputs of the same width d_model",
      "쿼리와 키는 같은 너비 d_model 의 입력에서 만들어집니다" },
    { "random.%s is %lld but the input given has %zu",
      "random.%s 는 %lld 인데 주어진 입력은 %zu 입니다" },
    { "leave random.%s out: it only sizes the inputs random fills",
      "random.%s 를 빼세요: random 이 채우는 입력의 크기만 정합니다" },
    { "random.%s is required to fill the inputs not given",
      "random.%s 가 있어야 주지 않은 입력을 채울 수 있습니다" },
    { "random.n_kv asks for cross-attention, but x is the input of self-attention",
      "random.n_kv 는 cross-attention 을 뜻하는데, x 는 self-attention 의 입력입니다" },
    { "drop n_kv, or send x_q (and x_kv) instead of x",
      "n_kv 를 빼거나, x 대신 x_q (와 x_kv) 를 보내세요" },
    { "heads is required: the number of heads h, dividing d_model",
      "heads 가 필요합니다: d_model 을 나누어떨어지게 하는 head 개수 h" },
    { "heads 1 is single-head attention with projections",
      "heads 1 은 투영이 있는 single-head attention 입니다" },
    { "kv_heads %zu does not divide heads %zu: each kv head serves heads/kv_heads query "
      "heads",
      "kv_heads %zu 는 heads %zu 를 나누어떨어지게 하지 않습니다: kv head 하나가 heads/kv_heads 개의 쿼리 "
      "head 를 맡습니다" },
    { "with heads = %zu, kv_heads can be %s (1 is multi-query attention)",
      "heads = %zu 이면 kv_heads 는 %s 가 될 수 있습니다 (1 은 multi-query attention)" },
    { "d_model %zu is not divisible by heads %zu: each head takes d_model/heads columns",
      "d_model %zu 는 heads %zu 로 나누어떨어지지 않습니다: head 마다 d_model/heads 개의 열을 가집니다" },
    { "with d_model = %zu, heads can be %s",
      "d_model = %zu 이면 heads 는 %s 가 될 수 있습니다" },
    { "%s would have %zu x %zu cells; this server computes at most %zu cells in one "
      "matrix",
      "%s 는 %zu x %zu 칸이 됩니다. 이 서버는 행렬 하나에 최대 %zu 칸까지 계산합니다" },
    { "%s is (%zu, %zu) but must be %s with weight_layout \"%s\"",
      "%s 는 (%zu, %zu) 인데 %s 여야 합니다 (weight_layout \"%s\")" },
    { "%s is (%zu, %zu): set weight_layout to \"%s\"%s",
      "%s 는 (%zu, %zu) 입니다: weight_layout 을 \"%s\" 로 두세요%s" },
    { "d_model = %zu, heads = %zu, kv_heads = %zu, so d_k = %zu and %s has %zu output "
      "columns",
      "d_model = %zu, heads = %zu, kv_heads = %zu 이므로 d_k = %zu 이고 %s 의 출력 열은 %zu 개입니다" },
    { "%s has %zu x %zu numbers but must be a vector of %zu",
      "%s 에 숫자가 %zu x %zu 개 있는데, 길이 %zu 의 벡터여야 합니다" },
    { "a bias has one number per output column of its projection",
      "bias 는 투영의 출력 열마다 숫자가 하나입니다" },
    { "the body is %s; it must be a JSON object such as {\"heads\": 2, \"random\": "
      "{\"seed\": 0, \"n\": 4, \"d_model\": 8}}",
      "본문이 %s 입니다. {\"heads\": 2, \"random\": {\"seed\": 0, \"n\": 4, \"d_model\": 8}} "
      "같은 JSON 객체여야 합니다" },
    { "head %zu, step %s, produced a non-finite number at cell [%zu, %zu]",
      "head %zu 의 %s 단계에서 칸 [%zu, %zu] 에 유한하지 않은 수가 나왔습니다" },
    { "step %s produced a non-finite number at cell [%zu, %zu]",
      "%s 단계에서 칸 [%zu, %zu] 에 유한하지 않은 수가 나왔습니다" },
    { "the numbers are too large for a double (~1.8e308): scale the inputs or weights "
      "down",
      "숫자가 double 로 나타내기에 너무 큽니다 (~1.8e308): 입력이나 가중치를 작게 줄이세요" },
    { "no memory for %zu heads of %zu x %zu",
      "%zu 개의 %zu x %zu head 를 위한 메모리가 없습니다" },
    { "%s must be an integer from 1 to 2147483648, not \"%.40s\"",
      "%s 는 1 부터 2147483648 까지의 정수여야 합니다. 지금은 \"%.40s\" 입니다" },
    { "the query parameter %s is required: /v1/shapes?n=10&d_model=512&heads=8",
      "쿼리 매개변수 %s 가 필요합니다: /v1/shapes?n=10&d_model=512&heads=8" },
    { "heads %zu does not divide d_model %zu: each head takes d_model/heads columns",
      "heads %zu 는 d_model %zu 를 나누어떨어지게 하지 않습니다: head 마다 d_model/heads 개의 열을 가집니다" },
    { "the original Transformer has d_model 512 and 8 heads (d_k 64)",
      "원래 Transformer 는 d_model 512, head 8 개 (d_k 64) 입니다" },
    { "kv_heads %zu does not divide heads %zu",
      "kv_heads %zu 는 heads %zu 를 나누어떨어지게 하지 않습니다" },
    { "kv_heads 1 is multi-query attention; kv_heads = heads is ordinary multi-head "
      "attention",
      "kv_heads 1 은 multi-query attention, kv_heads = heads 는 보통의 multi-head attention "
      "입니다" },
    { "%s has no batch size but another input has a batch of %zu: Q, K and V are all "
      "(B, rows, cols) or none",
      "%s 에는 batch 크기가 없는데 다른 입력은 batch 가 %zu 입니다: Q, K, V 가 모두 (B, 행, 열) 이거나 모두 아니어야 "
      "합니다" },
    { "K has %zu columns but Q has %zu: Q @ K^T needs both to have d_k columns",
      "K 는 열이 %zu 개인데 Q 는 %zu 개입니다: Q @ K^T 를 하려면 둘 다 d_k 개의 열이 있어야 합니다" },
    { "K looks transposed: pass K as (n_k, d_k), one row per key",
      "K 가 전치된 것 같습니다: K 는 (n_k, d_k), 키 하나에 행 하나로 보내세요" },
    { "V has %zu rows but K has %zu: weights @ V needs one row of V per key",
      "V 는 행이 %zu 개인데 K 는 %zu 개입니다: 가중치 @ V 를 하려면 키마다 V 의 행이 하나씩 있어야 합니다" },
    { "%s would make a matrix of more than %zu cells (%zu x %zu scores, %zu x %zu "
      "output)",
      "%s 는 %zu 칸보다 큰 행렬을 만듭니다 (점수 %zu x %zu, 출력 %zu x %zu)" },
    { "parameters.scale must be a number > 0",
      "parameters.scale 은 0 보다 큰 수여야 합니다" },
    { "no memory for output %s",
      "출력 %s 를 위한 메모리가 없습니다" },
    { "no memory to read %.64s",
      "%.64s 를 읽을 메모리가 없습니다" },
    { "inputs[%zu] (%.64s) has rank %zu; it takes %zu sizes%s, or %zu with a leading "
      "batch size",
      "inputs[%zu] (%.64s) 의 rank 는 %zu 입니다. 크기 %zu 개%s, 또는 앞에 batch 크기를 더해 %zu 개를 받습니다" },
    { "inputs[%zu] (%.64s) has a batch of %zu, another input %zu",
      "inputs[%zu] (%.64s) 의 batch 는 %zu 인데 다른 입력은 %zu 입니다" },
    { "outputs[%zu] asks for %.64s, which this model does not make",
      "outputs[%zu] 가 %.64s 를 요청하지만, 이 모델은 그것을 만들지 않습니다" },
    { "did you mean %s? (GET the model's metadata for its outputs)",
      "%s 를 뜻했나요? (출력 목록은 모델의 메타데이터를 GET 하세요)" },
    { "inputs[%zu] is called %.64s, which the %s model does not take",
      "inputs[%zu] 의 이름은 %.64s 인데, %s 모델은 그 입력을 받지 않습니다" },
    { "did you mean %s? (names are upper case, as the model's metadata lists them)",
      "%s 를 뜻했나요? (이름은 모델 메타데이터에 적힌 대로 대문자입니다)" },
    { "inputs[%zu] (%.64s) is %s, which %s is not read as",
      "inputs[%zu] (%.64s) 는 %s 인데, %s 는 그 형식으로 읽지 않습니다" },
    { "the %s model needs an input called %s",
      "%s 모델에는 %s 라는 입력이 필요합니다" },
    { "parameters.%s names an attention variant this server does not compute yet",
      "parameters.%s 는 이 서버가 아직 계산하지 않는 attention 변형입니다" },
    { "%s must be (n_q, n_k) = (%zu, %zu)%s",
      "%s 는 (n_q, n_k) = (%zu, %zu) 여야 합니다%s" },
    { "%s looks transposed: one row per query, one column per key",
      "%s 가 전치된 것 같습니다: 쿼리마다 행 하나, 키마다 열 하나입니다" },
    { "parameters.mask_semantics is \"keep\" (1 = may attend) or \"block\" (1 = "
      "blocked)",
      "parameters.mask_semantics 는 \"keep\" (1 = 볼 수 있음) 또는 \"block\" (1 = 가림) 입니다" },
    { "parameters.causal combines with no MASK: send the causal cells in MASK instead",
      "parameters.causal 은 MASK 와 함께 쓸 수 없습니다: causal 칸을 MASK 에 넣어 보내세요" },
    { "no memory for the mask",
      "마스크를 위한 메모리가 없습니다" },
    { "no memory for the response",
      "응답을 위한 메모리가 없습니다" },
    { "the multihead model takes X (self-attention) or X_Q with X_KV "
      "(cross-attention)%s",
      "multihead 모델은 X (self-attention) 또는 X_Q 와 X_KV (cross-attention) 를 받습니다%s" },
    { "parameters.heads must be a whole number of heads dividing d_model = %zu",
      "parameters.heads 는 d_model = %zu 를 나누어떨어지게 하는 head 개수여야 합니다" },
    { "parameters.kv_heads must divide heads = %zu",
      "parameters.kv_heads 는 heads = %zu 를 나누어떨어지게 해야 합니다" },
    { "parameters.weight_layout is \"in_out\" (Q = X W) or \"out_in\" (PyTorch's, Q = X "
      "W^T)",
      "parameters.weight_layout 은 \"in_out\" (Q = X W) 또는 \"out_in\" (PyTorch 방식, Q = X "
      "W^T) 입니다" },
    { "X_Q and X_KV both lead with a batch size, or neither does",
      "X_Q 와 X_KV 는 둘 다 batch 크기로 시작하거나 둘 다 아니어야 합니다" },
    { "X_KV has %zu columns but X_Q has %zu: both are d_model wide",
      "X_KV 는 열이 %zu 개인데 X_Q 는 %zu 개입니다: 둘 다 너비가 d_model 입니다" },
    { "%zu queries and %zu keys make a score matrix of more than %zu cells",
      "쿼리 %zu 개와 키 %zu 개는 %zu 칸보다 큰 점수 행렬을 만듭니다" },
    { "%s must be (%zu, %zu): d_model = %zu, heads = %zu, kv_heads = %zu, weight_layout "
      "%s",
      "%s 는 (%zu, %zu) 여야 합니다: d_model = %zu, heads = %zu, kv_heads = %zu, "
      "weight_layout %s" },
    { "%s must be a vector of %zu",
      "%s 는 길이 %zu 의 벡터여야 합니다" },
    { "the %zu heads of %zu x %zu need more memory than one request may use",
      "%zu 개의 %zu x %zu head 는 요청 하나가 쓸 수 있는 것보다 많은 메모리가 필요합니다" },
    { "the server's memory budget is taken (answers waiting for their clients, requests "
      "being computed) and this request needs about %.1f MB more",
      "서버의 메모리 예산이 차 있습니다 (클라이언트를 기다리는 응답, 계산 중인 요청). 이 요청은 약 %.1f MB 가 더 필요합니다" },
    { "nothing is wrong with the request: retry after the Retry-After seconds, or on "
      "another replica; the operator sets the budget with --max-memory",
      "요청에는 잘못이 없습니다: Retry-After 초 뒤에, 또는 다른 복제본에서 다시 시도하세요. 예산은 운영자가 --max-memory 로 "
      "정합니다" },
    { "this request would hold about %.1f MB at once (its body, every matrix it "
      "computes and its answer); this server takes at most %.1f MB for one request",
      "이 요청은 한 번에 약 %.1f MB 를 차지합니다 (본문, 계산하는 모든 행렬, 응답). 이 서버는 요청 하나에 최대 %.1f MB 를 "
      "받습니다" },
    { "send fewer rows here, ask for fewer steps with include, or split the work over "
      "several requests; the operator sets the limit with --max-request-bytes",
      "여기 행을 줄이거나, include 로 단계를 줄이거나, 일을 여러 요청으로 나누세요. 한도는 운영자가 --max-request-bytes 로 "
      "정합니다" },
    { "the request runs elsewhere",
      "요청은 다른 곳에서 실행됩니다" },
    { "lang \"%.40s\" is not a language attnd speaks; use en or ko",
      "lang \"%.40s\" 는 attnd 가 말하는 언어가 아닙니다. en 이나 ko 를 쓰세요" },
    { "leave lang out for English, or send Accept-Language",
      "영어로 받으려면 lang 을 빼고, 아니면 Accept-Language 를 보내세요" },
    { "%s cannot be served as %s",
      "%s 는 %s 로 줄 수 없습니다" },
    { "format \"%.32s\" is not known; use json, text or svg",
      "format \"%.32s\" 은 모르는 형식입니다. json, text, svg 중 하나를 쓰세요" },
    { "Accept: %.160s cannot be served by %.100s, which produces %s",
      "Accept: %.160s 는 %.100s 에서 줄 수 없습니다. 이 엔드포인트가 만드는 것: %s" },
    { "The body is not valid JSON",
      "본문이 올바른 JSON 이 아닙니다" },
    { "The request body could not be read as JSON. The detail gives the line, the "
      "column and the byte position where reading stopped. Duplicate keys in one "
      "object, an empty body and a leading byte-order mark are refused too, because "
      "each hides a mistake: send one UTF-8 JSON object with each field once.",
      "요청 본문을 JSON 으로 읽을 수 없었습니다. detail 에 읽기가 멈춘 줄, 열, 바이트 위치가 있습니다. 한 객체 안의 중복 키, 빈 "
      "본문, 맨 앞의 바이트 순서 표시(BOM)도 거절합니다. 모두 실수를 숨기기 때문입니다: 필드마다 한 번씩 쓴 UTF-8 JSON 객체 하나를 "
      "보내세요." },
    { "No such endpoint",
      "그런 엔드포인트는 없습니다" },
    { "Nothing is served at this path. The detail lists the endpoints attnd has; the "
      "full description is at /openapi.yaml.",
      "이 경로에서는 아무것도 제공하지 않습니다. detail 에 attnd 의 엔드포인트 목록이 있고, 전체 설명은 /openapi.yaml 에 "
      "있습니다." },
    { "Method not allowed",
      "허용되지 않는 메서드입니다" },
    { "The path exists but not for this method. The Allow header lists the methods it "
      "takes: computations are POST with a JSON body, everything else is GET.",
      "경로는 있지만 이 메서드로는 쓸 수 없습니다. Allow 헤더가 받는 메서드를 알려 줍니다: 계산은 JSON 본문을 담은 POST 이고, "
      "나머지는 모두 GET 입니다." },
    { "The body is too large",
      "본문이 너무 큽니다" },
    { "The request body is larger than this server accepts (its --max-body setting). "
      "Send smaller matrices, or ask the operator to raise the limit.",
      "요청 본문이 이 서버가 받는 크기(--max-body 설정)보다 큽니다. 더 작은 행렬을 보내거나, 운영자에게 한도를 올려 달라고 하세요." },
    { "No acceptable representation",
      "받을 수 있는 표현이 없습니다" },
    { "The Accept header (or ?format) asks for a media type this endpoint cannot "
      "produce. Leave Accept out, or send */*, to get JSON.",
      "Accept 헤더 (또는 ?format) 가 이 엔드포인트가 만들 수 없는 미디어 유형을 요청합니다. JSON 을 받으려면 Accept 를 "
      "빼거나 */* 를 보내세요." },
    { "Unsupported Content-Type",
      "지원하지 않는 Content-Type 입니다" },
    { "attnd reads request bodies as JSON when the Content-Type is application/json, "
      "text/plain, application/x-www-form-urlencoded (what curl -d sends) or absent. "
      "Any other type is refused rather than guessed at.",
      "attnd 는 Content-Type 이 application/json, text/plain, "
      "application/x-www-form-urlencoded (curl -d 가 보내는 것) 이거나 없을 때 요청 본문을 JSON 으로 "
      "읽습니다. 다른 유형은 짐작하지 않고 거절합니다." },
    { "A required field is missing",
      "필수 필드가 없습니다" },
    { "A field the computation needs is absent (or null). Attention needs q (the "
      "queries), k (the keys) and v (the values): errors[].pointer names the one "
      "missing.",
      "계산에 필요한 필드가 없습니다 (또는 null 입니다). attention 에는 q (쿼리), k (키), v (값) 가 필요합니다: "
      "errors[].pointer 가 빠진 필드를 가리킵니다." },
    { "Not a matrix",
      "행렬이 아닙니다" },
    { "A field that holds a matrix is not a non-empty array of equal-length, non-empty "
      "arrays of numbers. A ragged row (one row shorter than the others) is the usual "
      "cause; errors[].pointer names the first row that does not fit.",
      "행렬을 담는 필드가, 길이가 같고 비어 있지 않은 숫자 배열들의 비어 있지 않은 배열이 아닙니다. 흔한 원인은 들쭉날쭉한 행 (다른 행보다 짧은 "
      "행) 입니다: errors[].pointer 가 맞지 않는 첫 행을 가리킵니다." },
    { "Not a number",
      "숫자가 아닙니다" },
    { "A matrix cell is not a JSON number: a string such as \"1.5\", a boolean or null. "
      "Q, K and V are vectors of numbers, not words; write numbers without quotes.",
      "행렬의 칸이 JSON 숫자가 아닙니다: \"1.5\" 같은 문자열, 불리언, null. Q, K, V 는 낱말이 아니라 숫자로 된 벡터입니다: "
      "숫자는 따옴표 없이 쓰세요." },
    { "Shapes do not fit",
      "shape 가 맞지 않습니다" },
    { "The matrices do not fit together. Q is (n_q, d_k), K is (n_k, d_k) and V is "
      "(n_k, d_v): Q @ K^T needs q and k to have the same number of columns, and "
      "weights @ V needs one row of v per key. A mask or bias is (n_q, n_k): one row "
      "per query, one column per key. The hint says when a matrix looks transposed.",
      "행렬들이 서로 맞지 않습니다. Q 는 (n_q, d_k), K 는 (n_k, d_k), V 는 (n_k, d_v) 입니다: Q @ K^T 를 "
      "하려면 q 와 k 의 열 개수가 같아야 하고, 가중치 @ V 를 하려면 키마다 v 의 행이 하나 있어야 합니다. 마스크나 bias 는 (n_q, "
      "n_k) 입니다: 쿼리마다 행 하나, 키마다 열 하나. 행렬이 전치된 것 같으면 hint 가 알려 줍니다." },
    { "Unknown field",
      "모르는 필드입니다" },
    { "The request has a field attnd does not know. Rather than ignore it (and compute "
      "something you did not ask for), attnd refuses it and names the nearest known "
      "field.",
      "요청에 attnd 가 모르는 필드가 있습니다. 무시하고 (요청하지 않은 것을 계산하는) 대신, attnd 는 그 필드를 거절하고 가까운 필드 "
      "이름을 알려 줍니다." },
    { "Invalid value",
      "잘못된 값입니다" },
    { "A field has the wrong JSON type or a value outside its range: scale must be a "
      "number above 0, round an integer from 0 to 15, mask cells 0/1 or true/false, "
      "include a list of step names. The detail says what is allowed.",
      "필드의 JSON 유형이 틀렸거나 값이 범위를 벗어났습니다: scale 은 0 보다 큰 수, round 는 0 부터 15 까지의 정수, 마스크 "
      "칸은 0/1 또는 true/false, include 는 단계 이름의 목록입니다. detail 이 무엇이 허용되는지 알려 줍니다." },
    { "A step overflowed",
      "단계가 계산 범위를 넘었습니다" },
    { "Every input was a finite number, but a step produced infinity or NaN: products "
      "of very large numbers do not fit in a double. errors[] names the step and the "
      "cell [row, column]. Scale the inputs down; softmax itself never overflows, "
      "because attnd subtracts each row's maximum first.",
      "입력은 모두 유한한 수였지만, 어떤 단계에서 무한대나 NaN 이 나왔습니다: 아주 큰 수들의 곱은 double 에 들어가지 않습니다. "
      "errors[] 가 단계와 칸 [행, 열] 을 알려 줍니다. 입력을 작게 줄이세요. softmax 자체는 넘치지 않습니다. attnd 가 각 "
      "행의 최댓값을 먼저 빼기 때문입니다." },
    { "Too much work for one request",
      "요청 하나로는 너무 많은 계산입니다" },
    { "The request asks for a matrix with more cells than this server computes at once "
      "(its --max-cells setting; intermediates such as the n_q x n_k scores count), or "
      "would hold more memory at once than one request may (its --max-request-bytes "
      "setting: the body, every matrix computed and the answer, summed; a batch's items "
      "together). errors[].pointer names the field whose size drives the limit.",
      "요청이 이 서버가 한 번에 계산하는 것보다 칸이 많은 행렬을 요구하거나 (--max-cells 설정. n_q x n_k 점수 같은 중간 결과도 "
      "셉니다), 요청 하나가 한 번에 쓸 수 있는 것보다 많은 메모리를 차지합니다 (--max-request-bytes 설정: 본문, 계산한 모든 "
      "행렬, 응답을 더한 것. batch 는 항목을 모두 합칩니다). errors[].pointer 가 한도를 정하는 크기의 필드를 가리킵니다." },
    { "Service unavailable",
      "서비스를 쓸 수 없습니다" },
    { "The server is shutting down, could not get the memory this request needs, or "
      "holds as much as its memory budget allows (--max-memory: bodies being read, "
      "requests being computed and answers their clients have not read yet). Nothing is "
      "wrong with the request: retry it after the Retry-After seconds, on another "
      "replica if there is one.",
      "서버가 종료하는 중이거나, 이 요청에 필요한 메모리를 얻지 못했거나, 메모리 예산 (--max-memory: 읽는 중인 본문, 계산 중인 요청, "
      "클라이언트가 아직 읽지 않은 응답) 만큼 차 있습니다. 요청에는 잘못이 없습니다: Retry-After 초 뒤에, 복제본이 있다면 다른 "
      "복제본에서 다시 시도하세요." },
    { "Internal error",
      "내부 오류입니다" },
    { "attnd failed in a way that is its own fault, not the request's. Please report it "
      "with the X-Request-Id of the response.",
      "attnd 가 요청이 아닌 자기 잘못으로 실패했습니다. 응답의 X-Request-Id 와 함께 알려 주세요." },
    { "The request is malformed HTTP",
      "요청이 잘못된 HTTP 입니다" },
    { "The request's head breaks a rule of HTTP/1.1 (RFC 9112) that keeps every server "
      "and proxy on the way reading it the same: two Content-Length headers, or one "
      "with Transfer-Encoding; a header line that starts with a space (obs-fold); no "
      "Host, or two; a NUL (%00) in the target. A proxy could read such a request "
      "differently from attnd, so attnd answers this and closes the connection: send "
      "the request again, written plainly, on a new connection.",
      "요청의 머리 부분이, 경로 위의 모든 서버와 프록시가 같은 요청으로 읽도록 하는 HTTP/1.1 (RFC 9112) 규칙을 어깁니다: "
      "Content-Length 헤더가 둘이거나, Transfer-Encoding 과 함께 있거나, 헤더 줄이 공백으로 시작하거나 "
      "(obs-fold), Host 가 없거나 둘이거나, 대상에 NUL (%00) 이 있습니다. 프록시가 이런 요청을 attnd 와 다르게 읽을 수 "
      "있으므로, attnd 는 이렇게 답하고 연결을 닫습니다: 요청을 평범하게 써서 새 연결로 다시 보내세요." },
    { "The query is too long",
      "쿼리가 너무 깁니다" },
    { "The request's query string has more parameters or bytes than attnd parses (256 "
      "parameters, 16 KiB). No endpoint takes more than a handful: send the matrices in "
      "a POST body instead. The connection is closed after this answer.",
      "요청의 쿼리 문자열에 attnd 가 읽는 것보다 많은 매개변수나 바이트가 있습니다 (매개변수 256 개, 16 KiB). 어떤 엔드포인트도 몇 "
      "개보다 많이 받지 않습니다: 행렬은 POST 본문으로 보내세요. 이 응답 뒤에 연결을 닫습니다." },
    { "Transfer coding not implemented",
      "구현하지 않은 전송 코딩입니다" },
    { "The request's Transfer-Encoding names a coding attnd does not read (identity, "
      "gzip, ...). Send the body with a Content-Length, or with Transfer-Encoding: "
      "chunked alone. The connection is closed after this answer.",
      "요청의 Transfer-Encoding 이 attnd 가 읽지 않는 코딩 (identity, gzip, ...) 을 지정합니다. 본문을 "
      "Content-Length 와 함께, 또는 Transfer-Encoding: chunked 만으로 보내세요. 이 응답 뒤에 연결을 닫습니다." },
    { "the body is empty: send a JSON object such as {\"q\": [[1, 0]], \"k\": [[1, 0]], "
      "\"v\": [[1]]}",
      "본문이 비어 있습니다: {\"q\": [[1, 0]], \"k\": [[1, 0]], \"v\": [[1]]} 같은 JSON 객체를 보내세요" },
    { "the body starts with a UTF-8 byte-order mark (line 1, column 1, position 0): "
      "JSON must not have one",
      "본문이 UTF-8 바이트 순서 표시(BOM)로 시작합니다 (줄 1, 열 1, 위치 0): JSON 에는 BOM 이 있으면 안 됩니다" },
    { "save the file as UTF-8 without BOM",
      "파일을 BOM 없는 UTF-8 로 저장하세요" },
    { "no memory to read the body",
      "본문을 읽을 메모리가 없습니다" },
    { "the body is not valid JSON: %s at line %zu, column %zu (byte %zu)",
      "본문이 올바른 JSON 이 아닙니다: %s (줄 %zu, 열 %zu, 바이트 %zu)" },
    { "a double holds magnitudes up to about 1.8e308: write that number smaller (scale "
      "the inputs down), or leave it out",
      "double 은 크기가 약 1.8e308 까지인 수만 담습니다 (그보다 크면 계산 범위를 넘습니다): 그 숫자를 작게 쓰거나 (입력을 "
      "줄이거나), 빼세요" },
    { "check the brackets and commas near that position; keys and strings need double "
      "quotes",
      "그 위치 근처의 괄호와 쉼표를 확인하세요. 키와 문자열에는 큰따옴표가 필요합니다" },
    { "an object",
      "객체" },
    { "an array",
      "배열" },
    { "a string",
      "문자열" },
    { "a number",
      "숫자" },
    { "a value",
      "값" },
    { "no known field is close; the fields are %s",
      "가까운 필드 이름이 없습니다. 필드는 %s 입니다" },
    { "did you mean \"%s\" (%s)?",
      "\"%s\" (%s) 를 뜻했나요?" },
    { "unknown field \"%.64s\"",
      "모르는 필드 \"%.64s\"" },
    { "unknown fields %s; known fields: %s",
      "모르는 필드 %s. 아는 필드: %s" },
    { "unknown field %s; known fields: %s",
      "모르는 필드 %s. 아는 필드: %s" },
    { "%s must be a number above 0, not %s%s%s",
      "%s 는 0 보다 큰 수여야 합니다. 지금은 %s%s%s 입니다" },
    { "leave %s out for 1/sqrt(d_k); 1 reproduces unscaled dot products",
      "%s 를 빼면 1/sqrt(d_k) 로 눈금을 줄입니다. 1 은 조정하지 않은 내적을 그대로 씁니다" },
    { "%s must be an integer from %lld to %lld, not %s%s%s",
      "%s 는 %lld 부터 %lld 까지의 정수여야 합니다. 지금은 %s%s%s 입니다" },
    { "%s is \"%.64s\"; it must be %s",
      "%s 가 \"%.64s\" 입니다. %s 중 하나여야 합니다" },
    { "did you mean \"%s\"?",
      "\"%s\" 를 뜻했나요?" },
    { "%s is %s; it must be %s",
      "%s 가 %s 입니다. %s 중 하나여야 합니다" },
    { "%s is %s; it must be a list of names: %s",
      "%s 가 %s 입니다. 이름의 목록이어야 합니다: %s" },
    { "%s lists \"%.64s\", which is not one of %s",
      "%s 에 있는 \"%.64s\" 는 %s 중 하나가 아닙니다" },
    { "%s item %zu is %s, not a name; names are %s",
      "%s 의 %zu 번째 항목이 %s 이고, 이름이 아닙니다. 이름은 %s 입니다" },
    { "%s is %s; it must be a list of strings",
      "%s 가 %s 입니다. 문자열의 목록이어야 합니다" },
    { "%s item %zu is %s, not a string",
      "%s 의 %zu 번째 항목이 %s 이고, 문자열이 아닙니다" },
    { "labels are names shown next to the rows: write them in quotes",
      "labels 는 행 옆에 보이는 이름입니다: 따옴표 안에 쓰세요" },
    { "%s has %zu entries but there are %zu keys: a %s vector has one entry per key",
      "%s 는 항목이 %zu 개인데 키는 %zu 개입니다: %s 벡터는 키마다 항목이 하나입니다" },
    { "%s is (%zu, %zu) but must be (n_q, n_k) = (%zu, %zu): one row per query, one "
      "column per key",
      "%s 는 (%zu, %zu) 인데 (n_q, n_k) = (%zu, %zu) 여야 합니다: 쿼리마다 행 하나, 키마다 열 하나" },
    { "%s looks transposed: it is (n_k, n_q); send it as (n_q, n_k), one row per query",
      "%s 가 전치된 것 같습니다: (n_k, n_q) 입니다. (n_q, n_k), 쿼리마다 행 하나로 보내세요" },
    { "n_q = %zu queries (rows of q) and n_k = %zu keys (rows of k)",
      "쿼리 n_q = %zu 개 (q 의 행) 와 키 n_k = %zu 개 (k 의 행)" },
    { "no memory for the mask (%zu cells)",
      "마스크 (%zu 칸) 를 위한 메모리가 없습니다" },
    { "mask is \"%.64s\"; the only mask string is \"causal\"",
      "mask 가 \"%.64s\" 입니다. 마스크로 쓸 수 있는 문자열은 \"causal\" 뿐입니다" },
    { "for a decoder mask write \"causal\"; otherwise send a matrix (n_q, n_k) of 0/1 "
      "or true/false, or a vector (n_k) applied to every query",
      "디코더 마스크는 \"causal\" 이라고 쓰세요. 아니면 0/1 또는 true/false 로 된 (n_q, n_k) 행렬이나, 모든 쿼리에 "
      "적용하는 (n_k) 벡터를 보내세요" },
    { "labels.%s has %zu names but there are %zu %s",
      "labels.%s 에 이름이 %zu 개 있는데 %zu 개의 %s 가 있습니다" },
    { "labels is %s; it must be an object such as {\"queries\": [\"Q1\"], \"keys\": "
      "[\"K1\", \"K2\"]}",
      "labels 가 %s 입니다. {\"queries\": [\"Q1\"], \"keys\": [\"K1\", \"K2\"]} 같은 객체여야 합니다" },
    { "%s must hold numbers: Q, K and V are vectors of numbers, not words; turn each "
      "token into a vector first",
      "%s 에는 숫자가 있어야 합니다: Q, K, V 는 낱말이 아니라 숫자로 된 벡터입니다. 토큰마다 먼저 벡터로 바꾸세요" },
    { "a single number is not a matrix: write [[%g]] for a 1x1 %s",
      "숫자 하나는 행렬이 아닙니다: [[%g]] 로 쓰면 1x1 %s 가 됩니다" },
    { "write %s as rows of numbers, e.g. [[1, 0], [0, 1]]",
      "%s 는 숫자로 된 행들로 쓰세요. 예: [[1, 0], [0, 1]]" },
    { "the %s cell at %s is %s%s%s: %s cells are 0/1 or true/false",
      "%s 의 칸 %s 가 %s%s%s 입니다: %s 의 칸은 0/1 또는 true/false 입니다" },
    { "0 and a large negative number (such as -1e9) is an additive mask, added to the "
      "scores: send it as bias instead (same shape), or send mask as 0/1",
      "0 과 큰 음수 (-1e9 같은) 는 점수에 더하는 덧셈 마스크입니다: 같은 shape 의 bias 로 보내거나, mask 를 0/1 로 "
      "보내세요" },
    { "1 (or true) means the query may attend to the key; 0 (or false) blocks it "
      "(mask_semantics \"block\" flips this)",
      "1 (또는 true) 은 쿼리가 그 키를 볼 수 있다는 뜻이고, 0 (또는 false) 은 가린다는 뜻입니다 (mask_semantics "
      "\"block\" 이면 반대입니다)" },
    { "the cell at %s is %s, not a number: %s holds numbers",
      "%s 의 칸이 %s 이고, 숫자가 아닙니다: %s 에는 숫자가 들어갑니다" },
    { "\"%.40s\" is a string: write the number without quotes",
      "\"%.40s\" 는 문자열입니다: 숫자는 따옴표 없이 쓰세요" },
    { "Q, K and V hold numbers, not words: \"%.40s\" must first be turned into a vector",
      "Q, K, V 에는 낱말이 아니라 숫자가 들어갑니다: \"%.40s\" 는 먼저 벡터로 바꿔야 합니다" },
    { "JSON has no NaN or infinity: every cell needs a finite number",
      "JSON 에는 NaN 이나 무한대가 없습니다: 칸마다 유한한 수가 필요합니다" },
    { "booleans belong in a mask; here write 1 or 0",
      "불리언은 마스크에 씁니다. 여기에는 1 이나 0 을 쓰세요" },
    { "each cell of %s is one number",
      "%s 의 칸 하나에는 숫자 하나가 들어갑니다" },
    { "%s has %zu x %zu = %zu cells; this server computes at most %zu cells in one "
      "matrix",
      "%s 는 %zu x %zu = %zu 칸입니다. 이 서버는 행렬 하나에 최대 %zu 칸까지 계산합니다" },
    { "no memory for %s (%zu cells)",
      "%s (%zu 칸) 를 위한 메모리가 없습니다" },
    { "%s mixes numbers and rows: %s is an array but %s/0 is not",
      "%s 에 숫자와 행이 섞여 있습니다: %s 는 배열인데 %s/0 은 아닙니다" },
    { "a vector holds numbers, a matrix holds rows: write every element of %s as a row "
      "[...]",
      "벡터에는 숫자가, 행렬에는 행이 들어갑니다: %s 의 모든 원소를 행 [...] 으로 쓰세요" },
    { "row %zu of %s is %s, not an array of numbers",
      "%zu 행 (%s) 이 %s 이고, 숫자의 배열이 아닙니다" },
    { "every row of %s %s is an array: write [[...], [...]]",
      "%s %s 의 모든 행은 배열입니다: [[...], [...]] 로 쓰세요" },
    { "row %zu of %s is empty",
      "%zu 행 (%s) 이 비어 있습니다" },
    { "every row of %s needs at least one number",
      "%s 의 모든 행에는 숫자가 하나 이상 있어야 합니다" },
    { "%s is ragged: row %zu has %zu numbers but row 0 has %zu",
      "%s 의 행 길이가 들쭉날쭉합니다: %zu 행에는 숫자가 %zu 개, 0 행에는 %zu 개 있습니다" },
    { "every row of %s %s needs the same length (%zu): check row %zu for a missing or "
      "extra number",
      "%s %s 의 모든 행은 길이가 같아야 합니다 (%zu): %zu 행에 빠지거나 남는 숫자가 있는지 확인하세요" },
    { "no memory to read %s",
      "%s 를 읽을 메모리가 없습니다" },
    { "%s is empty: it must be a matrix %s",
      "%s 가 비어 있습니다: 행렬 %s 여야 합니다" },
    { "%s is %s, not a matrix %s",
      "%s 가 %s 이고, 행렬 %s 가 아닙니다" },
    { "%s is a flat list, not a matrix %s",
      "%s 가 평평한 목록이고, 행렬 %s 가 아닙니다" },
    { "%s needs rows: for a single row write [[...]] (with the extra brackets)",
      "%s 에는 행이 필요합니다: 행이 하나라면 [[...]] (괄호를 한 겹 더) 로 쓰세요" },
    { "unknown query parameter \"%.40s\"; this endpoint takes %s",
      "모르는 쿼리 매개변수 \"%.40s\". 이 엔드포인트가 받는 것: %s" },
    { "no known parameter is close; the parameters are %s",
      "가까운 매개변수 이름이 없습니다. 매개변수는 %s 입니다" },
    { "Inference-Header-Content-Length \"%.40s\" is not the length of a JSON header "
      "within the body's %zu bytes",
      "Inference-Header-Content-Length \"%.40s\" 는 본문 %zu 바이트 안의 JSON 헤더 길이가 아닙니다" },
    { "send the byte length of the JSON header that starts the body; the binary tensors "
      "follow it",
      "본문을 시작하는 JSON 헤더의 바이트 길이를 보내세요. 바이너리 텐서는 그 뒤에 옵니다" },
    { "use FP32 or FP64 (INT32 and INT64 are read too; BOOL, UINT8 or INT8 for a MASK)",
      "FP32 나 FP64 를 쓰세요 (INT32, INT64 도 읽습니다. MASK 에는 BOOL, UINT8, INT8)" },
    { "inputs[%zu].shape must be a list of 1 to %d sizes",
      "inputs[%zu].shape 는 크기 1 개부터 %d 개까지의 목록이어야 합니다" },
    { "e.g. [2, 4] for two rows of four; a leading size is a batch",
      "예: 네 개씩 두 행이면 [2, 4]. 맨 앞의 크기는 batch 입니다" },
    { "inputs[%zu] has more elements than this machine can count the bytes of",
      "inputs[%zu] 는 이 기계가 바이트 수를 셀 수 없을 만큼 원소가 많습니다" },
    { "inputs[%zu].parameters.binary_data_size is not a byte count within the %zu "
      "binary bytes left after the header",
      "inputs[%zu].parameters.binary_data_size 가 헤더 뒤에 남은 바이너리 %zu 바이트 안의 바이트 수가 아닙니다" },
    { "Inference-Header-Content-Length must count the JSON header only; the binary "
      "pieces follow it in input order",
      "Inference-Header-Content-Length 는 JSON 헤더만 세야 합니다. 바이너리 조각은 입력 순서대로 그 뒤에 옵니다" },
    { "inputs[%zu] is %zu %s elements (%zu bytes) but binary_data_size says %lld bytes",
      "inputs[%zu] 는 %zu 개의 %s 원소 (%zu 바이트) 인데 binary_data_size 는 %lld 바이트라고 합니다" },
    { "inputs[%zu] (%.64s) has shape of %zu elements but its data %s",
      "inputs[%zu] (%.64s) 의 shape 는 원소 %zu 개인데 data 는 %s" },
    { "data lists the elements row-major, flat or nested; its count must be the product "
      "of shape",
      "data 는 원소를 행 우선으로, 평평하게 또는 중첩해서 나열합니다. 개수는 shape 의 곱이어야 합니다" },
    { "inputs[%zu] is not an object",
      "inputs[%zu] 가 객체가 아닙니다" },
    { "inputs[%zu] has no name",
      "inputs[%zu] 에 이름이 없습니다" },
    { "inputs[%zu].parameters is not an object",
      "inputs[%zu].parameters 가 객체가 아닙니다" },
    { "inputs[%zu] has both data and binary_data_size",
      "inputs[%zu] 에 data 와 binary_data_size 가 모두 있습니다" },
    { "inputs[%zu] has neither a data list nor binary_data_size",
      "inputs[%zu] 에 data 목록도 binary_data_size 도 없습니다" },
    { "outputs must be a list of at most %d outputs",
      "outputs 는 출력 %d 개 이하의 목록이어야 합니다" },
    { "outputs[%zu] needs a name (and parameters, if any, as an object)",
      "outputs[%zu] 에는 name 이 필요합니다 (parameters 가 있다면 객체로)" },
    { "outputs[%zu].parameters.binary_data is not true or false",
      "outputs[%zu].parameters.binary_data 가 true 나 false 가 아닙니다" },
    { "the inference request is not a JSON object",
      "추론 요청이 JSON 객체가 아닙니다" },
    { "id is not a string",
      "id 가 문자열이 아닙니다" },
    { "parameters is not an object",
      "parameters 가 객체가 아닙니다" },
    { "inputs must be a list of 1 to %d tensors",
      "inputs 는 텐서 1 개부터 %d 개까지의 목록이어야 합니다" },
    { "inputs[%zu] repeats the name %.64s",
      "inputs[%zu] 가 이름 %.64s 를 반복합니다" },
    { "%zu bytes follow the binary inputs that no input's binary_data_size accounts for",
      "바이너리 입력 뒤에 어떤 입력의 binary_data_size 에도 들지 않는 %zu 바이트가 있습니다" },
    { "each binary input needs parameters.binary_data_size, and "
      "Inference-Header-Content-Length the JSON header's length",
      "바이너리 입력마다 parameters.binary_data_size 가, Inference-Header-Content-Length 에는 JSON "
      "헤더의 길이가 필요합니다" },
    { "inputs[%zu] (%.64s, %s) has %s at %s",
      "inputs[%zu] (%.64s, %s) 의 %s 가 %s 에 있습니다" },
    { "BOOL data is true or false",
      "BOOL data 는 true 나 false 입니다" },
    { "%s data is integers; send FP32 or FP64 for fractions",
      "%s data 는 정수입니다. 소수는 FP32 나 FP64 로 보내세요" },
    { "inputs[%zu] (%.64s) element %zu is not a finite number",
      "inputs[%zu] (%.64s) 의 원소 %zu 가 유한한 수가 아닙니다" },
    { "NaN and infinity cannot be computed with",
      "NaN 과 무한대로는 계산할 수 없습니다" },
    { "inputs[%zu] (%.64s) element %zu is the byte %g: BOOL is one byte of 0 or 1",
      "inputs[%zu] (%.64s) 의 원소 %zu 가 바이트 %g 입니다: BOOL 은 0 이나 1 인 한 바이트입니다" },
    { "inputs[%zu] (%.64s) element %zu is %g: a mask is 0 or 1 (false or true)",
      "inputs[%zu] (%.64s) 의 원소 %zu 가 %g 입니다: 마스크는 0 이나 1 (false 나 true) 입니다" },
    { "for an additive mask (0 / -1e9) send it as BIAS",
      "덧셈 마스크 (0 / -1e9) 는 BIAS 로 보내세요" },
    { "parameters.%.48s must be %s",
      "parameters.%.48s 는 %s 여야 합니다" },
    { "parameters.%.48s is not a parameter of this model",
      "parameters.%.48s 는 이 모델의 매개변수가 아닙니다" },
    { "did you mean %s?",
      "%s 를 뜻했나요?" },
};

const size_t api_messages_ko_count = sizeof api_messages_ko / sizeof api_messages_ko[0];
