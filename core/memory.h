/*
 * core/memory.h — a hint for large buffers, shared by the trace block (core) and the
 * answer buffer (api/json/write.c), and the large block kept between traces.
 *
 * A block past glibc's mmap threshold (the server sets 32 MiB) is mapped afresh for
 * every request and faulted in page by page as it is first written; with 4 KiB pages
 * those faults were a tenth of an xl request's time. Transparent huge pages make it
 * one fault per 2 MiB. Only a hint: where the kernel has no THP, or uses it for every
 * mapping anyway, nothing changes. Needs _DEFAULT_SOURCE (madvise is not POSIX).
 */
#ifndef ATTN_MEMORY_H
#define ATTN_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* Blocks from this size up get the hint. */
#define ATTN_HUGE_BYTES ((size_t)32 << 20)

/* Asks for huge pages over the whole pages inside [p, p + bytes) when bytes is large. */
static inline void attn_hint_huge_pages(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    uintptr_t page = 4096, from = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t to = ((uintptr_t)p + bytes) & ~(page - 1);

    if (bytes >= ATTN_HUGE_BYTES && to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

/*
 * One large block kept between requests. A trace past glibc's mmap threshold is mapped
 * afresh for each request, and the kernel zeroes every page of it before the pass
 * overwrites it (clear_page_erms under `perf`; docs/performance.md has its share).
 * So the freed block of a trace (or of a streamed answer) from ATTN_HUGE_BYTES up is
 * kept, one at a time and up to the size attn_block_keep_max allows (0, the default:
 * none), for the next one that fits in it; the server lets it go after a quiet second
 * (attn_block_release) with the rest of the heap's free memory. Thread-safe.
 */

/* The largest block kept from now on; a kept block larger than that is freed now. */
void attn_block_keep_max(size_t bytes);

/*
 * A block of at least `bytes` (the kept one when it is large enough: *capacity says
 * how large it is), zero-filled when `zeroed`; NULL when none can be had.
 */
void *attn_block_alloc(size_t bytes, bool zeroed, size_t *capacity);

/* Frees a block of attn_block_alloc (NULL is nothing), or keeps it for the next. */
void attn_block_free(void *block, size_t capacity);

/* Frees the kept block, if any; returns its size (0: none was kept). */
size_t attn_block_release(void);

#endif
