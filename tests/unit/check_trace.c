/*
 * tests/unit/check_trace.c — following one request: server/net/trace.c's traceparent check
 * against the W3C Trace Context rules, every one-byte change of a valid header judged
 * by those rules written out separately; and api/http/instance.c's stamp, byte for byte.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdlib.h>
#include <string.h>

#include "api/http/instance.h"
#include "server/net/trace.h"

/* The example of the W3C Trace Context specification (section 3.2.2). */
static const char valid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

static const struct {
    const char *value;
    bool ok;
} cases[] = {
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
    {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", true},
    {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-ff", true},  /* flags: any hex */
    {"00-00000000000000000000000000000001-0000000000000001-00", true},  /* nonzero is enough */
    {"00-00000000000000000000000000000000-b7ad6b7169203331-01", false}, /* zero trace-id */
    {"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", false}, /* zero parent-id */
    {"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", false}, /* uppercase */
    {"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false}, /* version ff */
    {"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false}, /* not version 00 */
    {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", false},
    {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0", false},
    {"00-0af7651916cd43dd8448eb211c80319-cb7ad6b7169203331-01", false}, /* dash misplaced */
    {"", false},
    {NULL, false},
};

START_TEST(test_table)
{
    ck_assert_msg(srv_traceparent_valid(cases[_i].value) == cases[_i].ok, "%s",
                  cases[_i].value != NULL ? cases[_i].value : "(null)");
    char out[SRV_TRACEPARENT_BUF];
    srv_traceparent_pick(out, cases[_i].value);
    ck_assert_str_eq(out, cases[_i].ok ? cases[_i].value : "");
}
END_TEST

/* The rules, position by position: what byte c may stand at position at of a valid header. */
static bool byte_allowed(size_t at, int c)
{
    if (at == 0 || at == 1)
        return c == '0'; /* version 00 */
    if (at == 2 || at == 35 || at == 52)
        return c == '-';
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Every byte at every position of the example: valid exactly when the rules allow it
 * (the example's ids have other nonzero digits, so no single change makes one zero). */
START_TEST(test_every_one_byte_change)
{
    for (size_t at = 0; at < SRV_TRACEPARENT_LEN; at++)
        for (int c = 1; c < 256; c++) {
            char v[SRV_TRACEPARENT_BUF];
            memcpy(v, valid, sizeof v);
            v[at] = (char)c;
            ck_assert_msg(srv_traceparent_valid(v) == byte_allowed(at, c), "byte %d at %zu", c,
                          at);
        }
}
END_TEST

/* A response as problem.c leaves it: body malloc'd, no NUL counted in body_len. */
static struct api_response answer(int status, const char *content_type, const char *body)
{
    struct api_response res = {.status = status, .content_type = content_type};
    res.body_len = strlen(body);
    res.body = malloc(res.body_len + 1);
    ck_assert_ptr_nonnull(res.body);
    memcpy(res.body, body, res.body_len + 1);
    return res;
}

START_TEST(test_instance_on_problems)
{
    struct api_response p = answer(404, "application/problem+json",
                                   "{\"type\":\"/problems/not-found\",\"status\":404}");
    ck_assert(api_problem_stamp_instance(&p, "req-1"));
    const char want[] = "{\"type\":\"/problems/not-found\",\"status\":404,\"instance\":\"req-1\"}";
    ck_assert_uint_eq(p.body_len, strlen(want));
    ck_assert(memcmp(p.body, want, p.body_len) == 0);
    api_response_deinit(&p);

    struct api_response v2 = answer(400, "application/json", "{\"error\":\"x\",\"status\":400}");
    ck_assert(api_problem_stamp_instance(&v2, "0123456789abcdef"));
    const char want_v2[] = "{\"error\":\"x\",\"status\":400,\"instance\":\"0123456789abcdef\"}";
    ck_assert_uint_eq(v2.body_len, strlen(want_v2));
    ck_assert(memcmp(v2.body, want_v2, v2.body_len) == 0);
    api_response_deinit(&v2);
}
END_TEST

/* Every JSON answer ends with a newline: the member goes before the brace, the newline
   stays last, and the NUL after it. */
START_TEST(test_instance_before_the_newline)
{
    struct api_response p = answer(404, "application/problem+json",
                                   "{\"type\":\"/problems/not-found\",\"status\":404}\n");
    ck_assert(api_problem_stamp_instance(&p, "req-1"));
    const char want[] =
        "{\"type\":\"/problems/not-found\",\"status\":404,\"instance\":\"req-1\"}\n";
    ck_assert_uint_eq(p.body_len, strlen(want));
    ck_assert(memcmp(p.body, want, p.body_len + 1) == 0);
    api_response_deinit(&p);

    struct api_response v2 = answer(400, "application/json", "{\"error\":\"x\"}\n");
    ck_assert(api_problem_stamp_instance(&v2, "ab"));
    ck_assert_str_eq(v2.body, "{\"error\":\"x\",\"instance\":\"ab\"}\n");
    api_response_deinit(&v2);
}
END_TEST

START_TEST(test_instance_leaves_others)
{
    static const struct {
        int status;
        const char *type, *body, *id;
    } others[] = {
        {200, "application/json", "{\"error\":\"a field named so\"}", "r"}, /* not an error */
        {503, "application/json", "{\"ready\":false}", "r"},             /* V2 readiness */
        {404, "text/html", "<p>no</p>", "r"},
        {404, "application/problem+json", "{\"type\":\"/problems/not-found\"}", "a\"b"},
        {404, "application/problem+json", "{\"type\":\"/problems/not-found\"}", ""},
        {404, "application/problem+json", "{\"type\":\"/problems/not-found\"}", NULL},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        struct api_response r = answer(others[i].status, others[i].type, others[i].body);
        ck_assert(!api_problem_stamp_instance(&r, others[i].id));
        ck_assert_uint_eq(r.body_len, strlen(others[i].body));
        ck_assert(memcmp(r.body, others[i].body, r.body_len) == 0);
        api_response_deinit(&r);
    }
    struct api_response empty = {.status = 503, .content_type = "application/problem+json"};
    ck_assert(!api_problem_stamp_instance(&empty, "r")); /* the problem that found no memory */
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("Core");
    tcase_add_loop_test(tc, test_table, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, test_every_one_byte_change);
    tcase_add_test(tc, test_instance_on_problems);
    tcase_add_test(tc, test_instance_before_the_newline);
    suite_add_tcase(s, tc);
    TCase *errors = tcase_create("Errors");
    tcase_add_test(errors, test_instance_leaves_others);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return suite_run(trace_suite());
}
