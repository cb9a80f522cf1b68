/*
 * tests/unit/check_framing.c — server/net/framing.c from tables: RFC 9112's rules for a
 * request's head, over header lists laid out as libmicrohttpd 0.9.75 lays them out,
 * and the request target's checks.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdlib.h>
#include <string.h>

#include "server/net/framing.h"

#define MAX_FIELDS 8

/*
 * A head as libmicrohttpd leaves it: each "Name: value" line becomes name, NUL,
 * the whitespace after the colon, value, NUL, one after the other in one buffer. A line
 * written "~Name: value" is one libmicrohttpd folded: its name moved past the lines,
 * further on in the buffer (where its pool puts the continued name).
 */
struct head {
    char buf[8192];
    struct srv_field fields[MAX_FIELDS];
    size_t n;
};

static void head_build(struct head *h, const char *const *lines)
{
    memset(h, 0, sizeof *h);
    size_t at = 0, moved = sizeof h->buf / 2;
    for (h->n = 0; lines[h->n] != NULL; h->n++) {
        const char *line = lines[h->n];
        bool folded = line[0] == '~';
        line += folded;
        const char *colon = strchr(line, ':');
        ck_assert_ptr_nonnull(colon);
        size_t name_len = (size_t)(colon - line);
        const char *v = colon + 1;
        size_t ows = strspn(v, " \t");
        size_t value_len = strlen(v + ows);
        char *name = h->buf + at;
        memcpy(name, line, name_len);
        name[name_len] = '\0';
        memcpy(name + name_len + 1, v, ows + value_len + 1);
        char *value = name + name_len + 1 + ows;
        at += name_len + 1 + ows + value_len + 1;
        if (folded) {
            name = h->buf + moved;
            memcpy(name, line, name_len);
            name[name_len] = '\0';
            moved += name_len + 1;
        }
        struct srv_field f = {name, name_len, value, value_len};
        h->fields[h->n] = f;
    }
}

struct framing_case {
    const char *version;
    const char *lines[MAX_FIELDS];
    enum srv_framing_verdict want;
};

#define OK SRV_FRAMING_OK
#define BAD SRV_FRAMING_BAD_REQUEST
#define NOT_IMPL SRV_FRAMING_NOT_IMPLEMENTED

static const struct framing_case cases[] = {
    /* plain requests */
    {"HTTP/1.1", {"Host: t"}, OK},
    {"HTTP/1.1", {"Host: 127.0.0.1:8080", "Content-Length: 36"}, OK},
    {"HTTP/1.1", {"host: [::1]:8080", "transfer-encoding: chunked"}, OK},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding:  Chunked  "}, OK},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: , chunked"}, OK}, /* empty list elements */
    {"HTTP/1.1", {"Host:", "Content-Length: 0"}, OK},              /* an empty authority */
    {"HTTP/1.0", {NULL}, OK},
    {"HTTP/1.0", {"Content-Length: 2"}, OK},
    /* Host */
    {"HTTP/1.1", {NULL}, BAD},
    {"HTTP/1.1", {"Content-Length: 2"}, BAD},
    {"HTTP/1.1", {"Host: a", "Host: b"}, BAD},
    {"HTTP/1.1", {"Host: a", "host: a"}, BAD},
    {"HTTP/1.0", {"Host: a", "Host: b"}, BAD},
    {"HTTP/1.1", {"Host: a b"}, BAD},
    {"HTTP/1.1", {"Host: a/b"}, BAD},
    {"HTTP/1.1", {"Host: user@a"}, BAD},
    /* Content-Length */
    {"HTTP/1.1", {"Host: t", "Content-Length: 2", "Content-Length: 30"}, BAD},
    {"HTTP/1.1", {"Host: t", "Content-Length: 2", "Content-Length: 2"}, BAD},
    {"HTTP/1.1", {"Host: t", "Content-Length: 36, 36"}, BAD},
    {"HTTP/1.1", {"Host: t", "Content-Length: -1"}, BAD},
    {"HTTP/1.1", {"Host: t", "Content-Length: +36"}, BAD},
    {"HTTP/1.1", {"Host: t", "Content-Length: 0x24"}, BAD},
    {"HTTP/1.1", {"Host: t", "Content-Length:"}, BAD},
    /* Content-Length with Transfer-Encoding */
    {"HTTP/1.1", {"Host: t", "Content-Length: 40", "Transfer-Encoding: chunked"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: chunked", "Content-Length: 0"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: gzip", "Content-Length: 4"}, BAD},
    /* Transfer-Encoding */
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: identity"}, NOT_IMPL},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: gzip, chunked"}, NOT_IMPL},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: gzip", "Transfer-Encoding: chunked"}, NOT_IMPL},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: x-custom;q=1, chunked"}, NOT_IMPL},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: chunked, gzip"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: chunked, chunked"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: chunked;x=1"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: chu nked"}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: "}, BAD},
    {"HTTP/1.1", {"Host: t", "Transfer-Encoding: \"chunked\""}, BAD},
    {"HTTP/1.0", {"Transfer-Encoding: chunked"}, BAD},
    /* obs-fold and field names */
    {"HTTP/1.1", {"Host: t", "~X-AContent-Length: 2"}, BAD},
    {"HTTP/1.1", {"Host: t", "~X-Ac: b"}, BAD},
    {"HTTP/1.1", {"~Hostx: t"}, BAD},
    {"HTTP/1.1", {"Host: t", "X-A : b"}, BAD},
    {"HTTP/1.1", {"Host: t", ": b"}, BAD},
    {"HTTP/1.1", {"Host: t", "X\x01: b"}, BAD},
};

START_TEST(framing_table)
{
    const struct framing_case *c = &cases[_i];
    struct head h;
    head_build(&h, c->lines);
    struct srv_framing_result r = srv_framing_check(h.fields, h.n, c->version);
    ck_assert_msg(r.verdict == c->want, "case %d (%s, first line \"%s\"): verdict %d, want %d",
                  _i, c->version, c->lines[0] != NULL ? c->lines[0] : "", (int)r.verdict,
                  (int)c->want);
    if (c->want == OK)
        ck_assert_ptr_null(r.reason);
    else
        ck_assert(r.reason != NULL && strlen(r.reason) > 20);
}
END_TEST

START_TEST(order_of_lines_does_not_matter)
{
    const char *a[] = {"Content-Length: 4", "Host: t", "Transfer-Encoding: chunked", NULL};
    const char *b[] = {"Transfer-Encoding: chunked", "Content-Length: 4", "Host: t", NULL};
    struct head h;
    head_build(&h, a);
    ck_assert_int_eq(srv_framing_check(h.fields, h.n, "HTTP/1.1").verdict, BAD);
    head_build(&h, b);
    ck_assert_int_eq(srv_framing_check(h.fields, h.n, "HTTP/1.1").verdict, BAD);
}
END_TEST

START_TEST(the_reason_names_the_rule)
{
    const char *dup[] = {"Host: t", "Content-Length: 2", "Content-Length: 30", NULL};
    struct head h;
    head_build(&h, dup);
    ck_assert_ptr_nonnull(strstr(srv_framing_check(h.fields, h.n, "HTTP/1.1").reason,
                                 "more than one Content-Length"));
    const char *fold[] = {"Host: t", "~X-Ac: b", NULL};
    head_build(&h, fold);
    ck_assert_ptr_nonnull(strstr(srv_framing_check(h.fields, h.n, "HTTP/1.1").reason,
                                 "obs-fold"));
}
END_TEST

START_TEST(target_nul_and_query)
{
    struct srv_target t;
    srv_target_read("/healthz", &t);
    ck_assert(!t.has_nul && !t.query_too_long);
    ck_assert_uint_eq(t.query_offset, 0);
    srv_target_read("/healthz%00anything", &t);
    ck_assert(t.has_nul);
    srv_target_read("/v1/shapes?n=%00", &t);
    ck_assert(t.has_nul);
    srv_target_read("/a%2500", &t); /* "%25" is a percent sign: "%2500" decodes to "%00" */
    ck_assert(!t.has_nul);
    srv_target_read("/v1/shapes?n=2&d_model=4&heads=1", &t);
    ck_assert(!t.query_too_long);
    ck_assert_uint_eq(t.query_offset, strlen("/v1/shapes?"));
}
END_TEST

/* "/?" then pairs "a=1" joined by '&': the query at its limits and one past them. */
static void target_of_pairs(size_t pairs, struct srv_target *t)
{
    size_t cap = 2 + pairs * 4 + 1;
    char *s = malloc(cap);
    ck_assert_ptr_nonnull(s);
    size_t at = 0;
    s[at++] = '/';
    s[at++] = '?';
    for (size_t i = 0; i < pairs; i++) {
        if (i > 0)
            s[at++] = '&';
        memcpy(s + at, "a=1", 3);
        at += 3;
    }
    s[at] = '\0';
    srv_target_read(s, t);
    free(s);
}

START_TEST(target_query_limits)
{
    struct srv_target t;
    target_of_pairs(SRV_TARGET_MAX_PARAMS, &t);
    ck_assert(!t.query_too_long);
    target_of_pairs(SRV_TARGET_MAX_PARAMS + 1, &t);
    ck_assert(t.query_too_long);
    target_of_pairs(5000, &t);
    ck_assert(t.query_too_long);
    static char long_query[SRV_TARGET_MAX_QUERY + 16];
    memcpy(long_query, "/?x=", 4);
    memset(long_query + 4, 'a', SRV_TARGET_MAX_QUERY - 1); /* x= and the a's: one byte too many */
    srv_target_read(long_query, &t);
    ck_assert(t.query_too_long);
    long_query[4 + SRV_TARGET_MAX_QUERY - 2] = '\0'; /* exactly the limit */
    srv_target_read(long_query, &t);
    ck_assert(!t.query_too_long);
}
END_TEST

START_TEST(target_absolute_form)
{
    ck_assert_str_eq(srv_target_path("/healthz"), "/healthz");
    ck_assert_str_eq(srv_target_path("http://127.0.0.1:8080/healthz"), "/healthz");
    ck_assert_str_eq(srv_target_path("HTTPS://example.com/v1/attention"), "/v1/attention");
    ck_assert_str_eq(srv_target_path("http://example.com"), "/");
    ck_assert_str_eq(srv_target_path("*"), "*");
    ck_assert_str_eq(srv_target_path("ftp://x/healthz"), "ftp://x/healthz");
    ck_assert_str_eq(srv_target_path("http:/healthz"), "http:/healthz");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("framing");
    TCase *core = tcase_create("Core");
    tcase_add_loop_test(core, framing_table, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(core, order_of_lines_does_not_matter);
    tcase_add_test(core, the_reason_names_the_rule);
    suite_add_tcase(s, core);
    TCase *target = tcase_create("Target");
    tcase_add_test(target, target_nul_and_query);
    tcase_add_test(target, target_query_limits);
    tcase_add_test(target, target_absolute_form);
    suite_add_tcase(s, target);
    return suite_run(s);
}
