/*
 * server/net/bind.c — the socket address of --bind and a port (see bind.h).
 */
#include "server/net/bind.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

/* sockaddr_storage is big enough for either family. */
bool srv_bind_addr(const struct srv_config *cfg, unsigned port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (cfg->bind_ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, cfg->bind, &a->sin6_addr) == 1;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, cfg->bind, &a->sin_addr) == 1;
}
