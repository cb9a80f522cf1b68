/*
 * server/ops/log.h — the access log and the server's own messages, on stderr.
 *
 * One line per request, written whole with a single write(2) so lines from many
 * threads never interleave (each line stays under PIPE_BUF). Formats: text
 * (key=value), json (one object per line), off. An answer that was queued but not
 * all sent (the client stopped reading, --timeout cut it) ends with outcome=cut
 * ("outcome":"cut"), its bytes what is known to have been sent. A valid traceparent
 * (server/net/trace.h) ends the line (traceparent=..., "traceparent":"..."). Client text
 * (method, path, id) is escaped before it is written: a path cannot forge a log line,
 * nor turn one around with bidirectional controls.
 *
 * Not here: deciding what to log (daemon.c), metrics.
 */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "server/host/config.h"

/* Sets the format for every later line. Call once, before any thread starts. */
void srv_log_init(enum srv_log_format format);

/* One finished request. Every pointer is borrowed. */
struct srv_access {
    struct timespec started;   /* CLOCK_REALTIME when the request's headers were read */
    const char *id;            /* X-Request-Id as sent back */
    const char *trace;         /* a valid traceparent (server/net/trace.h), "" or NULL: none */
    const char *method;
    const char *path;
    int status;                /* 0 when no response was queued (client gone, timeout) */
    unsigned long long bytes;  /* body bytes of the response (0 for HEAD); when cut, the
                                  bytes known to have been sent (a lower bound) */
    bool cut;                  /* queued but not all sent: written as outcome=cut */
    double duration_ms;
};

void srv_log_access(const struct srv_access *a);

/*
 * "attnd listening on URL" (who = "attnd", or "attnd admin") on stdout, where tests and
 * supervisors wait for it: plain text, or under --log json one JSON object with the
 * time, level, message and url, so that a log collector reading both streams never
 * meets a line that is not JSON.
 */
void srv_log_listening(const char *who, const char *url);

/* A server message ("listening failed: ..."), in the access log's format; not when off. */
void srv_log_message(const char *level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * libmicrohttpd's logger (MHD_OPTION_EXTERNAL_LOGGER): its messages as "error" lines, at
 * most ten a second (the rest counted in a "warn" line before the next one written).
 */
void srv_log_mhd(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/*
 * Writes s (at most max_in bytes of it) into out as the body of a JSON string:
 * quotes, backslashes and control bytes escaped, invalid UTF-8 replaced by U+FFFD.
 * Returns the bytes written, excluding the NUL; out_len must be at least 1.
 */
size_t srv_json_escape(char *out, size_t out_len, const char *s, size_t max_in);

#endif
