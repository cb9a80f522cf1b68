/*
 * api/api.h — everything attnd says, above the socket.
 *
 * One entry point maps (method, path, query, headers, body) to (status, headers,
 * content type, body), so the whole service is tested without a network and the
 * fuzzer drives the same function as the server. api/ parses and validates with
 * jansson, calls core/, writes JSON, and formats every error as problem+json
 * (RFC 9457), including the ones the server detects (400, 413, 414, 501, 503).
 *
 * Not here: sockets, libmicrohttpd, threads. Every function is reentrant; the
 * context is read-only during a call.
 */
#ifndef API_API_H
#define API_API_H

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
};

/*
 * What a 200 is written as, chosen by ?format (which wins) or Accept: JSON by
 * default, text/plain for terminals, image/svg+xml for the heatmap. Problems are
 * problem+json whatever was chosen.
 */
enum api_format { API_FORMAT_JSON = 0, API_FORMAT_TEXT, API_FORMAT_SVG };

#define API_MAX_HEADERS 4

struct api_header {
    const char *name; /* static string, e.g. "Allow" */
    char value[192];
};

/* One piece of a body sent in pieces: data[0, len) inside the allocation base. */
struct api_segment {
    void *base;       /* malloc'd, freed by api_segments_free; NULL when data lies in
                         another piece (a repeated text) */
    const char *data;
    size_t len;
};

/* A body in pieces, in order: one allocation for the list (n pieces, total bytes). */
struct api_segments {
    size_t n, total;
    struct api_segment seg[];
};

/* Frees every piece and the list; NULL is fine. void * to serve as a free callback. */
void api_segments_free(void *segments);

/*
 * The answer. body is malloc'd and owned by the response: api_response_deinit
 * frees it (the server may take it over instead: then set body to NULL first).
 * When the context allows it (api_context.segments_ok), a large JSON answer written
 * on several threads comes as `segments` instead (body NULL, body_len their total):
 * the pieces the threads wrote, never copied into one buffer.
 */
struct api_response {
    int status;
    const char *content_type; /* static string */
    struct api_header headers[API_MAX_HEADERS];
    size_t n_headers;
    char *body;
    size_t body_len;
    struct api_segments *segments; /* owned, like body; NULL unless segments_ok */
    /*
     * Admission answered API_ADMIT_ELSEWHERE (api_context.admit): nothing was
     * computed and there is no answer (status 0, no body). The caller runs the same
     * request again where large work may take its time.
     */
    bool deferred;
};

/* What the server says of a request's working set (api_context.admit). */
enum api_admission {
    API_ADMIT_YES,       /* go on: the bytes are charged */
    API_ADMIT_NO,        /* the budget has no room: 503 */
    API_ADMIT_ELSEWHERE  /* not on this thread: too large to run among small requests */
};

struct api_limits {
    size_t max_body;  /* bytes of one request body */
    size_t max_cells; /* cells of any one matrix a request makes, intermediates included */
    size_t max_batch; /* items of one batch request */
    /* Bytes one request may hold at once: its body, every matrix it computes and its
       answer, summed (a batch's items together); api/admit.h. 0: no limit. */
    size_t max_request_bytes;
};

/* Read-only facts the server lends to every call. */
struct api_context {
    struct api_limits limits;
    bool ready;                /* false once shutdown began: /readyz answers 503 */
    const char *http_library;  /* libmicrohttpd's version, e.g. "0.9.75", for /version */
    /*
     * Memory admission. Once a request is parsed, and before its working set is
     * allocated, api/ asks admit(admit_cls, bytes) with its estimate of that set (the
     * body, the trace and the answer; api/admit.h). API_ADMIT_NO answers 503
     * `unavailable` with Retry-After; API_ADMIT_ELSEWHERE answers nothing
     * (api_response.deferred). Either way nothing is allocated for the request. NULL
     * admits everything.
     */
    enum api_admission (*admit)(void *admit_cls, size_t bytes);
    void *admit_cls;
    /* The caller sends api_response.segments as they are (vectored I/O): no join. */
    bool segments_ok;
};


/*
 * Process-wide setup, once before serving: the BLAS thread policy. The server
 * already runs requests on one thread per core, so BLAS gets one thread per call
 * rather than oversubscribing the cores (see docs/design.md, "Threads"). It also routes
 * jansson's allocations through attnd's malloc (api_json_alloc_init).
 */
void api_global_init(void);

/*
 * How many threads one request may use (the server's worker count). With more than
 * one, a request handled while no other is in progress reads, computes and writes its
 * large parts on several (api/spare_threads.h); the default, 1, never does.
 */
void api_set_threads(unsigned threads);

/*
 * The server's bracket around each request, from the arrival of its headers until
 * its answer has been sent (or the client left): what "no other is in progress"
 * counts. A request being received or sent keeps a core busy too, so one counted only
 * while api_handle runs would lend that core to a neighbour and make both wait.
 * api_handle itself counts nothing; a caller that brackets nothing is alone.
 */
void api_request_began(void);
void api_request_ended(void);

/*
 * Advice for the operator, or NULL: when OpenBLAS runs generic kernels on a CPU that
 * has AVX2 or AVX-512 (its detection misses some virtual CPUs), which
 * OPENBLAS_CORETYPE to start attnd with. Static storage.
 */
const char *api_blas_better_core(void);

/* Defaults from the contract: 16 MiB body, 4,194,304 cells, 64 items, 512 MiB a request. */
struct api_limits api_default_limits(void);

/*
 * The first look at a request, before its body is read: route, method, Accept,
 * Content-Type and a declared Content-Length (declared_length, or -1 when none).
 * Returns true when `res` now holds the final answer (404, 405, 406, 413, 415, or
 * a complete answer for a request that has no body to wait for); false when the
 * server should read the body and call api_handle.
 */
bool api_precheck(const struct api_context *ctx, const struct api_request *req,
                  long long declared_length, struct api_response *res);

/*
 * The full answer to a request whose body has been read. Never fails: out of memory,
 * or admission refused (api_context.admit), is a 503.
 */
void api_handle(const struct api_context *ctx, const struct api_request *req,
                struct api_response *res);

/* The server's own problems, in the one error shape. */
void api_respond_too_large(const struct api_context *ctx, struct api_response *res);
/* 503 `unavailable`, with Retry-After like every 503 attnd writes. */
void api_respond_unavailable(struct api_response *res, const char *detail);
/* 404 `not-found` with the server's own detail (a path its admin listener does not serve). */
void api_respond_not_found(struct api_response *res, const char *detail);
/* 503 `unavailable` for a body the memory budget has no room for (detail and hint say so). */
void api_respond_over_budget(struct api_response *res, size_t bytes);

/*
 * Malformed HTTP the server found before routing (server/framing.h): 400 `bad-request`,
 * 414 `uri-too-long` and 501 `not-implemented`, each with the server's detail.
 */
void api_respond_bad_request(struct api_response *res, const char *detail);
void api_respond_uri_too_long(struct api_response *res, const char *detail);
void api_respond_not_implemented(struct api_response *res, const char *detail);

/* Seconds a 503 asks the client to wait (Retry-After). */
#define API_RETRY_AFTER_SECONDS "1"

/* Adds a header to the response; false when API_MAX_HEADERS are used. */
bool api_response_add_header(struct api_response *res, const char *name, const char *value);

/* Frees the body (or segments) and zeroes *res. Safe on a zeroed response. */
void api_response_deinit(struct api_response *res);

#endif
