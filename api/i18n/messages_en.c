/*
 * api/i18n/messages_en.c — every message attnd says, in English as the code writes it:
 * the keys of the other languages' tables (see messages.h). tools/lint_messages.py
 * keeps it in step with the code (make lint); tests/unit/check_lang.c checks that
 * every other table has each row.
 */
#include "api/i18n/messages.h"

const char *const api_messages_en[] = {
    /* api/api.c */
    "the V2 inference protocol, with the paths under it",
    /* api/api.c */
    "nothing is served at %.100s; attnd serves %s",
    /* api/api.c */
    "%.16s is not allowed on %.100s; allowed: %s",
    /* api/api.c */
    "Content-Type %.100s is not read; send application/json%s (text/plain, application/x-www-form-urlencoded or no Content-Type are read as JSON too)",
    /* api/api.c */
    "the body is larger than this server accepts (%zu bytes)",
    /* api/endpoints/answer.c */
    "query %s may attend to no key (its mask row blocks every key): its weights and %s",
    /* api/endpoints/answer.c */
    "query %s may attend to no key (its window and sink tokens show none of the keys its mask allows): its weights and %s",
    /* api/endpoints/answer.c */
    "query {1} gives its whole weight to the sink: sink_logit is so far above its scores that every key's weight is 0, and no key wins (argmax null)",
    /* api/endpoints/answer.c */
    "head {2}: query {1} gives its whole weight to the sink: sink_logit is so far above its scores that every key's weight is 0, and no key wins (argmax null)",
    /* api/endpoints/answer.c */
    "\nwarning: %s\n",
    /* api/endpoints/answer.c */
    "keys",
    /* api/endpoints/answer.c */
    "queries",
    /* api/endpoints/answer.c */
    "hatched: masked cells; a hatched row attends to no key (its weights are 0)",
    /* api/endpoints/block_map.c */
    "  block [%zu, %zu]  tiles (%zu, %zu)  sparsity %s (%zu of %zu tiles empty)\n",
    /* api/endpoints/block_map.c */
    "  %s full  %s partial  %s empty; a line is %zu queries, a character %zu keys\n",
    /* api/endpoints/block_map.c */
    "tiles of %zu x %zu (block_map); sparsity %s",
    /* api/endpoints/block_map.c */
    "empty",
    /* api/endpoints/block_map.c */
    "partial",
    /* api/endpoints/block_map.c */
    "full",
    /* api/endpoints/block_map.c */
    "tile",
    /* api/endpoints/attention/variants.c */
    " %zu documents,",
    /* api/endpoints/attention/variants.c */
    " prefix %zu,",
    /* api/endpoints/attention/variants.c */
    " chunk %zu,",
    /* api/endpoints/answer.h */
    "output are 0",
    /* api/endpoints/answer.h */
    "head outputs are 0 in every head",
    /* api/endpoints/attention/endpoint.c */
    "rows cannot be combined with %s",
    /* api/request/rows.c */
    "explain works on row %zu, which rows does not list",
    /* api/request/rows.c */
    "add %zu to rows, or explain one of the rows listed",
    /* api/endpoints/attention/endpoint.c */
    "bertviz draws every query of a sentence: leave rows out",
    /* api/endpoints/attention/run.c */
    "q row %zu . k row %zu is beyond the largest double (~1.8e308): scale q and k down",
    /* api/endpoints/attention/run.c */
    "scores * scale overflows: use a smaller scale",
    /* api/endpoints/attention/run.c */
    "the score plus bias minus slope x distance overflows: use smaller values or a smaller slope",
    /* api/endpoints/attention/run.c */
    "scaled + bias overflows: use smaller bias values",
    /* api/endpoints/attention/run.c */
    "the weighted sum of v's rows overflows: scale v down",
    /* api/endpoints/attention/page.c */
    " (1 = blocked)",
    /* api/endpoints/attention/page.c */
    "none",
    /* api/endpoints/attention/page.c */
    "\nstep %d  %s = %s  ",
    /* api/endpoints/attention/page.c */
    "query",
    /* api/endpoints/attention/page.c */
    "\nsummary\n",
    /* api/endpoints/attention/page.c */
    "sum",
    /* api/endpoints/attention/page.c */
    "softmax(Q @ K^T * scale) with scale %s; %zu x %zu",
    /* api/endpoints/attention/page.c */
    "Attention weights",
    /* api/endpoints/attention/parse.c */
    "the queries, (n_q, d_k) or one query (d_k)",
    /* api/endpoints/attention/parse.c */
    "the keys, (n_k, d_k)",
    /* api/endpoints/attention/parse.c */
    "the values, (n_k, d_v)",
    /* api/endpoints/attention/parse.c */
    "\"keep\" (1 = may attend) or \"block\" (1 = blocked)",
    /* api/endpoints/attention/parse.c */
    "added to the scaled scores, (n_q, n_k)",
    /* api/endpoints/attention/parse.c */
    "the factor on Q @ K^T, default 1/sqrt(d_k)",
    /* api/endpoints/attention/parse.c */
    "which steps to return",
    /* api/endpoints/attention/parse.c */
    "names for the queries and keys",
    /* api/endpoints/attention/parse.c */
    "decimals to round every number to",
    /* api/endpoints/attention/parse.c */
    "one query row worked out by hand: {\"row\": i}",
    /* api/endpoints/attention/parse.c */
    "a learner's mistake to compute beside the answer",
    /* api/endpoints/attention/parse.c */
    "a name for the problem, e.g. a batch's experiment",
    /* api/endpoints/attention/parse.c */
    "the SVG's {\"vmin\", \"vmax\", \"title\"}",
    /* api/endpoints/attention/parse.c */
    "{\"seed\", \"n_q\", \"n_k\", \"d_k\", \"d_v\"}: makes q, k and v",
    /* api/endpoints/attention/parse.c */
    "%s is required: %s %s",
    /* api/endpoints/attention/parse.c */
    "the queries,",
    /* api/endpoints/attention/parse.c */
    "the keys,",
    /* api/endpoints/attention/parse.c */
    "the values,",
    /* api/endpoints/attention/parse.c */
    "attention needs q, k and v: softmax(q @ k^T * scale) @ v",
    /* api/endpoints/attention/parse.c */
    "q has %zu columns but k has %zu: Q @ K^T needs both to have d_k columns",
    /* api/endpoints/attention/parse.c */
    "k looks transposed: pass k as (n_k, d_k), one row per key; attnd computes the transpose itself",
    /* api/endpoints/attention/parse.c */
    "each key needs as many numbers as each query (d_k = %zu)",
    /* api/endpoints/attention/parse.c */
    "k has %zu rows (keys) but v has %zu: weights @ V needs one row of v per key",
    /* api/endpoints/attention/parse.c */
    "v looks transposed: pass v as (n_k, d_v), one row per key",
    /* api/endpoints/attention/parse.c */
    "v needs one row per key: give it %zu rows, in the order of k's rows",
    /* api/endpoints/attention/parse.c */
    "no memory for the variants' steps",
    /* api/endpoints/attention/parse.c */
    "name is %s; it must be a string",
    /* api/endpoints/attention/parse.c */
    "name the problem, e.g. \"name\": \"Q1 bigger\"",
    /* api/endpoints/attention/parse.c */
    "%s would make a %s of %zu cells (%zu x %zu); this server computes at most %zu cells in one matrix",
    /* api/endpoints/attention/parse.c */
    "score matrix",
    /* api/endpoints/attention/parse.c */
    "output",
    /* api/endpoints/attention/parse.c */
    "send fewer queries or keys, or split the work with a batch",
    /* api/endpoints/attention/parse.c */
    "the body is %s; it must be a JSON object such as {\"q\": [[1, 0]], \"k\": [[1, 0]], \"v\": [[1]]}",
    /* api/endpoints/attention/parse.c */
    "the query rows to answer, [i, ...]: the whole problem's masks, those rows' results",
    /* api/endpoints/attention/parse.c */
    "send fewer queries or keys, or ask as JSON for the output and the row statistics only (output, row_max, row_sum, lse), which need no such matrix",
    /* api/endpoints/attention/parse.c */
    "send fewer queries or keys, or send this problem alone to /v1/attention asking for the output and the row statistics only (output, row_max, row_sum, lse), which need no such matrix",
    /* api/endpoints/attention/random.c */
    "rows of q: the queries",
    /* api/endpoints/attention/random.c */
    "rows of k and v: the keys",
    /* api/endpoints/attention/random.c */
    "columns of q and k",
    /* api/endpoints/attention/random.c */
    "columns of v",
    /* api/endpoints/attention/random.c */
    "%s is given, but random makes q, k and v: send them or random, not both",
    /* api/endpoints/attention/random.c */
    "drop random to send your own q, k and v, or drop q, k and v to have random make them",
    /* api/endpoints/attention/random.c */
    "random makes %s of %zu x %zu cells; this server computes at most %zu cells in one matrix",
    /* api/endpoints/attention/random.c */
    "ask for fewer queries, keys or columns",
    /* api/endpoints/attention/rows.c */
    "%s has %zu %s: each entry of rows is a query index 0 to %zu",
    /* api/endpoints/attention/rows.c */
    "rows is %s; it must be a non-empty list of query indices such as [0, 5]",
    /* api/endpoints/attention/rows.c */
    "an empty list",
    /* api/endpoints/attention/rows.c */
    "rows picks rows of q, but q was sent as a vector: one query",
    /* api/endpoints/attention/rows.c */
    "list the query rows to answer, 0 to %zu; leave rows out for all",
    /* api/endpoints/attention/rows.c */
    "rows picks rows of a matrix q: send q as a list of rows, [[...]], or leave rows out",
    /* api/endpoints/attention/rows.c */
    "%s already works on one row: ask for it without rows",
    /* api/endpoints/attention/rows.c */
    "rows lists %zu rows: their %s would be %zu x %zu cells; this server computes at most %zu cells in one matrix",
    /* api/endpoints/attention/rows.c */
    "list fewer rows, or each row once",
    /* api/endpoints/attention/rows.c */
    "no memory for rows",
    /* api/endpoints/attention/run.c */
    "no memory for a %zu x %zu attention",
    /* api/endpoints/attention/run.c */
    "step %d (%s) produced a non-finite number at cell [%zu, %zu]",
    /* api/endpoints/attention/run.c */
    "the computation failed: %s",
    /* api/endpoints/attention/variants.c */
    "step %s produced a non-finite number at cell [%zu, %zu]",
    /* api/endpoints/attention/variants.c */
    "rotating %s row %zu adds two of its numbers beyond the largest double (~1.8e308): scale %s down",
    /* api/endpoints/attention/variants.c */
    "%s + bias%s, -inf where mask is %s%s%s",
    /* api/endpoints/attention/variants.c */
    " or outside the query's document or chunk",
    /* api/endpoints/attention/variants.c */
    " or the key is outside the window",
    /* api/endpoints/attention/variants.c */
    "softmax([masked, sink_logit], axis=-1) without the sink's column",
    /* api/endpoints/attention/variants.c */
    "half",
    /* api/endpoints/attention/variants.c */
    "interleaved",
    /* api/endpoints/attention/variants.c */
    " ALiBi (auto),",
    /* api/endpoints/attention/variants.c */
    "unbounded",
    /* api/endpoints/attention/variants.c */
    " window %s back, %s ahead,",
    /* api/endpoints/attention/variants.c */
    " %zu sink token,",
    /* api/endpoints/attention/variants.c */
    " %zu sink tokens,",
    /* api/endpoints/attention/variants.c */
    " a sink logit,",
    /* api/endpoints/attention/variants.c */
    " dropout %g (weights before it),",
    /* api/endpoints/attention/variants.c */
    "rotate q's first r columns, c with c + r/2",
    /* api/endpoints/attention/variants.c */
    "rotate q's first r columns, 2c with 2c + 1",
    /* api/endpoints/attention/variants.c */
    "rotate k's first r columns, c with c + r/2",
    /* api/endpoints/attention/variants.c */
    "rotate k's first r columns, 2c with 2c + 1",
    /* api/endpoints/attention/variants.c */
    "1 where u >= p, u from the generator (stream 7)",
    /* api/endpoints/attention/variants.c */
    "  sink_weight (the sink logit's share of each row):",
    /* api/endpoints/attention/variants.c */
    "\nstep %d  %s = %s  -> %s\n",
    /* api/endpoints/batch/batch.c */
    "the requests, each as for /v1/attention",
    /* api/endpoints/batch/batch.c */
    "the body is %s; it must be an object {\"items\": [request, ...]}",
    /* api/endpoints/batch/batch.c */
    "items is required: a list of /v1/attention requests",
    /* api/endpoints/batch/batch.c */
    "items must be a non-empty array of requests, not %s%s",
    /* api/endpoints/batch/batch.c */
    "items has %zu requests; this server takes at most %zu in one batch",
    /* api/endpoints/batch/batch.c */
    "split the items over several batches",
    /* api/endpoints/batch/batch.c */
    "the items up to /items/%zu ask for %zu cells together; this server computes at most %zu cells in one request",
    /* api/endpoints/batch/batch.c */
    "no memory for %zu batch items",
    /* api/endpoints/batch/page.c */
    "experiment",
    /* api/endpoints/batch/page.c */
    "key",
    /* api/endpoints/batch/page.c */
    "weight",
    /* api/endpoints/batch/page.c */
    "change",
    /* api/endpoints/batch/page.c */
    "item {1}",
    /* api/endpoints/batch/page.c */
    "tie",
    /* api/endpoints/batch/page.c */
    "(the base)",
    /* api/endpoints/batch/page.c */
    "no change",
    /* api/endpoints/batch/page.c */
    "same key, weight {1}",
    /* api/endpoints/batch/page.c */
    "winner changed: {1} -> {2}",
    /* api/endpoints/batch/page.c */
    "tie broken: {1} wins",
    /* api/endpoints/batch/page.c */
    "now a tie",
    /* api/endpoints/batch/page.c */
    "still a tie",
    /* api/endpoints/batch/page.c */
    "tied keys changed",
    /* api/endpoints/batch/page.c */
    "failed: {1} {2}",
    /* api/endpoints/teach/explain.c */
    "the query row to work out, from 0",
    /* api/endpoints/teach/explain.c */
    "the head to work out (multi-head), from 0",
    /* api/endpoints/teach/explain.c */
    "explain  query {1} (row {2}), worked by hand as the first note works it",
    /* api/endpoints/teach/explain.c */
    "explain  head {3}, query {1} (row {2}), worked by hand as the first note works it",
    /* api/endpoints/teach/explain.c */
    "1 compare",
    /* api/endpoints/teach/explain.c */
    "2 scale",
    /* api/endpoints/teach/explain.c */
    "3 mask",
    /* api/endpoints/teach/explain.c */
    "4 softmax",
    /* api/endpoints/teach/explain.c */
    "5 mix V",
    /* api/endpoints/teach/explain.c */
    "nothing blocked or biased: masked = scaled",
    /* api/endpoints/teach/explain.c */
    "{1} is blocked: -inf, and e^-inf = 0",
    /* api/endpoints/teach/explain.c */
    "e^{1} overflows to inf, and inf ÷ inf is nan (the notes' pitfall); subtract the row's max first: the ratios do not change",
    /* api/endpoints/teach/explain.c */
    "max {1}; e^(masked − max):",
    /* api/endpoints/teach/explain.c */
    "every key is blocked: the weights and the output are 0",
    /* api/endpoints/teach/explain.c */
    "{1} turned by its position (the first {2} columns)",
    /* api/endpoints/teach/explain.c */
    "the sink takes {1} of the row and carries no value",
    /* api/endpoints/teach/explain.c */
    "{1} dropped: 0",
    /* api/endpoints/teach/explain.c */
    "nothing blocked or biased: masked = softcapped",
    /* api/endpoints/teach/explain.c */
    "explain is %s; it must be an object such as {\"row\": 1}",
    /* api/endpoints/teach/explain.c */
    "explain has no \"head\" here: one attention problem has one head",
    /* api/endpoints/teach/explain.c */
    "name the query row alone, {\"row\": 0}; heads are /v1/multihead's",
    /* api/endpoints/teach/explain.c */
    "explain.%s is required",
    /* api/endpoints/teach/explain.c */
    "%s 0 to %zu",
    /* api/endpoints/teach/explain.c */
    "a query row,",
    /* api/endpoints/teach/explain.c */
    "a head,",
    /* api/endpoints/teach/explain.c */
    "q has %zu %s: explain one of rows 0 to %zu",
    /* api/endpoints/teach/explain.c */
    "row",
    /* api/endpoints/teach/explain.c */
    "rows",
    /* api/endpoints/teach/explain.c */
    "there are %zu heads: explain one of heads 0 to %zu",
    /* api/endpoints/teach/explain.c */
    "explaining one row takes n_k·(d_k + d_v) = %zu·(%zu + %zu) terms, more than the %d this server writes out",
    /* api/endpoints/teach/explain.c */
    "explain a smaller problem: fewer keys or narrower vectors",
    /* api/endpoints/teach/explain.c */
    "name the query row and the head: {\"row\": 0, \"head\": 0}",
    /* api/endpoints/teach/explain.c */
    "name the query row to work out: {\"row\": 0}",
    /* api/endpoints/meta.c */
    "shutting down: finishing the requests in flight",
    /* api/endpoints/meta.c */
    "there is no problem type \"%.64s\"; the types are listed in /openapi.yaml",
    /* api/endpoints/meta.c */
    "See <a href=\"/openapi.yaml\">the API description</a>.",
    /* api/endpoints/meta.c */
    "/metrics is answered by the server, which keeps the counters; api/ alone has none",
    /* api/endpoints/meta.c */
    "the playground page is served by the server, which holds its files; api/ alone has none",
    /* api/endpoints/multihead/json.c */
    "head i takes columns [i*d_k, (i+1)*d_k) of Q; K and V columns of kv head floor(i*kv_heads/heads)",
    /* api/endpoints/multihead/json.c */
    "scaled + bias, -inf where mask is 1",
    /* api/endpoints/multihead/json.c */
    "scaled + bias, -inf where mask is 0",
    /* api/endpoints/multihead/page.c */
    "\nstep %d  %s = %s  %s%s-> %s\n",
    /* api/endpoints/multihead/page.c */
    "  head %zu (kv head %zu)\n",
    /* api/endpoints/multihead/page.c */
    "\nsummary (argmax key, max weight, per head)\n",
    /* api/endpoints/multihead/page.c */
    "head i takes columns [i*d_k, (i+1)*d_k)",
    /* api/endpoints/multihead/page.c */
    "\nweights_mean (the average over heads)\n",
    /* api/endpoints/multihead/page.c */
    "mean of %zu heads",
    /* api/endpoints/multihead/page.c */
    "head %zu",
    /* api/endpoints/multihead/page.c */
    "%s-attention, d_model %zu, %zu heads (%zu kv), %zu x %zu",
    /* api/endpoints/multihead/page.c */
    "Multi-head attention weights",
    /* api/endpoints/multihead/parse.c */
    "the input of self-attention, (n, d_model)",
    /* api/endpoints/multihead/parse.c */
    "the queries' input of cross-attention, (n_q, d_model)",
    /* api/endpoints/multihead/parse.c */
    "the keys' and values' input of cross-attention, (n_k, d_model)",
    /* api/endpoints/multihead/parse.c */
    "the number of heads h, dividing d_model",
    /* api/endpoints/multihead/parse.c */
    "key/value heads, dividing heads (grouped-query attention)",
    /* api/endpoints/multihead/parse.c */
    "the query projection, (d_model, d_model)",
    /* api/endpoints/multihead/parse.c */
    "the key projection, (d_model, kv_heads*d_k)",
    /* api/endpoints/multihead/parse.c */
    "the value projection, (d_model, kv_heads*d_k)",
    /* api/endpoints/multihead/parse.c */
    "the output projection, (d_model, d_model)",
    /* api/endpoints/multihead/parse.c */
    "the query bias, (d_model)",
    /* api/endpoints/multihead/parse.c */
    "the key bias, (kv_heads*d_k)",
    /* api/endpoints/multihead/parse.c */
    "the value bias, (kv_heads*d_k)",
    /* api/endpoints/multihead/parse.c */
    "the output bias, (d_model)",
    /* api/endpoints/multihead/parse.c */
    "\"in_out\" (Q = X W) or \"out_in\" (PyTorch, Q = X W^T)",
    /* api/endpoints/multihead/parse.c */
    "{\"seed\", \"n\", \"d_model\", \"n_kv\"}: fills the inputs not given",
    /* api/endpoints/multihead/parse.c */
    "added to the scaled scores in every head, (n_q, n_k)",
    /* api/endpoints/multihead/parse.c */
    "the factor on Q K^T, default 1/sqrt(d_k)",
    /* api/endpoints/multihead/parse.c */
    "which inputs and steps to return",
    /* api/endpoints/multihead/parse.c */
    "one query row of one head worked out by hand: {\"row\": i, \"head\": h}",
    /* api/endpoints/multihead/parse.c */
    "an integer from 0 to 2^63-1",
    /* api/endpoints/multihead/parse.c */
    "rows of x (or x_q)",
    /* api/endpoints/multihead/parse.c */
    "the model width",
    /* api/endpoints/multihead/parse.c */
    "rows of x_kv: asks for cross-attention",
    /* api/endpoints/multihead/parse.c */
    "random is %s; it must be an object such as %s",
    /* api/endpoints/multihead/parse.c */
    "random.seed is required: the same seed gives the same numbers",
    /* api/endpoints/multihead/parse.c */
    "random.seed must be an integer from 0 to 9223372036854775807, not %s",
    /* api/endpoints/multihead/parse.c */
    " or ",
    /* api/endpoints/multihead/parse.c */
    "no memory for %zu random numbers",
    /* api/endpoints/multihead/parse.c */
    "%s is required: %s",
    /* api/endpoints/multihead/parse.c */
    "or add \"random\": {\"seed\": 0, ...} to fill every input not given",
    /* api/endpoints/multihead/parse.c */
    "x is the input of self-attention; x_q and x_kv are those of cross-attention: send x alone, or x_q with x_kv",
    /* api/endpoints/multihead/parse.c */
    "x_q has %zu columns but x_kv has %zu: both are (rows, d_model)",
    /* api/endpoints/multihead/parse.c */
    "queries and keys come from inputs of the same width d_model",
    /* api/endpoints/multihead/parse.c */
    "random.%s is %lld but the input given has %zu",
    /* api/endpoints/multihead/parse.c */
    "leave random.%s out: it only sizes the inputs random fills",
    /* api/endpoints/multihead/parse.c */
    "random.%s is required to fill the inputs not given",
    /* api/endpoints/multihead/parse.c */
    "random.n_kv asks for cross-attention, but x is the input of self-attention",
    /* api/endpoints/multihead/parse.c */
    "drop n_kv, or send x_q (and x_kv) instead of x",
    /* api/endpoints/multihead/parse.c */
    "heads is required: the number of heads h, dividing d_model",
    /* api/endpoints/multihead/parse.c */
    "heads 1 is single-head attention with projections",
    /* api/endpoints/multihead/parse.c */
    "kv_heads %zu does not divide heads %zu: each kv head serves heads/kv_heads query heads",
    /* api/endpoints/multihead/parse.c */
    "with heads = %zu, kv_heads can be %s (1 is multi-query attention)",
    /* api/endpoints/multihead/parse.c */
    "d_model %zu is not divisible by heads %zu: each head takes d_model/heads columns",
    /* api/endpoints/multihead/parse.c */
    "with d_model = %zu, heads can be %s",
    /* api/endpoints/multihead/parse.c */
    "%s would have %zu x %zu cells; this server computes at most %zu cells in one matrix",
    /* api/endpoints/multihead/parse.c */
    "%s is (%zu, %zu) but must be %s with weight_layout \"%s\"",
    /* api/endpoints/multihead/parse.c */
    "%s is (%zu, %zu): set weight_layout to \"%s\"%s",
    /* api/endpoints/multihead/parse.c */
    "d_model = %zu, heads = %zu, kv_heads = %zu, so d_k = %zu and %s has %zu output columns",
    /* api/endpoints/multihead/parse.c */
    "%s has %zu x %zu numbers but must be a vector of %zu",
    /* api/endpoints/multihead/parse.c */
    "a bias has one number per output column of its projection",
    /* api/endpoints/multihead/parse.c */
    "the body is %s; it must be a JSON object such as {\"heads\": 2, \"random\": {\"seed\": 0, \"n\": 4, \"d_model\": 8}}",
    /* api/endpoints/multihead/parse.c */
    "{\"prefill\": p}: tokens 0 … p−1 in one pass, then each later token alone against a KV cache",
    /* api/endpoints/multihead/decode.c */
    "how many tokens the first pass computes, 0 < prefill < n",
    /* api/endpoints/multihead/decode.c */
    "%s cannot be combined with decode: %s",
    /* api/endpoints/multihead/decode.c */
    "leave %s out with decode",
    /* api/endpoints/multihead/decode.c */
    "decode generates from one sequence: it needs self-attention (x), not x_q and x_kv",
    /* api/endpoints/multihead/decode.c */
    "send x: the cache holds the keys and values of the tokens generated so far",
    /* api/endpoints/multihead/decode.c */
    "decode needs mask \"causal\": a generated token sees only the tokens before it",
    /* api/endpoints/multihead/decode.c */
    "add \"mask\": \"causal\" (for self-attention \"causal_top_left\" is the same mask: send \"causal\")",
    /* api/endpoints/multihead/decode.c */
    "decode.prefill is required: how many tokens the first pass computes",
    /* api/endpoints/multihead/decode.c */
    "{\"prefill\": p} computes tokens 0 … p−1 in one pass, then each later token alone against the KV cache",
    /* api/endpoints/multihead/decode.c */
    "decode needs at least 2 tokens, and x has %zu: the prefill takes p >= 1 of them and at least one comes after it",
    /* api/endpoints/multihead/decode.c */
    "0 < prefill < n = %zu: the prefill computes tokens 0 … p−1, then tokens p … n−1 come one at a time",
    /* api/endpoints/multihead/decode.c */
    "decode is %s; it must be an object such as {\"prefill\": 4}",
    /* api/endpoints/multihead/decode.c */
    "decode runs the causal mask with rope, alibi, softcap, window, sink_tokens and sink_logit",
    /* api/endpoints/multihead/decode.c */
    "decode is answered as JSON or text",
    /* api/endpoints/multihead/decode.c */
    "ask as JSON, or with ?format=text",
    /* api/endpoints/multihead/decode.c */
    "decode answers every token after the prefill",
    /* api/endpoints/multihead/decode.c */
    "leave rows out: decode.tokens are the rows p … n−1 of the full pass",
    /* api/endpoints/multihead/decode.c */
    "generation does not drop weights, and dropout's cells are drawn for the whole pass",
    /* api/endpoints/multihead/decode.c */
    "decode runs in float64",
    /* api/endpoints/multihead/decode.c */
    "\ndecode: the first %zu tokens in one pass (the prefill), then each token alone against the KV cache\n",
    /* api/endpoints/multihead/decode.c */
    "  t %zu  cache k, v (%zu, %zu) x %zu kv heads  weights",
    /* api/endpoints/multihead/decode.c */
    "  matches the full pass: %s (the largest difference over the largest value, of weights and output)\n",
    /* api/endpoints/multihead/run.c */
    "head %zu, step %s, produced a non-finite number at cell [%zu, %zu]",
    /* api/endpoints/multihead/run.c */
    "the numbers are too large for a double (~1.8e308): scale the inputs or weights down",
    /* api/endpoints/multihead/run.c */
    "no memory for %zu heads of %zu x %zu",
    /* api/endpoints/multihead/endpoint.c */
    "no memory for %zu heads",
    /* api/endpoints/multihead/rows.c */
    "no memory for %zu rows of %zu heads",
    /* api/endpoints/multihead/rows.c */
    "send fewer rows or heads, or ask as JSON only for what needs no such matrix (the inputs, q, k, v, head_outputs, concat, output, row_sum, lse), without explain or dropout",
    /* api/endpoints/multihead/rows.c */
    "the listed rows' output",
    /* api/endpoints/multihead/rows.c */
    "the listed rows' per-head scores (heads x len(rows) x n_k)",
    /* api/endpoints/multihead/rows.c */
    "the per-head scores (heads x n_q x n_k)",
    /* api/endpoints/multihead/variants.c */
    "  sink_weight (the sink logit's share of each row, per head):\n",
    /* api/endpoints/multihead/variants.c */
    "    head %zu:",
    /* api/endpoints/multihead/variants.c */
    "\nstep %d  %s = %s  -> (%zu, %zu, %zu)\n",
    /* api/endpoints/teach/pitfall.c */
    "Q @ K instead of Q @ K.T: the product needs K's rows to match Q's columns, so it fails unless n_k = d_k, and then it runs and its numbers are silently wrong",
    /* api/endpoints/teach/pitfall.c */
    "softmax down the columns (axis=0) instead of along each row (axis=-1): each column sums to 1, the rows do not, and a query's weights depend on the other queries",
    /* api/endpoints/teach/pitfall.c */
    "e^score divided by the row's sum without subtracting the row's max first: a large score overflows e^x to inf and inf ÷ inf is nan; subtracting the max gives the same ratios without overflow",
    /* api/endpoints/teach/pitfall.c */
    "pitfall  {1}",
    /* api/endpoints/teach/pitfall.c */
    "numpy raises ValueError: {1}",
    /* api/endpoints/teach/pitfall.c */
    "non-finite cells (inf, nan): {1}",
    /* api/endpoints/teach/pitfall.c */
    "largest |wrong - right| over the {1}: {2}",
    /* api/endpoints/teach/pitfall.c */
    "no finite cell of the {1} to compare",
    /* api/endpoints/teach/pitfall.c */
    "pitfall names one mistake from the notes, as a string: {\"pitfall\": \"no_transpose\"}",
    /* api/endpoints/teach/pitfall.c */
    "  %s (wrong)\n",
    /* api/endpoints/shapes/shapes.c */
    "%s must be an integer from 1 to 2147483648, not \"%.40s\"",
    /* api/endpoints/shapes/shapes.c */
    "the query parameter %s is required: /v1/shapes?n=10&d_model=512&heads=8",
    /* api/endpoints/shapes/shapes.c */
    "heads %zu does not divide d_model %zu: each head takes d_model/heads columns",
    /* api/endpoints/shapes/shapes.c */
    "the original Transformer has d_model 512 and 8 heads (d_k 64)",
    /* api/endpoints/shapes/shapes.c */
    "kv_heads %zu does not divide heads %zu",
    /* api/endpoints/shapes/shapes.c */
    "kv_heads 1 is multi-query attention; kv_heads = heads is ordinary multi-head attention",
    /* api/endpoints/shapes/shapes.c */
    "one head's keys (%zu key/value heads in all, one for each query head)",
    /* api/endpoints/shapes/shapes.c */
    "one head's keys (one key/value head, shared by all %zu query heads)",
    /* api/endpoints/shapes/shapes.c */
    "one head's keys (%zu key/value heads in all, each shared by %zu query heads)",
    /* api/endpoints/shapes/shapes.c */
    "one head's queries: each token's d_model numbers become d_k",
    /* api/endpoints/shapes/shapes.c */
    "one head's values",
    /* api/endpoints/shapes/shapes.c */
    "scores: how well each query matches each key",
    /* api/endpoints/shapes/shapes.c */
    "scale = 1/sqrt(d_k) keeps the scores' spread independent of d_k",
    /* api/endpoints/shapes/shapes.c */
    "weights: each row becomes ratios that sum to 1",
    /* api/endpoints/shapes/shapes.c */
    "lse: the log of each row's softmax denominator, what a fast kernel returns beside its output",
    /* api/endpoints/shapes/shapes.c */
    "one head's output: each query's mix of the values",
    /* api/endpoints/shapes/shapes.c */
    "the heads' outputs side by side",
    /* api/endpoints/shapes/shapes.c */
    "back to d_model: the layer's output, one row per token",
    /* api/endpoints/shapes/shapes.c */
    "scalar",
    /* api/endpoints/shapes/shapes.c */
    "left",
    /* api/endpoints/shapes/shapes.c */
    "right",
    /* api/endpoints/shapes/shapes.c */
    "result",
    /* api/endpoints/shapes/shapes.c */
    "meaning",
    /* api/endpoints/shapes/variants.c */
    "variants names \"%s\", which is not a variant; known: rope, softcap, alibi, window, sink, dropout",
    /* api/endpoints/shapes/variants.c */
    "did you mean \"%s\"? e.g. /v1/shapes?n=10&d_model=512&heads=8&variants=rope,window",
    /* api/endpoints/shapes/variants.c */
    "q_rope: each query's column pairs turned by its position (base^(-2c/r))",
    /* api/endpoints/shapes/variants.c */
    "k_rope: each key turned the same way; then Q_rope @ K_rope^T",
    /* api/endpoints/shapes/variants.c */
    "softcapped: every score kept within +-softcap (Gemma 2)",
    /* api/endpoints/shapes/variants.c */
    "+ bias - slope * |i + n_kv - n - j|, -inf outside the window",
    /* api/endpoints/shapes/variants.c */
    "-inf outside the window",
    /* api/endpoints/shapes/variants.c */
    "masked: ALiBi's distance penalty (a slope a head) and the window's hidden keys",
    /* api/endpoints/shapes/variants.c */
    "its column dropped after: rows sum to 1 - sink_weight",
    /* api/endpoints/shapes/variants.c */
    "dropped: weights where keep is 0 dropped, the rest scaled; then @ V",
    /* api/endpoints/teach/ties.c */
    "query {1} ties keys {2} for the largest weight: no key wins, and argmax names only the lowest index",
    /* api/endpoints/teach/ties.c */
    "head {3}: query {1} ties keys {2} for the largest weight: no key wins, and argmax names only the lowest index",
    /* api/endpoints/teach/ties.c */
    " and ",
    /* api/endpoints/teach/ties.c */
    " and {1} more",
    /* api/endpoints/teach/ties.c */
    "tie in {1}",
    /* api/endpoints/v2/attention.c */
    "%s has no batch size but another input has a batch of %zu: Q, K and V are all (B, rows, cols) or none",
    /* api/endpoints/v2/attention.c */
    "K has %zu columns but Q has %zu: Q @ K^T needs both to have d_k columns",
    /* api/endpoints/v2/attention.c */
    "K looks transposed: pass K as (n_k, d_k), one row per key",
    /* api/endpoints/v2/attention.c */
    "V has %zu rows but K has %zu: weights @ V needs one row of V per key",
    /* api/endpoints/v2/attention.c */
    "%s would make a matrix of more than %zu cells (%zu x %zu scores, %zu x %zu output)",
    /* api/endpoints/v2/attention.c */
    "parameters.scale must be a number > 0",
    /* api/endpoints/v2/attention.c */
    "output %s is a step of a variant this request does not ask for",
    /* api/endpoints/v2/attention.c */
    "Q_ROPE and K_ROPE need a rope_* parameter, SOFTCAPPED softcap, DROPOUT_KEEP and DROPPED dropout_p",
    /* api/endpoints/v2/attention.c */
    "no memory for output %s",
    /* api/endpoints/v2/attention.c */
    "no memory for a trace",
    /* api/endpoints/v2/common.c */
    "no memory to read %.64s",
    /* api/endpoints/v2/common.c */
    "inputs[%zu] (%.64s) has rank %zu; it takes %zu sizes%s, or %zu with a leading batch size",
    /* api/endpoints/v2/common.c */
    "inputs[%zu] (%.64s) has a batch of %zu, another input %zu",
    /* api/endpoints/v2/common.c */
    "outputs[%zu] asks for %.64s, which this model does not make",
    /* api/endpoints/v2/common.c */
    "did you mean %s? (GET the model's metadata for its outputs)",
    /* api/endpoints/v2/common.c */
    "no output is close; GET the model's metadata for its outputs",
    /* api/endpoints/v2/common.c */
    "inputs[%zu] is called %.64s, which the %s model does not take",
    /* api/endpoints/v2/common.c */
    "did you mean %s? (names are upper case, as the model's metadata lists them)",
    /* api/endpoints/v2/common.c */
    "no input is close; GET the model's metadata for its inputs",
    /* api/endpoints/v2/common.c */
    "inputs[%zu] (%.64s) is %s, which %s is not read as",
    /* api/endpoints/v2/common.c */
    "the %s model needs an input called %s",
    /* api/endpoints/v2/common.c */
    "a mask is BOOL, or UINT8, INT8, INT32 or INT64 of 0 and 1",
    /* api/endpoints/v2/common.c */
    "send FP32, FP64, FP16 or BF16 (INT32 and INT64 are read too)",
    /* api/endpoints/v2/grid.c */
    "%s must be (n_q, n_k) = (%zu, %zu)%s",
    /* api/endpoints/v2/grid.c */
    "%s looks transposed: one row per query, one column per key",
    /* api/endpoints/v2/grid.c */
    "parameters.mask_semantics is \"keep\" (1 = may attend) or \"block\" (1 = blocked)",
    /* api/endpoints/v2/grid.c */
    "parameters.causal combines with no MASK: send the causal cells in MASK instead",
    /* api/endpoints/v2/grid.c */
    "no memory for the mask",
    /* api/endpoints/v2/infer.c */
    "output %s cell [%s] is %g, past FP32's range (about 3.4e38): as FP32 it would be infinite",
    /* api/endpoints/v2/infer.c */
    "send %s as FP64: the outputs are then FP64, which hold it (attnd computes in float64 either way)",
    /* api/endpoints/v2/infer.c */
    "output %s cell [%s] is %g, past %s's largest finite value (%g): as %s it would be infinite",
    /* api/endpoints/v2/infer.c */
    "ask for %s as FP64 (\"parameters\": {\"datatype\": \"FP64\"}), which holds it: attnd computes in float64 either way",
    /* api/endpoints/v2/infer.c */
    "no memory for the response",
    /* api/endpoints/v2/multihead.c */
    "the multihead model takes X (self-attention) or X_Q with X_KV (cross-attention)%s",
    /* api/endpoints/v2/multihead.c */
    "parameters.heads must be a whole number of heads dividing d_model = %zu",
    /* api/endpoints/v2/multihead.c */
    "parameters.kv_heads must divide heads = %zu",
    /* api/endpoints/v2/multihead.c */
    "parameters.weight_layout is \"in_out\" (Q = X W) or \"out_in\" (PyTorch's, Q = X W^T)",
    /* api/endpoints/v2/multihead.c */
    "X_Q and X_KV both lead with a batch size, or neither does",
    /* api/endpoints/v2/multihead.c */
    "X_KV has %zu columns but X_Q has %zu: both are d_model wide",
    /* api/endpoints/v2/multihead.c */
    "%zu queries and %zu keys make a score matrix of more than %zu cells",
    /* api/endpoints/v2/multihead.c */
    "send fewer queries or keys, or ask only for outputs that need no such matrix (OUTPUT, Q, K, V, HEAD_OUTPUTS, CONCAT, LSE, ROW_SUM, ROW_MAX), without dropout",
    /* api/endpoints/v2/multihead.c */
    "%s must be (%zu, %zu): d_model = %zu, heads = %zu, kv_heads = %zu, weight_layout %s",
    /* api/endpoints/v2/multihead.c */
    "%s must be a vector of %zu",
    /* api/endpoints/v2/multihead.c */
    "the %zu heads of %zu x %zu need more memory than one request may use",
    /* api/endpoints/v2/variants.c */
    "no memory for the variants' parameters",
    /* api/http/admission.c */
    "the server's memory budget is taken (answers waiting for their clients, requests being computed) and this request needs about %.1f MB more",
    /* api/http/admission.c */
    "nothing is wrong with the request: retry after the Retry-After seconds, or on another replica; the operator sets the budget with --max-memory",
    /* api/http/admission.c */
    "this request would hold about %.1f MB at once (its body, every matrix it computes and its answer); this server takes at most %.1f MB for one request",
    /* api/http/admission.c */
    "send fewer rows here, ask for fewer steps with include, or split the work over several requests; the operator sets the limit with --max-request-bytes",
    /* api/endpoints/v2/attention.c */
    "ask for OUTPUT, LSE, ROW_SUM and ROW_MAX only: they are computed without the score matrix",
    /* api/endpoints/v2/common.c */
    "document lengths are integers: send INT32 or INT64",
    /* api/endpoints/v2/grid.c */
    "parameters.causal is true, false or \"top_left\", not \"%.64s\"",
    /* api/endpoints/v2/grid.c */
    "true aligns bottom-right (FlashAttention: query i sees key j iff j <= i + n_k - n_q), \"top_left\" top-left (SDPA's is_causal: j <= i)",
    /* api/endpoints/v2/grid.c */
    "no memory for the block map",
    /* api/endpoints/v2/variants.c */
    "inputs[%zu] (%.64s) has rank %zu; document lengths are one list (rank 1), shared by every problem of a batch",
    /* api/endpoints/v2/attention.c */
    "GRAD_OUTPUT has shape %s but must be OUTPUT's shape %s",
    /* api/endpoints/v2/attention.c */
    "GRAD_OUTPUT is dL/dOUTPUT: one row per query, one number per column of V, the batch size first when Q has one",
    /* api/endpoints/v2/attention.c */
    "output %s is a step of the backward pass, which runs only with an input GRAD_OUTPUT",
    /* api/endpoints/v2/attention.c */
    "send GRAD_OUTPUT, dL/dOUTPUT of OUTPUT's shape, or leave %s out",
    /* api/endpoints/v2/attention.c */
    "GRAD_Q_ROPE and GRAD_K_ROPE need a rope_* parameter, GRAD_SINK_LOGIT sink_logit, GRAD_BIAS an input BIAS",
    /* api/endpoints/v2/multihead.c */
    "GRAD_OUTPUT must have OUTPUT's shape, which is %s's (the batch, n_q, d_model)",
    /* api/endpoints/v2/multihead.c */
    "GRAD_OUTPUT is dL/dOUTPUT: one row per query, d_model numbers a row, the batch size first when %s has one",
    /* api/endpoints/v2/multihead.c */
    "output %s is the gradient of an input or variant this request does not have",
    /* api/endpoints/v2/multihead.c */
    "GRAD_B_Q ... GRAD_B_O need the inputs B_Q ... B_O, GRAD_X needs X (GRAD_X_Q and GRAD_X_KV need X_Q and X_KV), GRAD_SINK_LOGIT sink_logit, GRAD_BIAS an input BIAS",
    /* api/http/admission.c */
    "this request asks for %.4g multiply-adds (n_q·n_k·(d_k + d_v), summed over heads and items); this server does at most %.4g for one request",
    /* api/http/admission.c */
    "send fewer queries or keys, or split the queries over several requests; the operator sets the limit with --max-work",
    /* api/http/admission.c */
    "the request runs elsewhere",
    /* api/http/language.c */
    "lang \"%.40s\" is not a language attnd speaks; use en or ko",
    /* api/http/language.c */
    "leave lang out for English, or send Accept-Language",
    /* api/http/negotiate.c */
    "%s cannot be served as %s",
    /* api/http/negotiate.c */
    "format \"%.32s\" is not known; use json, text, svg or bertviz",
    /* api/http/negotiate.c */
    "Accept: %.160s cannot be served by %.100s, which produces %s",
    /* api/http/problem.c */
    "The body is not valid JSON",
    /* api/http/problem.c */
    "The request body could not be read as JSON. The detail gives the line, the column and the byte position where reading stopped. Duplicate keys in one object, an empty body and a leading byte-order mark are refused too, because each hides a mistake: send one UTF-8 JSON object with each field once.",
    /* api/http/problem.c */
    "No such endpoint",
    /* api/http/problem.c */
    "Nothing is served at this path. The detail lists the endpoints attnd has; the full description is at /openapi.yaml.",
    /* api/http/problem.c */
    "Method not allowed",
    /* api/http/problem.c */
    "The path exists but not for this method. The Allow header lists the methods it takes: computations are POST with a JSON body, everything else is GET.",
    /* api/http/problem.c */
    "The body is too large",
    /* api/http/problem.c */
    "The request body is larger than this server accepts (its --max-body setting). Send smaller matrices, or ask the operator to raise the limit.",
    /* api/http/problem.c */
    "No acceptable representation",
    /* api/http/problem.c */
    "The Accept header (or ?format) asks for a media type this endpoint cannot produce. Leave Accept out, or send */*, to get JSON.",
    /* api/http/problem.c */
    "Unsupported Content-Type",
    /* api/http/problem.c */
    "attnd reads request bodies as JSON when the Content-Type is application/json, text/plain, application/x-www-form-urlencoded (what curl -d sends) or absent. Any other type is refused rather than guessed at.",
    /* api/http/problem.c */
    "A required field is missing",
    /* api/http/problem.c */
    "A field the computation needs is absent (or null). Attention needs q (the queries), k (the keys) and v (the values): errors[].pointer names the one missing.",
    /* api/http/problem.c */
    "Not a matrix",
    /* api/http/problem.c */
    "A field that holds a matrix is not a non-empty array of equal-length, non-empty arrays of numbers. A ragged row (one row shorter than the others) is the usual cause; errors[].pointer names the first row that does not fit.",
    /* api/http/problem.c */
    "Not a number",
    /* api/http/problem.c */
    "A matrix cell is not a JSON number: a string such as \"1.5\", a boolean or null. Q, K and V are vectors of numbers, not words; write numbers without quotes.",
    /* api/http/problem.c */
    "Shapes do not fit",
    /* api/http/problem.c */
    "The matrices do not fit together. Q is (n_q, d_k), K is (n_k, d_k) and V is (n_k, d_v): Q @ K^T needs q and k to have the same number of columns, and weights @ V needs one row of v per key. A mask or bias is (n_q, n_k): one row per query, one column per key. The hint says when a matrix looks transposed.",
    /* api/http/problem.c */
    "Unknown field",
    /* api/http/problem.c */
    "The request has a field attnd does not know. Rather than ignore it (and compute something you did not ask for), attnd refuses it and names the nearest known field.",
    /* api/http/problem.c */
    "Invalid value",
    /* api/http/problem.c */
    "A field has the wrong JSON type or a value outside its range: scale must be a number above 0, round an integer from 0 to 15, mask cells 0/1 or true/false, include a list of step names. The detail says what is allowed.",
    /* api/http/problem.c */
    "A step overflowed",
    /* api/http/problem.c */
    "Every input was a finite number, but a step produced infinity or NaN: products of very large numbers do not fit in a double. errors[] names the step and the cell [row, column]. Scale the inputs down; softmax itself never overflows, because attnd subtracts each row's maximum first.",
    /* api/http/problem.c */
    "Too much work for one request",
    /* api/http/problem.c */
    "The request asks for a matrix with more cells than this server computes at once (its --max-cells setting; intermediates such as the n_q x n_k scores count), or would hold more memory at once than one request may (its --max-request-bytes setting: the body, every matrix computed and the answer, summed; a batch's items together), or more arithmetic than one request may (its --max-work setting: n_q·n_k·(d_k + d_v) multiply-adds, summed over heads and items). errors[].pointer names the field whose size drives the limit.",
    /* api/http/problem.c */
    "Service unavailable",
    /* api/http/problem.c */
    "The server is shutting down, could not get the memory this request needs, or holds as much as its memory budget allows (--max-memory: bodies being read, requests being computed and answers their clients have not read yet). Nothing is wrong with the request: retry it after the Retry-After seconds, on another replica if there is one.",
    /* api/http/problem.c */
    "Internal error",
    /* api/http/problem.c */
    "attnd failed in a way that is its own fault, not the request's. Please report it with the X-Request-Id of the response.",
    /* api/http/problem.c */
    "The request is malformed HTTP",
    /* api/http/problem.c */
    "The request's head breaks a rule of HTTP/1.1 (RFC 9112) that keeps every server and proxy on the way reading it the same: two Content-Length headers, or one with Transfer-Encoding; a header line that starts with a space (obs-fold); no Host, or two; a NUL (%00) in the target. A proxy could read such a request differently from attnd, so attnd answers this and closes the connection: send the request again, written plainly, on a new connection.",
    /* api/http/problem.c */
    "The query is too long",
    /* api/http/problem.c */
    "The request's query string has more parameters or bytes than attnd parses (256 parameters, 16 KiB). No endpoint takes more than a handful: send the matrices in a POST body instead. The connection is closed after this answer.",
    /* api/http/problem.c */
    "Transfer coding not implemented",
    /* api/http/problem.c */
    "The request's Transfer-Encoding names a coding attnd does not read (identity, gzip, ...). Send the body with a Content-Length, or with Transfer-Encoding: chunked alone. The connection is closed after this answer.",
    /* api/json/read.c */
    "out of memory",
    /* api/json/read.c */
    "the end of the body",
    /* api/json/read.c */
    "byte {1}",
    /* api/json/read.c */
    "unterminated string",
    /* api/json/read.c */
    "invalid escape '\\{1}' in string",
    /* api/json/read.c */
    "invalid \\u escape: four hex digits expected",
    /* api/json/read.c */
    "lone low surrogate \\u{1} in string",
    /* api/json/read.c */
    "high surrogate \\u{1} without its low half",
    /* api/json/read.c */
    "\\u0000 is not allowed in strings",
    /* api/json/read.c */
    "control character 0x{1} in string: escape it",
    /* api/json/read.c */
    "invalid UTF-8 in string",
    /* api/json/read.c */
    "invalid number: a digit is expected after '-'",
    /* api/json/read.c */
    "invalid number: no leading zeros",
    /* api/json/read.c */
    "invalid number: a digit is expected after '.'",
    /* api/json/read.c */
    "invalid number: a digit is expected in the exponent",
    /* api/json/read.c */
    "number out of range: it does not fit in a double",
    /* api/json/read.c */
    "nesting deeper than {1} levels",
    /* api/json/read.c */
    "',' or '{1}' expected, not {2}",
    /* api/json/read.c */
    "a string key expected, not {1}",
    /* api/json/read.c */
    "duplicate object key \"{1}\"",
    /* api/json/read.c */
    "':' expected after a key, not {1}",
    /* api/json/read.c */
    "invalid literal: true, false or null expected",
    /* api/json/read.c */
    "a value expected, not {1}",
    /* api/json/read.c */
    "extra data after the JSON value: {1}",
    /* api/request/body.c */
    "the body is empty: send a JSON object such as {\"q\": [[1, 0]], \"k\": [[1, 0]], \"v\": [[1]]}",
    /* api/request/body.c */
    "the body starts with a UTF-8 byte-order mark (line 1, column 1, position 0): JSON must not have one",
    /* api/request/body.c */
    "save the file as UTF-8 without BOM",
    /* api/request/body.c */
    "no memory to read the body",
    /* api/request/body.c */
    "the body is not valid JSON: %s at line %zu, column %zu (byte %zu)",
    /* api/request/body.c */
    "a double holds magnitudes up to about 1.8e308: write that number smaller (scale the inputs down), or leave it out",
    /* api/request/body.c */
    "check the brackets and commas near that position; keys and strings need double quotes",
    /* api/request/fields.c */
    "an object",
    /* api/request/fields.c */
    "an array",
    /* api/request/fields.c */
    "a string",
    /* api/request/fields.c */
    "a number",
    /* api/request/fields.c */
    "a value",
    /* api/request/fields.c */
    "no known field is close; the fields are %s",
    /* api/request/fields.c */
    "did you mean \"%s\" (%s)?",
    /* api/request/fields.c */
    "unknown field \"%.64s\"",
    /* api/request/fields.c */
    "unknown fields %s; known fields: %s",
    /* api/request/fields.c */
    "unknown field %s; known fields: %s",
    /* api/request/fields.c */
    "%s must be a number above 0, not %s%s%s",
    /* api/request/fields.c */
    "leave %s out for 1/sqrt(d_k); 1 reproduces unscaled dot products",
    /* api/request/fields.c */
    "%s must be an integer from %lld to %lld, not %s%s%s",
    /* api/request/fields.c */
    "%s is \"%.64s\"; it must be %s",
    /* api/request/fields.c */
    "did you mean \"%s\"?",
    /* api/request/fields.c */
    "%s is %s; it must be %s",
    /* api/request/fields.c */
    "%s is %s; it must be a list of names: %s",
    /* api/request/fields.c */
    "%s lists \"%.64s\", which is not one of %s",
    /* api/request/fields.c */
    "%s item %zu is %s, not a name; names are %s",
    /* api/request/fields.c */
    "%s is %s; it must be a list of strings",
    /* api/request/fields.c */
    "%s item %zu is %s, not a string",
    /* api/request/fields.c */
    "labels are names shown next to the rows: write them in quotes",
    /* api/request/grid.c */
    "one name per query (row of q)",
    /* api/request/grid.c */
    "one name per key (row of k)",
    /* api/request/grid.c */
    "%s has %zu entries but there are %zu keys: a %s vector has one entry per key",
    /* api/request/grid.c */
    "%s is (%zu, %zu) but must be (n_q, n_k) = (%zu, %zu): one row per query, one column per key",
    /* api/request/grid.c */
    "%s looks transposed: it is (n_k, n_q); send it as (n_q, n_k), one row per query",
    /* api/request/grid.c */
    "n_q = %zu queries (rows of q) and n_k = %zu keys (rows of k)",
    /* api/request/grid.c */
    "no memory for the mask (%zu cells)",
    /* api/request/grid.c */
    "labels.%s has %zu names but there are %zu %s",
    /* api/request/grid.c */
    "labels is %s; it must be an object such as {\"queries\": [\"Q1\"], \"keys\": [\"K1\", \"K2\"]}",
    /* api/request/heatmap.c */
    "the weight drawn palest, a number or \"auto\" (default 0)",
    /* api/request/heatmap.c */
    "the weight drawn darkest, a number or \"auto\" (default 1)",
    /* api/request/heatmap.c */
    "the picture's title",
    /* api/request/heatmap.c */
    "heatmap.%s is %s; it must be a number from 0 to 1 (weights lie there) or \"auto\"",
    /* api/request/heatmap.c */
    "out of range",
    /* api/request/heatmap.c */
    "\"auto\" takes the %s weight drawn; the note draws from 0 to 1",
    /* api/request/heatmap.c */
    "smallest",
    /* api/request/heatmap.c */
    "largest",
    /* api/request/heatmap.c */
    "heatmap is %s; it must be an object such as {\"vmax\": \"auto\"}",
    /* api/request/heatmap.c */
    "heatmap takes vmin, vmax (numbers or \"auto\") and title",
    /* api/request/heatmap.c */
    "heatmap.vmax (%g) must be above vmin (%g)",
    /* api/request/heatmap.c */
    "weights run from 0 to 1: e.g. {\"vmin\": 0, \"vmax\": 0.5}, or \"auto\"",
    /* api/request/heatmap.c */
    "heatmap.title must be a string of at most %d characters, not %s",
    /* api/request/heatmap.c */
    "a short title, e.g. \"Query별 Attention 가중치\"",
    /* api/request/matrix.c */
    "%s must hold numbers: Q, K and V are vectors of numbers, not words; turn each token into a vector first",
    /* api/request/matrix.c */
    "a single number is not a matrix: write [[%g]] for a 1x1 %s",
    /* api/request/matrix.c */
    "write %s as rows of numbers, e.g. [[1, 0], [0, 1]]",
    /* api/request/matrix.c */
    "the %s cell at %s is %s%s%s: %s cells are 0/1 or true/false",
    /* api/request/matrix.c */
    "0 and a large negative number (such as -1e9) is an additive mask, added to the scores: send it as bias instead (same shape), or send mask as 0/1",
    /* api/request/matrix.c */
    "1 (or true) means the query may attend to the key; 0 (or false) blocks it (mask_semantics \"block\" flips this)",
    /* api/request/matrix.c */
    "the cell at %s is %s, not a number: %s holds numbers",
    /* api/request/matrix.c */
    "\"%.40s\" is a string: write the number without quotes",
    /* api/request/matrix.c */
    "Q, K and V hold numbers, not words: \"%.40s\" must first be turned into a vector",
    /* api/request/matrix.c */
    "JSON has no NaN or infinity: every cell needs a finite number",
    /* api/request/matrix.c */
    "booleans belong in a mask; here write 1 or 0",
    /* api/request/matrix.c */
    "each cell of %s is one number",
    /* api/request/matrix.c */
    "%s has %zu x %zu = %zu cells; this server computes at most %zu cells in one matrix",
    /* api/request/matrix.c */
    "no memory for %s (%zu cells)",
    /* api/request/matrix.c */
    "%s mixes numbers and rows: %s is an array but %s/0 is not",
    /* api/request/matrix.c */
    "a vector holds numbers, a matrix holds rows: write every element of %s as a row [...]",
    /* api/request/matrix.c */
    "row %zu of %s is %s, not an array of numbers",
    /* api/request/matrix.c */
    "every row of %s %s is an array: write [[...], [...]]",
    /* api/request/matrix.c */
    "row %zu of %s is empty",
    /* api/request/matrix.c */
    "every row of %s needs at least one number",
    /* api/request/matrix.c */
    "%s is ragged: row %zu has %zu numbers but row 0 has %zu",
    /* api/request/matrix.c */
    "every row of %s %s needs the same length (%zu): check row %zu for a missing or extra number",
    /* api/request/matrix.c */
    "no memory to read %s",
    /* api/request/matrix.c */
    "%s is empty: it must be a matrix %s",
    /* api/request/matrix.c */
    "%s is %s, not a matrix %s",
    /* api/request/matrix.c */
    "%s is a flat list, not a matrix %s",
    /* api/request/matrix.c */
    "%s needs rows: for a single row write [[...]] (with the extra brackets)",
    /* api/request/query.c */
    "unknown query parameter \"%.40s\"; this endpoint takes %s",
    /* api/request/query.c */
    "no known parameter is close; the parameters are %s",
    /* api/request/v2_tensor.c */
    "the input's name",
    /* api/request/v2_tensor.c */
    "its sizes",
    /* api/request/v2_tensor.c */
    "FP32, FP64, ...",
    /* api/request/v2_tensor.c */
    "binary_data_size",
    /* api/request/v2_tensor.c */
    "its numbers, row-major",
    /* api/request/v2_tensor.c */
    "echoed in the answer",
    /* api/request/v2_tensor.c */
    "scale, causal, heads, ...",
    /* api/request/v2_tensor.c */
    "the tensors",
    /* api/request/v2_tensor.c */
    "the outputs asked for",
    /* api/request/v2_tensor.c */
    "Inference-Header-Content-Length \"%.40s\" is not the length of a JSON header within the body's %zu bytes",
    /* api/request/v2_tensor.c */
    "send the byte length of the JSON header that starts the body; the binary tensors follow it",
    /* api/request/v2_tensor.c */
    "use FP32, FP64, FP16 or BF16 (INT32 and INT64 are read too; BOOL, UINT8 or INT8 for a MASK)",
    /* api/request/v2_tensor.c */
    "inputs[%zu].shape must be a list of 1 to %d sizes",
    /* api/request/v2_tensor.c */
    "inputs[%zu].shape[%zu] is %.0f, too large: inputs[%zu] may hold at most %zu elements",
    /* api/request/v2_tensor.c */
    "e.g. [2, 4] for two rows of four; a leading size is a batch",
    /* api/request/v2_tensor.c */
    "inputs[%zu] has more elements than this machine can count the bytes of",
    /* api/request/v2_tensor.c */
    "inputs[%zu].parameters.binary_data_size is not a byte count within the %zu binary bytes left after the header",
    /* api/request/v2_tensor.c */
    "Inference-Header-Content-Length must count the JSON header only; the binary pieces follow it in input order",
    /* api/request/v2_tensor.c */
    "inputs[%zu] is %zu %s elements (%zu bytes) but binary_data_size says %lld bytes",
    /* api/request/v2_tensor.c */
    "inputs[%zu] (%.64s) has shape of %zu elements but its data %s",
    /* api/request/v2_tensor.c */
    "has more",
    /* api/request/v2_tensor.c */
    "has fewer",
    /* api/request/v2_tensor.c */
    "data lists the elements row-major, flat or nested; its count must be the product of shape",
    /* api/request/v2_tensor.c */
    "inputs[%zu] is not an object",
    /* api/request/v2_tensor.c */
    "inputs[%zu] has no name",
    /* api/request/v2_tensor.c */
    "inputs[%zu].parameters is not an object",
    /* api/request/v2_tensor.c */
    "inputs[%zu] has both data and binary_data_size",
    /* api/request/v2_tensor.c */
    "inputs[%zu] has neither a data list nor binary_data_size",
    /* api/request/v2_tensor.c */
    "outputs must be a list of at most %d outputs",
    /* api/request/v2_tensor.c */
    "outputs[%zu] needs a name (and parameters, if any, as an object)",
    /* api/request/v2_tensor.c */
    "outputs[%zu].parameters.datatype is not one an output is sent in: FP64, FP32, FP16 or BF16",
    /* api/request/v2_tensor.c */
    "the math is float64; the datatype only says how each number is sent (rounded to nearest, ties to even)",
    /* api/request/v2_tensor.c */
    "outputs[%zu].parameters.binary_data is not true or false",
    /* api/request/v2_tensor.c */
    "the inference request is not a JSON object",
    /* api/request/v2_tensor.c */
    "id is not a string",
    /* api/request/v2_tensor.c */
    "parameters is not an object",
    /* api/request/v2_tensor.c */
    "inputs must be a list of 1 to %d tensors",
    /* api/request/v2_tensor.c */
    "inputs[%zu] repeats the name %.64s",
    /* api/request/v2_tensor.c */
    "%zu bytes follow the binary inputs that no input's binary_data_size accounts for",
    /* api/request/v2_tensor.c */
    "each binary input needs parameters.binary_data_size, and Inference-Header-Content-Length the JSON header's length",
    /* api/request/v2_tensor.c */
    "inputs[%zu] (%.64s, %s) has %s at %s",
    /* api/request/v2_tensor.c */
    "BOOL data is true or false",
    /* api/request/v2_tensor.c */
    "%s data is integers; send FP32 or FP64 for fractions",
    /* api/request/v2_tensor.c */
    "inputs[%zu] (%.64s, %s) has %s at %s, which %s does not hold exactly",
    /* api/request/v2_tensor.c */
    "the nearest %s value is %s: send that (the kernel reads it), or send the tensor as FP32 or FP64",
    /* api/request/v2_tensor.c */
    "%s holds at most %g in magnitude; send the tensor as FP32 or FP64",
    /* api/request/v2_tensor.c */
    "inputs[%zu] (%.64s) element %zu is not a finite number",
    /* api/request/v2_tensor.c */
    "NaN and infinity cannot be computed with",
    /* api/request/v2_tensor.c */
    "inputs[%zu] (%.64s) element %zu is the byte %g: BOOL is one byte of 0 or 1",
    /* api/request/v2_tensor.c */
    "inputs[%zu] (%.64s) element %zu is %g: a mask is 0 or 1 (false or true)",
    /* api/request/v2_tensor.c */
    "for an additive mask (0 / -1e9) send it as BIAS",
    /* api/request/v2_tensor.c */
    "parameters.%.48s must be %s",
    /* api/request/v2_tensor.c */
    "true or false",
    /* api/request/v2_tensor.c */
    "parameters.%.48s is not a parameter of this model",
    /* api/request/v2_tensor.c */
    "did you mean %s?",
    /* api/request/v2_tensor.c */
    "inputs[%zu] has no datatype",
    /* api/request/v2_tensor.c */
    "inputs[%zu].datatype is not one attnd reads",
    /* api/request/v2_tensor.c */
    "inputs[%zu].shape[%zu] is not a size >= 1",
    /* api/request/v2_tensor.c */
    "inputs[%zu] has more than %zu elements",
    /* api/request/variants.c */
    "the frequency base, default 10000",
    /* api/request/variants.c */
    "\"half\" (Hugging Face) or \"interleaved\" (Meta's llama)",
    /* api/request/variants.c */
    "the share of d_k that rotates, default 1",
    /* api/request/variants.c */
    "each query's position, default n_k - n_q + i",
    /* api/request/variants.c */
    "each key's position, default j",
    /* api/request/variants.c */
    "keys visible before the query's position (null: all)",
    /* api/request/variants.c */
    "keys visible after it (null: all)",
    /* api/request/variants.c */
    "the probability of dropping a weight, in [0, 1)",
    /* api/request/variants.c */
    "the generator's seed (an integer >= 0), default 0",
    /* api/request/variants.c */
    "%s must be a finite number, not %s",
    /* api/request/variants.c */
    "one per query",
    /* api/request/variants.c */
    "one per key",
    /* api/request/variants.c */
    "one per head",
    /* api/request/variants.c */
    "give %s as a number, or a list of %zu numbers (%s)",
    /* api/request/variants.c */
    "no memory for %s",
    /* api/request/variants.c */
    "%s must be a number or a list of %zu numbers, not %s",
    /* api/request/variants.c */
    "%s must be a list of %zu numbers, not %s",
    /* api/request/variants.c */
    "give %s as a flat list of %zu numbers, %s",
    /* api/request/variants.c */
    "%s has %zu numbers but needs %zu, %s",
    /* api/request/variants.c */
    "rope must be an object, not %s",
    /* api/request/variants.c */
    "send {} for the defaults: {\"base\": 10000, \"layout\": \"half\", \"fraction\": 1}",
    /* api/request/variants.c */
    "the usual base is 10000 (llama 3 uses 500000)",
    /* api/request/variants.c */
    "rope.base %g makes a rotation angle (position x base^(-2c/r)) overflow past the largest double",
    /* api/request/variants.c */
    "a base below 1 makes each pair turn faster than the last; the usual base is 10000 (llama 3 uses 500000)",
    /* api/request/variants.c */
    "rope.fraction must be in (0, 1]",
    /* api/request/variants.c */
    "fraction is the share of each head's d_k = %zu columns that rotate: 1 for all, 0.25 for a quarter (GPT-J, GPT-NeoX)",
    /* api/request/variants.c */
    "rope would rotate no column: d_k = %zu times fraction %g, rounded down to even, is 0",
    /* api/request/variants.c */
    "rotation turns pairs of columns: d_k x fraction must be at least 2",
    /* api/request/variants.c */
    "no memory for the rotation tables",
    /* api/request/variants.c */
    "alibi is a string other than \"auto\"",
    /* api/request/variants.c */
    "give \"auto\" for the paper's slopes, a number, or a list of %zu slopes (one per head)",
    /* api/request/variants.c */
    "no memory for the slopes",
    /* api/request/variants.c */
    "alibi slope %g is negative",
    /* api/request/variants.c */
    "a slope m >= 0 subtracts m x distance; \"auto\" gives the paper's slopes",
    /* api/request/variants.c */
    "window.left counts the keys before the query's position: an integer >= 0, or null for no limit",
    /* api/request/variants.c */
    "window.right counts the keys after the query's position: an integer >= 0, or null for no limit",
    /* api/request/variants.c */
    "window must be an object, not %s",
    /* api/request/variants.c */
    "e.g. {\"left\": 256, \"right\": 0}: each query sees itself and the 256 keys before it",
    /* api/request/variants.c */
    "dropout must be an object, not %s",
    /* api/request/variants.c */
    "e.g. {\"p\": 0.1, \"seed\": 42}",
    /* api/request/variants.c */
    "dropout.p is required",
    /* api/request/variants.c */
    "e.g. {\"p\": 0.1, \"seed\": 42}; p = 0 drops nothing",
    /* api/request/variants.c */
    "dropout.p must be a number in [0, 1), not %s",
    /* api/request/variants.c */
    "dropout.p is %g, but it must be in [0, 1): at least 0 and below 1",
    /* api/request/variants.c */
    "p is the share of weights dropped; the kept ones are divided by 1 - p, so p = 1 would divide by 0",
    /* api/request/variants.c */
    "the seed is an integer >= 0: the same seed drops the same cells",
    /* api/request/variants.c */
    "softcap c keeps each scaled score within ±c as c·tanh(s/c): c > 0 (Gemma 2 uses 50)",
    /* api/request/variants.c */
    "sink_tokens is how many first keys stay visible through the window (StreamingLLM keeps 4)",
    /* api/request/variants.c */
    "include names %s, a step of a variant this request does not ask for",
    /* api/request/variants.c */
    "%s is the step of \"%s\": send \"%s\", or leave %s out of include",
    /* server/admin.c */
    "the server is out of memory",
    /* server/admin.c */
    "the admin port serves GET and HEAD of /healthz, /readyz and /metrics only; everything else is on the main port",
    /* server/net/conns.c */
    "every connection the admin port takes is in use: retry after the Retry-After seconds",
    /* server/net/conns.c */
    "every connection this server takes is in use (--max-connections): retry after the Retry-After seconds, or on another replica",
    /* server/net/conns.c */
    "this client has as many connections open to the admin port as it allows one client: send the next probe on one of them, or close one",
    /* server/net/conns.c */
    "this client has as many connections open as the server allows one client (--max-client-connections): send the next request on one of them",
    /* server/net/framing.c */
    "a header line starts with a space or a tab (obs-fold, RFC 9112 section 5.2): send each header on one line",
    /* server/net/framing.c */
    "a header name is not a token (RFC 9112 section 5.1): no space before the colon, no control bytes",
    /* server/net/framing.c */
    "the request has more than one Host header (RFC 9112 section 3.2)",
    /* server/net/framing.c */
    "an HTTP/1.1 request needs a Host header (RFC 9112 section 3.2)",
    /* server/net/framing.c */
    "the Host header is not a host[:port] (RFC 9112 section 3.2)",
    /* server/net/framing.c */
    "the request has more than one Content-Length header (RFC 9112 section 6.3): send one",
    /* server/net/framing.c */
    "Content-Length is not a decimal number of bytes (RFC 9110 section 8.6)",
    /* server/net/framing.c */
    "the request has both Content-Length and Transfer-Encoding (RFC 9112 section 6.3): send one of them",
    /* server/net/framing.c */
    "an HTTP/1.0 request cannot use Transfer-Encoding (RFC 9112 section 6.1)",
    /* server/net/framing.c */
    "Transfer-Encoding is not a list of transfer codings (RFC 9112 section 6.1)",
    /* server/net/framing.c */
    "chunked must be the last transfer coding, and given once (RFC 9112 section 6.3)",
    /* server/net/framing.c */
    "attnd reads the chunked transfer coding alone: send \"Transfer-Encoding: chunked\" or a Content-Length",
    /* server/net/framing.c */
    "Transfer-Encoding names no transfer coding (RFC 9112 section 6.1)",
    /* server/codec/inflate_problem.c */
    "the body is not valid %s (Content-Encoding: %s): there are bytes after the end of the stream, after %llu bytes of it",
    /* server/codec/inflate_problem.c */
    "the body is not valid %s (Content-Encoding: %s): it asks for a preset dictionary, after %llu bytes of it",
    /* server/codec/inflate_problem.c */
    "the %s body (Content-Encoding: %s) ends before its stream does, after %llu bytes: it was cut short, or is not %s at all",
    /* server/codec/inflate_problem.c */
    "the body is not valid %s (Content-Encoding: %s): %s, after %llu bytes of it",
    /* server/codec/inflate_problem.c */
    "the body is not valid %s (Content-Encoding: %s): the stream is damaged, after %llu bytes of it",
    /* server/exchange.c */
    "the target has a NUL byte (%00), which would cut the path or a parameter short: leave it out",
    /* server/exchange.c */
    "the query has more than %d parameters or %d bytes: send the data in a POST body",
    /* server/exchange.c */
    "Content-Encoding %s is not a coding attnd can undo: send the body as is, or as gzip or deflate",
    /* server/exchange.c */
    "Content-Encoding names more than one coding (%s the second): send the body coded once, as gzip or deflate, or as is",
    /* server/exchange.c */
    "the server is shutting down",
    /* server/exchange.c */
    "the request waited longer than --lane-wait for a thread to compute it, behind other large requests: retry after the Retry-After seconds, or on another replica",
    /* server/exchange.c */
    "as many large requests wait for a thread as the server queues (--lane-queue): retry after the Retry-After seconds, or on another replica",
    /* server/exchange.c */
    "this client has half of the queue for large requests waiting already (--lane-queue): send the next one when one of them is answered",
    /* server/www.c */
    "the playground",
    /* api/endpoints/attention/parse.c */
    "{\"format\": \"float16\" | \"bfloat16\" | \"float32\", \"accumulate\": \"float32\" | \"same\"}: computed as a kernel in that format",
    /* api/endpoints/attention/parse.c */
    "no memory for the precision report",
    /* api/endpoints/precision.c */
    "q holds a number past the format's range: scale q down before the kernel reads it",
    /* api/endpoints/precision.c */
    "k holds a number past the format's range: scale k down before the kernel reads it",
    /* api/endpoints/precision.c */
    "v holds a number past the format's range: scale v down",
    /* api/endpoints/precision.c */
    "a bias past the format's range becomes -inf or +inf (-1e9 does in float16): block those keys with mask instead, or keep the bias within the format",
    /* api/endpoints/precision.c */
    "accumulate in float32, or scale q by 1/sqrt(d_k) before Q @ K^T",
    /* api/endpoints/precision.c */
    "accumulate in float32, or scale q first",
    /* api/endpoints/precision.c */
    "accumulate in float32, or keep the bias within the format",
    /* api/endpoints/precision.c */
    "subtract the row max before exp, and accumulate in float32",
    /* api/endpoints/precision.c */
    "accumulate in float32",
    /* api/endpoints/precision.c */
    "%s is not finite at cell [%zu, %zu] in %s, whose largest finite value is %g",
    /* api/request/precision.c */
    "the kernel's format: \"float16\", \"bfloat16\" or \"float32\"",
    /* api/request/precision.c */
    "where sums go: \"float32\" (default) or \"same\" (the format itself)",
    /* api/request/precision.c */
    "%s is \"%.40s\"; it must be float16, bfloat16 or float32",
    /* api/request/precision.c */
    "attnd computes in float64 without precision: leave precision out",
    /* api/request/precision.c */
    "%s is \"%.40s\"; it must be float32 or same",
    /* api/request/precision.c */
    "parameters.accumulate needs parameters.precision, the format it sums for",
    /* api/request/precision.c */
    "add \"precision\": \"float16\" (or bfloat16, float32) to the parameters",
    /* api/request/precision.c */
    "write \"same\" to sum in the format itself, %s",
    /* api/request/precision.c */
    "sums go into float32, or into the format itself (\"same\", here %s); no other accumulator",
    /* api/request/precision.c */
    "precision is %s; it must be an object",
    /* api/request/precision.c */
    "for example \"precision\": {\"format\": \"float16\", \"accumulate\": \"float32\"}",
    /* api/request/precision.c */
    "precision.format is required: float16, bfloat16 or float32",
    /* api/request/precision.c */
    "for example \"precision\": {\"format\": \"float16\"}",
    /* api/endpoints/precision.c */
    "precision  %s, sums in %s; the largest finite value %g\n",
    /* api/endpoints/precision.c */
    "  %s against float64: max abs error %.3g, no relative error, %zu not finite\n",
    /* api/endpoints/precision.c */
    "  %s against float64: max abs error %.3g, max rel error %.3g at [%zu, %zu], %zu not finite\n",
    /* api/endpoints/precision.c */
    "  hint: %s\n",
    /* api/endpoints/precision.c */
    "; red: not finite in %s",
    /* api/endpoints/precision.c */
    "x holds a number past the format's range: scale it down (normalize it) before the projections",
    /* api/endpoints/precision.c */
    "a weight or bias past the format's range: the kernel cannot hold it; rescale the layer",
    /* api/endpoints/precision.c */
    "grad_output holds a number past the format's range: scale the loss down, so that dO is smaller",
    /* api/endpoints/precision.c */
    "accumulate in float32, or scale the loss down: a smaller dO keeps the gradients within the format",
    /* api/endpoints/precision.c */
    "%s of head %zu is not finite at cell [%zu, %zu] in %s, whose largest finite value is %g",
    /* api/endpoints/precision.c */
    "  %s against float64: max abs error %.3g, max rel error %.3g at head %zu [%zu, %zu], %zu not finite\n",
    /* api/endpoints/precision.c */
    "  %s against float64: max abs error %.3g, max rel error %.3g at head %zu [%zu], %zu not finite\n",
    /* api/endpoints/precision.c */
    "  %s against float64: max abs error %.3g, max rel error %.3g at [%zu], %zu not finite\n",
    /* api/endpoints/answer.c */
    "query %s may attend to no key (its document, chunk and window show none of the keys its mask allows): its weights and %s",
    /* api/endpoints/attention/parse.c */
    "which keys each query may attend to: (n_q, n_k), (n_k), \"causal\" or \"causal_top_left\"",
    /* api/request/grid.c */
    "mask is \"%.64s\"; the mask strings are \"causal\" and \"causal_top_left\"",
    /* api/request/grid.c */
    "\"causal\" aligns bottom-right (FlashAttention: query i sees key j iff j <= i + n_k - n_q), \"causal_top_left\" top-left (SDPA's is_causal: j <= i); otherwise send a matrix (n_q, n_k) of 0/1 or true/false, or a vector (n_k) applied to every query",
    /* api/request/masks.c */
    "each document's tokens, queries and keys alike",
    /* api/request/masks.c */
    "each document's queries",
    /* api/request/masks.c */
    "each document's keys",
    /* api/request/masks.c */
    "documents.%s must be a list of lengths, not %s",
    /* api/request/masks.c */
    "documents.%s is empty",
    /* api/request/masks.c */
    "documents.%s lists %zu documents, but %zu %s hold at most %zu of one token or more",
    /* api/request/masks.c */
    "one integer >= 1 per document, in order, adding up to %zu (the %s)",
    /* api/request/masks.c */
    "every document has at least one token: a length is an integer >= 1",
    /* api/request/masks.c */
    "documents.%s adds up to %zu, but there are %zu %s",
    /* api/request/masks.c */
    "the lengths split the %s in order, so they add up to %zu",
    /* api/request/masks.c */
    "documents takes lengths, or lengths_q with lengths_k, not both",
    /* api/request/masks.c */
    "documents needs lengths, or lengths_q and lengths_k",
    /* api/request/masks.c */
    "documents.%s is required with documents.%s",
    /* api/request/masks.c */
    "documents.lengths splits queries and keys alike, but n_q = %zu and n_k = %zu",
    /* api/request/masks.c */
    "lengths for packed self-attention (the same split of queries and keys); lengths_q and lengths_k for FlashAttention's varlen (cu_seqlens_q, cu_seqlens_k as lengths)",
    /* api/request/masks.c */
    "documents must be an object, not %s",
    /* api/request/masks.c */
    "e.g. {\"lengths\": [3, 5]}: two packed documents of 3 and 5 tokens",
    /* api/request/masks.c */
    "documents.lengths_q lists %zu documents and documents.lengths_k %zu",
    /* api/request/masks.c */
    "each document has queries and keys: the two lists name the same documents, in order",
    /* api/request/masks.c */
    "block must be a list of two integers [B_q, B_k], not %s",
    /* api/request/masks.c */
    "e.g. [128, 128], FlexAttention's tile: B_q queries by B_k keys",
    /* api/request/masks.c */
    "a tile holds at least one query and one key: each of B_q and B_k is an integer >= 1",
    /* api/request/masks.c */
    "prefix P lets every query see keys 0 to P - 1 both ways (a prefix-LM): 0 <= P <= n_k = %zu",
    /* api/request/masks.c */
    "chunk C: each query sees only the keys of its own chunk of C positions (Llama 4 uses 8192); C >= 1",
    /* api/request/masks.c */
    "block_map would have %zu x %zu tiles; this server computes at most %zu cells in one matrix",
    /* api/request/masks.c */
    "send larger tiles in block: [128, 128] is FlexAttention's",
    /* api/request/variants.c */
    "%s has more than %zu numbers but needs %zu, %s",
    /* api/endpoints/shapes/shapes.c */
    "visible: 1 where every rule lets query i see key j, else 0",
    /* api/endpoints/shapes/shapes.c */
    "block_map: each tile 2 full, 1 partial, 0 empty; a kernel skips the empty ones",
    /* api/endpoints/shapes/shapes.c */
    "row_sum: what softmax divides each row by",
    /* api/endpoints/attention/backward.c */
    "dO = dL/d(output), the output's shape",
    /* api/endpoints/attention/backward.c */
    "dO from stream 8 of the generator, amplitude 1",
    /* api/endpoints/attention/backward.c */
    "include names %s, a step this request does not make",
    /* api/endpoints/attention/backward.c */
    "%s is a step of the backward pass: send backward {\"seed\": 0} or {\"grad_output\": dO}, or leave %s out",
    /* api/endpoints/attention/backward.c */
    "%s needs \"%s\": send it, or leave %s out of include",
    /* api/endpoints/attention/backward.c */
    "backward.grad_output is (%zu, %zu) but must be the output's shape (n_q, d_v) = (%zu, %zu)",
    /* api/endpoints/attention/backward.c */
    "dO is dL/d(output): one row per query, one number per column of v",
    /* api/endpoints/attention/backward.c */
    "backward must be an object, not %s",
    /* api/endpoints/attention/backward.c */
    "e.g. {\"seed\": 0}, or {\"grad_output\": dO} of the output's shape",
    /* api/endpoints/attention/backward.c */
    "backward takes grad_output or seed: exactly one",
    /* api/endpoints/attention/backward.c */
    "grad_output is dO itself; seed makes it from the generator (stream 8, amplitude 1)",
    /* api/endpoints/attention/backward.c */
    "the seed is an integer >= 0: the same seed makes the same dO",
    /* api/endpoints/attention/backward.c */
    "backward needs every query row, but rows asks for some",
    /* api/endpoints/attention/backward.c */
    "grad_k and grad_v sum over every query: drop rows (and pick the rows you want from the answer), or drop backward",
    /* api/endpoints/attention/backward.c */
    "a gradient is not finite: dO or v is too large for its products",
    /* api/endpoints/attention/backward.c */
    "scale dO (backward.grad_output) or v down: dP = dO @ V^T must stay within the largest double (~1.8e308)",
    /* api/endpoints/attention/backward.c */
    "the backward pass failed: %s",
    /* api/endpoints/attention/parse.c */
    "the gradients step by step: {\"grad_output\": dO} or {\"seed\": s}",
    /* api/request/v2_tensor.c */
    "inputs[%zu].shape[%zu] is %lld, too large: inputs[%zu] may hold at most %zu elements",
    /* api/endpoints/attention/backward.c */
    "\nbackward step %d  %s = %s\n",
    /* api/endpoints/multihead/backward.c */
    "%s is not made here (no such bias, variant, or this kind of attention): leave it out of include",
    /* api/endpoints/multihead/backward.c */
    "backward.grad_output is (%zu, %zu) but must be the output's shape (n_q, d_model) = (%zu, %zu)",
    /* api/endpoints/multihead/backward.c */
    "dO is dL/d(output): one row per query, d_model numbers a row",
    /* api/endpoints/shapes/shapes.c */
    "grad_concat: each head's dO is its d_k columns",
    /* api/endpoints/shapes/shapes.c */
    "grad_w_o: the output projection's gradient",
    /* api/endpoints/shapes/shapes.c */
    "grad_weights: dP, one head",
    /* api/endpoints/shapes/shapes.c */
    "delta: D, each row's dot of dO and the output",
    /* api/endpoints/shapes/shapes.c */
    "grad_masked: dS, softmax's gradient (each row sums to 0)",
    /* api/endpoints/shapes/shapes.c */
    "grad_scores: dS times the scale",
    /* api/endpoints/shapes/shapes.c */
    "grad_q, one head",
    /* api/endpoints/shapes/shapes.c */
    "grad_k, one head",
    /* api/endpoints/shapes/shapes.c */
    "grad_v, one head",
    /* api/endpoints/shapes/shapes.c */
    "grad_w_q (grad_w_k, grad_w_v alike)",
    /* api/endpoints/shapes/shapes.c */
    "grad_x through Q; through K and V it adds grad_K @ W_K^T and grad_V @ W_V^T",
    /* api/endpoints/shapes/shapes.c */
    "backward must be true or false, not \"%.40s\"",
    /* api/endpoints/shapes/shapes.c */
    "backward=true lists the gradients' steps after the forward's",
    /* api/endpoints/teach/explain.c */
    "backward: D = Σ dO·output",
    /* api/endpoints/teach/explain.c */
    "dS[{1}] = weight × (dP − D)",
    /* api/endpoints/verify/json.c */
    "an all-zero %s would pass this rule",
    /* api/endpoints/verify/json.c */
    "a %s of the constant %g in every cell would pass this rule",
    /* api/endpoints/verify/json.c */
    "the tolerance cannot tell a kernel from a constant: use rule \"flash\" or \"flex\", which scale with a naive kernel's error",
    /* api/endpoints/verify/json.c */
    "%s[%zu, %zu] = %.17g is not exactly a %s number: the kernel reads it rounded, gold does not",
    /* api/endpoints/verify/json.c */
    "send the inputs as the kernel holds them (converted to the format and back), so gold answers the same problem",
    /* api/endpoints/verify/page.c */
    "pass",
    /* api/endpoints/verify/page.c */
    "FAIL",
    /* api/endpoints/verify/page.c */
    "  max |candidate - gold| %.3g %s %.3g = %g x naive %.3g + atol %.3g\n",
    /* api/endpoints/verify/page.c */
    "  mean |candidate - gold| %.3g %s %.3g = fudge %g x naive mean %.3g\n",
    /* api/endpoints/verify/page.c */
    "  |candidate - gold| %.3g %s atol + rtol x |gold| = %.3g at the cell furthest over\n",
    /* api/endpoints/verify/page.c */
    "  mean error %.3g, largest relative error %.3g, NaN cells %zu\n",
    /* api/endpoints/verify/page.c */
    "  candidate %.9g  gold %.9g  naive %.9g\n",
    /* api/endpoints/verify/page.c */
    "warning inadequate-tolerance: a constant %g in every cell of %s would pass this rule\n",
    /* api/endpoints/verify/page.c */
    "warning input-not-in-format: %s[%zu, %zu] = %.17g is not exactly a %s number\n",
    /* api/endpoints/verify/page.c */
    "verify  %s  (rule %s, format %s)\n",
    /* api/endpoints/verify/parse.c */
    "the candidate's format: \"float16\", \"bfloat16\", \"float32\" or \"float64\"",
    /* api/endpoints/verify/parse.c */
    "the kernel's answer: {\"output\", \"lse\"?, \"grad_q\"?, \"grad_k\"?, \"grad_v\"?}",
    /* api/endpoints/verify/parse.c */
    "\"flash\" (default), \"flex\", or {\"rtol\", \"atol\"}",
    /* api/endpoints/verify/parse.c */
    "the flex rule's factor on the naive reference's mean error, default 1.1",
    /* api/endpoints/verify/parse.c */
    "relative tolerance, default 1e-05",
    /* api/endpoints/verify/parse.c */
    "absolute tolerance, default 1e-08",
    /* api/endpoints/verify/parse.c */
    "the kernel's output, (n_q, d_v)",
    /* api/endpoints/verify/parse.c */
    "each query row's log-sum-exp, (n_q)",
    /* api/endpoints/verify/parse.c */
    "dQ, (n_q, d_k)",
    /* api/endpoints/verify/parse.c */
    "dK, (n_k, d_k)",
    /* api/endpoints/verify/parse.c */
    "dV, (n_k, d_v)",
    /* api/endpoints/verify/parse.c */
    "verify computes the naive reference in the candidate's format itself: send format instead",
    /* api/endpoints/verify/parse.c */
    "verify compares every row: send the whole problem and the whole answer",
    /* api/endpoints/verify/parse.c */
    "ask /v1/attention to explain a row; verify answers a verdict",
    /* api/endpoints/verify/parse.c */
    "ask /v1/attention for a pitfall; verify answers a verdict",
    /* api/endpoints/verify/parse.c */
    "%s does not apply to /v1/verify",
    /* api/endpoints/verify/parse.c */
    "format is required: the format the kernel computed in",
    /* api/endpoints/verify/parse.c */
    "send \"format\": \"float16\", \"bfloat16\", \"float32\" or \"float64\"",
    /* api/endpoints/verify/parse.c */
    "format is %s; it must be float16, bfloat16, float32 or float64",
    /* api/endpoints/verify/parse.c */
    "torch.float16 is \"float16\", torch.bfloat16 \"bfloat16\"",
    /* api/endpoints/verify/parse.c */
    "rule.%s must be a number of at least 0",
    /* api/endpoints/verify/parse.c */
    "torch.allclose's defaults are rtol 1e-05 and atol 1e-08",
    /* api/endpoints/verify/parse.c */
    "fudge belongs to the flex rule",
    /* api/endpoints/verify/parse.c */
    "send \"rule\": \"flex\" with it, or leave fudge out",
    /* api/endpoints/verify/parse.c */
    "fudge must be a number above 0",
    /* api/endpoints/verify/parse.c */
    "FlexAttention's tests use 1.1; a fudge of 2 allows twice the naive reference's mean error",
    /* api/endpoints/verify/parse.c */
    "rule is %s; it must be \"flash\", \"flex\" or {\"rtol\", \"atol\"}",
    /* api/endpoints/verify/parse.c */
    "\"flash\" allows twice a naive kernel's largest error, \"flex\" its mean error times fudge, {\"rtol\", \"atol\"} is torch.allclose",
    /* api/endpoints/verify/parse.c */
    "include is %s; it must be a list such as [\"gold\"]",
    /* api/endpoints/verify/parse.c */
    "include names %s; verify can include only gold",
    /* api/endpoints/verify/parse.c */
    "gold is the float64 answer of every tensor the candidate holds",
    /* api/endpoints/verify/parse.c */
    "candidate is required: an object holding the kernel's output",
    /* api/endpoints/verify/parse.c */
    "send \"candidate\": {\"output\": [[...]]}, with lse and grad_q, grad_k, grad_v when the kernel gives them",
    /* api/endpoints/verify/parse.c */
    "candidate.output is required",
    /* api/endpoints/verify/parse.c */
    "the output is what every rule judges first: send it with anything else the kernel gives",
    /* api/endpoints/verify/parse.c */
    "candidate.%s is a gradient, but the problem has no backward",
    /* api/endpoints/verify/parse.c */
    "send backward: {\"grad_output\": dO}, the dO the kernel's backward took",
    /* api/endpoints/verify/parse.c */
    "candidate.%s is (%zu, %zu) but the problem's %s is %s",
    /* api/endpoints/verify/parse.c */
    "candidate.%s is (%zu) but the problem's %s is %s",
    /* api/endpoints/verify/parse.c */
    "send the kernel's %s for this problem, shaped %s (check that the batch and head dimensions are left out)",
    /* api/endpoints/verify/parse.c */
    "the naive reference in %s cannot be computed: %s",
    /* api/endpoints/verify/parse.c */
    "the body is %s; it must be a JSON object: an attention problem with format and candidate",
    /* api/endpoints/verify/run.c */
    "%s of the reference is missing",
    /* api/request/matrix.c */
    "each cell of %s is a number, null, or one of the strings \"NaN\", \"Infinity\" and \"-Infinity\"",
    /* api/endpoints/v2/v2.c */
    "true: only the models ready for inference",
    /* api/endpoints/v2/v2.c */
    "the repository index request is %s; it must be an object such as {\"ready\": true}, or no body",
    /* api/endpoints/v2/v2.c */
    "ready must be true or false, not %s",
    /* api/endpoints/v2/verify.c */
    "inputs[%zu] (%s) is %s; a kernel's answer is read as FP16, BF16, FP32 or FP64",
    /* api/endpoints/v2/verify.c */
    "send the tensor as the kernel wrote it: its datatype is also the format it is judged in unless parameters.format names another",
    /* api/endpoints/v2/verify.c */
    "%s is a gradient, but the request has no GRAD_OUTPUT",
    /* api/endpoints/v2/verify.c */
    "send GRAD_OUTPUT, the dO the kernel's backward took",
    /* api/endpoints/v2/verify.c */
    "%s has shape %s but Q, K and V make it %s",
    /* api/endpoints/v2/verify.c */
    "%s is %s for each problem, the batch size first when Q has one",
    /* api/endpoints/v2/verify.c */
    "parameters.format is %.32s; it must be float16, bfloat16, float32 or float64",
    /* api/endpoints/v2/verify.c */
    "left out, it is OUTPUT's datatype: FP16 is float16, BF16 bfloat16, FP32 float32 and FP64 float64",
    /* api/endpoints/v2/verify.c */
    "parameters.%s belongs to the %s rule",
    /* api/endpoints/v2/verify.c */
    "send parameters.rule \"%s\" with it, or leave %s out",
    /* api/endpoints/v2/verify.c */
    "parameters.%s must be a number of at least 0",
    /* api/endpoints/v2/verify.c */
    "parameters.%s must be a number above 0",
    /* api/endpoints/v2/verify.c */
    "parameters.rule is %.32s; it must be flash, flex or allclose",
    /* api/endpoints/v2/verify.c */
    "\"flash\" allows twice a naive kernel's largest error, \"flex\" its mean error times fudge, \"allclose\" is torch.allclose with rtol and atol",
    /* api/endpoints/v2/verify.c */
    "output %s is sent as %s only",
    /* api/endpoints/v2/verify.c */
    "leave parameters.datatype out for VERDICT and REPORT",
    /* api/endpoints/v2/verify.c */
    "output %s is gold of the candidate's %s, which the request does not send",
    /* api/endpoints/v2/verify.c */
    "send %s, or leave %s out",
    /* api/endpoints/v2/verify.c */
    "send fewer queries or keys: the naive reference in a low format builds the score matrix (format float64 streams OUTPUT, LSE and the gradients without it)",
    /* api/request/v2_tensor.c */
    "a value that is neither a number nor a word for NaN or an infinity",
    /* api/request/v2_tensor.c */
    "a kernel's answer holds numbers, null (NaN), or the strings \"NaN\", \"Infinity\" and \"-Infinity\"",
    /* api/endpoints/verify/parse.c */
    "the naive reference in %s keeps every (n_q, n_k) step, each within --max-cells: verify a shorter problem in this format, or a float64 candidate, whose reference is streamed at any length",
};

const size_t api_messages_en_count = sizeof api_messages_en / sizeof api_messages_en[0];
