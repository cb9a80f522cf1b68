/*
 * core/softmax_row.c — softmax's per-element loops, written so that the compiler
 * vectorizes them (see softmax_row.h for the contract of each).
 *
 * Why not glibc's exp: called once per weight it was a fifth of a forward pass at
 * n = 2048 under perf (the two products and their copies about as much, the
 * entropy's log a sixth), and a call cannot be vectorized. The
 * exponential here is glibc's method without its calls and branches: e^t = 2^(k/128)
 * · e^r with k = round(t·128/ln 2) and |r| <= ln 2/256, 2^(k/128) from a table of 128
 * values (each a double plus its relative error), e^r from its Taylor series to r^5
 * (the first term left out is r^6/720 < 6e-19). Measured against long double expl on
 * 2·10^7 arguments in [-707, 0]: at most 0.63 ulp off (glibc 0.51), and equal to
 * glibc's exp on all but 0.12% of them, by one ulp.
 *
 * Built with -O3 (the Makefile) and for three targets (target_clones), chosen once
 * when the program loads.
 */
#include "softmax_row.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* GCC only: clang (the fuzz build) wants the attribute on every declaration too, and
 * the clones give the same bits anyway. Not under ThreadSanitizer either: the clones'
 * resolver runs while the program is being loaded, before TSan's runtime is set up,
 * and the instrumented resolver crashed the TSan build at startup. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(ATTN_NO_CLONES)
#define ATTN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTN_VECTOR_CLONES
#endif

/* Interleaved partial sums: the order of additions is fixed whatever the vector width. */
#define ATTN_LANES 8

/*
 * 2^(i/128) for i < 128 as { nearest double, (true value - it) / it }, from 60-digit
 * decimal arithmetic.
 */
static const double attn_exp2_table[128][2] = {
    { 0x1.0000000000000p+0, 0x0.0p+0 },
    { 0x1.0163da9fb3335p+0, 0x1.b3b4f1a88bf6ep-54 },
    { 0x1.02c9a3e778061p+0, -0x1.160139cd8dc5dp-56 },
    { 0x1.04315e86e7f85p+0, -0x1.05e7a108766d1p-54 },
    { 0x1.059b0d3158574p+0, 0x1.cd2523567f613p-55 },
    { 0x1.0706b29ddf6dep+0, -0x1.bce8023f98efap-55 },
    { 0x1.0874518759bc8p+0, 0x1.0f74e61e6c861p-57 },
    { 0x1.09e3ecac6f383p+0, 0x1.0a3e45b33d399p-54 },
    { 0x1.0b5586cf9890fp+0, 0x1.79aa65d837b6dp-54 },
    { 0x1.0cc922b7247f7p+0, 0x1.eb51a92fdeffcp-55 },
    { 0x1.0e3ec32d3d1a2p+0, 0x1.ebe3d702f9cd1p-60 },
    { 0x1.0fb66affed31bp+0, -0x1.a033489906e0bp-57 },
    { 0x1.11301d0125b51p+0, -0x1.556522a2fbd0ep-54 },
    { 0x1.12abdc06c31ccp+0, -0x1.080ef8c4eea55p-58 },
    { 0x1.1429aaea92de0p+0, -0x1.1c923b9d5f416p-54 },
    { 0x1.15a98c8a58e51p+0, 0x1.0d3e3e95c55afp-55 },
    { 0x1.172b83c7d517bp+0, -0x1.01b15eaa59348p-55 },
    { 0x1.18af9388c8deap+0, -0x1.f1ff055de323dp-55 },
    { 0x1.1a35beb6fcb75p+0, 0x1.b898c3f1353bfp-55 },
    { 0x1.1bbe084045cd4p+0, -0x1.6d99c7611eb26p-54 },
    { 0x1.1d4873168b9aap+0, 0x1.aecf73e3a2f60p-54 },
    { 0x1.1ed5022fcd91dp+0, -0x1.fe782cb86389dp-55 },
    { 0x1.2063b88628cd6p+0, 0x1.a6f4144a6c38dp-55 },
    { 0x1.21f49917ddc96p+0, 0x1.07a05b0e4047dp-55 },
    { 0x1.2387a6e756238p+0, 0x1.68efde3a8a894p-54 },
    { 0x1.251ce4fb2a63fp+0, 0x1.75e18f274487dp-55 },
    { 0x1.26b4565e27cddp+0, 0x1.0472b981fe7f2p-55 },
    { 0x1.284dfe1f56381p+0, -0x1.6b87b3f71085ep-54 },
    { 0x1.29e9df51fdee1p+0, 0x1.2f7e16d09ab31p-55 },
    { 0x1.2b87fd0dad990p+0, -0x1.d219b1a6fbffap-60 },
    { 0x1.2d285a6e4030bp+0, 0x1.b3782720c0ab4p-55 },
    { 0x1.2ecafa93e2f56p+0, 0x1.e149289cecb8fp-57 },
    { 0x1.306fe0a31b715p+0, 0x1.34d754db0abb6p-55 },
    { 0x1.32170fc4cd831p+0, 0x1.64201e2ac744cp-55 },
    { 0x1.33c08b26416ffp+0, 0x1.fdd395dd3f84ap-55 },
    { 0x1.356c55f929ff1p+0, -0x1.6a3803b8e5b04p-55 },
    { 0x1.371a7373aa9cbp+0, -0x1.24aedcc4b5068p-54 },
    { 0x1.38cae6d05d866p+0, -0x1.907f81b512d8ep-54 },
    { 0x1.3a7db34e59ff7p+0, -0x1.1d1e83e9436d2p-56 },
    { 0x1.3c32dc313a8e5p+0, -0x1.91919b3ce1b15p-54 },
    { 0x1.3dea64c123422p+0, 0x1.59f48a72a4c6dp-55 },
    { 0x1.3fa4504ac801cp+0, -0x1.312607a28698ap-54 },
    { 0x1.4160a21f72e2ap+0, -0x1.8a78f4817895bp-58 },
    { 0x1.431f5d950a897p+0, -0x1.c2c9b67499a1bp-56 },
    { 0x1.44e086061892dp+0, 0x1.363ed60c2ac11p-59 },
    { 0x1.46a41ed1d0057p+0, 0x1.666093b0664efp-54 },
    { 0x1.486a2b5c13cd0p+0, 0x1.ecce1daa10379p-57 },
    { 0x1.4a32af0d7d3dep+0, 0x1.3ff8e3f0f1230p-54 },
    { 0x1.4bfdad5362a27p+0, 0x1.690cebb7aafb0p-56 },
    { 0x1.4dcb299fddd0dp+0, 0x1.31dbdeb54e077p-54 },
    { 0x1.4f9b2769d2ca7p+0, -0x1.f94340071a38ep-55 },
    { 0x1.516daa2cf6642p+0, -0x1.7deccdc93a349p-55 },
    { 0x1.5342b569d4f82p+0, -0x1.8dec6bd0f385fp-56 },
    { 0x1.551a4ca5d920fp+0, -0x1.61246ec7b5cf6p-55 },
    { 0x1.56f4736b527dap+0, 0x1.3350518fdd78ep-54 },
    { 0x1.58d12d497c7fdp+0, 0x1.b98b72f8a9b05p-56 },
    { 0x1.5ab07dd485429p+0, 0x1.063e1e21c5409p-54 },
    { 0x1.5c9268a5946b7p+0, 0x1.4c7855019c6eap-60 },
    { 0x1.5e76f15ad2148p+0, 0x1.432e62b64c035p-54 },
    { 0x1.605e1b976dc09p+0, -0x1.ce44a6199769fp-55 },
    { 0x1.6247eb03a5585p+0, -0x1.c33c53bef4da8p-55 },
    { 0x1.6434634ccc320p+0, -0x1.45378892be9aep-55 },
    { 0x1.6623882552225p+0, -0x1.3cedd78565858p-54 },
    { 0x1.68155d44ca973p+0, 0x1.710aa807e1964p-58 },
    { 0x1.6a09e667f3bcdp+0, -0x1.3b3efbf5e2228p-54 },
    { 0x1.6c012750bdabfp+0, -0x1.a12ad8734b982p-57 },
    { 0x1.6dfb23c651a2fp+0, -0x1.367efb86da9eep-57 },
    { 0x1.6ff7df9519484p+0, -0x1.0dc3d54e08851p-55 },
    { 0x1.71f75e8ec5f74p+0, -0x1.81f647e5a3ecfp-56 },
    { 0x1.73f9a48a58174p+0, -0x1.6ee4ac08b7db0p-55 },
    { 0x1.75feb564267c9p+0, -0x1.619321e55e68ap-55 },
    { 0x1.780694fde5d3fp+0, 0x1.09ccb5e09d4d3p-54 },
    { 0x1.7a11473eb0187p+0, -0x1.b32dcb94da51dp-56 },
    { 0x1.7c1ed0130c132p+0, 0x1.4ecfd5467c06bp-54 },
    { 0x1.7e2f336cf4e62p+0, 0x1.5ebe1abd66c55p-57 },
    { 0x1.80427543e1a12p+0, -0x1.8a1c52fb3cf42p-55 },
    { 0x1.82589994cce13p+0, -0x1.369b6f13b3734p-54 },
    { 0x1.8471a4623c7adp+0, -0x1.05e843a19ff1ep-55 },
    { 0x1.868d99b4492edp+0, -0x1.4d450d872576ep-54 },
    { 0x1.88ac7d98a6699p+0, 0x1.0ad675b0e8a00p-54 },
    { 0x1.8ace5422aa0dbp+0, 0x1.db72fc1f0eab4p-55 },
    { 0x1.8cf3216b5448cp+0, -0x1.5b6609cc5e7ffp-57 },
    { 0x1.8f1ae99157736p+0, 0x1.bf68359f35f44p-56 },
    { 0x1.9145b0b91ffc6p+0, -0x1.3091fa71e3d83p-54 },
    { 0x1.93737b0cdc5e5p+0, -0x1.da9b88b6c1e29p-58 },
    { 0x1.95a44cbc8520fp+0, -0x1.c23f97c90b959p-57 },
    { 0x1.97d829fde4e50p+0, -0x1.2434322f4f9aap-54 },
    { 0x1.9a0f170ca07bap+0, -0x1.5ca6cd7668e4bp-55 },
    { 0x1.9c49182a3f090p+0, 0x1.1affc2b91ce27p-56 },
    { 0x1.9e86319e32323p+0, 0x1.dd235e10a73bbp-57 },
    { 0x1.a0c667b5de565p+0, -0x1.7c50422622263p-55 },
    { 0x1.a309bec4a2d33p+0, 0x1.b1c86e3e231d5p-55 },
    { 0x1.a5503b23e255dp+0, -0x1.1bbd1d3bcbb15p-54 },
    { 0x1.a799e1330b358p+0, 0x1.0cc319cee31d2p-54 },
    { 0x1.a9e6b5579fdbfp+0, 0x1.469846e735ab3p-55 },
    { 0x1.ac36bbfd3f37ap+0, -0x1.2dfcd978e9db4p-55 },
    { 0x1.ae89f995ad3adp+0, 0x1.c1a7792cb3387p-55 },
    { 0x1.b0e07298db666p+0, -0x1.07b8f4ad1d9fap-54 },
    { 0x1.b33a2b84f15fbp+0, -0x1.5c3d956dcaebap-58 },
    { 0x1.b59728de5593ap+0, -0x1.0a40e3da6f640p-54 },
    { 0x1.b7f76f2fb5e47p+0, -0x1.8d6f438ad9334p-57 },
    { 0x1.ba5b030a1064ap+0, -0x1.1eee26b588a35p-54 },
    { 0x1.bcc1e904bc1d2p+0, 0x1.4ffd70a5fddcdp-56 },
    { 0x1.bf2c25bd71e09p+0, -0x1.1bdfbfa9298acp-54 },
    { 0x1.c199bdd85529cp+0, 0x1.36eae30af0cb3p-56 },
    { 0x1.c40ab5fffd07ap+0, 0x1.ee3325c9ffd94p-55 },
    { 0x1.c67f12e57d14bp+0, 0x1.4e08fd10959acp-55 },
    { 0x1.c8f6d9406e7b5p+0, 0x1.3cdaf384e1a67p-57 },
    { 0x1.cb720dcef9069p+0, 0x1.76b2c6c921968p-57 },
    { 0x1.cdf0b555dc3fap+0, -0x1.08a1883ccb5d2p-55 },
    { 0x1.d072d4a07897cp+0, -0x1.fad5d3ffffa6fp-55 },
    { 0x1.d2f87080d89f2p+0, -0x1.00dae3875a949p-54 },
    { 0x1.d5818dcfba487p+0, 0x1.4a385a63d07a7p-56 },
    { 0x1.d80e316c98398p+0, -0x1.2919e2040220fp-55 },
    { 0x1.da9e603db3285p+0, 0x1.e5a50d5c192acp-55 },
    { 0x1.dd321f301b460p+0, 0x1.43a59ac016b4bp-55 },
    { 0x1.dfc97337b9b5fp+0, -0x1.2d52107b43e1fp-55 },
    { 0x1.e264614f5a129p+0, -0x1.92ab93b470dc9p-55 },
    { 0x1.e502ee78b3ff6p+0, 0x1.4b604603a88d3p-56 },
    { 0x1.e7a51fbc74c83p+0, 0x1.3c5ec519d7271p-55 },
    { 0x1.ea4afa2a490dap+0, -0x1.ff7128fd391f0p-55 },
    { 0x1.ecf482d8e67f1p+0, -0x1.dae98e223747dp-55 },
    { 0x1.efa1bee615a27p+0, 0x1.ec3bc41aa2008p-55 },
    { 0x1.f252b376bba97p+0, 0x1.42b94c3a9eb32p-55 },
    { 0x1.f50765b6e4540p+0, 0x1.a64a931d185eep-55 },
    { 0x1.f7bfdad9cbe14p+0, -0x1.e37bae43be3edp-55 },
    { 0x1.fa7c1819e90d8p+0, 0x1.7893b4d91cd9dp-56 },
    { 0x1.fd3c22b8f71f1p+0, 0x1.305c14160cc89p-58 },
};

/*
 * Below this exponent the result may be subnormal, where scaling by 2^k would round
 * twice; such cells (they weigh less than 1e-307) go to glibc's exp instead. Above
 * it, k/128 >= -1020 and every step stays normal.
 */
#define ATTN_EXP_FAST_MIN (-707.0)

/* e^t for ATTN_EXP_FAST_MIN <= t <= 0 (see the top of the file). */
static inline double attn_exp_fast(double t)
{
    const double to_k = 0x1.71547652b82fep0 * 128; /* 128 / ln 2 */
    const double round_shift = 0x1.8p52;           /* t·to_k + this rounds to an integer */
    const double ln2_128_hi = 0x1.62e42fefa0000p-8; /* ln 2 / 128, k·hi exact for |k| < 2^19 */
    const double ln2_128_lo = 0x1.cf79abc9e3b3ap-47;
    double kd = t * to_k + round_shift;
    uint64_t k_bits, scale_bits;
    double scale, r, r2, p;

    memcpy(&k_bits, &kd, sizeof kd); /* k in the low bits, two's complement */
    kd -= round_shift;
    r = t - kd * ln2_128_hi;
    r = r - kd * ln2_128_lo;
    uint64_t i = k_bits & 127;
    /* 2^(k/128) = 2^floor(k/128) · 2^(i/128): add floor(k/128) to the table entry's
     * exponent; the shift pushes the round_shift bits of k_bits out of the word. */
    scale = attn_exp2_table[i][0];
    memcpy(&scale_bits, &scale, sizeof scale_bits);
    scale_bits += (k_bits - i) << 45;
    memcpy(&scale, &scale_bits, sizeof scale);
    r2 = r * r;
    p = attn_exp2_table[i][1] + r + r2 * (0.5 + r * (1.0 / 6)) +
        r2 * r2 * (1.0 / 24 + r * (1.0 / 120));
    return scale + scale * p;
}

static double attn_lanes_total(const double part[ATTN_LANES])
{
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

/* Σ x[0..n) in ATTN_LANES interleaved partial sums. */
static inline double attn_row_sum(const double *x, size_t n)
{
    double part[ATTN_LANES] = { 0 };
    size_t j = 0;

    for (; j + ATTN_LANES <= n; j += ATTN_LANES)
        for (size_t l = 0; l < ATTN_LANES; l++)
            part[l] += x[j + l];
    for (size_t l = 0; j < n; j++, l++)
        part[l] += x[j];
    return attn_lanes_total(part);
}

/*
 * Lanes of running maxima instead of one, so that the loop is not one chain of
 * dependent comparisons; a max does not round, so the order cannot change it (only
 * which zero wins between -0 and +0, and x - max is then a zero of either sign,
 * whose exp is 1 alike).
 */
ATTN_VECTOR_CLONES
double attn_row_max(const double *x, size_t n)
{
    double m[ATTN_LANES];
    size_t j = 0;

    for (size_t l = 0; l < ATTN_LANES; l++)
        m[l] = -INFINITY;
    for (; j + ATTN_LANES <= n; j += ATTN_LANES)
        for (size_t l = 0; l < ATTN_LANES; l++)
            m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
    for (; j < n; j++)
        m[0] = x[j] > m[0] ? x[j] : m[0];
    for (size_t l = 1; l < ATTN_LANES; l++)
        m[0] = m[l] > m[0] ? m[l] : m[0];
    return m[0];
}

ATTN_VECTOR_CLONES
bool attn_row_scale(const double *s, double *x, size_t n, double scale)
{
    int64_t n_bad = 0;

    for (size_t j = 0; j < n; j++) {
        x[j] = s[j] * scale;
        n_bad += !(fabs(x[j]) <= DBL_MAX);
    }
    return n_bad == 0;
}

/* One cell of attn_row_exp: its value of w; counts it in *n_tiny when below the
 * fast range but not blocked. */
static inline double attn_exp_cell(double t, int64_t *n_tiny)
{
    int64_t fast = t >= ATTN_EXP_FAST_MIN, tiny = !fast & (t > -INFINITY);
    double e = attn_exp_fast(t);

    *n_tiny += tiny;
    return fast ? e : tiny ? t : 0.0;
}

ATTN_VECTOR_CLONES
double attn_row_exp(const double *x, double max, double *w, size_t n)
{
    /* Counts, not bools: the vectorizer reduces 64-bit integers beside doubles. */
    int64_t n_tiny = 0;
    size_t j = 0;

    /*
     * e^t is computed for every cell and then dropped where t is below the fast
     * range: a select, not a branch (there the integer parts are garbage and the
     * table index still in range). Such a cell keeps t itself, negative where every
     * weight is >= 0, for the pass below: x may be w, so x[j] is gone by then.
     */
    for (; j < n; j++)
        w[j] = attn_exp_cell(x[j] - max, &n_tiny);
    if (n_tiny > 0) /* rare: a cell at least 707 below the row's max, but not blocked */
        for (j = 0; j < n; j++)
            if (w[j] < 0.0)
                w[j] = exp(w[j]);
    return attn_row_sum(w, n);
}

ATTN_VECTOR_CLONES
bool attn_row_divide(double *w, size_t n, double sum)
{
    int64_t n_bad = 0;

    for (size_t j = 0; j < n; j++) {
        w[j] /= sum;
        n_bad += !(fabs(w[j]) <= DBL_MAX); /* not finite; NaN compares false */
    }
    return n_bad == 0;
}

ATTN_VECTOR_CLONES
struct attn_row_facts attn_row_facts_of(const double *w, size_t n)
{
    struct attn_row_facts f = { attn_row_sum(w, n), attn_row_max(w, n), 0, 0.0 };

    while (w[f.argmax] != f.max_weight) /* ties to the lowest index */
        f.argmax++;
    /*
     * One log per weight, in order: -Σ w ln w = ln(Σe)·Σw - Σ w·(x - max) would need
     * one log per row, but it rounds differently: 0.582203108888218 for the
     * contract's seed example, where the contract (and the true value) say
     * 0.5822031088882179.
     */
    for (size_t j = 0; j < n; j++)
        if (w[j] > 0.0) /* w ln w -> 0 as w -> 0 */
            f.entropy -= w[j] * log(w[j]);
    return f;
}
