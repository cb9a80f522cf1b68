/*
 * api/json/segments.h — a body in pieces: what the JSON writer hands over when it
 * wrote a large answer on several threads, and what the server sends as it is
 * (vectored I/O), never copied into one buffer. A V2 binary answer's pieces lie in
 * the memory of what computed them (an owner the list frees last), so its tensors
 * are sent where they were computed, never copied into a body.
 */
#ifndef API_JSON_SEGMENTS_H
#define API_JSON_SEGMENTS_H

#include <stddef.h>

/* One piece of a body sent in pieces: data[0, len) inside the allocation base. */
struct api_segment {
    void *base;       /* malloc'd, freed by api_segments_free; NULL when data lies in
                         another piece (a repeated text) */
    const char *data;
    size_t len;
};

/*
 * A body in pieces, in order: one allocation for the list (n pieces, total bytes).
 * Pieces with base NULL may also point into `owner`, which the list owns: freed by
 * owner_free(owner) after the pieces, when the list is freed. owner_bytes is the
 * memory the owner holds (what a memory budget charges for it), 0 without one.
 */
struct api_segments {
    size_t n, total;
    void *owner;                  /* owned; NULL when none */
    void (*owner_free)(void *owner);
    size_t owner_bytes;
    struct api_segment seg[];
};

/*
 * A list with room for `cap` pieces, none used and no owner; NULL when memory runs
 * out. Freed with api_segments_free.
 */
struct api_segments *api_segments_alloc(size_t cap);

/*
 * The memory the pieces hold: the owned pieces' bytes and the owner's, never less than
 * the body's total (what a budget charges while the body is sent).
 */
size_t api_segments_held(const struct api_segments *s);

/* Frees every piece, then the owner, then the list; NULL is fine. void * to serve as a
   free callback. */
void api_segments_free(void *segments);

#endif
