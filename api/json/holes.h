/*
 * api/json/holes.h — sentences with numbered holes, "{1} ties {2}", filled: the one rule
 * for them, here in the lowest room so that the JSON reader, which reports its errors
 * as such sentences (json/read.h), and render/fill.h, which adds the Korean particles on
 * top, share it.
 *
 * Not here: which words a sentence uses (the message tables), particles (render/).
 */
#ifndef API_JSON_HOLES_H
#define API_JSON_HOLES_H

#include <stddef.h>

/*
 * Writes tmpl into buf (size >= 1 bytes, always NUL-terminated, cut when full) with
 * every "{n}" (n from 1 to 9) replaced by args[n - 1]; a hole past n_args or whose arg
 * is NULL, or any other brace, is written as it stands. Returns the length written.
 */
size_t api_fill_holes(char *buf, size_t size, const char *tmpl, const char *const *args,
                      size_t n_args);

#endif
