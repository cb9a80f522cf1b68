/*
 * server/net/conns.c — the connection registry, its reaper and the per-client counts
 * (see conns.h).
 *
 * Every entry comes from a pool sized to libmicrohttpd's own connection limit,
 * allocated once at start: libmicrohttpd announces a connection only after counting
 * it and retires it before uncounting it, so the pool cannot run dry, and a new
 * connection costs no allocation (an allocation that could fail would leave a
 * connection without a deadline). The client counts (server/net/clients.c) are sized
 * for as many clients as there are entries, so they never fill either.
 *
 * Locking: one mutex over everything here. The workers take it a few times per
 * connection and per request, for a handful of stores; the reaper takes it to scan
 * the pool a few times a second, and it is what makes its shutdown(2) safe (conns.h).
 */
#include "server/net/conns.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/host/clock.h"
#include "server/net/clients.h"
#include "server/ops/log.h"
#include "server/ops/metrics.h"
#include "server/ops/words.h"

#define SRV_CONNS_TICK_MS 200        /* how often the reaper looks: deadlines are this coarse */
#define SRV_CONNS_LOG_EVERY_MS 10000 /* one log line at most this often, however many closed */
#define SRV_CONNS_NONE UINT32_MAX

enum srv_conn_phase { SRV_CONN_WAITING, SRV_CONN_BODY, SRV_CONN_ANSWERING };

struct srv_conn {
    struct srv_conns *owner;   /* the registry whose pool holds it */
    int fd;                    /* libmicrohttpd's socket; shut down, never closed, here */
    bool in_use;
    bool shut;                 /* shut down by the reaper: once is enough */
    bool counted;              /* holds a slot and a share of its client's count */
    const char *refused;       /* NULL, or the detail of the 503 it is to get */
    enum srv_conn_phase phase;
    int64_t deadline_ms;       /* CLOCK_MONOTONIC; 0 = none */
    unsigned char client[SRV_CLIENT_KEY]; /* the client's key: srv_clients_key */
    uint32_t next_free;        /* free list, while !in_use */
};

struct srv_conns {
    struct srv_conns_limits lim;
    int64_t waiting_ms, body_ms;
    pthread_mutex_t lock;
    pthread_cond_t wake;       /* on CLOCK_MONOTONIC; signalled to stop the reaper */
    pthread_t reaper;
    bool stopping;
    struct srv_conn *pool;     /* (n_pool) entries, owned */
    uint32_t n_pool, free_head;
    unsigned admitted;         /* connections holding a slot */
    struct srv_clients clients; /* admitted connections by client (server/net/clients.h) */
    unsigned long closed_headers, closed_body, closed_refused; /* since the last log line */
    int64_t logged_ms;
};

unsigned srv_conns_hard_limit(unsigned slots)
{
    return slots + (slots + 3) / 4;
}

bool srv_conns_fit_fds(struct srv_conns_limits *limits, unsigned reserve)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return true; /* nothing to go by: libmicrohttpd will say if accept fails */
    rlim_t need = (rlim_t)srv_conns_hard_limit(limits->slots) + reserve;
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < need) {
        /* Only as many as needed: a library that still uses select() breaks past 1024. */
        struct rlimit raised = {need, r.rlim_max};
        if (r.rlim_max != RLIM_INFINITY && r.rlim_max < need)
            raised.rlim_cur = r.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            r.rlim_cur = raised.rlim_cur;
    }
    if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= need)
        return true;
    unsigned room = r.rlim_cur > reserve ? (unsigned)(r.rlim_cur - reserve) : 2;
    unsigned slots = room;
    while (slots > 1 && srv_conns_hard_limit(slots) > room)
        slots--;
    srv_log_message("warn", "RLIMIT_NOFILE allows %llu open files: serving %u connections at "
                    "once instead of --max-connections %u (raise the limit, e.g. ulimit -n)",
                    (unsigned long long)r.rlim_cur, slots, limits->slots);
    limits->slots = slots;
    return false;
}

/* ---- the reaper ---- */
/* The data port's connections are counted for /metrics; the admin port's are not. */
static void srv_conns_count(const struct srv_conns *c, enum srv_metrics_conn what)
{
    if (!c->lim.admin)
        srv_metrics_connection(what);
}


/* Shuts down every connection past its deadline; the caller holds the lock. */
static void srv_conns_reap_once(struct srv_conns *c, int64_t now)
{
    for (uint32_t i = 0; i < c->n_pool; i++) {
        struct srv_conn *e = &c->pool[i];
        if (!e->in_use || e->shut || e->deadline_ms == 0 || now < e->deadline_ms)
            continue;
        shutdown(e->fd, SHUT_RDWR); /* libmicrohttpd reads the end and closes it */
        e->shut = true;
        if (e->refused != NULL) {
            c->closed_refused++;
            srv_conns_count(c, SRV_METRICS_CONN_LATE_REFUSED);
        } else if (e->phase == SRV_CONN_BODY) {
            c->closed_body++;
            srv_conns_count(c, SRV_METRICS_CONN_LATE_BODY);
        } else {
            c->closed_headers++;
            srv_conns_count(c, SRV_METRICS_CONN_LATE_HEADERS);
        }
    }
}

static void *srv_conns_reaper(void *arg)
{
    struct srv_conns *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        struct timespec until = srv_clock_after_ms(SRV_CONNS_TICK_MS);
        pthread_cond_timedwait(&c->wake, &c->lock, &until);
        if (c->stopping)
            break;
        int64_t now = srv_clock_ms();
        srv_conns_reap_once(c, now);
        unsigned long h = c->closed_headers, b = c->closed_body, r = c->closed_refused;
        if (h + b + r == 0 || now - c->logged_ms < SRV_CONNS_LOG_EVERY_MS)
            continue;
        c->closed_headers = c->closed_body = c->closed_refused = 0;
        c->logged_ms = now;
        pthread_mutex_unlock(&c->lock); /* the log's write must not hold up the workers */
        srv_log_message("warn", "closed %s connections past their deadline: %lu sending "
                        "headers, %lu sending a body (--request-timeout), %lu refused "
                        "ones that sent no request", c->lim.admin ? "admin port" : "data port",
                        h, b, r);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* ---- lifecycle ---- */

static void srv_conns_free(struct srv_conns *c)
{
    free(c->pool);
    srv_clients_deinit(&c->clients);
    free(c);
}

struct srv_conns *srv_conns_start(const struct srv_conns_limits *limits)
{
    struct srv_conns *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->lim = *limits;
    /* The headers get a quarter of the request's time, after the allowed silence. */
    c->body_ms = (int64_t)limits->request_s * 1000;
    c->waiting_ms = (int64_t)limits->idle_s * 1000 + c->body_ms / 4;
    c->n_pool = srv_conns_hard_limit(limits->slots);
    c->pool = calloc(c->n_pool, sizeof *c->pool);
    /* Seeded so that a client cannot choose addresses that collide. */
    uint64_t seed = (uint64_t)srv_clock_ms() * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
    bool ok = srv_clients_init(&c->clients, c->n_pool, seed) && c->pool != NULL;
    pthread_condattr_t ca;
    if (!ok || pthread_condattr_init(&ca) != 0) {
        srv_conns_free(c);
        return NULL;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->lock, NULL);
    for (uint32_t i = 0; i < c->n_pool; i++)
        c->pool[i].next_free = i + 1 < c->n_pool ? i + 1 : SRV_CONNS_NONE;
    c->free_head = 0;
    if (pthread_create(&c->reaper, NULL, srv_conns_reaper, c) != 0) {
        pthread_cond_destroy(&c->wake);
        pthread_mutex_destroy(&c->lock);
        srv_conns_free(c);
        return NULL;
    }
    return c;
}

void srv_conns_stop(struct srv_conns *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->reaper, NULL);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    srv_conns_free(c);
}

/* ---- libmicrohttpd's notifications ---- */

static struct srv_conn *srv_conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i != NULL ? i->socket_context : NULL;
}

/* Whether a new connection of client key is served or refused, and why. */
static const char *srv_conns_judge(const struct srv_conns *c,
                                   const unsigned char key[SRV_CLIENT_KEY])
{
    if (c->admitted >= c->lim.slots)
        return c->lim.admin
                   ? SRV_N("every connection the admin port takes is in use: retry after "
                           "the Retry-After seconds")
                   : SRV_N("every connection this server takes is in use (--max-connections): "
                           "retry after the Retry-After seconds, or on another replica");
    if (c->lim.per_client > 0 && srv_clients_count(&c->clients, key) >= c->lim.per_client)
        return c->lim.admin
                   ? SRV_N("this client has as many connections open to the admin port as it "
                           "allows one client: send the next probe on one of them, or close one")
                   : SRV_N("this client has as many connections open as the server allows one "
                           "client (--max-client-connections): send the next request on one of "
                           "them");
    return NULL;
}


static void srv_conns_opened(struct srv_conns *c, struct MHD_Connection *conn,
                             void **socket_context)
{
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(conn,
                                                                 MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    unsigned char key[SRV_CLIENT_KEY];
    srv_clients_key(addr != NULL ? addr->client_addr : NULL, key);
    int64_t now = srv_clock_ms();
    pthread_mutex_lock(&c->lock);
    if (c->free_head == SRV_CONNS_NONE || fd == NULL) { /* cannot happen: see the top */
        pthread_mutex_unlock(&c->lock);
        *socket_context = NULL;
        return;
    }
    struct srv_conn *e = &c->pool[c->free_head];
    c->free_head = e->next_free;
    memset(e, 0, sizeof *e);
    e->owner = c;
    e->in_use = true;
    e->fd = fd->connect_fd;
    memcpy(e->client, key, sizeof key);
    e->refused = srv_conns_judge(c, key);
    e->phase = SRV_CONN_WAITING;
    int64_t allowed = c->waiting_ms;
    if (e->refused != NULL && allowed > SRV_CONNS_REFUSED_GRACE_MS)
        allowed = SRV_CONNS_REFUSED_GRACE_MS;
    e->deadline_ms = now + allowed;
    if (e->refused == NULL) {
        e->counted = true;
        c->admitted++;
        srv_clients_add(&c->clients, key);
    } else {
        srv_conns_count(c, c->admitted >= c->lim.slots ? SRV_METRICS_CONN_REFUSED_SLOTS
                                                       : SRV_METRICS_CONN_REFUSED_CLIENT);
    }
    pthread_mutex_unlock(&c->lock);
    *socket_context = e;
}

static void srv_conns_closed(struct srv_conns *c, void **socket_context)
{
    struct srv_conn *e = *socket_context;
    if (e == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    if (e->counted) {
        c->admitted--;
        srv_clients_drop(&c->clients, e->client);
    }
    e->in_use = false;
    e->next_free = c->free_head;
    c->free_head = (uint32_t)(e - c->pool);
    pthread_mutex_unlock(&c->lock);
    *socket_context = NULL;
}

void srv_conns_on_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                         enum MHD_ConnectionNotificationCode code)
{
    struct srv_conns *c = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        srv_conns_opened(c, conn, socket_context);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        srv_conns_closed(c, socket_context);
}

/* Sets what a connection is doing, and the deadline that goes with it. */
static void srv_conns_set(struct srv_conn *e, enum srv_conn_phase phase, int64_t deadline_ms)
{
    pthread_mutex_lock(&e->owner->lock);
    e->phase = phase;
    e->deadline_ms = deadline_ms;
    pthread_mutex_unlock(&e->owner->lock);
}

void srv_conns_answering(struct MHD_Connection *conn)
{
    struct srv_conn *e = srv_conn_of(conn);
    if (e != NULL)
        srv_conns_set(e, SRV_CONN_ANSWERING, 0);
}

void srv_conns_after_call(struct MHD_Connection *conn, bool first)
{
    struct srv_conn *e = srv_conn_of(conn);
    if (e == NULL)
        return;
    /* An answer queued already (a refusal, an early 413) ends the request's receiving. */
    if (MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS) != NULL)
        srv_conns_set(e, SRV_CONN_ANSWERING, 0);
    else if (first)
        srv_conns_set(e, SRV_CONN_BODY, srv_clock_ms() + e->owner->body_ms);
}

void srv_conns_request_done(struct MHD_Connection *conn)
{
    struct srv_conn *e = srv_conn_of(conn);
    if (e != NULL) /* a kept-alive connection's next request: a new clock */
        srv_conns_set(e, SRV_CONN_WAITING, srv_clock_ms() + e->owner->waiting_ms);
}

unsigned srv_conns_open(struct srv_conns *c)
{
    if (c == NULL)
        return 0;
    pthread_mutex_lock(&c->lock);
    unsigned n = c->admitted;
    pthread_mutex_unlock(&c->lock);
    return n;
}

const char *srv_conns_refusal(struct MHD_Connection *conn)
{
    struct srv_conn *e = srv_conn_of(conn);
    return e != NULL ? e->refused : NULL; /* written once, by this thread, when it opened */
}
