/*
 * api/endpoints/attention/test_hooks.h — what the tests reach into in attention/, and
 * nothing else does (see api/json/test_hooks.h for why it is kept apart).
 */
#ifndef API_ENDPOINTS_ATTENTION_TEST_HOOKS_H
#define API_ENDPOINTS_ATTENTION_TEST_HOOKS_H

/* How many runs so far were given more than one thread. */
unsigned long api_attention_threaded_runs(void);

#endif
