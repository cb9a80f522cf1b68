/*
 * tests/unit/check_lang.c — attnd's languages: the tables (every catalogued message in
 * every language, with the same printf conversions; every problem type and warning in
 * Korean), choosing the language (?lang, Accept-Language with q values), and answers
 * that say which language they speak.
 *
 * Suites: Tables, Negotiation, Answers.
 *
 * Not here: which words the Korean uses (a person reads messages_ko.c against the notes'
 * glossary); the HTTP headers on the wire (tests/http/lang.test.mjs).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/http/language.h"
#include "api/http/problem.h"
#include "api/http/server_problem.h"
#include "api/i18n/lang.h"
#include "api/i18n/messages.h"
#include "api/i18n/particles.h"
#include "tests/unit/api_fixture.h"

/* ---------------------------------------------------------------- Tables */

/* The printf conversions of fmt in order ("%zu%s%.64s" -> "zu s .64s"), "%%" skipped. */
static void conversions(const char *fmt, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = fmt; *p != '\0'; p++) {
        if (*p != '%')
            continue;
        if (p[1] == '%') {
            p++;
            continue;
        }
        p++;
        while (*p != '\0' && strchr("-+ #0123456789.lhzjt", *p) != NULL && n + 2 < size)
            out[n++] = *p++;
        if (*p == '\0')
            break;
        if (n + 2 < size) {
            out[n++] = *p;
            out[n++] = ' ';
        }
        out[n] = '\0';
    }
}

static const struct api_message *korean_row(const char *en)
{
    for (size_t i = 0; i < api_messages_ko_count; i++)
        if (strcmp(api_messages_ko[i].en, en) == 0)
            return &api_messages_ko[i];
    return NULL;
}

/* Every message attnd says has a Korean row, with its English's conversions in order. */
START_TEST(test_every_message_in_korean)
{
    const char *en = api_messages_en[_i];
    const struct api_message *ko = korean_row(en);
    ck_assert_msg(ko != NULL, "no Korean for \"%s\" (api/i18n/messages_ko.c)", en);
    ck_assert_msg(ko->text != NULL && ko->text[0] != '\0', "empty Korean for \"%s\"", en);
    ck_assert_msg(strcmp(ko->text, en) != 0, "\"%s\" is not translated", en);
    char want[256], got[256];
    conversions(en, want, sizeof want);
    conversions(ko->text, got, sizeof got);
    ck_assert_msg(strcmp(want, got) == 0, "\"%s\": conversions [%s], Korean has [%s]", en, want,
                  got);
    ck_assert_str_eq(api_tr_in(API_LANG_KO, en), ko->text);
    ck_assert_str_eq(api_tr_in(API_LANG_EN, en), en);
    /* A sentence with numbered holes (i18n/fill.h) keeps each of them, in any order. */
    for (char hole = '1'; hole <= '9'; hole++) {
        const char mark[] = { '{', hole, '}', '\0' };
        ck_assert_msg((strstr(en, mark) != NULL) == (strstr(ko->text, mark) != NULL),
                      "\"%s\": hole %s in one language only", en, mark);
    }
}
END_TEST

/* Every Korean row translates a message that exists, once. */
START_TEST(test_no_stale_or_repeated_korean)
{
    for (size_t i = 0; i < api_messages_ko_count; i++) {
        size_t found = 0;
        for (size_t j = 0; j < api_messages_en_count; j++)
            found += strcmp(api_messages_en[j], api_messages_ko[i].en) == 0;
        ck_assert_msg(found == 1, "\"%s\" is catalogued %zu times", api_messages_ko[i].en, found);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(api_messages_ko[j].en, api_messages_ko[i].en) != 0,
                          "\"%s\" has two Korean rows", api_messages_ko[i].en);
    }
}
END_TEST

/* Every problem type's title and explanation, in Korean (Hangul: its UTF-8 starts 0xEA-0xED). */
static bool has_hangul(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p >= 0xEA && *p <= 0xED)
            return true;
    return false;
}

START_TEST(test_every_problem_type_in_korean)
{
    const struct api_problem_info *info = api_problem_info((enum api_problem_type)_i);
    ck_assert_msg(has_hangul(api_tr_in(API_LANG_KO, info->title)), "%s: title", info->slug);
    ck_assert_msg(has_hangul(api_tr_in(API_LANG_KO, info->explanation)), "%s: explanation",
                  info->slug);
    ck_assert_str_eq(api_tr_in(API_LANG_EN, info->title), info->title);
}
END_TEST

/* An unknown message falls back to its English: a request never fails for a missing row. */
START_TEST(test_unknown_message_falls_back)
{
    ck_assert_str_eq(api_tr_in(API_LANG_KO, "no such message"), "no such message");
    /* Keys before the first, after the last, and a known one cut short or run on. */
    ck_assert_str_eq(api_tr_in(API_LANG_KO, ""), "");
    ck_assert_str_eq(api_tr_in(API_LANG_KO, "\x7f"), "\x7f");
    ck_assert_str_eq(api_tr_in(API_LANG_KO, "the playgroun"), "the playgroun");
    ck_assert_str_eq(api_tr_in(API_LANG_KO, "the playground!"), "the playground!");
    ck_assert_str_ne(api_tr_in(API_LANG_KO, "the playground"), "the playground");
    /* The sorted index holds every row. */
    ck_assert_uint_le(api_messages_ko_count, API_MESSAGES_MAX);
}
END_TEST

/* ---------------------------------------------------------------- Negotiation */

static const struct {
    const char *lang_param;      /* ?lang, or NULL */
    const char *accept_language; /* the header, or NULL */
    enum api_lang want;
} choices[] = {
    { NULL, NULL, API_LANG_EN },
    { NULL, "ko", API_LANG_KO },
    { NULL, "ko-KR", API_LANG_KO },
    { NULL, "KO-kr", API_LANG_KO },
    { NULL, "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", API_LANG_KO },
    { NULL, "en-US,en;q=0.9,ko;q=0.8", API_LANG_EN },
    { NULL, "en;q=0.3, ko;q=0.7", API_LANG_KO },
    { NULL, "fr", API_LANG_EN },                    /* a language attnd lacks */
    { NULL, "fr-FR, de;q=0.9, ko;q=0.5", API_LANG_KO }, /* the first one attnd has */
    { NULL, "ko;q=0, en", API_LANG_EN },            /* q=0: not acceptable */
    { NULL, "ko;q=0", API_LANG_EN },
    { NULL, "*", API_LANG_EN },
    { NULL, "ko;q=0.5, en;q=0.5", API_LANG_KO },    /* a tie: the one listed first */
    { NULL, "kok, kor", API_LANG_EN },              /* not ko: another language's code */
    { NULL, "ko;q=abc, en;q=0.1", API_LANG_EN },    /* a weight that does not read */
    { NULL, "", API_LANG_EN },
    { "ko", "en", API_LANG_KO },                    /* ?lang wins */
    { "en", "ko", API_LANG_EN },
    { "ko-KR", NULL, API_LANG_KO },
};

START_TEST(test_language_choice)
{
    struct api_param p = { "lang", choices[_i].lang_param };
    struct api_request req = { .method = "GET", .path = "/healthz",
                               .params = choices[_i].lang_param ? &p : NULL,
                               .n_params = choices[_i].lang_param ? 1 : 0,
                               .accept_language = choices[_i].accept_language };
    enum api_lang lang = API_LANG_COUNT;
    struct api_error err;
    ck_assert(api_lang_negotiate(&req, &lang, &err));
    ck_assert_msg(lang == choices[_i].want, "case %d: %s", _i, api_lang_code(lang));
}
END_TEST

/* ---------------------------------------------------------------- Answers */

static struct api_response ask(const char *method, const char *path, const char *lang_param,
                               const char *accept_language, const char *body)
{
    struct api_context ctx = test_context();
    struct api_param p = { "lang", lang_param };
    struct api_request req = { .method = method, .path = path,
                               .params = lang_param ? &p : NULL, .n_params = lang_param ? 1 : 0,
                               .content_type = "application/json", .body = body,
                               .body_len = body ? strlen(body) : 0,
                               .accept_language = accept_language };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    return res;
}

static const char *header(const struct api_response *res, const char *name)
{
    for (size_t i = 0; i < res->n_headers; i++)
        if (strcmp(res->headers[i].name, name) == 0)
            return res->headers[i].value;
    return NULL;
}

/* ?lang=fr is 422 invalid-value naming lang, in English. */
START_TEST(test_unknown_lang_parameter)
{
    struct api_response res = ask("GET", "/healthz", "fr", "ko", NULL);
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), "/problems/invalid-value");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "parameter")), "lang");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* A Korean problem: title, detail and every errors[] hint from the Korean table. */
START_TEST(test_korean_problem)
{
    struct api_response res = ask("POST", "/v1/attention", NULL, "ko-KR,ko;q=0.9",
                                  "{\"Q\":[[1]],\"k\":[[1,0]],\"v\":[[1]],\"epsilon\":1}");
    ck_assert_int_eq(res.status, 422);
    ck_assert_str_eq(header(&res, "Content-Language"), "ko");
    ck_assert_str_eq(header(&res, "Vary"), "Accept-Language");
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "title")),
                     api_tr_in(API_LANG_KO, "Unknown field"));
    ck_assert_str_eq(json_string_value(json_object_get(doc, "title")), "모르는 필드입니다");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "detail")),
                                 "모르는 필드 \"Q\", \"epsilon\". 아는 필드: q, k, v"));
    json_t *errors = json_object_get(doc, "errors");
    ck_assert_uint_eq(json_array_size(errors), 2);
    /* The field meant, with its meaning from the endpoint's table, in Korean too. */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(errors, 0), "hint")),
                     "\"q\" (쿼리(Query), (n_q, d_k) 또는 쿼리 하나 (d_k)) 를 뜻했나요?");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(errors, 1), "detail")),
                     "모르는 필드 \"epsilon\"");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(errors, 1),
                                                                   "hint")),
                                 "가까운 필드 이름이 없습니다"));
    json_decref(doc);
    api_response_deinit(&res);

    /* The same request in English, for a language attnd lacks. */
    res = ask("POST", "/v1/attention", NULL, "fr", "{\"Q\":[[1]],\"k\":[[1]],\"v\":[[1]]}");
    ck_assert_str_eq(header(&res, "Content-Language"), "en");
    doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "title")), "Unknown field");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* api_respond_too_large (a body over --max-body where no route answers) in the thread's
 * language: its sentence translated first, its number filled in after. */
START_TEST(test_too_large_in_korean)
{
    struct api_context ctx = test_context();
    ctx.limits.max_body = 1000;
    struct api_response res = { 0 };
    api_lang_set_current(API_LANG_KO);
    api_respond_too_large(&ctx, &res);
    api_lang_set_current(API_LANG_EN);
    ck_assert_int_eq(res.status, 413);
    json_t *doc = parse(&res);
    char want[200];
    snprintf(want, sizeof want,
             api_tr_in(API_LANG_KO, "the body is larger than this server accepts (%zu bytes)"),
             (size_t)1000);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")), want);
    ck_assert_str_ne(want, "the body is larger than this server accepts (1000 bytes)");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* The learner's pitfall in Korean: k passed transposed, 전치 in the hint. */
START_TEST(test_korean_shape_hint)
{
    struct api_response res = ask("POST", "/v1/attention", "ko", NULL,
                                  "{\"q\":[[1,0,1,0],[0,1,0,1]],\"k\":[[1,1],[0,1],[1,1],[0,1]],"
                                  "\"v\":[[10,0],[0,10]]}");
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "title")), "shape 가 맞지 않습니다");
    const char *hint = json_string_value(json_object_get(
        json_array_get(json_object_get(doc, "errors"), 0), "hint"));
    ck_assert_msg(hint != NULL && strstr(hint, "전치") != NULL, "%s", hint ? hint : "(none)");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* The fully-masked-row warning, in Korean in JSON and on the text page. */
START_TEST(test_korean_warning)
{
    static const char body[] = "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1,2],[3,4]],"
                               "\"mask\":[[1,1],[0,0]]}";
    struct api_response res = ask("POST", "/v1/attention", "ko", NULL, body);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    json_t *w = json_array_get(json_object_get(doc, "warnings"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(w, "code")), "row_fully_masked");
    ck_assert_str_eq(json_string_value(json_object_get(w, "message")),
                     "쿼리 1: 어떤 키도 볼 수 없습니다 (마스크 행이 모든 키를 가립니다). "
                     "가중치와 출력은 0 입니다");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* Every problem type's page, in both languages (iterating the table). */
START_TEST(test_problem_pages_in_both_languages)
{
    const struct api_problem_info *info = api_problem_info((enum api_problem_type)_i);
    char path[96];
    snprintf(path, sizeof path, "/problems/%s", info->slug);
    struct api_response ko = ask("GET", path, "ko", NULL, NULL);
    ck_assert_int_eq(ko.status, 200);
    ck_assert_ptr_nonnull(strstr(ko.body, "<html lang=\"ko\">"));
    ck_assert_ptr_nonnull(strstr(ko.body, api_tr_in(API_LANG_KO, info->title)));
    ck_assert_ptr_nonnull(strstr(ko.body, api_tr_in(API_LANG_KO, info->explanation)));
    ck_assert_str_eq(header(&ko, "Content-Language"), "ko");
    api_response_deinit(&ko);
    struct api_response en = ask("GET", path, NULL, NULL, NULL);
    ck_assert_ptr_nonnull(strstr(en.body, "<html lang=\"en\">"));
    ck_assert_ptr_nonnull(strstr(en.body, info->explanation));
    ck_assert_str_eq(header(&en, "Content-Language"), "en");
    api_response_deinit(&en);
}
END_TEST

/* The text rendering's words and the SVG's titles and axis names, in Korean. */
static struct api_response ask_as(const char *path, const char *accept, const char *body)
{
    struct api_context ctx = test_context();
    struct api_param p = { "lang", "ko" };
    struct api_request req = { .method = "POST", .path = path, .params = &p, .n_params = 1,
                               .accept = accept, .content_type = "application/json",
                               .body = body, .body_len = strlen(body) };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    return res;
}

START_TEST(test_korean_text_and_svg)
{
    static const char body[] = "{" SEED000 ",\"mask\":[[1,1],[0,0]]}";
    struct api_response text = ask_as("/v1/attention", "text/plain", body);
    ck_assert_int_eq(text.status, 200);
    static const char *const words[] = { "\n단계 1  scores = Q @ K^T  (2, 4) @ (4, 2) -> (2, 2)\n",
                                         "\n요약\n", "  쿼리  argmax", " |     합\n",
                                         "\n경고: 쿼리 q1: 어떤 키도 볼 수 없습니다" };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        ck_assert_msg(strstr(text.body, words[i]) != NULL, "no \"%s\" in:\n%s", words[i],
                      text.body);
    api_response_deinit(&text);

    struct api_response svg = ask_as("/v1/attention", "image/svg+xml", body);
    ck_assert_int_eq(svg.status, 200);
    static const char *const drawn[] = {
        /* row 0 scores 2 against both keys (the note's tie), row 1 is masked away */
        "<title>Attention 가중치 (softmax(Q @ K^T * scale), scale 0.5; 2 x 2; q0 에서 동점)</title>",
        "fill=\"#555555\">키</text>", ">쿼리</text>", ">빗금: 마스크로 가린 칸." };
    for (size_t i = 0; i < sizeof drawn / sizeof drawn[0]; i++)
        ck_assert_msg(strstr(svg.body, drawn[i]) != NULL, "no \"%s\"", drawn[i]);
    api_response_deinit(&svg);

    struct api_response mh = ask_as("/v1/multihead", "image/svg+xml",
                                    "{\"heads\":2,\"random\":{\"seed\":0,\"n\":3,\"d_model\":4}}");
    ck_assert_int_eq(mh.status, 200);
    ck_assert_ptr_nonnull(strstr(mh.body, "Multi-Head attention 가중치"));
    ck_assert_ptr_nonnull(strstr(mh.body, ">1 번 head<"));
    ck_assert_ptr_nonnull(strstr(mh.body, ">head 2 개의 평균<"));
    api_response_deinit(&mh);
}
END_TEST

/* The teaching modules in Korean: the note's tie (q0 scores 2 against both keys), its
   row worked by hand with the step names padded by display width, the experiment table
   and a pitfall's words. */
START_TEST(test_korean_teaching)
{
    struct api_response res = ask("POST", "/v1/attention", "ko", NULL, "{" SEED000 "}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    json_t *w = json_array_get(json_object_get(doc, "warnings"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(w, "code")), "tie");
    ck_assert_str_eq(json_string_value(json_object_get(w, "message")),
                     "쿼리 0 에서 키 0, 1 의 가중치가 가장 높은 값으로 같습니다 (동점): "
                     "이기는 키가 없고, argmax 는 가장 낮은 번호만 가리킵니다");
    json_decref(doc);
    api_response_deinit(&res);

    struct api_response text = ask_as("/v1/attention", "text/plain",
                                      "{" SEED000 ",\"explain\":{\"row\":0}}");
    ck_assert_int_eq(text.status, 200);
    static const char *const lines[] = {
        "\nexplain  쿼리 q0 (행 0), 첫 번째 노트처럼 손으로 계산합니다\n",
        /* "1 비교" is 6 columns wide (8 bytes): 5 spaces make the column's 11 */
        "\n  1 비교     q0·k0 = 1×1 + 0×0 + 1×1 + 0×0 = 2\n",
        "\n  2 조정     2 × 0.5 = 1\n", "\n  5 V 섞기   0.5×[10, 0] + 0.5×[0, 10] = [5, 5]\n" };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(text.body, lines[i]) != NULL, "no \"%s\" in:\n%s", lines[i],
                      text.body);
    api_response_deinit(&text);

    struct api_response batch = ask_as("/v1/attention/batch", "text/plain",
                                       "{\"items\":[{" SEED000 "}]}");
    ck_assert_int_eq(batch.status, 200);
    ck_assert_msg(strstr(batch.body, "실험    쿼리  키    가중치  변화\n"
                                     "항목 0  q0    동점  0.5000  (기본)\n"
                                     "항목 0  q1    k1    0.7311  (기본)\n") != NULL,
                  "%s", batch.body);
    api_response_deinit(&batch);

    struct api_response pit = ask_as("/v1/attention", "text/plain",
                                     "{" SEED000 ",\"pitfall\":\"column_softmax\"}");
    ck_assert_int_eq(pit.status, 200);
    ck_assert_ptr_nonnull(strstr(pit.body, "\n주의할 점  column_softmax\n"));
    ck_assert_ptr_nonnull(strstr(pit.body, "\n  weights (틀린 계산)\n"));
    api_response_deinit(&pit);

    struct api_response bad = ask("POST", "/v1/attention", "ko", NULL,
                                  "{" SEED000 ",\"explain\":{\"row\":5}}");
    ck_assert_int_eq(bad.status, 422);
    doc = parse(&bad);
    json_t *e = json_array_get(json_object_get(doc, "errors"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e, "pointer")), "/explain/row");
    ck_assert_str_eq(json_string_value(json_object_get(e, "hint")),
                     "q 의 2 개 행: 행 0 부터 1 중 하나를 explain 하세요");
    json_decref(doc);
    api_response_deinit(&bad);
}
END_TEST

/* The server's own problems between requests are not in the last request's language;
   the 413 it asks api/ for is in its request's. */
START_TEST(test_language_does_not_leak_between_requests)
{
    struct api_response ko = ask("POST", "/v1/attention", "ko", NULL, "{\"q\":1}");
    ck_assert_int_eq(ko.status, 422);
    api_response_deinit(&ko);
    ck_assert(api_lang_current() == API_LANG_EN);
    struct api_response own = { 0 };
    api_respond_server_reason(&own, NULL, API_BAD_REQUEST, "two Host headers");
    json_t *doc = parse(&own);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "title")),
                     "The request is malformed HTTP");
    json_decref(doc);
    api_response_deinit(&own);

    struct api_context ctx = test_context();
    struct api_request big = { .method = "POST", .path = "/v1/attention",
                               .accept_language = "ko-KR" };
    struct api_response res = { 0 };
    api_respond_too_large_for(&ctx, &big, &res);
    ck_assert_int_eq(res.status, 413);
    ck_assert_str_eq(header(&res, "Content-Language"), "ko");
    doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "title")), "본문이 너무 큽니다");
    json_decref(doc);
    api_response_deinit(&res);
    ck_assert(api_lang_current() == API_LANG_EN);
}
END_TEST

/* ---- particles after a value: the combined form, resolved once the value is in ---- */

static const struct {
    const char *before, *after;
} particle_cases[] = {
    { "q 은(는) 열이 4 개", "q 는 열이 4 개" },          /* 큐: a letter's name, open */
    { "d_model 은(는) heads 3 (으)로", "d_model 은 heads 3 으로" }, /* 모델 ㄹ; 삼 closed */
    { "scale 은(는) 0 보다", "scale 은 0 보다" },         /* 스케일: ㄹ */
    { "mask 이(가) 전치된", "mask 가 전치된" },           /* 마스크: open */
    { "kv_heads 2 을(를) 나누어", "kv_heads 2 를 나누어" }, /* 이: open */
    { "d_k = 10 을(를) 곱해", "d_k = 10 을 곱해" },       /* 십: closed */
    { "heads 7 (으)로", "heads 7 로" },                  /* 칠: ㄹ takes 로 */
    { "0.1247 을(를) 가져가고", "0.1247 을 가져가고" },   /* 칠 */
    { "e^1000 은(는) 계산", "e^1000 은 계산" },          /* 천 */
    { "n 이(가) 있어야", "n 이 있어야" },                  /* 엔: closed */
    { "r 과(와) l 과(와) q 과(와)", "r 과 l 과 q 와" },  /* 알, 엘, 큐 */
    { "[1, 0] 을(를) 뜻했나요", "[1, 0] 을 뜻했나요" },   /* 영, behind a bracket */
    { "\"사과\" 을(를) 뜻했나요", "\"사과\" 를 뜻했나요" }, /* a label in Hangul, quoted */
    { "과일 이(가) 이깁니다", "과일 이 이깁니다" },        /* 일: closed */
    { "사람 과(와) 사과", "사람 과 사과" },              /* 람: closed */
    { "서울 (으)로", "서울 로" },                        /* 울: ㄹ takes 로 */
    { "\"dropouts\" 을(를) 뜻했나요", "\"dropouts\" 을(를) 뜻했나요" }, /* not known: kept */
    { "응답 (200 OK) 은(는)", "응답 (200 OK) 은(는)" },   /* OK: two letters, unknown */
    { "softmax(masked, axis=-1)", "softmax(masked, axis=-1)" }, /* English: untouched */
    { "은(는) 앞에 아무것도", "은(는) 앞에 아무것도" },    /* nothing before it */
};

START_TEST(test_particles_fit_the_value)
{
    char text[128];
    snprintf(text, sizeof text, "%s", particle_cases[_i].before);
    api_ko_particles(text);
    ck_assert_str_eq(text, particle_cases[_i].after);
}
END_TEST

/*
 * A Korean row never fixes the particle right after a value it cannot know: it writes
 * the combined form, which the value then resolves (one wrong form per unlucky value
 * otherwise: "scale 는", "3 를").
 */
/* Whether q, just after a value, starts with a particle in a fixed form. */
static const char *fixed_particle(const char *q)
{
    static const char *const bare[] = { "으로", "은", "는", "이", "가", "을", "를", "와", "과",
                                        "로" };
    while (*q != '\0' && strchr("\"')]", *q) != NULL)
        q++;
    if (*q == ' ')
        q++;
    for (size_t b = 0; b < sizeof bare / sizeof bare[0]; b++) {
        size_t n = strlen(bare[b]);
        /* A word ends at a space, a mark or the end (strchr finds the NUL too). */
        if (strncmp(q, bare[b], n) == 0 && strchr(" .,:;)\n", q[n]) != NULL)
            return bare[b];
    }
    return NULL;
}

/* The end of the value at p: a printf conversion or a "{n}" hole; NULL if p starts neither. */
static const char *value_end(const char *p)
{
    if (p[0] == '{')
        return p[1] >= '1' && p[1] <= '9' && p[2] == '}' ? p + 3 : NULL;
    const char *q = p + 1;
    while (*q != '\0' && strchr("-+ #0123456789.", *q) != NULL)
        q++;
    const char *letters = q;
    while (*q >= 'a' && *q <= 'z')
        q++;
    return q == letters ? NULL : q; /* "%00" in prose: not a conversion */
}

START_TEST(test_no_fixed_particle_after_a_value)
{
    for (size_t i = 0; i < api_messages_ko_count; i++) {
        const char *t = api_messages_ko[i].text;
        for (const char *p = t; (p = strpbrk(p, "%{")) != NULL; p++) {
            if (p[0] == '%' && p[1] == '%') {
                p++; /* a percent sign, not a value */
                continue;
            }
            const char *end = value_end(p);
            const char *fixed = end != NULL ? fixed_particle(end) : NULL;
            ck_assert_msg(fixed == NULL,
                          "Korean for \"%s\" fixes %s after a value: write the combined "
                          "form (은(는), 이(가), 을(를), 과(와), (으)로)",
                          api_messages_ko[i].en, fixed);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lang");
    TCase *tables = tcase_create("Tables");
    tcase_add_loop_test(tables, test_every_message_in_korean, 0, (int)api_messages_en_count);
    tcase_add_test(tables, test_no_stale_or_repeated_korean);
    tcase_add_loop_test(tables, test_every_problem_type_in_korean, 0, API_PROBLEM_COUNT);
    tcase_add_test(tables, test_unknown_message_falls_back);
    tcase_add_loop_test(tables, test_particles_fit_the_value, 0,
                        sizeof particle_cases / sizeof particle_cases[0]);
    tcase_add_test(tables, test_no_fixed_particle_after_a_value);
    suite_add_tcase(s, tables);
    TCase *negotiation = tcase_create("Negotiation");
    tcase_add_loop_test(negotiation, test_language_choice, 0,
                        sizeof choices / sizeof choices[0]);
    suite_add_tcase(s, negotiation);
    TCase *answers = tcase_create("Answers");
    tcase_add_test(answers, test_unknown_lang_parameter);
    tcase_add_test(answers, test_korean_problem);
    tcase_add_test(answers, test_too_large_in_korean);
    tcase_add_test(answers, test_korean_shape_hint);
    tcase_add_test(answers, test_korean_warning);
    tcase_add_test(answers, test_korean_text_and_svg);
    tcase_add_test(answers, test_korean_teaching);
    tcase_add_test(answers, test_language_does_not_leak_between_requests);
    tcase_add_loop_test(answers, test_problem_pages_in_both_languages, 0, API_PROBLEM_COUNT);
    suite_add_tcase(s, answers);
    return run_api_suite(s);
}
