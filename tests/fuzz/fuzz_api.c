/*
 * tests/fuzz/fuzz_api.c — libFuzzer harness for api/'s one entry point.
 *
 * The input is a request written like HTTP, so the fuzzer can invent every route,
 * method, query, content type and Accept header, and mutate bodies freely:
 *
 *     METHOD SP TARGET LF          e.g. "POST /v1/attention?format=text\n"
 *     (NAME ": " VALUE LF)*        Accept, Accept-Language, Content-Type, Content-Length (declared),
 *                                  X-Max-Cells, X-Max-Body, X-Max-Batch, X-Not-Ready
 *     LF
 *     BODY                         any bytes, NUL included
 *
 * An input whose first byte is not 'A'..'Z' is a bare body for POST /v1/attention
 * (so the JSON seeds work as they are). Each request goes through api_precheck, as
 * the server sends it first, and then through api_handle.
 *
 * What must hold for every input, beyond "no crash, leak or undefined behaviour":
 * a known status (never 500), a content type, body_len matching the body, and every
 * JSON or problem+json body parses back as JSON; and the same request answered with
 * its matrices read as jansson nodes (api_json_packing_set) gets the same bytes.
 *
 * Not here: sockets (the server's own tests cover them), numbers (fuzz_numfmt.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api/api.h"
#include "api/json/read.h"
#include "api/json/test_hooks.h"

#define FUZZ_MAX_PARAMS 16
#define FUZZ_MAX_HEADERS 16
/*
 * The default cell limit of the fuzzer's context: small, so that one input cannot
 * ask for seconds of work and starve the search; X-Max-Cells can move it up to
 * FUZZ_CELLS_CAP.
 */
#define FUZZ_CELLS_DEFAULT 4096u
#define FUZZ_CELLS_CAP 65536u

static size_t parse_size(const char *s, size_t cap)
{
    unsigned long long n = strtoull(s, NULL, 10);
    return n > cap ? cap : (size_t)n;
}

/* Splits "a=1&b&c=" into params (strings point into q, which is modified). */
static size_t split_query(char *q, struct api_param *params)
{
    size_t n = 0;
    for (char *tok = q; tok != NULL && n < FUZZ_MAX_PARAMS;) {
        char *amp = strchr(tok, '&');
        if (amp != NULL)
            *amp++ = '\0';
        char *eq = strchr(tok, '=');
        if (eq != NULL)
            *eq++ = '\0';
        params[n].name = tok;
        params[n].value = eq != NULL ? eq : "";
        n++;
        tok = amp;
    }
    return n;
}

static void check_response(const struct api_response *res, const char *where)
{
    static const int known[] = { 200, 204, 400, 404, 405, 406, 413, 415, 422, 503 };
    int ok = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        ok |= res->status == known[i];
    if (!ok || res->content_type == NULL) {
        fprintf(stderr, "%s: status %d, content type %s\n", where, res->status,
                res->content_type ? res->content_type : "(none)");
        abort();
    }
    if (res->body == NULL) {
        /* Only a 503 that could not even allocate its problem has no body. */
        if (res->status != 503 || res->body_len != 0)
            abort();
        return;
    }
    /* A V2 answer with binary tensors has NUL bytes of its own (fuzz_v2.c checks it). */
    if (strcmp(res->content_type, "application/octet-stream") != 0 &&
        memchr(res->body, '\0', res->body_len) != NULL)
        abort(); /* body_len counts less than what was written */
    if (strncmp(res->content_type, "application/json", 16) == 0 ||
        strcmp(res->content_type, "application/problem+json") == 0) {
        json_error_t e;
        json_t *doc = json_loadb(res->body, res->body_len, JSON_DECODE_ANY, &e);
        if (doc == NULL) {
            fprintf(stderr, "%s: status %d, body is not JSON (%s): %.*s\n", where, res->status,
                    e.text, (int)(res->body_len > 400 ? 400 : res->body_len), res->body);
            abort();
        }
        json_decref(doc);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* As the server starts: one BLAS thread, jansson allocating through api/. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    api_global_init();
    return 0;
}

/* A request and its context, decoded from one input; head (owned) holds its strings. */
struct fuzz_request {
    struct api_context ctx;
    struct api_request req;
    struct api_param params[FUZZ_MAX_PARAMS];
    long long declared;
    char *head;
};

/* "METHOD SP TARGET": the method, the path and the query's parameters, cut in place. */
static void read_request_line(struct fuzz_request *f, char *line)
{
    char *sp = strchr(line, ' ');
    f->req.method = line;
    f->req.path = "";
    if (sp == NULL)
        return;
    *sp = '\0';
    char *target = sp + 1, *qm = strchr(target, '?');
    if (qm != NULL) {
        *qm = '\0';
        f->req.n_params = split_query(qm + 1, f->params);
        f->req.params = f->params;
    }
    f->req.path = target;
}

/* One "NAME: VALUE" line: the headers api/ reads, and the harness's own X- settings. */
static void read_header(struct fuzz_request *f, char *line)
{
    char *colon = strstr(line, ": ");
    if (colon == NULL)
        return;
    *colon = '\0';
    const char *value = colon + 2;
    if (strcasecmp(line, "Accept") == 0)
        f->req.accept = value;
    else if (strcasecmp(line, "Accept-Language") == 0)
        f->req.accept_language = value; /* every message in Korean too */
    else if (strcasecmp(line, "Content-Type") == 0)
        f->req.content_type = value;
    else if (strcasecmp(line, "Content-Length") == 0)
        f->declared = strtoll(value, NULL, 10);
    else if (strcasecmp(line, "X-Max-Cells") == 0)
        f->ctx.limits.max_cells = parse_size(value, FUZZ_CELLS_CAP);
    else if (strcasecmp(line, "X-Max-Body") == 0)
        f->ctx.limits.max_body = parse_size(value, (size_t)1 << 24);
    else if (strcasecmp(line, "X-Max-Batch") == 0)
        f->ctx.limits.max_batch = parse_size(value, 64);
    else if (strcasecmp(line, "X-Not-Ready") == 0)
        f->ctx.ready = false;
}

/* The HTTP-like form (see the top of this file); false when out of memory. */
static bool read_http_form(struct fuzz_request *f, const uint8_t *data, size_t size)
{
    /* The head is copied (NUL-terminated) so its strings can be cut in place. */
    const uint8_t *blank = NULL;
    for (size_t i = 0; i + 1 < size; i++)
        if (data[i] == '\n' && data[i + 1] == '\n') {
            blank = data + i;
            break;
        }
    size_t head_len = blank != NULL ? (size_t)(blank - data) : size;
    f->head = malloc(head_len + 1);
    if (f->head == NULL)
        return false;
    memcpy(f->head, data, head_len);
    f->head[head_len] = '\0';
    f->req.body = blank != NULL ? (const char *)blank + 2 : NULL;
    f->req.body_len = blank != NULL ? size - head_len - 2 : 0;
    f->req.content_type = NULL;
    f->declared = -1;

    char *line = f->head, *next = strchr(line, '\n');
    if (next != NULL)
        *next++ = '\0';
    read_request_line(f, line);
    for (int h = 0; next != NULL && h < FUZZ_MAX_HEADERS; h++) {
        line = next;
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        read_header(f, line);
    }
    return true;
}

/* The same request with its matrices read as jansson nodes: the same answer. */
static void check_same_as_nodes(const struct fuzz_request *f, const struct api_response *res)
{
    struct api_response nodes = { 0 };
    api_json_packing_set(false);
    api_handle(&f->ctx, &f->req, &nodes);
    api_json_packing_set(true);
    if (nodes.status != res->status || nodes.body_len != res->body_len ||
        (res->body_len > 0 && memcmp(nodes.body, res->body, res->body_len) != 0)) {
        fprintf(stderr, "matrices read into numbers and as nodes answer differently: %d, %d\n",
                res->status, nodes.status);
        abort();
    }
    api_response_deinit(&nodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_request f; /* the fuzzer runs one input at a time */
    memset(&f, 0, sizeof f);
    f.ctx = (struct api_context){
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    f.ctx.limits.max_cells = FUZZ_CELLS_DEFAULT;
    f.ctx.limits.max_work = (size_t)FUZZ_CELLS_DEFAULT << 8; /* the arithmetic, as small */
    f.req = (struct api_request){ "POST", "/v1/attention", NULL, 0, NULL, "application/json",
                                  (const char *)data, size, NULL, NULL };
    f.declared = (long long)size;
    if (size > 0 && data[0] >= 'A' && data[0] <= 'Z' && !read_http_form(&f, data, size))
        return 0;

    struct api_response res = { 0 };
    if (api_precheck(&f.ctx, &f.req, f.declared, &res))
        check_response(&res, "api_precheck");
    api_response_deinit(&res);
    api_handle(&f.ctx, &f.req, &res);
    check_response(&res, "api_handle");
    check_same_as_nodes(&f, &res);
    api_response_deinit(&res);
    free(f.head);
    return 0;
}
