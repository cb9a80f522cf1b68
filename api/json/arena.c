/*
 * api/json/arena.c — the request-scoped bump allocator of json/arena.h.
 */
#include "api/json/arena.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The first chunk fits a small request's nodes; later ones double, so a document of
 * N bytes takes O(log N) chunks, each at most API_JSON_CHUNK_MAX (nodes of
 * API_JSON_BIG bytes or more have blocks of their own). */
#define API_JSON_CHUNK_FIRST (16u * 1024)
#define API_JSON_CHUNK_MAX (8u * 1024 * 1024)
#define API_JSON_ALIGN alignof(max_align_t)

struct api_json_chunk {
    struct api_json_chunk *next;
    size_t size; /* bytes of data[] */
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

/* A block of API_JSON_BIG bytes or more, with its place in the arena's list. */
struct api_json_big {
    struct api_json_big *next, *prev;
    alignas(max_align_t) unsigned char data[];
};

static _Thread_local struct api_json_arena *active;

void api_json_arena_begin(struct api_json_arena *a)
{
    a->chunks = NULL;
    a->bigs = NULL;
    a->packed = NULL;
    a->outer = active;
    active = a;
}

void api_json_arena_end(struct api_json_arena *a)
{
    /* The records were cut from the chunks: their cells go first. */
    for (struct api_json_packed *p = a->packed; p != NULL; p = p->next)
        free(p->cells);
    a->packed = NULL;
    struct api_json_chunk *c = a->chunks;
    while (c != NULL) {
        struct api_json_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->chunks = NULL;
    for (struct api_json_big *b = a->bigs, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    a->bigs = NULL;
    active = a->outer;
}

struct api_json_arena *api_json_arena_current(void)
{
    return active;
}

void api_json_arena_leave(struct api_json_arena *a)
{
    active = a->outer;
    a->outer = NULL;
}

void api_json_arena_merge(struct api_json_arena *into, struct api_json_arena *from)
{
    /* from's chunks go last: into's newest chunk stays first, the one still filling. */
    struct api_json_chunk **tail = &into->chunks;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = from->chunks;
    from->chunks = NULL;
    if (from->bigs != NULL) {
        struct api_json_big *last = from->bigs;
        while (last->next != NULL)
            last = last->next;
        last->next = into->bigs;
        if (into->bigs != NULL)
            into->bigs->prev = last;
        into->bigs = from->bigs;
        from->bigs = NULL;
    }
    if (from->packed != NULL) {
        struct api_json_packed *last = from->packed;
        while (last->next != NULL)
            last = last->next;
        last->next = into->packed;
        into->packed = from->packed;
        from->packed = NULL;
    }
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

static void *big_alloc(struct api_json_arena *a, size_t n)
{
    if (n > SIZE_MAX - sizeof(struct api_json_big))
        return NULL;
    struct api_json_big *b = malloc(sizeof *b + n);
    if (b == NULL)
        return NULL;
    b->prev = NULL;
    b->next = a->bigs;
    if (a->bigs != NULL)
        a->bigs->prev = b;
    a->bigs = b;
    return b->data;
}

/* Frees p if it is one of a's big blocks (few are alive at once); says whether it was. */
static bool big_free(struct api_json_arena *a, void *p)
{
    for (struct api_json_big *b = a->bigs; b != NULL; b = b->next) {
        if (b->data != p)
            continue;
        if (b->prev != NULL)
            b->prev->next = b->next;
        else
            a->bigs = b->next;
        if (b->next != NULL)
            b->next->prev = b->prev;
        free(b);
        return true;
    }
    return false;
}

static void *arena_alloc(struct api_json_arena *a, size_t n)
{
    if (n >= API_JSON_BIG)
        return big_alloc(a, n);
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

static bool big_owns(const struct api_json_arena *a, const void *p)
{
    for (const struct api_json_big *b = a->bigs; b != NULL; b = b->next)
        if (b->data == p)
            return true;
    return false;
}

bool api_json_arena_has(const void *p)
{
    for (const struct api_json_arena *a = active; a != NULL; a = a->outer)
        if (arena_owns(a, p) || big_owns(a, p))
            return true;
    return false;
}

void api_json_free(void *p)
{
    /* In an arena scope, its chunks' nodes are released with the arena and its big
     * blocks now; anything older (made before the scope began) is not the arena's. */
    for (struct api_json_arena *a = active; a != NULL; a = a->outer) {
        if (arena_owns(a, p))
            return;
        if (big_free(a, p))
            return;
    }
    free(p);
}

bool api_json_packed_add(const struct api_json_packed *p)
{
    if (active == NULL)
        return false;
    struct api_json_packed *kept = arena_alloc(active, sizeof *kept);
    if (kept == NULL)
        return false;
    *kept = *p;
    kept->next = active->packed;
    active->packed = kept;
    return true;
}

const struct api_json_packed *api_json_packed_find(const void *node)
{
    /* A request holds a few matrices (a batch at most a few hundred), looked up once. */
    for (const struct api_json_arena *a = active; a != NULL; a = a->outer)
        for (const struct api_json_packed *p = a->packed; p != NULL; p = p->next)
            if (p->node == node)
                return p;
    return NULL;
}
