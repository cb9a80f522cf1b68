/*
 * api/json/buf.h — a growing byte buffer for the text and SVG renderings.
 *
 * The renderers append pieces (bytes, formatted text, escaped text) one after
 * another. Out of memory is sticky, as in json/write.h: every later append is a no-op and
 * api_buf_take returns NULL, so a renderer checks once, at the end.
 *
 * Ownership: the buffer owns its bytes until api_buf_take hands them over (the
 * caller then free()s them); api_buf_deinit frees whatever was not taken.
 *
 * Not here: JSON (api/json/write.h), numbers in shortest form (api/json/numfmt.h).
 */
#ifndef API_BUF_H
#define API_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct api_buf {
    char *data;  /* owned; NUL-terminated whenever not failed and not empty */
    size_t len, cap;
    bool failed; /* an allocation failed: the text is incomplete */
};

/* An empty buffer; nothing is allocated until the first append. */
void api_buf_init(struct api_buf *b);
/* Frees what was not taken. Safe twice. */
void api_buf_deinit(struct api_buf *b);
/* Hands the bytes to the caller (free() them), NUL-terminated; NULL if anything failed. */
char *api_buf_take(struct api_buf *b, size_t *len);

void api_buf_append(struct api_buf *b, const char *s, size_t n);
void api_buf_puts(struct api_buf *b, const char *s);
/* n copies of the byte c (spaces for alignment). */
void api_buf_fill(struct api_buf *b, char c, size_t n);
__attribute__((format(printf, 2, 3)))
void api_buf_printf(struct api_buf *b, const char *fmt, ...);
/* s with &, <, >, " and ' as XML entities; control characters other than tab become '?'. */
void api_buf_xml(struct api_buf *b, const char *s);

#endif
