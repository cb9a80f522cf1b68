/*
 * tests/unit/check_cors.c — server/net/cors.c without a server: which origin a response
 * allows, and the Vary list the server writes, with api/'s own Vary of any length
 * after its own (a 48-byte copy of it once cut a longer one short, and the
 * connection was dropped when the cut value matched no header).
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdio.h>
#include <string.h>

#include "server/net/cors.h"

START_TEST(origins_compare_exactly)
{
    struct srv_config cfg = { 0 };
    cfg.cors_origins[0] = "https://a.example";
    cfg.n_cors_origins = 1;
    struct srv_cors c = srv_cors_decide(&cfg, "https://a.example");
    ck_assert_str_eq(c.allow_origin, "https://a.example");
    ck_assert(c.vary_origin);
    ck_assert_ptr_null(srv_cors_decide(&cfg, "https://a.example.evil").allow_origin);
    ck_assert_ptr_null(srv_cors_decide(&cfg, NULL).allow_origin);
    cfg.cors_any = true;
    c = srv_cors_decide(&cfg, "https://b.example");
    ck_assert_str_eq(c.allow_origin, "*");
    ck_assert(!c.vary_origin);
}
END_TEST

START_TEST(vary_lists_the_server_first_then_api)
{
    struct srv_cors listed = { "https://a.example", true }, any = { "*", false };
    char out[256];
    ck_assert_uint_eq(srv_cors_vary(out, sizeof out, &any, true, NULL), 15);
    ck_assert_str_eq(out, "Accept-Encoding");
    ck_assert_uint_eq(srv_cors_vary(out, sizeof out, &listed, false, NULL), 6);
    ck_assert_str_eq(out, "Origin");
    srv_cors_vary(out, sizeof out, &listed, true, "Accept-Language");
    ck_assert_str_eq(out, "Origin, Accept-Encoding, Accept-Language");
    /* nothing of the server's own: api/'s Vary stands as it is */
    ck_assert_uint_eq(srv_cors_vary(out, sizeof out, &any, false, "Accept-Language"), 0);
}
END_TEST

START_TEST(a_long_api_vary_is_kept_whole)
{
    struct srv_cors listed = { "https://a.example", true };
    char api[201], want[256], out[256];
    memset(api, 'x', 200);
    api[200] = '\0';
    snprintf(want, sizeof want, "Origin, Accept-Encoding, %s", api);
    size_t need = srv_cors_vary(NULL, 0, &listed, true, api);
    ck_assert_uint_eq(need, strlen(want));
    ck_assert_uint_eq(srv_cors_vary(out, need + 1, &listed, true, api), need);
    ck_assert_str_eq(out, want);
    /* cut as snprintf cuts, the whole length still reported */
    ck_assert_uint_eq(srv_cors_vary(out, 10, &listed, true, api), need);
    ck_assert_str_eq(out, "Origin, A");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cors");
    TCase *core = tcase_create("Core");
    tcase_add_test(core, origins_compare_exactly);
    tcase_add_test(core, vary_lists_the_server_first_then_api);
    tcase_add_test(core, a_long_api_vary_is_kept_whole);
    suite_add_tcase(s, core);
    return suite_run(s);
}
