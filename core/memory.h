/*
 * core/memory.h — a hint for large buffers, shared by the trace block (core) and the
 * answer buffer (api/json/write.c).
 *
 * A block past glibc's mmap threshold (the server sets 32 MiB) is mapped afresh for
 * every request and faulted in page by page as it is first written; with 4 KiB pages
 * those faults were a tenth of an xl request's time. Transparent huge pages make it
 * one fault per 2 MiB. Only a hint: where the kernel has no THP, or uses it for every
 * mapping anyway, nothing changes. Needs _DEFAULT_SOURCE (madvise is not POSIX).
 */
#ifndef ATTN_MEMORY_H
#define ATTN_MEMORY_H

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

#endif
