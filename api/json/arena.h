/*
 * api/json/arena.h — where jansson's allocations go while a request is handled.
 *
 * A request body becomes one jansson node per number: tens of thousands of 24-byte
 * mallocs for a medium request, and as many frees when the document is released,
 * together about a fifth of reading it. While a request is handled on a thread, its
 * nodes are instead cut from a few large chunks (a bump allocator) that are released
 * at once when the request ends; jansson's own frees of those nodes do nothing.
 *
 * jansson allocates through api_json_malloc/api_json_free (api_json_alloc_init):
 * inside an arena scope on this thread they use the arena, outside it plain malloc
 * and free, so a value created before the scope and released inside it is still
 * freed properly. Chunks come from malloc, so a test that wraps malloc still sees
 * (and can fail) them.
 *
 * Blocks of API_JSON_BIG bytes or more (a long array's table, a long string) are not
 * cut from chunks: jansson grows an array by allocating a table twice the size and
 * freeing the old one, and in a chunk the old tables would stay until the end, about
 * doubling what a body of millions of short numbers holds (480 MB for 16 MiB of
 * zeros). They are malloc'd on their own, freed when jansson frees them, and any still
 * held are freed with the arena.
 *
 * Ownership: nothing allocated by jansson inside a scope may outlive it. api/ uses
 * jansson only for request documents, which never leave the request.
 */
#ifndef API_JSON_ARENA_H
#define API_JSON_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct api_json_chunk;
struct api_json_big;
struct api_json_packed;

struct api_json_arena {
    struct api_json_chunk *chunks;  /* newest first */
    struct api_json_big *bigs;      /* blocks too large for a chunk, still allocated */
    struct api_json_packed *packed; /* matrices read as numbers (json/read.h), newest first */
    struct api_json_arena *outer;   /* the scope this one is nested in, or NULL */
};

/*
 * A matrix that api_json_read_body read straight into numbers: `node` is the array
 * that stands for it in the document, `cells` its rows × cols numbers in row-major
 * order (malloc'd, freed with the arena), `text` its bytes in the body. Records and
 * cells belong to the arena scope that was current when the matrix was read.
 */
struct api_json_packed {
    const void *node; /* a json_t *, kept opaque so that this header needs no jansson */
    const char *text;
    size_t text_len;
    double *cells;
    size_t rows, cols;
    struct api_json_packed *next;
};

/* Files p under this thread's current scope (which then frees p->cells); false when
 * there is no scope or no memory for the record, and p->cells is then the caller's. */
bool api_json_packed_add(const struct api_json_packed *p);

/* The record of node in this thread's scopes, or NULL when node was not packed. */
const struct api_json_packed *api_json_packed_find(const void *node);

#define API_JSON_BIG ((size_t)64 * 1024)

/* Makes a the arena of this thread's jansson allocations until api_json_arena_end. */
void api_json_arena_begin(struct api_json_arena *a);

/* Ends a's scope (the innermost one) and releases everything allocated in it. */
void api_json_arena_end(struct api_json_arena *a);

/*
 * Ends a's scope on this thread like api_json_arena_end, but releases nothing: what
 * was allocated in it stays in a, for api_json_arena_merge. For a helper thread that
 * builds values which the request's own thread keeps.
 */
void api_json_arena_leave(struct api_json_arena *a);

/* Moves everything held by `from` (left by api_json_arena_leave) into `into`, which
 * then releases it with its own; `from` is left empty. */
void api_json_arena_merge(struct api_json_arena *into, struct api_json_arena *from);

/* The innermost arena scope of this thread, or NULL. */
struct api_json_arena *api_json_arena_current(void);

/* Whether p was allocated in this thread's current arena scope (or one it is nested in). */
bool api_json_arena_has(const void *p);

/* jansson's allocation functions (json_set_alloc_funcs). */
void *api_json_malloc(size_t n);
void api_json_free(void *p);

#endif
