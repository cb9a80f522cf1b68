/*
 * api/http/instance.h — the problem's `instance` (RFC 9457): which occurrence this was.
 *
 * attnd names an occurrence by its request id, the X-Request-Id it sends back and
 * writes to its access log, so a client holding only the error body can ask for the
 * matching log line. The id is the server's to know (api/ never sees headers it does
 * not read), so the server stamps it on the answer api/ wrote, just before sending.
 *
 * Every problem api/http/problem.c writes is stamped: application/problem+json, and
 * the V2 errors on /v2 (application/json opening with "error"). Other answers are
 * left as they are.
 *
 * Not here: the problem's other members (problem.h), choosing the id (the server).
 */
#ifndef API_HTTP_INSTANCE_H
#define API_HTTP_INSTANCE_H

#include <stdbool.h>

#include "api/http/response.h"

/*
 * Adds "instance": id as the problem's last member when res is a problem. id must
 * need no JSON escaping (printable ASCII without '"' or '\\'), as request ids are.
 * False, res unchanged, when res is no problem, id does not qualify, or there was no
 * memory for the longer body (the problem then goes without it).
 */
bool api_problem_stamp_instance(struct api_response *res, const char *id);

#endif
