/*
 * api/numfmt.cc — the one C++ file of attnd: a shim over dragonbox's shortest
 * round-trip digits (header-only, C++17). Everything else is C11. The layout rules
 * are documented in numfmt.h. Built with -fno-exceptions -fno-rtti; nothing here
 * allocates.
 */
#include "api/numfmt.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include <dragonbox/dragonbox.h>

namespace {

/* "00" "01" … "99": two digits per division, the usual trick for integer printing. */
constexpr char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Exactly eight digits of v < 10^8, with 32-bit arithmetic (cheaper than 64-bit division). */
void write_8_digits(uint32_t v, char *out)
{
    for (int i = 6; i >= 0; i -= 2) {
        std::memcpy(out + i, digit_pairs + (v % 100) * 2, 2);
        v /= 100;
    }
}

/* The digits of v < 10^8 without leading zeros, written back to front; returns their count. */
size_t write_small(uint32_t v, char *out)
{
    size_t n = v >= 10000000 ? 8 : v >= 1000000 ? 7 : v >= 100000 ? 6 : v >= 10000 ? 5
             : v >= 1000 ? 4 : v >= 100 ? 3 : v >= 10 ? 2 : 1;
    char *p = out + n;
    while (v >= 100) {
        p -= 2;
        std::memcpy(p, digit_pairs + (v % 100) * 2, 2);
        v /= 100;
    }
    if (v >= 10)
        std::memcpy(p - 2, digit_pairs + v * 2, 2);
    else
        p[-1] = static_cast<char>('0' + v);
    return n;
}

/*
 * Decimal digits of v, most significant first; returns their count (1..20).
 * A shortest significand has at most 17 digits, so it is split into 8-digit
 * groups that 32-bit arithmetic can print.
 */
size_t write_digits(uint64_t v, char *out)
{
    const uint64_t e8 = 100000000u;
    if (v < e8)
        return write_small(static_cast<uint32_t>(v), out);
    size_t n;
    if (v < e8 * e8) {
        n = write_small(static_cast<uint32_t>(v / e8), out);
    } else {
        n = write_small(static_cast<uint32_t>(v / (e8 * e8)), out);
        write_8_digits(static_cast<uint32_t>(v / e8 % e8), out + n);
        n += 8;
    }
    write_8_digits(static_cast<uint32_t>(v % e8), out + n);
    return n + 8;
}

/* "e-05", "e+16", "e+300": sign always, at least two digits, as Python prints. */
size_t write_exponent(int e, char *out)
{
    size_t n = 0;
    out[n++] = 'e';
    out[n++] = e < 0 ? '-' : '+';
    unsigned mag = static_cast<unsigned>(e < 0 ? -e : e);
    if (mag < 10)
        out[n++] = '0';
    return n + write_digits(mag, out + n);
}

} // namespace

extern "C" size_t api_format_double(double x, char *buf)
{
    if (!std::isfinite(x)) {
        std::memcpy(buf, "null", 5);
        return 4;
    }
    size_t n = 0;
    if (std::signbit(x))
        buf[n++] = '-';
    if (x == 0) {
        buf[n++] = '0';
        buf[n] = '\0';
        return n;
    }

    auto dec = jkj::dragonbox::to_decimal(std::fabs(x));
    char digits[24];
    size_t k = write_digits(dec.significand, digits);
    /* value = 0.d1d2...dk × 10^decpt */
    int decpt = static_cast<int>(k) + dec.exponent;

    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = decpt; i < 0; i++)
                buf[n++] = '0';
            std::memcpy(buf + n, digits, k);
            n += k;
        } else if (static_cast<size_t>(decpt) < k) {
            std::memcpy(buf + n, digits, static_cast<size_t>(decpt));
            n += static_cast<size_t>(decpt);
            buf[n++] = '.';
            std::memcpy(buf + n, digits + decpt, k - static_cast<size_t>(decpt));
            n += k - static_cast<size_t>(decpt);
        } else {
            std::memcpy(buf + n, digits, k);
            n += k;
            for (size_t i = k; i < static_cast<size_t>(decpt); i++)
                buf[n++] = '0';
        }
    } else {
        buf[n++] = digits[0];
        if (k > 1) {
            buf[n++] = '.';
            std::memcpy(buf + n, digits + 1, k - 1);
            n += k - 1;
        }
        n += write_exponent(decpt - 1, buf + n);
    }
    buf[n] = '\0';
    return n;
}

extern "C" double api_round_decimals(double x, int decimals)
{
    /* numpy computes rint(x * 10^d) / 10^d; where x * 10^d overflows (|x| > ~1e293),
     * x has no fractional digits to round, so it is returned as it is rather than inf. */
    static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
    if (decimals < 0 || decimals > 15 || !std::isfinite(x))
        return x;
    double scaled = x * pow10[decimals];
    if (!std::isfinite(scaled))
        return x;
    return std::nearbyint(scaled) / pow10[decimals];
}
