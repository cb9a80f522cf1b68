/*
 * api/i18n/holes.c — sentences with numbered holes, filled (see holes.h).
 */
#include "api/i18n/holes.h"

#include <string.h>

/* Appends n bytes of s, as many as fit; returns the new length. */
static size_t put(char *buf, size_t size, size_t len, const char *s, size_t n)
{
    size_t room = size - 1 - len;
    if (n > room)
        n = room;
    memcpy(buf + len, s, n);
    return len + n;
}

size_t api_fill_holes(char *buf, size_t size, const char *tmpl, const char *const *args,
                      size_t n_args)
{
    size_t len = 0;
    for (const char *p = tmpl; *p != '\0';) {
        size_t hole = p[0] == '{' && p[1] >= '1' && p[1] <= '9' && p[2] == '}'
                          ? (size_t)(p[1] - '0') : 0;
        if (hole >= 1 && hole <= n_args && args[hole - 1] != NULL) {
            len = put(buf, size, len, args[hole - 1], strlen(args[hole - 1]));
            p += 3;
        } else {
            len = put(buf, size, len, p, 1);
            p++;
        }
    }
    buf[len] = '\0';
    return len;
}
