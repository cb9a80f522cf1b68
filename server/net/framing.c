/*
 * server/net/framing.c — RFC 9112's rules for a request's head (see framing.h).
 *
 * The rules, with their sections of RFC 9112 (400 closes the connection, since what
 * follows on it cannot be trusted to be a request):
 * - a header line continued by obs-fold: 400 (5.2);
 * - a field name that is not a token, as with whitespace before the colon: 400 (5.1);
 * - more than one Host, no Host in HTTP/1.1, or a Host that is no authority: 400 (3.2);
 * - more than one Content-Length, even with equal values, or one that is not a
 *   decimal number: 400 (6.3; RFC 9110 8.6 allows accepting equal values, which
 *   libmicrohttpd does not check, so none are accepted);
 * - Content-Length with Transfer-Encoding: 400 (6.3 lets a server refuse it, and a
 *   request carrying both is the classic smuggling shape);
 * - Transfer-Encoding in HTTP/1.0: 400 (6.1);
 * - chunked not the last coding, or given twice: 400 (6.3, 7);
 * - any other coding (identity, gzip, ...): 501 (6.1), since libmicrohttpd would wait
 *   for the connection's end to find the body.
 *
 * Not here: anything libmicrohttpd already refuses itself (a Content-Length that is
 * not a number when alone: it answers 400 before attnd sees the request).
 */
#include "server/net/framing.h"

#include <stdint.h>
#include <string.h>

#include "server/ops/words.h"

/*
 * The widest gap between a name's end and its value that is still one line: the NUL
 * of the colon and the whitespace after it. A client sending more spaces than this is
 * refused like a folded line; none does.
 */
#define SRV_FRAMING_MAX_OWS 1024u

static bool srv_is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool srv_is_token(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!srv_is_tchar((unsigned char)s[i]))
            return false;
    return true;
}

static char srv_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* s[0, len) equals the lower-case word, ignoring case. */
static bool srv_is_word(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    if (len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (srv_lower(s[i]) != word[i])
            return false;
    return true;
}

static bool srv_is_digits(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* uri-host [ ":" port ] (RFC 3986): unreserved, pct-encoded, sub-delims, ':', '[', ']'. */
static bool srv_is_authority(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c != '\0' && strchr("-._~%!$&'()*+,;=:[]", c) != NULL);
        if (!ok)
            return false;
    }
    return true;
}

/* The value lies right after its name, as on one line (see struct srv_field). */
static bool srv_is_one_line(const struct srv_field *field)
{
    uintptr_t name_end = (uintptr_t)field->name + field->name_len + 1; /* past the NUL */
    uintptr_t value = (uintptr_t)field->value;
    return value >= name_end && value - name_end <= SRV_FRAMING_MAX_OWS;
}

static bool srv_is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* One Transfer-Encoding line: a comma-separated list, empty elements allowed (RFC 9110 5.6.1). */
static void srv_feed_codings(struct srv_framing *f, const char *s, size_t len)
{
    size_t i = 0;
    while (i <= len) {
        size_t start = i;
        while (i < len && s[i] != ',')
            i++;
        size_t a = start, b = i;
        while (a < b && srv_is_ows(s[a]))
            a++;
        while (b > a && srv_is_ows(s[b - 1]))
            b--;
        i++; /* past the comma (or the end) */
        if (a == b)
            continue;
        const char *semi = memchr(s + a, ';', b - a);
        size_t name_end = semi != NULL ? (size_t)(semi - s) : b;
        while (name_end > a && srv_is_ows(s[name_end - 1]))
            name_end--;
        if (!srv_is_token(s + a, name_end - a)) {
            f->coding_bad = true;
            continue;
        }
        if (f->chunked > 0)
            f->chunked_not_last = true; /* chunked was followed by this coding */
        if (srv_is_word(s + a, name_end - a, "chunked")) {
            f->chunked++;
            if (semi != NULL)
                f->coding_bad = true; /* chunked takes no parameters */
        } else {
            f->coding_unknown = true;
        }
    }
}

void srv_framing_init(struct srv_framing *f)
{
    memset(f, 0, sizeof *f);
}

void srv_framing_feed(struct srv_framing *f, const struct srv_field *field)
{
    if (!srv_is_one_line(field))
        f->folded = true;
    if (!srv_is_token(field->name, field->name_len)) {
        f->name_bad = true;
        return;
    }
    const char *n = field->name;
    size_t len = field->name_len;
    if (srv_is_word(n, len, "content-length")) {
        f->content_lengths++;
        if (!srv_is_digits(field->value, field->value_len))
            f->content_length_bad = true;
    } else if (srv_is_word(n, len, "host")) {
        f->hosts++;
        if (!srv_is_authority(field->value, field->value_len))
            f->host_bad = true;
    } else if (srv_is_word(n, len, "transfer-encoding")) {
        f->transfer_encodings++;
        srv_feed_codings(f, field->value, field->value_len);
    }
}

/* HTTP/1.0 and older need no Host and may not use Transfer-Encoding. */
static bool srv_is_http10(const char *version)
{
    size_t len = version != NULL ? strlen(version) : 0;
    return len == 0 || srv_is_word(version, len, "http/1.0") ||
           srv_is_word(version, len, "http/0.9");
}

static struct srv_framing_result srv_bad(const char *reason)
{
    struct srv_framing_result r = {SRV_FRAMING_BAD_REQUEST, reason};
    return r;
}

struct srv_framing_result srv_framing_finish(const struct srv_framing *f, const char *version)
{
    bool http10 = srv_is_http10(version);
    if (f->folded)
        return srv_bad(SRV_N("a header line starts with a space or a tab (obs-fold, RFC 9112 "
                       "section 5.2): send each header on one line"));
    if (f->name_bad)
        return srv_bad(SRV_N("a header name is not a token (RFC 9112 section 5.1): no space "
                       "before the colon, no control bytes"));
    if (f->hosts > 1)
        return srv_bad(SRV_N("the request has more than one Host header (RFC 9112 section 3.2)"));
    if (f->hosts == 0 && !http10)
        return srv_bad(SRV_N("an HTTP/1.1 request needs a Host header (RFC 9112 section 3.2)"));
    if (f->host_bad)
        return srv_bad(SRV_N("the Host header is not a host[:port] (RFC 9112 section 3.2)"));
    if (f->content_lengths > 1)
        return srv_bad(SRV_N("the request has more than one Content-Length header (RFC 9112 "
                       "section 6.3): send one"));
    if (f->content_length_bad)
        return srv_bad(SRV_N("Content-Length is not a decimal number of bytes (RFC 9110 "
                       "section 8.6)"));
    if (f->transfer_encodings == 0) {
        struct srv_framing_result ok = {SRV_FRAMING_OK, NULL};
        return ok;
    }
    if (f->content_lengths > 0)
        return srv_bad(SRV_N("the request has both Content-Length and Transfer-Encoding (RFC 9112 "
                       "section 6.3): send one of them"));
    if (http10)
        return srv_bad(SRV_N("an HTTP/1.0 request cannot use Transfer-Encoding (RFC 9112 "
                       "section 6.1)"));
    if (f->coding_bad)
        return srv_bad(SRV_N("Transfer-Encoding is not a list of transfer codings (RFC 9112 "
                       "section 6.1)"));
    if (f->chunked_not_last || f->chunked > 1)
        return srv_bad(SRV_N("chunked must be the last transfer coding, and given once (RFC 9112 "
                       "section 6.3)"));
    if (f->coding_unknown) {
        struct srv_framing_result r = {SRV_FRAMING_NOT_IMPLEMENTED,
                                       SRV_N("attnd reads the chunked transfer coding alone: "
                                             "send \"Transfer-Encoding: chunked\" or a "
                                             "Content-Length")};
        return r;
    }
    if (f->chunked == 0)
        return srv_bad(SRV_N("Transfer-Encoding names no transfer coding (RFC 9112 section 6.1)"));
    struct srv_framing_result ok = {SRV_FRAMING_OK, NULL};
    return ok;
}

struct srv_framing_result srv_framing_check(const struct srv_field *fields, size_t n,
                                            const char *version)
{
    struct srv_framing f;
    srv_framing_init(&f);
    for (size_t i = 0; i < n; i++)
        srv_framing_feed(&f, &fields[i]);
    return srv_framing_finish(&f, version);
}

void srv_target_read(const char *raw, struct srv_target *t)
{
    memset(t, 0, sizeof *t);
    t->has_nul = strstr(raw, "%00") != NULL;
    const char *q = strchr(raw, '?');
    if (q == NULL)
        return;
    t->query_offset = (size_t)(q + 1 - raw);
    size_t bytes = strlen(q + 1), pairs = bytes > 0 ? 1 : 0;
    for (const char *p = q + 1; *p != '\0'; p++)
        pairs += *p == '&';
    t->query_too_long = pairs > SRV_TARGET_MAX_PARAMS || bytes > SRV_TARGET_MAX_QUERY;
}

/* url starts with scheme "://", ignoring the scheme's case; the length of that prefix or 0. */
static size_t srv_scheme_prefix(const char *url, const char *scheme)
{
    size_t n = strlen(scheme);
    for (size_t i = 0; i < n; i++)
        if (url[i] == '\0' || srv_lower(url[i]) != scheme[i])
            return 0;
    return strncmp(url + n, "://", 3) == 0 ? n + 3 : 0;
}

const char *srv_target_path(const char *url)
{
    if (url[0] == '/')
        return url;
    size_t skip = srv_scheme_prefix(url, "http");
    if (skip == 0)
        skip = srv_scheme_prefix(url, "https");
    if (skip == 0)
        return url;
    const char *path = strchr(url + skip, '/');
    return path != NULL ? path : "/";
}
