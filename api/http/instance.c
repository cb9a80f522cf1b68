/*
 * api/http/instance.c — stamping a problem with its instance (see instance.h).
 *
 * The body problem.c wrote is one JSON object ending in '}' and the newline every JSON
 * answer ends with (never pieces: a problem is small), so the member goes in before that
 * brace and the newline stays last; the object always has members already (type, title,
 * status, detail), hence the leading comma.
 */
#include "api/http/instance.h"

#include <stdlib.h>
#include <string.h>

#define PROBLEM_V2_OPENING "{\"error\":"

/* The length of the body up to its closing '}' (before the trailing newline, if any). */
static size_t object_len(const struct api_response *res)
{
    size_t n = res->body_len;
    if (n > 0 && res->body[n - 1] == '\n')
        n--;
    return n;
}

static bool is_problem(const struct api_response *res)
{
    if (res->body == NULL || res->segments != NULL || res->content_type == NULL)
        return false;
    size_t n = object_len(res);
    if (n < 2 || res->body[n - 1] != '}')
        return false;
    if (strcmp(res->content_type, "application/problem+json") == 0)
        return true;
    return res->status >= 400 && strcmp(res->content_type, "application/json") == 0 &&
           res->body_len > strlen(PROBLEM_V2_OPENING) &&
           memcmp(res->body, PROBLEM_V2_OPENING, strlen(PROBLEM_V2_OPENING)) == 0;
}

static bool needs_no_escaping(const char *id)
{
    if (id == NULL || id[0] == '\0')
        return false;
    for (const unsigned char *p = (const unsigned char *)id; *p != '\0'; p++)
        if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
            return false;
    return true;
}

bool api_problem_stamp_instance(struct api_response *res, const char *id)
{
    if (!is_problem(res) || !needs_no_escaping(id))
        return false;
    static const char key[] = ",\"instance\":\"";
    size_t id_len = strlen(id);
    size_t brace = object_len(res) - 1;               /* where the '}' is */
    size_t tail = res->body_len - brace;              /* '}' and the newline after it */
    size_t add = (sizeof key - 1) + id_len + 1;      /* the key, the id, its closing quote */
    size_t len = res->body_len + add;
    char *grown = realloc(res->body, len + 1);        /* +1: a NUL, for whoever prints it */
    if (grown == NULL)
        return false; /* res->body is still the old block */
    char *at = grown + brace;
    memmove(at + add, at, tail);                      /* '}' (and '\n') move to the end */
    memcpy(at, key, sizeof key - 1);
    at += sizeof key - 1;
    memcpy(at, id, id_len);
    at += id_len;
    *at = '"';
    grown[len] = '\0';
    res->body = grown;
    res->body_len = len;
    return true;
}
