/*
 * tests/fuzz/fuzz_explain.c — libFuzzer harness for `explain` (api/endpoints/teach/explain.c)
 * and `heatmap`:
 * its reader and both renderings, on /v1/attention and /v1/multihead; with the
 * attention's `pitfall` (api/endpoints/teach/pitfall.c) and softmax's inner steps.
 *
 * Input: one byte of flags (bit 0 multihead, bit 1 text page, bit 2 a mask that blocks
 * a row, bit 3 huge scores so that e^masked overflows, bits 4-5 a pitfall (none,
 * no_transpose, column_softmax, no_max_subtraction), bit 6 include row_max, shifted and
 * exp, bit 7 the bytes are the "heatmap" member's and the page is the SVG), one byte for
 * round (values past 15 mean none), then the bytes of the "explain" (or "heatmap")
 * member's JSON value, any bytes. The heatmap reader is api/request/heatmap.c.
 * Properties: no crash, leak or undefined behaviour; the answer is 200, 400 or 422
 * (never 500 or 503 at these sizes) with a body of body_len bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    api_global_init();
    return 0;
}

enum { MAX_VALUE = 2048 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size - 2 > MAX_VALUE)
        return 0;
    unsigned flags = data[0], round = data[1];
    static char body[MAX_VALUE + 512];
    char extra[160] = "";
    static const char *const pitfalls[] = { "", ",\"pitfall\":\"no_transpose\"",
                                            ",\"pitfall\":\"column_softmax\"",
                                            ",\"pitfall\":\"no_max_subtraction\"" };
    if (round <= 15)
        snprintf(extra, sizeof extra, ",\"round\":%u", round);
    if (!(flags & 1)) { /* /v1/attention's own options */
        size_t used = strlen(extra);
        snprintf(extra + used, sizeof extra - used, "%s%s", pitfalls[(flags >> 4) & 3],
                 flags & 64 ? ",\"include\":[\"row_max\",\"shifted\",\"exp\"]" : "");
    }
    const char *member = flags & 128 ? "heatmap" : "explain";
    int n;
    if (flags & 1)
        n = snprintf(body, sizeof body, "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":5,\"n\":3,"
                     "\"d_model\":4}%s%s,\"%s\":", flags & 4 ? ",\"mask\":[[1,1,1],[0,0,0],"
                     "[1,0,1]]" : "", extra, member);
    else
        n = snprintf(body, sizeof body, "{\"q\":[[%s,0],[0,1]],\"k\":[[1,0],[2,1],[0.5,0.5]],"
                     "\"v\":[[1],[2],[3]],\"scale\":1%s%s,\"%s\":",
                     flags & 8 ? "800" : "0.5", flags & 4 ? ",\"mask\":[[1,0,1],[0,0,0]]" : "",
                     extra, member);
    memcpy(body + n, data + 2, size - 2);
    body[n + (int)(size - 2)] = '}';
    size_t len = (size_t)n + (size - 2) + 1;

    struct api_context ctx = { .limits = api_default_limits(), .ready = true,
                               .http_library = "0.9.75" };
    const struct api_param text = { "format", flags & 128 ? "svg" : "text" };
    struct api_request req = {
        .method = "POST", .path = flags & 1 ? "/v1/multihead" : "/v1/attention",
        .params = flags & 130 ? &text : NULL, .n_params = flags & 130 ? 1 : 0,
        .content_type = "application/json", .body = body, .body_len = len,
    };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    if ((res.status != 200 && res.status != 400 && res.status != 422) || res.body == NULL ||
        strlen(res.body) != res.body_len) {
        fprintf(stderr, "status %d for %.*s\n", res.status, (int)len, body);
        abort();
    }
    api_response_deinit(&res);
    return 0;
}
