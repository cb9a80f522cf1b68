/*
 * api/request/body.c — a request body read as one JSON document (see body.h).
 */
#include "api/request/body.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/json/arena.h"
#include "api/json/read.h"
#include "api/json/spare_threads.h"

/*
 * jansson's own allocations go through api/json/arena.c: a request's nodes come
 * from its arena (api_handle opens one), and otherwise from attnd's malloc and free,
 * so that a test linking attnd with wrapped malloc (tests/unit/check_alloc.c) reaches
 * them too: inside libjansson.so the wrapper would not be seen. Requests are read by
 * api/json/read.c, not by jansson's parser, which does not survive every allocation
 * failure (2.14).
 */
void api_json_alloc_init(void)
{
    json_set_alloc_funcs(api_json_malloc, api_json_free);
}

void api_release_body(json_t *doc)
{
    if (doc != NULL && !api_json_arena_has(doc))
        json_decref(doc);
}

/*
 * What the reader found wrong, in the request's language: each hole's phrase said and
 * filled with its data, then the sentence with them (json/read.h keeps them apart, since
 * the reader is below the room that knows languages). Korean runs to three bytes a
 * letter, hence the room.
 */
static void reader_said(const struct api_json_error *e, char *out, size_t cap)
{
    if (e->what == NULL) {
        snprintf(out, cap, "%s", e->text);
        return;
    }
    char parts[2][128];
    const char *args[2];
    unsigned n = e->n_holes < 2 ? e->n_holes : 2;
    for (unsigned i = 0; i < n; i++) {
        const char *data = e->holes[i].data;
        api_fill(parts[i], sizeof parts[i], api_tr(e->holes[i].phrase), &data, 1);
        args[i] = parts[i];
    }
    api_fill(out, cap, api_tr(e->what), args, n);
}

static json_t *parse(const char *body, size_t len, bool packed, struct api_error *err)
{
    size_t start = 0;
    while (start < len && (body[start] == ' ' || body[start] == '\t' || body[start] == '\n' ||
                           body[start] == '\r'))
        start++;
    if (start == len) {
        api_error_set(err, API_INVALID_JSON, "the body is empty: send a JSON object such as "
                      "{\"q\": [[1, 0]], \"k\": [[1, 0]], \"v\": [[1]]}");
        api_error_at(err, "%s", "");
        return NULL;
    }
    if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) {
        api_error_set(err, API_INVALID_JSON, "the body starts with a UTF-8 byte-order mark "
                      "(line 1, column 1, position 0): JSON must not have one");
        api_error_at(err, "%s", "");
        api_error_hint(err, "save the file as UTF-8 without BOM");
        return NULL;
    }
    struct api_json_error jerr;
    /* A request alone on the server may read a large body on two threads. */
    json_t *doc = packed ? api_json_read_body(body, len, &jerr, api_spare_threads())
                         : api_json_read(body, len, &jerr);
    if (doc != NULL)
        return doc;
    if (jerr.no_memory) {
        api_error_set(err, API_UNAVAILABLE, "no memory to read the body");
        return NULL;
    }
    char said[320];
    reader_said(&jerr, said, sizeof said);
    api_error_set(err, API_INVALID_JSON, "the body is not valid JSON: %s at line %zu, column "
                  "%zu (byte %zu)", said, jerr.line, jerr.column, jerr.position);
    api_error_at(err, "%s", "");
    if (jerr.out_of_range)
        api_error_hint(err, "a double holds magnitudes up to about 1.8e308: write that number "
                       "smaller (scale the inputs down), or leave it out");
    else
        api_error_hint(err, "check the brackets and commas near that position; keys and "
                       "strings need double quotes");
    return NULL;
}

json_t *api_parse_body(const char *body, size_t len, struct api_error *err)
{
    return parse(body, len, true, err);
}

json_t *api_parse_body_nodes(const char *body, size_t len, struct api_error *err)
{
    return parse(body, len, false, err);
}
