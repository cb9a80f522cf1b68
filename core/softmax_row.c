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
 * when the program loads. The exponential and the log have a loop of their own for
 * AVX-512F as well (intrinsics, the same operations in the same order, so the same
 * bits): the compiler's vector loops read each lane's table entry half by half, and
 * those loads were most of their time; one load a lane made the exponential 1.6 times
 * faster.
 */
#include "softmax_row.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* GCC only: clang (the fuzz build) wants the attribute on every declaration too, and
 * the clones give the same bits anyway. Not under ThreadSanitizer either: the clones'
 * resolver runs while the program is being loaded, before TSan's runtime is set up,
 * and the instrumented resolver crashed the TSan build at startup. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(ATTN_NO_CLONES)
#define ATTN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define ATTN_EXP_AVX512 1 /* attn_row_exp's own AVX-512 loop (below), picked at run time */
#include <immintrin.h>
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

/* { 1/c, log c, c as hi + lo } for x - 0x1.6p-1's subinterval i, from tools/gen_log_table.py */
static const double attn_log_table[128][4] = {
    { 0x1.734f0c5427e51p+0, -0x1.7cc7f7db5ca69p-2, 0x1.60fffffff8688p-1, 0x1.fdde0a72facb6p-55 }, /* log c off by 3.7e-03 ulp */
    { 0x1.713786d9c7bf6p+0, -0x1.76feecb947141p-2, 0x1.6300000000012p-1, -0x1.092fffffff181p-57 }, /* log c off by 1.5e-03 ulp */
    { 0x1.6f26016f2604ap+0, -0x1.713e33a46a20ap-2, 0x1.64fffffffffcep-1, 0x1.6e8c000001b9dp-55 }, /* log c off by 3.3e-03 ulp */
    { 0x1.6d1a62681487fp+0, -0x1.6b85b4cfe3d51p-2, 0x1.6700000007dbfp-1, -0x1.121df4fd2e23fp-55 }, /* log c off by 2.5e-03 ulp */
    { 0x1.6b1490aa29a57p+0, -0x1.65d558d4b7754p-2, 0x1.6900000007f2ap-1, 0x1.8a720b32e5347p-55 }, /* log c off by 1.9e-03 ulp */
    { 0x1.691473a88d0e1p+0, -0x1.602d08af0924ap-2, 0x1.6afffffffffdfp-1, -0x1.6931ffffff3bep-55 }, /* log c off by 3.5e-03 ulp */
    { 0x1.6719f360166ebp+0, -0x1.5a8cadbbedf1bp-2, 0x1.6d00000000030p-1, -0x1.1cc5fffffe70bp-55 }, /* log c off by 1.7e-03 ulp */
    { 0x1.6524f853b4a9bp+0, -0x1.54f431b7be191p-2, 0x1.6f00000000008p-1, 0x1.d00a0000000c7p-55 }, /* log c off by 2.7e-03 ulp */
    { 0x1.63356b88ac0dbp+0, -0x1.4f637ebba9807p-2, 0x1.7100000000003p-1, 0x1.f42800000006cp-57 }, /* log c off by 7.8e-04 ulp */
    { 0x1.614b368322e7ep+0, -0x1.49da7f3be36e0p-2, 0x1.72fffffff79adp-1, -0x1.fe5bf3d75f15cp-55 }, /* log c off by 3.2e-03 ulp */
    { 0x1.5f66434292df1p+0, -0x1.44591e0539f29p-2, 0x1.750000000000cp-1, -0x1.cbd1ffffffe92p-55 }, /* log c off by 3.0e-03 ulp */
    { 0x1.5d867c3ec62b0p+0, -0x1.3edf463bff15ep-2, 0x1.7700000008949p-1, -0x1.535ff36f782e3p-55 }, /* log c off by 3.7e-03 ulp */
    { 0x1.5babcc647fa7ep+0, -0x1.396ce359bbf1bp-2, 0x1.7900000000015p-1, -0x1.c1dffffffdac3p-58 }, /* log c off by 3.5e-03 ulp */
    { 0x1.59d61f123cccap+0, -0x1.3401e12aecbffp-2, 0x1.7afffffffffddp-1, 0x1.591800000199cp-56 }, /* log c off by 3.3e-03 ulp */
    { 0x1.580560158052bp+0, -0x1.2e9e2bce121e8p-2, 0x1.7d0000000003bp-1, -0x1.ae0bfffffb76dp-56 }, /* log c off by 1.9e-03 ulp */
    { 0x1.56397ba7c52e8p+0, -0x1.2941afb186b8ep-2, 0x1.7effffffffff9p-1, 0x1.94600000000f7p-56 }, /* log c off by 2.7e-03 ulp */
    { 0x1.54725e6bc02fdp+0, -0x1.23ec599203b46p-2, 0x1.80fffffff6f41p-1, -0x1.cfe7c99492c1cp-57 }, /* log c off by 3.6e-03 ulp */
    { 0x1.52aff56a78572p+0, -0x1.1e9e16787176bp-2, 0x1.8300000009215p-1, 0x1.99fc0dc92a1eep-55 }, /* log c off by 1.1e-03 ulp */
    { 0x1.50f22e11144ddp+0, -0x1.1956d3b9a3e42p-2, 0x1.85000000093abp-1, 0x1.36b0701cc9ef7p-58 }, /* log c off by 3.5e-03 ulp */
    { 0x1.4f38f62dd4cc9p+0, -0x1.14167ef367811p-2, 0x1.86fffffffffcap-1, -0x1.bde3fffffc3dbp-56 }, /* log c off by 4.8e-04 ulp */
    { 0x1.4d843bedc2c11p+0, -0x1.0edd060b77fcdp-2, 0x1.8900000000045p-1, 0x1.cf800000c1df3p-61 }, /* log c off by 1.3e-03 ulp */
    { 0x1.4bd3edda70fc4p+0, -0x1.09aa572e8517bp-2, 0x1.8afffffff67c4p-1, 0x1.21701d55eaf28p-56 }, /* log c off by 1.8e-03 ulp */
    { 0x1.4a27fad758165p+0, -0x1.047e60cdcf70bp-2, 0x1.8d000000099cap-1, -0x1.d59f11b3cd82dp-59 }, /* log c off by 5.1e-04 ulp */
    { 0x1.4880522014862p+0, -0x1.feb2233ea0710p-3, 0x1.8f00000000025p-1, -0x1.6087fffffe4cep-56 }, /* log c off by 7.0e-03 ulp */
    { 0x1.46dce34596079p+0, -0x1.f474b134df29fp-3, 0x1.90fffffffffe9p-1, -0x1.0e63ffffff553p-56 }, /* log c off by 3.8e-03 ulp */
    { 0x1.453d9e2c776cfp+0, -0x1.ea4449f04ab14p-3, 0x1.92ffffffffffap-1, -0x1.839bfffffff3dp-56 }, /* log c off by 3.1e-03 ulp */
    { 0x1.43a2730abee30p+0, -0x1.e020cc62359fdp-3, 0x1.9500000000024p-1, 0x1.bea0000000d1dp-55 }, /* log c off by 6.6e-04 ulp */
    { 0x1.420b5265e5944p+0, -0x1.d60a17f9034c1p-3, 0x1.9700000000011p-1, -0x1.9307ffffffd4ap-55 }, /* log c off by 8.5e-04 ulp */
    { 0x1.40782d10ee563p+0, -0x1.cc000c9de6e3fp-3, 0x1.98fffffff5ca8p-1, -0x1.8f65efb0df30ep-55 }, /* log c off by 3.7e-03 ulp */
    { 0x1.3ee8f42a62ef3p+0, -0x1.c2028ab1b2f35p-3, 0x1.9afffffff5b23p-1, 0x1.560a10885390ep-55 }, /* log c off by 1.1e-03 ulp */
    { 0x1.3d5d991a9f5e1p+0, -0x1.b811730b4ea82p-3, 0x1.9d0000000a66fp-1, -0x1.dca3de770fe97p-56 }, /* log c off by 4.0e-03 ulp */
    { 0x1.3bd60d923293bp+0, -0x1.ae2ca6f672b2fp-3, 0x1.9f00000000022p-1, -0x1.eaf5ffffff52bp-55 }, /* log c off by 4.5e-03 ulp */
    { 0x1.3a524387ac811p+0, -0x1.a454082e6aa94p-3, 0x1.a100000000017p-1, 0x1.caf00000028cbp-58 }, /* log c off by 4.3e-04 ulp */
    { 0x1.38d22d36588abp+0, -0x1.9a8778de864f8p-3, 0x1.a30000000ab4bp-1, 0x1.15e84606f2b0dp-57 }, /* log c off by 4.4e-03 ulp */
    { 0x1.3755bd1c8c5f0p+0, -0x1.90c6db9f972e8p-3, 0x1.a50000000ad13p-1, 0x1.be40239373c9cp-56 }, /* log c off by 5.1e-03 ulp */
    { 0x1.35dce5f9faae5p+0, -0x1.8712137543716p-3, 0x1.a6fffffff515ep-1, -0x1.0e53dbf3a7743p-56 }, /* log c off by 6.4e-03 ulp */
    { 0x1.34679ace0932fp+0, -0x1.7d6903cb2ac34p-3, 0x1.a8fffffff4fbcp-1, 0x1.9b08491ac3936p-57 }, /* log c off by 4.8e-03 ulp */
    { 0x1.32f5ced6a1dffp+0, -0x1.73cb9074fd16ep-3, 0x1.aaffffffffff9p-1, 0x1.a39000000039ep-58 }, /* log c off by 2.1e-03 ulp */
    { 0x1.3187758ea6ba3p+0, -0x1.6a399dabf2d04p-3, 0x1.acfffffff4c60p-1, 0x1.bd4a12cd5b449p-55 }, /* log c off by 6.1e-03 ulp */
    { 0x1.301c82ac38265p+0, -0x1.60b3100ad3696p-3, 0x1.af0000000b561p-1, 0x1.eaf613153b7f7p-55 }, /* log c off by 2.4e-03 ulp */
    { 0x1.2eb4ea1fed15bp+0, -0x1.5737cc9018d49p-3, 0x1.b0fffffffffe9p-1, 0x1.e214000000993p-56 }, /* log c off by 6.8e-04 ulp */
    { 0x1.2d50a012d5083p+0, -0x1.4dc7b897bc102p-3, 0x1.b30000000002ap-1, -0x1.bf5fffffefccep-59 }, /* log c off by 2.4e-03 ulp */
    { 0x1.2bef98e5a36ffp+0, -0x1.4462b9dc9b361p-3, 0x1.b50000000001ap-1, 0x1.abe4000000c93p-56 }, /* log c off by 1.3e-03 ulp */
    { 0x1.2a91c92f3c0ebp+0, -0x1.3b08b6757f1f5p-3, 0x1.b700000000027p-1, -0x1.9fb5ffffff26ep-55 }, /* log c off by 1.9e-03 ulp */
    { 0x1.293725bb804bep+0, -0x1.31b994d3a5032p-3, 0x1.b8fffffffffdbp-1, -0x1.32bbffffff362p-55 }, /* log c off by 2.2e-03 ulp */
    { 0x1.27dfa38a1ce62p+0, -0x1.28753bc11ac33p-3, 0x1.bafffffffffe1p-1, 0x1.adb800000111fp-56 }, /* log c off by 3.5e-03 ulp */
    { 0x1.268b37cd60142p+0, -0x1.1f3b925f25e00p-3, 0x1.bcfffffffffd7p-1, -0x1.eca3ffffff088p-55 }, /* log c off by 7.1e-03 ulp */
    { 0x1.2539d7e91f7adp+0, -0x1.160c8024ea58dp-3, 0x1.befffffff3ce8p-1, -0x1.d459eab65e650p-55 }, /* log c off by 2.6e-03 ulp */
    { 0x1.23eb79717e057p+0, -0x1.0ce7ecdd0446fp-3, 0x1.c0fffffff3b26p-1, 0x1.fca42b26d0a33p-56 }, /* log c off by 6.7e-03 ulp */
    { 0x1.22a0122a01224p+0, -0x1.03cdc0a51ebe3p-3, 0x1.c300000000009p-1, 0x1.45780000000c5p-55 }, /* log c off by 6.0e-03 ulp */
    { 0x1.215798047d5e9p+0, -0x1.f57bc7d88f205p-4, 0x1.c50000000c862p-1, -0x1.c281e9d73a9a6p-55 }, /* log c off by 1.2e-02 ulp */
    { 0x1.201201201a008p+0, -0x1.e3707ee3763edp-4, 0x1.c6fffffff35e4p-1, -0x1.cb0fe98e38399p-55 }, /* log c off by 9.6e-03 ulp */
    { 0x1.1ecf43c80384ap+0, -0x1.d17978828b745p-4, 0x1.c8fffffff340fp-1, 0x1.d6582d81533e5p-56 }, /* log c off by 1.4e-02 ulp */
    { 0x1.1d8f5672e4ab5p+0, -0x1.bf968769fc9a5p-4, 0x1.cb0000000000cp-1, 0x1.3f98000000516p-57 }, /* log c off by 6.7e-03 ulp */
    { 0x1.1c522fc1ce04ep+0, -0x1.adc77ee5ae9f0p-4, 0x1.cd00000000012p-1, -0x1.a0fbffffffd51p-55 }, /* log c off by 8.0e-03 ulp */
    { 0x1.1b17c67f2bae8p+0, -0x1.9c0c32d4d2595p-4, 0x1.ceffffffffff7p-1, 0x1.4c300000000a6p-55 }, /* log c off by 2.4e-03 ulp */
    { 0x1.19e0119df91a8p+0, -0x1.8a6477a8a98bap-4, 0x1.d10000000d318p-1, -0x1.ea9fd015f9169p-56 }, /* log c off by 2.7e-03 ulp */
    { 0x1.18ab0838fabe1p+0, -0x1.78d022636372fp-4, 0x1.d30000000d4f0p-1, -0x1.8b23cf7432c0bp-56 }, /* log c off by 1.2e-02 ulp */
    { 0x1.1778a191c5679p+0, -0x1.674f0893dadd7p-4, 0x1.d4fffffff2944p-1, 0x1.781e18943a72dp-55 }, /* log c off by 5.1e-03 ulp */
    { 0x1.1648d50fc3206p+0, -0x1.55e10050e03ccp-4, 0x1.d6ffffffffff8p-1, -0x1.42cbfffffff6ap-55 }, /* log c off by 5.8e-03 ulp */
    { 0x1.151b9a3fdd5cfp+0, -0x1.4485e03dbe009p-4, 0x1.d8ffffffffff5p-1, 0x1.a2420000000f3p-55 }, /* log c off by 4.3e-03 ulp */
    { 0x1.13f0e8d33c729p+0, -0x1.333d7f810d394p-4, 0x1.db0000000dc4ep-1, -0x1.5903cce966864p-56 }, /* log c off by 9.0e-03 ulp */
    { 0x1.12c8b89edc0a6p+0, -0x1.2207b5c785448p-4, 0x1.dd0000000000ap-1, -0x1.255fffffff957p-58 }, /* log c off by 1.2e-02 ulp */
    { 0x1.11a3019a74833p+0, -0x1.10e45b3cae8ecp-4, 0x1.defffffffffeap-1, 0x1.586800000100bp-57 }, /* log c off by 4.5e-03 ulp */
    { 0x1.107fbbe011087p+0, -0x1.ffa6911ab93dbp-5, 0x1.e0ffffffffff3p-1, 0x1.64e40000002bcp-56 }, /* log c off by 1.3e-02 ulp */
    { 0x1.0f5edfab2a5a9p+0, -0x1.dda8adc58d72cp-5, 0x1.e30000000e3c5p-1, 0x1.6f3c35b48bbc4p-56 }, /* log c off by 1.4e-02 ulp */
    { 0x1.0e4065582600cp+0, -0x1.bbcebfc68f38cp-5, 0x1.e500000000009p-1, -0x1.c8afffffffebbp-56 }, /* log c off by 1.3e-02 ulp */
    { 0x1.0d24456361e2ap+0, -0x1.9a187b583149ap-5, 0x1.e6fffffff1880p-1, 0x1.86ec1b82d5526p-55 }, /* log c off by 1.3e-02 ulp */
    { 0x1.0c0a7868b4178p+0, -0x1.788595a35789ep-5, 0x1.e8ffffffffff2p-1, 0x1.ae10000000182p-55 }, /* log c off by 2.5e-02 ulp */
    { 0x1.0af2f722e6cb6p+0, -0x1.5715c4bf47700p-5, 0x1.eb0000000eb6dp-1, 0x1.c9e83871109a4p-56 }, /* log c off by 1.7e-02 ulp */
    { 0x1.09ddba6af8360p+0, -0x1.35c8bfaa13069p-5, 0x1.ed00000000000p-1, 0x1.ed00000000000p-57 }, /* log c off by 2.1e-02 ulp */
    { 0x1.08cabb37565dfp+0, -0x1.149e3e4005a30p-5, 0x1.ef00000000006p-1, -0x1.897dfffffffbfp-55 }, /* log c off by 2.0e-02 ulp */
    { 0x1.07b9f29b8eae5p+0, -0x1.e72bf2813cf24p-6, 0x1.f0ffffffffffap-1, -0x1.8e89fffffffacp-55 }, /* log c off by 1.0e-02 ulp */
    { 0x1.06ab59c7912fdp+0, -0x1.a55f548c5c4a4p-6, 0x1.f2ffffffffffdp-1, -0x1.2827fffffffb3p-57 }, /* log c off by 4.9e-03 ulp */
    { 0x1.059eea0727588p+0, -0x1.63d6178690c3bp-6, 0x1.f4ffffffffffdp-1, -0x1.6a3ffffffffb2p-57 }, /* log c off by 2.4e-02 ulp */
    { 0x1.04949cc15e4c6p+0, -0x1.228fb1fcabe49p-6, 0x1.f70000000f713p-1, 0x1.d5683cae98dacp-56 }, /* log c off by 2.5e-02 ulp */
    { 0x1.038c6b78247fap+0, -0x1.c317384c75e11p-7, 0x1.f900000000004p-1, -0x1.bb67fffffffc6p-56 }, /* log c off by 1.2e-01 ulp */
    { 0x1.02864fc76a9eap+0, -0x1.41929f928d38bp-7, 0x1.fb0000000fb04p-1, -0x1.3f67c1dc84db2p-56 }, /* log c off by 5.7e-02 ulp */
    { 0x1.018243650fa38p+0, -0x1.8121213d92c00p-8, 0x1.fd0000000fd01p-1, -0x1.5fbf823df5aa2p-57 }, /* log c off by 5.5e-02 ulp */
    { 0x1.0080402010080p+0, -0x1.0040155d5881ep-9, 0x1.ff00000000000p-1, 0x1.ff00000000000p-55 }, /* log c off by 9.8e-02 ulp */
    { 0x1.fe01fe01fe020p-1, 0x1.ff00aa2b10ba0p-9, 0x1.0100000000000p+0, -0x1.0100000000000p-56 }, /* log c off by 2.9e-01 ulp */
    { 0x1.fa11caa01fa11p-1, 0x1.7dc475f810aaap-7, 0x1.0300000000000p+0, 0x1.9ece000000001p-54 }, /* log c off by 1.1e-01 ulp */
    { 0x1.f6310aca0dbb3p-1, 0x1.3cea44346a5c5p-6, 0x1.0500000000001p+0, 0x1.1b0a000000006p-54 }, /* log c off by 5.9e-02 ulp */
    { 0x1.f25f644228ab8p-1, 0x1.b9fc027c00137p-6, 0x1.070000000438bp+0, -0x1.3a6ffba9e1d3bp-54 }, /* log c off by 1.6e-02 ulp */
    { 0x1.ee9c7f8458dfcp-1, 0x1.1b0d98923d9e2p-5, 0x1.0900000000003p+0, 0x1.6d1000000004ep-55 }, /* log c off by 1.1e-02 ulp */
    { 0x1.eae807aba81dbp-1, 0x1.58a5bafc08ddep-5, 0x1.0afffffffba6ap+0, 0x1.9afa0488a020ep-54 }, /* log c off by 1.4e-02 ulp */
    { 0x1.e741aa596d0e8p-1, 0x1.95c830ed14bafp-5, 0x1.0d000000046a8p+0, 0x1.0db004a3cb880p-54 }, /* log c off by 1.0e-02 ulp */
    { 0x1.e3a9179dc1a6fp-1, 0x1.d276b8adb0b9ap-5, 0x1.0f00000000002p+0, 0x1.84e2000000015p-54 }, /* log c off by 7.4e-03 ulp */
    { 0x1.e01e01e01e026p-1, 0x1.075983598e42dp-4, 0x1.10ffffffffffbp+0, 0x1.d23400000004dp-54 }, /* log c off by 4.2e-04 ulp */
    { 0x1.dca01dca01dc5p-1, 0x1.253f62f0a1442p-4, 0x1.1300000000003p+0, -0x1.c667fffffff84p-56 }, /* log c off by 3.8e-03 ulp */
    { 0x1.d92f2231e7f8bp-1, 0x1.42edcbea646e5p-4, 0x1.14fffffffffffp+0, 0x1.ee34000000004p-55 }, /* log c off by 1.5e-02 ulp */
    { 0x1.d5cac807572bap-1, 0x1.60658a937507ep-4, 0x1.16ffffffffffbp+0, 0x1.034c000000053p-54 }, /* log c off by 7.3e-03 ulp */
    { 0x1.d272ca3fcdb19p-1, 0x1.7da766d76aed9p-4, 0x1.18fffffffb2e5p+0, -0x1.9411fab5dde79p-54 }, /* log c off by 1.5e-02 ulp */
    { 0x1.cf26e5c44bfc1p-1, 0x1.9ab42462033dap-4, 0x1.1b00000000003p+0, 0x1.eb3800000008dp-56 }, /* log c off by 1.5e-02 ulp */
    { 0x1.cbe6d9601cbf5p-1, 0x1.b78c82bb0ed23p-4, 0x1.1cffffffffff7p+0, 0x1.d88c000000229p-55 }, /* log c off by 1.0e-03 ulp */
    { 0x1.c8b265afc0a34p-1, 0x1.d4313d66837dbp-4, 0x1.1efffffffaf99p+0, -0x1.ca67fa5e5e3b6p-54 }, /* log c off by 6.8e-03 ulp */
    { 0x1.c5894d10d498cp-1, 0x1.f0a30c011626ep-4, 0x1.20ffffffffffcp+0, 0x1.6e80000000381p-58 }, /* log c off by 5.8e-03 ulp */
    { 0x1.c26b5392e2039p-1, 0x1.0671512cc9eebp-3, 0x1.23000000052a0p+0, -0x1.8d81fa229bbe7p-54 }, /* log c off by 7.4e-03 ulp */
    { 0x1.bf583ee868d92p-1, 0x1.147858467428cp-3, 0x1.24ffffffffffbp+0, 0x1.747c00000004bp-54 }, /* log c off by 2.5e-03 ulp */
    { 0x1.bc4fd65883e89p-1, 0x1.2266f190a5a8cp-3, 0x1.26ffffffffff7p+0, -0x1.27e3ffffffdbbp-55 }, /* log c off by 5.2e-03 ulp */
    { 0x1.b951e2b187f40p-1, 0x1.303d718e6d14ep-3, 0x1.2900000005611p+0, -0x1.33ffce1e56c95p-57 }, /* log c off by 5.5e-03 ulp */
    { 0x1.b65e2e3be6e19p-1, 0x1.3dfc2b0ef1bcdp-3, 0x1.2b00000005741p+0, -0x1.3121f9a273e7dp-54 }, /* log c off by 5.5e-03 ulp */
    { 0x1.b37484ad786d3p-1, 0x1.4ba36f39cafcdp-3, 0x1.2d00000005877p+0, -0x1.5215f9800add6p-54 }, /* log c off by 7.2e-03 ulp */
    { 0x1.b094b31d9a29bp-1, 0x1.59338d995c2b0p-3, 0x1.2efffffffa65ep+0, -0x1.5ebf2be1417fcp-59 }, /* log c off by 2.8e-03 ulp */
    { 0x1.adbe87f941078p-1, 0x1.66acd42750ed5p-3, 0x1.3100000005ac6p+0, -0x1.95dff27e0995bp-55 }, /* log c off by 4.4e-03 ulp */
    { 0x1.aaf1d2f87ec06p-1, 0x1.740f8f5403778p-3, 0x1.32ffffffffff9p+0, 0x1.2614000000096p-54 }, /* log c off by 6.6e-03 ulp */
    { 0x1.a82e65130615ep-1, 0x1.815c0a145c1d1p-3, 0x1.3500000005d3ap+0, 0x1.672407082b9b2p-54 }, /* log c off by 5.8e-03 ulp */
    { 0x1.a574107690a2dp-1, 0x1.8e928de85ffcep-3, 0x1.36fffffffa1a1p+0, 0x1.b10c0e516354ep-55 }, /* log c off by 6.5e-03 ulp */
    { 0x1.a2c2a87c51cbdp-1, 0x1.9bb362e7dfaf7p-3, 0x1.38fffffffffebp+0, -0x1.c959ffffffa1fp-54 }, /* log c off by 7.2e-03 ulp */
    { 0x1.a01a01a022003p-1, 0x1.a8becfc85b98ap-3, 0x1.3afffffff9f2bp+0, 0x1.54d40ee20f084p-55 }, /* log c off by 4.3e-03 ulp */
    { 0x1.9d79f176ae84cp-1, 0x1.b5b519e922f0cp-3, 0x1.3d0000000620bp+0, -0x1.6157f86b5feffp-54 }, /* log c off by 5.7e-03 ulp */
    { 0x1.9ae24ea5590d7p-1, 0x1.c296855899ad1p-3, 0x1.3efffffff9ca2p+0, 0x1.315207bce961ap-54 }, /* log c off by 3.8e-03 ulp */
    { 0x1.9852f0d8ec112p-1, 0x1.cf6354e09c57ep-3, 0x1.40ffffffffff1p+0, 0x1.c7b8000000571p-55 }, /* log c off by 3.5e-03 ulp */
    { 0x1.95cbb0be377c8p-1, 0x1.dc1bca0abebf8p-3, 0x1.42fffffffffebp+0, -0x1.207ffffffd42ap-57 }, /* log c off by 3.2e-03 ulp */
    { 0x1.934c67f9b2cf2p-1, 0x1.e8c0252aa5a23p-3, 0x1.44ffffffffff6p+0, 0x1.56bc000000126p-54 }, /* log c off by 4.4e-03 ulp */
    { 0x1.90d4f120110eep-1, 0x1.f550a564e08b7p-3, 0x1.4700000006858p+0, -0x1.8a37ef5a3dd0dp-55 }, /* log c off by 3.5e-03 ulp */
    { 0x1.8e6527af1374bp-1, 0x1.00e6c45ad4ffep-2, 0x1.48ffffffffff6p+0, 0x1.ce280000004c1p-56 }, /* log c off by 2.2e-03 ulp */
    { 0x1.8bfce80627f4dp-1, 0x1.071b85fcea3dcp-2, 0x1.4b00000006aeep+0, 0x1.7e3608a2db164p-54 }, /* log c off by 3.6e-03 ulp */
    { 0x1.899c0f60189d0p-1, 0x1.0d46b579ab6c4p-2, 0x1.4cfffffffffd4p+0, 0x1.db0000000b98dp-57 }, /* log c off by 1.9e-03 ulp */
    { 0x1.87427bcc092a1p-1, 0x1.136870293a8efp-2, 0x1.4f00000000014p+0, 0x1.f5fe000000503p-54 }, /* log c off by 3.3e-03 ulp */
    { 0x1.84f00c27885f4p-1, 0x1.1980d2dd2d2c3p-2, 0x1.50fffffff9133p+0, 0x1.0b18091b756eep-54 }, /* log c off by 2.7e-03 ulp */
    { 0x1.82a4a018224bdp-1, 0x1.1f8ff9e49f5a6p-2, 0x1.5300000007021p+0, -0x1.8027dae97d30ap-56 }, /* log c off by 1.9e-03 ulp */
    { 0x1.80601805f9818p-1, 0x1.2596010e0cb0ap-2, 0x1.550000000717ep+0, 0x1.255009717f717p-54 }, /* log c off by 3.8e-03 ulp */
    { 0x1.7e2255159cf49p-1, 0x1.2b9303ab9f3afp-2, 0x1.57000000072bdp+0, -0x1.2d63eccf35d35p-55 }, /* log c off by 1.4e-03 ulp */
    { 0x1.7beb3922e0145p-1, 0x1.31871c9544219p-2, 0x1.5900000000032p+0, -0x1.07d3fffffc654p-55 }, /* log c off by 2.8e-03 ulp */
    { 0x1.79baa6bb639bbp-1, 0x1.3772662bfd7dap-2, 0x1.5afffffffffd4p+0, 0x1.37fa000001602p-54 }, /* log c off by 1.3e-03 ulp */
    { 0x1.77908119a4614p-1, 0x1.3d54fa5c353fdp-2, 0x1.5d000000076ecp+0, -0x1.0d9fd77a3daf5p-56 }, /* log c off by 3.1e-03 ulp */
    { 0x1.756cac200f585p-1, 0x1.432ef2a0646d1p-2, 0x1.5f00000007839p+0, 0x1.88760a4b75942p-54 }, /* log c off by 1.5e-03 ulp */
};

/*
 * The weights whose log attn_log_fast takes: normal ones up to 1 - 1/16. Nearer 1 a
 * log is small, and log c's rounding would weigh more in it; there, and for
 * subnormals, glibc's log is called.
 */
#define ATTN_LOG_FAST_MIN 0x1p-1022
#define ATTN_LOG_FAST_MAX 0.9375

/*
 * Whether a weight's log is glibc's: positive and outside attn_log_fast's range. A
 * zero (a masked cell) needs no log: not counted, or every masked row would take the
 * second pass.
 */
static inline bool attn_log_slow(double x)
{
    return x > 0.0 && !(x >= ATTN_LOG_FAST_MIN && x <= ATTN_LOG_FAST_MAX);
}

/*
 * ln x for ATTN_LOG_FAST_MIN <= x <= ATTN_LOG_FAST_MAX, glibc's method (from ARM's
 * optimized routines) without its calls and branches, so that a loop of it is vector
 * code: x = 2^k·z with z in [0x1.6p-1, 0x1.6p0), ln x = k·ln 2 + ln c + ln(1 + r)
 * with c from a table of 128 (attn_log_table) and r = z/c - 1, |r| < 2^-8, computed
 * exactly enough as (z - c_hi - c_lo)/c; ln(1 + r) - r from its Taylor series to r^6
 * (the first term left out is under 2^-62). k·ln 2 + ln c is summed with its error
 * kept, since ln c is not a multiple of ulp(k·ln 2). Measured against long double
 * logl on 2·10^6 arguments in [1e-6, 0.9375]: at most 0.520 ulp off (glibc 0.517),
 * and equal to glibc's log on all but 0.02% (below 0.3) to 0.4% (0.6 to 0.9375) of
 * them, by one ulp. Outside its range the result is garbage, not undefined.
 */
static inline double attn_log_fast(double x)
{
    const uint64_t off = UINT64_C(0x3fe6000000000000); /* 0x1.6p-1's bits */
    const double ln2_hi = 0x1.62e42fefa3800p-1;       /* k·ln2_hi exact for |k| < 2^11 */
    const double ln2_lo = 0x1.ef35793c76730p-45;
    const double round_shift = 0x1.8p52;
    uint64_t ix, iz, k_bits;
    double z, kd;

    memcpy(&ix, &x, sizeof ix);
    uint64_t tmp = ix - off;
    uint64_t i = (tmp >> 45) & 127;
    /* k = tmp >> 52, arithmetic, made a double through round_shift's bits (AVX-512F
     * converts no 64-bit integer to a double) */
    k_bits = UINT64_C(0x4338000000000000) + (uint64_t)((int64_t)tmp >> 52);
    memcpy(&kd, &k_bits, sizeof kd);
    kd -= round_shift;
    iz = ix - (tmp & (UINT64_C(0xfff) << 52));
    memcpy(&z, &iz, sizeof z);
    double r = (z - attn_log_table[i][2] - attn_log_table[i][3]) * attn_log_table[i][0];
    double k_ln2 = kd * ln2_hi;
    double w = k_ln2 + attn_log_table[i][1];
    double w_lo = k_ln2 - w + attn_log_table[i][1]; /* exact: |k ln 2| > |ln c| unless k = 0 */
    double hi = w + r;
    double lo = w - hi + r + (kd * ln2_lo + w_lo);
    double r2 = r * r;
    return lo + r2 * -0.5 + r * r2 * (1.0 / 3 + r * -0.25 + r2 * (0.2 + r * (-1.0 / 6))) + hi;
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
/* m[l] = the largest of m[l] and every x[j] with j mod ATTN_LANES = l. Inlined into its
 * callers' clones (a function of its own would be built for the baseline alone). */
static inline __attribute__((always_inline)) void attn_lanes_max(double m[ATTN_LANES],
                                                                 const double *x, size_t n)
{
    size_t j = 0;

    for (; j + ATTN_LANES <= n; j += ATTN_LANES)
        for (size_t l = 0; l < ATTN_LANES; l++)
            m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
    for (size_t l = 0; j < n; j++, l++)
        m[l] = x[j] > m[l] ? x[j] : m[l];
}

/* The largest of the lanes. */
static double attn_lanes_top(const double m[ATTN_LANES])
{
    double top = m[0];

    for (size_t l = 1; l < ATTN_LANES; l++)
        top = m[l] > top ? m[l] : top;
    return top;
}

ATTN_VECTOR_CLONES
double attn_row_max(const double *x, size_t n)
{
    double m[ATTN_LANES];

    for (size_t l = 0; l < ATTN_LANES; l++)
        m[l] = -INFINITY;
    attn_lanes_max(m, x, n);
    return attn_lanes_top(m);
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

/* The chunk attn_row_scale_max scales and then reads back from L1 for its max. */
#define ATTN_SCALE_CHUNK 256

static bool attn_row_scale_max_auto(const double *s, double *x, size_t n, double scale,
                                    double *max);

#ifdef ATTN_EXP_AVX512
static bool attn_have_avx512(void);

/*
 * attn_row_scale_max on a CPU with AVX-512F, in one loop: the compiler's clone needs
 * two (see below), and a row in L1 went through them several times slower. The same
 * lanes (key j in lane j mod ATTN_LANES) and the same comparison (vmaxpd keeps m where
 * x is not greater, as the select does), so the same bits.
 */
__attribute__((target("avx512f"))) static bool attn_row_scale_max_avx512(const double *s,
                                                                         double *x, size_t n,
                                                                         double scale,
                                                                         double *max)
{
    __m512d k = _mm512_set1_pd(scale), big = _mm512_set1_pd(DBL_MAX);
    __m512d lanes = _mm512_set1_pd(-INFINITY);
    __mmask8 bad = 0;
    size_t j = 0;
    for (; j + ATTN_LANES <= n; j += ATTN_LANES) {
        __m512d v = _mm512_mul_pd(_mm512_loadu_pd(s + j), k);
        _mm512_storeu_pd(x + j, v);
        lanes = _mm512_max_pd(v, lanes);
        bad |= (__mmask8)~_mm512_cmp_pd_mask(_mm512_abs_pd(v), big, _CMP_LE_OQ);
    }
    double m[ATTN_LANES];
    _mm512_storeu_pd(m, lanes);
    for (size_t l = 0; j < n; j++, l++) {
        x[j] = s[j] * scale;
        m[l] = x[j] > m[l] ? x[j] : m[l];
        bad |= !(fabs(x[j]) <= DBL_MAX);
    }
    *max = attn_lanes_top(m);
    return bad == 0;
}
#endif

bool attn_row_scale_max(const double *s, double *x, size_t n, double scale, double *max)
{
#ifdef ATTN_EXP_AVX512
    if (attn_have_avx512())
        return attn_row_scale_max_avx512(s, x, n, scale, max);
#endif
    return attn_row_scale_max_auto(s, x, n, scale, max);
}

ATTN_VECTOR_CLONES
static bool attn_row_scale_max_auto(const double *s, double *x, size_t n, double scale,
                                    double *max)
{
    double m[ATTN_LANES];
    int64_t n_bad = 0;

    for (size_t l = 0; l < ATTN_LANES; l++)
        m[l] = -INFINITY;
    /* Two loops over a chunk, each of which the compiler vectorizes (one loop doing
     * both was left scalar); the max is exact whatever the order. */
    for (size_t from = 0; from < n; from += ATTN_SCALE_CHUNK) {
        size_t c = n - from < ATTN_SCALE_CHUNK ? n - from : ATTN_SCALE_CHUNK;
        const double *src = s + from;
        double *dst = x + from;
        for (size_t k = 0; k < c; k++) {
            dst[k] = src[k] * scale;
            n_bad += !(fabs(dst[k]) <= DBL_MAX);
        }
        attn_lanes_max(m, dst, c);
    }
    *max = attn_lanes_top(m);
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

#ifdef ATTN_EXP_AVX512
/* Whether the CPU has AVX-512F: asked once (every thread finds the same answer). */
static bool attn_have_avx512(void)
{
    static _Atomic int have = -1;
    int known = atomic_load_explicit(&have, memory_order_relaxed);
    if (known < 0) {
        known = __builtin_cpu_supports("avx512f") != 0;
        atomic_store_explicit(&have, known, memory_order_relaxed);
    }
    return known != 0;
}

static bool attn_gathers_pay(void);

/* Seconds by the monotonic clock. */
static double attn_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double attn_row_exp_avx512(const double *x, double max, double *w, size_t n);

/* The fastest of 5 timings of 16 exponentials of a row by way `gather` (0 or 1). */
static double attn_gather_trial(int gather, _Atomic int *choice, const double *x, double *w,
                                size_t n)
{
    double best = INFINITY;
    atomic_store_explicit(choice, gather, memory_order_relaxed);
    for (int t = 0; t < 5; t++) {
        double start = attn_seconds();
        for (int r = 0; r < 16; r++)
            (void)attn_row_exp_avx512(x, 0.0, w, n);
        double took = attn_seconds() - start;
        best = took < best ? took : best;
    }
    return best;
}

/*
 * Whether this CPU reads eight table entries faster by gathers (vgatherqpd) than by
 * eight loads and shuffles. Both give the same numbers, so the choice is speed alone,
 * and it differs by CPU: gathers are fast on recent Xeons, while the microcode against
 * "Gather Data Sampling" made them several times slower on older ones (exp_bench times
 * both; docs/performance.md). Timed once, on first use: both ways on a row of 512, the
 * fastest of five tries of 16 rows each, twice in turn. While one thread times, the
 * others read by loads.
 */
static _Atomic int attn_gathers = -1; /* -1: not timed yet; during the trials, the way tried */
static _Atomic int attn_gathers_timing = 0; /* 1 once a thread has begun timing */

static bool attn_gathers_pay(void)
{
    _Atomic int *pay = &attn_gathers;
    int known = atomic_load_explicit(pay, memory_order_relaxed);
    if (known >= 0)
        return known != 0;
    if (atomic_exchange(&attn_gathers_timing, 1) != 0)
        return false; /* another thread is timing: loads meanwhile */
    double x[512], w[512], took[2] = { INFINITY, INFINITY };
    for (size_t j = 0; j < 512; j++)
        x[j] = -30.0 * (double)((j * 7919) % 512) / 512.0;
    for (int round = 0; round < 2; round++)
        for (int g = 0; g < 2; g++) {
            double t = attn_gather_trial(g, pay, x, w, 512);
            took[g] = t < took[g] ? t : took[g];
        }
    atomic_store(pay, took[1] < took[0]);
    return took[1] < took[0];
}

void attn_row_use_gathers(int way)
{
    atomic_store(&attn_gathers, way < 0 ? -1 : way > 0);
    atomic_store(&attn_gathers_timing, 0); /* -1 times again on the next use */
}

/*
 * The table entries of eight lanes' indices i into (a), b: either by two gathers or by
 * eight 16-byte loads and shuffles. The same numbers either way; which is faster
 * depends on the CPU (attn_gathers_pay).
 */
static inline __attribute__((always_inline, target("avx512f"))) void
attn_entries2x8(const double (*table)[2], __m512i i, bool gather, __m512d *a, __m512d *b)
{
    if (gather) {
        __m512i at = _mm512_slli_epi64(i, 1); /* doubles, not entries */
        *a = _mm512_i64gather_pd(at, &table[0][0], 8);
        *b = _mm512_i64gather_pd(at, &table[0][1], 8);
        return;
    }
    uint64_t at[8];
    _mm512_storeu_si512(at, i);
    __m128d e[8];
    for (int l = 0; l < 8; l++)
        e[l] = _mm_loadu_pd(table[at[l]]);
    __m512d even = _mm512_insertf64x4(
        _mm512_castpd256_pd512(_mm256_insertf128_pd(_mm256_castpd128_pd256(e[0]), e[2], 1)),
        _mm256_insertf128_pd(_mm256_castpd128_pd256(e[4]), e[6], 1), 1);
    __m512d odd = _mm512_insertf64x4(
        _mm512_castpd256_pd512(_mm256_insertf128_pd(_mm256_castpd128_pd256(e[1]), e[3], 1)),
        _mm256_insertf128_pd(_mm256_castpd128_pd256(e[5]), e[7], 1), 1);
    *a = _mm512_unpacklo_pd(even, odd);
    *b = _mm512_unpackhi_pd(even, odd);
}

/*
 * attn_exp_cell for eight cells, written out for AVX-512F: the same operations in the
 * same order as attn_exp_fast (so the same bits as every other build: check_core holds
 * it to the baseline's), but each lane's table entry read whole (attn_entries2x8), where
 * the compiler's vector loop extracts every index and loads each half of the entry on
 * its own.
 */
static inline __attribute__((always_inline, target("avx512f"))) __m512d
attn_exp_cell8(__m512d t, __m512i *n_tiny, bool gather)
{
    const __m512d round_shift = _mm512_set1_pd(0x1.8p52);
    __mmask8 fast = _mm512_cmp_pd_mask(t, _mm512_set1_pd(ATTN_EXP_FAST_MIN), _CMP_GE_OQ);
    __mmask8 seen = _mm512_cmp_pd_mask(t, _mm512_set1_pd(-INFINITY), _CMP_GT_OQ);
    __mmask8 tiny = (__mmask8)(~fast & seen);
    *n_tiny = _mm512_mask_add_epi64(*n_tiny, tiny, *n_tiny, _mm512_set1_epi64(1));
    __m512d kd = _mm512_add_pd(_mm512_mul_pd(t, _mm512_set1_pd(0x1.71547652b82fep0 * 128)),
                               round_shift);
    __m512i k_bits = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, round_shift);
    __m512d r = _mm512_sub_pd(t, _mm512_mul_pd(kd, _mm512_set1_pd(0x1.62e42fefa0000p-8)));
    r = _mm512_sub_pd(r, _mm512_mul_pd(kd, _mm512_set1_pd(0x1.cf79abc9e3b3ap-47)));
    __m512i i = _mm512_and_si512(k_bits, _mm512_set1_epi64(127)); /* in range whatever t */
    __m512d scale, corr; /* 2^(i/128), its error */
    attn_entries2x8(attn_exp2_table, i, gather, &scale, &corr);
    scale = _mm512_castsi512_pd(_mm512_add_epi64(
        _mm512_castpd_si512(scale), _mm512_slli_epi64(_mm512_sub_epi64(k_bits, i), 45)));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d p = _mm512_add_pd(corr, r);
    p = _mm512_add_pd(p, _mm512_mul_pd(r2, _mm512_add_pd(_mm512_set1_pd(0.5),
                                                          _mm512_mul_pd(r, _mm512_set1_pd(1.0 / 6)))));
    p = _mm512_add_pd(p, _mm512_mul_pd(_mm512_mul_pd(r2, r2),
                                       _mm512_add_pd(_mm512_set1_pd(1.0 / 24),
                                                     _mm512_mul_pd(r, _mm512_set1_pd(1.0 / 120)))));
    __m512d value = _mm512_add_pd(scale, _mm512_mul_pd(scale, p));
    return _mm512_mask_blend_pd(fast, _mm512_maskz_mov_pd(tiny, t), value);
}

/*
 * The whole lanes of attn_row_exp_avx512: e^(x - max) into w and the lanes' sums into
 * part (attn_row_sum's lanes, added in its order); the count of tiny cells into tiny.
 * Built twice, with gathers and without (the branch on `gather` is resolved inside).
 */
static inline __attribute__((always_inline, target("avx512f"))) size_t
attn_exp_lanes(const double *x, double max, double *w, size_t n, bool gather, __m512d *part,
               __m512i *tiny)
{
    __m512d m = _mm512_set1_pd(max);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) { /* x may be w: a step reads its cells before it writes */
        __m512d e = attn_exp_cell8(_mm512_sub_pd(_mm512_loadu_pd(x + j), m), tiny, gather);
        _mm512_storeu_pd(w + j, e);
        *part = _mm512_add_pd(*part, e);
    }
    return j;
}

/* attn_row_exp on a CPU with AVX-512F: eight cells a step, the tail one by one. */
__attribute__((target("avx512f"))) static double attn_row_exp_avx512(const double *x,
                                                                     double max, double *w,
                                                                     size_t n)
{
    __m512i tiny = _mm512_setzero_si512();
    __m512d lanes = _mm512_setzero_pd();
    size_t j = attn_gathers_pay() ? attn_exp_lanes(x, max, w, n, true, &lanes, &tiny)
                                  : attn_exp_lanes(x, max, w, n, false, &lanes, &tiny);
    int64_t n_tiny = _mm512_reduce_add_epi64(tiny);
    double part[ATTN_LANES];
    _mm512_storeu_pd(part, lanes);
    for (size_t l = 0; j < n; j++, l++) {
        w[j] = attn_exp_cell(x[j] - max, &n_tiny);
        part[l] += w[j];
    }
    if (n_tiny > 0) { /* as attn_row_exp below; the sum again, over the cells fixed */
        for (j = 0; j < n; j++)
            if (w[j] < 0.0)
                w[j] = exp(w[j]);
        return attn_row_sum(w, n);
    }
    return attn_lanes_total(part);
}
#else
void attn_row_use_gathers(int way)
{
    (void)way; /* no AVX-512 loops in this build */
}
#endif

static double attn_row_exp_auto(const double *x, double max, double *w, size_t n);

double attn_row_exp(const double *x, double max, double *w, size_t n)
{
#ifdef ATTN_EXP_AVX512
    if (attn_have_avx512())
        return attn_row_exp_avx512(x, max, w, n);
#endif
    return attn_row_exp_auto(x, max, w, n);
}

/* attn_row_exp as the compiler vectorizes it, for every other CPU. */
ATTN_VECTOR_CLONES
static double attn_row_exp_auto(const double *x, double max, double *w, size_t n)
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
void attn_row_softcap(const double *x, double *out, size_t n, double c)
{
    /* Both forms for every cell, then a select: no branch, so the loop vectorizes. */
    for (size_t j = 0; j < n; j++) {
        double y = x[j] / c, a = fabs(y), y2 = y * y;
        /* e^-707 is below 2^-1019: past it e is 0 (what the fast form gives there,
         * computed all the same, is dropped by the select; its table index stays in range) */
        int64_t in_range = a <= 353.0, small = a < 0x1p-3;
        double e = attn_exp_fast(-2.0 * a);
        e = in_range ? e : 0.0;
        /* tanh's series to y^17: below 2^-3 the next term is under 2^-60·|y| */
        double series = y * (1 + y2 * (-1.0 / 3 + y2 * (2.0 / 15 + y2 * (-17.0 / 315 +
                        y2 * (62.0 / 2835 + y2 * (-1382.0 / 155925 + y2 * (21844.0 / 6081075 +
                        y2 * (-929569.0 / 638512875 + y2 * (6404582.0 / 10854718875)))))))));
        double quotient = copysign((1 - e) / (1 + e), y);
        out[j] = c * (small ? series : quotient);
    }
}

ATTN_VECTOR_CLONES
size_t attn_row_first_of(const double *x, size_t n, double value)
{
    size_t j = 0;

    while (j < n && x[j] != value)
        j++;
    return j;
}

static bool attn_row_divide_auto(double *w, size_t n, double sum);

#ifdef ATTN_EXP_AVX512
/*
 * Eight quotients a/b, each exactly the correctly rounded one a division gives, for a
 * multiplication, three fused multiply-adds and a check (vdivpd issues once every
 * several cycles: after the exponential, the pass's dearest instruction). y = 1/b rounded,
 * half_ulp_b = 2^-53·b; q = a·y, corrected once by the remainder (Markstein): q' = q +
 * (a - b·q)·y. Then q' is checked, not trusted: with r = a - b·q' (one rounding, which
 * is monotonic), |r| below half of b·ulp(q') = 2^e·half_ulp_b (q' = 1.f·2^e) means
 * |a/b - q'| < ulp(q')/2, so q' is a/b rounded to nearest. Below a power of two q' the
 * next double down is half as far: such a lane, one that fails the check, and a below
 * 2^-900 (where q' could leave the normal range) are divided. Needs b in [1, 2^60] (the
 * caller checks), so that every product here is exact or normal. Sets *slow when a lane
 * was divided (its quotient may not be finite).
 */
__attribute__((target("avx512f"))) static inline __m512d attn_div8(__m512d a, __m512d b,
                                                                     __m512d y,
                                                                     __m512d half_ulp_b,
                                                                     __mmask8 *slow)
{
    const __m512i exponent = _mm512_set1_epi64(INT64_C(0x7ff0000000000000));
    const __m512i fraction = _mm512_set1_epi64(INT64_C(0x000fffffffffffff));
    __m512d q = _mm512_mul_pd(a, y);
    q = _mm512_fmadd_pd(_mm512_fnmadd_pd(b, q, a), y, q);
    __m512d r = _mm512_fnmadd_pd(b, q, a);
    __m512i q_bits = _mm512_castpd_si512(q), r_bits = _mm512_castpd_si512(r);
    __m512d half = _mm512_mul_pd(_mm512_castsi512_pd(_mm512_and_si512(q_bits, exponent)),
                                 half_ulp_b);
    __m512d abs_r = _mm512_castsi512_pd(_mm512_and_si512(r_bits, _mm512_set1_epi64(INT64_MAX)));
    /* r < 0 and q' a power of two: the sign bit set and no fraction bit */
    __mmask8 under_pow2 = _mm512_testn_epi64_mask(q_bits, fraction) &
                          _mm512_cmplt_epi64_mask(r_bits, _mm512_setzero_si512());
    __mmask8 good = _mm512_mask_cmp_pd_mask(
        _mm512_cmp_pd_mask(a, _mm512_set1_pd(0x1p-900), _CMP_GE_OQ) & (__mmask8)~under_pow2,
        abs_r, half, _CMP_LT_OQ);
    if (good != 0xff) { /* rare: a weight below 2^-900, or q' off (never seen) */
        q = _mm512_mask_div_pd(q, (__mmask8)~good, a, b);
        *slow = 1;
    }
    return q;
}

/* attn_row_divide on a CPU with AVX-512F: eight cells a step, the tail divided. */
__attribute__((target("avx512f"))) static bool attn_row_divide_avx512(double *w, size_t n,
                                                                      double sum)
{
    __m512d b = _mm512_set1_pd(sum), y = _mm512_set1_pd(1.0 / sum);
    __m512d half_ulp_b = _mm512_set1_pd(sum * 0x1p-53);
    __mmask8 slow = 0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm512_storeu_pd(w + j, attn_div8(_mm512_loadu_pd(w + j), b, y, half_ulp_b, &slow));
    bool finite = attn_row_divide_auto(w + j, n - j, sum);
    /* a checked lane is finite (a and b are); a divided one may not be */
    for (size_t k = 0; slow && k < j; k++)
        finite &= fabs(w[k]) <= DBL_MAX;
    return finite;
}
#endif

bool attn_row_divide(double *w, size_t n, double sum)
{
#ifdef ATTN_EXP_AVX512
    /* the exact quotients need b in [1, 2^60] (a softmax's sum: its max adds e^0) */
    if (attn_have_avx512() && sum >= 1.0 && sum <= 0x1p60)
        return attn_row_divide_avx512(w, n, sum);
#endif
    return attn_row_divide_auto(w, n, sum);
}

/* attn_row_divide by division, as the compiler vectorizes it. */
ATTN_VECTOR_CLONES
static bool attn_row_divide_auto(double *w, size_t n, double sum)
{
    int64_t n_bad = 0;

    for (size_t j = 0; j < n; j++) {
        w[j] /= sum;
        n_bad += !(fabs(w[j]) <= DBL_MAX); /* not finite; NaN compares false */
    }
    return n_bad == 0;
}

#ifdef ATTN_EXP_AVX512
/* The columns of eight 4-double table entries: out[c][l] = entry l's double c. */
__attribute__((target("avx512f"))) static inline void attn_columns8(const __m256d e[8],
                                                                   __m512d out[4])
{
    __m512d a = _mm512_insertf64x4(_mm512_castpd256_pd512(e[0]), e[1], 1); /* E0 | E1 */
    __m512d b = _mm512_insertf64x4(_mm512_castpd256_pd512(e[2]), e[3], 1);
    __m512d c = _mm512_insertf64x4(_mm512_castpd256_pd512(e[4]), e[5], 1);
    __m512d d = _mm512_insertf64x4(_mm512_castpd256_pd512(e[6]), e[7], 1);
    const __m512i lo = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0); /* doubles 0, 1 */
    const __m512i hi = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2); /* doubles 2, 3 */
    __m512d ab01 = _mm512_permutex2var_pd(a, lo, b), cd01 = _mm512_permutex2var_pd(c, lo, d);
    __m512d ab23 = _mm512_permutex2var_pd(a, hi, b), cd23 = _mm512_permutex2var_pd(c, hi, d);
    out[0] = _mm512_shuffle_f64x2(ab01, cd01, 0x44);
    out[1] = _mm512_shuffle_f64x2(ab01, cd01, 0xee);
    out[2] = _mm512_shuffle_f64x2(ab23, cd23, 0x44);
    out[3] = _mm512_shuffle_f64x2(ab23, cd23, 0xee);
}

/* attn_log_fast for eight cells, for AVX-512F, in its order of operations (its bits);
 * the table's entries by gathers or by loads and shuffles (attn_gathers_pay). */
static inline __attribute__((always_inline, target("avx512f"))) __m512d attn_log8(__m512d x,
                                                                                  bool gather)
{
    const __m512d round_shift = _mm512_set1_pd(0x1.8p52);
    __m512i ix = _mm512_castpd_si512(x);
    __m512i tmp = _mm512_sub_epi64(ix, _mm512_set1_epi64(0x3fe6000000000000));
    __m512i i = _mm512_and_si512(_mm512_srli_epi64(tmp, 45), _mm512_set1_epi64(127));
    __m512i k_bits = _mm512_add_epi64(_mm512_set1_epi64(0x4338000000000000),
                                      _mm512_srai_epi64(tmp, 52));
    __m512d kd = _mm512_sub_pd(_mm512_castsi512_pd(k_bits), round_shift);
    __m512d z = _mm512_castsi512_pd(_mm512_sub_epi64(
        ix, _mm512_and_si512(tmp, _mm512_set1_epi64((int64_t)(UINT64_C(0xfff) << 52)))));
    __m512d col[4]; /* { 1/c, ln c, c_hi, c_lo } */
    if (gather) {
        __m512i at = _mm512_slli_epi64(i, 2); /* doubles, not entries */
        for (int c = 0; c < 4; c++)
            col[c] = _mm512_i64gather_pd(at, &attn_log_table[0][c], 8);
    } else {
        uint64_t at[8];
        _mm512_storeu_si512(at, i);
        __m256d e[8];
        for (int l = 0; l < 8; l++)
            e[l] = _mm256_loadu_pd(attn_log_table[at[l]]);
        attn_columns8(e, col);
    }
    __m512d r = _mm512_mul_pd(_mm512_sub_pd(_mm512_sub_pd(z, col[2]), col[3]), col[0]);
    __m512d k_ln2 = _mm512_mul_pd(kd, _mm512_set1_pd(0x1.62e42fefa3800p-1));
    __m512d w = _mm512_add_pd(k_ln2, col[1]);
    __m512d w_lo = _mm512_add_pd(_mm512_sub_pd(k_ln2, w), col[1]);
    __m512d hi = _mm512_add_pd(w, r);
    __m512d lo = _mm512_add_pd(_mm512_add_pd(_mm512_sub_pd(w, hi), r),
                               _mm512_add_pd(_mm512_mul_pd(kd, _mm512_set1_pd(0x1.ef35793c76730p-45)),
                                             w_lo));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d poly = _mm512_add_pd(
        _mm512_add_pd(_mm512_set1_pd(1.0 / 3), _mm512_mul_pd(r, _mm512_set1_pd(-0.25))),
        _mm512_mul_pd(r2, _mm512_add_pd(_mm512_set1_pd(0.2),
                                        _mm512_mul_pd(r, _mm512_set1_pd(-1.0 / 6)))));
    __m512d sum = _mm512_add_pd(lo, _mm512_mul_pd(r2, _mm512_set1_pd(-0.5)));
    sum = _mm512_add_pd(sum, _mm512_mul_pd(_mm512_mul_pd(r, r2), poly));
    return _mm512_add_pd(sum, hi);
}

/* attn_log_slow of eight cells, as a mask. */
static inline __attribute__((always_inline, target("avx512f"))) __mmask8 attn_log_slow8(__m512d v)
{
    __mmask8 in = _mm512_cmp_pd_mask(v, _mm512_set1_pd(ATTN_LOG_FAST_MIN), _CMP_GE_OQ) &
                  _mm512_cmp_pd_mask(v, _mm512_set1_pd(ATTN_LOG_FAST_MAX), _CMP_LE_OQ);
    return _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ) & (__mmask8)~in;
}

static void attn_row_logs_auto(const double *x, double *logs, size_t n);

/* attn_row_logs on a CPU with AVX-512F: eight cells a step, the tail one by one. */
__attribute__((target("avx512f"))) static void attn_row_logs_avx512(const double *x,
                                                                    double *logs, size_t n)
{
    int64_t n_slow = 0;
    size_t j = 0;
    bool gather = attn_gathers_pay();
    for (; j + 8 <= n; j += 8) {
        __m512d v = _mm512_loadu_pd(x + j);
        _mm512_storeu_pd(logs + j, gather ? attn_log8(v, true) : attn_log8(v, false));
        n_slow += __builtin_popcount((unsigned)attn_log_slow8(v));
    }
    for (; j < n; j++) {
        logs[j] = attn_log_fast(x[j]);
        n_slow += attn_log_slow(x[j]);
    }
    if (n_slow > 0) /* as attn_row_logs_auto */
        for (j = 0; j < n; j++)
            if (attn_log_slow(x[j]))
                logs[j] = log(x[j]);
}
#else
static void attn_row_logs_auto(const double *x, double *logs, size_t n);
#endif

void attn_row_logs(const double *x, double *logs, size_t n)
{
#ifdef ATTN_EXP_AVX512
    if (attn_have_avx512()) {
        attn_row_logs_avx512(x, logs, n);
        return;
    }
#endif
    attn_row_logs_auto(x, logs, n);
}

/* attn_row_logs as the compiler vectorizes it, for every other CPU. */
ATTN_VECTOR_CLONES
static void attn_row_logs_auto(const double *x, double *logs, size_t n)
{
    int64_t n_slow = 0; /* a count, not a bool: see attn_row_exp */

    for (size_t j = 0; j < n; j++) {
        logs[j] = attn_log_fast(x[j]);
        n_slow += attn_log_slow(x[j]);
    }
    if (n_slow > 0) /* weights near 1 or subnormal: few, and only in some rows */
        for (size_t j = 0; j < n; j++)
            if (attn_log_slow(x[j]))
                logs[j] = log(x[j]);
}

/*
 * Σ w and the entropy -Σ w ln w of a row, in one pass of ATTN_LANES interleaved sums
 * each (Σ w has attn_row_sum's bits).
 *
 * One log per weight, then their sum: -Σ w ln w = ln(Σe)·Σw - Σ w·(x - max) would need
 * one log per row, but it rounds differently: 0.582203108888218 for the contract's seed
 * example, where the contract (and the true value) say 0.5822031088882179. The logs of
 * a chunk first, in vector code (glibc's log for the few weights outside
 * attn_log_fast's range), then their sums; one chain of dependent additions, as they
 * were once summed, was a sixth of an every-step pass.
 */
#ifdef ATTN_EXP_AVX512
/*
 * attn_row_spread on a CPU with AVX-512F, the logs and the sums in one loop: the same
 * lanes, logs (glibc's where attn_row_logs takes it) and operations, so the same bits;
 * the clone's sums were left scalar and cost nearly what the logs did.
 */
__attribute__((target("avx512f"))) static void attn_row_spread_avx512(const double *w,
                                                                      size_t n, double *sum,
                                                                      double *entropy)
{
    __m512d part = _mm512_setzero_pd(), ent = _mm512_setzero_pd();
    size_t j = 0;
    bool gather = attn_gathers_pay();
    for (; j + ATTN_LANES <= n; j += ATTN_LANES) {
        __m512d v = _mm512_loadu_pd(w + j);
        __m512d logs = gather ? attn_log8(v, true) : attn_log8(v, false);
        __mmask8 positive = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ);
        __mmask8 slow = attn_log_slow8(v);
        if (slow != 0) { /* a weight above 0.9375 or subnormal: glibc's log, as attn_row_logs */
            double l8[ATTN_LANES];
            _mm512_storeu_pd(l8, logs);
            for (int l = 0; l < ATTN_LANES; l++)
                if (slow & (1u << l))
                    l8[l] = log(w[j + l]);
            logs = _mm512_loadu_pd(l8);
        }
        part = _mm512_add_pd(part, v);
        ent = _mm512_add_pd(ent, _mm512_maskz_mul_pd(positive, v, logs));
    }
    double p[ATTN_LANES], e[ATTN_LANES];
    _mm512_storeu_pd(p, part);
    _mm512_storeu_pd(e, ent);
    for (size_t l = 0; j < n; j++, l++) {
        double x = w[j], lg = x > 0.0 ? attn_log_fast(x) : 0.0;
        if (attn_log_slow(x))
            lg = log(x);
        p[l] += x;
        e[l] += x > 0.0 ? x * lg : 0.0;
    }
    *sum = attn_lanes_total(p);
    *entropy = 0.0 - attn_lanes_total(e);
}
#endif

static inline __attribute__((always_inline)) void attn_row_spread(const double *w, size_t n, double *sum, double *entropy)
{
#ifdef ATTN_EXP_AVX512
    if (attn_have_avx512()) {
        attn_row_spread_avx512(w, n, sum, entropy);
        return;
    }
#endif
    double logs[ATTN_LOG_CHUNK], part[ATTN_LANES] = { 0 }, ent[ATTN_LANES] = { 0 };
    for (size_t from = 0; from < n; from += ATTN_LOG_CHUNK) {
        const double *x = w + from;
        size_t m = n - from < ATTN_LOG_CHUNK ? n - from : ATTN_LOG_CHUNK, j = 0;

        attn_row_logs(x, logs, m);
        /* A chunk is a whole number of lanes: key j always goes to lane j mod
         * ATTN_LANES. w ln w -> 0 as w -> 0. */
        for (; j + ATTN_LANES <= m; j += ATTN_LANES)
            for (size_t l = 0; l < ATTN_LANES; l++) {
                part[l] += x[j + l];
                ent[l] += x[j + l] > 0.0 ? x[j + l] * logs[j + l] : 0.0;
            }
        for (size_t l = 0; j < m; j++, l++) {
            part[l] += x[j];
            ent[l] += x[j] > 0.0 ? x[j] * logs[j] : 0.0;
        }
    }
    *sum = attn_lanes_total(part);
    *entropy = 0.0 - attn_lanes_total(ent);
}

ATTN_VECTOR_CLONES
struct attn_row_facts attn_row_facts_of(const double *w, size_t n)
{
    struct attn_row_facts f = { 0.0, attn_row_max(w, n), 0, 0.0 };

    /* Ties to the lowest index. Bounded by n: a row of NaN (which callers must not
     * pass) has max -inf, equal to no weight, and the scan must not leave the row. */
    while (f.argmax < n && w[f.argmax] != f.max_weight)
        f.argmax++;
    if (f.argmax == n)
        f.argmax = 0;
    attn_row_spread(w, n, &f.sum, &f.entropy);
    return f;
}

ATTN_VECTOR_CLONES
struct attn_row_facts attn_row_facts_at(const double *w, size_t n, size_t top)
{
    struct attn_row_facts f = { 0.0, w[top], top, 0.0 };
    attn_row_spread(w, n, &f.sum, &f.entropy);
    return f;
}
