/*
 * api/i18n/holes.h — sentences with numbered holes, "{1} ties {2}", filled: the one rule
 * for them, which the JSON reader, reporting its errors as such sentences (json/read.h),
 * and fill.h, which adds the Korean particles on top, share.
 *
 * Not here: which words a sentence uses (the message tables), particles (particles.h).
 */
#ifndef API_I18N_HOLES_H
#define API_I18N_HOLES_H

#include <stddef.h>

/*
 * Writes tmpl into buf (size >= 1 bytes, always NUL-terminated, cut when full) with
 * every "{n}" (n from 1 to 9) replaced by args[n - 1]; a hole past n_args or whose arg
 * is NULL, or any other brace, is written as it stands. Returns the length written.
 */
size_t api_fill_holes(char *buf, size_t size, const char *tmpl, const char *const *args,
                      size_t n_args);

#endif
