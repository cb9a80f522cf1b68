/*
 * api/request/test_hooks.h — what the tests reach into in request/, and nothing else
 * does (see api/json/test_hooks.h for why it is kept apart).
 */
#ifndef API_REQUEST_TEST_HOOKS_H
#define API_REQUEST_TEST_HOOKS_H

/* How many matrices api_read_matrix read in two halves so far. */
unsigned long api_read_matrix_splits(void);

#endif
