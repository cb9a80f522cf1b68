/*
 * server/host/heap.c — arena handles and the trim (see heap.h).
 */
#include "server/host/heap.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

/* More than any pool attnd runs with is likely to need; later threads go without. */
#define SRV_HEAP_SLOTS 64

static _Atomic(void *) srv_heap_handles[SRV_HEAP_SLOTS];
static atomic_uint srv_heap_claimed;
static _Thread_local int srv_heap_slot = -1; /* -1: not claimed yet; -2: none left */

void srv_heap_note_thread(void)
{
    if (srv_heap_slot == -1) {
        unsigned i = atomic_fetch_add(&srv_heap_claimed, 1);
        srv_heap_slot = i < SRV_HEAP_SLOTS ? (int)i : -2;
    }
    if (srv_heap_slot < 0 ||
        atomic_load_explicit(&srv_heap_handles[srv_heap_slot], memory_order_relaxed) != NULL)
        return;
    void *handle = malloc(SRV_HEAP_HANDLE); /* from this thread's arena */
    void *none = NULL;
    if (handle != NULL &&
        !atomic_compare_exchange_strong(&srv_heap_handles[srv_heap_slot], &none, handle))
        free(handle);
}

void srv_heap_trim(size_t keep_threshold)
{
    if (keep_threshold > 0)
        mallopt(M_TRIM_THRESHOLD, 0); /* the frees below shrink their arenas' tops */
    unsigned n = atomic_load(&srv_heap_claimed);
    for (unsigned i = 0; i < n && i < SRV_HEAP_SLOTS; i++)
        free(atomic_exchange(&srv_heap_handles[i], NULL));
    malloc_trim(0);
    if (keep_threshold > 0)
        mallopt(M_TRIM_THRESHOLD, (int)keep_threshold);
}
