/*
 * api/json_arena.c — the request-scoped bump allocator of json_arena.h.
 */
#include "api/json_arena.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The first chunk fits a small request's nodes; later ones double, so a document of
 * N bytes takes O(log N) chunks, each at most API_JSON_CHUNK_MAX unless one node
 * (a big string, a long array's table) needs more. */
#define API_JSON_CHUNK_FIRST (16u * 1024)
#define API_JSON_CHUNK_MAX (8u * 1024 * 1024)
#define API_JSON_ALIGN alignof(max_align_t)

struct api_json_chunk {
    struct api_json_chunk *next;
    size_t size; /* bytes of data[] */
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

static _Thread_local struct api_json_arena *active;

void api_json_arena_begin(struct api_json_arena *a)
{
    a->chunks = NULL;
    a->outer = active;
    active = a;
}

void api_json_arena_end(struct api_json_arena *a)
{
    struct api_json_chunk *c = a->chunks;
    while (c != NULL) {
        struct api_json_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->chunks = NULL;
    active = a->outer;
}

static size_t round_up(size_t n)
{
    return (n + API_JSON_ALIGN - 1) & ~(size_t)(API_JSON_ALIGN - 1);
}

static struct api_json_chunk *add_chunk(struct api_json_arena *a, size_t need)
{
    size_t size = a->chunks == NULL ? API_JSON_CHUNK_FIRST : a->chunks->size * 2;
    if (size > API_JSON_CHUNK_MAX)
        size = API_JSON_CHUNK_MAX;
    if (size < need)
        size = need;
    if (size > SIZE_MAX - sizeof(struct api_json_chunk))
        return NULL;
    struct api_json_chunk *c = malloc(sizeof *c + size);
    if (c == NULL)
        return NULL;
    c->size = size;
    c->used = 0;
    c->next = a->chunks;
    a->chunks = c;
    return c;
}

static void *arena_alloc(struct api_json_arena *a, size_t n)
{
    if (n > SIZE_MAX - API_JSON_ALIGN)
        return NULL;
    n = round_up(n == 0 ? 1 : n);
    struct api_json_chunk *c = a->chunks;
    if (c == NULL || c->size - c->used < n) {
        c = add_chunk(a, n);
        if (c == NULL)
            return NULL;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

/* Whether p was cut from one of a's chunks (a's lifetime holds a handful of them). */
static bool arena_owns(const struct api_json_arena *a, const void *p)
{
    uintptr_t at = (uintptr_t)p;
    for (const struct api_json_chunk *c = a->chunks; c != NULL; c = c->next) {
        uintptr_t lo = (uintptr_t)c->data;
        if (at >= lo && at - lo < c->size)
            return true;
    }
    return false;
}

void *api_json_malloc(size_t n)
{
    return active != NULL ? arena_alloc(active, n) : malloc(n);
}

bool api_json_arena_has(const void *p)
{
    for (const struct api_json_arena *a = active; a != NULL; a = a->outer)
        if (arena_owns(a, p))
            return true;
    return false;
}

void api_json_free(void *p)
{
    /* In an arena scope, its nodes are released with the arena; anything older
     * (made before the scope began) is not the arena's. */
    if (!api_json_arena_has(p))
        free(p);
}
