/*
 * api/json/buf.c — the growing byte buffer (see buf.h).
 */
#include "api/json/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_buf_init(struct api_buf *b)
{
    memset(b, 0, sizeof *b);
}

void api_buf_deinit(struct api_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

char *api_buf_take(struct api_buf *b, size_t *len)
{
    if (!b->failed && b->data == NULL)
        api_buf_append(b, "", 0); /* an empty rendering is still a string */
    if (b->failed) {
        api_buf_deinit(b);
        return NULL;
    }
    char *out = b->data;
    *len = b->len;
    memset(b, 0, sizeof *b);
    return out;
}

/* Room for `extra` more bytes and the NUL; doubles the capacity, checking for overflow. */
static bool api_buf_reserve(struct api_buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra > (size_t)-1 - b->len - 1) {
        b->failed = true;
        return false;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap < 256 ? 256 : b->cap;
    while (cap < need)
        cap = cap > (size_t)-1 / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void api_buf_append(struct api_buf *b, const char *s, size_t n)
{
    if (!api_buf_reserve(b, n))
        return;
    if (n > 0)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void api_buf_puts(struct api_buf *b, const char *s)
{
    api_buf_append(b, s, strlen(s));
}

void api_buf_fill(struct api_buf *b, char c, size_t n)
{
    if (!api_buf_reserve(b, n))
        return;
    memset(b->data + b->len, c, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void api_buf_printf(struct api_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        api_buf_append(b, small, (size_t)n);
        return;
    }
    if (!api_buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void api_buf_xml(struct api_buf *b, const char *s)
{
    const char *run = s;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        const char *rep = NULL;
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default:
            /* XML 1.0 forbids most control characters even as references. */
            if ((c < 0x20 && c != '\t' && c != '\0') || c == 0x7f)
                rep = "?";
        }
        if (rep == NULL && c != '\0')
            continue;
        api_buf_append(b, run, (size_t)(p - run));
        if (c == '\0')
            break;
        api_buf_puts(b, rep);
        run = p + 1;
    }
}
