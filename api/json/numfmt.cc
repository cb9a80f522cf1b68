/*
 * api/json/numfmt.cc — a shim over dragonbox's shortest round-trip digits (header-only,
 * C++17); with api/json/numparse.cc (fast_float) one of attnd's two C++ files, everything
 * else being C11. The layout rules are documented in numfmt.h. Built with -O3 (a row
 * measured faster than at -O2; docs/performance.md) -fno-exceptions -fno-rtti; nothing
 * here allocates.
 *
 * This is the hot loop of every large response (a million numbers for n = 512), and
 * was its largest cost, so it is written for the CPU:
 *   - no unpredictable branches where attnd's numbers make them coin tosses (16 or
 *     17 digits, see shortest_normal and write_positive);
 *   - digits from a few multiplications, eight at a time in one register
 *     (eight_digits), no division instruction, no table; in a row, for eight
 *     numbers at once in vector registers where AVX-512 runs
 *     (digit_groups_in_lanes_block), four where AVX2 does (digit_groups_in_avx2_block);
 *   - the shortest digits themselves for eight numbers at once too where AVX-512
 *     runs (shortest_normal_x8: dragonbox's steps and table in vector lanes), four
 *     where AVX2 does (shortest_normal_x4), the rare cases handed back to the
 *     one-at-a-time path;
 *   - the digits are stored as fixed 16-byte blocks, which may write past a
 *     number's end: callers give each number API_NUMBER_ROOM bytes, and the next
 *     number, comma or NUL overwrites the excess;
 *   - a row is written in three passes (api_format_row).
 * Every path is checked byte for byte against an independent formatter in
 * tests/unit/check_numfmt.c.
 */
#include "api/json/numfmt.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <dragonbox/dragonbox.h>

#ifdef __x86_64__
#include <immintrin.h>
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "eight_digits puts the first digit in the lowest byte");

namespace {

/* The most bytes write_number writes from its start; API_NUMBER_ROOM must cover it. */
constexpr size_t number_reach = 34;
static_assert(number_reach <= API_NUMBER_ROOM, "API_NUMBER_ROOM is too small");

constexpr uint64_t ascii_zeros = 0x3030303030303030u;

using u128 = unsigned __int128;

/* "00" "01" … "99", for exponents. */
constexpr char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/*
 * The eight decimal digits of v < 10^8 (leading zeros included) as eight bytes of
 * value 0..9, the most significant in the lowest byte, i.e. first in memory. v is
 * split into two 4-digit lanes, each into two 2-digit lanes, each into two digits,
 * every split by a multiply-shift that is exact for the lane's range (v * 109951163
 * >> 40 is v / 10^4 for v < 10^8; x * 10486 >> 20 is x / 100 for x < 10^4; x * 103
 * >> 10 is x / 10 for x < 100); no lane overflows into its neighbour.
 * eight_digits_x8 takes the same steps in vector lanes.
 */
inline uint64_t eight_digits(uint64_t v)
{
    uint64_t hi = (v * 109951163u) >> 40, lo = v - hi * 10000u;
    uint64_t x = hi | (lo << 32);
    uint64_t h = ((x * 10486u) >> 20) & 0x0000007F0000007Fu;
    x = h | ((x - 100u * h) << 16);
    uint64_t t = ((x * 103u) >> 10) & 0x000F000F000F000Fu;
    return t | ((x - 10u * t) << 8);
}

/*
 * The digits of 0 < sig < 10^17 in three groups: the first of 17 (top, 0 when sig
 * has 16 or fewer) and the next two runs of eight as eight_digits gives them.
 */
struct digit_groups {
    uint64_t top, mid, low;
};

inline digit_groups digit_groups_of(uint64_t sig)
{
    uint64_t upper = sig / 100000000u;
    uint64_t low = sig - upper * 100000000u;
    uint64_t top = upper / 100000000u;
    uint64_t mid = upper - top * 100000000u;
    return { top, eight_digits(mid), eight_digits(low) };
}

/* Trailing zero digits of eight_digits' result (not 0): the high zero bytes. */
inline int trailing_zero_digits(uint64_t d) { return __builtin_clzll(d) >> 3; }

/* 16 digit bytes (value 0..9, first in the lowest byte) as ASCII, stored at out. */
inline void store16(char *out, u128 raw)
{
    uint64_t lo = static_cast<uint64_t>(raw) | ascii_zeros;
    uint64_t hi = static_cast<uint64_t>(raw >> 64) | ascii_zeros;
    std::memcpy(out, &lo, 8);
    std::memcpy(out + 8, &hi, 8);
}

/* "e-05", "e+16", "e+300": sign always, at least two digits, as Python prints. */
inline size_t write_exponent(int e, char *out)
{
    out[0] = 'e';
    out[1] = e < 0 ? '-' : '+';
    unsigned mag = static_cast<unsigned>(e < 0 ? -e : e);
    if (mag < 100) {
        std::memcpy(out + 2, digit_pairs + mag * 2, 2);
        return 4;
    }
    out[2] = static_cast<char>('0' + mag / 100);
    std::memcpy(out + 3, digit_pairs + (mag % 100) * 2, 2);
    return 5;
}

/*
 * sig × 10^exponent (0 < sig < 10^17, trailing zeros allowed) in numfmt.h's layout;
 * returns the length. Writes up to 33 bytes.
 *
 * The digit groups are whole words from the multiplications to the stores: a
 * buffer written in pieces and read back at an unaligned offset stalls the CPU (no
 * store forwarding), which cost more than making the digits.
 */
inline size_t write_positive(uint64_t sig, int exponent, const digit_groups &g, char *out)
{
    uint64_t top = g.top, dm = g.mid, dl = g.low;
    int trail = dl ? trailing_zero_digits(dl) : dm ? 8 + trailing_zero_digits(dm) : 16;
    if (sig >= 1000000000000000u) {
        int has_top = top != 0, width = 16 + has_top, decpt = width + exponent;
        if (decpt > -4 && decpt <= 0) {
            /* 0.00d1d2…dk with 16 or 17 digits, most of attnd's numbers (weights): the
             * digit groups stored as they are, no shifting. */
            std::memcpy(out, "0.000000", 8);
            char *to = out + 2 - decpt;
            to[0] = static_cast<char>('0' + top); /* overwritten when there is no top */
            uint64_t am = dm | ascii_zeros, al = dl | ascii_zeros;
            std::memcpy(to + has_top, &am, 8);
            std::memcpy(to + has_top + 8, &al, 8);
            return static_cast<size_t>(2 - decpt + width - trail);
        }
    }
    /* raw: the first 16 digits, the first in the lowest byte, zero bytes after the last;
     * last: the 17th digit, if any. width: the digits of sig, trailing zeros included. */
    u128 raw;
    unsigned last;
    int width;
    if (sig >= 1000000000000000u) {
        /* 16 or 17 digits, nearly all of attnd's numbers. GCC makes the choice a
         * branch, mispredicted for about 1 number in 6 of the large bench response;
         * a branch-free version (masks) measured no faster. */
        bool has_top = top != 0;
        uint64_t lo17 = dm << 8 | top, hi17 = dl << 8 | dm >> 56;
        uint64_t lo = has_top ? lo17 : dm, hi = has_top ? hi17 : dl;
        raw = static_cast<u128>(hi) << 64 | lo;
        last = has_top ? static_cast<unsigned>(dl >> 56) : 0;
        width = 16 + has_top;
    } else {
        int lead = dm ? __builtin_ctzll(dm) >> 3 : 8 + (__builtin_ctzll(dl) >> 3);
        raw = (dm | static_cast<u128>(dl) << 64) >> (8 * lead);
        last = 0;
        width = 16 - lead;
    }
    int k = width - trail;                /* significant digits, 1..17 */
    int decpt = width + exponent;         /* value = 0.d1d2…dk × 10^decpt */
    char last_char = static_cast<char>('0' + last);

    if (decpt <= -4 || decpt > 16) {      /* d1.d2…dk e±XX */
        out[0] = static_cast<char>('0' + static_cast<unsigned>(raw & 0xFF));
        out[1] = '.';
        store16(out + 2, raw >> 8 | static_cast<u128>(last) << 120);
        size_t n = k > 1 ? static_cast<size_t>(k) + 1 : 1;
        return n + write_exponent(decpt - 1, out + n);
    }
    if (decpt <= 0) {                     /* 0.00d1d2…dk */
        std::memcpy(out, "0.000000", 8);
        char *to = out + 2 - decpt;
        store16(to, raw);
        to[16] = last_char;
        return static_cast<size_t>(2 - decpt + k);
    }
    store16(out, raw);                    /* an integer: its zeros are the zero bytes */
    if (decpt >= k)
        return static_cast<size_t>(decpt);
    out[decpt] = '.';
    if (decpt < 16)
        store16(out + decpt + 1, raw >> (8 * decpt) | static_cast<u128>(last) << (8 * (16 - decpt)));
    else
        out[17] = last_char;
    return static_cast<size_t>(k) + 1;
}

/* A double as a decimal, kept between the two passes of api_format_row. */
struct decimal {
    uint64_t significand; /* 0 for zero and for non-finite numbers; may end in zeros */
    int32_t exponent;     /* when significand is 0: 1 if not finite, else 0 */
    uint32_t negative;
};

namespace db = jkj::dragonbox;
using db_impl = db::detail::impl<double>;
using db_format = db::ieee754_binary64;

/*
 * dragonbox's shortest digits (its compute_nearest_normal, binary64, round to nearest
 * with ties to even, as to_decimal does by default) for a positive normal double whose
 * significand bits are not all zero, built from dragonbox's own pieces. The one
 * difference is how the answer is chosen: dragonbox branches on whether a significand
 * one digit shorter exists (its step 2 against step 3), and for attnd's numbers that is
 * a coin toss (about half need 17 digits, half 16), which the CPU mispredicted half of
 * the time. Here both answers are computed and the right one selected; only the rare
 * cases (a remainder of exactly 0 or delta, a divisible distance) still branch, in
 * exactly dragonbox's way. The shorter answer is returned with a trailing zero, so
 * both share an exponent; the writer drops trailing zeros anyway.
 */
inline decimal shortest_normal(uint64_t bits)
{
    constexpr int kappa = db_impl::kappa;
    constexpr uint32_t big_divisor = 1000, small_divisor = 100; /* 10^(kappa + 1), 10^kappa */
    static_assert(kappa == 2, "the divisors are dragonbox's for binary64");

    uint64_t fraction = bits & ((uint64_t(1) << 52) - 1);
    int exponent = static_cast<int>(bits >> 52) + db_format::exponent_bias - 52;
    uint64_t two_fc = (fraction << 1) | (uint64_t(1) << 53);
    bool closed = fraction % 2 == 0; /* ties to even: the interval's ends read back as x */

    int minus_k = db::detail::log::floor_log10_pow2(exponent) - kappa;
    auto cache = db::detail::policy_impl::cache::full::get_cache<db_format>(-minus_k);
    int beta = exponent + db::detail::log::floor_log2_pow10(-minus_k);
    uint32_t deltai = db_impl::compute_delta(cache, beta);
    auto z = db_impl::compute_mul((two_fc | 1) << beta, cache);

    /* Step 2: the significand with one digit fewer, if it lies in the interval. */
    uint64_t big = z.result / big_divisor;
    uint32_t r = static_cast<uint32_t>(z.result - big_divisor * big);
    bool use_big = r < deltai;
    if (__builtin_expect(r == 0 || r == deltai, 0)) {
        if (r == 0 && z.is_integer && !closed) { /* exclude the right endpoint */
            --big;
            r = big_divisor;
            use_big = false;
        } else if (r == deltai) { /* compare the fractional parts */
            uint64_t two_fl = two_fc - 1;
            auto x = db_impl::compute_mul_parity(two_fl, cache, beta);
            if (!closed || exponent < db_impl::case_fc_pm_half_lower_threshold ||
                exponent > db_impl::divisibility_check_by_5_threshold)
                use_big = x.parity;
            else
                use_big = x.parity || x.is_integer;
        }
    }

    /* Step 3: the full-length significand, computed whether or not it is needed. */
    uint32_t dist = r - (deltai / 2) + (small_divisor / 2);
    bool approx_y_parity = ((dist ^ (small_divisor / 2)) & 1) != 0;
    uint32_t scaled = dist * 656; /* dist / 100 and whether it divides, as dragonbox does */
    bool divisible = (scaled & 0xFFFF) < 656;
    uint64_t small = big * 10 + (scaled >> 16);
    if (__builtin_expect(divisible & !use_big, 0)) { /* divisible first: rare */
        auto y = db_impl::compute_mul_parity(two_fc, cache, beta);
        if (y.parity != approx_y_parity)
            --small;
        else if (small % 2 != 0 && y.is_integer) /* a tie: to even */
            --small;
    }

    /* A mask, not ?: — the compiler turned the conditional back into the branch. */
    uint64_t pick_big = -static_cast<uint64_t>(use_big);
    decimal d;
    d.significand = (big * 10 & pick_big) | (small & ~pick_big);
    d.exponent = minus_k + kappa;
    d.negative = 0;
    if (__builtin_expect(d.significand >= 100000000000000000u, 0)) {
        /* Step 2's 17 digits with the zero appended would not fit write_positive. */
        d.significand /= 10;
        d.exponent++;
    }
    return d;
}

inline decimal to_decimal(double x)
{
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    uint32_t negative = static_cast<uint32_t>(bits >> 63);
    uint64_t magnitude = bits & ~(uint64_t(1) << 63);
    uint64_t exponent_bits = magnitude >> 52;
    decimal d = { 0, 0, negative };
    if (exponent_bits == 0x7FF) {
        d.exponent = 1; /* not finite */
    } else if (__builtin_expect(exponent_bits != 0 && (magnitude & ((uint64_t(1) << 52) - 1)) != 0, 1)) {
        d = shortest_normal(magnitude);
        d.negative = negative;
    } else if (magnitude != 0) { /* subnormal, or a power of two: dragonbox as it is */
        auto dec = db::to_decimal(std::fabs(x), db::policy::sign::ignore,
                                  db::policy::trailing_zero::ignore);
        d.significand = dec.significand;
        d.exponent = dec.exponent;
    }
    return d;
}

/* d in numfmt.h's layout, or "null", with g its significand's digit groups; returns
 * the length. Writes up to number_reach bytes. */
inline size_t write_decimal(const decimal &d, const digit_groups &g, char *out)
{
    if (d.significand == 0 && d.exponent != 0) {
        std::memcpy(out, "null", 4);
        return 4;
    }
    out[0] = '-';
    size_t n = d.negative;
    if (d.significand == 0) {
        out[n] = '0';
        return n + 1;
    }
    return n + write_positive(d.significand, d.exponent, g, out + n);
}

constexpr double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };

inline double round_decimals(double x, int decimals)
{
    /* numpy computes rint(x * 10^d) / 10^d; where x * 10^d overflows (|x| > ~1e293),
     * x has no fractional digits to round, so it is returned as it is rather than inf. */
    if (decimals < 0 || decimals > 15 || !std::isfinite(x))
        return x;
    double scaled = x * pow10[decimals];
    if (!std::isfinite(scaled))
        return x;
    return std::nearbyint(scaled) / pow10[decimals];
}

/*
 * The decimal of round_decimals(x, decimals), 0 <= decimals <= 15, mostly without
 * dividing or searching for digits: the rounded value is q / 10^d for an integer q,
 * and when |q| < 10^15 its shortest digits are q's own, at exponent -d. (The double
 * nearest to a decimal of at most 15 significant digits reads back as that decimal,
 * DBL_DIG, so no other decimal as short rounds to the same double.)
 */
inline decimal to_decimal_rounded(double x, int decimals)
{
    if (!std::isfinite(x))
        return to_decimal(x);
    double scaled = x * pow10[decimals];
    if (!std::isfinite(scaled))
        return to_decimal(x);
    double q = std::nearbyint(scaled);
    if (!(std::fabs(q) < 1e15))
        return to_decimal(q / pow10[decimals]);
    uint64_t significand = static_cast<uint64_t>(std::fabs(q));
    decimal d = { significand, significand ? -decimals : 0, std::signbit(q) ? 1u : 0u };
    return d;
}

/* Numbers in api_format_row's blocks. */
constexpr size_t block = 32;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(ATTN_NO_CLONES)
#define ATTN_NUMFMT_LANES 1
/* GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), which it then
 * reports as used uninitialized (GCC bug 105593, fixed in GCC 13). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/* eight_digits on eight lanes of v < 10^8: the same splits, each multiplication in
 * the narrowest lanes that hold its product (32, 32, 16 bits). */
__attribute__((target("arch=x86-64-v4")))
inline __m512i eight_digits_x8(__m512i v)
{
    __m512i hi = _mm512_srli_epi64(_mm512_mul_epu32(v, _mm512_set1_epi64(109951163)), 40);
    __m512i lo = _mm512_sub_epi64(v, _mm512_mul_epu32(hi, _mm512_set1_epi64(10000)));
    __m512i x = _mm512_or_si512(hi, _mm512_slli_epi64(lo, 32));
    __m512i h = _mm512_srli_epi32(_mm512_mullo_epi32(x, _mm512_set1_epi32(10486)), 20);
    x = _mm512_or_si512(h, _mm512_slli_epi32(_mm512_sub_epi32(x, _mm512_mullo_epi32(h, _mm512_set1_epi32(100))), 16));
    __m512i t = _mm512_srli_epi16(_mm512_mullo_epi16(x, _mm512_set1_epi16(103)), 10);
    return _mm512_or_si512(t, _mm512_slli_epi16(_mm512_sub_epi16(x, _mm512_mullo_epi16(t, _mm512_set1_epi16(10))), 8));
}

/*
 * digit_groups_of for eight significands at once, in AVX-512 (x86-64-v4). Vector
 * lanes have no 64-bit division, nor the 64 x 64 -> 128-bit multiplication a
 * compiler divides by a constant with: sig / 10^8 is (sig >> 8) / 390625 (10^8 =
 * 2^8 · 5^8, and floor(floor(a/b)/c) = floor(a/(bc))), and sig >> 8 < 2^49 is exact
 * as a double made from its bits. The quotient times the reciprocal, rounded to an
 * integer by adding 2^52, is the floor or one more (its error is below 10^-6); one
 * more shows as a negative remainder, which is corrected. Every product fits 32-bit
 * lanes (vpmuludq) or narrower: left to itself, GCC vectorized a loop of the same
 * steps with 64-bit multiplications (vpmullq, three micro-operations each), slower
 * for a whole row. Without the vector loop, the same steps one number at a time were
 * slower than digit_groups_of's scalar division, hence vector lanes only (AVX-512
 * here, AVX2 in digit_groups_in_avx2_block).
 */
__attribute__((target("arch=x86-64-v4")))
void digit_groups_in_lanes_block(const uint64_t *significands, size_t m, uint64_t *tops,
                                 uint64_t *mids, uint64_t *lows)
{
    const __m512i exponent_52 = _mm512_set1_epi64(0x4330000000000000);
    const __m512d two_52 = _mm512_set1_pd(0x1p52), reciprocal = _mm512_set1_pd(1.0 / 390625.0);
    const __m512i e8 = _mm512_set1_epi64(100000000);
    for (size_t j = 0; j < m; j += 8) {
        __mmask8 lanes = m - j >= 8 ? 0xFF : static_cast<__mmask8>((1u << (m - j)) - 1);
        __m512i sig = _mm512_maskz_loadu_epi64(lanes, significands + j);
        __m512d x = _mm512_castsi512_pd(_mm512_or_si512(_mm512_srli_epi64(sig, 8), exponent_52));
        __m512d q = _mm512_add_pd(_mm512_mul_pd(_mm512_sub_pd(x, two_52), reciprocal), two_52);
        __m512i upper = _mm512_sub_epi64(_mm512_castpd_si512(q), exponent_52);
        __m512i low = _mm512_sub_epi64(sig, _mm512_mul_epu32(upper, e8));
        __m512i over = _mm512_srai_epi64(low, 63);
        upper = _mm512_add_epi64(upper, over);
        low = _mm512_add_epi64(low, _mm512_and_si512(over, e8));
        __m512i top = _mm512_srli_epi64(_mm512_mul_epu32(upper, _mm512_set1_epi64(1441151881)), 57);
        __m512i mid = _mm512_sub_epi64(upper, _mm512_mul_epu32(top, e8));
        _mm512_mask_storeu_epi64(tops + j, lanes, top);
        _mm512_mask_storeu_epi64(mids + j, lanes, eight_digits_x8(mid));
        _mm512_mask_storeu_epi64(lows + j, lanes, eight_digits_x8(low));
    }
}
/* The high and low 64 bits of x × y in each lane, from four 32 × 32-bit products
 * (vpmuludq): AVX-512 has no wider multiplication. */
__attribute__((target("arch=x86-64-v4")))
inline void mul_64x64(__m512i x, __m512i y, __m512i &high, __m512i &low)
{
    const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFF);
    __m512i xh = _mm512_srli_epi64(x, 32), yh = _mm512_srli_epi64(y, 32);
    __m512i ll = _mm512_mul_epu32(x, y), lh = _mm512_mul_epu32(x, yh);
    __m512i hl = _mm512_mul_epu32(xh, y), hh = _mm512_mul_epu32(xh, yh);
    __m512i mid = _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32),
                                                    _mm512_and_si512(lh, low32)),
                                   _mm512_and_si512(hl, low32)); /* < 2^34 */
    low = _mm512_or_si512(_mm512_slli_epi64(mid, 32), _mm512_and_si512(ll, low32));
    high = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)),
                            _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(mid, 32)));
}

__attribute__((target("arch=x86-64-v4")))
inline __m512i mul_high_64(__m512i x, __m512i y)
{
    __m512i high, low;
    mul_64x64(x, y, high, low);
    return high;
}

/*
 * shortest_normal for eight numbers at once, in AVX-512 (x86-64-v4): the same steps
 * on the same table, in vector lanes, for the lanes that take shortest_normal's common
 * path. A lane that does not — not a normal double with a fraction (to_decimal's other
 * cases), or a remainder of 0 or delta, or a divisible distance (shortest_normal's
 * rare branches) — is marked in the returned mask and left for to_decimal. The
 * division by 1000 is the multiplication a compiler makes of it, built from 32-bit
 * ones: z / 1000 is ((z >> 3) × 0x20C49BA5E353F7CF) >> 68 for every 64-bit z.
 * Writes ds[0..n) for the lanes given (the marked ones with a wrong value).
 */
__attribute__((target("arch=x86-64-v4")))
__mmask8 shortest_normal_x8(const double *xs, __mmask8 lanes, decimal *ds)
{
    static_assert(sizeof(db::detail::cache_holder<db_format>::cache[0]) == 16,
                  "a cache entry is { high, low }, two 64-bit words");
    const auto *cache = reinterpret_cast<const long long *>(
        &db::detail::cache_holder<db_format>::cache[0]);
    constexpr int min_k = db::detail::cache_holder<db_format>::min_k;
    constexpr int kappa = db_impl::kappa;
    const __m512i fraction_bits = _mm512_set1_epi64((int64_t(1) << 52) - 1);

    __m512i bits = _mm512_maskz_loadu_epi64(lanes, xs);
    __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi64(INT64_MAX));
    __m512i exponent_bits = _mm512_srli_epi64(magnitude, 52);
    __m512i fraction = _mm512_and_si512(magnitude, fraction_bits);
    __mmask8 common = _mm512_mask_cmpneq_epi64_mask(lanes, exponent_bits, _mm512_setzero_si512()) &
                      _mm512_cmpneq_epi64_mask(exponent_bits, _mm512_set1_epi64(0x7FF)) &
                      _mm512_test_epi64_mask(fraction, fraction);

    __m512i exponent = _mm512_sub_epi64(exponent_bits, _mm512_set1_epi64(-db_format::exponent_bias + 52));
    __m512i two_fc = _mm512_or_si512(_mm512_slli_epi64(fraction, 1), _mm512_set1_epi64(int64_t(1) << 53));
    /* floor_log10_pow2 and floor_log2_pow10: dragonbox's multiply-shifts, in 64-bit lanes */
    __m512i minus_k = _mm512_sub_epi64(
        _mm512_srai_epi64(_mm512_mul_epi32(exponent, _mm512_set1_epi64(315653)), 20),
        _mm512_set1_epi64(kappa));
    __m512i k = _mm512_sub_epi64(_mm512_setzero_si512(), minus_k);
    __m512i index = _mm512_slli_epi64(_mm512_sub_epi64(k, _mm512_set1_epi64(min_k)), 1);
    index = _mm512_maskz_mov_epi64(common, index); /* other lanes read entry 0 */
    __m512i cache_high = _mm512_i64gather_epi64(index, cache, 8);
    __m512i cache_low = _mm512_i64gather_epi64(_mm512_add_epi64(index, _mm512_set1_epi64(1)), cache, 8);
    __m512i beta = _mm512_add_epi64(
        exponent, _mm512_srai_epi64(_mm512_mul_epi32(k, _mm512_set1_epi64(1741647)), 19));
    beta = _mm512_maskz_mov_epi64(common, beta);
    __m512i deltai = _mm512_srlv_epi64(cache_high, _mm512_sub_epi64(_mm512_set1_epi64(63), beta));

    /* z: the upper 128 bits of ((two_fc | 1) << beta) × cache, its high word kept */
    __m512i u = _mm512_sllv_epi64(_mm512_or_si512(two_fc, _mm512_set1_epi64(1)), beta);
    __m512i z_high, z_low;
    mul_64x64(u, cache_high, z_high, z_low);
    __m512i carry_in = mul_high_64(u, cache_low);
    z_low = _mm512_add_epi64(z_low, carry_in);
    z_high = _mm512_mask_add_epi64(z_high, _mm512_cmplt_epu64_mask(z_low, carry_in), z_high,
                                   _mm512_set1_epi64(1));

    /* Step 2: big = z / 1000, r = z mod 1000 */
    __m512i big = _mm512_srli_epi64(
        mul_high_64(_mm512_srli_epi64(z_high, 3), _mm512_set1_epi64(0x20C49BA5E353F7CF)), 4);
    __m512i r = _mm512_sub_epi64(z_high, _mm512_mullo_epi64(big, _mm512_set1_epi64(1000)));
    __mmask8 use_big = _mm512_cmplt_epu64_mask(r, deltai);
    common &= _mm512_cmpneq_epi64_mask(r, _mm512_setzero_si512()) &
              _mm512_cmpneq_epi64_mask(r, deltai);

    /* Step 3: the full-length significand (shortest_normal's dist, scaled, divisible) */
    __m512i dist = _mm512_add_epi64(_mm512_sub_epi64(r, _mm512_srli_epi64(deltai, 1)),
                                    _mm512_set1_epi64(50));
    __m512i scaled = _mm512_and_si512(_mm512_mullo_epi64(dist, _mm512_set1_epi64(656)),
                                      _mm512_set1_epi64(0xFFFFFFFF));
    __mmask8 divisible = _mm512_cmplt_epu64_mask(
        _mm512_and_si512(scaled, _mm512_set1_epi64(0xFFFF)), _mm512_set1_epi64(656));
    common &= ~(divisible & ~use_big);
    __m512i big10 = _mm512_mullo_epi64(big, _mm512_set1_epi64(10));
    __m512i small = _mm512_add_epi64(big10, _mm512_srli_epi64(scaled, 16));

    /* Step 2's answer with its appended zero, unless that makes 18 digits */
    __m512i exponent10 = _mm512_add_epi64(minus_k, _mm512_set1_epi64(kappa));
    __mmask8 long_big = use_big & _mm512_cmpge_epu64_mask(big10, _mm512_set1_epi64(100000000000000000));
    /* shortest_normal divides a significand of 18 digits by ten: exactly, for step
     * 2's (it ends in the appended zero); step 3's, if there ever were one, is left
     * to it */
    common &= ~(~use_big & _mm512_cmpge_epu64_mask(small, _mm512_set1_epi64(100000000000000000)));
    __m512i significand = _mm512_mask_mov_epi64(small, use_big, big10);
    significand = _mm512_mask_mov_epi64(significand, long_big, big);
    exponent10 = _mm512_mask_add_epi64(exponent10, long_big, exponent10, _mm512_set1_epi64(1));
    /* Stored as eight decimals, { significand, exponent | negative << 32 } each: the
     * two words of lanes 0-3, then of lanes 4-7, interleaved. */
    static_assert(sizeof(decimal) == 16 && offsetof(decimal, exponent) == 8 &&
                      offsetof(decimal, negative) == 12,
                  "decimal is two words: the significand; the exponent, then the sign");
    __m512i second = _mm512_or_si512(_mm512_and_si512(exponent10, _mm512_set1_epi64(0xFFFFFFFF)),
                                     _mm512_slli_epi64(_mm512_srli_epi64(bits, 63), 32));
    __m512i first_four = _mm512_permutex2var_epi64(
        significand, _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), second);
    __m512i last_four = _mm512_permutex2var_epi64(
        significand, _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4), second);
    unsigned words = (static_cast<unsigned>(lanes) + 1) * (static_cast<unsigned>(lanes) + 1) - 1;
    _mm512_mask_storeu_epi64(ds, static_cast<__mmask8>(words), first_four);
    _mm512_mask_storeu_epi64(ds + 4, static_cast<__mmask8>(words >> 8), last_four);
    return static_cast<__mmask8>(lanes & ~common);
}

/* to_decimal for a block of m numbers, eight at a time in shortest_normal_x8, the
 * lanes it leaves one at a time in to_decimal. */
__attribute__((target("arch=x86-64-v4")))
void decimals_in_lanes_block(const double *xs, size_t m, decimal *ds)
{
    for (size_t j = 0; j < m; j += 8) {
        size_t n = m - j >= 8 ? 8 : m - j;
        unsigned rest = shortest_normal_x8(xs + j, static_cast<__mmask8>((1u << n) - 1), ds + j);
        for (; rest != 0; rest &= rest - 1) {
            size_t l = static_cast<size_t>(__builtin_ctz(rest));
            ds[j + l] = to_decimal(xs[j + l]);
        }
    }
}

/*
 * The same two steps in AVX2 (x86-64-v3: most AMD and older Intel servers), four
 * numbers at a time. AVX2 lacks what the AVX-512 code leans on: mask registers (a
 * lane's condition is a vector of all-ones or zeros), 64-bit arithmetic shifts and
 * multiplications (the exponent arithmetic runs in 32-bit lanes, whose products fit;
 * multiplications by 10 and 1000 are shifts and adds), unsigned comparisons (a sign
 * flip, where a value may reach 2^63). Only whole groups of four take the lanes; a
 * block's last one to three numbers go one at a time.
 */
__attribute__((target("avx2")))
inline __m256i eight_digits_x4(__m256i v)
{
    __m256i hi = _mm256_srli_epi64(_mm256_mul_epu32(v, _mm256_set1_epi64x(109951163)), 40);
    __m256i lo = _mm256_sub_epi64(v, _mm256_mul_epu32(hi, _mm256_set1_epi64x(10000)));
    __m256i x = _mm256_or_si256(hi, _mm256_slli_epi64(lo, 32));
    __m256i h = _mm256_srli_epi32(_mm256_mullo_epi32(x, _mm256_set1_epi32(10486)), 20);
    x = _mm256_or_si256(h, _mm256_slli_epi32(_mm256_sub_epi32(x, _mm256_mullo_epi32(h, _mm256_set1_epi32(100))), 16));
    __m256i t = _mm256_srli_epi16(_mm256_mullo_epi16(x, _mm256_set1_epi16(103)), 10);
    return _mm256_or_si256(t, _mm256_slli_epi16(_mm256_sub_epi16(x, _mm256_mullo_epi16(t, _mm256_set1_epi16(10))), 8));
}

/* digit_groups_in_lanes_block's steps on four lanes; returns how many numbers it did
 * (m rounded down to a multiple of four). */
__attribute__((target("avx2")))
size_t digit_groups_in_avx2_block(const uint64_t *significands, size_t m, uint64_t *tops,
                                  uint64_t *mids, uint64_t *lows)
{
    const __m256i exponent_52 = _mm256_set1_epi64x(0x4330000000000000);
    const __m256d two_52 = _mm256_set1_pd(0x1p52), reciprocal = _mm256_set1_pd(1.0 / 390625.0);
    const __m256i e8 = _mm256_set1_epi64x(100000000);
    size_t j = 0;
    for (; j + 4 <= m; j += 4) {
        __m256i sig = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(significands + j));
        __m256d x = _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(sig, 8), exponent_52));
        __m256d q = _mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(x, two_52), reciprocal), two_52);
        __m256i upper = _mm256_sub_epi64(_mm256_castpd_si256(q), exponent_52);
        __m256i low = _mm256_sub_epi64(sig, _mm256_mul_epu32(upper, e8));
        __m256i over = _mm256_cmpgt_epi64(_mm256_setzero_si256(), low); /* -1 where negative */
        upper = _mm256_add_epi64(upper, over);
        low = _mm256_add_epi64(low, _mm256_and_si256(over, e8));
        __m256i top = _mm256_srli_epi64(_mm256_mul_epu32(upper, _mm256_set1_epi64x(1441151881)), 57);
        __m256i mid = _mm256_sub_epi64(upper, _mm256_mul_epu32(top, e8));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(tops + j), top);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(mids + j), eight_digits_x4(mid));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(lows + j), eight_digits_x4(low));
    }
    return j;
}

/* mul_64x64 on four lanes. */
__attribute__((target("avx2")))
inline void mul_64x64_x4(__m256i x, __m256i y, __m256i &high, __m256i &low)
{
    const __m256i low32 = _mm256_set1_epi64x(0xFFFFFFFF);
    __m256i xh = _mm256_srli_epi64(x, 32), yh = _mm256_srli_epi64(y, 32);
    __m256i ll = _mm256_mul_epu32(x, y), lh = _mm256_mul_epu32(x, yh);
    __m256i hl = _mm256_mul_epu32(xh, y), hh = _mm256_mul_epu32(xh, yh);
    __m256i mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32),
                                                    _mm256_and_si256(lh, low32)),
                                   _mm256_and_si256(hl, low32)); /* < 2^34 */
    low = _mm256_or_si256(_mm256_slli_epi64(mid, 32), _mm256_and_si256(ll, low32));
    high = _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                            _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
}

__attribute__((target("avx2")))
inline __m256i mul_high_64_x4(__m256i x, __m256i y)
{
    __m256i high, low;
    mul_64x64_x4(x, y, high, low);
    return high;
}

/* All-ones where a < b as unsigned 64-bit numbers. */
__attribute__((target("avx2")))
inline __m256i less_unsigned_x4(__m256i a, __m256i b)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    return _mm256_cmpgt_epi64(_mm256_xor_si256(b, sign), _mm256_xor_si256(a, sign));
}

/*
 * shortest_normal_x8's steps for four numbers, xs[0..4), in AVX2; returns the lanes
 * (bits 0-3) left for to_decimal, whose ds entries hold a wrong value. The exponent
 * arithmetic (|exponent| <= 1075, |k| <= 343: every product below 2^31) is done in
 * four 32-bit lanes and widened.
 */
__attribute__((target("avx2")))
unsigned shortest_normal_x4(const double *xs, decimal *ds)
{
    const auto *cache = reinterpret_cast<const long long *>(
        &db::detail::cache_holder<db_format>::cache[0]);
    constexpr int min_k = db::detail::cache_holder<db_format>::min_k;
    constexpr int kappa = db_impl::kappa;
    const __m256i zero = _mm256_setzero_si256();
    const __m256i fraction_bits = _mm256_set1_epi64x((int64_t(1) << 52) - 1);

    __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xs));
    __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi64x(INT64_MAX));
    __m256i exponent_bits = _mm256_srli_epi64(magnitude, 52);
    __m256i fraction = _mm256_and_si256(magnitude, fraction_bits);
    __m256i rare = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi64(exponent_bits, zero),
                        _mm256_cmpeq_epi64(exponent_bits, _mm256_set1_epi64x(0x7FF))),
        _mm256_cmpeq_epi64(fraction, zero));

    /* the exponent's low words (lanes 0, 2, 4, 6) as four 32-bit lanes */
    __m128i rare32 = _mm256_castsi256_si128(
        _mm256_permutevar8x32_epi32(rare, _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0)));
    __m128i exponent = _mm_sub_epi32(
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
            exponent_bits, _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0))),
        _mm_set1_epi32(-db_format::exponent_bias + 52));
    __m128i minus_k = _mm_sub_epi32(
        _mm_srai_epi32(_mm_mullo_epi32(exponent, _mm_set1_epi32(315653)), 20), _mm_set1_epi32(kappa));
    __m128i k = _mm_sub_epi32(_mm_setzero_si128(), minus_k);
    __m128i index = _mm_andnot_si128(rare32, _mm_slli_epi32(_mm_sub_epi32(k, _mm_set1_epi32(min_k)), 1));
    __m256i cache_high = _mm256_i32gather_epi64(cache, index, 8);
    __m256i cache_low = _mm256_i32gather_epi64(cache, _mm_add_epi32(index, _mm_set1_epi32(1)), 8);
    __m128i beta32 = _mm_andnot_si128(
        rare32, _mm_add_epi32(exponent, _mm_srai_epi32(_mm_mullo_epi32(k, _mm_set1_epi32(1741647)), 19)));
    __m256i beta = _mm256_cvtepi32_epi64(beta32);
    __m256i deltai = _mm256_srlv_epi64(cache_high, _mm256_sub_epi64(_mm256_set1_epi64x(63), beta));

    /* z: the upper 128 bits of ((two_fc | 1) << beta) × cache, its high word kept */
    __m256i two_fc = _mm256_or_si256(_mm256_slli_epi64(fraction, 1), _mm256_set1_epi64x(int64_t(1) << 53));
    __m256i u = _mm256_sllv_epi64(_mm256_or_si256(two_fc, _mm256_set1_epi64x(1)), beta);
    __m256i z_high, z_low;
    mul_64x64_x4(u, cache_high, z_high, z_low);
    __m256i carry_in = mul_high_64_x4(u, cache_low);
    z_low = _mm256_add_epi64(z_low, carry_in);
    z_high = _mm256_sub_epi64(z_high, less_unsigned_x4(z_low, carry_in)); /* + 1 on a carry */

    /* Step 2: big = z / 1000, r = z mod 1000 (1000 = 1024 - 16 - 8) */
    __m256i big = _mm256_srli_epi64(
        mul_high_64_x4(_mm256_srli_epi64(z_high, 3), _mm256_set1_epi64x(0x20C49BA5E353F7CF)), 4);
    __m256i big1000 = _mm256_sub_epi64(_mm256_slli_epi64(big, 10),
                                       _mm256_add_epi64(_mm256_slli_epi64(big, 4), _mm256_slli_epi64(big, 3)));
    __m256i r = _mm256_sub_epi64(z_high, big1000); /* < 1000, like deltai: signed compares */
    __m256i use_big = _mm256_cmpgt_epi64(deltai, r);
    rare = _mm256_or_si256(rare, _mm256_or_si256(_mm256_cmpeq_epi64(r, zero), _mm256_cmpeq_epi64(r, deltai)));

    /* Step 3: the full-length significand (shortest_normal's dist, scaled, divisible) */
    __m256i dist = _mm256_add_epi64(_mm256_sub_epi64(r, _mm256_srli_epi64(deltai, 1)),
                                    _mm256_set1_epi64x(50));
    __m256i scaled = _mm256_and_si256(_mm256_mul_epu32(dist, _mm256_set1_epi64x(656)),
                                      _mm256_set1_epi64x(0xFFFFFFFF));
    __m256i divisible = _mm256_cmpgt_epi64(_mm256_set1_epi64x(656),
                                           _mm256_and_si256(scaled, _mm256_set1_epi64x(0xFFFF)));
    rare = _mm256_or_si256(rare, _mm256_andnot_si256(use_big, divisible));
    __m256i big10 = _mm256_add_epi64(_mm256_slli_epi64(big, 3), _mm256_slli_epi64(big, 1));
    __m256i small = _mm256_add_epi64(big10, _mm256_srli_epi64(scaled, 16));

    /* Step 2's answer with its appended zero, unless that makes 18 digits (big < 2^61,
     * so big10 and small stay below 2^63: signed compares) */
    const __m256i max17 = _mm256_set1_epi64x(100000000000000000 - 1);
    __m256i exponent10 = _mm256_cvtepi32_epi64(_mm_add_epi32(minus_k, _mm_set1_epi32(kappa)));
    __m256i long_big = _mm256_and_si256(use_big, _mm256_cmpgt_epi64(big10, max17));
    rare = _mm256_or_si256(rare, _mm256_andnot_si256(use_big, _mm256_cmpgt_epi64(small, max17)));
    __m256i significand = _mm256_blendv_epi8(small, big10, use_big);
    significand = _mm256_blendv_epi8(significand, big, long_big);
    exponent10 = _mm256_sub_epi64(exponent10, long_big);
    __m256i second = _mm256_or_si256(_mm256_and_si256(exponent10, _mm256_set1_epi64x(0xFFFFFFFF)),
                                     _mm256_slli_epi64(_mm256_srli_epi64(bits, 63), 32));
    /* { significand, second } for lanes 0 and 2, then 1 and 3; reordered to 0, 1 | 2, 3 */
    __m256i even = _mm256_unpacklo_epi64(significand, second);
    __m256i odd = _mm256_unpackhi_epi64(significand, second);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(ds), _mm256_permute2x128_si256(even, odd, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(ds + 2), _mm256_permute2x128_si256(even, odd, 0x31));
    return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(rare)));
}

/* decimals_in_lanes_block on four lanes; returns how many numbers it did (m rounded
 * down to a multiple of four). */
__attribute__((target("avx2")))
size_t decimals_in_avx2_block(const double *xs, size_t m, decimal *ds)
{
    size_t j = 0;
    for (; j + 4 <= m; j += 4) {
        for (unsigned rest = shortest_normal_x4(xs + j, ds + j); rest != 0; rest &= rest - 1) {
            size_t l = static_cast<size_t>(__builtin_ctz(rest));
            ds[j + l] = to_decimal(xs[j + l]);
        }
    }
    return j;
}
#pragma GCC diagnostic pop

/* The widest lanes this CPU runs: 8 (AVX-512), 4 (AVX2) or 0; asked once, when the
 * program loads. */
const unsigned lanes_supported =
    (__builtin_cpu_init(), __builtin_cpu_supports("x86-64-v4") ? 8u
                           : __builtin_cpu_supports("avx2")    ? 4u
                                                               : 0u);

/*
 * The fewest numbers a block takes the vector lanes for. A call costs about as much
 * for one number as for eight, so short blocks (attnd's small answers are rows of 2
 * to 4 numbers, and a long row's last block may be as short) are quicker one at a
 * time. Measured, a whole row, ns a number, lanes against one at a time: 1 number
 * 115 / 40, 2: 63 / 35, 4: 34 / 30, 5: 30 / 29, 6: 28 / 31, 8: 21 / 30.
 */
constexpr size_t lanes_min = 6;
#else
constexpr unsigned lanes_supported = 0;
#endif

/*
 * The digit groups of a block's significands (zero gives zeros). In vector code with
 * AVX-512 (eight at a time) or AVX2 (four; `lanes` says which): the most
 * instructions of a number's text after its shortest digits, and a fifth less time
 * for a whole row with AVX-512. Elsewhere one at a time. Not under clang (the fuzz
 * build) or ThreadSanitizer, as with core/softmax_row.c's clones (one code path for
 * those builds is enough). A single AVX2 pass making each four numbers' decimals and
 * then their digit groups, the significands kept in a register, measured slower
 * than the two passes (docs/performance.md).
 */
inline void digit_groups_of_block(const uint64_t *significands, size_t m, uint64_t *tops,
                                  uint64_t *mids, uint64_t *lows, unsigned lanes)
{
    size_t j = 0;
#ifdef ATTN_NUMFMT_LANES
    if (lanes == 8 && m >= lanes_min) {
        digit_groups_in_lanes_block(significands, m, tops, mids, lows);
        return;
    }
    if (lanes == 4 && m >= 4)
        j = digit_groups_in_avx2_block(significands, m, tops, mids, lows);
#else
    (void)lanes;
#endif
    for (; j < m; j++) {
        digit_groups g = digit_groups_of(significands[j]);
        tops[j] = g.top;
        mids[j] = g.mid;
        lows[j] = g.low;
    }
}

/* to_decimal for a block of numbers: eight (AVX-512) or four (AVX2) at a time in
 * vector code when `lanes` says so, else one at a time. */
inline void decimals_of_block(const double *xs, size_t m, decimal *ds, unsigned lanes)
{
    size_t j = 0;
#ifdef ATTN_NUMFMT_LANES
    if (lanes == 8 && m >= lanes_min) {
        decimals_in_lanes_block(xs, m, ds);
        return;
    }
    if (lanes == 4 && m >= 4)
        j = decimals_in_avx2_block(xs, m, ds);
#else
    (void)lanes;
#endif
    for (; j < m; j++)
        ds[j] = to_decimal(xs[j]);
}

} // namespace


extern "C" size_t api_format_double(double x, char *buf)
{
    char room[API_NUMBER_ROOM]; /* write_decimal may write past the text; buf may be short */
    decimal d = to_decimal(x);
    size_t n = write_decimal(d, digit_groups_of(d.significand), room);
    std::memcpy(buf, room, n);
    buf[n] = '\0';
    return n;
}

/*
 * Three passes over blocks of numbers: the decimal of each, the digit groups of
 * each, then the text of each. The first pass's iterations are independent of one
 * another, so the CPU overlaps several numbers' chains of multiplications (in one
 * pass, each number's work queued behind the previous number's text and its
 * length); the second is vector code.
 */
extern "C" size_t api_format_row_in_lanes(const double *xs, size_t n, int decimals, char *out,
                                          unsigned lanes)
{
    if (lanes != 8 && lanes != 4)
        lanes = 0;
    if (lanes > lanes_supported)
        lanes = lanes_supported;
    decimal ds[block];
    uint64_t significands[block], tops[block], mids[block], lows[block];
    char *o = out;
    if (decimals > 15)
        decimals = -1; /* as round_decimals: no rounding */
    for (size_t i = 0; i < n; i += block) {
        size_t m = n - i < block ? n - i : block;
        if (decimals < 0) {
            decimals_of_block(xs + i, m, ds, lanes);
        } else {
            for (size_t j = 0; j < m; j++)
                ds[j] = to_decimal_rounded(xs[i + j], decimals);
        }
        for (size_t j = 0; j < m; j++)
            significands[j] = ds[j].significand;
        digit_groups_of_block(significands, m, tops, mids, lows, lanes);
        for (size_t j = 0; j < m; j++) {
            o += write_decimal(ds[j], { tops[j], mids[j], lows[j] }, o);
            *o++ = ','; /* the last one is dropped, within the room */
        }
    }
    return n > 0 ? static_cast<size_t>(o - out) - 1 : 0;
}

extern "C" unsigned api_format_lanes(void) { return lanes_supported; }

extern "C" size_t api_format_row(const double *xs, size_t n, int decimals, char *out)
{
    return api_format_row_in_lanes(xs, n, decimals, out, lanes_supported);
}

extern "C" double api_round_decimals(double x, int decimals)
{
    return round_decimals(x, decimals);
}
