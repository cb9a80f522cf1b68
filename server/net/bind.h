/*
 * server/net/bind.h — the socket address a listener binds: --bind with a port, for the
 * data port (daemon.c) and the admin port (admin.c) alike.
 */
#ifndef SRV_BIND_H
#define SRV_BIND_H

#include <stdbool.h>
#include <sys/socket.h>

#include "server/host/config.h"

/* cfg's --bind address with `port`, for either listener. False when it does not parse. */
bool srv_bind_addr(const struct srv_config *cfg, unsigned port, struct sockaddr_storage *ss);

#endif
