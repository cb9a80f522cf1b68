/*
 * api/request/body.h — the request body as one JSON document, and jansson's memory.
 */
#ifndef API_REQUEST_BODY_H
#define API_REQUEST_BODY_H

#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"

/*
 * Reads a request body as one JSON document (api/json/read.c, building jansson
 * values): duplicate keys, an empty body and a byte-order mark are invalid-json with
 * line, column and position; running out of memory is a 503.
 * Returns a new reference, or NULL with err set.
 */
json_t *api_parse_body(const char *body, size_t len, struct api_error *err);

/*
 * The same, every value a jansson node (no matrix read into numbers, json/read.h):
 * for documents whose arrays are not read with api_read_matrix (a V2 header's data).
 */
json_t *api_parse_body_nodes(const char *body, size_t len, struct api_error *err);

/*
 * Releases a document from api_parse_body (NULL is fine). Inside api_handle its nodes
 * belong to the request's arena, which frees them all at once, so the tree is not
 * walked node by node; elsewhere it is json_decref.
 */
void api_release_body(json_t *doc);

/*
 * Makes jansson allocate through attnd's malloc and free (plain, no header), so a
 * test that wraps malloc at link time reaches jansson's allocations too.
 */
void api_json_alloc_init(void);

#endif
