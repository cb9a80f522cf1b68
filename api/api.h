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
 *
 * The types the server fills and reads (api_request, api_context, api_response) and
 * the answers it asks for by itself (the 400, 413, 414, 501 and 503 problems) live
 * in api/http/, included here: this header is all the server needs.
 */
#ifndef API_API_H
#define API_API_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/admission.h"
#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/server_problem.h"
#include "api/http/response.h"

/*
 * The routes of api/api.c's table, and the files the server serves itself (the
 * playground's), in one numbering: the server labels its counters by route. A path is
 * OpenAPI's template ("/v2/models/{model}/infer"). api_route_of is api_route_count()
 * for a path no route takes; api_route_template is NULL past the last route.
 */
#define API_ROUTES_MAX 48
size_t api_route_count(void);
const char *api_route_template(size_t i);
size_t api_route_of(const char *path);

/*
 * A file the server answers by itself before api_handle (GET and HEAD), routed here so
 * that a wrong method, Accept or an OPTIONS is answered as on every route; note (a
 * catalogued sentence, or NULL to leave it out) names it in the 404's list. Once per
 * path, before serving; false for a path that is taken, a template, or one too many.
 */
bool api_route_add_file(const char *path, const char *note);

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
 * large parts on several (api/json/spare_threads.h); the default, 1, never does.
 */
void api_set_threads(unsigned threads);

/*
 * The large block kept between requests (core/memory.h): a trace of 32 MiB or more,
 * freed, waits for the next one that fits instead of being unmapped, so the kernel
 * need not zero fresh pages for it. api_keep_block_max sets the largest block kept,
 * before serving (0, the default, keeps none); api_release_kept_block frees the kept
 * one, for the server to call when it gives memory back.
 */
void api_keep_block_max(size_t bytes);
void api_release_kept_block(void);

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

/*
 * The 413 for a body over --max-body that the server found while reading it, written
 * as the request's route writes its errors (problem+json, or V2's on /v2).
 */
void api_respond_too_large_for(const struct api_context *ctx, const struct api_request *req,
                               struct api_response *res);

#endif
