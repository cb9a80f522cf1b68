/*
 * api/endpoints/attention/attention.c — what the family's steps share (see attention.h):
 * where a non-finite cell of /v1/attention came from, the input its pointer names and
 * the hint that fixes it, for the run with or without variants alike.
 */
#include "api/endpoints/attention/attention.h"

#include "api/http/problem.h"
#include "core/variants.h"

void api_attention_overflow_at(const struct api_attention_req *r, const char *prefix,
                               int step, size_t row, size_t col, struct api_error *err)
{
    switch (step) {
    case ATTN_STEP_SCORES:
        if (r->q_is_vector)
            api_error_at(err, "%s/q", prefix);
        else
            api_error_at(err, "%s/q/%zu", prefix, row);
        api_error_hint(err, "q row %zu . k row %zu is beyond the largest double (~1.8e308): "
                       "scale q and k down", row, col);
        break;
    case ATTN_STEP_SCALED:
        api_error_at(err, "%s/scale", prefix);
        api_error_hint(err, "scores * scale overflows: use a smaller scale");
        break;
    case ATTN_STEP_MASKED:
        if (r->variants.alibi) {
            api_error_at(err, "%s/alibi", prefix);
            api_error_hint(err, "the score plus bias minus slope x distance overflows: use "
                           "smaller values or a smaller slope");
        } else {
            api_error_at(err, "%s/bias", prefix);
            api_error_hint(err, "scaled + bias overflows: use smaller bias values");
        }
        break;
    default:
        api_error_at(err, "%s/v", prefix);
        api_error_hint(err, "the weighted sum of v's rows overflows: scale v down");
    }
}
