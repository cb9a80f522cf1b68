/*
 * server/host/config.c — flags, environment and defaults for attnd (see config.h).
 *
 * One table lists every setting once: its flag, its variable, its kind and its range.
 * Numbers are read with strtoull and checked for sign, trailing bytes and range (never
 * atoi: "1x" and "-1" are errors, not 1 and 2^64-1). Values are echoed in messages only
 * after being made printable and short.
 *
 * Not here: printing, exiting, sockets.
 */
#include "server/host/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/context.h"

enum srv_opt_kind { OPT_UINT, OPT_SIZE, OPT_BIND, OPT_CORS, OPT_CORS_HEADERS, OPT_LOG, OPT_ADMIN };

struct srv_opt {
    const char *flag;        /* without the leading "--" */
    const char *env;
    enum srv_opt_kind kind;
    size_t offset;           /* of the field in struct srv_config, OPT_UINT and OPT_SIZE */
    unsigned long long min, max;
    const char *unit;        /* for the range message */
};

/*
 * The ranges are wide enough for any sane deployment and narrow enough that the
 * arithmetic above them (cells * sizeof(double), timeouts in ms) cannot overflow.
 */
static const struct srv_opt srv_opts[] = {
    {"bind", "ATTND_BIND", OPT_BIND, 0, 0, 0, NULL},
    {"port", "ATTND_PORT", OPT_UINT, offsetof(struct srv_config, port), 0, 65535,
     "0 picks a free port"},
    {"threads", "ATTND_THREADS", OPT_UINT, offsetof(struct srv_config, threads), 1, 1024,
     "threads"},
    {"max-body", "ATTND_MAX_BODY", OPT_SIZE, offsetof(struct srv_config, max_body), 1,
     1073741824ULL, "bytes"},
    {"max-cells", "ATTND_MAX_CELLS", OPT_SIZE, offsetof(struct srv_config, max_cells), 1,
     1073741824ULL, "cells"},
    {"max-work", "ATTND_MAX_WORK", OPT_SIZE, offsetof(struct srv_config, max_work), 1,
     1ULL << 50, "multiply-adds"},
    {"max-request-bytes", "ATTND_MAX_REQUEST_BYTES", OPT_SIZE,
     offsetof(struct srv_config, max_request_bytes), 0, 1ULL << 50,
     "bytes; 0 = 512 MiB or the memory budget, whichever is smaller"},
    {"max-memory", "ATTND_MAX_MEMORY", OPT_SIZE, offsetof(struct srv_config, max_memory), 0,
     1ULL << 50, "bytes; 0 = two thirds of the memory limit"},
    {"max-batch", "ATTND_MAX_BATCH", OPT_SIZE, offsetof(struct srv_config, max_batch), 1,
     4096, "items"},
    {"timeout", "ATTND_TIMEOUT", OPT_UINT, offsetof(struct srv_config, timeout), 1, 86400,
     "seconds"},
    {"request-timeout", "ATTND_REQUEST_TIMEOUT", OPT_UINT,
     offsetof(struct srv_config, request_timeout), 1, 86400, "seconds"},
    {"max-connections", "ATTND_MAX_CONNECTIONS", OPT_UINT,
     offsetof(struct srv_config, max_connections), 1, 65536, "connections"},
    {"max-client-connections", "ATTND_MAX_CLIENT_CONNECTIONS", OPT_UINT,
     offsetof(struct srv_config, max_client_connections), 0, 65536,
     "connections; 0 = no limit, behind a load balancer"},
    {"lane-queue", "ATTND_LANE_QUEUE", OPT_UINT, offsetof(struct srv_config, lane_queue), 1,
     65536, "large requests waiting"},
    {"lane-wait", "ATTND_LANE_WAIT", OPT_UINT, offsetof(struct srv_config, lane_wait), 1, 86400,
     "seconds"},
    {"admin-port", "ATTND_ADMIN_PORT", OPT_ADMIN, offsetof(struct srv_config, admin_port), 0,
     65535, "0 picks a free port; off = none"},
    {"cors-origin", "ATTND_CORS_ORIGIN", OPT_CORS, 0, 0, 0, NULL},
    {"cors-headers", "ATTND_CORS_HEADERS", OPT_CORS_HEADERS, 0, 0, 0, NULL},
    {"log", "ATTND_LOG", OPT_LOG, 0, 0, 0, NULL},
};

#define SRV_N_OPTS (sizeof srv_opts / sizeof srv_opts[0])

void srv_config_defaults(struct srv_config *cfg, unsigned n_cpus)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->bind, sizeof cfg->bind, "127.0.0.1");
    cfg->port = 8080;
    cfg->threads = n_cpus < 1 ? 1 : n_cpus > 1024 ? 1024 : n_cpus;
    cfg->max_body = API_DEFAULT_MAX_BODY;
    cfg->max_cells = API_DEFAULT_MAX_CELLS;
    cfg->max_work = API_DEFAULT_MAX_WORK;
    cfg->max_batch = API_DEFAULT_MAX_BATCH;
    cfg->timeout = 30;
    cfg->request_timeout = 60;
    cfg->max_connections = 2048;
    cfg->max_client_connections = 256;
    cfg->lane_queue = 64;
    cfg->lane_wait = 30;
    cfg->cors_any = true;
    snprintf(cfg->cors_headers, sizeof cfg->cors_headers, "%s", SRV_CORS_DEFAULT_HEADERS);
    cfg->log = SRV_LOG_TEXT;
}

/* Copies at most 40 bytes of s into out, replacing what a terminal should not see. */
static void srv_printable(char *out, size_t out_len, const char *s)
{
    size_t i = 0;
    for (; s[i] != '\0' && i < 40 && i + 1 < out_len; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (s[i] != '\0' && i + 4 < out_len) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
}

/* Decimal digits only, no sign, no spaces, no trailing bytes, within [min, max]. */
static bool srv_parse_ull(const char *s, unsigned long long min, unsigned long long max,
                          unsigned long long *out)
{
    if (s[0] < '0' || s[0] > '9')
        return false; /* strtoull would accept " 1", "+1" and negate "-1" */
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool srv_set_number(struct srv_config *cfg, const struct srv_opt *o, const char *value,
                           char *why, size_t why_len)
{
    unsigned long long v;
    if (!srv_parse_ull(value, o->min, o->max, &v)) {
        snprintf(why, why_len, "expected an integer from %llu to %llu (%s)", o->min, o->max,
                 o->unit);
        return false;
    }
    char *field = (char *)cfg + o->offset;
    if (o->kind != OPT_SIZE) { /* OPT_UINT, OPT_ADMIN: unsigned fields */
        unsigned u = (unsigned)v;
        memcpy(field, &u, sizeof u);
    } else {
        size_t z = (size_t)v;
        memcpy(field, &z, sizeof z);
    }
    return true;
}

static bool srv_set_bind(struct srv_config *cfg, const char *value, char *why, size_t why_len)
{
    unsigned char addr[16];
    bool v4 = strlen(value) < sizeof cfg->bind && inet_pton(AF_INET, value, addr) == 1;
    bool v6 = !v4 && strlen(value) < sizeof cfg->bind && inet_pton(AF_INET6, value, addr) == 1;
    if (!v4 && !v6) {
        snprintf(why, why_len, "expected a numeric IPv4 or IPv6 address, e.g. 127.0.0.1, "
                               "0.0.0.0 or ::");
        return false;
    }
    snprintf(cfg->bind, sizeof cfg->bind, "%s", value);
    cfg->bind_ipv6 = v6;
    return true;
}

/* An origin as browsers send it: http(s)://host[:port], nothing after the authority. */
static bool srv_origin_ok(const char *o)
{
    const char *rest = NULL;
    if (strncmp(o, "http://", 7) == 0)
        rest = o + 7;
    else if (strncmp(o, "https://", 8) == 0)
        rest = o + 8;
    if (rest == NULL || *rest == '\0' || strlen(o) > 255)
        return false;
    for (; *rest != '\0'; rest++) {
        char c = *rest;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
        if (!ok)
            return false;
    }
    return true;
}

static bool srv_set_cors(struct srv_config *cfg, const char *value, char *why, size_t why_len)
{
    static const char allowed[] = "expected * or a comma-separated list of origins such as "
                                  "https://example.org,http://localhost:3000";
    if (strcmp(value, "*") == 0) {
        cfg->cors_any = true;
        cfg->n_cors_origins = 0;
        return true;
    }
    if (strlen(value) >= sizeof cfg->cors_buf) {
        snprintf(why, why_len, "the list is longer than %zu bytes", sizeof cfg->cors_buf - 1);
        return false;
    }
    /* Split a copy in place: each origin, trimmed, becomes a NUL-terminated string. */
    memcpy(cfg->cors_buf, value, strlen(value) + 1);
    size_t n = 0;
    char *p = cfg->cors_buf;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma != NULL)
            *comma = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            p[--len] = '\0';
        if (!srv_origin_ok(p) || n == SRV_CORS_MAX_ORIGINS) {
            snprintf(why, why_len, "%s (at most %d)", allowed, SRV_CORS_MAX_ORIGINS);
            return false;
        }
        cfg->cors_origins[n++] = p;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    cfg->cors_any = false;
    cfg->n_cors_origins = n;
    return true;
}

/* A header name as RFC 9110 writes it: one or more tchar. */
static bool srv_header_name_ok(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
        if (!ok)
            return false;
    }
    return true;
}

/*
 * --cors-headers: the list replaces the default whole (an operator who lists headers
 * means exactly those). Each name is trimmed and checked, and the list is kept as
 * "A, B, C", ready to be sent: a name with a space or a colon would break the header.
 */
static bool srv_set_cors_headers(struct srv_config *cfg, const char *value, char *why,
                                 size_t why_len)
{
    char joined[SRV_CORS_HEADERS_BUF];
    size_t o = 0;
    const char *p = value;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        while (len > 0 && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (!srv_header_name_ok(p, len)) {
            snprintf(why, why_len, "expected a comma-separated list of header names such as "
                                   "\"Content-Type, Authorization, traceparent\"");
            return false;
        }
        if (o + len + 3 > sizeof joined) {
            snprintf(why, why_len, "the list is longer than %zu bytes", sizeof joined - 1);
            return false;
        }
        if (o > 0)
            joined[o++] = ',', joined[o++] = ' ';
        memcpy(joined + o, p, len);
        o += len;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    joined[o] = '\0';
    memcpy(cfg->cors_headers, joined, o + 1);
    return true;
}

static bool srv_set_log(struct srv_config *cfg, const char *value, char *why, size_t why_len)
{
    if (strcmp(value, "text") == 0)
        cfg->log = SRV_LOG_TEXT;
    else if (strcmp(value, "json") == 0)
        cfg->log = SRV_LOG_JSON;
    else if (strcmp(value, "off") == 0)
        cfg->log = SRV_LOG_OFF;
    else {
        snprintf(why, why_len, "expected text, json or off");
        return false;
    }
    return true;
}

/* Applies one setting; on failure err names `source` (a flag or a variable). */
static bool srv_apply(struct srv_config *cfg, const struct srv_opt *o, const char *source,
                      const char *value, char *err, size_t err_len)
{
    char why[192] = "";
    bool ok = false;
    switch (o->kind) {
    case OPT_UINT:
    case OPT_SIZE:
        ok = srv_set_number(cfg, o, value, why, sizeof why);
        if (ok && o->offset == offsetof(struct srv_config, threads))
            cfg->threads_given = true;
        break;
    case OPT_BIND:
        ok = srv_set_bind(cfg, value, why, sizeof why);
        break;
    case OPT_CORS:
        ok = srv_set_cors(cfg, value, why, sizeof why);
        break;
    case OPT_CORS_HEADERS:
        ok = srv_set_cors_headers(cfg, value, why, sizeof why);
        break;
    case OPT_LOG:
        ok = srv_set_log(cfg, value, why, sizeof why);
        break;
    case OPT_ADMIN:
        cfg->admin = strcmp(value, "off") != 0;
        ok = !cfg->admin || srv_set_number(cfg, o, value, why, sizeof why);
        break;
    }
    if (!ok) {
        char shown[48];
        srv_printable(shown, sizeof shown, value);
        snprintf(err, err_len, "%s: invalid value \"%s\": %s", source, shown, why);
    }
    return ok;
}

/* The value of NAME in envp, or NULL. */
static const char *srv_env_lookup(char *const envp[], const char *name)
{
    if (envp == NULL)
        return NULL;
    size_t len = strlen(name);
    for (size_t i = 0; envp[i] != NULL; i++)
        if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=')
            return envp[i] + len + 1;
    return NULL;
}

static const struct srv_opt *srv_find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < SRV_N_OPTS; i++)
        if (strlen(srv_opts[i].flag) == len && strncmp(srv_opts[i].flag, name, len) == 0)
            return &srv_opts[i];
    return NULL;
}

/* Variables for settings no flag gave; a flag overrides even a malformed variable. */
static bool srv_apply_env(struct srv_config *cfg, char *const envp[], const bool flagged[],
                          char *err, size_t err_len)
{
    for (size_t i = 0; i < SRV_N_OPTS; i++) {
        if (flagged[i])
            continue;
        const char *v = srv_env_lookup(envp, srv_opts[i].env);
        if (v != NULL && !srv_apply(cfg, &srv_opts[i], srv_opts[i].env, v, err, err_len))
            return false;
    }
    return true;
}

/*
 * Walks argv. Flags are applied after the environment, so argv is read twice: first
 * for the mode (help, version, probe, or an early error) and for which settings have
 * a flag (flagged[], indexed like srv_opts), then (apply) for their values.
 */
static enum srv_mode srv_scan_args(struct srv_config *cfg, int argc, char *const argv[],
                                   bool apply, bool flagged[], char *err, size_t err_len)
{
    enum srv_mode mode = SRV_MODE_RUN;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return SRV_MODE_HELP;
        if (strcmp(a, "--version") == 0)
            return SRV_MODE_VERSION;
        char shown[48];
        srv_printable(shown, sizeof shown, a);
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, err_len, "unexpected argument \"%s\" (see --help)", shown);
            return SRV_MODE_ERROR;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t name_len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        bool is_probe = name_len == 5 && strncmp(name, "probe", 5) == 0;
        const struct srv_opt *o = is_probe ? NULL : srv_find_opt(name, name_len);
        if (!is_probe && o == NULL) {
            snprintf(err, err_len, "unknown option \"%s\" (see --help)", shown);
            return SRV_MODE_ERROR;
        }
        const char *value = eq != NULL ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL) {
            snprintf(err, err_len, "--%s needs a value (see --help)",
                     is_probe ? "probe" : o->flag);
            return SRV_MODE_ERROR;
        }
        if (is_probe) {
            cfg->probe_url = value;
            mode = SRV_MODE_PROBE;
            continue;
        }
        flagged[o - srv_opts] = true;
        char source[32];
        snprintf(source, sizeof source, "--%s", o->flag);
        if (apply && !srv_apply(cfg, o, source, value, err, err_len))
            return SRV_MODE_ERROR;
    }
    return mode;
}

enum srv_mode srv_config_parse(struct srv_config *cfg, int argc, char *const argv[],
                               char *const envp[], unsigned n_cpus, char *err, size_t err_len)
{
    srv_config_defaults(cfg, n_cpus);
    if (err_len > 0)
        err[0] = '\0';
    bool flagged[SRV_N_OPTS] = {false};
    enum srv_mode mode = srv_scan_args(cfg, argc, argv, false, flagged, err, err_len);
    if (mode != SRV_MODE_RUN)
        return mode;
    if (!srv_apply_env(cfg, envp, flagged, err, err_len))
        return SRV_MODE_ERROR;
    return srv_scan_args(cfg, argc, argv, true, flagged, err, err_len);
}

const char *srv_config_usage(void)
{
    return "usage: attnd [options]\n"
           "       attnd --probe http://HOST:PORT/PATH\n"
           "\n"
           "Serves scaled dot-product attention over HTTP, with every step shown.\n"
           "\n"
           "options (flags beat environment variables, which beat defaults):\n"
           "  --bind ADDR         ATTND_BIND         numeric IPv4/IPv6 address (127.0.0.1)\n"
           "  --port N            ATTND_PORT         0..65535; 0 picks a free port (8080)\n"
           "  --threads N         ATTND_THREADS      1..1024 worker threads (the cgroup's CPU\n"
           "                                         quota rounded up, else the CPUs)\n"
           "  --max-body BYTES    ATTND_MAX_BODY     largest request body ("
           API_STR(API_DEFAULT_MAX_BODY) ")\n"
           "  --max-cells N       ATTND_MAX_CELLS    cells of any one matrix ("
           API_STR(API_DEFAULT_MAX_CELLS) ")\n"
           "  --max-work N        ATTND_MAX_WORK     multiply-adds of one request's products,\n"
           "                                         n_q*n_k*(d_k+d_v) over heads and items\n"
           "                                         (" API_STR(API_DEFAULT_MAX_WORK) ")\n"
           "  --max-batch N       ATTND_MAX_BATCH    items of one batch, 1..4096 ("
           API_STR(API_DEFAULT_MAX_BATCH) ")\n"
           "  --max-request-bytes BYTES  ATTND_MAX_REQUEST_BYTES\n"
           "                                         what one request may hold at once: body,\n"
           "                                         every matrix and the answer; 0 is 512 MiB\n"
           "                                         or the memory budget if smaller (0)\n"
           "  --max-memory BYTES  ATTND_MAX_MEMORY   memory requests may hold at once; 0 is\n"
           "                                         2/3 of the cgroup's or machine's (0)\n"
           "  --timeout S         ATTND_TIMEOUT      idle connection timeout, 1..86400 (30)\n"
           "  --request-timeout S ATTND_REQUEST_TIMEOUT\n"
           "                                         a body within S of its headers, the\n"
           "                                         headers within S/4 after up to\n"
           "                                         --timeout of silence (60)\n"
           "  --max-connections N ATTND_MAX_CONNECTIONS\n"
           "                                         served at once; past them a 503 (2048)\n"
           "  --max-client-connections N\n"
           "                      ATTND_MAX_CLIENT_CONNECTIONS\n"
           "                                         of them from one client (IPv6: a /64);\n"
           "                                         0 = no limit, behind a load balancer\n"
           "                                         (256)\n"
           "  --lane-queue N      ATTND_LANE_QUEUE   large requests waiting for a thread,\n"
           "                                         half of them from one client at most;\n"
           "                                         past them a 503 (64)\n"
           "  --lane-wait S       ATTND_LANE_WAIT    seconds a large request may wait for a\n"
           "                                         thread; past them a 503 (30)\n"
           "  --admin-port N      ATTND_ADMIN_PORT   /healthz, /readyz and /metrics on a\n"
           "                                         listener of their own; 0 picks a free\n"
           "                                         port (off)\n"
           "  --cors-origin LIST  ATTND_CORS_ORIGIN  * or comma-separated origins (*)\n"
           "  --cors-headers LIST ATTND_CORS_HEADERS\n"
           "                                         request headers a cross-origin script\n"
           "                                         may send, comma-separated (Content-Type,\n"
           "                                         Accept, X-Request-Id, Authorization,\n"
           "                                         traceparent, tracestate, Content-Encoding,\n"
           "                                         Inference-Header-Content-Length)\n"
           "  --log FORMAT        ATTND_LOG          access log on stderr: text, json, off "
           "(text)\n"
           "  --probe URL         GET URL once; exit 0 on a 2xx status, 1 otherwise\n"
           "  --help              this text\n"
           "  --version           the version and build\n"
           "\n"
           "Both \"--port 8080\" and \"--port=8080\" work. A bad value exits with status 2.\n"
           "SIGTERM, SIGINT or SIGHUP: stop accepting, finish requests in flight, exit 0.\n"
           "SIGUSR1 and SIGUSR2 are ignored.\n";
}
