/*
 * api/json/segments.c — freeing a body in pieces (see segments.h).
 */
#include "api/json/segments.h"

#include <stdlib.h>

void api_segments_free(void *segments)
{
    struct api_segments *s = segments;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->seg[i].base);
    free(s);
}
