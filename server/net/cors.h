/*
 * server/net/cors.h — which CORS headers a response gets, decided from the configuration
 * and the request's Origin alone (no I/O, so it is easy to reason about).
 *
 *   --cors-origin *     Access-Control-Allow-Origin: * on every response
 *   --cors-origin LIST  the request's Origin echoed when it is in LIST; Vary: Origin
 *                       always (caches must not serve one origin's answer to another)
 *   disallowed origin   no Access-Control-* header at all
 *
 * Whenever Allow-Origin is sent, X-Request-Id, Retry-After, Inference-Header-Content-Length
 * (V2's binary answers) and traceparent (server/net/trace.h) are exposed to scripts. A
 * preflight (OPTIONS) adds the allowed methods, the allowed request headers
 * (--cors-headers, SRV_CORS_DEFAULT_HEADERS in config.h) and a max-age.
 *
 * Not here: the headers' transport (daemon.c adds them to the MHD response).
 */
#ifndef SRV_CORS_H
#define SRV_CORS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/host/config.h"

#define SRV_CORS_ALLOW_METHODS "GET, POST, HEAD, OPTIONS"
#define SRV_CORS_EXPOSE_HEADERS \
    "X-Request-Id, Retry-After, Inference-Header-Content-Length, traceparent"
#define SRV_CORS_MAX_AGE "600"

struct srv_cors {
    const char *allow_origin; /* value for Access-Control-Allow-Origin, or NULL: no CORS */
    bool vary_origin;         /* send Vary: Origin */
};

/* origin is the request's Origin header or NULL. The result borrows from cfg and origin. */
struct srv_cors srv_cors_decide(const struct srv_config *cfg, const char *origin);

/*
 * The Vary an answer gets when the server adds to it: what its choices depended on (the
 * Origin, decided by c; Accept-Encoding when the answer may be coded), then what api/
 * said its own depended on (api_vary, or NULL), as one list. Written into out as
 * snprintf writes (cut to cap bytes); the length of the whole, or 0 when the server adds
 * nothing (api/'s Vary, if any, then stands as it is).
 */
size_t srv_cors_vary(char *out, size_t cap, const struct srv_cors *c, bool codable,
                     const char *api_vary);

#endif
