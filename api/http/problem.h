/*
 * api/http/problem.h — every error attnd reports, in one shape: application/problem+json
 * (RFC 9457) with errors[] that point into the request and hints that teach.
 *
 * struct api_error uses fixed buffers so that reporting a problem never needs
 * memory: even "out of memory" can be described. A table maps each problem type
 * to its status, title and the paragraph served at GET /problems/<type>.
 *
 * Not here: deciding what is wrong (parse.c, attention.c, api.c do that).
 */
#ifndef API_PROBLEM_H
#define API_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/context.h"
#include "api/http/response.h"
#include "api/json/write.h"

enum api_problem_type {
    API_INVALID_JSON = 0,
    API_NOT_FOUND,
    API_METHOD_NOT_ALLOWED,
    API_TOO_LARGE,
    API_NOT_ACCEPTABLE,
    API_UNSUPPORTED_MEDIA_TYPE,
    API_MISSING_FIELD,
    API_NOT_A_MATRIX,
    API_NOT_A_NUMBER,
    API_SHAPE_MISMATCH,
    API_UNKNOWN_FIELD,
    API_INVALID_VALUE,
    API_NUMERIC_OVERFLOW,
    API_LIMIT_EXCEEDED,
    API_UNAVAILABLE,
    API_INTERNAL,
    API_BAD_REQUEST,
    API_URI_TOO_LONG,
    API_NOT_IMPLEMENTED,
    API_PROBLEM_COUNT
};

/* Marks a message written outside a call that says it (a table's row) for the catalogue
   (api/i18n/messages.h); it is said through api_tr where it is used. */
#define API_N(msgid) msgid

struct api_problem_info {
    const char *slug;        /* "shape-mismatch": the type is "/problems/" + slug */
    int status;
    const char *title;
    const char *explanation; /* one paragraph, for GET /problems/<slug> */
};

const struct api_problem_info *api_problem_info(enum api_problem_type type);
/* The type whose slug is `slug`; false when there is none. */
bool api_problem_lookup(const char *slug, enum api_problem_type *type);

/*
 * Further culprits of the same problem, reported in the same answer (every unknown
 * field of one object at once rather than one a try). Fixed buffers, like api_error's.
 */
#define API_ERROR_MORE 7
struct api_error_item {
    char pointer[128];
    char detail[160];
    char hint[192];
};

/* One problem, described without allocating. Empty strings mean "absent". */
struct api_error {
    enum api_problem_type type;
    char detail[512];
    char pointer[256];   /* JSON pointer into the request body ("" = the whole body) */
    bool has_pointer;    /* a body problem: errors[] is written with this pointer */
    char hint[320];
    /* errors[0]'s own detail when `detail` sums up several culprits ("": the same) */
    char culprit_detail[96];
    char parameter[64];  /* the query parameter at fault, for query problems */
    const char *step;    /* numeric-overflow: the step's name */
    long long cell[2];   /* numeric-overflow: [row, col], or row only when cell[1] < 0 */
    bool has_cell;
    long long head;      /* numeric-overflow inside one head of /v1/multihead */
    bool has_head;
    bool deferred;       /* not a problem: admission sent the work elsewhere (api_admit) */
    /* errors[1..]: more culprits after the one above (has_pointer); n_more of them, and
       how many more there were than fit (said in the detail by whoever adds them) */
    struct api_error_item more[API_ERROR_MORE];
    unsigned n_more;
};

/* Resets e and sets its type and detail (printf-style). Returns e for chaining. */
struct api_error *api_error_set(struct api_error *e, enum api_problem_type type,
                                const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The JSON pointer of the culprit (printf-style), e.g. "/k/%zu/%zu". */
void api_error_at(struct api_error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The hint (printf-style). */
void api_error_hint(struct api_error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A numeric-overflow's step (a static name) and cell [row, col], for errors[0]. */
void api_error_step_cell(struct api_error *e, const char *step, size_t row, size_t col);
/* Adds a further culprit (errors[1..]); false when API_ERROR_MORE are already there. */
bool api_error_add(struct api_error *e, const char *pointer, const char *detail,
                   const char *hint);

/* Writes e as one problem object (for a batch item's body). */
void api_error_write(struct jw *w, const struct api_error *e);


/*
 * Writes e as problem+json into res (status, content type, body). 503 body-less if even
 * that fails. A deferred e (api_admit) makes a deferred, empty res instead.
 */
void api_respond_error(struct api_response *res, const struct api_error *e);

/*
 * How errors are written on a route: problem+json everywhere, except on the Open
 * Inference Protocol's /v2 paths, whose clients read `"error"` from application/json
 * (tritonclient, KServe's InferenceRESTClient) and expect 400 for a bad request.
 */
enum api_error_style { API_ERRORS_PROBLEM = 0, API_ERRORS_V2 };

/*
 * api_respond_error in `style`. API_ERRORS_V2: application/json, `"error": detail`
 * beside the problem members, and 400 (also in `status`) where the type says 422.
 */
void api_respond_error_as(struct api_response *res, const struct api_error *e,
                          enum api_error_style style);

/*
 * The style of a path when no route says it (an unknown path, the server's own problems
 * about framing, codings and the query): API_ERRORS_V2 for "/v2" and everything under
 * "/v2/", so that every answer there carries "error" as the protocol requires.
 */
enum api_error_style api_error_style_of_path(const char *path);

/* A problem of `type` whose detail is `detail` (no pointer, no hint). */
void api_respond_problem(struct api_response *res, enum api_problem_type type,
                         const char *detail);

/* The server's own problems, in the one error shape. */
void api_respond_too_large(const struct api_context *ctx, struct api_response *res);
/* 503 `unavailable`, with Retry-After like every 503 attnd writes. */
void api_respond_unavailable(struct api_response *res, const char *detail);

#endif
