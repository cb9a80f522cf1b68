/*
 * server/net/trace.h — W3C Trace Context (https://www.w3.org/TR/trace-context/): the
 * `traceparent` a client or a tracing proxy sends, checked before it is trusted.
 *
 *   traceparent: 00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>
 *
 * Version 00 is the one attnd reads: exactly 55 bytes, lowercase hex, dashes where the
 * format puts them, neither id all zeros (the specification calls those invalid). A
 * header that is not such is ignored, never an error: tracing is the caller's affair,
 * and a request must not fail because a proxy on the way wrote a bad header. A valid
 * one is echoed on the answer and written to the access log, so one request can be
 * followed from the client through the balancer to this replica's log line.
 *
 * Not here: spans, sampling, tracestate (passed by browsers, not read), headers on the
 * wire (server/reply.c).
 */
#ifndef SRV_TRACE_H
#define SRV_TRACE_H

#include <stdbool.h>

#define SRV_TRACEPARENT_LEN 55
#define SRV_TRACEPARENT_BUF (SRV_TRACEPARENT_LEN + 1)

/* True when v (NULL allowed) is a valid version-00 traceparent. */
bool srv_traceparent_valid(const char *v);

/* out = v when valid, else "" (no trace). */
void srv_traceparent_pick(char out[SRV_TRACEPARENT_BUF], const char *v);

#endif
