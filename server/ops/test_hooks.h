/*
 * server/ops/test_hooks.h — what the tests reach into in ops/, and nothing else does
 * (see api/json/test_hooks.h for why it is kept apart).
 */
#ifndef SRV_OPS_TEST_HOOKS_H
#define SRV_OPS_TEST_HOOKS_H

/* Zeroes every counter of metrics.c, so that a test counts from nothing. */
void srv_metrics_reset(void);

#endif
