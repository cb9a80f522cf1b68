/*
 * api/request/query.h — the query parameters a route takes, checked before anything
 * else reads them: a typo in the query string (?fromat=text) is refused as a typo in
 * the body is, rather than silently ignored.
 *
 * Not here: what each parameter's value means (http/negotiate.h reads format and lang,
 * endpoints/shapes/shapes.c the sizes).
 */
#ifndef API_REQUEST_QUERY_H
#define API_REQUEST_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/context.h"
#include "api/http/problem.h"

/*
 * True when every parameter of req is format, lang or one of extra[] (NULL-terminated;
 * extra may be NULL). Else false with err a 422 unknown-field whose `parameter` names
 * the first unknown one, with the close name meant (api_close_name) or the list.
 */
bool api_check_query(const struct api_request *req, const char *const *extra,
                     struct api_error *err);

#endif
