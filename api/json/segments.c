/*
 * api/json/segments.c — freeing a body in pieces (see segments.h).
 */
#include "api/json/segments.h"

#include <stdint.h>
#include <stdlib.h>

struct api_segments *api_segments_alloc(size_t cap)
{
    struct api_segments *s = NULL;
    if (cap <= (SIZE_MAX - sizeof *s) / sizeof s->seg[0])
        s = malloc(sizeof *s + cap * sizeof s->seg[0]);
    if (s != NULL) {
        s->n = s->total = s->owner_bytes = 0;
        s->owner = NULL;
        s->owner_free = NULL;
    }
    return s;
}

size_t api_segments_held(const struct api_segments *s)
{
    size_t held = s->owner_bytes;
    for (size_t i = 0; i < s->n; i++)
        if (s->seg[i].base != NULL)
            held += s->seg[i].len;
    return held > s->total ? held : s->total;
}

void api_segments_free(void *segments)
{
    struct api_segments *s = segments;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->seg[i].base);
    if (s->owner_free != NULL)
        s->owner_free(s->owner);
    free(s);
}
