/*
 * api/http/negotiate.c — Accept, ?format and Content-Type (see negotiate.h).
 */
#include "api/http/negotiate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/http/problem.h"
#include "api/i18n/lang.h"

/*
 * Which of the route's media one Accept range (without parameters) picks, or 0.
 * A wildcard, and problem+json (problems are always acceptable to a client that
 * asked for them), pick the route's default: JSON when it makes JSON.
 */
static unsigned range_pick(const char *range, size_t len, unsigned media)
{
#define IS(s) (len == strlen(s) && strncasecmp(range, s, len) == 0)
    unsigned fallback = (media & API_MEDIA_JSON) ? API_MEDIA_JSON : (media & (~media + 1));
    if (IS("*/*") || IS("application/problem+json"))
        return fallback;
    if ((media & API_MEDIA_JSON) && (IS("application/json") || IS("application/*")))
        return API_MEDIA_JSON;
    if ((media & API_MEDIA_YAML) && (IS("application/yaml") || IS("application/*") ||
                                 IS("text/yaml") || IS("application/x-yaml")))
        return API_MEDIA_YAML;
    if ((media & API_MEDIA_HTML) && (IS("text/html") || IS("text/*")))
        return API_MEDIA_HTML;
    if ((media & API_MEDIA_TEXT) && (IS("text/plain") || IS("text/*")))
        return API_MEDIA_TEXT;
    if ((media & API_MEDIA_SVG) && (IS("image/svg+xml") || IS("image/*")))
        return API_MEDIA_SVG;
    if ((media & API_MEDIA_OCTETS) && (IS("application/octet-stream") || IS("application/*")))
        return API_MEDIA_OCTETS;
    return 0;
#undef IS
}

/* The q parameter of one Accept item (p, len): 1 when absent (RFC 9110 §12.4.2). */
static double item_quality(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ';')
            continue;
        size_t j = i + 1;
        while (j < len && (p[j] == ' ' || p[j] == '\t'))
            j++;
        if (j + 1 < len && (p[j] == 'q' || p[j] == 'Q') && p[j + 1] == '=')
            return strtod(p + j + 2, NULL);
    }
    return 1.0;
}

/*
 * The media bit the Accept header prefers among what the route makes: the range
 * with the highest q > 0 that the route can serve, the first one on a tie (q=0
 * means "not this one"). No header, or an empty one, picks the default; 0 means
 * nothing acceptable.
 */
static unsigned accept_pick(const char *accept, unsigned media)
{
    if (accept == NULL || *accept == '\0')
        return range_pick("*/*", 3, media);
    unsigned best = 0;
    double best_q = 0.0;
    const char *p = accept;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t item_len = end ? (size_t)(end - p) : strlen(p);
        while (item_len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            item_len--;
        }
        size_t range_len = strcspn(p, ";, \t");
        if (range_len > item_len)
            range_len = item_len;
        double q = item_quality(p, item_len);
        unsigned bit = range_pick(p, range_len, media);
        if (bit != 0 && q > best_q) {
            best = bit;
            best_q = q;
        }
        p += item_len;
        if (*p == ',')
            p++;
    }
    return best;
}

enum api_format api_negotiated_format(const struct api_request *req, unsigned media)
{
    const char *format = api_request_param(req, "format");
    unsigned bit = 0;
    if (format == NULL)
        bit = accept_pick(req->accept, media);
    else if (strcmp(format, "text") == 0)
        bit = API_MEDIA_TEXT;
    else if (strcmp(format, "svg") == 0)
        bit = API_MEDIA_SVG;
    else if (strcmp(format, "bertviz") == 0)
        bit = API_MEDIA_BERTVIZ;
    return (bit & media & API_MEDIA_TEXT) ? API_FORMAT_TEXT :
           (bit & media & API_MEDIA_SVG) ? API_FORMAT_SVG :
           (bit & media & API_MEDIA_BERTVIZ) ? API_FORMAT_BERTVIZ : API_FORMAT_JSON;
}

/* "application/json, text/plain or image/svg+xml": what a route makes, for a 406. */
static void media_names(unsigned media, char *buf, size_t len)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        { API_MEDIA_JSON, "application/json" }, { API_MEDIA_YAML, "application/yaml" },
        { API_MEDIA_HTML, "text/html" }, { API_MEDIA_TEXT, "text/plain" },
        { API_MEDIA_SVG, "image/svg+xml" }, { API_MEDIA_OCTETS, "application/octet-stream" },
    };
    size_t n = 0, total = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        total += (media & names[i].bit) != 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(media & names[i].bit))
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", n == 0 ? "" : n + 1 == total ? API_TR(" or ") : ", ",
                 names[i].name);
        n++;
    }
}

bool api_negotiate(const struct api_request *req, const char *path, unsigned media,
                   enum api_error_style style, struct api_response *res)
{
    const char *format = api_request_param(req, "format");
    if (format != NULL) {
        if ((strcmp(format, "json") == 0 && (media & API_MEDIA_JSON)) ||
            (strcmp(format, "text") == 0 && (media & API_MEDIA_TEXT)) ||
            (strcmp(format, "svg") == 0 && (media & API_MEDIA_SVG)) ||
            (strcmp(format, "bertviz") == 0 && (media & API_MEDIA_BERTVIZ)))
            return true;
        struct api_error err;
        if (strcmp(format, "json") == 0 || strcmp(format, "text") == 0 ||
            strcmp(format, "svg") == 0 || strcmp(format, "bertviz") == 0) {
            api_error_set(&err, API_NOT_ACCEPTABLE, "%s cannot be served as %s", path, format);
        } else {
            api_error_set(&err, API_INVALID_VALUE, "format \"%.32s\" is not known; use json, "
                          "text, svg or bertviz", format);
        }
        snprintf(err.parameter, sizeof err.parameter, "format");
        api_respond_error_as(res, &err, style);
        return false;
    }
    if (accept_pick(req->accept, media) != 0)
        return true;
    char made[128];
    media_names(media, made, sizeof made);
    struct api_error err;
    api_error_set(&err, API_NOT_ACCEPTABLE, "Accept: %.160s cannot be served by %.100s, which "
                  "produces %s", req->accept, path, made);
    api_respond_error_as(res, &err, style);
    return false;
}

bool api_content_type_readable(const char *ct, unsigned kinds)
{
    static const struct { const char *type; unsigned kind; } accepted[] = {
        { "application/json", API_BODY_JSON }, { "text/plain", API_BODY_JSON },
        { "application/x-www-form-urlencoded", API_BODY_JSON },
        { "application/octet-stream", API_BODY_OCTETS },
    };
    if (ct == NULL)
        return true;
    while (*ct == ' ')
        ct++;
    size_t len = strcspn(ct, "; \t");
    if (len == 0)
        return true;
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        if ((accepted[i].kind & kinds) && len == strlen(accepted[i].type) &&
            strncasecmp(ct, accepted[i].type, len) == 0)
            return true;
    return false;
}

