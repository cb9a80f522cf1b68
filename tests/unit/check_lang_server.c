/*
 * tests/unit/check_lang_server.c — the words api/ says for others, in the request's
 * language: the server's own problems (api/http/server_problem.h: framing, codings,
 * refusals, the memory budget), and the JSON reader's description of a body it cannot
 * read (api/json/read.h's sentence with holes, said by api/request/body.c).
 *
 * Suites: Server, Reader.
 *
 * Not here: the tables' completeness and the language choice (check_lang.c); the same
 * answers on the wire (tests/http/server_lang.test.mjs, tests/http/reader_lang.test.mjs).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "api/http/server_problem.h"
#include "api/i18n/lang.h"
#include "tests/unit/api_fixture.h"

static const char *header(const struct api_response *res, const char *name)
{
    for (size_t i = 0; i < res->n_headers; i++)
        if (strcmp(res->headers[i].name, name) == 0)
            return res->headers[i].value;
    return NULL;
}

/* POST body to /v1/attention with ?lang=lang_param and Accept-Language (either NULL). */
static struct api_response ask(const char *lang_param, const char *accept_language,
                               const char *body)
{
    struct api_context ctx = test_context();
    struct api_param p = { "lang", lang_param };
    struct api_request req = { .method = "POST", .path = "/v1/attention",
                               .params = lang_param ? &p : NULL, .n_params = lang_param ? 1 : 0,
                               .content_type = "application/json", .body = body,
                               .body_len = strlen(body), .accept_language = accept_language };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    return res;
}

/* The server's own problems speak the request's language, and leave the thread English. */
START_TEST(test_server_problems_in_the_request_language)
{
    struct api_param ko_param = { "lang", "ko" };
    struct api_param fr_param = { "lang", "fr" };
    struct api_request by_header = { .method = "GET", .path = "/", .accept_language = "ko-KR" };
    struct api_request by_query = { .method = "GET", .path = "/", .params = &ko_param,
                                    .n_params = 1 };
    struct api_request unknown = { .method = "GET", .path = "/", .params = &fr_param,
                                   .n_params = 1, .accept_language = "ko" };
    const struct api_request *korean[] = { &by_header, &by_query };
    for (size_t i = 0; i < 2; i++) {
        struct api_response res = { 0 };
        api_respond_server_problem(&res, korean[i], API_URI_TOO_LONG, "the query has more "
                                   "than %d parameters or %d bytes: send the data in a POST "
                                   "body", 256, 16384);
        ck_assert_int_eq(res.status, 414);
        ck_assert_str_eq(header(&res, "Content-Language"), "ko");
        ck_assert_str_eq(header(&res, "Vary"), "Accept-Language");
        json_t *doc = parse(&res);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "title")), "쿼리가 너무 깁니다");
        ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")),
                         "쿼리 문자열의 매개변수가 256 개보다 많거나 16384 바이트보다 깁니다: "
                         "데이터는 POST 본문으로 보내세요");
        json_decref(doc);
        api_response_deinit(&res);
        ck_assert(api_lang_current() == API_LANG_EN);
    }
    /* A ?lang attnd lacks, and no request at all: English. */
    const struct api_request *english[] = { &unknown, NULL };
    for (size_t i = 0; i < 2; i++) {
        struct api_response res = { 0 };
        api_respond_server_reason(&res, english[i], API_UNAVAILABLE, "the server is shutting down");
        ck_assert_int_eq(res.status, 503);
        ck_assert_str_eq(header(&res, "Content-Language"), "en");
        ck_assert_str_eq(header(&res, "Retry-After"), "1");
        json_t *doc = parse(&res);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")),
                         "the server is shutting down");
        json_decref(doc);
        api_response_deinit(&res);
    }
    struct api_response res = { 0 };
    api_respond_server_reason(&res, &by_header, API_UNAVAILABLE, "the server is shutting down");
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")), "서버가 종료하는 중입니다");
    json_decref(doc);
    api_response_deinit(&res);
    /* The budget's 503 keeps its hint, in Korean. */
    api_respond_server_over_budget(&res, &by_header, 5000000);
    doc = parse(&res);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "detail")), "5.0 MB"));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "hint")),
                                 "요청에는 잘못이 없습니다"));
    json_decref(doc);
    api_response_deinit(&res);
    ck_assert(api_lang_current() == API_LANG_EN);
}
END_TEST

/* The JSON reader's own words inside a Korean invalid-json: each body, what the reader
   says of it in Korean, and in English (unchanged). */
static const struct {
    const char *body, *ko, *en;
} reader_words[] = {
    { "{\"q\": [[1, 0]", "여기에는 ',' 또는 ']' 만 올 수 있는데 본문의 끝 입니다",
      "',' or ']' expected, not the end of the body" },
    { "{\"q\": ", "값이 와야 하는데 본문의 끝 입니다", "a value expected, not the end of the body" },
    { "{\"q\": [[1, 0]], x}", "문자열 키가 와야 하는데 'x' 입니다", "a string key expected, not 'x'" },
    { "{\"q\" 1}", "키 뒤에 ':' 가 와야 하는데 '1' 입니다", "':' expected after a key, not '1'" },
    { "{\"q\": 1, \"q\": 2}", "객체에 같은 키가 두 번 있습니다: \"q\"", "duplicate object key \"q\"" },
    { "{\"q\": [[1e400]]}", "수가 표현 범위를 넘습니다: 배정밀도 실수에 담기지 않습니다",
      "number out of range: it does not fit in a double" },
    { "{\"q\": [[01]]}", "올바르지 않은 수입니다: 앞에 0 을 붙일 수 없습니다",
      "invalid number: no leading zeros" },
    { "{\"q\": -}", "올바르지 않은 수입니다: '-' 뒤에 숫자가 와야 합니다",
      "invalid number: a digit is expected after '-'" },
    { "{\"q\": 1.}", "올바르지 않은 수입니다: '.' 뒤에 숫자가 와야 합니다",
      "invalid number: a digit is expected after '.'" },
    { "{\"q\": 1e}", "올바르지 않은 수입니다: 지수에 숫자가 와야 합니다",
      "invalid number: a digit is expected in the exponent" },
    { "{\"q\": tru}", "올바르지 않은 리터럴입니다: true, false, null 가운데 하나가 와야 합니다",
      "invalid literal: true, false or null expected" },
    { "{\"q\": \"abc", "문자열이 닫히지 않았습니다", "unterminated string" },
    { "{\"q\": \"\x01\"}", "문자열에 제어 문자가 있습니다 (0x01): 이스케이프하세요",
      "control character 0x01 in string: escape it" },
    { "{\"q\": \"\\q\"}", "올바르지 않은 이스케이프입니다: 문자열 안의 '\\q'",
      "invalid escape '\\q' in string" },
    { "{\"q\": \"\\u12\"}", "\\u 이스케이프가 올바르지 않습니다: 16진수 네 자리가 와야 합니다",
      "invalid \\u escape: four hex digits expected" },
    { "{\"q\": \"\\uDC00\"}", "짝 없는 하위 서로게이트가 문자열에 있습니다: \\uDC00",
      "lone low surrogate \\uDC00 in string" },
    { "{\"q\": \"\\uD800x\"}", "상위 서로게이트 \\uD800 뒤에 짝이 되는 하위 서로게이트가 없습니다",
      "high surrogate \\uD800 without its low half" },
    { "{\"q\": \"\\u0000\"}", "문자열에는 \\u0000 을 쓸 수 없습니다",
      "\\u0000 is not allowed in strings" },
    { "{\"q\": \"\xff\"}", "문자열에 올바르지 않은 UTF-8 이 있습니다", "invalid UTF-8 in string" },
    { "{\"q\": 1}\x0c", "JSON 값 뒤에 남는 데이터가 있습니다: 바이트 0x0c",
      "extra data after the JSON value: byte 0x0c" },
    { "{\"q\": 1}]", "JSON 값 뒤에 남는 데이터가 있습니다: ']'",
      "extra data after the JSON value: ']'" },
};

/* detail is lead + words + " (줄 " (Korean) or " at line " (English) and the position. */
static void assert_reader_detail(const char *detail, const char *lead, const char *words,
                                 const char *tail)
{
    char want[512];
    snprintf(want, sizeof want, "%s%s%s", lead, words, tail);
    ck_assert_msg(strncmp(detail, want, strlen(want)) == 0, "\"%s\", not \"%s...\"", detail, want);
}

START_TEST(test_reader_words_in_korean)
{
    const char *body = reader_words[_i].body;
    struct api_response ko = ask(NULL, "ko", body);
    ck_assert_int_eq(ko.status, 400);
    json_t *doc = parse(&ko);
    assert_reader_detail(json_string_value(json_object_get(doc, "detail")),
                         "본문이 올바른 JSON 이 아닙니다: ", reader_words[_i].ko, " (줄 ");
    json_decref(doc);
    api_response_deinit(&ko);
    struct api_response en = ask(NULL, NULL, body);
    doc = parse(&en);
    assert_reader_detail(json_string_value(json_object_get(doc, "detail")),
                         "the body is not valid JSON: ", reader_words[_i].en, " at line ");
    json_decref(doc);
    api_response_deinit(&en);
}
END_TEST

/* Nesting past the limit names the limit, in Korean too. */
START_TEST(test_reader_depth_in_korean)
{
    char body[1100];
    memset(body, '[', 600);
    body[600] = '\0';
    struct api_response ko = ask("ko", NULL, body);
    json_t *doc = parse(&ko);
    assert_reader_detail(json_string_value(json_object_get(doc, "detail")),
                         "본문이 올바른 JSON 이 아닙니다: ", "중첩이 512 단계보다 깊습니다", " (줄 ");
    json_decref(doc);
    api_response_deinit(&ko);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lang_server");
    TCase *server = tcase_create("Server");
    tcase_add_test(server, test_server_problems_in_the_request_language);
    suite_add_tcase(s, server);
    TCase *reader = tcase_create("Reader");
    tcase_add_loop_test(reader, test_reader_words_in_korean, 0,
                        (int)(sizeof reader_words / sizeof reader_words[0]));
    tcase_add_test(reader, test_reader_depth_in_korean);
    suite_add_tcase(s, reader);
    return run_api_suite(s);
}
