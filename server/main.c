/*
 * server/main.c — attnd's entry point: read the settings, then serve, probe, or explain.
 *
 * Shutdown: SIGTERM, SIGINT and SIGHUP (what a closing terminal or a supervisor may
 * send) all drain; they are blocked while libmicrohttpd starts its workers,
 * so they inherit the mask and never see the signals. Blocking alone cannot cover
 * every thread, though: libraries start threads before main runs (OpenBLAS builds
 * its pool in a constructor), and a process-directed signal goes to any thread that
 * does not block it, where the default action would kill the process. So the
 * signals get a handler that only posts a semaphore (async-signal-safe), whichever
 * thread runs it, and main, unblocked again, waits on the semaphore.
 * SIGUSR1 and SIGUSR2 mean nothing to attnd and are ignored (SIG_IGN holds for every
 * thread, those started before main included), so a stray one cannot kill it.
 * On the signal: not ready, stop accepting, wait for the requests in flight for at
 * most SRV_GRACE_MAX seconds (or --timeout when it is shorter: a request idle for
 * that long would be cut by MHD anyway), stop, exit 0. A second signal ends the
 * wait at once.
 *
 * Not here: the daemon's options (daemon.c), request handling (exchange.c).
 */
#include <malloc.h>
#include <stdbool.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/endpoints/version.h"
#include "server/daemon.h"
#include "server/host/config.h"
#include "server/host/cpus.h"
#include "server/host/heap.h"
#include "server/net/reqid.h"
#include "server/ops/log.h"
#include "server/ops/metrics.h"
#include "server/probe.h"
#include "server/www.h"


#define SRV_GRACE_MAX 30   /* seconds */
#define SRV_GRACE_POLL_MS 20
#define SRV_TRIM_QUIET_MS 1000 /* quiet this long after traffic: give free memory back */

extern char **environ;

static sem_t srv_signal_sem;
static volatile sig_atomic_t srv_signal_last;

static void srv_on_signal(int sig)
{
    srv_signal_last = sig;
    sem_post(&srv_signal_sem); /* async-signal-safe; wakes main wherever this runs */
}

/* The signals that drain the server, each named in the shutdown line. */
static const int srv_drain_signals[] = {SIGTERM, SIGINT, SIGHUP};

static const char *srv_signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
}

/*
 * The handler for the draining signals; SIGPIPE ignored (a gone client is an error
 * code), SIGUSR1 and SIGUSR2 too.
 */
static bool srv_signals_install(void)
{
    if (sem_init(&srv_signal_sem, 0, 0) != 0)
        return false;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = srv_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof srv_drain_signals / sizeof srv_drain_signals[0]; i++)
        if (sigaction(srv_drain_signals[i], &sa, NULL) != 0)
            return false;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    return true;
}

/* Blocks (or unblocks) the draining signals in the calling thread. */
static void srv_signals_mask(int how)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    for (size_t i = 0; i < sizeof srv_drain_signals / sizeof srv_drain_signals[0]; i++)
        sigaddset(&sigs, srv_drain_signals[i]);
    pthread_sigmask(how, &sigs, NULL);
}

/* True when another signal comes within ms milliseconds. */
static bool srv_signals_wait_ms(long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* sem_timedwait takes a CLOCK_REALTIME time */
    until.tv_nsec += ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    return sem_timedwait(&srv_signal_sem, &until) == 0;
}

/* The M_TRIM_THRESHOLD srv_malloc_policy set, or 0 when GLIBC_TUNABLES decides. */
static size_t srv_trim_threshold;

/*
 * Waits for the first signal, giving the heap's free memory back to the kernel (the
 * kept trace block, then srv_heap_trim: every arena) once the server has been quiet
 * for a second after traffic. The heap is kept between requests on purpose
 * (srv_malloc_policy, and one large trace block: api_keep_block_max), but after a burst
 * the arenas hold what its concurrent requests needed, most of it free yet mapped:
 * about 1 GB after 64 connections of 22 MB answers. A second with nothing
 * completed and nothing in flight marks the burst's end; steady traffic never trims.
 */
static int srv_signals_wait_trimming(struct srv_server *s)
{
    unsigned long seen = srv_state_completed(s), trimmed = seen;
    for (;;) {
        if (srv_signals_wait_ms(SRV_TRIM_QUIET_MS))
            return srv_signal_last;
        unsigned long now = srv_state_completed(s);
        if (now == seen && now != trimmed && srv_state_in_flight(s) == 0) {
            api_release_kept_block(); /* first: its free goes back with the rest */
            srv_heap_trim(srv_trim_threshold); /* every arena: server/host/heap.h */
            trimmed = now;
        }
        seen = now;
    }
}

static void srv_print_listening(const struct srv_config *cfg, const struct srv_server *s)
{
    const char *l = cfg->bind_ipv6 ? "[" : "", *r = cfg->bind_ipv6 ? "]" : "";
    char url[128];
    if (s->admin != NULL) { /* first: whoever waits for the line below knows both then */
        snprintf(url, sizeof url, "http://%s%s%s:%u", l, cfg->bind, r, s->admin_port);
        srv_log_listening("attnd admin", url);
    }
    snprintf(url, sizeof url, "http://%s%s%s:%u", l, cfg->bind, r, s->port);
    srv_log_listening("attnd", url); /* tests and supervisors read this line for the port */
}

/* Says where the worker count came from: an operator wondering about it needs no guess. */
static void srv_log_threads(const struct srv_config *cfg, double quota, unsigned runnable)
{
    if (cfg->threads_given)
        srv_log_message("info", "%u worker threads, as set (%u CPUs to run on)", cfg->threads,
                        runnable);
    else if (quota > 0 && quota < (double)runnable)
        srv_log_message("info", "%u worker threads: the cgroup's CPU quota of %.2f CPUs, "
                        "rounded up (%u CPUs to run on)", cfg->threads, quota, runnable);
    else
        srv_log_message("info", "%u worker threads: one per CPU to run on (online, within "
                        "this process's CPU affinity)", cfg->threads);
}

/*
 * Waits until no request is in flight, the grace period is over, or a second signal
 * comes. Waiting for that signal doubles as the sleep between looks at the counter.
 */
static void srv_drain(struct srv_server *s, unsigned grace_s)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (srv_state_in_flight(s) > 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= (time_t)grace_s) {
            srv_log_message("warn", "grace period of %u s over, %ld request(s) cut off",
                            grace_s, srv_state_in_flight(s));
            return;
        }
        if (srv_signals_wait_ms(SRV_GRACE_POLL_MS)) {
            srv_log_message("warn", "second signal: stopping now");
            return;
        }
    }
}

/*
 * glibc's heap policy for a server whose requests allocate and free the same few
 * megabytes again and again. By default glibc gives the top of the heap back to the
 * kernel whenever more than a (self-adjusting) threshold is free, so every medium
 * request grew the heap with brk, faulted its pages in again and trimmed it on the
 * way out: six brk calls a request and about a fifth of its time. Keeping up to 64 MiB
 * free per malloc arena, and serving blocks up to 32 MiB from the heap, ends that;
 * larger blocks (an xl answer) are still mapped and unmapped on their own. The cost
 * is memory kept after traffic: at most 64 MiB per arena (about one per worker).
 * GLIBC_TUNABLES naming malloc settings wins over this.
 */
static void srv_malloc_policy(void)
{
    const char *tunables = getenv("GLIBC_TUNABLES");
    if (tunables != NULL && strstr(tunables, "glibc.malloc.") != NULL)
        return;
    srv_trim_threshold = (size_t)64 << 20;
    mallopt(M_TRIM_THRESHOLD, (int)srv_trim_threshold);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

static int srv_run(const struct srv_config *cfg, double quota, unsigned online)
{
    srv_malloc_policy();
    srv_log_init(cfg->log);
    srv_log_threads(cfg, quota, online);
    srv_reqid_init();
    srv_metrics_init(attnd_version, attnd_build);
    api_global_init(); /* one BLAS thread per request: the workers already use every core */
    api_set_threads(cfg->threads); /* an idle server may write one response on two */
    if (!srv_www_route()) {
        srv_log_message("error", "api/ refused a playground file's path");
        return 1;
    }
    const char *core = api_blas_better_core();
    if (core != NULL && getenv("OPENBLAS_CORETYPE") == NULL)
        srv_log_message("warn", "OpenBLAS chose generic kernels for this CPU, which supports "
                        "faster ones: start attnd with OPENBLAS_CORETYPE=%s for matrix "
                        "products several times as fast (docs/design.md, BLAS kernels)", core);
    if (!srv_signals_install()) {
        srv_log_message("error", "cannot install signal handlers");
        return 1;
    }
    srv_signals_mask(SIG_BLOCK); /* inherited by the workers MHD is about to start */
    struct srv_server s;
    bool started = srv_daemon_start(&s, cfg);
    srv_signals_mask(SIG_UNBLOCK);
    if (!started)
        return 1;
    srv_print_listening(cfg, &s);

    int sig = srv_signals_wait_trimming(&s);
    srv_daemon_quiesce(&s); /* first: whoever reads the line below sees a server not ready */
    srv_log_message("info", "%s: shutting down, %ld request(s) in flight",
                    srv_signal_name(sig), srv_state_in_flight(&s));
    srv_drain(&s, cfg->timeout < SRV_GRACE_MAX ? cfg->timeout : SRV_GRACE_MAX);
    srv_daemon_stop(&s);
    api_release_kept_block(); /* after the last request: nothing is left for exit to drop */
    return 0;
}

int main(int argc, char *argv[])
{
    struct srv_config cfg;
    char err[512];
    double quota = 0;
    unsigned online = 1;
    unsigned cpus = srv_cpus_here(&quota, &online); /* --threads' default: server/host/cpus.h */
    enum srv_mode mode = srv_config_parse(&cfg, argc, argv, environ, cpus, err, sizeof err);
    switch (mode) {
    case SRV_MODE_HELP:
        fputs(srv_config_usage(), stdout);
        return 0;
    case SRV_MODE_VERSION:
        printf("attnd %s (build %s)\n", attnd_version, attnd_build);
        return 0;
    case SRV_MODE_PROBE:
        return srv_probe(cfg.probe_url);
    case SRV_MODE_ERROR:
        fprintf(stderr, "attnd: %s\n", err);
        return 2;
    case SRV_MODE_RUN:
        break;
    }
    return srv_run(&cfg, quota, online);
}
