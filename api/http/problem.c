/*
 * api/http/problem.c — the problem table and the problem+json writer.
 */
#include "api/http/problem.h"

#include "api/i18n/lang.h"
#include "api/i18n/particles.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct api_problem_info problems[API_PROBLEM_COUNT] = {
    [API_INVALID_JSON] = { "invalid-json", 400, API_N("The body is not valid JSON"),
        API_N("The request body could not be read as JSON. The detail gives the line, the "
        "column and the byte position where reading stopped. Duplicate keys in one "
        "object, an empty body and a leading byte-order mark are refused too, because "
        "each hides a mistake: send one UTF-8 JSON object with each field once.") },
    [API_NOT_FOUND] = { "not-found", 404, API_N("No such endpoint"),
        API_N("Nothing is served at this path. The detail lists the endpoints attnd has; "
        "the full description is at /openapi.yaml.") },
    [API_METHOD_NOT_ALLOWED] = { "method-not-allowed", 405, API_N("Method not allowed"),
        API_N("The path exists but not for this method. The Allow header lists the methods it "
        "takes: computations are POST with a JSON body, everything else is GET.") },
    [API_TOO_LARGE] = { "too-large", 413, API_N("The body is too large"),
        API_N("The request body is larger than this server accepts (its --max-body setting). "
        "Send smaller matrices, or ask the operator to raise the limit.") },
    [API_NOT_ACCEPTABLE] = { "not-acceptable", 406, API_N("No acceptable representation"),
        API_N("The Accept header (or ?format) asks for a media type this endpoint cannot "
        "produce. Leave Accept out, or send */*, to get JSON.") },
    [API_UNSUPPORTED_MEDIA_TYPE] = { "unsupported-media-type", 415, API_N("Unsupported Content-Type"),
        API_N("attnd reads request bodies as JSON when the Content-Type is application/json, "
        "text/plain, application/x-www-form-urlencoded (what curl -d sends) or absent. "
        "Any other type is refused rather than guessed at.") },
    [API_MISSING_FIELD] = { "missing-field", 422, API_N("A required field is missing"),
        API_N("A field the computation needs is absent (or null). Attention needs q (the "
        "queries), k (the keys) and v (the values): errors[].pointer names the one missing.") },
    [API_NOT_A_MATRIX] = { "not-a-matrix", 422, API_N("Not a matrix"),
        API_N("A field that holds a matrix is not a non-empty array of equal-length, non-empty "
        "arrays of numbers. A ragged row (one row shorter than the others) is the usual "
        "cause; errors[].pointer names the first row that does not fit.") },
    [API_NOT_A_NUMBER] = { "not-a-number", 422, API_N("Not a number"),
        API_N("A matrix cell is not a JSON number: a string such as \"1.5\", a boolean or null. "
        "Q, K and V are vectors of numbers, not words; write numbers without quotes.") },
    [API_SHAPE_MISMATCH] = { "shape-mismatch", 422, API_N("Shapes do not fit"),
        API_N("The matrices do not fit together. Q is (n_q, d_k), K is (n_k, d_k) and V is "
        "(n_k, d_v): Q @ K^T needs q and k to have the same number of columns, and "
        "weights @ V needs one row of v per key. A mask or bias is (n_q, n_k): one row "
        "per query, one column per key. The hint says when a matrix looks transposed.") },
    [API_UNKNOWN_FIELD] = { "unknown-field", 422, API_N("Unknown field"),
        API_N("The request has a field attnd does not know. Rather than ignore it (and compute "
        "something you did not ask for), attnd refuses it and names the nearest known field.") },
    [API_INVALID_VALUE] = { "invalid-value", 422, API_N("Invalid value"),
        API_N("A field has the wrong JSON type or a value outside its range: scale must be a "
        "number above 0, round an integer from 0 to 15, mask cells 0/1 or true/false, "
        "include a list of step names. The detail says what is allowed.") },
    [API_NUMERIC_OVERFLOW] = { "numeric-overflow", 422, API_N("A step overflowed"),
        API_N("Every input was a finite number, but a step produced infinity or NaN: products "
        "of very large numbers do not fit in a double. errors[] names the step and the "
        "cell [row, column]. Scale the inputs down; softmax itself never overflows, "
        "because attnd subtracts each row's maximum first.") },
    [API_LIMIT_EXCEEDED] = { "limit-exceeded", 422, API_N("Too much work for one request"),
        API_N("The request asks for a matrix with more cells than this server computes at once "
        "(its --max-cells setting; intermediates such as the n_q x n_k scores count), or "
        "would hold more memory at once than one request may (its --max-request-bytes "
        "setting: the body, every matrix computed and the answer, summed; a batch's items "
        "together), or more arithmetic than one request may (its --max-work setting: "
        "n_q·n_k·(d_k + d_v) multiply-adds, summed over heads and items). errors[].pointer "
        "names the field whose size drives the limit.") },
    [API_UNAVAILABLE] = { "unavailable", 503, API_N("Service unavailable"),
        API_N("The server is shutting down, could not get the memory this request needs, or "
        "holds as much as its memory budget allows (--max-memory: bodies being read, "
        "requests being computed and answers their clients have not read yet). Nothing is "
        "wrong with the request: retry it after the Retry-After seconds, on another "
        "replica if there is one.") },
    [API_INTERNAL] = { "internal", 500, API_N("Internal error"),
        API_N("attnd failed in a way that is its own fault, not the request's. Please report "
        "it with the X-Request-Id of the response.") },
    [API_BAD_REQUEST] = { "bad-request", 400, API_N("The request is malformed HTTP"),
        API_N("The request's head breaks a rule of HTTP/1.1 (RFC 9112) that keeps every server "
        "and proxy on the way reading it the same: two Content-Length headers, or one with "
        "Transfer-Encoding; a header line that starts with a space (obs-fold); no Host, or "
        "two; a NUL (%00) in the target. A proxy could read such a request differently "
        "from attnd, so attnd answers this and closes the connection: send the request "
        "again, written plainly, on a new connection.") },
    [API_URI_TOO_LONG] = { "uri-too-long", 414, API_N("The query is too long"),
        API_N("The request's query string has more parameters or bytes than attnd parses (256 "
        "parameters, 16 KiB). No endpoint takes more than a handful: send the matrices in "
        "a POST body instead. The connection is closed after this answer.") },
    [API_NOT_IMPLEMENTED] = { "not-implemented", 501, API_N("Transfer coding not implemented"),
        API_N("The request's Transfer-Encoding names a coding attnd does not read (identity, "
        "gzip, ...). Send the body with a Content-Length, or with Transfer-Encoding: "
        "chunked alone. The connection is closed after this answer.") },
};

const struct api_problem_info *api_problem_info(enum api_problem_type type)
{
    if ((unsigned)type >= API_PROBLEM_COUNT)
        type = API_INTERNAL;
    return &problems[type];
}

bool api_problem_lookup(const char *slug, enum api_problem_type *type)
{
    for (int i = 0; i < API_PROBLEM_COUNT; i++) {
        if (strcmp(problems[i].slug, slug) == 0) {
            *type = (enum api_problem_type)i;
            return true;
        }
    }
    return false;
}

/* A sentence once its values are in: Korean particles fit the values (particles.h). */
static void said(char *text)
{
    if (api_lang_current() == API_LANG_KO)
        api_ko_particles(text);
}

struct api_error *api_error_set(struct api_error *e, enum api_problem_type type,
                                const char *fmt, ...)
{
    memset(e, 0, sizeof *e);
    e->type = type;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof e->detail, api_tr(fmt), ap);
    va_end(ap);
    said(e->detail);
    return e;
}

void api_error_at(struct api_error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->pointer, sizeof e->pointer, fmt, ap);
    va_end(ap);
    e->has_pointer = true;
}

void api_error_step_cell(struct api_error *e, const char *step, size_t row, size_t col)
{
    e->step = step;
    e->cell[0] = (long long)row;
    e->cell[1] = (long long)col;
    e->has_cell = true;
}

void api_error_hint(struct api_error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->hint, sizeof e->hint, api_tr(fmt), ap);
    va_end(ap);
    said(e->hint);
}

bool api_error_add(struct api_error *e, const char *pointer, const char *detail,
                   const char *hint)
{
    if (e->n_more >= API_ERROR_MORE)
        return false;
    struct api_error_item *it = &e->more[e->n_more++];
    snprintf(it->pointer, sizeof it->pointer, "%s", pointer);
    snprintf(it->detail, sizeof it->detail, "%s", api_tr(detail));
    snprintf(it->hint, sizeof it->hint, "%s", api_tr(hint));
    said(it->detail);
    said(it->hint);
    return true;
}

/* errors[1..]: the further culprits, each with its own pointer, detail and hint. */
static void write_more(struct jw *w, const struct api_error *e)
{
    for (unsigned i = 0; i < e->n_more; i++) {
        jw_object_begin(w);
        JW_KEY(w, "pointer");
        jw_string(w, e->more[i].pointer);
        JW_KEY(w, "detail");
        jw_string(w, e->more[i].detail);
        if (e->more[i].hint[0] != '\0') {
            JW_KEY(w, "hint");
            jw_string(w, e->more[i].hint);
        }
        jw_object_end(w);
    }
}

/* The status a problem answers with in `style` (V2 clients know no 422). */
static int styled_status(const struct api_error *e, enum api_error_style style)
{
    int status = api_problem_info(e->type)->status;
    return style == API_ERRORS_V2 && status == 422 ? 400 : status;
}

static void error_write_as(struct jw *w, const struct api_error *e, enum api_error_style style)
{
    const struct api_problem_info *info = api_problem_info(e->type);
    char type[96];
    snprintf(type, sizeof type, "/problems/%s", info->slug);

    jw_object_begin(w);
    if (style == API_ERRORS_V2) {
        JW_KEY(w, "error");
        jw_string(w, e->detail);
    }
    JW_KEY(w, "type");
    jw_string(w, type);
    JW_KEY(w, "title");
    jw_string(w, api_tr(info->title));
    JW_KEY(w, "status");
    jw_int(w, styled_status(e, style));
    JW_KEY(w, "detail");
    jw_string(w, e->detail);
    if (e->parameter[0] != '\0') {
        JW_KEY(w, "parameter");
        jw_string(w, e->parameter);
    }
    /* A body problem's hint goes with its pointer, in errors[]; any other's, here. */
    if (e->hint[0] != '\0' && !e->has_pointer) {
        JW_KEY(w, "hint");
        jw_string(w, e->hint);
    }
    if (e->has_pointer) {
        JW_KEY(w, "errors");
        jw_array_begin(w);
        jw_object_begin(w);
        JW_KEY(w, "pointer");
        jw_string(w, e->pointer);
        JW_KEY(w, "detail");
        jw_string(w, e->culprit_detail[0] != '\0' ? e->culprit_detail : e->detail);
        if (e->hint[0] != '\0') {
            JW_KEY(w, "hint");
            jw_string(w, e->hint);
        }
        if (e->step != NULL) {
            JW_KEY(w, "step");
            jw_string(w, e->step);
        }
        if (e->has_head) {
            JW_KEY(w, "head");
            jw_int(w, e->head);
        }
        if (e->has_cell) {
            JW_KEY(w, "cell");
            jw_array_begin(w);
            jw_int(w, e->cell[0]);
            if (e->cell[1] >= 0)
                jw_int(w, e->cell[1]);
            jw_array_end(w);
        }
        jw_object_end(w);
        write_more(w, e);
        jw_array_end(w);
    }
    jw_object_end(w);
}

void api_error_write(struct jw *w, const struct api_error *e)
{
    error_write_as(w, e, API_ERRORS_PROBLEM);
}

void api_respond_error(struct api_response *res, const struct api_error *e)
{
    api_respond_error_as(res, e, API_ERRORS_PROBLEM);
}

void api_respond_error_as(struct api_response *res, const struct api_error *e,
                          enum api_error_style style)
{
    if (e->deferred) {
        api_response_deinit(res);
        res->deferred = true;
        return;
    }
    struct jw w;
    jw_init(&w, -1);
    error_write_as(&w, e, style);
    jw_end_line(&w);

    free(res->body);
    res->body = jw_take(&w, &res->body_len);
    res->content_type = style == API_ERRORS_V2 ? "application/json" : "application/problem+json";
    res->status = styled_status(e, style);
    if (res->body == NULL) {
        /* Not even the problem fit in memory: say so with the status alone. */
        res->status = 503;
        res->body_len = 0;
    }
    /* Every 503 is a passing state (shutdown, memory): tell clients when to come back. */
    if (res->status == 503)
        api_response_add_header(res, "Retry-After", API_RETRY_AFTER_SECONDS);
}

enum api_error_style api_error_style_of_path(const char *path)
{
    if (path == NULL || strncmp(path, "/v2", 3) != 0)
        return API_ERRORS_PROBLEM;
    return path[3] == '\0' || path[3] == '/' ? API_ERRORS_V2 : API_ERRORS_PROBLEM;
}

void api_respond_problem(struct api_response *res, enum api_problem_type type,
                         const char *detail)
{
    struct api_error err;
    api_error_set(&err, type, "%s", api_tr(detail));
    api_respond_error(res, &err);
}

void api_respond_too_large(const struct api_context *ctx, struct api_response *res)
{
    /* api_error_set translates the sentence before its number goes in */
    struct api_error err;
    api_error_set(&err, API_TOO_LARGE, "the body is larger than this server accepts (%zu bytes)",
                  ctx->limits.max_body);
    api_respond_error(res, &err);
}

void api_respond_unavailable(struct api_response *res, const char *detail)
{
    api_respond_problem(res, API_UNAVAILABLE, detail);
}
