/*
 * api/request/rows.c — reading `rows`, a list of query indices (rows.h).
 */
#include "api/request/rows.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"

/* One entry of rows: an integer 0 <= i < n_q. */
static bool read_row(const json_t *node, const char *ptr, size_t index, const char *queries,
                     size_t n_q, size_t *out, struct api_error *err)
{
    char sub[160];
    long long value = 0;
    snprintf(sub, sizeof sub, "%s/%zu", ptr, index);
    if (api_read_int_range(json_array_get(node, index), sub, "a row", 0, (long long)n_q - 1,
                           &value, err)) {
        *out = (size_t)value;
        return true;
    }
    api_error_hint(err, "%s has %zu %s: each entry of rows is a query index 0 to %zu", queries,
                   n_q, n_q == 1 ? API_TR("row") : API_TR("rows"), n_q - 1);
    return false;
}

bool api_read_rows(const json_t *node, const char *ptr, const char *queries, size_t n_q,
                   size_t **rows, size_t *n_rows, struct api_error *err)
{
    size_t n = json_is_array(node) ? json_array_size(node) : 0;
    if (n == 0) {
        api_error_set(err, API_INVALID_VALUE, "rows is %s; it must be a non-empty list of query "
                      "indices such as [0, 5]", json_is_array(node) ? API_TR("an empty list")
                                                                     : api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "list the query rows to answer, 0 to %zu; leave rows out for all",
                       n_q - 1);
        return false;
    }
    if ((*rows = malloc(n * sizeof **rows)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for rows");
        return false;
    }
    *n_rows = n;
    for (size_t i = 0; i < n; i++)
        if (!read_row(node, ptr, i, queries, n_q, &(*rows)[i], err))
            return false;
    return true;
}

size_t api_rows_place(const size_t *rows, size_t n_rows, size_t row)
{
    if (rows == NULL)
        return row;
    size_t at = 0;
    while (at < n_rows && rows[at] != row)
        at++;
    return at;
}

bool api_rows_check_explain(const size_t *rows, size_t n_rows, size_t row, const char *pointer,
                            struct api_error *err)
{
    if (api_rows_place(rows, n_rows, row) < n_rows || rows == NULL)
        return true;
    api_error_set(err, API_INVALID_VALUE, "explain works on row %zu, which rows does not list",
                  row);
    api_error_at(err, "%s", pointer);
    api_error_hint(err, "add %zu to rows, or explain one of the rows listed", row);
    return false;
}

bool api_rows_refuse_beside(const char *ptr, const char *field, struct api_error *err)
{
    api_error_set(err, API_INVALID_VALUE, "rows cannot be combined with %s", field);
    api_error_at(err, "%s", ptr);
    api_error_hint(err, "%s already works on one row: ask for it without rows", field);
    return false;
}
