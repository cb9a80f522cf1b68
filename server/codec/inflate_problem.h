/*
 * server/codec/inflate_problem.h — the 400 invalid-json for a coded body whose stream could not
 * be undone (server/codec/inflate.h's fault), in words, in the request's language.
 *
 * Apart from inflate.c so that the decoder itself needs nothing of api/ (its unit
 * test and fuzzer link it alone).
 */
#ifndef SERVER_INFLATE_PROBLEM_H
#define SERVER_INFLATE_PROBLEM_H

#include "api/api.h"
#include "server/codec/inflate.h"

/* f->fault as the problem's detail; req NULL: English. */
void srv_inflate_respond(const struct srv_inflate *f, const struct api_request *req,
                         struct api_response *res);

#endif
