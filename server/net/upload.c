/*
 * server/net/upload.c — request body accumulation (see upload.h).
 */
#include "server/net/upload.h"

#include <stdlib.h>
#include <string.h>

void srv_body_init(struct srv_body *b, size_t limit, long long declared,
                   struct srv_budget *budget)
{
    memset(b, 0, sizeof *b);
    b->limit = limit;
    b->budget = budget;
    /* A declaration bounds the growth (no more will come), never the first allocation. */
    b->ceiling = declared > 0 && (unsigned long long)declared < limit ? (size_t)declared : limit;
    b->first = SRV_BODY_FIRST_MIN < b->ceiling ? SRV_BODY_FIRST_MIN : b->ceiling;
    b->declared = declared > 0 ? b->ceiling : 0;
    b->state = SRV_BODY_OK;
}

/* Leaves SRV_BODY_OK: the stored bytes are of no further use, give them back now. */
enum srv_body_state srv_body_refuse(struct srv_body *b, enum srv_body_state why, size_t n)
{
    srv_body_free(b);
    b->state = why;
    return srv_body_append(b, NULL, n); /* counts n as drained */
}

/*
 * Smallest capacity, doubling from the current one, that holds need bytes: at most the
 * ceiling (or the limit, should a client send more than it declared).
 */
static size_t srv_body_grow_to(const struct srv_body *b, size_t need)
{
    size_t top = need <= b->ceiling ? b->ceiling : b->limit; /* need <= limit: checked */
    size_t cap = b->cap > 0 ? b->cap : b->first;
    while (cap < need)
        cap = cap > top / 2 ? top : cap * 2; /* no size_t overflow: top caps it */
    return cap < top ? cap : top;
}

enum srv_body_state srv_body_append(struct srv_body *b, const char *data, size_t n)
{
    if (b->state != SRV_BODY_OK) {
        size_t drain_max = b->limit > SRV_BODY_DRAIN_MIN ? b->limit : SRV_BODY_DRAIN_MIN;
        b->drained = n > drain_max - b->drained ? drain_max + 1 : b->drained + n;
        if (b->drained > drain_max)
            b->state = SRV_BODY_ABORT;
        return b->state;
    }
    if (n == 0)
        return SRV_BODY_OK;
    if (n > b->limit - b->len) /* len <= limit always, so this cannot wrap */
        return srv_body_refuse(b, SRV_BODY_TOO_LARGE, n);
    if (b->len + n > b->cap) {
        size_t cap = srv_body_grow_to(b, b->len + n);
        if (!srv_budget_take(b->budget, cap - b->cap, b->cap)) {
            b->wanted = b->declared > cap ? b->declared : cap; /* the whole will not fit */
            return srv_body_refuse(b, SRV_BODY_OVER_BUDGET, n);
        }
        char *grown = realloc(b->data, cap); /* into a temporary: keep data on failure */
        if (grown == NULL) {
            srv_budget_give(b->budget, cap - b->cap);
            return srv_body_refuse(b, SRV_BODY_NO_MEMORY, n);
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return SRV_BODY_OK;
}

void srv_body_free(struct srv_body *b)
{
    if (b->cap > 0)
        srv_budget_give(b->budget, b->cap);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
