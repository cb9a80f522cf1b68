/*
 * server/codec/coding.c — Content-Encoding and Accept-Encoding read into values (see coding.h).
 */
#include "server/codec/coding.h"

#include <string.h>
#include <strings.h>

const char *srv_coding_name(enum srv_coding c)
{
    switch (c) {
    case SRV_CODING_GZIP:
        return "gzip";
    case SRV_CODING_DEFLATE:
        return "deflate";
    case SRV_CODING_IDENTITY:
        break;
    }
    return "identity";
}

static bool srv_is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* One member of a comma-separated list: [start, end) with its spaces trimmed. */
struct srv_member {
    const char *start, *end;
};

/* The next member from *p (advanced past it and its comma); false at the end. */
static bool srv_next_member(const char **p, struct srv_member *m)
{
    const char *s = *p;
    while (*s == ',' || srv_is_ows(*s))
        s++;
    if (*s == '\0')
        return false;
    const char *e = s;
    while (*e != '\0' && *e != ',')
        e++;
    *p = e;
    while (e > s && srv_is_ows(e[-1]))
        e--;
    m->start = s;
    m->end = e;
    return true;
}

/* The member's coding name: up to a ';' or a space. */
static size_t srv_token_len(const struct srv_member *m)
{
    size_t n = 0;
    while (m->start + n < m->end && m->start[n] != ';' && !srv_is_ows(m->start[n]))
        n++;
    return n;
}

static bool srv_token_is(const struct srv_member *m, size_t n, const char *name)
{
    return n == strlen(name) && strncasecmp(m->start, name, n) == 0;
}

/* gzip, deflate or identity by name (x-gzip is gzip: RFC 9110, 8.4.1.3); false for others. */
static bool srv_coding_by_name(const struct srv_member *m, size_t n, enum srv_coding *c)
{
    if (srv_token_is(m, n, "gzip") || srv_token_is(m, n, "x-gzip"))
        *c = SRV_CODING_GZIP;
    else if (srv_token_is(m, n, "deflate"))
        *c = SRV_CODING_DEFLATE;
    else if (srv_token_is(m, n, "identity"))
        *c = SRV_CODING_IDENTITY;
    else
        return false;
    return true;
}

/* ---- Content-Encoding ---- */

void srv_content_coding_init(struct srv_content_coding *c)
{
    memset(c, 0, sizeof *c);
}

static void srv_content_coding_refuse(struct srv_content_coding *c, const struct srv_member *m,
                                      size_t n)
{
    if (c->name[0] != '\0')
        return; /* the first refusal is the one named */
    if (n >= sizeof c->name)
        n = sizeof c->name - 1;
    memcpy(c->name, m->start, n);
    c->name[n] = '\0';
}

void srv_content_coding_feed(struct srv_content_coding *c, const char *value)
{
    struct srv_member m;
    while (value != NULL && srv_next_member(&value, &m)) {
        size_t n = (size_t)(m.end - m.start); /* a coding takes no parameters */
        enum srv_coding coding;
        if (!srv_coding_by_name(&m, n, &coding)) {
            c->unknown = true;
            srv_content_coding_refuse(c, &m, n);
        } else if (coding != SRV_CODING_IDENTITY) {
            if (++c->count > 1)
                srv_content_coding_refuse(c, &m, n);
            else
                c->coding = coding;
        }
    }
}

bool srv_content_coding_ok(const struct srv_content_coding *c)
{
    return !c->unknown && c->count <= 1;
}

/* ---- Accept-Encoding ---- */

/* A qvalue (RFC 9110, 12.4.2) in thousandths: "0", "0.5", "1.000"; -1 when malformed. */
static int srv_qvalue(const char *s, const char *end)
{
    if (s == end || (*s != '0' && *s != '1'))
        return -1;
    int q = (*s - '0') * 1000, scale = 100;
    s++;
    if (s < end && *s == '.') {
        for (s++; s < end && *s >= '0' && *s <= '9' && scale > 0; s++, scale /= 10)
            q += (*s - '0') * scale;
    }
    return s == end && q <= 1000 ? q : -1;
}

/* The member's q (1000 without one); -1 when a parameter cannot be read. */
static int srv_member_q(const struct srv_member *m, size_t token)
{
    int q = 1000;
    const char *p = m->start + token;
    while (p < m->end) {
        while (p < m->end && (srv_is_ows(*p) || *p == ';'))
            p++;
        const char *e = p;
        while (e < m->end && *e != ';')
            e++;
        const char *v = e;
        while (v > p && srv_is_ows(v[-1]))
            v--;
        if (v - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
            q = srv_qvalue(p + 2, v);
        else if (v > p)
            return -1; /* Accept-Encoding's members take q alone */
        if (q < 0)
            return -1;
        p = e;
    }
    return q;
}

/* q of each coding as named (-1: not named). */
struct srv_qs {
    int gzip, deflate, identity, star;
};

static void srv_note_q(struct srv_qs *qs, const struct srv_member *m)
{
    size_t n = srv_token_len(m);
    int q = srv_member_q(m, n);
    enum srv_coding c;
    if (q < 0)
        return;
    if (srv_token_is(m, n, "*"))
        qs->star = q;
    else if (srv_coding_by_name(m, n, &c))
        *(c == SRV_CODING_GZIP ? &qs->gzip : c == SRV_CODING_DEFLATE ? &qs->deflate
                                                                     : &qs->identity) = q;
}

struct srv_accept_coding srv_accept_coding_parse(const char *header)
{
    struct srv_accept_coding a = {SRV_CODING_IDENTITY, false};
    if (header == NULL)
        return a;
    struct srv_qs qs = {-1, -1, -1, -1};
    struct srv_member m;
    while (srv_next_member(&header, &m))
        srv_note_q(&qs, &m);
    /* A coding not named takes `*`'s q, or is not acceptable (identity always is). */
    int gzip = qs.gzip >= 0 ? qs.gzip : qs.star > 0 ? qs.star : 0;
    int deflate = qs.deflate >= 0 ? qs.deflate : qs.star > 0 ? qs.star : 0;
    int identity = qs.identity >= 0 ? qs.identity : qs.star >= 0 ? (qs.star > 0 ? 1 : 0) : 1;
    if (gzip > 0 && gzip >= deflate)
        a.coding = SRV_CODING_GZIP;
    else if (deflate > 0)
        a.coding = SRV_CODING_DEFLATE;
    a.identity_refused = identity == 0;
    return a;
}

enum srv_coding srv_accept_coding_for(const struct srv_accept_coding *a, size_t len)
{
    if (len < SRV_CODING_MIN_BYTES && !a->identity_refused)
        return SRV_CODING_IDENTITY;
    return a->coding;
}
