/*
 * api/json/numparse.cc — JSON numbers on fast_float's arithmetic (see numparse.h). Built
 * like numfmt.cc: C++17, -fno-exceptions -fno-rtti; nothing here allocates.
 */
#include "api/json/numparse.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <system_error>

#include <fast_float/fast_float.h>

/* The vector reader below, in every x86-64 build, clang's too: unlike the printer's
 * lanes, it reads what clients send, and the fuzzers (clang) should run it. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ATTN_NO_CLONES)
#include <immintrin.h>
#define ATTN_NUMPARSE_LANES 1
#endif

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
__attribute__((noinline)) double from_text(const char *first, const char *last)
{
    double value = 0;
    fast_float::from_chars(first, last, value);
    return value;
}

/*
 * The rest of a number once its bytes are checked: the fields of *out from the
 * significand (the first `digits` digits, leading zeros included, wrapped past 19)
 * and the decimal exponent, by Eisel–Lemire where it decides, else by from_text.
 * Inlined into both readers: called from the vector reader (eight arguments, one on
 * the stack), it made reading a body markedly slower (docs/performance.md).
 */
__attribute__((always_inline)) inline void convert(const char *start, const char *past,
                                                   bool negative, uint64_t significand,
                                                   int64_t digits, int64_t exponent, bool is_real,
                                                   struct api_json_number *out)
{
    out->end = past;
    /* Every integer a long long holds: 18 digits always do, 19 when within INT64_MAX
     * (a seed up to 2^63 - 1 is then taken as sent, not rounded through a double). */
    out->is_integer = !is_real && (digits <= 18 || (digits == 19 && significand <= INT64_MAX));
    if (out->is_integer) {
        long long n = static_cast<long long>(significand);
        out->integer = negative ? -n : n;
    }
    using format = fast_float::binary_format<double>;
    if (digits <= 19) {
        fast_float::adjusted_mantissa am = fast_float::compute_float<format>(exponent, significand);
        if (am.power2 >= 0) {
            fast_float::to_float(negative, am, out->real);
            return;
        }
    }
    out->real = from_text(start, past);
}

/* The grammar, one byte after another (see numparse.h). */
inline enum api_number_syntax read_bytewise(const char *p, const char *end,
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
    convert(start, p, negative, significand, digits, exponent, is_real, out);
    return API_NUMBER_OK;
}

/* Past JSON's white space (four bytes, all at most ' ': what read_row checks first). */
inline const char *skip_json_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* clang's UBSan checks a call through a pointer against the callee's type: read_row's
 * calls are direct once inlined, and the fuzzers' C link lacks that check's C++ runtime. */
#ifdef __clang__
#define ATTN_NO_SANITIZE_FUNCTION __attribute__((no_sanitize("function")))
#else
#define ATTN_NO_SANITIZE_FUNCTION
#endif

/*
 * api_read_number_row's loop, with one path's number reader inlined into it (each
 * row function below is flattened, in that path's target). Called through a pointer
 * a number and handing its result back in memory, as scan_number_rows did, reading
 * a body took more instructions and more time a number than this way
 * (docs/performance.md).
 */
template <typename ReadOne>
__attribute__((always_inline)) ATTN_NO_SANITIZE_FUNCTION inline api_number_row
read_row(const char *p, const char *end, double *out, size_t room, ReadOne read_one)
{
    const api_number_row refused = { nullptr, 0, false };
    size_t n = 0;
    for (;;) {
        if (p < end && static_cast<unsigned char>(*p) <= ' ')
            p = skip_json_space(p, end);
        if (p >= end || !(*p == '-' || static_cast<unsigned char>(*p - '0') < 10))
            return refused;
        api_json_number num;
        num.integer = 0; /* set only for integers, which GCC cannot see */
        if (read_one(p, end, &num) != API_NUMBER_OK)
            return refused;
        double x = num.is_integer ? static_cast<double>(num.integer) : num.real;
        if (!num.is_integer && !std::isfinite(x))
            return refused;
        out[n++] = x;
        p = num.end;
        if (p < end && static_cast<unsigned char>(*p) <= ' ')
            p = skip_json_space(p, end);
        if (p < end && *p == ',') {
            if (n == room)
                return { p + 1, n, true };
            p++;
        } else if (p < end && *p == ']') {
            return { p + 1, n, false };
        } else {
            return refused;
        }
    }
}

__attribute__((flatten)) api_number_row read_row_bytewise(const char *p, const char *end,
                                                           double *out, size_t room)
{
    return read_row(p, end, out, room, read_bytewise);
}

#ifdef ATTN_NUMPARSE_LANES
#define ATTN_LANES_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi2,bmi,bmi2")))

/* Bytes of a number read at once, and what a number must fit in to be read so. */
constexpr ptrdiff_t lane_bytes = 32;

/*
 * The common number, [-]digits[.digits] with at most 19 digits and no exponent,
 * from 32 bytes loaded at once (p to p + 32 must be readable): the digit runs found
 * from a mask of the digit bytes, the digits moved into place by a compress and an
 * expand (the point dropped, the significand right-aligned behind zeros) and summed
 * in three multiply-adds, 2, 4 then 8 digits a lane. False, with *out untouched, for
 * anything else (an exponent, more than 19 digits, every error): the bytewise reader
 * takes those, so what is read is the same either way.
 * No branch depends on a run's length, which for printed doubles (16 or 17 digits)
 * the bytewise walk mispredicts often; reading a body alone is faster this way
 * (docs/performance.md).
 */
ATTN_LANES_TARGET
bool read_in_lanes(const char *p, struct api_json_number *out)
{
    const __m256i text = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    const __m256i values = _mm256_sub_epi8(text, _mm256_set1_epi8('0'));
    /* 64 bits, so that ~(digit >> k) always has a bit set past the 32 bytes */
    const uint64_t digit = _mm256_cmplt_epu8_mask(values, _mm256_set1_epi8(10));
    const unsigned int_start = p[0] == '-';
    const unsigned int_len = static_cast<unsigned>(_tzcnt_u64(~(digit >> int_start)));
    if (int_len == 0 || int_len > 19 || (int_len > 1 && p[int_start] == '0'))
        return false; /* no digit, too many, a leading zero: the bytewise reader says */
    unsigned past = int_start + int_len, frac_len = 0; /* past <= 20 */
    if (p[past] == '.') {
        frac_len = static_cast<unsigned>(_tzcnt_u64(~(digit >> (past + 1))));
        if (frac_len == 0)
            return false;
        past += 1 + frac_len;
    }
    const unsigned digits = int_len + frac_len;
    if (digits > 19) /* which also keeps past <= 21, inside the 32 bytes */
        return false;
    if (p[past] == 'e' || p[past] == 'E')
        return false;
    /* The number's digits (not its sign or point) packed together, then moved up into
     * the top `digits` bytes of the 32, zeros below. */
    const __m256i packed =
        _mm256_maskz_compress_epi8(static_cast<__mmask32>(_bzhi_u64(digit, past)), values);
    const __m256i placed =
        _mm256_maskz_expand_epi8(static_cast<__mmask32>(~0ull << (lane_bytes - digits)), packed);
    const __m256i twos = _mm256_maddubs_epi16(placed, _mm256_set1_epi16(0x010A));
    const __m256i fours = _mm256_madd_epi16(twos, _mm256_set1_epi32(0x00010064));
    const __m256i fours16 = _mm256_packus_epi32(fours, fours);
    const __m256i eights = _mm256_madd_epi16(fours16, _mm256_set1_epi32(0x00012710));
    /* eights: digits 8-15 in 32-bit lane 1, 16-23 in lane 4, 24-31 in lane 5; 0-7 are zeros */
    const uint64_t low = static_cast<uint64_t>(_mm256_extract_epi64(eights, 0));
    const uint64_t high = static_cast<uint64_t>(_mm256_extract_epi64(eights, 2));
    const uint64_t significand =
        (low >> 32) * 10000000000000000u + (high & 0xffffffffu) * 100000000u + (high >> 32);
    convert(p, p + past, int_start != 0, significand, digits, -static_cast<int64_t>(frac_len),
            frac_len != 0, out);
    return true;
}

/* The bytewise reader built for the same target, so that it is inlined here. */
ATTN_LANES_TARGET
enum api_number_syntax read_with_lanes(const char *p, const char *end,
                                       struct api_json_number *out)
{
    if (end - p >= lane_bytes && read_in_lanes(p, out))
        return API_NUMBER_OK;
    return read_bytewise(p, end, out);
}

ATTN_LANES_TARGET __attribute__((flatten))
api_number_row read_row_with_lanes(const char *p, const char *end, double *out, size_t room)
{
    return read_row(p, end, out, room, read_with_lanes);
}

/* Whether this CPU has every extension ATTN_LANES_TARGET names (Ice Lake and later);
 * asked once, when the program loads. */
const bool lanes_supported =
    (__builtin_cpu_init(),
     __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi2") &&
         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"));

#define ATTN_AVX2_TARGET __attribute__((target("avx2,bmi")))

/* The inverse of 5^k modulo 2^64 (5 is odd, so it has one): x / 5^k is x × this,
 * modulo 2^64, whenever 5^k divides x and the quotient fits 64 bits. Newton's
 * iteration y(2 - ay) doubles the correct low bits; a is its own inverse mod 8. */
constexpr uint64_t inverse_mod_2_64(uint64_t a)
{
    uint64_t y = a;
    for (int i = 0; i < 5; i++)
        y *= 2 - a * y;
    return y;
}

constexpr uint64_t pow5(int k) { return k == 0 ? 1 : 5 * pow5(k - 1); }

struct inverse_pow5_table {
    uint64_t of[19];
    constexpr inverse_pow5_table() : of()
    {
        for (int k = 0; k < 19; k++)
            of[k] = inverse_mod_2_64(pow5(k));
    }
};
constexpr inverse_pow5_table inverse_pow5;
static_assert(inverse_pow5.of[18] * pow5(18) == 1, "5^18's inverse modulo 2^64");

/*
 * read_in_lanes for CPUs with AVX2 and no AVX-512 VBMI2, which has no compress or
 * expand to move the digits into place: the 32 bytes after the sign are loaded, the
 * point dropped by a blend with the same bytes moved down by one, and the digits,
 * left-aligned behind the sign, summed by the same three multiply-adds into W, the
 * 24-digit number they begin. For at most 19 digits W's last five digits are zeros,
 * so W / 10^5 = significand × 10^(19 - digits) fits 64 bits, and the division by
 * 10^(19 - digits) is exact: a shift for its power of two, a multiplication by an
 * inverse for its power of five. p to p + 33 must be readable.
 */
constexpr ptrdiff_t avx2_bytes = 33; /* a sign and 32 bytes */

ATTN_AVX2_TARGET
bool read_in_avx2(const char *p, struct api_json_number *out)
{
    const unsigned int_start = p[0] == '-';
    const char *q = p + int_start;
    const __m256i text = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q));
    const __m256i values = _mm256_sub_epi8(text, _mm256_set1_epi8('0'));
    const __m256i is_digit = _mm256_cmpeq_epi8(_mm256_min_epu8(values, _mm256_set1_epi8(9)), values);
    /* 64 bits, so that ~(digit >> k) always has a bit set past the 32 bytes */
    const uint64_t digit = static_cast<uint32_t>(_mm256_movemask_epi8(is_digit));
    const unsigned int_len = static_cast<unsigned>(_tzcnt_u64(~digit));
    if (int_len == 0 || int_len > 19 || (int_len > 1 && q[0] == '0'))
        return false; /* no digit, too many, a leading zero: the bytewise reader says */
    unsigned past = int_len, frac_len = 0; /* from q; past <= 19 */
    if (q[past] == '.') {
        frac_len = static_cast<unsigned>(_tzcnt_u64(~(digit >> (past + 1))));
        if (frac_len == 0)
            return false;
        past += 1 + frac_len;
    }
    const unsigned digits = int_len + frac_len;
    if (digits > 19) /* which also keeps past <= 20, inside the 32 bytes */
        return false;
    if (q[past] == 'e' || q[past] == 'E')
        return false;
    const __m256i index = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                           16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
                                           29, 30, 31);
    /* values[i + 1] at byte i, across the two 128-bit halves */
    const __m256i next = _mm256_alignr_epi8(_mm256_permute2x128_si256(values, values, 0x81), values, 1);
    const __m256i after_point = _mm256_cmpgt_epi8(index, _mm256_set1_epi8(static_cast<char>(int_len - 1)));
    const __m256i joined = _mm256_blendv_epi8(values, next, after_point);
    const __m256i placed = _mm256_and_si256(
        joined, _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(digits)), index));
    const __m256i twos = _mm256_maddubs_epi16(placed, _mm256_set1_epi16(0x010A));
    const __m256i fours = _mm256_madd_epi16(twos, _mm256_set1_epi32(0x00010064));
    const __m256i fours16 = _mm256_packus_epi32(fours, fours);
    const __m256i eights = _mm256_madd_epi16(fours16, _mm256_set1_epi32(0x00012710));
    /* eights: digits 0-7 in 32-bit lane 0, 8-15 in lane 1, 16-23 in lane 4 */
    const uint64_t low = static_cast<uint64_t>(_mm256_extract_epi64(eights, 0));
    const uint64_t high = static_cast<uint64_t>(_mm256_extract_epi64(eights, 2));
    const uint64_t scaled = (low & 0xffffffffu) * 100000000000u + (low >> 32) * 1000u +
                            (high & 0xffffffffu) / 100000u;
    const unsigned k = 19 - digits;
    const uint64_t significand = (scaled >> k) * inverse_pow5.of[k];
    convert(p, q + past, int_start != 0, significand, digits, -static_cast<int64_t>(frac_len),
            frac_len != 0, out);
    return true;
}

/* The bytewise reader built for the same target, so that it is inlined here. */
ATTN_AVX2_TARGET
enum api_number_syntax read_with_avx2(const char *p, const char *end,
                                      struct api_json_number *out)
{
    if (end - p >= avx2_bytes && read_in_avx2(p, out))
        return API_NUMBER_OK;
    return read_bytewise(p, end, out);
}

ATTN_AVX2_TARGET __attribute__((flatten))
api_number_row read_row_with_avx2(const char *p, const char *end, double *out, size_t room)
{
    return read_row(p, end, out, room, read_with_avx2);
}

const bool avx2_supported =
    (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi"));
#endif

} // namespace

extern "C" enum api_number_syntax api_read_json_number(const char *p, const char *end,
                                                       struct api_json_number *out)
{
#ifdef ATTN_NUMPARSE_LANES
    if (lanes_supported)
        return read_with_lanes(p, end, out);
    if (avx2_supported)
        return read_with_avx2(p, end, out);
#endif
    return read_bytewise(p, end, out);
}

extern "C" enum api_number_syntax api_read_json_number_avx2(const char *p, const char *end,
                                                            struct api_json_number *out)
{
#ifdef ATTN_NUMPARSE_LANES
    if (avx2_supported)
        return read_with_avx2(p, end, out);
#endif
    return read_bytewise(p, end, out);
}

extern "C" enum api_number_path api_read_json_number_path(void)
{
#ifdef ATTN_NUMPARSE_LANES
    if (lanes_supported)
        return API_NUMBER_PATH_AVX512VBMI2;
    if (avx2_supported)
        return API_NUMBER_PATH_AVX2;
#endif
    return API_NUMBER_PATH_BYTEWISE;
}

extern "C" enum api_number_syntax api_read_json_number_bytewise(const char *p, const char *end,
                                                                struct api_json_number *out)
{
    return read_bytewise(p, end, out);
}

extern "C" struct api_number_row api_read_number_row_by(enum api_number_path path,
                                                        const char *p, const char *end,
                                                        double *out, size_t room)
{
#ifdef ATTN_NUMPARSE_LANES
    if (path == API_NUMBER_PATH_AVX512VBMI2 && lanes_supported)
        return read_row_with_lanes(p, end, out, room);
    if (path != API_NUMBER_PATH_BYTEWISE && avx2_supported)
        return read_row_with_avx2(p, end, out, room);
#else
    (void)path;
#endif
    return read_row_bytewise(p, end, out, room);
}

extern "C" struct api_number_row api_read_number_row(const char *p, const char *end,
                                                     double *out, size_t room)
{
    return api_read_number_row_by(api_read_json_number_path(), p, end, out, room);
}
