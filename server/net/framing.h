/*
 * server/net/framing.h — what RFC 9112 asks of a request's head, checked over what
 * libmicrohttpd 0.9.75 lets through: its header lines, its HTTP version and its
 * request target.
 *
 * libmicrohttpd reads the body by the first Content-Length it sees (or by
 * Transfer-Encoding when there is one), keeps a repeated Host, and folds a line that
 * starts with a space or tab (obs-fold) into the line before it. A proxy in front of
 * attnd may read such a request differently, and a request hidden in the body of one
 * would then reach attnd unseen by the proxy (request smuggling). So every request
 * whose framing is ambiguous is refused before it is routed, and its connection is
 * closed (exchange.c does that with the verdict below).
 *
 * Every function here is pure: no libmicrohttpd, no allocation, no globals, so the
 * rules are tested from tables (tests/unit/check_framing.c) and fuzzed
 * (tests/fuzz/fuzz_framing.c).
 *
 * Not here: answering (exchange.c), wording the problem (api/).
 */
#ifndef SRV_FRAMING_H
#define SRV_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

/*
 * One header line, as libmicrohttpd 0.9.75 lays it out: the name, a NUL where the
 * colon was, optional spaces or tabs, then the value, all in the connection's read
 * buffer. A line continued by obs-fold is the exception: libmicrohttpd appends the
 * continuation to the name and moves the name elsewhere in its pool, so the value
 * no longer follows its name. srv_framing_feed tells a folded line by exactly that,
 * comparing addresses only (it never reads between name and value).
 */
struct srv_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

enum srv_framing_verdict {
    SRV_FRAMING_OK = 0,
    SRV_FRAMING_BAD_REQUEST,     /* 400, and close */
    SRV_FRAMING_NOT_IMPLEMENTED, /* 501: a transfer coding attnd does not read; close */
};

/* The running tally of one request's header lines: zero it with srv_framing_init. */
struct srv_framing {
    unsigned content_lengths;  /* Content-Length lines */
    bool content_length_bad;   /* one is not 1*DIGIT */
    unsigned hosts;            /* Host lines */
    bool host_bad;             /* one has a byte no authority has */
    unsigned transfer_encodings; /* Transfer-Encoding lines */
    unsigned chunked;          /* "chunked" codings among them */
    bool chunked_not_last;     /* a coding follows chunked */
    bool coding_unknown;       /* a coding other than chunked */
    bool coding_bad;           /* a coding that is not a token, or has parameters */
    bool folded;               /* a line continued by obs-fold */
    bool name_bad;             /* a field name that is not a token (e.g. "Host :") */
};

/* The verdict, with the reason in words (a static string) for the problem's detail. */
struct srv_framing_result {
    enum srv_framing_verdict verdict;
    const char *reason; /* NULL when OK */
};

void srv_framing_init(struct srv_framing *f);
/*
 * Counts one header line, fed in the order received: Transfer-Encoding lines combine
 * in order (chunked must be the last coding of all); the rest may come in any order.
 */
void srv_framing_feed(struct srv_framing *f, const struct srv_field *field);
/* The verdict once every line has been fed. version: "HTTP/1.1", "HTTP/1.0", ... */
struct srv_framing_result srv_framing_finish(const struct srv_framing *f, const char *version);

/* init, feed each of fields[0, n), finish: the whole check over a list. */
struct srv_framing_result srv_framing_check(const struct srv_field *fields, size_t n,
                                            const char *version);

/*
 * The request target as sent (MHD_OPTION_URI_LOG_CALLBACK sees it before
 * libmicrohttpd decodes it or parses its query).
 */
struct srv_target {
    bool has_nul;          /* "%00" in it: decoding would cut the path or a value short */
    bool query_too_long;   /* more than SRV_TARGET_MAX_PARAMS pairs or SRV_TARGET_MAX_QUERY bytes */
    size_t query_offset;   /* where the query starts (after '?'); 0 when there is none */
};

/*
 * The query attnd parses: libmicrohttpd 0.9.75 keeps one record per pair in the
 * connection's memory pool, and a query with more pairs than the pool holds makes it
 * drop the connection without an answer (its own 431 finds no memory to be written).
 * These bounds keep a parsed query well within the pool; /v1/shapes needs 7 pairs.
 */
#define SRV_TARGET_MAX_PARAMS 256
#define SRV_TARGET_MAX_QUERY 16384

void srv_target_read(const char *raw, struct srv_target *t);

/*
 * The path to route for a target libmicrohttpd has decoded: an absolute-form target
 * ("http://host:port/path", RFC 9112 section 3.2.2, what a forward proxy sends) is
 * routed by its path ("/" when it has none); any other is returned as it is.
 * Returns a pointer into url (or a static "/").
 */
const char *srv_target_path(const char *url);

#endif
