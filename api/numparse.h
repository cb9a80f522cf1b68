/*
 * api/numparse.h — decimal text to double, correctly rounded, without strtod.
 *
 * Why not strtod: a request is mostly numbers, and glibc's strtod needs a
 * NUL-terminated copy, consults the locale and falls back to multi-precision
 * arithmetic for the 17-digit numbers that printed doubles have: about 200 ns a
 * number, the largest part of reading a request. fast_float (Debian's
 * libfast-float-dev, header-only C++) gives the same correctly rounded result
 * (Eisel–Lemire, with an exact fallback) straight from the bytes, several times
 * faster.
 */
#ifndef API_NUMPARSE_H
#define API_NUMPARSE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reads [first, last), which the caller has already checked against JSON's number
 * grammar, into *out, rounded to nearest (ties to even) as strtod does: a number
 * beyond the double range becomes ±infinity, one below it ±0 or a subnormal.
 * Returns false only when the bytes are not one whole number.
 */
bool api_parse_double(const char *first, const char *last, double *out);

#ifdef __cplusplus
}
#endif

#endif
