/*
 * tests/unit/check_clients.c — server/net/clients.c without a server: the client a peer
 * address counts as (an IPv4 address, an IPv6 /64), and the counts under random
 * connections and disconnections, against a plain array, in a table small enough
 * that keys collide and every deletion has runs to repair.
 */
#include <arpa/inet.h>
#include <check.h>

#include "tests/unit/suite_run.h"
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/net/clients.h"

static void key_v4(const char *addr, unsigned char key[SRV_CLIENT_KEY])
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    ck_assert_int_eq(inet_pton(AF_INET, addr, &a.sin_addr), 1);
    srv_clients_key((const struct sockaddr *)&a, key);
}

static void key_v6(const char *addr, unsigned char key[SRV_CLIENT_KEY])
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    ck_assert_int_eq(inet_pton(AF_INET6, addr, &a.sin6_addr), 1);
    srv_clients_key((const struct sockaddr *)&a, key);
}

START_TEST(a_client_is_an_ipv4_address_or_an_ipv6_64)
{
    unsigned char a[SRV_CLIENT_KEY], b[SRV_CLIENT_KEY];
    key_v4("10.0.0.1", a);
    key_v4("10.0.0.2", b);
    ck_assert_int_ne(memcmp(a, b, sizeof a), 0);
    key_v6("::ffff:10.0.0.1", b); /* the same host, on a dual-stack socket */
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    key_v6("2001:db8:1:2::1", a);
    key_v6("2001:db8:1:2:ffff:ffff:ffff:ffff", b); /* the same /64 */
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    key_v6("2001:db8:1:3::1", b); /* the next /64 */
    ck_assert_int_ne(memcmp(a, b, sizeof a), 0);
    srv_clients_key(NULL, a);
    static const unsigned char zero[SRV_CLIENT_KEY];
    ck_assert_int_eq(memcmp(a, zero, sizeof a), 0);
}
END_TEST

START_TEST(counts_follow_connections_and_disconnections)
{
    /* 8 clients at most in 16 cells, 20,000 random steps; a reference array says what is right. */
    enum { MOST = 8, KEYS = 40, STEPS = 20000 };
    unsigned char keys[KEYS][SRV_CLIENT_KEY];
    unsigned want[KEYS] = {0};
    for (int k = 0; k < KEYS; k++) {
        memset(keys[k], 0, SRV_CLIENT_KEY);
        keys[k][0] = (unsigned char)k;
        keys[k][15] = (unsigned char)(k * 7);
    }
    struct srv_clients t;
    ck_assert(srv_clients_init(&t, MOST, 12345));
    ck_assert_uint_eq(t.mask + 1, 16);
    uint64_t rng = 88172645463325252ULL;
    for (int step = 0; step < STEPS; step++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
        int k = (int)(rng % KEYS);
        int holding = 0;
        for (int i = 0; i < KEYS; i++)
            holding += want[i] > 0;
        bool add = (rng >> 32) % 2 == 0 && (want[k] > 0 || holding < MOST);
        if (add) {
            srv_clients_add(&t, keys[k]);
            want[k]++;
        } else {
            srv_clients_drop(&t, keys[k]); /* also for keys that hold none: a no-op */
            if (want[k] > 0)
                want[k]--;
        }
        for (int i = 0; i < KEYS; i++)
            ck_assert_uint_eq(srv_clients_count(&t, keys[i]), want[i]);
    }
    srv_clients_deinit(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("clients");
    TCase *core = tcase_create("Core");
    tcase_add_test(core, a_client_is_an_ipv4_address_or_an_ipv6_64);
    tcase_add_test(core, counts_follow_connections_and_disconnections);
    suite_add_tcase(s, core);
    return suite_run(s);
}
