/*
 * tests/fuzz/fuzz_trace.c — libFuzzer harness for the two header values an operator's
 * tooling hands attnd: a request's traceparent (server/net/trace.c) and the --cors-headers
 * list (server/host/config.c), each copied into a buffer of its own size so that a read past
 * it is caught by AddressSanitizer.
 *
 * What must hold, beyond "no crash or undefined behaviour": a traceparent judged valid
 * is 55 bytes of lowercase hex and dashes where version 00 puts them, and picking it
 * gives it back unchanged (anything else gives ""); a --cors-headers list is accepted
 * exactly when the parse says so, and an accepted one is names of RFC 9110 token
 * characters joined by ", ", with no empty name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/host/config.h"
#include "server/net/trace.h"

static bool tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static void check_traceparent(const char *v)
{
    char out[SRV_TRACEPARENT_BUF];
    srv_traceparent_pick(out, v);
    if (!srv_traceparent_valid(v)) {
        if (out[0] != '\0')
            abort();
        return;
    }
    if (strlen(v) != SRV_TRACEPARENT_LEN || strcmp(out, v) != 0 || v[0] != '0' || v[1] != '0')
        abort();
    for (size_t i = 2; i < SRV_TRACEPARENT_LEN; i++) {
        bool dash = i == 2 || i == 35 || i == 52;
        bool hex = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f');
        if (dash ? v[i] != '-' : !hex)
            abort();
    }
}

static void check_cors_headers(char *v)
{
    static struct srv_config cfg; /* large: not on the stack */
    char *argv[] = {"attnd", "--cors-headers", v, NULL};
    char err[256];
    enum srv_mode mode = srv_config_parse(&cfg, 3, argv, NULL, 1, err, sizeof err);
    if (mode == SRV_MODE_ERROR)
        return;
    if (mode != SRV_MODE_RUN)
        abort();
    const char *p = cfg.cors_headers;
    for (;;) { /* name (", " name)* */
        size_t n = 0;
        while (tchar(p[n]))
            n++;
        if (n == 0)
            abort();
        p += n;
        if (*p == '\0')
            break;
        if (p[0] != ',' || p[1] != ' ')
            abort();
        p += 2;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size + 1);
    if (v == NULL)
        return 0;
    memcpy(v, data, size);
    v[size] = '\0';
    check_traceparent(v);
    check_cors_headers(v);
    free(v);
    return 0;
}
