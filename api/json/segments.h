/*
 * api/json/segments.h — a body in pieces: what the JSON writer hands over when it
 * wrote a large answer on several threads, and what the server sends as it is
 * (vectored I/O), never copied into one buffer.
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

/* A body in pieces, in order: one allocation for the list (n pieces, total bytes). */
struct api_segments {
    size_t n, total;
    struct api_segment seg[];
};

/* Frees every piece and the list; NULL is fine. void * to serve as a free callback. */
void api_segments_free(void *segments);

#endif
