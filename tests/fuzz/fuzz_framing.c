/*
 * tests/fuzz/fuzz_framing.c — libFuzzer harness for server/net/framing.c: RFC 9112's
 * rules over a request head, laid out as libmicrohttpd 0.9.75 lays it out.
 *
 * The input is a request head written as on the wire, lines ending in LF (a CR
 * before it is dropped):
 *
 *     TARGET SP VERSION LF       e.g. "/v1/shapes?n=2 HTTP/1.1\n"
 *     (NAME ":" OWS VALUE LF)*   a line starting with SP or HTAB continues the one
 *                                before it (obs-fold), which the harness treats as
 *                                libmicrohttpd does: it appends the continuation to
 *                                the previous line's name and moves that name
 *                                elsewhere in its pool; a line without a colon is
 *                                dropped (libmicrohttpd refuses the request itself)
 *
 * The head is copied into a buffer of its own size, so reading past a field is
 * caught by AddressSanitizer. What must hold, beyond "no crash or undefined
 * behaviour": a known verdict; a reason exactly when refused; the same verdict for
 * the lines in reverse order (with one Transfer-Encoding line at most); refused whenever a line was folded, or when the head
 * has Content-Length and Transfer-Encoding both or two Content-Lengths; and
 * srv_target_path returns the decoded target's tail or "/".
 *
 * Not here: the HTTP side (tests/http/framing.test.mjs).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/net/framing.h"

#define FUZZ_MAX_FIELDS 64

static size_t line_end(const char *s, size_t len, size_t at)
{
    while (at < len && s[at] != '\n')
        at++;
    return at;
}

static bool name_is(const struct srv_field *f, const char *name)
{
    return f->name_len == strlen(name) && strncasecmp(f->name, name, f->name_len) == 0;
}

/*
 * The input split into a request line and header fields, NUL-terminated in place in
 * buf, then the moved names after them. A name folded again is copied again, longer:
 * the room is bounded, and a fold that would not fit is dropped (libmicrohttpd's pool
 * would refuse it with a 431 of its own).
 */
struct fuzz_head {
    char *buf;   /* owned */
    size_t room, moved;
    const char *target, *version;
    struct srv_field fields[FUZZ_MAX_FIELDS];
    size_t n;
    bool any_folded;
};

/* The line that ends at `end`, NUL-terminated, its CR dropped. */
static char *cut_line(char *buf, size_t at, size_t end)
{
    buf[end] = '\0';
    if (end > at && buf[end - 1] == '\r')
        buf[end - 1] = '\0';
    return buf + at;
}

/* obs-fold, as libmicrohttpd 0.9.75: the previous name + continuation, moved to the pool. */
static void fold(struct fuzz_head *h, const char *line)
{
    struct srv_field *prev = &h->fields[h->n - 1];
    const char *cont = line + strspn(line, " \t");
    size_t cont_len = strlen(cont);
    if (prev->name_len + cont_len + 1 > h->room - h->moved)
        return;
    char *name = h->buf + h->moved;
    memcpy(name, prev->name, prev->name_len);
    memcpy(name + prev->name_len, cont, cont_len);
    name[prev->name_len + cont_len] = '\0';
    h->moved += prev->name_len + cont_len + 1;
    prev->name = name;
    prev->name_len += cont_len;
    h->any_folded = true;
}

static bool read_head(struct fuzz_head *h, const uint8_t *data, size_t size)
{
    h->room = 4 * size + 2;
    h->buf = malloc(h->room);
    if (h->buf == NULL)
        return false;
    memcpy(h->buf, data, size);
    h->buf[size] = '\0';
    h->moved = size + 1;
    h->n = 0;
    h->any_folded = false;

    size_t first = line_end(h->buf, size, 0);
    char *request_line = cut_line(h->buf, 0, first);
    char *sp = strchr(request_line, ' ');
    h->version = sp != NULL ? sp + 1 : "";
    if (sp != NULL)
        *sp = '\0';
    h->target = request_line;

    for (size_t at = first + 1; at < size;) {
        size_t end = line_end(h->buf, size, at);
        char *line = cut_line(h->buf, at, end);
        at = end + 1;
        if ((line[0] == ' ' || line[0] == '\t') && h->n > 0) {
            fold(h, line);
            continue;
        }
        char *colon = strchr(line, ':');
        if (colon == NULL || h->n == FUZZ_MAX_FIELDS)
            continue;
        *colon = '\0';
        char *value = colon + 1 + strspn(colon + 1, " \t");
        struct srv_field f = {line, (size_t)(colon - line), value, strlen(value)};
        h->fields[h->n++] = f;
    }
    return true;
}

/* The verdict is one of three, with a reason exactly when refused, and is the same
 * whatever the order of the lines when that order is free. */
static void check_verdict(const struct fuzz_head *h)
{
    struct srv_framing_result r = srv_framing_check(h->fields, h->n, h->version);
    if (r.verdict != SRV_FRAMING_OK && r.verdict != SRV_FRAMING_BAD_REQUEST &&
        r.verdict != SRV_FRAMING_NOT_IMPLEMENTED)
        abort();
    if ((r.verdict == SRV_FRAMING_OK) != (r.reason == NULL))
        abort();
    if (r.reason != NULL && strlen(r.reason) == 0)
        abort();

    unsigned lengths = 0, codings = 0;
    for (size_t i = 0; i < h->n; i++) {
        lengths += name_is(&h->fields[i], "content-length");
        codings += name_is(&h->fields[i], "transfer-encoding");
    }
    /* Transfer-Encoding lines combine in their order (chunked must come last): only
     * with one of them at most is the order of lines free. */
    struct srv_framing backwards;
    srv_framing_init(&backwards);
    for (size_t i = h->n; i > 0; i--)
        srv_framing_feed(&backwards, &h->fields[i - 1]);
    if (codings <= 1 && srv_framing_finish(&backwards, h->version).verdict != r.verdict)
        abort();

    if (r.verdict == SRV_FRAMING_OK && (h->any_folded || lengths > 1 || (lengths && codings)))
        abort();
}

/* The query offset and the path lie inside the target. */
static void check_target(const char *target)
{
    struct srv_target t;
    srv_target_read(target, &t);
    if (t.query_offset > strlen(target))
        abort();
    const char *path = srv_target_path(target);
    if (strcmp(path, "/") != 0 &&
        (path < target || path > target + strlen(target) ||
         strcmp(path, target + (path - target)) != 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_head h; /* the fuzzer runs one input at a time */
    if (!read_head(&h, data, size))
        return 0;
    check_verdict(&h);
    check_target(h.target);
    free(h.buf);
    return 0;
}
