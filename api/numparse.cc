/*
 * api/numparse.cc — JSON numbers on fast_float's arithmetic (see numparse.h). Built
 * like numfmt.cc: C++17, -fno-exceptions -fno-rtti; nothing here allocates.
 */
#include "api/numparse.h"

#include <cstdint>
#include <cstring>
#include <system_error>

#include <fast_float/fast_float.h>

namespace {

inline bool is_digit_at(const char *p, const char *end)
{
    return p < end && static_cast<unsigned char>(*p - '0') < 10;
}

/*
 * Past the run of digits at p, with acc = acc × 10^k + the run's value (k digits;
 * wraps past 19 digits, which the caller counts and then does not use). Printed
 * doubles carry 16 or 17 digits, so eight are checked and gathered at a time. (A
 * branch-free last group, shifted into a word padded with '0's, measured slower.)
 */
inline const char *gather_digits(const char *p, const char *end, uint64_t &acc)
{
    while (end - p >= 8) {
        uint64_t word;
        std::memcpy(&word, p, sizeof word);
        if (!fast_float::is_made_of_eight_digits_fast(word))
            break;
        acc = acc * 100000000u + fast_float::parse_eight_digits_unrolled(word);
        p += 8;
    }
    while (is_digit_at(p, end)) {
        acc = acc * 10 + static_cast<unsigned char>(*p - '0');
        p++;
    }
    return p;
}

/* The text's value by fast_float's own route: for more than 19 digits, and for what
 * Eisel–Lemire leaves undecided. The grammar is checked, so this cannot fail. */
double from_text(const char *first, const char *last)
{
    double value = 0;
    fast_float::from_chars(first, last, value);
    return value;
}

} // namespace

extern "C" enum api_number_syntax api_read_json_number(const char *p, const char *end,
                                                       struct api_json_number *out)
{
    const char *start = p;
    bool negative = *p == '-';
    if (negative)
        p++;
    if (!is_digit_at(p, end))
        return API_NUMBER_NO_DIGIT;
    uint64_t significand = 0;
    const char *int_start = p;
    if (*p == '0') {
        if (is_digit_at(++p, end))
            return API_NUMBER_LEADING_ZERO;
    } else {
        p = gather_digits(p, end, significand);
    }
    int64_t digits = p - int_start, exponent = 0;
    bool is_real = false;
    if (p < end && *p == '.') {
        is_real = true;
        const char *fraction = ++p;
        if (!is_digit_at(p, end))
            return API_NUMBER_NO_FRACTION_DIGIT;
        p = gather_digits(p, end, significand);
        digits += p - fraction;
        exponent = fraction - p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_real = true;
        p++;
        bool negative_exponent = p < end && *p == '-';
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit_at(p, end))
            return API_NUMBER_NO_EXPONENT_DIGIT;
        int64_t written = 0;
        for (; is_digit_at(p, end); p++)
            if (written < 0x10000000) /* far beyond any double either way: saturate */
                written = written * 10 + (*p - '0');
        exponent += negative_exponent ? -written : written;
    }
    out->end = p;
    out->is_integer = !is_real && digits <= 18;
    if (out->is_integer) {
        long long n = static_cast<long long>(significand);
        out->integer = negative ? -n : n;
    }
    using format = fast_float::binary_format<double>;
    if (digits <= 19) {
        fast_float::adjusted_mantissa am = fast_float::compute_float<format>(exponent, significand);
        if (am.power2 >= 0) {
            fast_float::to_float(negative, am, out->real);
            return API_NUMBER_OK;
        }
    }
    out->real = from_text(start, p);
    return API_NUMBER_OK;
}
