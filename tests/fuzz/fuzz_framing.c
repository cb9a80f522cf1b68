/*
 * tests/fuzz/fuzz_framing.c — libFuzzer harness for server/framing.c: RFC 9112's
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

#include "server/framing.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /*
     * Lines, NUL-terminated in place, then the moved names after them. A name folded
     * again is copied again, longer: the room is bounded, and a fold that would not
     * fit is dropped (libmicrohttpd's pool would refuse it with a 431 of its own).
     */
    size_t room = 4 * size + 2;
    char *buf = malloc(room);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    size_t moved = size + 1;
    struct srv_field fields[FUZZ_MAX_FIELDS];
    size_t n = 0;
    bool any_folded = false;

    size_t first = line_end(buf, size, 0);
    buf[first] = '\0';
    if (first > 0 && buf[first - 1] == '\r')
        buf[first - 1] = '\0';
    char *sp = strchr(buf, ' ');
    const char *version = sp != NULL ? sp + 1 : "";
    if (sp != NULL)
        *sp = '\0';
    const char *target = buf;

    for (size_t at = first + 1; at < size;) {
        size_t end = line_end(buf, size, at);
        buf[end] = '\0';
        if (end > at && buf[end - 1] == '\r')
            buf[end - 1] = '\0';
        char *line = buf + at;
        at = end + 1;
        if ((line[0] == ' ' || line[0] == '\t') && n > 0) {
            /* obs-fold, as libmicrohttpd 0.9.75: name + continuation, moved to the pool. */
            struct srv_field *prev = &fields[n - 1];
            const char *cont = line + strspn(line, " \t");
            size_t cont_len = strlen(cont);
            if (prev->name_len + cont_len + 1 > room - moved)
                continue;
            char *name = buf + moved;
            memcpy(name, prev->name, prev->name_len);
            memcpy(name + prev->name_len, cont, cont_len);
            name[prev->name_len + cont_len] = '\0';
            moved += prev->name_len + cont_len + 1;
            prev->name = name;
            prev->name_len += cont_len;
            any_folded = true;
            continue;
        }
        char *colon = strchr(line, ':');
        if (colon == NULL || n == FUZZ_MAX_FIELDS)
            continue;
        *colon = '\0';
        char *value = colon + 1 + strspn(colon + 1, " \t");
        struct srv_field f = {line, (size_t)(colon - line), value, strlen(value)};
        fields[n++] = f;
    }

    struct srv_framing_result r = srv_framing_check(fields, n, version);
    if (r.verdict != SRV_FRAMING_OK && r.verdict != SRV_FRAMING_BAD_REQUEST &&
        r.verdict != SRV_FRAMING_NOT_IMPLEMENTED)
        abort();
    if ((r.verdict == SRV_FRAMING_OK) != (r.reason == NULL))
        abort();
    if (r.reason != NULL && strlen(r.reason) == 0)
        abort();

    unsigned lengths = 0, codings = 0;
    for (size_t i = 0; i < n; i++) {
        lengths += name_is(&fields[i], "content-length");
        codings += name_is(&fields[i], "transfer-encoding");
    }
    /* Transfer-Encoding lines combine in their order (chunked must come last): only
     * with one of them at most is the order of lines free. */
    struct srv_framing backwards;
    srv_framing_init(&backwards);
    for (size_t i = n; i > 0; i--)
        srv_framing_feed(&backwards, &fields[i - 1]);
    if (codings <= 1 && srv_framing_finish(&backwards, version).verdict != r.verdict)
        abort();

    if (r.verdict == SRV_FRAMING_OK && (any_folded || lengths > 1 || (lengths && codings)))
        abort();

    struct srv_target t;
    srv_target_read(target, &t);
    if (t.query_offset > strlen(target))
        abort();
    const char *path = srv_target_path(target);
    if (strcmp(path, "/") != 0 &&
        (path < target || path > target + strlen(target) ||
         strcmp(path, target + (path - target)) != 0))
        abort();

    free(buf);
    return 0;
}
