/*
 * server/net/trace.c — the traceparent check (see trace.h).
 */
#include "server/net/trace.h"

#include <string.h>

static bool srv_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* n lowercase hex digits at s, not all of them '0' when nonzero_required. */
static bool srv_hex_field(const char *s, size_t n, bool nonzero_required)
{
    bool nonzero = false;
    for (size_t i = 0; i < n; i++) {
        if (!srv_lower_hex(s[i]))
            return false;
        nonzero = nonzero || s[i] != '0';
    }
    return nonzero || !nonzero_required;
}

bool srv_traceparent_valid(const char *v)
{
    /* 00-{32}-{16}-{2}: version, trace-id, parent-id, flags. */
    if (v == NULL || strlen(v) != SRV_TRACEPARENT_LEN)
        return false;
    if (v[0] != '0' || v[1] != '0' || v[2] != '-' || v[35] != '-' || v[52] != '-')
        return false;
    return srv_hex_field(v + 3, 32, true) && srv_hex_field(v + 36, 16, true) &&
           srv_hex_field(v + 53, 2, false);
}

void srv_traceparent_pick(char out[SRV_TRACEPARENT_BUF], const char *v)
{
    if (srv_traceparent_valid(v))
        memcpy(out, v, SRV_TRACEPARENT_BUF);
    else
        out[0] = '\0';
}
