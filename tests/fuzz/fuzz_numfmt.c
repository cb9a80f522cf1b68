/*
 * tests/fuzz/fuzz_numfmt.c — libFuzzer harness for the number formatter (api/json/numfmt.h).
 *
 * Input: 8 bytes of a double (any bit pattern: subnormals, -0, NaN payloads), then
 * an optional byte whose low bits pick the decimals for api_round_decimals.
 * Properties:
 *   - a finite x prints as a JSON number (RFC 8259 grammar) shorter than
 *     API_NUMBER_MAX, and strtod reads it back as the same double, bit for bit;
 *   - a non-finite x prints as "null";
 *   - api_round_decimals never turns a finite x into a non-finite number, and its
 *     result prints and reads back just as well.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/numfmt.h"

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and nothing else. */
static int is_json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (isdigit((unsigned char)*s))
            s++;
    else
        return 0;
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return *s == '\0';
}

static void check_prints_back(double x)
{
    char buf[API_NUMBER_MAX + 8];
    memset(buf, 'x', sizeof buf);
    size_t n = api_format_double(x, buf);
    if (n >= API_NUMBER_MAX || strlen(buf) != n) {
        fprintf(stderr, "%a: length %zu\n", x, n);
        abort();
    }
    if (!isfinite(x)) {
        if (strcmp(buf, "null") != 0)
            abort();
        return;
    }
    if (!is_json_number(buf)) {
        fprintf(stderr, "%a printed as %s: not a JSON number\n", x, buf);
        abort();
    }
    double back = strtod(buf, NULL);
    if (memcmp(&back, &x, sizeof x) != 0) {
        fprintf(stderr, "%a printed as %s, read back as %a\n", x, buf, back);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double x;
    if (size < sizeof x)
        return 0;
    memcpy(&x, data, sizeof x);
    check_prints_back(x);
    int decimals = size > sizeof x ? data[sizeof x] % 16 : 2;
    double r = api_round_decimals(x, decimals);
    if (isfinite(x) && !isfinite(r)) {
        fprintf(stderr, "api_round_decimals(%a, %d) = %a\n", x, decimals, r);
        abort();
    }
    check_prints_back(r);
    return 0;
}
