/*
 * api/request/heatmap.c — a request's heatmap options (see heatmap.h).
 */
#include "api/request/heatmap.h"

#include <math.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"

static const struct api_field heatmap_fields[] = {
    { "vmin", "the weight drawn palest, a number or \"auto\" (default 0)" },
    { "vmax", "the weight drawn darkest, a number or \"auto\" (default 1)" },
    { "title", "the picture's title" },
};

static bool read_bound(const json_t *obj, const char *ptr, const char *name, double *value,
                       bool *is_auto, struct api_error *err)
{
    const json_t *node = api_member(obj, name);
    if (node == NULL)
        return true;
    if (json_is_string(node) && strcmp(json_string_value(node), "auto") == 0) {
        *is_auto = true;
        return true;
    }
    if (json_is_number(node) && json_number_value(node) >= 0 && json_number_value(node) <= 1) {
        *value = json_number_value(node);
        return true;
    }
    api_error_set(err, API_INVALID_VALUE, "heatmap.%s is %s; it must be a number from 0 to 1 "
                  "(weights lie there) or \"auto\"", name, json_is_number(node) ?
                  API_TR("out of range") : api_json_kind(node));
    api_error_at(err, "%s/%s", ptr, name);
    api_error_hint(err, "\"auto\" takes the %s weight drawn; the note draws from 0 to 1",
                   strcmp(name, "vmin") == 0 ? API_TR("smallest") : API_TR("largest"));
    return false;
}

/* Code points of a string (JSON's strings are UTF-8): the bytes that start one. */
static size_t characters(const json_t *s)
{
    size_t n = 0;
    const char *p = json_string_value(s);
    for (size_t i = 0; i < json_string_length(s); i++)
        n += ((unsigned char)p[i] & 0xC0) != 0x80;
    return n;
}

bool api_heatmap_read(const json_t *doc, const char *prefix, struct api_heatmap *out,
                      struct api_error *err)
{
    char ptr[128];
    *out = (struct api_heatmap){ 0, 1, false, false, NULL };
    const json_t *node = api_member(doc, "heatmap");
    if (node == NULL)
        return true;
    API_FIELD_POINTER(ptr, prefix, "heatmap");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "heatmap is %s; it must be an object such as "
                      "{\"vmax\": \"auto\"}", api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "heatmap takes vmin, vmax (numbers or \"auto\") and title");
        return false;
    }
    if (!api_check_fields(node, ptr, heatmap_fields, 3, err) ||
        !read_bound(node, ptr, "vmin", &out->vmin, &out->vmin_auto, err) ||
        !read_bound(node, ptr, "vmax", &out->vmax, &out->vmax_auto, err))
        return false;
    if (!out->vmin_auto && !out->vmax_auto && out->vmin >= out->vmax) {
        api_error_set(err, API_INVALID_VALUE, "heatmap.vmax (%g) must be above vmin (%g)",
                      out->vmax, out->vmin);
        api_error_at(err, "%s/vmax", ptr);
        api_error_hint(err, "weights run from 0 to 1: e.g. {\"vmin\": 0, \"vmax\": 0.5}, or "
                       "\"auto\"");
        return false;
    }
    const json_t *title = api_member(node, "title");
    if (title != NULL && (!json_is_string(title) || characters(title) > API_HEATMAP_TITLE_MAX)) {
        api_error_set(err, API_INVALID_VALUE, "heatmap.title must be a string of at most %d "
                      "characters, not %s", API_HEATMAP_TITLE_MAX,
                      json_is_string(title) ? "a longer one" : api_json_kind(title));
        api_error_at(err, "%s/title", ptr);
        api_error_hint(err, "a short title, e.g. \"Query별 Attention 가중치\"");
        return false;
    }
    out->title = json_string_value(title);
    return true;
}

void api_heatmap_bounds(const struct api_heatmap *h, double smallest, double largest,
                        double *vmin, double *vmax)
{
    *vmin = h->vmin_auto ? smallest : h->vmin;
    *vmax = h->vmax_auto ? largest : h->vmax;
    if (!(*vmax > *vmin))
        *vmax = *vmin + 1;
}
