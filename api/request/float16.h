/*
 * api/request/float16.h — the two 16-bit float formats V2 tensors come in, FP16 (IEEE
 * 754 binary16: 1 sign, 5 exponent, 10 fraction bits) and BF16 (bfloat16: 1 sign, 8
 * exponent, 7 fraction bits, the top half of an IEEE float32), as bit patterns.
 *
 * Widening is exact: every FP16 and BF16 value, subnormals and ±0 included, is a double.
 * Narrowing rounds a double once, to nearest with ties to even, straight from the
 * double: never through float, whose own rounding would round a second time (1 + 2^-8
 * + 2^-30 is nearer BF16's 1 + 2^-7, but float makes it the tie 1 + 2^-8, which rounds
 * to 1). A finite double past the format's largest finite value after rounding is an
 * overflow: reported, never sent as infinity. ±inf narrow to ±inf, NaN to a quiet NaN.
 *
 * Pure functions: no state, no allocation, the current rounding mode untouched (they
 * rely on it being the default, round to nearest even, as attnd never changes it).
 *
 * Not here: reading tensors (v2_tensor.c), writing answers (endpoints/v2/infer.c).
 */
#ifndef API_REQUEST_FLOAT16_H
#define API_REQUEST_FLOAT16_H

#include <stdbool.h>
#include <stdint.h>

/* The value of an FP16 / BF16 bit pattern, exactly. */
double api_fp16_to_double(uint16_t bits);
double api_bf16_to_double(uint16_t bits);

/*
 * x rounded to nearest (ties to even) into *bits. False when x is finite but rounds
 * past the largest finite value (65504 for FP16, about 3.39e38 for BF16): *bits is
 * then the infinity of x's sign, which the caller must not send as x.
 */
bool api_double_to_fp16(double x, uint16_t *bits);
bool api_double_to_bf16(double x, uint16_t *bits);

/* The largest finite value of each format (for messages). */
#define API_FP16_MAX 65504.0
#define API_BF16_MAX 0x1.fep127

#endif
