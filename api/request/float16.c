/*
 * api/request/float16.c — FP16 and BF16 widened to and narrowed from doubles (see
 * float16.h). Both formats are one small IEEE layout with different widths, so one
 * pair of functions, told the widths, serves both.
 */
#include "api/request/float16.h"

#include <math.h>

/* A 16-bit IEEE-style layout: fraction bits, and the exponent's bias (its width follows). */
struct layout {
    int fraction;                 /* 10 for FP16, 7 for BF16 */
    int bias;                     /* 15, 127 */
};

static const struct layout fp16 = { 10, 15 };
static const struct layout bf16 = { 7, 127 };

/* The all-ones exponent field: infinity and NaN. */
static unsigned max_field(struct layout f)
{
    return (1u << (15 - f.fraction)) - 1;
}

static double widen(uint16_t bits, struct layout f)
{
    unsigned field = (bits >> f.fraction) & max_field(f);
    unsigned fraction = bits & ((1u << f.fraction) - 1);
    double sign = (bits & 0x8000u) ? -1.0 : 1.0;
    if (field == max_field(f))
        return fraction == 0 ? sign * INFINITY : NAN;
    /* Subnormals (field 0) have no implicit 1 and the exponent of field 1. */
    double significand = field == 0 ? (double)fraction : (double)(fraction | (1u << f.fraction));
    int exponent = (field == 0 ? 1 : (int)field) - f.bias - f.fraction;
    return sign * ldexp(significand, exponent);
}

/*
 * |x| rounded once: scaled by a power of two (exact) so that the format's fraction is
 * the integer part, then nearbyint (round to nearest even) of that double. Below the
 * smallest normal the exponent stays at the smallest normal's, which makes subnormals.
 */
static bool narrow(double x, struct layout f, uint16_t *out)
{
    uint16_t sign = signbit(x) ? 0x8000u : 0;
    uint16_t inf = (uint16_t)(sign | (max_field(f) << f.fraction));
    if (isnan(x)) {
        *out = (uint16_t)(inf | (1u << (f.fraction - 1)));
        return true;
    }
    double a = fabs(x);
    if (isinf(a) || a == 0) {
        *out = a == 0 ? sign : inf;
        return true;
    }
    int e;
    frexp(a, &e);                 /* a = m · 2^e, m in [0.5, 1): a's exponent is e - 1 */
    int exponent = e - 1 < 1 - f.bias ? 1 - f.bias : e - 1;
    double n = nearbyint(ldexp(a, f.fraction - exponent));
    if (n >= ldexp(1.0, f.fraction + 1)) { /* rounded up to the next power of two */
        n /= 2;
        exponent++;
    }
    unsigned field = n < ldexp(1.0, f.fraction) ? 0 : (unsigned)(exponent + f.bias);
    if (field >= max_field(f)) {
        *out = inf;
        return false;
    }
    unsigned fraction = (unsigned)n & ((1u << f.fraction) - 1);
    *out = (uint16_t)(sign | (field << f.fraction) | fraction);
    return true;
}

double api_fp16_to_double(uint16_t bits)
{
    return widen(bits, fp16);
}

double api_bf16_to_double(uint16_t bits)
{
    return widen(bits, bf16);
}

bool api_double_to_fp16(double x, uint16_t *bits)
{
    return narrow(x, fp16, bits);
}

bool api_double_to_bf16(double x, uint16_t *bits)
{
    return narrow(x, bf16, bits);
}
