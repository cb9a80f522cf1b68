/*
 * api/request/precision.c — reading `precision` (see precision.h).
 */
#include "api/request/precision.h"

#include <string.h>
#include <strings.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"

static const struct api_field precision_fields[] = {
    { "format", "the kernel's format: \"float16\", \"bfloat16\" or \"float32\"" },
    { "accumulate", "where sums go: \"float32\" (default) or \"same\" (the format itself)" },
};

static const char *const formats[] = { "float16", "bfloat16", "float32" };
static const enum attn_format format_of[] = { ATTN_FLOAT16, ATTN_BFLOAT16, ATTN_FLOAT32 };

/* Names kernels' code uses for the formats, and the one attnd calls each. */
static const struct {
    const char *alias, *meant;
} aliases[] = {
    { "fp16", "float16" }, { "half", "float16" }, { "f16", "float16" }, { "float16_t", "float16" },
    { "torch.float16", "float16" }, { "bf16", "bfloat16" }, { "bfloat", "bfloat16" },
    { "torch.bfloat16", "bfloat16" }, { "fp32", "float32" }, { "f32", "float32" },
    { "float", "float32" }, { "single", "float32" }, { "torch.float32", "float32" },
};

static const char *meant_by(const char *word)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(word, aliases[i].alias) == 0)
            return aliases[i].meant;
    return NULL;
}

static bool is_float64(const char *word)
{
    return strcasecmp(word, "float64") == 0 || strcasecmp(word, "fp64") == 0 ||
           strcasecmp(word, "double") == 0;
}

static bool read_format(const json_t *node, const char *ptr, const char *name,
                        enum attn_format *out, struct api_error *err)
{
    const char *word = json_string_value(node);
    if (word != NULL && is_float64(word)) {
        api_error_set(err, API_INVALID_VALUE, "%s is \"%.40s\"; it must be float16, bfloat16 "
                      "or float32", name, word);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "attnd computes in float64 without precision: leave precision out");
        return false;
    }
    if (word != NULL && meant_by(word) != NULL) {
        api_error_set(err, API_INVALID_VALUE, "%s is \"%.40s\"; it must be float16, bfloat16 "
                      "or float32", name, word);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "did you mean \"%s\"?", meant_by(word));
        return false;
    }
    size_t index;
    if (!api_read_choice(node, ptr, name, formats, 3, &index, err))
        return false;
    *out = format_of[index];
    return true;
}

static bool read_accumulate(const json_t *node, const char *ptr, const char *name,
                            enum attn_format format, enum attn_format *out,
                            struct api_error *err)
{
    static const char *const accumulators[] = { "float32", "same" };
    const char *word = json_string_value(node);
    const char *meant = word != NULL ? meant_by(word) : NULL;
    if (word != NULL && strcmp(word, attn_format_name(format)) == 0 && format != ATTN_FLOAT32) {
        api_error_set(err, API_INVALID_VALUE, "%s is \"%.40s\"; it must be float32 or same",
                      name, word);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "write \"same\" to sum in the format itself, %s",
                       attn_format_name(format));
        return false;
    }
    if (word != NULL && (meant != NULL || strcmp(word, "float16") == 0 ||
                         strcmp(word, "bfloat16") == 0 || is_float64(word))) {
        api_error_set(err, API_INVALID_VALUE, "%s is \"%.40s\"; it must be float32 or same",
                      name, word);
        api_error_at(err, "%s", ptr);
        if (meant != NULL && strcmp(meant, "float32") == 0)
            api_error_hint(err, "did you mean \"%s\"?", "float32");
        else
            api_error_hint(err, "sums go into float32, or into the format itself (\"same\", "
                           "here %s); no other accumulator", attn_format_name(format));
        return false;
    }
    size_t index;
    if (!api_read_choice(node, ptr, name, accumulators, 2, &index, err))
        return false;
    *out = index == 0 ? ATTN_FLOAT32 : format;
    return true;
}

bool api_precision_read(const json_t *doc, const char *prefix, struct api_precision *out,
                        struct api_error *err)
{
    memset(out, 0, sizeof *out);
    const json_t *node = api_member(doc, "precision");
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "precision");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "precision is %s; it must be an object",
                      api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "for example \"precision\": {\"format\": \"float16\", "
                       "\"accumulate\": \"float32\"}");
        return false;
    }
    if (!api_check_fields(node, ptr, precision_fields, 2, err))
        return false;
    char member[160];
    const json_t *format = api_member(node, "format");
    if (format == NULL) {
        api_error_set(err, API_MISSING_FIELD, "precision.format is required: float16, "
                      "bfloat16 or float32");
        api_error_at(err, "%s/format", ptr);
        api_error_hint(err, "for example \"precision\": {\"format\": \"float16\"}");
        return false;
    }
    API_FIELD_POINTER(member, ptr, "format");
    if (!read_format(format, member, "precision.format", &out->rules.format, err))
        return false;
    out->rules.accumulate = ATTN_FLOAT32;
    const json_t *acc = api_member(node, "accumulate");
    API_FIELD_POINTER(member, ptr, "accumulate");
    if (acc != NULL && !read_accumulate(acc, member, "precision.accumulate", out->rules.format,
                                        &out->rules.accumulate, err))
        return false;
    out->on = true;
    return true;
}

bool api_precision_read_v2(const json_t *params, struct api_precision *out,
                           struct api_error *err)
{
    memset(out, 0, sizeof *out);
    const json_t *format = params != NULL ? json_object_get(params, "precision") : NULL;
    const json_t *acc = params != NULL ? json_object_get(params, "accumulate") : NULL;
    if (format == NULL || json_is_null(format)) {
        if (acc == NULL || json_is_null(acc))
            return true;
        api_error_set(err, API_INVALID_VALUE, "parameters.accumulate needs parameters.precision, "
                      "the format it sums for");
        api_error_at(err, "/parameters/accumulate");
        api_error_hint(err, "add \"precision\": \"float16\" (or bfloat16, float32) to the parameters");
        return false;
    }
    if (!read_format(format, "/parameters/precision", "parameters.precision", &out->rules.format,
                     err))
        return false;
    out->rules.accumulate = ATTN_FLOAT32;
    if (acc != NULL && !json_is_null(acc) &&
        !read_accumulate(acc, "/parameters/accumulate", "parameters.accumulate",
                         out->rules.format, &out->rules.accumulate, err))
        return false;
    out->on = true;
    return true;
}

const char *api_precision_accumulate_name(const struct attn_precision *p)
{
    return p->accumulate == p->format && p->format != ATTN_FLOAT32 ? "same" : "float32";
}
