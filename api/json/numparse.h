/*
 * api/json/numparse.h — a JSON number, checked against the grammar and converted to a
 * double (correctly rounded) in one pass over its bytes, without strtod.
 *
 * Why not strtod: a request is mostly numbers, and glibc's strtod needs a
 * NUL-terminated copy, consults the locale and falls back to multi-precision
 * arithmetic for the 17-digit numbers that printed doubles have: the largest part of
 * reading a request (docs/performance.md). fast_float (Debian's
 * libfast-float-dev, header-only C++) gives the same correctly rounded result
 * (Eisel–Lemire, with an exact fallback). Its from_chars would scan the digits
 * again after the grammar check; here the check gathers the significand as it goes
 * (eight digits at a time) and hands it to fast_float's Eisel–Lemire step directly,
 * so every byte is read once. from_chars stays the fallback for what that step
 * cannot decide (more than 19 digits, rare halfway cases). Where the CPU has AVX-512
 * VBMI2 (Ice Lake and later) or AVX2, the common number, [-]digits[.digits] of up to
 * 19 digits, is found and gathered from 32 bytes at once instead (numparse.cc says
 * how); what it leaves, and every error, is read bytewise.
 *
 * Those steps (compute_float, to_float, the eight-digit helpers) are fast_float
 * 3.9's internals, not its documented interface: a version that changes them fails
 * to build, and one that changes what they compute fails the unit suite's
 * bit-for-bit comparison with strtod.
 */
#ifndef API_NUMPARSE_H
#define API_NUMPARSE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What is wrong with a number's text, or API_NUMBER_OK. */
enum api_number_syntax {
    API_NUMBER_OK,
    API_NUMBER_NO_DIGIT,          /* after '-', or nothing numeric at all */
    API_NUMBER_LEADING_ZERO,      /* "012" */
    API_NUMBER_NO_FRACTION_DIGIT, /* "1." */
    API_NUMBER_NO_EXPONENT_DIGIT, /* "1e", "1e+" */
};

struct api_json_number {
    const char *end;    /* past the number's last byte (API_NUMBER_OK only) */
    bool is_integer;    /* no fraction, no exponent, within ±INT64_MAX: `integer` is exact */
    long long integer;
    double real;        /* the value, rounded to nearest, ties to even, as strtod does: a
                           number beyond the double range is ±infinity, one below it ±0
                           or a subnormal (set in every case, integers too) */
};

/*
 * Reads the JSON number (RFC 8259's grammar) that starts at p, p < end; the number
 * ends at the first byte that cannot continue it. Fills *out on API_NUMBER_OK.
 */
enum api_number_syntax api_read_json_number(const char *p, const char *end,
                                            struct api_json_number *out);

/*
 * The same, one byte after another, never by the vector path api_read_json_number
 * takes on CPUs with AVX-512 VBMI2: the tests and the fuzzers compare the two.
 */
enum api_number_syntax api_read_json_number_bytewise(const char *p, const char *end,
                                                     struct api_json_number *out);

/*
 * The same by the vector path api_read_json_number takes on CPUs with AVX2 and no
 * AVX-512 VBMI2 (bytewise on CPUs without AVX2): the tests compare it with the
 * bytewise walk on any CPU that has AVX2.
 */
enum api_number_syntax api_read_json_number_avx2(const char *p, const char *end,
                                                 struct api_json_number *out);

/*
 * One row of a matrix of numbers, "x, y, ...]", read by the path
 * api_read_json_number takes, without a call a number: the loop every request's
 * matrices spend most of their reading in. p is just past the row's '[' (white space
 * may follow); at most `room` (> 0) numbers are stored into out. A number without
 * fraction or exponent of at most 18 digits is stored as its integer converted ("-0"
 * is 0, as json_number_value gives for the integer node), any other as its `real`,
 * which must be finite.
 */
struct api_number_row {
    const char *next; /* past the ']' (more false) or past the comma to go on from (more
                         true); NULL for anything but a row of numbers: an empty row, a
                         value that is not a number, a number the reader refuses or that
                         is not finite, no ',' or ']' after a number */
    size_t count;     /* numbers stored into out (0 when refused, though some may be) */
    bool more;        /* out was filled before the ']': call again from next */
};
struct api_number_row api_read_number_row(const char *p, const char *end, double *out,
                                          size_t room);

/* The path api_read_json_number takes on this CPU, for reports: bytewise on other
 * architectures and in builds without the vector paths. */
enum api_number_path {
    API_NUMBER_PATH_BYTEWISE,
    API_NUMBER_PATH_AVX2,       /* 32 bytes at once, the point dropped by a blend */
    API_NUMBER_PATH_AVX512VBMI2 /* 32 bytes at once, compress and expand */
};
enum api_number_path api_read_json_number_path(void);

/* api_read_number_row by the given path, narrowed to what this CPU has (AVX-512 VBMI2
 * to AVX2 to bytewise): the tests compare every path this CPU runs. */
struct api_number_row api_read_number_row_by(enum api_number_path path, const char *p,
                                             const char *end, double *out, size_t room);

#ifdef __cplusplus
}
#endif

#endif
