/*
 * server/probe.h — `attnd --probe URL`: one HTTP/1.1 GET, for a container HEALTHCHECK
 * in an image that has no curl.
 *
 * Not here: TLS, redirects, proxies, request bodies. http:// only.
 */
#ifndef SRV_PROBE_H
#define SRV_PROBE_H

#define SRV_PROBE_TIMEOUT_MS 3000

/* 0 when the answer's status is 2xx; 1 otherwise, after one line on stderr. */
int srv_probe(const char *url);

#endif
