/*
 * api/http/respond.h — writing a 200: from a finished JSON writer, a rendered page,
 * or fixed bytes. Each takes the bytes over and falls back to a 503 problem when
 * memory runs out, so a handler never has a half-written answer to clean up.
 */
#ifndef API_HTTP_RESPOND_H
#define API_HTTP_RESPOND_H

#include <stddef.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/response.h"
#include "api/json/buf.h"
#include "api/json/write.h"

/* application/json from w (its pieces, when it wrote in pieces). */
void api_respond_json(struct api_response *res, struct jw *w);

/* The same, running out of memory answered in `style` (V2's errors are its own JSON). */
void api_respond_json_as(struct api_response *res, struct jw *w, enum api_error_style style);

/* text/plain or image/svg+xml (by format) from b. */
void api_respond_page(struct api_response *res, struct api_buf *b, enum api_format format);

/* `status` with a copy of bytes[0, len) as `type`; a 503 without body if even that fails. */
void api_respond_bytes(struct api_response *res, int status, const char *type,
                       const char *bytes, size_t len);

#endif
