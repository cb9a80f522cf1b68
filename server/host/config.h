/*
 * server/host/config.h — attnd's settings: command-line flags over environment over defaults.
 *
 * Parsing is a pure function of (argv, envp): it reads no global state, prints nothing
 * and never exits, so it is tested without starting a server. main.c prints the usage,
 * the version or the error message and picks the exit status.
 *
 * Not here: the daemon itself, logging, anything that touches a socket.
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define SRV_CORS_MAX_ORIGINS 32
#define SRV_CORS_BUF 2048
#define SRV_BIND_BUF 64
#define SRV_CORS_HEADERS_BUF 1024
/*
 * The request headers a cross-origin script may send (--cors-headers). Beyond attnd's
 * own: Authorization, for an auth proxy in front; traceparent and tracestate, which
 * OpenTelemetry's browser instrumentation adds to every fetch; Content-Encoding, for a
 * gzip body; Inference-Header-Content-Length, for V2's binary tensors.
 */
#define SRV_CORS_DEFAULT_HEADERS "Content-Type, Accept, X-Request-Id, Authorization, " \
                                 "traceparent, tracestate, Content-Encoding, "         \
                                 "Inference-Header-Content-Length"

enum srv_log_format { SRV_LOG_TEXT, SRV_LOG_JSON, SRV_LOG_OFF };

/* What the command line asks for. */
enum srv_mode {
    SRV_MODE_RUN,     /* serve */
    SRV_MODE_HELP,    /* print srv_config_usage to stdout, exit 0 */
    SRV_MODE_VERSION, /* print the version line, exit 0 */
    SRV_MODE_PROBE,   /* GET probe_url once, exit 0 on 2xx */
    SRV_MODE_ERROR    /* bad flag or value: print the message, exit 2 */
};

struct srv_config {
    char bind[SRV_BIND_BUF];       /* numeric IPv4 or IPv6 address, e.g. "127.0.0.1" */
    bool bind_ipv6;                /* bind holds an IPv6 literal */
    unsigned port;                 /* 0..65535; 0 = let the kernel pick */
    unsigned threads;              /* MHD worker threads, 1..1024 */
    bool threads_given;            /* by --threads or ATTND_THREADS, not the default */
    size_t max_body;               /* bytes of one request body */
    size_t max_cells;              /* cells of any one matrix */
    size_t max_work;               /* multiply-adds of one request */
    size_t max_batch;              /* items of one batch */
    size_t max_request_bytes;      /* bytes one request may hold, answer included; 0 = default */
    size_t max_memory;             /* bytes requests may hold at once; 0 = the default */
    unsigned timeout;              /* idle connection timeout, seconds */
    unsigned request_timeout;      /* a request's headers and body, seconds (server/net/conns.h) */
    unsigned max_connections;      /* connections served at once on the data port */
    unsigned max_client_connections; /* of them, from one client; 0 = no limit */
    unsigned lane_queue;           /* large requests waiting at most (server/lane/lane.h) */
    unsigned lane_wait;            /* seconds a large request may wait for a lane thread */
    bool admin;                    /* --admin-port given (and not "off") */
    unsigned admin_port;           /* the admin listener's port; 0 = pick a free one */
    bool cors_any;                 /* --cors-origin "*" */
    char cors_buf[SRV_CORS_BUF];   /* the origin list, NUL-separated; cors_origins point here */
    const char *cors_origins[SRV_CORS_MAX_ORIGINS];
    size_t n_cors_origins;
    char cors_headers[SRV_CORS_HEADERS_BUF]; /* Access-Control-Allow-Headers: "A, B, C" */
    enum srv_log_format log;
    const char *probe_url;         /* borrowed from argv, SRV_MODE_PROBE only */
};

/* The contract's defaults; threads is the caller's count of usable CPUs (server/host/cpus.h). */
void srv_config_defaults(struct srv_config *cfg, unsigned n_cpus);

/*
 * Fills *cfg from defaults, then envp (NULL-terminated "NAME=value" strings, may be
 * NULL), then argv[1..argc-1]. On SRV_MODE_ERROR, err holds one line naming the flag
 * or variable, the value and what is allowed. --probe skips the environment: a health
 * check must not fail because of a setting it does not use.
 */
enum srv_mode srv_config_parse(struct srv_config *cfg, int argc, char *const argv[],
                               char *const envp[], unsigned n_cpus, char *err, size_t err_len);

/* The --help text. */
const char *srv_config_usage(void);

#endif
