/*
 * tests/unit/softmax_row_baseline.c — core/softmax_row.c once more, built for the x86-64
 * baseline alone (no target_clones) and under other names, so that check_core can
 * hold the version the program picked at load time (AVX-512 or AVX2 where the CPU
 * has them) to the baseline's bits: softmax_row.h promises the same bits on every
 * CPU. The Makefile gives this file the flags of core/softmax_row.o.
 */
#define ATTN_NO_CLONES
#define attn_row_scale baseline_row_scale
#define attn_row_max baseline_row_max
#define attn_row_scale_max baseline_row_scale_max
#define attn_row_exp baseline_row_exp
#define attn_row_divide baseline_row_divide
#define attn_row_first_of baseline_row_first_of
#define attn_row_facts_of baseline_row_facts_of
#define attn_row_facts_at baseline_row_facts_at
#define attn_row_logs baseline_row_logs
#define attn_row_softcap baseline_row_softcap
#define attn_row_use_gathers baseline_row_use_gathers
#include "core/softmax_row.c"
