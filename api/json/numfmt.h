/*
 * api/json/numfmt.h — numbers as text, the way people and JSON parsers want them.
 *
 * Every double attnd prints is the shortest decimal that reads back as the same
 * double (Python's repr, JavaScript's Number.prototype.toString): 0.1 is "0.1",
 * never jansson's "0.10000000000000001". The digits come from dragonbox (Debian's
 * libdragonbox-dev); only the layout is ours:
 *   - fixed notation while the decimal point sits within -4 < decpt <= 16, as
 *     Python's repr does: 0.7310585786300049, 0.0001, 1234.5, 1e+16 → "1e+16";
 *   - integral values print without ".0" ("5", as JavaScript and the contract do);
 *   - exponents as Python writes them, sign and at least two digits: 1e-05, 1e+300;
 *   - negative zero is "-0" (reads back as -0.0 in C, JavaScript and numpy).
 * Not for NaN or infinities: JSON has no such numbers; callers write null instead.
 */
#ifndef API_NUMFMT_H
#define API_NUMFMT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enough for any finite double in this layout, with the terminating NUL. */
#define API_NUMBER_MAX 32

/*
 * The bytes a number of a JSON answer is presized and budgeted at: 17 significant
 * digits, a sign, a point, a two-digit exponent and the comma (shortest round trip;
 * rounded ones take less). A three-digit exponent takes one more
 * ("-1.2345678901234567e-300,"): rare enough for an estimate, and a presized buffer
 * just grows.
 */
#define API_ANSWER_BYTES_PER_NUMBER ((size_t)24)

/*
 * Writes x into buf (API_NUMBER_MAX bytes), NUL-terminated; returns the length.
 * A non-finite x is written as "null".
 */
size_t api_format_double(double x, char *buf);

/*
 * The room api_format_row needs per number. More than any number's text: the digits
 * are copied in fixed-size blocks that may spill past a number's end (the next
 * number or the caller's terminator overwrites the spill).
 */
#define API_NUMBER_ROOM 40

/*
 * Writes n doubles separated by commas (no brackets, no NUL) into out, which has room
 * for n * API_NUMBER_ROOM bytes; returns the length. Each is rounded first with
 * api_round_decimals when decimals >= 0. Byte for byte what api_format_double writes
 * for each, in one call: the hot loop of every large response.
 */
size_t api_format_row(const double *xs, size_t n, int decimals, char *out);

/*
 * The widest vector lanes api_format_row uses on this CPU: 8 (AVX-512), 4 (AVX2) or
 * 0 (one number at a time; also every build without the lanes: clang,
 * ThreadSanitizer, other architectures).
 */
unsigned api_format_lanes(void);

/*
 * api_format_row in the given lanes (8, 4; anything else is 0, one at a time),
 * narrowed to what api_format_lanes says: the same bytes whatever the lanes, which
 * the tests check on every path this CPU has.
 */
size_t api_format_row_in_lanes(const double *xs, size_t n, int decimals, char *out,
                               unsigned lanes);

/* numpy.round(x, decimals) for 0 <= decimals <= 15: rint(x * 10^d) / 10^d, halves to even. */
double api_round_decimals(double x, int decimals);

#ifdef __cplusplus
}
#endif

#endif
