/*
 * tests/unit/check_request.c — the request readers (api/request/): JSON pointers for
 * fields, and matrices read straight into numbers (api/request/matrix.c with
 * api/json/read.c's packing) against the same bodies read as jansson nodes, over
 * api_handle.
 *
 * Suites: Fields (api_field_pointer), Packed matrices (every endpoint that takes
 * matrices, good and bad bodies: the same answers byte for byte).
 *
 * Not here: the table of bad attention requests (check_attention.c), the reader's own
 * records of packed matrices (check_json_read.c).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "api/json/read.h"
#include "api/json/test_hooks.h"
#include "api/request/fields.h"
#include "tests/unit/api_fixture.h"

/* api_field_pointer writes what snprintf("%s/%s") would, cut the same way. */
START_TEST(test_field_pointer_is_snprintf)
{
    static const char *const prefixes[] = { "", "/items/2", "/heads/11/inputs" };
    static const char *const fields[] = { "q", "mask_semantics", "" };
    for (size_t p = 0; p < 3; p++)
        for (size_t f = 0; f < 3; f++)
            for (size_t size = 1; size <= 32; size++) {
                char got[32], want[32];
                memset(got, '#', sizeof got);
                memset(want, '#', sizeof want);
                api_field_pointer(got, size, prefixes[p], fields[f]);
                snprintf(want, size, "%s/%s", prefixes[p], fields[f]);
                ck_assert_msg(memcmp(got, want, sizeof got) == 0, "%s + %s in %zu bytes: %.*s",
                              prefixes[p], fields[f], size, (int)size, got);
            }
}
END_TEST

/*
 * Matrices read straight into numbers (api_json_read_body) against the same bodies
 * read as jansson nodes: byte for byte the same answers, good and bad, on every
 * endpoint that takes matrices, in JSON and as text; and the good ones were packed.
 */
static const struct {
    const char *path, *accept, *body;
    size_t max_cells; /* 0: the default */
} packed_bodies[] = {
    { "/v1/attention", NULL, "{" SEED000 "}", 0 },
    { "/v1/attention", "text/plain", "{" SEED000 "}", 0 },
    { "/v1/attention", NULL, "{ \"q\" : [ [ 1 , -0 ] ,\n[ 0.5e1,-2E-1 ] ] , \"k\":[[1,0],[0,1],[3,3]],"
      "\"v\":[[1],[2],[123456789012345678901]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],"
      "\"mask\":[[1,0]],\"bias\":[[0.5,-1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[1,2]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[0.5,1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[true,1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[1,0]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0],[1]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0],[1,0,2]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,\"0\"]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,null]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,[0]]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,1e400]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,01]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2,]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2]],\"k\":[[1,0]],\"v\":[[1]]", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2]],\"k\":[[1,0]],\"v\":[[1]],\"q\":[[1,2]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2],[3,4]],\"k\":[[1,0]],\"v\":[[1]]}", 3 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[1]],\"include\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[1]],"
      "\"labels\":{\"queries\":[[1]]}}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[1]],\"extra\":[[1]]}", 0 },
    { "/v1/attention/batch", NULL, "{\"items\":[{" SEED000 "},{\"q\":[[1,0]],\"k\":[[1,0]],"
      "\"v\":[[1,2],[3]]},[[1]]]}", 0 },
    { "/v1/multihead", NULL, "{\"heads\":1,\"x\":[[1,2],[3,4]],\"w_q\":[[1,0],[0,1]],"
      "\"w_k\":[[1,0],[0,1]],\"w_v\":[[1,0],[0,1]],\"w_o\":[[1,0],[0,1]]}", 0 },
    { "/v1/multihead", NULL, "{\"heads\":1,\"x\":[[1,2],[3,4]],\"random\":{\"seed\":5},"
      "\"include\":[\"x\"]}", 0 },
};

START_TEST(test_packed_matrices_same_answers)
{
    struct api_context ctx = test_context();
    if (packed_bodies[_i].max_cells != 0)
        ctx.limits.max_cells = packed_bodies[_i].max_cells;
    const char *path = packed_bodies[_i].path, *accept = packed_bodies[_i].accept;
    const char *body = packed_bodies[_i].body;
    api_json_packing_set(false);
    unsigned long before = api_json_matrices_packed();
    struct api_response nodes = call_full(&ctx, "POST", path, accept, "application/json", body,
                                          NULL, 0);
    ck_assert_uint_eq(api_json_matrices_packed(), before);
    api_json_packing_set(true);
    struct api_response packed = call_full(&ctx, "POST", path, accept, "application/json", body,
                                           NULL, 0);
    ck_assert_int_eq(packed.status, nodes.status);
    ck_assert_msg(packed.body_len == nodes.body_len &&
                      memcmp(packed.body, nodes.body, nodes.body_len) == 0,
                  "%s %s: packed %.*s\nnodes %.*s", path, body, (int)packed.body_len,
                  packed.body, (int)nodes.body_len, nodes.body);
    if (_i == 0) /* seed 000's Q, K and V */
        ck_assert_uint_eq(api_json_matrices_packed(), before + 3);
    api_response_deinit(&nodes);
    api_response_deinit(&packed);
}
END_TEST

static Suite *request_suite(void)
{
    Suite *s = suite_create("request");

    TCase *fields = tcase_create("Fields");
    tcase_add_test(fields, test_field_pointer_is_snprintf);
    suite_add_tcase(s, fields);

    TCase *packed = tcase_create("Packed matrices");
    tcase_add_loop_test(packed, test_packed_matrices_same_answers, 0, sizeof packed_bodies / sizeof packed_bodies[0]);
    suite_add_tcase(s, packed);
    return s;
}

int main(void)
{
    return run_api_suite(request_suite());
}
