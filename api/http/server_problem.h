/*
 * api/http/server_problem.h — the problems the server finds by itself (a framing error,
 * an unknown Content-Encoding, a corrupt coded body, a refused connection, no memory,
 * shutting down, its admin port's 404), said in the language the request asks for, as
 * every problem api/ writes is: ?lang or Accept-Language (http/language.h; a ?lang
 * attnd lacks is English here, since the answer is about something else), with
 * Content-Language and Vary: Accept-Language.
 *
 * The server hands over the request as it has it (struct api_request; NULL when it has
 * none, e.g. no memory even for its state: English then) and learns nothing about
 * languages. The thread's language is set for the call and reset to English after it.
 *
 * Not here: deciding that a request is malformed (server/net/framing.c and friends).
 */
#ifndef API_HTTP_SERVER_PROBLEM_H
#define API_HTTP_SERVER_PROBLEM_H

#include <stddef.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/response.h"

/*
 * A problem of `type` whose detail is fmt (printf-style, English: the catalogue's key,
 * said in the request's language as api_error_set's format is). A 503 gets Retry-After.
 */
void api_respond_server_problem(struct api_response *res, const struct api_request *req,
                                enum api_problem_type type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * The same, with a fixed sentence for detail: reason is a catalogued English message
 * kept in a table or returned by a function (SRV_N in server/ops/words.h marks it there).
 */
void api_respond_server_reason(struct api_response *res, const struct api_request *req,
                               enum api_problem_type type, const char *reason);

/* 503 `unavailable` for a body the memory budget has no room for (api_error_over_budget's
   words, http/admission.h), in the request's language. */
void api_respond_server_over_budget(struct api_response *res, const struct api_request *req,
                                    size_t bytes);

#endif
