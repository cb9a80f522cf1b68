/*
 * server/net/clients.c — the per-client connection counts (see clients.h).
 */
#include "server/net/clients.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

bool srv_clients_init(struct srv_clients *t, size_t most, uint64_t seed)
{
    size_t cells = 2;
    while (cells < most * 2) /* at most half full: probes stay short */
        cells *= 2;
    t->cells = calloc(cells, sizeof *t->cells);
    t->mask = cells - 1;
    t->seed = seed;
    return t->cells != NULL;
}

void srv_clients_deinit(struct srv_clients *t)
{
    free(t->cells);
    t->cells = NULL;
}

void srv_clients_key(const struct sockaddr *sa, unsigned char key[SRV_CLIENT_KEY])
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(key, 0, SRV_CLIENT_KEY);
    if (sa == NULL)
        return;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
        memcpy(key, mapped, sizeof mapped);
        memcpy(key + 12, &a->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)sa;
        const unsigned char *b = a->sin6_addr.s6_addr;
        memcpy(key, b, memcmp(b, mapped, sizeof mapped) == 0 ? 16 : 8);
    }
}

static size_t srv_clients_home(const struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY])
{
    uint64_t h = 14695981039346656037ULL ^ t->seed; /* FNV-1a, seeded */
    for (int i = 0; i < SRV_CLIENT_KEY; i++)
        h = (h ^ key[i]) * 1099511628211ULL;
    return (size_t)(h ^ (h >> 29)) & t->mask;
}

/* The cell of key, or the empty cell where it would go (the table never fills). */
static size_t srv_clients_find(const struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY])
{
    size_t i = srv_clients_home(t, key);
    while (t->cells[i].count != 0 && memcmp(t->cells[i].key, key, SRV_CLIENT_KEY) != 0)
        i = (i + 1) & t->mask;
    return i;
}

unsigned srv_clients_count(const struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY])
{
    return t->cells[srv_clients_find(t, key)].count;
}

void srv_clients_add(struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY])
{
    struct srv_client *c = &t->cells[srv_clients_find(t, key)];
    if (c->count++ == 0)
        memcpy(c->key, key, SRV_CLIENT_KEY);
}

/*
 * An emptied cell is refilled from the run of cells after it (backward-shift
 * deletion): a cell moves back into the hole unless its home lies cyclically in
 * (hole, cell], so that no search ever stops short at a hole before its key.
 */
void srv_clients_drop(struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY])
{
    size_t hole = srv_clients_find(t, key);
    if (t->cells[hole].count == 0 || --t->cells[hole].count > 0)
        return;
    for (size_t j = (hole + 1) & t->mask; t->cells[j].count != 0; j = (j + 1) & t->mask) {
        size_t home = srv_clients_home(t, t->cells[j].key);
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            t->cells[hole] = t->cells[j];
            t->cells[j].count = 0;
            hole = j;
        }
    }
}
