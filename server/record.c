/*
 * server/record.c — one request's record and the api_request made from it (see record.h).
 */
#include "server/record.h"

#include <stdlib.h>
#include <string.h>

/* malloc, not calloc: glibc 2.36 (Debian 12) calloc skips the per-thread cache and locks. */
struct srv_request *srv_request_alloc(void)
{
    struct srv_request *r = malloc(sizeof *r);
    if (r != NULL)
        memset(r, 0, sizeof *r);
    return r;
}

const char *srv_header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

struct srv_param_fill {
    struct api_param *params;
    size_t n, cap;
};

static enum MHD_Result srv_param_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    struct srv_param_fill *f = cls;
    if (f->n == f->cap)
        return MHD_NO;
    f->params[f->n].name = key;
    f->params[f->n].value = value != NULL ? value : "";
    f->n++;
    return MHD_YES;
}

/*
 * Query parameters, in order. Their number is bounded by the connection's memory
 * pool (MHD keeps them there), so the array is sized to exactly that many.
 */
bool srv_collect_params(struct MHD_Connection *conn, struct srv_request *r)
{
    if (r->params != NULL) /* collected already, for a problem's ?lang */
        return true;
    int count = MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    if (count <= 0)
        return true;
    struct srv_param_fill f = {calloc((size_t)count, sizeof *f.params), 0, (size_t)count};
    if (f.params == NULL)
        return false;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, srv_param_iter, &f);
    r->params = f.params;
    r->n_params = f.n;
    return true;
}

struct api_request srv_api_request(struct MHD_Connection *conn, const struct srv_request *r,
                                   const char *url, const char *method)
{
    struct api_request q = {
        .method = method,
        .path = url,
        .params = r->params,
        .n_params = r->n_params,
        .accept = srv_header(conn, MHD_HTTP_HEADER_ACCEPT),
        .content_type = srv_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE),
        .inference_header_length = srv_header(conn, "Inference-Header-Content-Length"),
        .accept_language = srv_header(conn, "Accept-Language"),
        .body = r->body.data,
        .body_len = r->body.len,
    };
    return q;
}

/* Its query collected if it can be: see record.h. */
struct api_request srv_problem_request(struct MHD_Connection *conn, struct srv_request *r)
{
    (void)srv_collect_params(conn, r);
    return srv_api_request(conn, r, r->path, r->method);
}

double srv_ms_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}
