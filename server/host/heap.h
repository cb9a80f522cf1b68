/*
 * server/host/heap.h — giving the heap's free memory back after a burst, every arena
 * included.
 *
 * glibc's malloc_trim (2.36) releases the free chunks of every arena and the top of
 * the main heap, but not the top of a thread's own arena: that shrinks only when a
 * chunk of 64 KiB or more is freed into the arena while its top is past
 * M_TRIM_THRESHOLD, which attnd keeps high between requests (server/main.c,
 * srv_malloc_policy). libmicrohttpd's workers allocate in arenas of their own, so
 * after a burst up to that threshold (64 MiB) could stay resident per worker.
 *
 * So each worker keeps a handle in its arena: a block of SRV_HEAP_HANDLE bytes made
 * after a request. To trim, the main thread lowers the threshold, frees every handle
 * (each free shrinks its arena's top), calls malloc_trim and restores the threshold;
 * a worker makes a new handle after its next request.
 *
 * Not here: when to trim (main.c: after a quiet second), the malloc policy itself.
 */
#ifndef SRV_HEAP_H
#define SRV_HEAP_H

#include <stddef.h>

/* glibc frees a chunk this large straight into its arena and then considers trimming. */
#define SRV_HEAP_HANDLE ((size_t)64 * 1024)

/* On a request thread, after a request: gives its arena a handle if it has none. */
void srv_heap_note_thread(void);

/*
 * On the main thread, when no request is in flight: releases the free memory of every
 * arena. keep_threshold is the M_TRIM_THRESHOLD to restore afterwards, or 0 when attnd
 * does not set the malloc policy (GLIBC_TUNABLES does): then only malloc_trim runs.
 */
void srv_heap_trim(size_t keep_threshold);

#endif
