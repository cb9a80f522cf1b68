/*
 * core/verify.h — judging a kernel's answer against the float64 oracle by the rules
 * kernel authors test with (DESIGN.md, "Verify: a kernel's answer against the oracle"):
 *
 *   flash  FlashAttention's tests: max|cand − gold| ≤ factor·max|naive − gold| + atol,
 *          factor 2 for the output and lse, 3 for gradients, and
 *          atol = 2·max|((g ⊕ 0.3) ⊖ 0.3) − g| over the gold g rounded to the format,
 *          ⊕ and ⊖ each rounded once to the format (0.3 held as a double);
 *   flex   FlexAttention's tests: mean|cand − gold| ≤ fudge·mean|naive − gold|;
 *   close  torch.allclose: |cand − gold| ≤ atol + rtol·|gold| at every cell.
 *
 * gold is the float64 answer, naive the same problem computed in the candidate's format
 * (core/precision.h). A NaN in the candidate fails every rule: its error counts as +inf.
 * Where gold is infinite (a fully masked row's lse, −inf) the candidate must hold the
 * same infinity, or +inf too when the caller allows either sign (FlashAttention 2 writes
 * +inf there); anything else is an error of +inf. The naive reference's cells that are
 * not finite where gold is are left out of its errors (and counted): a bound made
 * infinite by them would pass anything.
 *
 * Not here: JSON, HTTP, running attention. Everything is float64.
 */
#ifndef ATTN_VERIFY_H
#define ATTN_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "matrix.h"
#include "precision.h"

enum attn_rule_kind { ATTN_RULE_FLASH = 0, ATTN_RULE_FLEX, ATTN_RULE_CLOSE };

struct attn_rule {
    enum attn_rule_kind kind;
    double fudge;      /* flex: 1.1 unless given */
    double rtol, atol; /* close */
};

/* One tensor's numbers as the rule reads them: n cells, row-major. */
struct attn_verify_tensor {
    const double *candidate;
    const double *gold;
    const double *naive;
    size_t n;
    double factor;       /* flash: 2 for the output and lse, 3 for gradients */
    bool inf_any_sign;   /* where gold is ±inf, either infinity in the candidate matches */
};

#define ATTN_VERIFY_WORST 10

struct attn_verify_cell {
    size_t index; /* row-major */
    double candidate, gold, naive;
    double error; /* |candidate − gold|, +inf for a NaN or a wrong infinity */
};

struct attn_verify_check {
    bool pass;
    double max_abs_error;       /* over every cell (+inf when one is NaN) */
    double mean_abs_error;
    double max_rel_error;       /* |cand − gold| / |gold| over cells where gold ≠ 0 */
    size_t max_rel_index;       /* SIZE_MAX when no cell has gold ≠ 0 */
    double naive_max_abs_error; /* the naive reference's, over its finite cells */
    double naive_mean_abs_error;
    size_t naive_non_finite;    /* naive cells left out: not finite where gold is */
    size_t nan_cells;           /* candidate cells that are NaN */
    double atol;                /* flash: the atol above; close: the rule's atol */
    double bound;               /* what the rule allowed (see measured) */
    double measured;            /* flash: max_abs_error; flex: mean_abs_error; close:
                                   |cand − gold| at the cell over its bound by most */
    size_t n_worst;
    struct attn_verify_cell worst[ATTN_VERIFY_WORST]; /* the largest errors first */
};

/* The flash rule's atol of gold in format f. */
double attn_verify_flash_atol(const double *gold, size_t n, enum attn_format f);

/* Judges t by the rule in format f into out. */
void attn_verify_judge(struct attn_verify_check *out, const struct attn_verify_tensor *t,
                       const struct attn_rule *rule, enum attn_format f);

/*
 * Whether a candidate of one constant would pass t's check (t->candidate unread): zeros,
 * and the constant that does best against the measure (the midpoint of gold's range for
 * a maximum, its median for a mean, both for allclose). *constant is the one that
 * passes; false when none does. scratch holds n doubles (the median's sort).
 */
bool attn_verify_constant_passes(const struct attn_verify_tensor *t, const struct attn_rule *rule,
                                 enum attn_format f, double *scratch, double *constant);

/* The row-major index of m's first cell that f cannot hold exactly, or SIZE_MAX. */
size_t attn_first_not_in_format(const struct attn_matrix *m, enum attn_format f);

#endif
