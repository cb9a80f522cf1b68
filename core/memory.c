/*
 * core/memory.c — the large block kept between traces (see memory.h).
 *
 * One block, behind a mutex: only blocks of 32 MiB and more come here, a few a
 * request at most, so the lock costs nothing next to what it saves.
 */
#define _DEFAULT_SOURCE /* madvise in memory.h */
#include "memory.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t attn_kept_lock = PTHREAD_MUTEX_INITIALIZER;
static void *attn_kept;        /* the block kept, or NULL */
static size_t attn_kept_bytes; /* its size; 0 when none */
static size_t attn_kept_max;   /* the largest block kept: 0 keeps none */

/* Takes the kept block out of the slot (NULL: none); the caller holds the lock. */
static void *attn_kept_take(size_t *bytes)
{
    void *p = attn_kept;
    *bytes = attn_kept_bytes;
    attn_kept = NULL;
    attn_kept_bytes = 0;
    return p;
}

void attn_block_keep_max(size_t bytes)
{
    void *drop = NULL;
    size_t dropped;
    pthread_mutex_lock(&attn_kept_lock);
    attn_kept_max = bytes;
    if (attn_kept_bytes > bytes)
        drop = attn_kept_take(&dropped);
    pthread_mutex_unlock(&attn_kept_lock);
    free(drop);
}

void *attn_block_alloc(size_t bytes, bool zeroed, size_t *capacity)
{
    void *p = NULL;
    size_t got = 0;
    if (bytes >= ATTN_HUGE_BYTES) {
        pthread_mutex_lock(&attn_kept_lock);
        if (attn_kept != NULL && attn_kept_bytes >= bytes)
            p = attn_kept_take(&got);
        pthread_mutex_unlock(&attn_kept_lock);
    }
    if (p != NULL) {
        if (zeroed)
            memset(p, 0, bytes);
    } else {
        /* calloc, not malloc and memset: a fresh mapping is zero already. */
        p = zeroed ? calloc(1, bytes) : malloc(bytes);
        got = bytes;
        if (p != NULL)
            attn_hint_huge_pages(p, bytes);
    }
    *capacity = p != NULL ? got : 0;
    return p;
}

void attn_block_free(void *block, size_t capacity)
{
    void *drop = block;
    size_t dropped;
    if (block != NULL && capacity >= ATTN_HUGE_BYTES) {
        pthread_mutex_lock(&attn_kept_lock);
        /* The larger of the two is kept: it fits every request the smaller would. */
        if (capacity <= attn_kept_max && capacity > attn_kept_bytes) {
            drop = attn_kept_take(&dropped);
            attn_kept = block;
            attn_kept_bytes = capacity;
        }
        pthread_mutex_unlock(&attn_kept_lock);
    }
    free(drop);
}

size_t attn_block_release(void)
{
    size_t bytes;
    pthread_mutex_lock(&attn_kept_lock);
    void *p = attn_kept_take(&bytes);
    pthread_mutex_unlock(&attn_kept_lock);
    free(p);
    return bytes;
}
