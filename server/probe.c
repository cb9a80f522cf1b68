/*
 * server/probe.c — the built-in health probe (see probe.h).
 *
 * One deadline (SRV_PROBE_TIMEOUT_MS) covers connect, send and the status line, so a
 * server that accepts and then says nothing fails the probe instead of hanging it.
 * Sockets are non-blocking and every wait is a poll() bounded by what is left.
 * Only the status line is read: the body of /healthz does not matter here.
 */
#include "server/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct srv_url {
    char host[256]; /* without brackets for IPv6 */
    char port[6];
    char path[1024];
    bool bracketed;
};

static bool srv_url_parse(const char *url, struct srv_url *u, const char **why)
{
    memset(u, 0, sizeof *u);
    if (strncmp(url, "http://", 7) != 0) {
        *why = "only http:// URLs are supported";
        return false;
    }
    const char *p = url + 7;
    const char *host_end;
    if (*p == '[') {
        host_end = strchr(p, ']');
        if (host_end == NULL) {
            *why = "unclosed [ in the host";
            return false;
        }
        p++;
        u->bracketed = true;
    } else {
        host_end = p + strcspn(p, ":/");
    }
    size_t host_len = (size_t)(host_end - p);
    if (host_len == 0 || host_len >= sizeof u->host) {
        *why = "no host, or a host that is too long";
        return false;
    }
    memcpy(u->host, p, host_len);
    p = host_end + (u->bracketed ? 1 : 0);
    snprintf(u->port, sizeof u->port, "80");
    if (*p == ':') {
        size_t n = strspn(p + 1, "0123456789");
        if (n == 0 || n >= sizeof u->port || (p[1 + n] != '/' && p[1 + n] != '\0')) {
            *why = "the port is not a number from 1 to 65535";
            return false;
        }
        memcpy(u->port, p + 1, n);
        u->port[n] = '\0';
        long port = strtol(u->port, NULL, 10); /* digits only, at most 5 of them */
        if (port < 1 || port > 65535) {
            *why = "the port is not a number from 1 to 65535";
            return false;
        }
        p += 1 + n;
    }
    const char *path = *p == '\0' ? "/" : p;
    if (strlen(path) >= sizeof u->path || strcspn(path, " \t\r\n") != strlen(path)) {
        *why = "the path is too long or holds spaces or line breaks";
        return false;
    }
    snprintf(u->path, sizeof u->path, "%s", path);
    return true;
}

static long srv_ms_left(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (long)(deadline->tv_sec - now.tv_sec) * 1000 +
              (deadline->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? ms : 0;
}

/* Waits for `events` on fd until the deadline; false on timeout or error. */
static bool srv_wait(int fd, short events, const struct timespec *deadline)
{
    for (;;) {
        long left = srv_ms_left(deadline);
        if (left == 0)
            return false;
        struct pollfd pfd = {fd, events, 0};
        int n = poll(&pfd, 1, (int)left);
        if (n > 0)
            return true;
        if (n == 0 || errno != EINTR)
            return false;
    }
}

/* A connected non-blocking socket to the first address that answers, or -1. */
static int srv_connect(const struct srv_url *u, const struct timespec *deadline,
                       const char **why)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(u->host, u->port, &hints, &res) != 0) {
        *why = "cannot resolve the host";
        return -1;
    }
    int fd = -1;
    *why = "connection refused";
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        int err = rc == 0 ? 0 : errno;
        if (err == EINPROGRESS) {
            socklen_t len = sizeof err;
            if (!srv_wait(fd, POLLOUT, deadline)) {
                err = ETIMEDOUT;
                *why = "timed out connecting";
            } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
                err = errno;
            }
        }
        if (err != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

static bool srv_send_all(int fd, const char *buf, size_t len, const struct timespec *deadline)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        } else if (!srv_wait(fd, POLLOUT, deadline)) {
            return false;
        }
    }
    return true;
}

/* Reads until the status line is complete; its code, or -1. */
static int srv_read_status(int fd, const struct timespec *deadline)
{
    char buf[256];
    size_t have = 0;
    while (have < sizeof buf - 1 && memchr(buf, '\n', have) == NULL) {
        if (!srv_wait(fd, POLLIN, deadline))
            return -1;
        ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (n == 0)
            break;
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (n > 0)
            have += (size_t)n;
    }
    buf[have] = '\0';
    int code = -1;
    /* "HTTP/1.1 200 OK": the version, one space, three digits. */
    if (strncmp(buf, "HTTP/1.", 7) == 0 && buf[8] == ' ' && sscanf(buf + 9, "%3d", &code) != 1)
        code = -1;
    return code;
}

int srv_probe(const char *url)
{
    struct srv_url u;
    const char *why = NULL;
    if (!srv_url_parse(url, &u, &why)) {
        fprintf(stderr, "attnd: probe %s: %s\n", url, why);
        return 1;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += SRV_PROBE_TIMEOUT_MS / 1000;
    int fd = srv_connect(&u, &deadline, &why);
    if (fd < 0) {
        fprintf(stderr, "attnd: probe %s: %s\n", url, why);
        return 1;
    }
    char req[1400];
    snprintf(req, sizeof req,
             "GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: attnd-probe\r\n"
             "Accept: */*\r\nConnection: close\r\n\r\n",
             u.path, u.bracketed ? "[" : "", u.host, u.bracketed ? "]" : "", u.port);
    int code = srv_send_all(fd, req, strlen(req), &deadline) ? srv_read_status(fd, &deadline)
                                                             : -1;
    close(fd);
    if (code >= 200 && code <= 299)
        return 0;
    if (code < 0)
        fprintf(stderr, "attnd: probe %s: no HTTP answer within %d ms\n", url,
                SRV_PROBE_TIMEOUT_MS);
    else
        fprintf(stderr, "attnd: probe %s: status %d\n", url, code);
    return 1;
}
