/*
 * server/ops/log.c — access log and server messages on stderr (see log.h).
 *
 * Lines are built in a stack buffer and written with one write(2): stdio would be
 * atomic per call only by accident of its locking, and a line split across two
 * writes can interleave with another thread's line. Client-controlled strings are
 * cut to a fixed length first, so every line fits in PIPE_BUF (4096) bytes.
 *
 * Not here: JSON libraries (the escaper below is all the server needs), and deciding
 * which bytes are UTF-8 (api/json/utf8.h, the rule every JSON answer follows too).
 */
#include "server/ops/log.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/json/utf8.h"

#define SRV_LOG_LINE 4096
#define SRV_LOG_MAX_PATH 480  /* raw bytes of a path kept; each may grow to 6 escaped */
#define SRV_LOG_MAX_FIELD 128 /* method, request id */

static enum srv_log_format srv_log_format = SRV_LOG_TEXT;

void srv_log_init(enum srv_log_format format)
{
    srv_log_format = format;
}

/* One whole line to stderr; a short write (signal, full pipe) is finished, not dropped. */
static void srv_log_write(const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, line, len);
        if (n <= 0)
            return; /* stderr is gone: there is nobody left to tell */
        line += n;
        len -= (size_t)n;
    }
}

/* "2024-05-01T12:34:56.789Z" */
static void srv_iso_time(char *out, size_t out_len, struct timespec ts)
{
    struct tm tm;
    time_t secs = ts.tv_sec;
    if (gmtime_r(&secs, &tm) == NULL) {
        snprintf(out, out_len, "1970-01-01T00:00:00.000Z");
        return;
    }
    char date[24];
    if (strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        date[0] = '\0';
    unsigned ms = (unsigned)(ts.tv_nsec / 1000000) % 1000u;
    snprintf(out, out_len, "%.19s.%03uZ", date, ms);
}

/*
 * Valid characters a log reader should still not see raw: the C1 controls (a terminal
 * may act on them), the bidirectional controls (U+202E turns the rest of a line around,
 * so a path could make a log line read as something else: "Trojan Source") and the
 * line and paragraph separators (some viewers break the line there).
 */
static bool srv_log_must_escape(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t srv_json_escape(char *out, size_t out_len, const char *s, size_t max_in)
{
    size_t o = 0;
    size_t in_len = strnlen(s, max_in);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < in_len;) {
        char esc[8];
        uint32_t cp = 0;
        const char *piece = esc;
        size_t piece_len;
        unsigned char c = u[i];
        size_t take = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, piece_len = 2;
        } else if (c < 0x20 || c == 0x7f) {
            piece_len = (size_t)snprintf(esc, sizeof esc, "\\u%04x", c);
        } else if (c < 0x80) {
            esc[0] = (char)c, piece_len = 1;
        } else if ((take = api_utf8_decode(u + i, in_len - i, &cp)) > 0) {
            if (srv_log_must_escape(cp)) /* all below U+10000: one \uXXXX */
                piece_len = (size_t)snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            else
                piece = s + i, piece_len = take;
        } else {
            take = 1;
            piece = "\\ufffd", piece_len = 6;
        }
        if (o + piece_len + 1 > out_len)
            break;
        memcpy(out + o, piece, piece_len);
        o += piece_len;
        i += take;
    }
    out[o] = '\0';
    return o;
}

/* Text format: bytes a terminal or a log parser could misread become \xHH. */
static size_t srv_text_escape(char *out, size_t out_len, const char *s, size_t max_in)
{
    size_t o = 0;
    size_t in_len = strnlen(s, max_in);
    for (size_t i = 0; i < in_len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[5];
        size_t n = 1;
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\')
            n = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
        else
            esc[0] = (char)c;
        if (o + n + 1 > out_len)
            break;
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
    return o;
}

void srv_log_access(const struct srv_access *a)
{
    if (srv_log_format == SRV_LOG_OFF)
        return;
    char when[40];
    srv_iso_time(when, sizeof when, a->started);
    bool json = srv_log_format == SRV_LOG_JSON;
    size_t (*esc)(char *, size_t, const char *, size_t) =
        json ? srv_json_escape : srv_text_escape;
    char id[SRV_LOG_MAX_FIELD * 6 + 1], method[SRV_LOG_MAX_FIELD * 6 + 1];
    char path[SRV_LOG_MAX_PATH * 6 + 1];
    esc(id, sizeof id, a->id != NULL ? a->id : "-", SRV_LOG_MAX_FIELD);
    esc(method, sizeof method, a->method != NULL ? a->method : "-", SRV_LOG_MAX_FIELD);
    esc(path, sizeof path, a->path != NULL ? a->path : "-", SRV_LOG_MAX_PATH);
    /* The traceparent was checked (server/net/trace.h): hex and dashes, nothing to escape. */
    char trace[SRV_LOG_MAX_FIELD];
    trace[0] = '\0';
    if (a->trace != NULL && a->trace[0] != '\0')
        snprintf(trace, sizeof trace, json ? ",\"traceparent\":\"%.55s\"" : " traceparent=%.55s",
                 a->trace);
    char line[SRV_LOG_LINE];
    int n;
    if (json)
        n = snprintf(line, sizeof line,
                     "{\"time\":\"%s\",\"id\":\"%s\",\"method\":\"%s\",\"path\":\"%s\","
                     "\"status\":%d,\"bytes\":%llu,\"duration_ms\":%.3f%s%s}\n",
                     when, id, method, path, a->status, a->bytes, a->duration_ms,
                     a->cut ? ",\"outcome\":\"cut\"" : "", trace);
    else
        n = snprintf(line, sizeof line,
                     "%s id=%s method=%s path=%s status=%d bytes=%llu duration_ms=%.3f%s%s\n",
                     when, id, method, path, a->status, a->bytes, a->duration_ms,
                     a->cut ? " outcome=cut" : "", trace);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line) { /* cannot happen with the caps above; stay one line */
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    srv_log_write(line, (size_t)n);
}

void srv_log_listening(const char *who, const char *url)
{
    if (srv_log_format != SRV_LOG_JSON) {
        printf("%s listening on %s\n", who, url);
        fflush(stdout);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char when[40], w[64], u[256];
    srv_iso_time(when, sizeof when, now);
    srv_json_escape(w, sizeof w, who, 32);
    srv_json_escape(u, sizeof u, url, 128);
    printf("{\"time\":\"%s\",\"level\":\"info\",\"message\":\"%s listening on %s\","
           "\"url\":\"%s\"}\n", when, w, u, u);
    fflush(stdout);
}

static void srv_log_vmessage(const char *level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void srv_log_vmessage(const char *level, const char *fmt, va_list ap)
{
    if (srv_log_format == SRV_LOG_OFF)
        return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t len = strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
        msg[--len] = '\0'; /* libmicrohttpd ends its messages with a newline */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char when[40];
    srv_iso_time(when, sizeof when, now);
    char line[SRV_LOG_LINE];
    int n;
    if (srv_log_format == SRV_LOG_JSON) {
        char esc[sizeof msg * 2];
        srv_json_escape(esc, sizeof esc, msg, sizeof msg);
        n = snprintf(line, sizeof line, "{\"time\":\"%s\",\"level\":\"%s\",\"message\":\"%s\"}\n",
                     when, level, esc);
    } else {
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)msg[i] < 0x20)
                msg[i] = ' '; /* one message, one line */
        n = snprintf(line, sizeof line, "%s level=%s %s\n", when, level, msg);
    }
    if (n > 0)
        srv_log_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void srv_log_message(const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    srv_log_vmessage(level, fmt, ap);
    va_end(ap);
}

/*
 * libmicrohttpd writes a line for each connection that fails, and any client can make
 * connections fail ("Socket has been disconnected when reading request": one a
 * connection reset mid-request, or cut by a deadline, server/net/conns.h). A flood of them
 * must not fill the log, or the disk under it, so at most SRV_LOG_MHD_PER_SECOND of its
 * lines are written each second; the first one written after some were dropped is
 * preceded by a line that counts them.
 */
#define SRV_LOG_MHD_PER_SECOND 10

static pthread_mutex_t srv_log_mhd_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t srv_log_mhd_second;      /* the window, CLOCK_MONOTONIC seconds */
static unsigned srv_log_mhd_written;   /* lines written in it */
static unsigned long srv_log_mhd_dropped; /* lines dropped since the last one written */

void srv_log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned long dropped = 0;
    pthread_mutex_lock(&srv_log_mhd_lock);
    if (now.tv_sec != srv_log_mhd_second) {
        srv_log_mhd_second = now.tv_sec;
        srv_log_mhd_written = 0;
    }
    bool write = srv_log_mhd_written < SRV_LOG_MHD_PER_SECOND;
    if (write) {
        srv_log_mhd_written++;
        dropped = srv_log_mhd_dropped;
        srv_log_mhd_dropped = 0;
    } else {
        srv_log_mhd_dropped++;
    }
    pthread_mutex_unlock(&srv_log_mhd_lock);
    if (!write)
        return;
    if (dropped > 0)
        srv_log_message("warn", "%lu more libmicrohttpd messages were not logged (at most %d "
                        "a second)", dropped, SRV_LOG_MHD_PER_SECOND);
    srv_log_vmessage("error", fmt, ap);
}
