/*
 * api/i18n/fill.c — sentences with numbered holes (see fill.h).
 */
#include "api/i18n/fill.h"

#include <string.h>

#include "api/i18n/holes.h"
#include "api/i18n/particles.h"

size_t api_fill(char *buf, size_t size, const char *tmpl, const char *const *args,
                size_t n_args)
{
    api_fill_holes(buf, size, tmpl, args, n_args);
    /* A hole's value decides the particle after it ("{1} 을(를)"); no-op in English. */
    api_ko_particles(buf);
    return strlen(buf);
}
