/*
 * server/net/upload.h — one request body, accumulated across libmicrohttpd's upload calls.
 *
 * The buffer holds what has arrived, never what is merely declared: it starts at
 * SRV_BODY_FIRST_MIN (or the declared length, when that is smaller) and doubles as
 * bytes come, up to the declared length (which it never passes: libmicrohttpd
 * delivers no more) or, without one (chunked), up to the limit. A Content-Length
 * is a client's claim, and a claim is free to make: were it allocated or charged up
 * front, a few connections declaring large bodies and sending a byte a second would
 * fill the memory budget and make every other request a 503 while using no memory at
 * all. Doubling keeps the buffer within twice what has arrived, and costs a large
 * body a few reallocs (most grow in place at the top of the heap).
 *
 * Every allocation is charged to the server's memory budget first (server/host/budget.h)
 * and given back when the buffer is freed.
 *
 * Past the limit (a chunked body has no length to refuse early), past the budget or
 * after an allocation failure, the bytes already stored are freed and the rest is
 * drained unread, because libmicrohttpd 0.9.75 cannot queue a response while an
 * upload is in progress: the answer (413 or 503) goes out on the final call. Draining is bounded
 * by SRV_BODY_DRAIN_MIN or the limit, whichever is larger; beyond that the caller
 * closes the connection instead of reading forever.
 *
 * Not here: parsing, HTTP.
 */
#ifndef SRV_BODY_H
#define SRV_BODY_H

#include <stddef.h>

#include "server/host/budget.h"

#define SRV_BODY_FIRST_MIN ((size_t)4096)
#define SRV_BODY_DRAIN_MIN ((size_t)1 << 20)

enum srv_body_state {
    SRV_BODY_OK,        /* everything so far is stored */
    SRV_BODY_TOO_LARGE, /* over the limit: draining, answer 413 */
    SRV_BODY_NO_MEMORY, /* an allocation failed: draining, answer 503 */
    SRV_BODY_OVER_BUDGET, /* the memory budget had no room: draining, answer 503 */
    SRV_BODY_CORRUPT,   /* its Content-Encoding could not be undone: draining, answer 400 */
    SRV_BODY_ABORT      /* drained too much: close the connection */
};

struct srv_body {
    char *data;          /* (len) bytes, not NUL-terminated; owned, see srv_body_free */
    size_t len, cap;
    size_t limit;        /* --max-body */
    size_t first;        /* first allocation's size: SRV_BODY_FIRST_MIN, or less */
    size_t ceiling;      /* the most the buffer grows to: the declared length, or limit */
    size_t declared;     /* the Content-Length (at most limit), or 0: for the 503's words */
    size_t drained;      /* bytes thrown away after the state left SRV_BODY_OK */
    enum srv_body_state state;
    struct srv_budget *budget; /* borrowed; cap bytes are charged to it */
    size_t wanted;       /* what the body needs, for the 503's words: its declared
                            length, or the allocation the budget refused */
};

/* declared is the Content-Length, or -1. Allocates nothing. */
void srv_body_init(struct srv_body *b, size_t limit, long long declared,
                   struct srv_budget *budget);

/* Stores or drains n bytes; returns the state after them. */
enum srv_body_state srv_body_append(struct srv_body *b, const char *data, size_t n);

/*
 * Leaves SRV_BODY_OK for `why` (a state that drains), from the decoder of a coded body
 * (server/codec/inflate.h): the bytes stored are freed, and the n bytes just received and all
 * that follow are drained as for any refusal. Returns the state after them.
 */
enum srv_body_state srv_body_refuse(struct srv_body *b, enum srv_body_state why, size_t n);

/* Frees the buffer and gives its charge back; safe twice and on a zeroed body. */
void srv_body_free(struct srv_body *b);

#endif
