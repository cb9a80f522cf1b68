/*
 * server/net/conns.h — the data port's connections: their deadlines, each client's share of
 * the slots, and which connections are to be refused with a fast 503.
 *
 * libmicrohttpd tells us of every connection it opens and closes
 * (MHD_OPTION_NOTIFY_CONNECTION: srv_conns_on_notify). Each gets an entry in a
 * registry with its socket, its client and a deadline for what it is doing:
 *
 *   waiting   for a request's headers, from the moment it opened or its previous
 *             answer was sent: --timeout (the silence a kept-alive connection is
 *             allowed) plus a quarter of --request-timeout. So every request gets at
 *             least that quarter from its first byte, and no client trickling a
 *             header a byte at a time holds a slot for longer.
 *   body      from its headers to the last byte of its body: --request-timeout.
 *   answering computing and sending the answer: no deadline here (the idle timeout
 *             still closes a reader that stops reading).
 *
 * Why a registry and a reaper: libmicrohttpd 0.9.75 has only an idle timeout, and it
 * calls the access handler only once a request's headers are complete, so nothing of
 * ours runs while a client trickles them; the notification of a connection's start is
 * the one hook that sees every connection from its first moment. A reaper thread
 * looks at the registry a few times a second and shuts down
 * (shutdown(2), never close: the socket is libmicrohttpd's) the connections past
 * their deadline; libmicrohttpd then sees the socket end and closes it as if the
 * client had gone (no 408 is written: the socket is libmicrohttpd's to write, and a
 * client that trickles is not waiting for words). The registry is locked throughout, and an entry leaves it in the
 * close notification, which libmicrohttpd sends before it closes the socket: the
 * reaper never touches a descriptor after it was closed (or reused).
 *
 * Slots: --max-connections are served; libmicrohttpd's own limit is set a quarter
 * higher (srv_conns_hard_limit). A connection opened beyond the first, or beyond its
 * client's --max-client-connections, is marked refused: its request is answered 503
 * with Retry-After and Connection: close as soon as its headers are in, and it gets
 * only SRV_CONNS_REFUSED_GRACE_MS to send them. A client is an IPv4 address or an IPv6
 * /64 (one host commonly has a whole /64). Past twice its share, libmicrohttpd closes
 * a client's new connections at once (MHD_OPTION_PER_IP_CONNECTION_LIMIT), so one
 * client cannot fill the spare slots with refused ones either.
 *
 * The admin port (server/admin.c) keeps a registry of its own with the same rules and
 * smaller numbers, so that a client trickling headers there cannot hold the probes'
 * slots either.
 *
 * Not here: the daemon's other options (daemon.c), what a request says (exchange.c).
 */
#ifndef SRV_CONNS_H
#define SRV_CONNS_H

#include <stdbool.h>

#include <microhttpd.h>

/* How long a refused connection may take to send the headers its 503 answers. */
#define SRV_CONNS_REFUSED_GRACE_MS 2000

struct srv_conns_limits {
    unsigned slots;      /* --max-connections: connections served at once */
    unsigned per_client; /* --max-client-connections; 0 = no per-client limit */
    unsigned idle_s;     /* --timeout */
    unsigned request_s;  /* --request-timeout */
    /* The admin port's registry (server/admin.c): its refusals name the admin port's
       limits, and /metrics' attnd_connections_* series stay the data port's alone. */
    bool admin;
};

struct srv_conns;

/* libmicrohttpd's limit for `slots` served: a quarter more, for the 503s. */
unsigned srv_conns_hard_limit(unsigned slots);

/*
 * Fits limits->slots to the file descriptors the process may open, raising the soft
 * RLIMIT_NOFILE towards the hard one when it is too low; `reserve` descriptors are
 * kept for everything else. False (slots lowered, a warning logged) when the hard
 * limit allows fewer slots than asked.
 */
bool srv_conns_fit_fds(struct srv_conns_limits *limits, unsigned reserve);

/* The registry and its reaper thread. NULL (and a logged reason) on failure. */
struct srv_conns *srv_conns_start(const struct srv_conns_limits *limits);

/* Joins the reaper and frees the registry: after MHD_stop_daemon, which closed all. */
void srv_conns_stop(struct srv_conns *c);

/* MHD_OPTION_NOTIFY_CONNECTION's callback; cls is the struct srv_conns. */
void srv_conns_on_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                         enum MHD_ConnectionNotificationCode code);

/*
 * Before the access handler's final call (the body is in): from here on the request
 * is computed and answered, which no deadline of ours cuts short.
 */
void srv_conns_answering(struct MHD_Connection *conn);

/*
 * After each call of the access handler, `first` for a request's first call (its
 * headers are in): the body's deadline starts, unless an answer is queued already.
 */
void srv_conns_after_call(struct MHD_Connection *conn, bool first);

/* A request's answer has been sent (or its client left): the next request's clock. */
void srv_conns_request_done(struct MHD_Connection *conn);

/* Connections holding a slot now, for /metrics; 0 for a NULL registry. */
unsigned srv_conns_open(struct srv_conns *c);

/* NULL, or the 503's detail when this connection is one too many. */
const char *srv_conns_refusal(struct MHD_Connection *conn);

#endif
