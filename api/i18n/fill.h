/*
 * api/i18n/fill.h — sentences with numbered holes, for the tables of words a user
 * reads.
 *
 * A sentence is kept whole in one table (a language adds a column of its own), and
 * its holes are numbered, "{1} ties {2}", because another language puts them in
 * another order. printf's formats cannot come from a table without giving up the
 * compiler's format checks, and cannot reorder their arguments in C11.
 *
 * Not here: I/O, JSON, HTTP.
 */
#ifndef API_I18N_FILL_H
#define API_I18N_FILL_H

#include <stddef.h>

/*
 * Writes tmpl into buf (size >= 1 bytes, always NUL-terminated, cut when full) with
 * every "{n}" (n from 1 to 9) replaced by args[n - 1]; a hole past n_args, or any
 * other brace, is written as it stands. A Korean particle after a hole fits its value
 * (particles.h). Returns the length written.
 */
size_t api_fill(char *buf, size_t size, const char *tmpl, const char *const *args,
                size_t n_args);

#endif
