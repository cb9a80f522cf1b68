/*
 * server/body.h — one request body, accumulated across libmicrohttpd's upload calls.
 *
 * With a Content-Length, the buffer is allocated once, at the declared size, on the
 * first piece of the body: a multi-megabyte body is then copied once, into memory
 * faulted in once, instead of through a chain of doubling reallocs (each a copy and a
 * fresh mapping). The declaration cannot cost more than the limit (--max-body; api/
 * refuses a larger one before any byte is read), and the allocation waits for the
 * first byte, so a client that only declares costs nothing. Without a length
 * (chunked), the buffer starts at SRV_BODY_FIRST_MIN and doubles up to the limit.
 *
 * Every allocation is charged to the server's memory budget first (server/budget.h)
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

#include "server/budget.h"

#define SRV_BODY_FIRST_MIN ((size_t)4096)
#define SRV_BODY_DRAIN_MIN ((size_t)1 << 20)

enum srv_body_state {
    SRV_BODY_OK,        /* everything so far is stored */
    SRV_BODY_TOO_LARGE, /* over the limit: draining, answer 413 */
    SRV_BODY_NO_MEMORY, /* an allocation failed: draining, answer 503 */
    SRV_BODY_OVER_BUDGET, /* the memory budget had no room: draining, answer 503 */
    SRV_BODY_ABORT      /* drained too much: close the connection */
};

struct srv_body {
    char *data;          /* (len) bytes, not NUL-terminated; owned, see srv_body_free */
    size_t len, cap;
    size_t limit;        /* --max-body */
    size_t first;        /* first allocation's size: the declared length, if any */
    size_t drained;      /* bytes thrown away after the state left SRV_BODY_OK */
    enum srv_body_state state;
    struct srv_budget *budget; /* borrowed; cap bytes are charged to it */
    size_t wanted;       /* the allocation the budget refused, for the 503's words */
};

/* declared is the Content-Length, or -1. Allocates nothing. */
void srv_body_init(struct srv_body *b, size_t limit, long long declared,
                   struct srv_budget *budget);

/* Stores or drains n bytes; returns the state after them. */
enum srv_body_state srv_body_append(struct srv_body *b, const char *data, size_t n);

/* Frees the buffer and gives its charge back; safe twice and on a zeroed body. */
void srv_body_free(struct srv_body *b);

#endif
