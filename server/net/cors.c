/*
 * server/net/cors.c — the CORS decision (see cors.h).
 *
 * Origins compare exactly (scheme, host and port as the browser sends them);
 * "https://a.example" does not allow "https://a.example.evil".
 */
#include "server/net/cors.h"

#include <stdio.h>
#include <string.h>

struct srv_cors srv_cors_decide(const struct srv_config *cfg, const char *origin)
{
    struct srv_cors c = {NULL, false};
    if (cfg->cors_any) {
        c.allow_origin = "*";
        return c;
    }
    c.vary_origin = true;
    if (origin == NULL)
        return c;
    for (size_t i = 0; i < cfg->n_cors_origins; i++)
        if (strcmp(cfg->cors_origins[i], origin) == 0) {
            c.allow_origin = origin;
            break;
        }
    return c;
}

size_t srv_cors_vary(char *out, size_t cap, const struct srv_cors *c, bool codable,
                     const char *api_vary)
{
    const char *ours = c->vary_origin && codable ? "Origin, Accept-Encoding"
                       : c->vary_origin          ? "Origin"
                       : codable                 ? "Accept-Encoding"
                                                 : NULL;
    if (ours == NULL)
        return 0;
    int n = snprintf(out, cap, "%s%s%s", ours, api_vary != NULL ? ", " : "",
                     api_vary != NULL ? api_vary : "");
    return n > 0 ? (size_t)n : 0;
}
