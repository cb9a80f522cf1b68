/*
 * tests/unit/api_fixture.c — the helpers of api_fixture.h.
 */
#include "tests/unit/api_fixture.h"
#include "tests/unit/suite_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct api_context test_context(void)
{
    struct api_context ctx = {
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    return ctx;
}

/* The answer to one request; the caller frees it with api_response_deinit. */
struct api_response call_full(const struct api_context *ctx, const char *method,
                              const char *path, const char *accept, const char *ctype,
                              const char *body, const struct api_param *params,
                              size_t n_params)
{
    struct api_request req = { method, path, params, n_params, accept, ctype,
                               body, body ? strlen(body) : 0, NULL, NULL };
    struct api_response res = { 0 };
    api_handle(ctx, &req, &res);
    return res;
}

struct api_response call(const char *method, const char *path, const char *body)
{
    struct api_context ctx = test_context();
    return call_full(&ctx, method, path, NULL, "application/json", body, NULL, 0);
}

json_t *parse(const struct api_response *res)
{
    json_error_t e;
    json_t *doc = json_loadb(res->body, res->body_len, 0, &e);
    ck_assert_msg(doc != NULL, "response is not JSON: %s (%.*s)", e.text, (int)res->body_len,
                  res->body);
    return doc;
}

/* A number at a path like "weights/1/0" inside doc. */
double num_at(json_t *doc, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = doc;
    for (char *tok = strtok(buf, "/"); tok != NULL; tok = strtok(NULL, "/")) {
        if (json_is_array(node))
            node = json_array_get(node, strtoul(tok, NULL, 10));
        else
            node = json_object_get(node, tok);
        ck_assert_msg(node != NULL, "no %s in the response", path);
    }
    ck_assert_msg(json_is_number(node), "%s is not a number", path);
    return json_number_value(node);
}

void assert_close(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 + 1e-12 * fabs(want), "%s: got %.17g, want %.17g",
                  what, got, want);
}

/* A deterministic stream of test inputs (splitmix64). */
uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* One number token of JSON's grammar: printed doubles and arbitrary digit strings. */
void random_number_token(uint64_t *state, char *out, size_t size)
{
    uint64_t r = next_random(state);
    double x;
    switch (r % 4) {
    case 0: /* any finite double, shortest-ish and full precision */
        do {
            uint64_t bits = next_random(state);
            memcpy(&x, &bits, sizeof x);
        } while (!isfinite(x));
        snprintf(out, size, (r >> 8) % 2 ? "%.17g" : "%.16g", x);
        break;
    case 1: /* values like attention's: |x| < 10, 15 to 17 digits */
        x = ((double)(next_random(state) >> 11) / 9007199254740992.0 - 0.5) * 20.0;
        snprintf(out, size, "%.*g", 15 + (int)((r >> 8) % 3), x);
        break;
    default: { /* digit strings of 1 to 40 digits, a point anywhere, any exponent */
        size_t n = 0, digits = 1 + (r >> 8) % 40, point = (r >> 16) % (digits + 1);
        if ((r >> 24) & 1)
            out[n++] = '-';
        for (size_t i = 0; i < digits; i++) {
            if (i == point && i > 0)
                out[n++] = '.';
            out[n++] = (char)('0' + next_random(state) % 10);
        }
        if (out[(out[0] == '-') ? 1 : 0] == '0' && digits > 1 && point != 1)
            out[(out[0] == '-') ? 1 : 0] = '7'; /* JSON has no leading zeros */
        if ((r >> 32) & 1)
            n += (size_t)snprintf(out + n, size - n, "e%d", (int)((r >> 40) % 700) - 350);
        out[n] = '\0';
    }
    }
}

int run_api_suite(Suite *s)
{
    api_global_init(); /* as the server: one BLAS thread, jansson through api/'s allocator */
    return suite_run(s);
}
