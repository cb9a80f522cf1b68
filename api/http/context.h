/*
 * api/http/context.h — what the server lends every call: the request as it saw it,
 * the limits, and the admission callback; and the formats a 200 can take.
 *
 * The limit defaults live here, once: the server's configuration starts from them
 * and its --help prints them.
 */
#ifndef API_HTTP_CONTEXT_H
#define API_HTTP_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* One decoded query parameter (?name=value). Borrowed. */
struct api_param {
    const char *name;
    const char *value; /* "" for ?name with no value */
};

/* A request as the server saw it. Every pointer is borrowed for the call. */
struct api_request {
    const char *method;               /* "GET", "POST", "HEAD", "OPTIONS", ... */
    const char *path;                 /* without the query string, e.g. "/v1/attention" */
    const struct api_param *params;   /* decoded query parameters */
    size_t n_params;
    const char *accept;               /* Accept header, or NULL */
    const char *content_type;         /* Content-Type header, or NULL */
    const char *body;                 /* request body; need not be NUL-terminated */
    size_t body_len;
    /* Inference-Header-Content-Length (a V2 body's JSON header length), raw, or NULL */
    const char *inference_header_length;
    const char *accept_language;      /* Accept-Language header, or NULL (i18n/lang.h) */
};

/* The value of query parameter `name`, or NULL when the request has none. */
const char *api_request_param(const struct api_request *req, const char *name);

/*
 * What a 200 is written as, chosen by ?format (which wins) or Accept: JSON by
 * default, text/plain for terminals, image/svg+xml for the heatmap, and (?format
 * only) bertviz: the weights as bertviz's head_view takes them, in JSON. Problems are
 * problem+json whatever was chosen.
 */
enum api_format { API_FORMAT_JSON = 0, API_FORMAT_TEXT, API_FORMAT_SVG, API_FORMAT_BERTVIZ };

/* What the server says of a request's working set (api_context.admit). */
enum api_admission {
    API_ADMIT_YES,       /* go on: the bytes are charged */
    API_ADMIT_NO,        /* the budget has no room: 503 */
    API_ADMIT_ELSEWHERE  /* not on this thread: too large to run among small requests */
};

/*
 * The contract's defaults (api_default_limits), as plain decimal literals so that
 * the server's --help can print them (API_STR) from the same place: 16 MiB of body,
 * 4,194,304 cells, 64 items, 512 MiB a request.
 */
#define API_DEFAULT_MAX_BODY 16777216
#define API_DEFAULT_MAX_CELLS 4194304
/* 2^39 multiply-adds, n_q·n_k·(d_k + d_v) summed over heads and items: four times a
 * long problem's (n_q = n_k = 32,768, d = 64 is 2^37). */
#define API_DEFAULT_MAX_WORK 549755813888
#define API_DEFAULT_MAX_BATCH 64
#define API_DEFAULT_MAX_REQUEST_BYTES 536870912
#define API_STR_(x) #x
#define API_STR(x) API_STR_(x)

struct api_limits {
    size_t max_body;  /* bytes of one request body */
    size_t max_cells; /* cells of any one matrix a request makes, intermediates included */
    size_t max_batch; /* items of one batch request */
    /* Bytes one request may hold at once: its body, every matrix it computes and its
       answer, summed (a batch's items together); api/http/admission.h. 0: no limit. */
    size_t max_request_bytes;
    /* Multiply-adds of one request's two products, n_q·n_k·(d_k + d_v) summed over heads
       and items: what bounds the arithmetic now that unasked matrices are not built. */
    size_t max_work;
};

/* The API_DEFAULT_* limits. */
struct api_limits api_default_limits(void);

/* Read-only facts the server lends to every call. */
struct api_context {
    struct api_limits limits;
    bool ready;                /* false once shutdown began: /readyz answers 503 */
    const char *http_library;  /* libmicrohttpd's version, e.g. "0.9.75", for /version */
    /*
     * Memory admission. Once a request is parsed, and before its working set is
     * allocated, api/ asks admit(admit_cls, bytes) with its estimate of that set (the
     * body, the trace and the answer; api/http/admission.h). API_ADMIT_NO answers 503
     * `unavailable` with Retry-After; API_ADMIT_ELSEWHERE answers nothing
     * (api_response.deferred). Either way nothing is allocated for the request. NULL
     * admits everything.
     */
    enum api_admission (*admit)(void *admit_cls, size_t bytes);
    void *admit_cls;
    /* The caller sends api_response.segments as they are (vectored I/O): no join. */
    bool segments_ok;
    /*
     * Nanoseconds the request waited for a thread before this call, once it was read
     * (the server's lane, when admission sent it there); 0 when it did not wait. The V2
     * statistics report it as the queue.
     */
    unsigned long long queued_ns;
};

#endif
