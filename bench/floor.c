/*
 * bench/floor.c — the floor under attnd's HTTP numbers: libmicrohttpd doing nothing.
 *
 *   floor fixed  PORT          answers every request with a fixed 16-byte JSON reply
 *   floor replay PORT FILE     answers every request with FILE's bytes (attnd's real
 *                              response to the payload being measured)
 *   floor replay-v2 PORT FILE HLEN
 *                              the same for a V2 binary answer: FILE's bytes as
 *                              application/octet-stream with
 *                              Inference-Header-Content-Length: HLEN, the headers
 *                              attnd sends with it
 *
 * PORT 0 picks a free port. Either way it prints "floor listening on port N" and
 * serves until SIGTERM or SIGINT.
 *
 * The daemon is set up as server/daemon.c sets up attnd: internal polling threads with
 * poll(), a pool of one worker per CPU, the same connection limit, per-connection
 * memory and idle timeout. A request body is read and thrown away as it arrives
 * (attnd keeps it: that copy is part of what the floor leaves out). One response
 * object, made at start, is queued for every request: no allocation, no copy, no
 * JSON. Whatever attnd spends above this is its own.
 *
 * Not here: routing, parsing, errors, logging. Not a server for anything but a bench.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#define FLOOR_CONNECTION_LIMIT 512u                    /* as server/daemon.c */
#define FLOOR_CONNECTION_MEMORY ((size_t)64 * 1024)    /* as server/daemon.c */
#define FLOOR_TIMEOUT 30u                              /* attnd's --timeout default */

static const char FIXED_REPLY[] = "{\"status\":\"ok\"}\n";

static struct MHD_Response *g_reply; /* queued for every request; freed at exit */

/* Called several times per request: first the headers, then each piece of the body, then once more. */
static enum MHD_Result floor_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                        const char *method, const char *version,
                                        const char *upload_data, size_t *upload_data_size,
                                        void **req_cls)
{
    static int seen; /* any non-NULL marker: "headers already seen" */
    (void)cls, (void)url, (void)method, (void)version, (void)upload_data;
    if (*req_cls == NULL) {
        *req_cls = &seen; /* never answer on the first call */
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* consumed: dropped */
        return MHD_YES;
    }
    return MHD_queue_response(conn, MHD_HTTP_OK, g_reply);
}

/* The whole file in one malloc'd block; NULL with a message on failure. */
static char *floor_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : (size_t)1 << 20;
            char *tmp = realloc(buf, ncap); /* into a temporary: buf survives a failure */
            if (tmp == NULL) {
                fprintf(stderr, "floor: %s: out of memory\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = tmp, cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "floor: %s: read error\n", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int floor_usage(void)
{
    fprintf(stderr, "usage: floor fixed PORT | floor replay PORT FILE | floor replay-v2 PORT FILE HLEN\n");
    return 2;
}

/* A V2 binary answer's header length, as it goes on the wire; NULL if s is not one. */
static const char *floor_header_length(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || end == s || s[0] == '-' || n == 0) {
        fprintf(stderr, "floor: HLEN must be a byte count, not %s\n", s);
        return NULL;
    }
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return floor_usage();
    char *end;
    errno = 0;
    long port = strtol(argv[2], &end, 10);
    if (errno != 0 || *end != '\0' || end == argv[2] || port < 0 || port > 65535) {
        fprintf(stderr, "floor: PORT must be 0..65535, not %s\n", argv[2]);
        return 2;
    }

    char *body = NULL; /* replay only; outlives the daemon */
    const char *type = "application/json";
    const char *header_length = NULL; /* replay-v2 only */
    if (strcmp(argv[1], "fixed") == 0 && argc == 3) {
        g_reply = MHD_create_response_from_buffer(sizeof FIXED_REPLY - 1, (void *)FIXED_REPLY,
                                                  MHD_RESPMEM_PERSISTENT);
    } else if ((strcmp(argv[1], "replay") == 0 && argc == 4) ||
               (strcmp(argv[1], "replay-v2") == 0 && argc == 5)) {
        if (argc == 5) {
            header_length = floor_header_length(argv[4]);
            if (header_length == NULL)
                return 2;
            type = "application/octet-stream";
        }
        size_t len = 0;
        body = floor_read_file(argv[3], &len);
        if (body == NULL)
            return 1;
        g_reply = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
    } else {
        return floor_usage();
    }
    if (g_reply == NULL ||
        MHD_add_response_header(g_reply, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
        (header_length != NULL &&
         MHD_add_response_header(g_reply, "Inference-Header-Content-Length", header_length) != MHD_YES)) {
        fprintf(stderr, "floor: cannot build the response\n");
        return 1;
    }

    /* Block the stop signals before MHD starts its threads, so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = cpus > 1 ? (unsigned)cpus : 1u;
    struct MHD_OptionItem pool[] = {
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, floor_on_request, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, FLOOR_TIMEOUT,
        MHD_OPTION_CONNECTION_LIMIT, FLOOR_CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, FLOOR_CONNECTION_MEMORY,
        MHD_OPTION_ARRAY, pool,
        MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "floor: cannot listen on port %ld\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("floor listening on port %u\n", info != NULL ? (unsigned)info->port : (unsigned)port);
    fflush(stdout);

    int sig;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    MHD_destroy_response(g_reply);
    free(body);
    return 0;
}
