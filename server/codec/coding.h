/*
 * server/codec/coding.h — which content codings a request's body arrives in and its answer
 * may go out in: Content-Encoding and Accept-Encoding read into plain values (RFC 9110,
 * 8.4 and 12.5.3). Pure functions over header text, no I/O, so a table test covers them.
 *
 * attnd reads and writes two codings: gzip (RFC 1952; x-gzip is its old name) and
 * deflate, which in HTTP means the zlib format (RFC 1950), as tritonclient
 * (zlib.compress), browsers and curl send and expect it, not raw deflate.
 *
 * Not here: the (de)compression itself (inflate.h, deflate.h), HTTP.
 */
#ifndef SRV_CODING_H
#define SRV_CODING_H

#include <stdbool.h>
#include <stddef.h>

enum srv_coding {
    SRV_CODING_IDENTITY = 0, /* as is */
    SRV_CODING_GZIP,
    SRV_CODING_DEFLATE /* the zlib format */
};

/* "gzip", "deflate" or "identity": the coding's name on the wire. Static. */
const char *srv_coding_name(enum srv_coding c);

/* ---- Content-Encoding (the request's body) ---- */

/* A request's Content-Encoding fields, read one after the other (a list, or repeated). */
struct srv_content_coding {
    enum srv_coding coding;    /* the one coding to undo; identity when none */
    size_t count;              /* codings other than identity seen */
    bool unknown;              /* a coding attnd cannot undo was named */
    char name[32];             /* the first coding refused (unknown or stacked), cut */
};

void srv_content_coding_init(struct srv_content_coding *c);

/* Reads one Content-Encoding field's value ("gzip", "gzip, identity", "br"). */
void srv_content_coding_feed(struct srv_content_coding *c, const char *value);

/*
 * Whether the body can be read: every coding known and at most one besides identity
 * ("gzip, gzip" is refused: nobody sends it, and each layer would multiply the work).
 */
bool srv_content_coding_ok(const struct srv_content_coding *c);

/* ---- Accept-Encoding (the answer) ---- */

/* Below this many bytes an answer goes out as is: the coding's framing outweighs its gain. */
#define SRV_CODING_MIN_BYTES ((size_t)1024)

/* The answer's coding, from Accept-Encoding. */
struct srv_accept_coding {
    enum srv_coding coding;   /* what to send (identity when no coding is acceptable) */
    bool identity_refused;    /* identity;q=0 (or *;q=0 with no identity): compress
                                 whatever the size, when a coding is acceptable */
};

/*
 * header is Accept-Encoding's value, or NULL when absent (then identity: a client
 * that says nothing may not be able to undo a coding). q-values are honoured (q=0
 * refuses), `*` stands for every coding not named, gzip is preferred on a tie, and a
 * member that cannot be read (a bad q) counts as not sent.
 */
struct srv_accept_coding srv_accept_coding_parse(const char *header);

/*
 * The coding an answer of len bytes goes out in: identity below SRV_CODING_MIN_BYTES,
 * unless the client refused identity.
 */
enum srv_coding srv_accept_coding_for(const struct srv_accept_coding *a, size_t len);

#endif
