/*
 * server/net/reqid.c — request ids (see reqid.h).
 *
 * Not here: anything cryptographic. Ids only need to be unique enough to find a
 * request in the logs of many replicas; the seed makes replicas differ, the counter
 * makes requests of one process differ, splitmix64 spreads both over 64 bits.
 */
#include "server/net/reqid.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t srv_reqid_seed;
static atomic_uint_fast64_t srv_reqid_counter;

/* splitmix64's finalizer: a bijection on 64 bits, so distinct inputs give distinct ids. */
static uint64_t srv_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void srv_reqid_init(void)
{
    uint64_t seed = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    bool got = false;
    if (fd >= 0) {
        got = read(fd, &seed, sizeof seed) == (ssize_t)sizeof seed;
        close(fd);
    }
    if (!got) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 48);
    }
    srv_reqid_seed = seed;
}

bool srv_reqid_is_sane(const char *id)
{
    if (id == NULL || id[0] == '\0')
        return false;
    size_t i = 0;
    for (; id[i] != '\0'; i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok || i >= SRV_REQID_MAX)
            return false;
    }
    return true;
}

void srv_reqid_pick(char out[SRV_REQID_BUF], const char *client_id)
{
    if (srv_reqid_is_sane(client_id)) {
        memcpy(out, client_id, strlen(client_id) + 1);
        return;
    }
    uint64_t n = atomic_fetch_add_explicit(&srv_reqid_counter, 1, memory_order_relaxed);
    /* The seed goes through the mixer too, so consecutive ids share no visible digits. */
    uint64_t id = srv_splitmix64(srv_splitmix64(srv_reqid_seed) + n);
    /* 16 lowercase hex digits, as "%016llx" would print them, without printf's machinery. */
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, id >>= 4)
        out[i] = digits[id & 0xf];
    out[16] = '\0';
}
