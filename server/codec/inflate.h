/*
 * server/codec/inflate.h — a gzip or deflate (zlib format) request body, undone as its pieces
 * arrive: what libmicrohttpd hands each upload call is inflated at once into the
 * request's body (server/net/upload.h), so the inflated size meets --max-body and the
 * memory budget as it grows, exactly as a plain body's bytes do.
 *
 * The defence against a bomb (a megabyte that inflates to a gigabyte) is that nothing
 * is inflated ahead of the body: output goes through a small fixed buffer straight
 * into srv_body_append, and the moment the body passes its limit it is refused
 * (SRV_BODY_TOO_LARGE, a 413) and no further byte is inflated; the rest of the upload
 * is drained, counted in compressed bytes as they arrive on the wire.
 *
 * zlib, not libdeflate: libdeflate undoes whole buffers only, and a body arrives in
 * pieces whose inflated size is unknown until the end. zlib's inflate keeps its state
 * between pieces (its window, 32 KiB, and its tables), charged to the memory budget.
 *
 * Not here: which coding a request names (coding.h), HTTP answers (exchange.c).
 */
#ifndef SRV_INFLATE_H
#define SRV_INFLATE_H

#include <stdbool.h>
#include <stddef.h>

#include <zlib.h>

#include "server/codec/coding.h"
#include "server/host/budget.h"
#include "server/net/upload.h"

/* Inflated bytes made per inflate call, before srv_body_append takes them. */
#define SRV_INFLATE_CHUNK ((size_t)16 * 1024)

/* Why a stream could not be undone (server/codec/inflate_problem.h puts it in words). */
enum srv_inflate_fault {
    SRV_INFLATE_FINE = 0,
    SRV_INFLATE_DAMAGED,    /* zlib found the data or a checksum wrong */
    SRV_INFLATE_TRAILING,   /* bytes after a deflate stream's end */
    SRV_INFLATE_DICTIONARY, /* a zlib stream that asks for a preset dictionary */
    SRV_INFLATE_CUT_SHORT   /* the body ended before the stream did */
};

struct srv_inflate {
    z_stream z;
    enum srv_coding coding;     /* gzip or deflate */
    bool started;               /* inflateInit2 done: inflateEnd owed */
    bool ended;                 /* the stream's end (and checksum) has been read */
    unsigned long long in;      /* compressed bytes read, for the detail */
    struct srv_budget *budget;  /* borrowed: zlib's own allocations are charged to it */
    size_t charged;             /* what zlib holds now */
    size_t refused;             /* the block the budget refused zlib, or 0 */
    enum srv_inflate_fault fault; /* why the stream could not be undone, once it could not */
    const char *zlib_said;      /* SRV_INFLATE_DAMAGED: zlib's own words (static), or NULL */
};

/* Sets f up for a body in `coding` (gzip or deflate). Allocates nothing yet. */
void srv_inflate_init(struct srv_inflate *f, enum srv_coding coding, struct srv_budget *budget);

/*
 * Inflates n received bytes into b and returns b's state after them. A corrupt stream
 * refuses the body (SRV_BODY_CORRUPT, f->fault says why); so do bytes after the
 * stream's end (a gzip body may hold several members, each read in turn); zlib finding
 * no memory refuses it as over the budget (its allocations are charged first) or out
 * of memory. Once b is refused, bytes
 * are only counted (drained).
 */
enum srv_body_state srv_inflate_feed(struct srv_inflate *f, struct srv_body *b,
                                     const char *data, size_t n);

/*
 * At the body's end: true when the stream ended; otherwise false, with f->fault
 * SRV_INFLATE_CUT_SHORT.
 */
bool srv_inflate_finish(struct srv_inflate *f);

/* Frees zlib's state and gives its charge back; safe twice. */
void srv_inflate_deinit(struct srv_inflate *f);

#endif
