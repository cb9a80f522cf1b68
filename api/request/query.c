/*
 * api/request/query.c — unknown query parameters are refused (see query.h).
 */
#include "api/request/query.h"

#include <stdio.h>
#include <string.h>

#include "api/request/fields.h"

/* Every route reads these (http/negotiate.h). */
static const char *const everywhere[] = { "format", "lang" };

#define N_EVERYWHERE (sizeof everywhere / sizeof everywhere[0])
#define MAX_NAMES 16

bool api_check_query(const struct api_request *req, const char *const *extra,
                     struct api_error *err)
{
    const char *names[MAX_NAMES];
    size_t n = 0;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < MAX_NAMES - N_EVERYWHERE; i++)
        names[n++] = extra[i];
    for (size_t i = 0; i < N_EVERYWHERE; i++)
        names[n++] = everywhere[i];

    for (size_t i = 0; i < req->n_params; i++) {
        const char *name = req->params[i].name;
        size_t j = 0;
        while (j < n && strcmp(name, names[j]) != 0)
            j++;
        if (j < n)
            continue;
        char list[200] = "";
        for (size_t k = 0, used = 0; k < n && used < sizeof list; k++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "",
                                     names[k]);
        api_error_set(err, API_UNKNOWN_FIELD, "unknown query parameter \"%.40s\"; this "
                      "endpoint takes %s", name, list);
        snprintf(err->parameter, sizeof err->parameter, "%.63s", name);
        const char *near = api_close_name(name, names, n);
        if (near != NULL)
            api_error_hint(err, "did you mean \"%s\"?", near);
        else
            api_error_hint(err, "no known parameter is close; the parameters are %s", list);
        return false;
    }
    return true;
}
